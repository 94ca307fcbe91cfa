"""Durations take seconds as a number or as a ``datetime.timedelta``, anywhere: the same value
either way, and the same errors for a negative one or a wrong type."""

from __future__ import annotations

import datetime
import time

import pytest

import tideq

td = datetime.timedelta


def test_a_timedelta_is_the_same_duration_as_its_seconds(client: tideq.Client, name: str) -> None:
    assert tideq.Backoff.fixed(td(seconds=2)).base == tideq.Backoff.fixed(2.0).base == 2.0
    b = tideq.Backoff.exponential(base=td(milliseconds=500), max=td(minutes=1))
    assert (b.base, b.max) == (0.5, 60.0)
    assert tideq.Rate(10, td(minutes=1)).per_seconds == 60.0
    assert tideq.Snooze(td(seconds=90)).delay == 90.0
    assert tideq.BackOff(td(minutes=2), group=True).delay == 120.0
    q = tideq.Queue(name, client, timeout=td(seconds=45), keep_for=td(days=2))
    before = time.time()
    q.enqueue(b"x", id="later", delay=td(minutes=10))
    info = q.get("later")
    assert info is not None and info.state == "delayed" and info.state_since_or_until is not None
    assert before + 599 <= info.state_since_or_until <= time.time() + 601
    capped = tideq.CappedQueue(name + "-c", client, capacity=10, ttl=td(hours=1), max_age=td(minutes=3))
    assert capped.push("g", b"x") == 0
    w = q.work(lambda job: None, poll_interval=td(milliseconds=50), lease=td(seconds=30), grace=td(seconds=5))
    assert isinstance(w.join(timeout=td(milliseconds=10)), tideq.WorkerStats), "still running"
    w.shutdown()


def test_a_negative_timedelta_is_invalid_and_a_string_is_a_type_error(client: tideq.Client, name: str) -> None:
    q = tideq.Queue(name, client)
    with pytest.raises(tideq.InvalidArgumentError):
        q.enqueue(b"x", delay=td(seconds=-1))
    with pytest.raises(TypeError, match="a number or a datetime.timedelta"):
        q.enqueue(b"x", delay="10s")  # type: ignore[arg-type]
    with pytest.raises(tideq.InvalidArgumentError):
        tideq.Snooze(td(seconds=-5))
    assert q.stats().enqueued == 0, "nothing was written"
