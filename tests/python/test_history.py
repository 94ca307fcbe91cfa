"""The queue's history (``Queue.history``, ``AsyncQueue.history``): after a Python worker ran
jobs, the history kept in Redis counts them; a bad window or step is refused."""

from __future__ import annotations

import asyncio
import datetime

import pytest

import tideq


def handler(job: tideq.Job) -> None:
    if job.payload == b"bad":
        raise RuntimeError("bad job")


def test_history_counts_what_a_worker_ran(client: tideq.Client, name: str) -> None:
    q = tideq.Queue(name, client)
    # A worker's first report leaves the baseline snapshot (everything at 0).
    q.run(handler, stop_when_drained=True)
    for _ in range(5):
        q.enqueue(b"ok")
    q.enqueue(b"bad", max_attempts=1)
    q.run(handler, stop_when_drained=True, poll_interval=0.05)
    points = q.history()
    assert len(points) == 60 and all(isinstance(p, tideq.HistoryPoint) for p in points)
    assert [p.at_ms - points[0].at_ms for p in points[:3]] == [0, 60_000, 120_000]
    assert sum(p.enqueued for p in points) == 6
    assert sum(p.completed for p in points) == 5
    assert sum(p.dead_lettered for p in points) == 1
    assert sum(p.failed for p in points) == 1
    assert sum(p.retried + p.cancelled for p in points) == 0
    last = points[-1]
    assert last.to_dict()["completed"] == last.completed
    assert repr(last).startswith(f"HistoryPoint(at_ms={last.at_ms}, ")
    # A timedelta, and steps of several minutes (aligned on the step).
    hours = q.history(window=datetime.timedelta(hours=2), step=600)
    assert len(hours) == 12 and all(p.at_ms % 600_000 == 0 for p in hours)
    assert sum(p.completed for p in hours) == 5
    # The same history through the asyncio class.
    aq = tideq.AsyncQueue(name, client)
    again = asyncio.run(aq.history(3600.0, 60.0))
    assert sum(p.completed for p in again) == 5


@pytest.mark.parametrize(("window", "step"), [(3600, 30), (3600, 90), (60, 120), (15 * 86400, 60), (-1, 60)])
def test_a_bad_window_or_step_is_refused(client: tideq.Client, name: str, window: float, step: float) -> None:
    with pytest.raises(tideq.InvalidArgumentError):
        tideq.Queue(name, client).history(window, step)
