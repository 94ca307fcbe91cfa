"""Workers, blocking and asyncio: leases across real process death and freezing, long handlers
(sleeping, CPU-bound, async) that keep their lease, and timeouts: the slot kept until the handler
ends, the job cancelled, the attempt failed and retried; a sync handler past the shutdown grace
period."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
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
