"""Workers and consumers are context managers: ``with q.work(...) as w:`` (``async with`` in the
asyncio API) shuts the handle down when the block ends, letting running handlers finish, and an
exception raised in the block goes on. Queues are too: ``with Queue(...) as q:`` shuts down the
workers (consumers, for a capped queue) started from ``q`` when the block ends, the same way,
and ``q`` stays usable."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

import tideq
from tideq_harness import wait_for


def test_with_a_worker_shuts_it_down_when_the_block_ends(client: tideq.Client, name: str) -> None:
    q = tideq.Queue(name, client)
    done = threading.Event()
    with q.work(lambda job: done.set(), poll_interval=0.05) as w:
        assert isinstance(w, tideq.Worker) and w.running
        q.enqueue(b"x", id="one")
        assert done.wait(10)
    assert not w.running
    assert q.stats().completed == 1


def test_an_exception_in_the_block_goes_on_and_the_worker_still_stops(client: tideq.Client, name: str) -> None:
    q = tideq.Queue(name, client)
    with pytest.raises(KeyError, match="from the block"):
        with q.work(lambda job: None, poll_interval=0.05) as w:
            raise KeyError("from the block")
    assert not w.running


def test_with_a_consumer_shuts_it_down_when_the_block_ends(client: tideq.Client, name: str) -> None:
    cq = tideq.CappedQueue(name, client, capacity=10)
    got = threading.Event()
    with cq.consume(lambda group, items: got.set()) as c:
        assert isinstance(c, tideq.Consumer)
        cq.push("g", b"x")
        assert got.wait(10)
    assert not c.running and c.stats().batches >= 1


def test_async_with_shuts_down_asyncio_workers_and_consumers(client: tideq.Client, name: str) -> None:
    async def main() -> tuple[bool, bool, int]:
        q = tideq.AsyncQueue(name, client)
        done = asyncio.Event()

        async def handle(job: tideq.Job) -> None:
            done.set()

        async with q.work(handle, poll_interval=0.05) as w:
            assert isinstance(w, tideq.AsyncWorker)
            await q.enqueue(b"x")
            await asyncio.wait_for(done.wait(), 10)
        cq = tideq.AsyncCappedQueue(name + "-c", client, capacity=10)
        with pytest.raises(ValueError, match="from the block"):
            async with cq.consume(lambda group, items: None) as c:
                assert isinstance(c, tideq.AsyncConsumer)
                raise ValueError("from the block")
        return w.running, c.running, (await q.stats()).completed

    assert asyncio.run(main()) == (False, False, 1)


def test_with_a_queue_shuts_down_the_workers_started_from_it(client: tideq.Client, name: str) -> None:
    finished: list[str] = []

    def slow(job: tideq.Job) -> None:
        time.sleep(0.3)
        finished.append(job.id)

    with tideq.Queue(name, client) as q:
        assert isinstance(q, tideq.Queue)
        w = q.work(slow, poll_interval=0.05, concurrency=1)
        q.enqueue(b"x", id="slow")
        assert wait_for(lambda: q.stats().active == 1 or bool(finished))
        # Started once the one job is taken, so they take nothing.
        tasks = q.work_tasks({"noop": lambda: None}, poll_interval=0.05)
        stopped_early = q.work(lambda job: None, poll_interval=0.05)
        stopped_early.shutdown()
        # Started from another handle of the queue: not this block's to stop.
        other = tideq.Queue(name, client).work(lambda job: None, poll_interval=0.05)
    assert finished == ["slow"], "its handler got the grace period"
    assert not w.running and not tasks.running and not stopped_early.running
    assert other.running
    other.shutdown()
    assert q.stats().completed == 1 and q.enqueue(b"y").created, "the queue stays usable"


def test_an_exception_in_a_queues_block_goes_on_and_its_workers_still_stop(client: tideq.Client, name: str) -> None:
    with pytest.raises(KeyError, match="from the block"):
        with tideq.Queue(name, client) as q:
            w = q.work(lambda job: None, poll_interval=0.05)
            raise KeyError("from the block")
    assert not w.running


def test_with_a_capped_queue_shuts_down_its_consumers(client: tideq.Client, name: str) -> None:
    got = threading.Event()
    with tideq.CappedQueue(name, client, capacity=10) as cq:
        c = cq.consume(lambda group, items: got.set())
        cq.push("g", b"x")
        assert got.wait(10)
    assert not c.running and c.stats().batches >= 1
    assert cq.push("g", b"y") == 0, "the queue stays usable"


def test_async_with_a_queue_shuts_down_its_asyncio_workers_and_consumers(client: tideq.Client, name: str) -> None:
    async def main() -> tuple[bool, bool, int]:
        done = asyncio.Event()

        async def handle(job: tideq.Job) -> None:
            done.set()

        async with tideq.AsyncQueue(name, client) as q:
            assert isinstance(q, tideq.AsyncQueue)
            w = q.work(handle, poll_interval=0.05)
            await q.enqueue(b"x")
            await asyncio.wait_for(done.wait(), 10)
        with pytest.raises(ValueError, match="from the block"):
            async with tideq.AsyncCappedQueue(name + "-c", client, capacity=10) as cq:
                assert isinstance(cq, tideq.AsyncCappedQueue)
                c = cq.consume(lambda group, items: None)
                raise ValueError("from the block")
        return w.running, c.running, (await q.stats()).completed

    assert asyncio.run(main()) == (False, False, 1)
