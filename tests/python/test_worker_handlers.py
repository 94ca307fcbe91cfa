"""Workers, blocking and asyncio: handler plumbing (job fields, async handlers on the caller's
event loop, the blocking API inside handlers, pooled threads), stats, metrics, join, options
refused, failures logged, and workers whose handle is not kept."""

from __future__ import annotations

import asyncio
import gc
import logging
import subprocess
import sys
import threading
import time
from collections import Counter
from typing import Any

import pytest

import tideq

FAST = tideq.Backoff.fixed(0.05)


@pytest.fixture
def jq(client: tideq.Client, name: str) -> tideq.Queue:
    return tideq.Queue(name, client, backoff=FAST)


def drain(q: tideq.Queue, handler: Any, **opts: Any) -> tideq.WorkerStats:
    return q.run(handler, poll_interval=0.1, stop_when_drained=True, **opts)


def test_run_with_stop_when_drained_drains_the_queue_and_returns_stats(jq):
    jq.enqueue_many([b"%d" % i for i in range(300)])
    seen: list[bytes] = []
    lock = threading.Lock()

    def handler(job: tideq.Job) -> None:
        with lock:
            seen.append(job.payload)

    stats = drain(jq, handler, concurrency=8)
    assert isinstance(stats, tideq.WorkerStats)
    assert Counter(seen) == Counter(b"%d" % i for i in range(300))
    assert (stats.completed, stats.failed, stats.lease_lost, stats.released) == (300, 0, 0, 0)
    assert repr(stats).startswith("WorkerStats(completed=300, failed=0")
    s = jq.stats()
    assert (s.completed, s.ready, s.active) == (300, 0, 0)


def test_asyncio_run_with_stop_when_drained_drains_the_queue(client, name):
    async def main() -> tuple[tideq.WorkerStats, list[bytes]]:
        aq = tideq.AsyncQueue(name, client)
        await aq.enqueue_many([b"%d" % i for i in range(300)])
        seen: list[bytes] = []

        async def handler(job: tideq.Job) -> None:
            await asyncio.sleep(0.001)
            seen.append(job.payload)

        return await aq.run(handler, concurrency=20, poll_interval=0.1, stop_when_drained=True), seen

    stats, seen = asyncio.run(main())
    assert Counter(seen) == Counter(b"%d" % i for i in range(300))
    assert (stats.completed, stats.failed) == (300, 0)


def test_the_handler_gets_the_job_fields_and_payload_helpers(jq, redis_url):
    jq.enqueue(b'{"order": 42, "name": "caf\xc3\xa9"}', id="j1", max_attempts=3, timeout=7.5)
    jobs: list[tideq.Job] = []
    drain(jq, jobs.append)
    (job,) = jobs
    assert (job.id, job.attempt, job.max_attempts, job.queue, job.timeout) == ("j1", 1, 3, jq.name, 7.5)
    assert job.payload == b'{"order": 42, "name": "caf\xc3\xa9"}'
    assert job.json() == {"order": 42, "name": "café"}
    assert job.text() == '{"order": 42, "name": "café"}'
    assert abs(job.enqueued_at - time.time()) < 60
    assert "id='j1'" in repr(job)
    jq.enqueue(b"\xff\xfe", id="binary")
    drain(jq, jobs.append)
    with pytest.raises(UnicodeDecodeError):
        jobs[1].text()


def test_async_handlers_run_on_the_callers_event_loop(client, name):
    async def main() -> None:
        aq = tideq.AsyncQueue(name, client)
        await aq.enqueue_many([b"1", b"2"])
        loops = []

        async def handler(job: tideq.Job) -> None:
            loops.append(asyncio.get_running_loop())

        await aq.run(handler, stop_when_drained=True, poll_interval=0.1)
        assert loops == [asyncio.get_running_loop()] * 2

    asyncio.run(main())


def test_async_handler_with_the_blocking_api_runs_and_can_fail(jq):
    jq.enqueue_many([b"ok", (b"bad", {"id": "bad", "max_attempts": 1})])
    ran: list[bytes] = []

    async def handler(job: tideq.Job) -> None:
        await asyncio.sleep(0.01)
        ran.append(job.payload)
        if job.payload == b"bad":
            raise KeyError("missing")

    stats = drain(jq, handler)
    assert sorted(ran) == [b"bad", b"ok"] and (stats.completed, stats.failed) == (1, 1)
    info = jq.get("bad")
    assert info is not None and info.last_error == "KeyError: 'missing'"


def test_an_idle_worker_picks_up_a_new_job_within_milliseconds(jq):
    got = threading.Event()
    worker = jq.work(lambda job: got.set(), poll_interval=5.0)
    try:
        time.sleep(0.2)
        t0 = time.monotonic()
        jq.enqueue(b"x")
        assert got.wait(3)
        assert time.monotonic() - t0 < 1.0, "woken by the enqueue, not by the 5 s poll"
    finally:
        worker.shutdown()


def test_a_sync_handler_may_call_the_blocking_api(jq, client, name):
    sink = tideq.Queue(name + "-sink", client)
    jq.enqueue_many([b"%d" % i for i in range(20)])

    def forward(job: tideq.Job) -> None:
        sink.enqueue(job.payload, id=f"fwd-{job.payload.decode()}")

    assert drain(jq, forward, concurrency=4).failed == 0

    async def main() -> tideq.WorkerStats:
        await tideq.AsyncQueue(jq.name, client).enqueue_many([b"%d" % i for i in range(20, 40)])
        return await tideq.AsyncQueue(jq.name, client).run(forward, concurrency=4, poll_interval=0.1, stop_when_drained=True)

    assert asyncio.run(main()).failed == 0
    assert sink.stats().ready == 40


def test_sync_handlers_run_on_pooled_threads_that_keep_their_thread_locals(jq):
    # Like a ThreadPoolExecutor: a per-thread resource (a connection in a threading.local) is made
    # once per thread, not once per job.
    local = threading.local()
    made: Counter[int] = Counter()
    lock = threading.Lock()

    def handler(job: tideq.Job) -> None:
        if not hasattr(local, "conn"):
            local.conn = object()
            with lock:
                made[threading.get_ident()] += 1

    jq.enqueue_many([b"x"] * 300)
    assert drain(jq, handler, concurrency=4).completed == 300
    assert sum(made.values()) < 300 and set(made.values()) == {1}, made


def test_worker_join_timeout_stats_and_repr(jq):
    worker = jq.work(lambda job: None, poll_interval=0.05)
    t0 = time.monotonic()
    stats = worker.join(timeout=0.2)
    assert 0.15 < time.monotonic() - t0 < 2
    assert worker.running and "running=True" in repr(worker)
    assert stats == worker.stats()
    worker.stop()
    worker.stop()  # stopping twice is harmless
    final = worker.join()
    assert not worker.running and worker.shutdown() == final


def run_seconds_count(text: str, queue: str) -> int:
    """The run-time histogram's count in a worker's ``metrics()``."""
    prefix = f'tideq_worker_job_run_seconds_count{{queue="{queue}"}} '
    (line,) = [line for line in text.splitlines() if line.startswith(prefix)]
    return int(line[len(prefix):])


def test_worker_metrics_are_prometheus_text_of_its_counters_and_run_times_also_after_join(jq):
    jq.enqueue_many([b"ok", b"ok", b"ok", (b"bad", {"max_attempts": 1})])

    def handler(job: tideq.Job) -> None:
        if job.payload == b"bad":
            raise ValueError("no")

    worker = jq.work(handler, poll_interval=0.1, stop_when_drained=True)
    stats = worker.join()
    assert (stats.completed, stats.failed) == (3, 1)
    text = worker.metrics()
    assert isinstance(text, str)
    assert f'tideq_worker_jobs_completed_total{{queue="{jq.name}"}} 3\n' in text, text
    assert f'tideq_worker_jobs_failed_total{{queue="{jq.name}"}} 1\n' in text, text
    assert "# TYPE tideq_worker_job_run_seconds histogram" in text, text
    assert run_seconds_count(text, jq.name) == 4, text
    assert worker.metrics() == text, "stopped: nothing changes"


def test_batch_and_task_workers_have_metrics_too(jq):
    jq.enqueue_many([b"a", b"b", b"c"])
    batches = jq.work_batches(lambda jobs: None, size=3, poll_interval=0.1, stop_when_drained=True)
    assert isinstance(batches, tideq.Worker) and batches.join().completed == 3
    assert f'tideq_worker_jobs_completed_total{{queue="{jq.name}"}} 3\n' in batches.metrics()
    jq.enqueue_task("add", [1, 2])
    tasks = jq.work_tasks({"add": lambda x, y: x + y}, poll_interval=0.1, stop_when_drained=True)
    assert tasks.join().completed == 1
    text = tasks.metrics()
    assert f'tideq_worker_jobs_completed_total{{queue="{jq.name}"}} 1\n' in text
    assert run_seconds_count(text, jq.name) == 1, text


def test_asyncio_worker_metrics_is_a_plain_call(client, name):
    async def main() -> tuple[str, str, tideq.WorkerStats]:
        aq = tideq.AsyncQueue(name, client)
        await aq.enqueue_many([b"1", b"2"])
        worker = aq.work(lambda job: None, poll_interval=0.1, stop_when_drained=True)
        while_running = worker.metrics()  # not a coroutine: no await
        stats = await worker.join()
        return while_running, worker.metrics(), stats

    while_running, text, stats = asyncio.run(main())
    assert isinstance(while_running, str) and f'queue="{name}"' in while_running
    assert stats.completed == 2
    assert f'tideq_worker_jobs_completed_total{{queue="{name}"}} 2\n' in text, text
    assert run_seconds_count(text, name) == 2, text


def test_join_with_a_timeout_too_large_for_a_deadline_waits_without_one(jq):
    worker = jq.work(lambda job: None, poll_interval=0.05)
    for bad in (-1.0, float("nan")):
        with pytest.raises(tideq.InvalidArgumentError):
            worker.join(timeout=bad)
    for huge in (1e19, 1e300, float("inf"), 10**400):
        stopper = threading.Timer(0.2, worker.stop)
        stopper.start()
        try:
            t0 = time.monotonic()
            stats = worker.join(timeout=huge)
            assert time.monotonic() - t0 < 5
        finally:
            stopper.cancel()
        assert not worker.running and stats == worker.stats()


def test_dropping_the_worker_handle_does_not_stop_it(jq):
    jq.enqueue(b"a", id="a")
    started, release, second = threading.Event(), threading.Event(), threading.Event()

    def handler(job: tideq.Job) -> None:
        if job.id == "a":
            started.set()
            release.wait(10)
        else:
            second.set()

    jq.work(handler, concurrency=1, poll_interval=0.1, stop_when_drained=True)  # handle dropped at once
    gc.collect()
    assert started.wait(5)
    jq.enqueue(b"b", id="b")
    release.set()
    assert second.wait(5), "the worker stopped when its handle was dropped"


def test_bad_worker_options_and_handlers_are_rejected(jq):
    bad: list[dict[str, Any]] = [
        {"concurrency": 0},
        {"concurrency": -1},
        {"lease": 0.001},
        {"lease": -1.0},
        {"poll_interval": 0.0},
        {"grace": float("nan")},
    ]
    for opts in bad:
        with pytest.raises(tideq.InvalidArgumentError):
            jq.work(lambda job: None, **opts)
    with pytest.raises(TypeError, match="handler must be callable"):
        jq.work("not callable")  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="running asyncio event loop"):
        tideq.AsyncQueue(jq.name, jq.client).work(lambda job: None)


def test_handler_failures_are_logged_with_the_traceback_on_the_tideq_logger(jq, caplog):
    caplog.set_level(logging.ERROR, logger="tideq")
    jq.enqueue(b"x", id="oops", max_attempts=1)

    def handler(job: tideq.Job) -> None:
        raise ZeroDivisionError("division by zero in handler")

    drain(jq, handler)
    (record,) = [r for r in caplog.records if r.name == "tideq"]
    assert record.exc_info is not None and record.exc_info[0] is ZeroDivisionError
    assert record.getMessage() == "handler failed on job 'oops' (attempt 1 of 1)"
    assert "Traceback" in caplog.text and "in handler" in caplog.text


# A worker or consumer started without keeping its handle, in a process of its own: the handle is
# collected (gc.collect()), then jobs are enqueued; it must run every one of them.
NO_HANDLE = """
import asyncio, gc, sys, time, tideq
kind, url, name, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
seen = []
def saw(x):
    seen.append(x)
    print("ran", x, flush=True)
def start():
    if kind == "worker":
        tideq.Queue(name, url=url).work(lambda job: saw(job.id), poll_interval=0.2)
    elif kind == "batch-worker":
        tideq.Queue(name, url=url).work_batches(lambda jobs: [saw(j.id) for j in jobs] and None, size=5, poll_interval=0.2)
    elif kind == "task-worker":
        tideq.Queue(name, url=url).work_tasks({"greet": lambda n: saw(n)}, poll_interval=0.2)
    elif kind == "consumer":
        tideq.CappedQueue(name, url=url).consume(lambda group, items: [saw(i) for i in items] and None, poll_interval=0.2)
async def start_async():
    if kind == "async-worker":
        tideq.AsyncQueue(name, url=url).work(lambda job: saw(job.id), poll_interval=0.2)
    gc.collect()
    print("ready", flush=True)
    deadline = time.monotonic() + 30
    while len(seen) < count and time.monotonic() < deadline:
        gc.collect()
        await asyncio.sleep(0.05)
if kind.startswith("async"):
    asyncio.run(start_async())
else:
    start()
    gc.collect()
    print("ready", flush=True)
    deadline = time.monotonic() + 30
    while len(seen) < count and time.monotonic() < deadline:
        gc.collect()
        time.sleep(0.05)
print("done", len(seen), flush=True)
"""


@pytest.mark.parametrize("kind", ["worker", "async-worker", "batch-worker", "task-worker", "consumer"])
def test_a_worker_or_consumer_whose_handle_is_not_kept_runs_every_job(redis_url: str, name: str, kind: str) -> None:
    count = 20
    proc = subprocess.Popen(
        [sys.executable, "-c", NO_HANDLE, kind, redis_url, name, str(count)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        if kind == "consumer":
            cq = tideq.CappedQueue(name, url=redis_url)
            cq.push_many([(f"g{i % 4}", str(i).encode()) for i in range(count)])
        elif kind == "task-worker":
            q = tideq.Queue(name, url=redis_url)
            for i in range(count):
                q.enqueue_task("greet", {"n": i})
        else:
            tideq.Queue(name, url=redis_url).enqueue_many([(str(i).encode(), {"id": f"j{i}"}) for i in range(count)])
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert f"done {count}" in out, f"stdout: {out}\nstderr: {err}"
