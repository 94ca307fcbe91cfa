"""Expiry before start (``expires_after``, ``expires_at``): a job no worker started by its
deadline is not run but dead-lettered as expired. The core keeps the rule (core/tests/expiry.rs);
these check the options reach it from ``enqueue``, ``enqueue_many`` and ``enqueue_task``, and that
bad values are refused with nothing written."""

from __future__ import annotations

import datetime
import time

import pytest

import tideq


def test_a_job_not_started_by_its_deadline_is_not_run_and_is_reported(client, name):
    q = tideq.Queue(name, client)
    q.set_events(100)
    q.enqueue(b"x", id="late", expires_after=0.05)
    q.enqueue_many([(b"y", {"id": "late2", "expires_at": time.time() - 1})])
    q.enqueue(b"z", id="fine", expires_at=datetime.datetime.now() + datetime.timedelta(hours=1))

    @q.task
    def ping() -> None:
        pass

    ping.enqueue_with(id="late3", expires_after=0.05)
    time.sleep(0.2)
    ran: list[str] = []
    stats = q.run(lambda job: ran.append(job.id), stop_when_drained=True, poll_interval=0.1)
    assert ran == ["fine"]
    assert stats.completed == 1
    s = q.stats()
    assert (s.expired, s.dead_lettered, s.completed) == (3, 0, 1)
    info = q.get("late")
    assert info is not None and info.state == "dead"
    assert info.last_error is not None and info.last_error.startswith("expired: not started")
    with pytest.raises(tideq.JobFailedError, match="expired"):
        q.wait("late2", timeout=5)
    reader = q.events(from_start=True)
    kinds = []
    while (e := reader.next(timeout=0.3)) is not None:
        if e.job_id == "late":
            kinds.append(e.kind)
    assert kinds == ["enqueued", "expired"]


def test_bad_expiry_options_are_refused_and_nothing_is_written(client, name):
    q = tideq.Queue(name, client)
    with pytest.raises(tideq.InvalidArgumentError, match="give expires_after or expires_at, not both"):
        q.enqueue(b"x", expires_after=1, expires_at=time.time() + 5)
    with pytest.raises(tideq.InvalidArgumentError, match="expires_after must be"):
        q.enqueue(b"x", expires_after=-1)
    with pytest.raises(TypeError, match="expires_after"):
        q.enqueue_many([(b"x", {"expires_after": "soon"})])  # type: ignore[typeddict-item]
    assert q.stats().enqueued == 0
