"""The queue's latency (``stats().latency``, ``group(name).latency``): seconds the job next in line
has been ready, counted from a delayed job's due time (not its enqueue), 0.0 with nothing ready.
Bounds come from the clock read around each call, never from a sleep's length."""

from __future__ import annotations

import asyncio
import time

import pytest

import tideq

# Redis keeps ms: a reading may be up to 1 ms under the bound from this process's clock.
MS = 0.002


@pytest.fixture
def jq(client: tideq.Client, name: str) -> tideq.Queue:
    return tideq.Queue(name, client)


def test_an_empty_queue_has_latency_0(jq: tideq.Queue) -> None:
    s = jq.stats()
    assert s.latency == 0.0 and isinstance(s.latency, float)
    assert s.to_dict()["latency"] == 0.0
    jq.enqueue(b"later", delay=60)
    assert jq.stats().latency == 0.0


def test_a_due_delayed_job_counts_from_its_due_time_with_no_worker_running(jq: tideq.Queue) -> None:
    delay = 0.4
    t0 = time.time()
    jq.enqueue(b"d", delay=delay)
    t1 = time.time()
    time.sleep(0.8)
    a = time.time()
    latency = jq.stats().latency
    b = time.time()
    assert a - (t1 + delay) - MS <= latency <= b - (t0 + delay) + MS, latency
    assert "latency=" in repr(jq.stats())
    jq.lease_jobs(1, lease=60)
    assert jq.stats().latency == 0.0


def test_a_group_reports_its_own_latency_in_both_modes(client: tideq.Client, name: str) -> None:
    async def main() -> None:
        q = tideq.AsyncQueue(name, client)
        t0 = time.time()
        await q.enqueue(b"a", group="old")
        t1 = time.time()
        await asyncio.sleep(0.3)
        await q.enqueue(b"b", group="new")
        a = time.time()
        old, new, none, stats = await q.group("old"), await q.group("new"), await q.group("none"), await q.stats()
        b = time.time()
        assert old.latency is not None and new.latency is not None, "group(name) reads it"
        assert a - t1 - MS <= old.latency <= b - t0 + MS, old
        assert new.latency < old.latency and none.latency == 0.0
        assert a - t1 - MS <= stats.latency <= b - t0 + MS, stats
        assert "latency=" in repr(old)
        # A list of groups does not (it would look up every listed group's jobs).
        assert [g.latency for g in await q.groups()] == [None, None]

    asyncio.run(main())
    # The blocking queue reads the same.
    latency = tideq.Queue(name, client).group("old").latency
    assert latency is not None and latency > 0.3 - MS
