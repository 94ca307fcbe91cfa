"""Manual leasing from Python (``lease_jobs``, ``complete``, ``fail``, ``release``, ``extend``),
blocking and asyncio."""

from __future__ import annotations

import asyncio
import time

import pytest

import tideq


@pytest.fixture
def jq(client: tideq.Client, name: str) -> tideq.Queue:
    return tideq.Queue(name, client, backoff=tideq.Backoff.fixed(0.05))


def test_manual_leasing_complete_fail_release_and_extend(jq):
    jq.enqueue_many([(b"a", {"id": "a"}), (b"b", {"id": "b", "max_attempts": 1}), (b"c", {"id": "c"}),
                     (b"d", {"id": "d", "max_attempts": 3})])
    jobs = jq.lease_jobs(10, lease=30)
    assert [j.id for j in jobs] == ["a", "b", "c", "d"]
    a, b, c, d = jobs
    assert a.attempt == 1 and a.started_at >= a.enqueued_at
    before = jq.get("c")
    assert before is not None and before.state == "active"
    jq.complete(a)
    assert jq.fail(b, "gave up") is True, "dead-lettered after max_attempts"
    assert jq.fail(d, ValueError("retry me")) is False, "retried"
    jq.extend(c, 60)
    after = jq.get("c")
    assert after is not None and before.state_since_or_until is not None
    assert after.state_since_or_until is not None and after.state_since_or_until > before.state_since_or_until + 20
    jq.release(c)
    infos = {i: jq.get(i) for i in "abcd"}
    assert {i: (x.state if x else None) for i, x in infos.items()} == {
        "a": "completed", "b": "dead", "c": "ready", "d": "delayed"}
    assert infos["d"] is not None and infos["d"].last_error == "ValueError: retry me"
    again = jq.lease_jobs(1, lease=30)
    assert [(j.id, j.attempt) for j in again] == [("c", 1)], "release does not count the attempt"


def test_a_lost_lease_is_refused(jq):
    jq.enqueue(b"x", id="x")
    (job,) = jq.lease_jobs(1, lease=0.05)
    time.sleep(0.2)
    (again,) = jq.lease_jobs(1, lease=30)
    assert again.attempt == 2
    with pytest.raises(tideq.LeaseLostError):
        jq.complete(job)
    jq.complete(again)


def test_bad_lease_arguments(jq):
    with pytest.raises(tideq.InvalidArgumentError):
        jq.lease_jobs(0, lease=1)
    with pytest.raises(tideq.InvalidArgumentError):
        jq.lease_jobs(1, lease=-1)
    assert jq.lease_jobs(5, lease=1) == []


def test_async_manual_leasing(client, name):
    async def main() -> None:
        q = tideq.AsyncQueue(name, client)
        await q.enqueue(b"x", id="x")
        (job,) = await q.lease_jobs(5, lease=10)
        await q.extend(job, 20)
        await q.complete(job)
        info = await q.get("x")
        assert info is not None and info.state == "completed"
        await q.enqueue(b"y", id="y", max_attempts=1)
        (job,) = await q.lease_jobs(5, lease=10)
        assert await q.fail(job, "no") is True
        await q.enqueue(b"z", id="z")
        (job,) = await q.lease_jobs(5, lease=10)
        await q.release(job)
        assert (await q.stats()).ready == 1

    asyncio.run(main())
