"""Workers, blocking and asyncio: graceful shutdown (running jobs finish or are returned), run()
stopped by SIGINT and SIGTERM, a second signal or abort() stopping at once, workers left running
at exit, and cancelling a running job from another client."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import threading
import time

import pytest

import tideq
from tideq_harness import wait_for

FAST = tideq.Backoff.fixed(0.05)


@pytest.fixture
def jq(client: tideq.Client, name: str) -> tideq.Queue:
    return tideq.Queue(name, client, backoff=FAST)


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
