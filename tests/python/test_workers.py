"""The live workers (``Queue.workers``, ``AsyncQueue.workers``): a Python worker is listed with
its identity; one busy with a long job stays listed, seen through its lease renewals (it does not
fetch meanwhile); one that stops leaves the list."""

from __future__ import annotations

import asyncio
import os
import threading
import time

import tideq
from tideq_harness import wait_for


def test_a_python_worker_is_listed_with_its_identity_and_running_job(client: tideq.Client, name: str) -> None:
    q = tideq.Queue(name, client)
    assert q.workers() == []
    release = threading.Event()
    q.enqueue(b"long", id="long-1")
    w = q.work(lambda job: release.wait(10), concurrency=2, lease=0.6, poll_interval=0.05)
    try:
        assert wait_for(lambda: [x.running for x in q.workers()] == [1], timeout=10), q.workers()
        (me,) = q.workers()
        assert isinstance(me, tideq.WorkerInfo)
        assert (me.queue, me.pid, me.runtime, me.concurrency) == (name, os.getpid(), "python", 2)
        assert me.version == tideq.__version__
        assert me.running_ids == ["long-1"]
        assert me.started_at_ms <= me.last_seen_at_ms
        assert me.to_dict()["running_ids"] == ["long-1"]
        assert repr(me).startswith(f"WorkerInfo(id='{me.id}', queue='{name}'")
    finally:
        release.set()
        w.shutdown()


def test_a_python_worker_holding_a_long_job_stays_listed(client: tideq.Client, name: str) -> None:
    q = tideq.Queue(name, client)
    release = threading.Event()
    q.enqueue(b"long", id="long-2")
    # One slot, busy: the worker does not fetch while the job runs; a 0.6 s lease is renewed
    # every 0.2 s, and each renewal says it is alive (a fetch's report comes every 15 s).
    w = q.work(lambda job: release.wait(10), concurrency=1, lease=0.6, poll_interval=0.05)
    try:
        assert wait_for(lambda: [x.running for x in q.workers()] == [1], timeout=10)
        first = q.workers()[0].last_seen_at_ms
        time.sleep(0.3)
        assert wait_for(lambda: q.workers()[0].last_seen_at_ms > first, timeout=3)
        assert q.workers()[0].running_ids == ["long-2"]
    finally:
        release.set()
        w.shutdown()
    assert q.workers() == []


def test_async_queue_lists_workers_too(client: tideq.Client, name: str) -> None:
    async def main() -> list[tideq.WorkerInfo]:
        aq = tideq.AsyncQueue(name, client)
        w = aq.work(lambda job: None, poll_interval=0.05)
        try:
            for _ in range(500):
                listed = await aq.workers()
                if listed:
                    return listed
                await asyncio.sleep(0.01)
            return []
        finally:
            await w.shutdown()

    listed = asyncio.run(main())
    assert [x.runtime for x in listed] == ["python"]
    assert tideq.Queue(name, client).workers() == []
