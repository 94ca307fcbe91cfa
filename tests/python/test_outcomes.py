"""What a job handler raises besides a failure: ``Snooze`` (run again later, no attempt used),
``BackOff`` (hold the queue or the job's group), ``DontRetry`` (dead-letter at once). The core
keeps the rules (tested in core/tests/outcomes.rs); these check that each exception reaches it,
from blocking and async handlers and from tasks, and that bad values are refused."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

import tideq

FAST = tideq.Backoff.fixed(0.05)


def drain(q: tideq.Queue, handler: Any, **opts: Any) -> tideq.WorkerStats:
    return q.run(handler, poll_interval=0.1, stop_when_drained=True, **opts)


def test_snooze_runs_the_job_again_without_using_an_attempt(client, name, caplog):
    q = tideq.Queue(name, client, backoff=FAST)
    q.enqueue(b"x", id="s", max_attempts=1)
    seen: list[int] = []

    def handler(job: tideq.Job) -> None:
        seen.append(job.attempt)
        if len(seen) < 3:
            raise tideq.Snooze(0.05)

    with caplog.at_level(logging.ERROR, logger="tideq"):
        stats = drain(q, handler)
    assert seen == [1, 1, 1]
    assert (stats.snoozed, stats.failed, stats.completed) == (2, 0, 1)
    s = q.stats()
    assert (s.snoozed, s.retried, s.dead_lettered) == (2, 0, 0)
    assert "WorkerStats(" in repr(stats) and "snoozed=2" in repr(stats)
    assert not caplog.records, "a snooze is not logged as a failure"


def test_async_handlers_and_tasks_snooze_too(client, name):
    async def main() -> tuple[tideq.WorkerStats, list[str]]:
        aq = tideq.AsyncQueue(name, client)
        seen: list[str] = []

        @aq.task
        async def poll(n: int) -> None:
            seen.append(f"task{n}")
            if seen.count(f"task{n}") == 1:
                raise tideq.Snooze(0)

        await poll.enqueue(1)
        stats = await aq.run_tasks(poll_interval=0.1, stop_when_drained=True)
        return stats, seen

    stats, seen = asyncio.run(main())
    assert seen == ["task1", "task1"]
    assert (stats.snoozed, stats.completed, stats.failed) == (1, 1, 0)


def test_back_off_holds_the_group_and_runs_the_job_again_first(client, name):
    q = tideq.Queue(name, client, backoff=FAST)
    q.enqueue(b"", id="a1", group="a")
    q.enqueue(b"", id="a2", group="a")
    q.enqueue_many([(b"", {"id": f"b{i}", "group": "b"}) for i in range(4)])
    runs: list[tuple[str, float]] = []

    def handler(job: tideq.Job) -> None:
        first = job.id == "a1" and not any(r[0] == "a1" for r in runs)
        runs.append((job.id, job.started_at))
        if first:
            raise tideq.BackOff(0.5, group=True)

    stats = drain(q, handler, concurrency=1)
    assert (stats.snoozed, stats.completed) == (1, 6)
    a = [r for r in runs if r[0].startswith("a")]
    assert [r[0] for r in a] == ["a1", "a1", "a2"]
    assert a[1][1] >= a[0][1] + 0.5
    assert max(r[1] for r in runs if r[0].startswith("b")) < a[1][1]


def test_dont_retry_dead_letters_at_once_and_is_logged(client, name, caplog):
    q = tideq.Queue(name, client, backoff=FAST)
    q.enqueue(b"x", id="d", max_attempts=5)

    def handler(job: tideq.Job) -> None:
        raise tideq.DontRetry("card declined")

    with caplog.at_level(logging.ERROR, logger="tideq"):
        stats = drain(q, handler)
    assert stats.failed == 1
    info = q.get("d")
    assert info is not None
    assert (info.state, info.attempts, info.last_error) == ("dead", 1, "DontRetry: card declined")
    assert any("DontRetry" in (r.exc_text or "") for r in caplog.records)


@pytest.mark.parametrize("bad", [-1, float("nan"), float("inf")])
def test_a_bad_delay_is_refused_when_raised(bad):
    with pytest.raises(tideq.InvalidArgumentError, match="delay must be a non-negative"):
        tideq.Snooze(bad)
    with pytest.raises(tideq.InvalidArgumentError, match="delay must be a non-negative"):
        tideq.BackOff(bad)


def test_a_delay_of_the_wrong_type_is_a_type_error():
    with pytest.raises(TypeError, match=r"delay must be seconds \(a number or a datetime.timedelta\), not str"):
        tideq.Snooze("5")  # type: ignore[arg-type]
    assert repr(tideq.BackOff(2, group=True)) == "BackOff(2.0, group=True)"
    assert repr(tideq.Snooze(1.5)) == "Snooze(1.5)"
