"""Batch workers from Python (``work_batches``/``run_batches``), blocking and asyncio: a handler
gets lists of jobs; None completes them all, a ``{job_id: error}`` mapping fails those jobs and
completes the rest, raising fails them all."""

from __future__ import annotations

import asyncio
from typing import Any, Optional

import pytest

import tideq


@pytest.fixture
def jq(client: tideq.Client, name: str) -> tideq.Queue:
    return tideq.Queue(name, client, backoff=tideq.Backoff.fixed(0.05))


def test_batches_get_up_to_size_jobs_and_none_completes_them_all(jq):
    jq.enqueue_many([str(i).encode() for i in range(10)])
    sizes: list[int] = []
    stats = jq.run_batches(lambda jobs: sizes.append(len(jobs)), size=4, wait=0.3, concurrency=8,
                           poll_interval=0.1, stop_when_drained=True)
    assert stats.completed == 10 and sum(sizes) == 10 and max(sizes) <= 4
    assert jq.stats().completed == 10


def test_batch_handler_partial_failure_retries_or_dead_letters_the_failed_and_completes_the_rest(jq):
    jq.enqueue_many([(f"j{i}".encode(), {"id": f"j{i}", "max_attempts": 2}) for i in range(6)])
    calls: list[list[str]] = []

    def handler(jobs: list[tideq.Job]) -> Optional[dict[Any, Any]]:
        calls.append([j.id for j in jobs])
        failed: dict[Any, Any] = {}
        for j in jobs:
            if j.id == "j1":
                failed[j.id] = "always fails"
            elif j.id == "j2" and j.attempt == 1:
                failed[j] = ValueError("once")  # a Job as key, an exception as error
        return failed

    stats = jq.run_batches(handler, size=6, wait=0.5, concurrency=6, poll_interval=0.1, stop_when_drained=True)
    assert stats.completed == 5
    s = jq.stats()
    assert (s.completed, s.dead, s.retried) == (5, 1, 2)
    dead = jq.dead_letters()
    assert [(d.id, d.attempts, d.last_error) for d in dead] == [("j1", 2, "always fails")]
    j2 = jq.get("j2")
    assert j2 is not None and (j2.state, j2.attempts, j2.last_error) == ("completed", 2, "ValueError: once")


def test_raising_fails_the_whole_batch(jq):
    jq.enqueue_many([(b"x", {"max_attempts": 1}) for _ in range(3)])

    def handler(jobs: list[tideq.Job]) -> None:
        raise RuntimeError("batch down")

    stats = jq.run_batches(handler, size=3, wait=0.5, concurrency=3, poll_interval=0.1, stop_when_drained=True)
    assert stats.failed == 3
    assert [d.last_error for d in jq.dead_letters()] == ["RuntimeError: batch down"] * 3


def test_a_return_value_that_is_not_a_mapping_fails_the_batch_with_a_clear_error(jq):
    jq.enqueue(b"x", max_attempts=1)
    jq.run_batches(lambda jobs: 42, size=1, poll_interval=0.1, stop_when_drained=True)
    (dead,) = jq.dead_letters()
    assert "a batch handler returns None or a mapping {job_id: error}" in (dead.last_error or "")


def test_bad_batch_options_are_refused(jq):
    with pytest.raises(tideq.InvalidArgumentError):
        jq.work_batches(lambda jobs: None, size=0)
    with pytest.raises(tideq.InvalidArgumentError):
        jq.work_batches(lambda jobs: None, size=20, concurrency=10)
    with pytest.raises(tideq.InvalidArgumentError):
        jq.work_batches(lambda jobs: None, size=2, wait=-1)


def test_async_batch_handler_partial_failure(client, name):
    async def main() -> None:
        q = tideq.AsyncQueue(name, client, backoff=tideq.Backoff.fixed(0.05))
        await q.enqueue_many([(b"ok", {"id": "ok"}), (b"bad", {"id": "bad", "max_attempts": 1})])

        async def handler(jobs: list[tideq.Job]) -> dict[str, str]:
            await asyncio.sleep(0)
            return {j.id: "no" for j in jobs if j.id == "bad"}

        stats = await q.run_batches(handler, size=2, wait=0.5, concurrency=2, poll_interval=0.1,
                                    stop_when_drained=True)
        assert stats.completed == 1
        bad, ok = await q.get("bad"), await q.get("ok")
        assert bad is not None and ok is not None
        assert (bad.state, bad.last_error, ok.state) == ("dead", "no", "completed")

    asyncio.run(main())
