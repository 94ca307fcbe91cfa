"""Workers, blocking and asyncio: handler plumbing, leases across real process death and freezing,
long handlers (sleeping, CPU-bound, async), timeouts, graceful shutdown and signals."""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from typing import Any

import pytest

import tideq
from tideq_harness import wait_for

FAST = tideq.Backoff.fixed(0.05)


@pytest.fixture
def jq(client: tideq.Client, name: str) -> tideq.Queue:
    return tideq.Queue(name, client, backoff=FAST)


def drain(q: tideq.Queue, handler: Any, **opts: Any) -> tideq.WorkerStats:
    return q.run(handler, poll_interval=0.1, stop_when_drained=True, **opts)


# A worker in its own process: prints one JSON line per job it starts, then its stats at the end.
CHILD = """
import json, sys, threading, time, tideq
url, name, lease, sleep_s, concurrency = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
q = tideq.Queue(name, url=url)
lock = threading.Lock()

def handler(job):
    with lock:  # handlers run in several threads: one whole line at a time
        print(json.dumps({"started": job.id, "attempt": job.attempt}), flush=True)
    time.sleep(sleep_s)

s = q.run(handler, concurrency=concurrency, lease=lease, poll_interval=0.1, stop_when_drained=True)
print(json.dumps({"completed": s.completed, "failed": s.failed, "lease_lost": s.lease_lost,
                  "released": s.released}), flush=True)
"""


def child_worker(url: str, name: str, lease: float, sleep_s: float, concurrency: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, url, name, str(lease), str(sleep_s), str(concurrency)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def read_json(proc: subprocess.Popen[str]) -> dict[str, Any]:
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line, f"child exited: {proc.stderr.read() if proc.stderr else ''}"
    return dict(json.loads(line))


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


def test_a_worker_killed_with_sigkill_mid_job_loses_nothing(jq, redis_url, name):
    ids = [f"k{i}" for i in range(6)]
    jq.enqueue_many([(b"x", {"id": i}) for i in ids])
    proc = child_worker(redis_url, name, lease=1.0, sleep_s=60, concurrency=2)
    try:
        held = {read_json(proc)["started"], read_json(proc)["started"]}
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
    finally:
        proc.kill()
        proc.communicate()
    assert proc.returncode == -signal.SIGKILL
    active = jq.stats().active
    assert active == 2, "the killed worker's jobs are still leased"
    handled: list[tuple[str, int]] = []
    stats = drain(jq, lambda job: handled.append((job.id, job.attempt)), concurrency=4)
    assert sorted(i for i, _ in handled) == ids, "a job was lost or handled twice"
    assert {i for i, a in handled if a == 2} == held, "the killed worker's jobs are redelivered as attempt 2"
    assert all(a == 1 for i, a in handled if i not in held)
    assert stats.completed == 6
    s = jq.stats()
    assert (s.completed, s.recovered, s.active, s.ready) == (6, 2, 0, 0)


def test_a_sigstopped_workers_late_ack_is_rejected(jq, redis_url, name):
    jq.enqueue(b"x", id="slow")
    proc = child_worker(redis_url, name, lease=1.0, sleep_s=3.0, concurrency=1)
    try:
        assert read_json(proc) == {"started": "slow", "attempt": 1}
        os.kill(proc.pid, signal.SIGSTOP)
        try:
            attempts: list[int] = []
            stats = drain(jq, lambda job: attempts.append(job.attempt))
            assert attempts == [2], "recovered from the frozen worker and redelivered once"
            assert stats.completed == 1
        finally:
            os.kill(proc.pid, signal.SIGCONT)
        child_stats = read_json(proc)
        proc.wait(15)
    finally:
        proc.kill()
        proc.communicate()
    assert proc.returncode == 0
    assert child_stats == {"completed": 0, "failed": 0, "lease_lost": 1, "released": 0}, "late ack accepted"
    info = jq.get("slow")
    assert info is not None and (info.state, info.attempts) == ("completed", 2)
    assert jq.stats().recovered == 1


def sleeping(job: tideq.Job) -> None:
    time.sleep(1.5)


def cpu_bound(job: tideq.Job) -> None:
    # Pure Python holding the GIL (released only at the interpreter's switch interval).
    end, n = time.perf_counter() + 1.5, 0
    while time.perf_counter() < end:
        n += 1


async def async_sleeping(job: tideq.Job) -> None:
    await asyncio.sleep(1.5)


@pytest.mark.parametrize("handler", [sleeping, cpu_bound, async_sleeping], ids=["sleep", "cpu", "async"])
def test_a_handler_running_3x_the_lease_is_not_redelivered(client, name, handler):
    q = tideq.Queue(name, client, backoff=FAST)
    q.enqueue(b"long", id="long")
    calls: list[int] = []

    async def run_async() -> tideq.WorkerStats:
        async def counted(job: tideq.Job) -> None:
            calls.append(job.attempt)
            await async_sleeping(job)

        return await tideq.AsyncQueue(name, client).run(counted, lease=0.5, poll_interval=0.1, stop_when_drained=True)

    def counted_sync(job: tideq.Job) -> None:
        calls.append(job.attempt)
        handler(job)

    if handler is async_sleeping:  # on the caller's event loop (asyncio API)
        stats = asyncio.run(run_async())
    else:
        stats = q.run(counted_sync, lease=0.5, poll_interval=0.1, stop_when_drained=True)
    assert calls == [1], "a long job was redelivered"
    assert (stats.completed, stats.lease_lost, stats.failed) == (1, 0, 0)
    assert q.stats().recovered == 0
    info = q.get("long")
    assert info is not None and (info.state, info.attempts) == ("completed", 1)


class Runs:
    """Start and end times of handler runs (one per attempt), from any thread."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.spans: list[tuple[str, int, float, float]] = []  # (id, attempt, start, end)
        self.running = 0
        self.most_at_once = 0

    def begin(self) -> float:
        with self.lock:
            self.running += 1
            self.most_at_once = max(self.most_at_once, self.running)
        return time.monotonic()

    def end(self, job: tideq.Job, start: float) -> None:
        with self.lock:
            self.running -= 1
            self.spans.append((job.id, job.attempt, start, time.monotonic()))

    def of(self, job_id: str) -> list[tuple[int, float, float]]:
        with self.lock:
            return sorted((a, s, e) for i, a, s, e in self.spans if i == job_id)


def test_a_timed_out_sync_handler_keeps_its_slot_and_its_retry_starts_after_it_ended(jq):
    # Nothing can stop a thread: past the timeout the attempt fails, but the job keeps its slot
    # until the handler returns, so concurrency holds and an attempt never overlaps its retry.
    jq.enqueue_many([(b"a", {"id": "a", "timeout": 0.2, "max_attempts": 2}),
                     (b"b", {"id": "b", "timeout": 0.2, "max_attempts": 1})])
    runs = Runs()

    def handler(job: tideq.Job) -> None:
        start = runs.begin()
        try:
            time.sleep(1.0)
        finally:
            runs.end(job, start)

    stats = drain(jq, handler, concurrency=1)
    assert runs.most_at_once == 1, "a second handler started while a timed-out one still ran"
    spans = sorted((s, e) for _, _, s, e in runs.spans)
    assert len(spans) == 3 and all(e1 <= s2 for (_, e1), (s2, _) in zip(spans, spans[1:]))
    (a1, a1_start, a1_end), (a2, a2_start, _) = runs.of("a")
    assert (a1, a2) == (1, 2) and a2_start >= a1_end, "attempt 2 started before attempt 1 ended"
    assert (stats.failed, stats.completed) == (3, 0)
    for job_id in ("a", "b"):
        info = jq.get(job_id)
        assert info is not None and info.state == "dead"
        assert info.last_error is not None and "timed out" in info.last_error


def test_job_cancelled_turns_true_for_a_sync_handler_past_its_timeout(jq):
    jq.enqueue(b"x", id="watch", timeout=0.3, max_attempts=1)
    seen: list[tuple[bool, bool, float]] = []

    def handler(job: tideq.Job) -> None:
        t0 = time.monotonic()
        at_start = job.cancelled
        noticed = wait_for(lambda: job.cancelled, timeout=10)
        seen.append((at_start, noticed, time.monotonic() - t0))

    stats = drain(jq, handler)
    ((at_start, noticed, after),) = seen
    assert not at_start and noticed
    assert 0.25 < after < 3.0
    # Returning normally after the timeout does not complete the attempt: it timed out.
    assert (stats.failed, stats.completed) == (1, 0)
    info = jq.get("watch")
    assert info is not None and info.last_error is not None and "timed out" in info.last_error


def test_shutdown_waits_for_a_sync_handler_past_the_grace_period_and_completes_its_job(jq, client, name):
    jq.enqueue(b"x", id="long")
    runs = Runs()
    started = threading.Event()
    cancelled_at_end: list[bool] = []

    def handler(job: tideq.Job) -> None:
        start = runs.begin()
        started.set()
        try:
            time.sleep(1.5)
            cancelled_at_end.append(job.cancelled)
        finally:
            runs.end(job, start)

    first = jq.work(handler, grace=0.1, lease=1.0)
    assert started.wait(5)
    standby = tideq.Queue(name, client).work(handler, poll_interval=0.05, lease=1.0)
    try:
        stats = first.shutdown()
        assert not first.running
        # The job was not handed back while its handler ran: it is completed, not run again.
        assert (stats.completed, stats.released, stats.failed) == (1, 0, 0)
        assert cancelled_at_end == [True], "the handler was asked to stop after the grace period"
    finally:
        standby.shutdown()
    assert [a for a, _, _ in runs.of("long")] == [1], "started again while the first run went on"
    info = jq.get("long")
    assert info is not None and (info.state, info.attempts) == ("completed", 1)


@pytest.mark.parametrize("api", ["asyncio", "blocking"])
def test_an_async_handler_past_its_timeout_is_cancelled_and_the_attempt_fails_timed_out(client, name, api):
    events: list[str] = []
    t0 = time.monotonic()

    async def handler(job: tideq.Job) -> None:
        events.append("start")
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            events.append(f"cancelled {job.cancelled} {time.monotonic() - t0:.2f}")
            raise
        events.append("not cancelled")

    if api == "asyncio":
        async def main() -> tideq.WorkerStats:
            aq = tideq.AsyncQueue(name, client)
            await aq.enqueue(b"x", id="slow", timeout=0.2, max_attempts=1)
            return await aq.run(handler, poll_interval=0.1, stop_when_drained=True)

        stats = asyncio.run(main())
    else:  # a private event loop per job
        q = tideq.Queue(name, client)
        q.enqueue(b"x", id="slow", timeout=0.2, max_attempts=1)
        stats = drain(q, handler)
    assert len(events) == 2 and events[0] == "start" and events[1].startswith("cancelled True")
    assert 0.15 < float(events[1].split()[-1]) < 2.0
    assert (stats.failed, stats.completed) == (1, 0)
    info = tideq.Queue(name, client).get("slow")
    assert info is not None and info.state == "dead"
    assert info.last_error is not None and "timed out" in info.last_error


def test_an_async_handler_exceeding_its_timeout_is_cancelled_and_retried(client, name):
    async def main() -> tuple[tideq.WorkerStats, list[str], float]:
        aq = tideq.AsyncQueue(name, client, backoff=FAST)
        await aq.enqueue(b"x", id="stuck", timeout=0.2, max_attempts=2)
        events: list[str] = []
        t0 = time.monotonic()
        cancelled_after = 0.0

        async def handler(job: tideq.Job) -> None:
            nonlocal cancelled_after
            events.append(f"start {job.attempt}")
            if job.attempt == 1:
                try:
                    await asyncio.sleep(30)
                except asyncio.CancelledError:
                    cancelled_after = time.monotonic() - t0
                    events.append("cancelled")
                    raise

        stats = await aq.run(handler, poll_interval=0.1, stop_when_drained=True)
        return stats, events, cancelled_after

    stats, events, cancelled_after = asyncio.run(main())
    assert events == ["start 1", "cancelled", "start 2"]
    assert 0.15 < cancelled_after < 2.0
    assert (stats.failed, stats.completed) == (1, 1)


def test_an_async_handler_that_catches_the_cancellation_keeps_its_slot_until_it_returns(client, name):
    async def main() -> tuple[tideq.WorkerStats, list[tuple[str, float]]]:
        aq = tideq.AsyncQueue(name, client, backoff=FAST)
        await aq.enqueue(b"x", id="stubborn", timeout=0.2, max_attempts=2)
        events: list[tuple[str, float]] = []
        t0 = time.monotonic()

        async def handler(job: tideq.Job) -> None:
            events.append((f"start {job.attempt}", time.monotonic() - t0))
            if job.attempt == 1:
                try:
                    await asyncio.sleep(60)
                except asyncio.CancelledError:
                    await asyncio.sleep(0.5)  # cleaning up, still on the job
                events.append(("end 1", time.monotonic() - t0))

        stats = await aq.run(handler, concurrency=1, poll_interval=0.1, stop_when_drained=True)
        return stats, events

    stats, events = asyncio.run(main())
    assert [e for e, _ in events] == ["start 1", "end 1", "start 2"]
    assert events[2][1] >= events[1][1], "the retry started before the first attempt ended"
    assert (stats.failed, stats.completed) == (1, 1)


def test_graceful_shutdown_finishes_running_jobs_and_returns_those_that_stop_when_asked(jq):
    jq.enqueue_many([(b"quick", {"id": "quick"}), (b"endless", {"id": "endless"})])
    started = threading.Semaphore(0)

    def handler(job: tideq.Job) -> None:
        started.release()
        if job.payload == b"quick":
            time.sleep(0.1)
        elif wait_for(lambda: job.cancelled, timeout=30):
            raise RuntimeError("asked to stop")

    worker = jq.work(handler, concurrency=2, grace=0.5)
    assert started.acquire(timeout=5) and started.acquire(timeout=5)
    t0 = time.monotonic()
    stats = worker.shutdown()
    took = time.monotonic() - t0
    assert not worker.running
    assert (stats.completed, stats.released, stats.failed) == (1, 1, 0)
    assert took < 2.0, "shutdown waited long past the grace period"
    quick, endless = jq.get("quick"), jq.get("endless")
    assert quick is not None and quick.state == "completed"
    assert endless is not None and (endless.state, endless.attempts) == ("ready", 0), "not returned"


def test_asyncio_graceful_shutdown_cancels_the_unfinished_coroutine_and_returns_its_job(client, name):
    async def main() -> tuple[tideq.WorkerStats, list[str], tideq.JobInfo | None]:
        aq = tideq.AsyncQueue(name, client)
        await aq.enqueue(b"endless", id="endless")
        events: list[str] = []
        started = asyncio.Event()

        async def handler(job: tideq.Job) -> None:
            started.set()
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                events.append("cancelled")
                raise

        worker = aq.work(handler, grace=0.2)
        await asyncio.wait_for(started.wait(), 5)
        stats = await asyncio.wait_for(worker.shutdown(), 10)
        return stats, events, await aq.get("endless")

    stats, events, info = asyncio.run(main())
    assert stats.released == 1 and events == ["cancelled"]
    assert info is not None and (info.state, info.attempts) == ("ready", 0)


def test_a_blocking_worker_returns_an_async_handlers_job_at_shutdown(jq):
    jq.enqueue(b"endless", id="endless")
    started = threading.Event()
    events: list[str] = []

    async def handler(job: tideq.Job) -> None:
        started.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            events.append("cancelled")
            raise

    worker = jq.work(handler, grace=0.2)
    assert started.wait(5)
    stats = worker.shutdown()
    assert stats.released == 1 and events == ["cancelled"]
    info = jq.get("endless")
    assert info is not None and (info.state, info.attempts) == ("ready", 0)


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


RUN_SCRIPT = """
import asyncio, sys, tideq
mode, url, name = sys.argv[1:4]
def handler(job):
    pass
if mode == "async":
    async def main():
        q = tideq.AsyncQueue(name, url=url)
        print("ready", flush=True)
        return await q.run(handler, poll_interval=0.1)
    stats = asyncio.run(main())
else:
    q = tideq.Queue(name, url=url)
    q.enqueue(b"x")
    print("ready", flush=True)
    stats = q.run(handler, poll_interval=0.1)
print("stopped", stats, flush=True)
"""


@pytest.mark.parametrize("mode,sig", [("blocking", signal.SIGTERM), ("async", signal.SIGINT)])
def test_run_stops_gracefully_on_sigint_and_sigterm(redis_url, name, mode, sig):
    proc = subprocess.Popen(
        [sys.executable, "-c", RUN_SCRIPT, mode, redis_url, name],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(0.5)
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=15)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert "stopped WorkerStats(" in out, (out, err)


EXIT_SCRIPT = """
import sys, time, tideq
q = tideq.Queue(sys.argv[2], url=sys.argv[1])
q.enqueue_many([b"1", b"2", b"3"])
started = []
q.work(lambda job: (started.append(1), time.sleep(0.3)), concurrency=3)  # left running on purpose
while len(started) < 3:
    time.sleep(0.01)
"""


def test_a_worker_left_running_is_stopped_at_exit_and_its_jobs_finish(jq, redis_url, name):
    out = subprocess.run([sys.executable, "-c", EXIT_SCRIPT, redis_url, name], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    s = jq.stats()
    assert (s.completed, s.active, s.ready) == (3, 0, 0), "running jobs finish within the grace period at exit"


ABORT_SCRIPT = """
import asyncio, sys, time, tideq
mode, url, name = sys.argv[1:4]
if mode == "async":
    async def handler(job):
        print("started", flush=True)
        await asyncio.sleep(60)
    async def main():
        q = tideq.AsyncQueue(name, url=url)
        await q.enqueue(b"x", id="long")
        return await q.run(handler, poll_interval=0.1, grace=30)
    stats = asyncio.run(main())
else:
    def handler(job):
        print("started", flush=True)
        time.sleep(60)
    q = tideq.Queue(name, url=url)
    q.enqueue(b"x", id="long")
    stats = q.run(handler, poll_interval=0.1, grace=30)
print("stopped", stats, flush=True)
"""


@pytest.mark.parametrize("mode", ["blocking", "async"])
def test_second_signal_aborts_at_once_and_the_first_prints_one_line(jq, redis_url, name, mode):
    proc = subprocess.Popen(
        [sys.executable, "-c", ABORT_SCRIPT, mode, redis_url, name],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stderr is not None
        assert proc.stdout.readline().strip() == "started"
        proc.send_signal(signal.SIGINT)
        first = proc.stderr.readline()
        assert first == (
            "tideq: SIGINT received: shutting down gracefully, waiting up to 30 s for 1 running job; "
            "press Ctrl-C again (or send SIGINT again) to stop at once\n"
        )
        assert proc.poll() is None, "the first signal waits for the running job (grace 30 s)"
        started = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
        assert time.monotonic() - started < 15, "the second signal does not wait for the grace period"
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert err.splitlines()[0] == "tideq: SIGINT received again: stopping at once", err
    assert "shutting down gracefully" not in err, "one line for the first signal"
    assert "stopped WorkerStats(" in out
    info = jq.get("long")
    assert info is not None and info.state == "active", "left to its lease"


def test_abort_stops_a_worker_at_once(jq):
    jq.enqueue(b"x", id="long")
    started = threading.Event()
    release = threading.Event()

    def handler(job: tideq.Job) -> None:
        started.set()
        release.wait(10)

    w = jq.work(handler, grace=30, poll_interval=0.1)
    try:
        assert started.wait(10)
        t0 = time.monotonic()
        w.abort()
        w.join(timeout=5)
        assert not w.running and time.monotonic() - t0 < 5
        info = jq.get("long")
        assert info is not None and info.state == "active", "left to its lease"
    finally:
        release.set()


def test_cancel_of_a_running_job_sets_job_cancelled_from_another_client_and_the_job_ends_cancelled(
    jq, redis_url, name
):
    jq.enqueue(b"x", id="long")
    started = threading.Event()
    seen: list[float] = []

    def handler(job: tideq.Job) -> None:
        started.set()
        assert wait_for(lambda: job.cancelled, timeout=10)
        seen.append(time.monotonic())
        raise RuntimeError("stopped as asked")

    worker = jq.work(handler, poll_interval=0.05)
    try:
        assert started.wait(5)
        other = tideq.Queue(name, tideq.Client(redis_url))
        asked = time.monotonic()
        other.cancel("long")
        assert wait_for(lambda: jq.get("long") is None, timeout=5)
        assert seen and seen[0] - asked < 1.0, "the handler saw the cancel late"
    finally:
        stats = worker.shutdown()
    assert (stats.cancelled, stats.failed, stats.completed) == (1, 0, 0)
    s = jq.stats()
    assert (s.cancelled, s.retried, s.dead) == (1, 0, 0)


def test_cancel_of_a_running_async_handler_cancels_its_task_and_the_job_ends_cancelled(jq, name, client):
    jq.enqueue(b"x", id="slow")
    events: list[str] = []

    async def handler(job: tideq.Job) -> None:
        events.append("start")
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            events.append("cancelled")
            raise

    async def main() -> tideq.WorkerStats:
        q = tideq.AsyncQueue(name, client)
        worker = q.work(handler, poll_interval=0.05)
        for _ in range(100):
            if events:
                break
            await asyncio.sleep(0.05)
        await q.cancel("slow")
        for _ in range(60):
            if await q.get("slow") is None:
                break
            await asyncio.sleep(0.05)
        return await worker.shutdown()

    stats = asyncio.run(main())
    assert events == ["start", "cancelled"]
    assert (stats.cancelled, stats.failed) == (1, 0)
    assert jq.get("slow") is None


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
