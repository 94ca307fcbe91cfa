"""Workers and consumers are context managers: ``with q.work(...) as w:`` (``async with`` in the
asyncio API) shuts the handle down when the block ends, letting running handlers finish, and an
exception raised in the block goes on."""

from __future__ import annotations

import asyncio
import threading

import pytest

import tideq


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
