"""A schedule's actions (blocking and asyncio APIs): run now, pause and resume, and the listing's
last job and its outcome (issue 43, "Settings from the UI"), across the Python/Rust crossing,
against a real redis-server. Each error path writes nothing."""

from __future__ import annotations

import time
from typing import Any

import pytest

import tideq
from resp import command, keys
from tideq_harness import Awaiting


@pytest.fixture(params=["blocking", "asyncio"])
def jq(request: pytest.FixtureRequest, client: tideq.Client, name: str) -> Any:
    """The queue under test, through the blocking API or the asyncio one."""
    if request.param == "blocking":
        return tideq.Queue(name, client)
    return Awaiting(tideq.AsyncQueue(name, client))


def dump(url: str, name: str) -> list[tuple[bytes, bytes]]:
    """Every key of queue `name` (its keys carry `{name}`) and its value (DUMP), to show that a
    refused call wrote nothing. Only the queue's: other tests share the server meanwhile."""
    return [(k, command(url, "DUMP", k)) for k in sorted(keys(url, f"*{{{name}}}*"))]


def test_run_now_enqueues_one_job_and_leaves_the_next_run_unchanged(jq: Any) -> None:
    nxt = jq.upsert_schedule("hourly", b"p", every=3600)
    job_id = jq.run_schedule("hourly")
    assert job_id.startswith("hourly@run-")
    assert jq.get(job_id).state == "ready"
    (s,) = jq.schedules()
    assert s.next_run_ms == nxt
    assert s.last_job_id == job_id
    assert s.last_job_state == "ready"
    assert s.paused is False
    assert s.to_dict()["last_job_id"] == job_id


def test_a_paused_schedule_does_not_fire_and_fires_again_after_resume(
    jq: Any, client: tideq.Client, name: str
) -> None:
    jq.upsert_schedule("tick", b"t", every=1)
    assert jq.pause_schedule("tick") is True
    assert jq.pause_schedule("tick") is False
    (s,) = jq.schedules()
    assert s.paused is True and s.next_run_ms is not None
    ran: list[str] = []
    # The worker (blocking API either way) drives the schedules.
    worker = tideq.Queue(name, client).work(lambda job: ran.append(job.id), poll_interval=0.1)
    try:
        time.sleep(2.5)
        assert ran == [], "a paused schedule fired"
        assert jq.resume_schedule("tick") is True
        assert jq.resume_schedule("tick") is False
        deadline = time.monotonic() + 10
        while not ran and time.monotonic() < deadline:
            time.sleep(0.05)
        assert ran, "a resumed schedule did not fire"
    finally:
        worker.shutdown()


def test_actions_on_an_unknown_schedule_raise_and_write_nothing(jq: Any, redis_url: str) -> None:
    jq.upsert_schedule("real", b"p", every=3600)
    before = dump(redis_url, jq.name)
    assert before, "the queue's keys were not found"
    for action in (jq.run_schedule, jq.pause_schedule, jq.resume_schedule):
        with pytest.raises(tideq.InvalidArgumentError, match='no schedule named "nosuch"'):
            action("nosuch")
    assert jq.remove_schedule("nosuch") is False
    assert dump(redis_url, jq.name) == before
