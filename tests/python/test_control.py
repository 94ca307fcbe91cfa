"""Queue control from Python, blocking and asyncio: priorities, groups (round-robin, concurrency
limits), rate limits, pause/resume, GroupInfo, and bad input refused before anything is written.
The rules are the core's (core/tests/control_*.rs); these check the binding carries them."""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter, defaultdict
from typing import Any

import pytest

import tideq
from tideq_harness import wait_for


@pytest.fixture
def jq(client: tideq.Client, name: str) -> tideq.Queue:
    return tideq.Queue(name, client, backoff=tideq.Backoff.fixed(0.05))


def lease_all(q: tideq.Queue) -> list[str]:
    out: list[str] = []
    while True:
        jobs = q.lease_jobs(100, lease=30)
        if not jobs:
            return out
        for j in jobs:
            q.complete(j)
            out.append(j.text())


def test_max_priority_is_the_cores():
    assert tideq.MAX_PRIORITY == 2**21 - 1


def test_priorities_run_unprioritized_first_then_lowest_number_first_fifo_within_one(jq):
    jq.enqueue(b"plain-1")
    jq.enqueue(b"p5-1", priority=5)
    jq.enqueue(b"p1-1", priority=1)
    jq.enqueue_many([(b"p5-2", {"priority": 5}), b"plain-2", (b"p1-2", {"priority": 1})])
    jq.enqueue(b"last", priority=tideq.MAX_PRIORITY)
    jq.enqueue(b"p1-3", priority=1)
    assert lease_all(jq) == ["plain-1", "plain-2", "p1-1", "p1-2", "p1-3", "p5-1", "p5-2", "last"]


def test_priority_and_group_are_shown_by_get(jq):
    jq.enqueue(b"x", id="a", priority=7, group="tenant-1")
    jq.enqueue(b"y", id="b")
    a, b = jq.get("a"), jq.get("b")
    assert a is not None and (a.priority, a.group) == (7, "tenant-1")
    assert b is not None and (b.priority, b.group) == (None, None)
    assert "priority=7, group='tenant-1'" in repr(a)


def test_groups_are_served_round_robin(jq):
    jq.enqueue_many([(f"{g}{i}".encode(), {"group": g}) for g in "abc" for i in range(3)])
    assert lease_all(jq) == ["a0", "b0", "c0", "a1", "b1", "c1", "a2", "b2", "c2"]


def test_a_big_group_does_not_starve_small_ones(jq):
    jq.enqueue_many([(b"big", {"group": "big"}) for _ in range(500)])
    jq.enqueue_many([(f"s{i}".encode(), {"group": f"small-{i}"}) for i in range(10)])
    order = lease_all(jq)
    # Every small group's job starts within the first round (11 groups).
    assert {o for o in order[:11]} == {"big", *(f"s{i}" for i in range(10))}


def test_group_concurrency_limit_is_never_exceeded(jq):
    jq.set_limits(group_concurrency=2)
    jq.set_group_limits("solo", concurrency=1)
    jobs = [(g.encode(), {"group": g}) for g in ["g1", "g2", "solo"] for _ in range(8)]
    jq.enqueue_many(jobs)
    lock = threading.Lock()
    active: Counter[str] = Counter()
    most: dict[str, int] = defaultdict(int)

    def handler(job: tideq.Job) -> None:
        g = job.text()
        with lock:
            active[g] += 1
            most[g] = max(most[g], active[g])
        time.sleep(0.02)
        with lock:
            active[g] -= 1

    stats = jq.run(handler, concurrency=10, poll_interval=0.05, stop_when_drained=True)
    assert stats.completed == 24
    assert most == {"g1": 2, "g2": 2, "solo": 1}


def test_limits_are_read_back_and_none_removes_them(jq):
    assert jq.limits() == jq.limits()
    empty = jq.limits()
    assert (empty.max_active, empty.rate, empty.group_concurrency, empty.group_rate) == (None, None, None, None)
    jq.set_limits(max_active=5, rate=tideq.Rate(100, 1.5), group_concurrency=2, group_rate=tideq.Rate(3, 0.25))
    lim = jq.limits()
    assert (lim.max_active, lim.group_concurrency) == (5, 2)
    assert lim.rate == tideq.Rate(100, 1.5) and lim.group_rate == tideq.Rate(3, 0.25)
    assert (lim.rate.max, lim.rate.per_seconds) == (100, 1.5)
    assert repr(lim.rate) == "Rate(max=100, per_seconds=1.5)"
    assert "max_active=5" in repr(lim)
    jq.set_limits(max_active=1)
    lim = jq.limits()
    assert (lim.max_active, lim.rate, lim.group_concurrency, lim.group_rate) == (1, None, None, None)


def test_queue_rate_limit_is_respected(jq):
    jq.set_limits(rate=tideq.Rate(2, 0.4))
    jq.enqueue_many([b"x"] * 6)
    starts: list[float] = []
    stats = jq.run(lambda job: starts.append(job.started_at), concurrency=10, poll_interval=5,
                   stop_when_drained=True)
    assert stats.completed == 6
    starts.sort()
    # By the Redis clock: never three starts within one 400 ms window.
    assert all(c - a >= 0.4 for a, _, c in zip(starts, starts[1:], starts[2:])), starts


def test_a_token_bucket_rate_starts_its_burst_at_once_and_reads_back(jq):
    bucket = tideq.Rate(1, per_seconds=60, burst=4)  # one a minute, four at once
    jq.set_limits(rate=bucket, group_rate=tideq.Rate(1, 60, burst=2))
    assert jq.limits().rate == bucket and jq.limits().rate.burst == 4
    assert repr(bucket) == "Rate(max=1, per_seconds=60.0, burst=4)"
    assert tideq.Rate(1, 60).burst is None
    jq.enqueue_many([b"x"] * 10)
    assert len(jq.lease_jobs(10, lease=30)) == 4
    assert jq.lease_jobs(10, lease=30) == []
    jq.set_limits()
    jq.set_group_limits("metered", rate=tideq.Rate(1, 60, burst=3))
    jq.enqueue_many([(b"m", {"group": "metered"})] * 5)
    leased = [j.text() for j in jq.lease_jobs(20, lease=30)]
    assert leased.count("m") == 3 and jq.group("metered").rate == tideq.Rate(1, 60, burst=3)


def test_a_jobs_cost_takes_that_many_tokens_and_a_costly_job_keeps_its_place(jq):
    jq.set_limits(rate=tideq.Rate(1, per_seconds=60, burst=10))  # nothing refills in the test
    big = jq.enqueue(b"big", cost=8)
    jq.enqueue_many([(b"four", {"cost": 4}), b"one"])
    assert jq.get(big.id).cost == 8 and "cost=8" in repr(jq.get(big.id))
    assert [j.text() for j in jq.lease_jobs(10, lease=30)] == ["big"]
    # 2 tokens left: "four" waits for its 4, and "one" behind it does not overtake it.
    assert jq.lease_jobs(10, lease=30) == []
    assert jq.stats().ready == 2
    assert sorted(j.cost for j in jq.jobs("ready")) == [1, 4]
    plain = jq.enqueue(b"plain")
    assert jq.get(plain.id).cost == 1 and jq.get(plain.id).to_dict()["cost"] == 1
    assert tideq.MAX_COST == 1_000_000


def test_a_cost_is_taken_by_tasks_and_flows(jq):
    task = jq.enqueue_task("charge", {"n": 1}, cost=3)
    assert jq.get(task.id).cost == 3
    root = jq.enqueue_flow(tideq.FlowJob(b"parent", children=[tideq.FlowJob(b"child", id="kid", cost=5)]))
    assert jq.get("kid").cost == 5 and jq.get(root.id).cost == 1


def test_pause_stops_leasing_and_resume_wakes_the_idle_worker(jq):
    jq.pause()
    assert jq.is_paused() and jq.stats().paused
    jq.enqueue_many([b"1", b"2"])
    assert jq.lease_jobs(10, lease=5) == []
    done: list[bytes] = []
    w = jq.work(lambda job: done.append(job.payload), poll_interval=60)
    try:
        time.sleep(0.5)
        assert done == [] and jq.stats().ready == 2
        jq.resume()
        assert not jq.is_paused()
        assert wait_for(lambda: len(done) == 2, timeout=5), "resume wakes the idle worker (no 60 s poll)"
    finally:
        w.shutdown()


def test_a_paused_group_waits_while_others_run_and_group_info_shows_it(jq):
    jq.set_limits(group_concurrency=3, group_rate=tideq.Rate(10, 1))
    jq.set_group_limits("slow", concurrency=1)
    jq.pause_group("slow")
    jq.enqueue_many([(b"s", {"group": "slow"}), (b"s", {"group": "slow"}), (b"f", {"group": "fast"})])
    info = jq.group("slow")
    assert (info.group, info.ready, info.active, info.paused, info.concurrency) == ("slow", 2, 0, True, 1)
    assert info.rate == tideq.Rate(10, 1)
    fast = jq.group("fast")
    assert (fast.paused, fast.concurrency, fast.ready) == (False, 3, 1)
    assert [j.text() for j in jq.lease_jobs(10, lease=30)] == ["f"]
    jq.resume_group("slow")
    leased = jq.lease_jobs(10, lease=30)
    assert [j.text() for j in leased] == ["s"], "concurrency 1 for slow"
    info = jq.group("slow")
    assert (info.ready, info.active, info.paused) == (1, 1, False)
    assert "GroupInfo(group='slow', ready=1, active=1, paused=False, concurrency=1" in repr(info)


def timeless(g: tideq.GroupInfo) -> dict:
    """A group's info but its latency, which only ``group(name)`` reads (None in lists)."""
    d = g.to_dict()
    del d["latency"]
    return d


def test_groups_lists_every_known_group_by_name(jq):
    assert jq.groups() == []
    jq.pause_group("slow")
    jq.enqueue_many([(b"s", {"group": "slow"}), (b"s", {"group": "slow"}), (b"f", {"group": "fast"})])
    groups = jq.groups()
    assert [(g.group, g.ready, g.paused) for g in groups] == [("fast", 1, False), ("slow", 2, True)]
    assert timeless(groups[1]) == timeless(jq.group("slow"))


def test_groups_page_walks_every_group_once_by_cursor(client, jq):
    jq.enqueue_many([(b"x", {"group": f"tenant-{g}"}) for g in range(1_200)])
    jq.pause_group("settings-only")
    seen: dict[str, tideq.GroupInfo] = {}
    cursor = None
    pages = 0
    while True:
        page = jq.groups_page(cursor, count=200)
        pages += 1
        assert isinstance(page, tideq.GroupPage)
        assert repr(page) == f"GroupPage(groups=[{len(page.groups)} groups], cursor={page.cursor!r})"
        for g in page.groups:
            assert g.group not in seen, "a group was listed twice"
            seen[g.group] = g
        cursor = page.cursor
        if cursor is None:
            break
    assert len(seen) == 1_201 and pages >= 3
    assert timeless(seen["tenant-7"]) == timeless(jq.group("tenant-7"))
    assert seen["settings-only"].paused
    assert len(jq.groups_page().groups) >= 100  # default count
    for bad in [lambda: jq.groups_page(count=0), lambda: jq.groups_page(count=251), lambda: jq.groups_page("nope")]:
        with pytest.raises(tideq.InvalidArgumentError):
            bad()

    async def main() -> None:
        page = await tideq.AsyncQueue(jq.name, client).groups_page(None, 250)
        assert len(page.groups) >= 200 and page.cursor is not None

    asyncio.run(main())


def test_one_id_over_groups_of_a_sharded_queue_is_refused_not_made_into_a_job_per_shard(client, name):
    q = tideq.Queue(name, client, shards=3)
    tries: list[dict[str, Any]] = [{"id": "same-id"}, {"dedup": "order-42"}, {"debounce": ("order-42", 1.0)}]
    for opts in tries:
        with pytest.raises(tideq.InvalidArgumentError, match="a job with a group on a sharded queue"):
            q.enqueue(b"x", group="tenant-1", **opts)
    assert q.stats().enqueued == 0
    one = tideq.Queue(name + "-one", client)
    assert [one.enqueue(b"x", group=f"t{g}", id="same-id").created for g in range(3)] == [True, False, False]


@pytest.mark.parametrize(
    "call",
    [
        lambda q: q.set_limits(rate=tideq.Rate(0, 1)),
        lambda q: q.set_limits(max_active=0),
        lambda q: q.set_limits(max_active=3, group_concurrency=-1),
        lambda q: q.set_limits(max_active=3, group_rate=tideq.Rate(1, 0)),
        lambda q: q.set_group_limits("g", rate=tideq.Rate(0, 1)),
        lambda q: q.set_limits(rate=tideq.Rate(5, 1, burst=0)),
        lambda q: q.set_group_limits("g", rate=tideq.Rate(5, 1, burst=0)),
        lambda q: q.set_group_limits("g", concurrency=0),
        lambda q: q.set_group_limits("", concurrency=1),
        lambda q: q.pause_group(""),
        lambda q: q.group("bad\x00name"),
        lambda q: q.enqueue(b"x", priority=0),
        lambda q: q.enqueue(b"x", priority=tideq.MAX_PRIORITY + 1),
        lambda q: q.enqueue(b"x", group=""),
        lambda q: q.enqueue_many([b"ok", (b"x", {"priority": -1})]),
        lambda q: q.enqueue(b"x", cost=0),
        lambda q: q.enqueue(b"x", cost=-1),
        lambda q: q.enqueue(b"x", cost=tideq.MAX_COST + 1),
        lambda q: q.enqueue_many([b"ok", (b"x", {"cost": 0})]),
        lambda q: q.enqueue_task("t", None, cost=0),
    ],
)
def test_bad_control_input_raises_invalid_argument_and_writes_nothing(jq, call):
    jq.set_limits(max_active=7)
    with pytest.raises(tideq.InvalidArgumentError):
        call(jq)
    lim = jq.limits()
    assert (lim.max_active, lim.rate, lim.group_concurrency, lim.group_rate) == (7, None, None, None)
    assert jq.stats().enqueued == 0 and not jq.is_paused()


def test_rate_arguments_are_checked(jq):
    with pytest.raises(tideq.InvalidArgumentError):
        tideq.Rate(-1, 1)
    with pytest.raises(tideq.InvalidArgumentError):
        tideq.Rate(1, -0.5)
    with pytest.raises(tideq.InvalidArgumentError):
        tideq.Rate(1, 1, burst=-1)
    with pytest.raises(TypeError):
        jq.set_limits(rate=5)  # type: ignore[arg-type]


def test_async_queue_control(client, name):
    async def main() -> None:
        q = tideq.AsyncQueue(name, client)
        await q.pause()
        assert await q.is_paused()
        await q.set_limits(max_active=2, rate=tideq.Rate(5, 1))
        lim = await q.limits()
        assert (lim.max_active, lim.rate) == (2, tideq.Rate(5, 1))
        await q.enqueue(b"b", priority=2, group="g")
        await q.enqueue_many([(b"a", {"priority": 1, "group": "g"})])
        await q.set_group_limits("g", concurrency=1)
        info = await q.group("g")
        assert (info.ready, info.concurrency) == (2, 1)
        assert [timeless(g) for g in await q.groups()] == [timeless(info)]
        await q.pause_group("g")
        await q.resume_group("g")
        await q.resume()
        assert not (await q.stats()).paused
        ran: list[bytes] = []

        async def handler(job: tideq.Job) -> None:
            ran.append(job.payload)

        await q.run(handler, poll_interval=0.1, stop_when_drained=True)
        assert ran == [b"a", b"b"]

    asyncio.run(main())
