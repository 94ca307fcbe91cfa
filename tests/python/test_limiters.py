"""Shared limiters from Python: ``Limiter`` and ``AsyncLimiter`` define and take from the core's
limiters (the rules are tested in core/tests/limiters.rs and limiters_processes.rs); these check
the blocking and asyncio forms, ``OverLimit`` snoozing a job, and bad arguments refused."""

from __future__ import annotations

import asyncio
import math
import threading
import time
from typing import Any

import pytest

import tideq


def test_a_concurrency_limit_admits_n_and_with_gives_the_slot_back(client, name):
    lim = tideq.Limiter(client)
    lim.concurrent(name, 2, lease=30)
    a = lim.acquire(name)
    assert a.lease_deadline is not None and a.lease_deadline > 1e9
    with lim.acquire(name):
        with pytest.raises(tideq.OverLimit) as over:
            lim.acquire(name)
        assert isinstance(over.value, tideq.Snooze)
        assert over.value.name == name and 0 < over.value.delay <= 0.4
    with lim.acquire(name) as b:
        assert b.extend(10)
    assert a.release() is True
    assert a.release() is True  # released once: nothing more to give back
    assert lim.run(name, lambda: 7) == 7


def test_a_window_and_a_bucket_take_from_the_limit(client, name):
    lim = tideq.Limiter(client)
    lim.window(name + "w", 2, per=60)
    lim.acquire(name + "w").release()
    lim.acquire(name + "w")
    with pytest.raises(tideq.OverLimit) as over:
        lim.acquire(name + "w")
    assert 59 < over.value.delay <= 60
    lim.bucket(name + "b", 10, refill=1)
    lim.acquire(name + "b", cost=10)
    with pytest.raises(tideq.OverLimit) as over:
        lim.acquire(name + "b", cost=3)
    assert 2 < over.value.delay <= 3


def test_over_the_limit_in_a_handler_snoozes_the_job(client, name):
    lim = tideq.Limiter(client)
    lim.concurrent(name, 1, lease=30)
    held = lim.acquire(name)
    q = tideq.Queue(name, client)
    q.enqueue(b"x", id="j")
    seen: list[int] = []

    def handler(job: tideq.Job) -> None:
        seen.append(job.attempt)
        if len(seen) == 3:
            held.release()
        with lim.acquire(name):
            pass

    stats = q.run(handler, poll_interval=0.1, stop_when_drained=True)
    assert seen == [1, 1, 1]
    assert (stats.snoozed, stats.failed, stats.completed) == (2, 0, 1)


def test_async_limiter_works_with_async_with_and_await(client, name):
    async def main() -> None:
        lim = tideq.AsyncLimiter(client)
        await lim.concurrent(name, 1, lease=30)
        async with lim.acquire(name) as slot:
            assert slot.lease_deadline is not None
            with pytest.raises(tideq.OverLimit):
                await lim.acquire(name)
            assert await slot.extend(5)
        slot2 = await lim.acquire(name)
        assert await slot2.release()

        async def work() -> int:
            return 3

        assert await lim.run(name, work) == 3
        await lim.bucket(name + "b", 1, refill=0.5)
        await lim.window(name + "w", 1, per=1)

    asyncio.run(main())


@pytest.mark.parametrize(
    "call",
    [
        lambda l, n: l.concurrent(n, 0),
        lambda l, n: l.concurrent(n, -1),
        lambda l, n: l.concurrent(n, 100_001),
        lambda l, n: l.concurrent(n, 1, lease=0),
        lambda l, n: l.concurrent(n, 1, lease=-1),
        lambda l, n: l.window(n, 0, per=1),
        lambda l, n: l.window(n, 1, per=0),
        lambda l, n: l.bucket(n, 0, refill=1),
        lambda l, n: l.bucket(n, 5, refill=0),
        lambda l, n: l.bucket(n, 5, refill=-1),
        lambda l, n: l.bucket(n, 5, refill=math.nan),
        lambda l, n: l.concurrent("", 1),
        lambda l, n: l.concurrent("a{b}", 1),
        lambda l, n: l.concurrent("a*", 1),
        lambda l, n: l.acquire(n + "-never-defined"),
        lambda l, n: l.acquire(n, cost=0),
    ],
)
def test_bad_arguments_are_refused(client, name, call: Any):
    # Nothing written on each of them: core/tests/limiters.rs reads the keys.
    lim = tideq.Limiter(client)
    with pytest.raises(tideq.InvalidArgumentError):
        call(lim, name)


def test_a_cost_above_one_on_a_concurrency_limiter_is_refused(client, name):
    lim = tideq.Limiter(client)
    lim.concurrent(name, 3)
    with pytest.raises(tideq.InvalidArgumentError, match="its cost is 1"):
        lim.acquire(name, cost=2)


def test_a_queue_naming_a_limiter_starts_no_more_than_it_allows_across_queues(client, name):
    lim = tideq.Limiter(client)
    lim.concurrent(name, 3, lease=60)
    a, b = tideq.Queue(name + "-a", client), tideq.Queue(name + "-b", client)
    for q in (a, b):
        q.set_limiter(name)
        assert q.limiter_name() == name
        q.enqueue_many([b"x"] * 5)
    first = a.lease_jobs(2, lease=30)
    assert len(first) == 2
    assert len(b.lease_jobs(5, lease=30)) == 1  # one slot left of 3
    a.complete(first[0])
    assert len(b.lease_jobs(5, lease=30)) == 1  # a completed job gave its slot back
    b.set_limiter(None)
    assert b.limiter_name() is None
    assert len(b.lease_jobs(5, lease=30)) == 3
    with pytest.raises(tideq.InvalidArgumentError, match='no limiter named "nosuch"'):
        a.set_limiter("nosuch")
    assert a.limiter_name() == name  # a refused change wrote nothing


def test_async_queue_set_limiter(client, name):
    async def main() -> None:
        await tideq.AsyncLimiter(client).window(name, 1, per=60)
        q = tideq.AsyncQueue(name, client)
        await q.set_limiter(name)
        assert await q.limiter_name() == name
        await q.enqueue_many([b"x"] * 2)
        assert len(await q.lease_jobs(2, lease=30)) == 1

    asyncio.run(main())


def test_a_group_naming_a_limiter_never_runs_more_than_its_slots(client, name):
    lim = tideq.Limiter(client)
    lim.concurrent(name, 2, lease=60)
    q = tideq.Queue(name, client, max_attempts=1)
    q.set_group_limiter("acme", name)
    assert q.group("acme").limiter == name
    q.enqueue_many([(b"a", {"group": "acme"}) for _ in range(12)])
    q.enqueue_many([(b"f", {"group": "free"}) for _ in range(4)])
    lock = threading.Lock()
    running, most, attempts = [0], [0], []

    def handler(job: tideq.Job) -> None:
        acme = job.payload == b"a"
        with lock:
            attempts.append(job.attempt)
            if acme:
                running[0] += 1
                most[0] = max(most[0], running[0])
        time.sleep(0.02)
        if acme:
            with lock:
                running[0] -= 1

    stats = q.run(handler, concurrency=8, stop_when_drained=True)
    assert stats.completed == 16
    assert most[0] <= 2, most[0]  # the limiter's two slots
    assert attempts == [1] * 16  # jobs over the limit go back without using an attempt
    assert q.stats().dead == 0


def test_a_group_limiter_never_defined_is_refused_and_nothing_is_written(client, name):
    q = tideq.Queue(name, client)
    with pytest.raises(tideq.InvalidArgumentError, match='no limiter named "nosuch"'):
        q.set_group_limiter("acme", "nosuch")
    assert q.groups() == []

    async def main() -> None:
        aq = tideq.AsyncQueue(name, client)
        with pytest.raises(tideq.InvalidArgumentError):
            await aq.set_group_limiter("acme", "nosuch")
        await tideq.AsyncLimiter(client).window(name, 1, per=60)
        await aq.set_group_limiter("acme", name)
        assert (await aq.group("acme")).limiter == name
        await aq.set_group_limiter("acme", None)
        assert (await aq.group("acme")).limiter is None

    asyncio.run(main())
