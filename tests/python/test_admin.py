"""Listing jobs by state (``Queue.jobs`` and ``AsyncQueue.jobs``): the core's promises
(core/tests/admin.rs) checked across the Python/Rust crossing."""

from __future__ import annotations

import asyncio
import time

import pytest

import tideq


@pytest.fixture
def jq(client: tideq.Client, name: str) -> tideq.Queue:
    return tideq.Queue(name, client, backoff=tideq.Backoff.fixed(0.05))


def ids(jobs: list[tideq.JobInfo]) -> list[str]:
    return [j.id for j in jobs]


def one_of_each_state(jq: tideq.Queue) -> None:
    """Delayed soon and late; done completed, dead dead, busy active; ready: plain, then a
    prioritized job, then a grouped one."""
    jq.enqueue(b"x", id="late", delay=30.0)
    jq.enqueue(b"x", id="soon", delay=10.0)
    jq.enqueue_many([(b"x", {"id": s, "max_attempts": 1}) for s in ("done", "dead", "busy")])
    done, dead, _busy = jq.lease_jobs(3, lease=60.0)
    jq.complete(done)
    assert jq.fail(dead, "boom")
    jq.enqueue_many([(b"x", {"id": "g1", "group": "tenant"}), (b"x", {"id": "p1", "priority": 2}), b"plain"])


def test_each_state_lists_its_jobs_in_order_with_priority_and_group(jq):
    one_of_each_state(jq)
    assert ids(jq.jobs("delayed")) == ["soon", "late"]
    ready = jq.jobs("ready")
    assert [(j.priority, j.group) for j in ready] == [(None, None), (2, None), (None, "tenant")]
    assert ids(ready)[1:] == ["p1", "g1"] and all(j.state == "ready" for j in ready)
    (busy,) = jq.jobs("active")
    assert (busy.id, busy.state, busy.attempts) == ("busy", "active", 1)
    assert jq.jobs("dead") == jq.dead_letters() and ids(jq.jobs("dead")) == ["dead"]
    assert ids(jq.jobs("completed")) == ["done"]


def test_pages_cover_every_job_once(jq):
    jq.enqueue_many(
        [(b"x", {"id": f"j{i}", "priority": 1 + i % 3, "group": None if i % 2 else f"g{i % 4}"}) for i in range(17)]
    )
    whole = ids(jq.jobs("ready", limit=1000))
    assert sorted(whole) == sorted(f"j{i}" for i in range(17))
    paged: list[str] = []
    while page := jq.jobs("ready", offset=len(paged), limit=4):
        paged += ids(page)
    assert paged == whole
    assert jq.jobs("ready", 2, 3) == jq.jobs("ready")[2:5]
    assert jq.jobs("ready", limit=0) == []


def test_an_unknown_state_or_a_bad_page_is_invalid_and_writes_nothing(jq):
    jq.enqueue(b"x", id="a")
    with pytest.raises(tideq.InvalidArgumentError, match="completed"):
        jq.jobs("finished")  # type: ignore[arg-type]
    with pytest.raises(tideq.InvalidArgumentError, match="1000"):
        jq.jobs("ready", limit=1001)
    with pytest.raises(tideq.InvalidArgumentError):
        jq.jobs("ready", offset=-1)
    with pytest.raises(TypeError):
        jq.jobs(1)  # type: ignore[arg-type]
    assert ids(jq.jobs("ready")) == ["a"] and jq.stats().ready == 1


def test_async_queue_lists_the_same_pages(jq, client, name):
    one_of_each_state(jq)

    async def main() -> None:
        aq = tideq.AsyncQueue(name, client)
        for state in ("delayed", "ready", "active", "dead", "completed"):
            assert await aq.jobs(state, 0, 10) == jq.jobs(state, 0, 10)  # type: ignore[arg-type]
        with pytest.raises(tideq.InvalidArgumentError):
            await aq.jobs("ready", limit=5000)

    asyncio.run(main())


def walk(q: tideq.Queue, state: str, limit: int, pause: float = 0.0) -> list[str]:
    """Every job of ``state``, page by page with the cursor each page gives."""
    out: list[str] = []
    cursor = None
    while True:
        page = q.jobs_page(state, cursor, limit)  # type: ignore[arg-type]
        assert isinstance(page, tideq.JobPage) and len(page.jobs) <= limit
        out += ids(page.jobs)
        if page.cursor is None:
            return out
        cursor = page.cursor
        time.sleep(pause)


def test_a_walk_by_cursor_while_a_worker_takes_jobs_lists_none_twice_and_skips_none_that_stayed_ready(
    client: tideq.Client, name: str
) -> None:
    q = tideq.Queue(name, client)
    q.enqueue_many([b"x"] * 2000 + [(b"x", {"group": f"g{i % 13}"}) for i in range(500)])
    start = set(walk(q, "ready", 1000))
    assert len(start) == 2500

    def handler(job: tideq.Job) -> None:
        time.sleep(0.002)

    worker = q.work(handler, concurrency=8)
    listed = walk(q, "ready", 40, pause=0.005)
    worker.stop()
    worker.join()
    end = set(walk(q, "ready", 1000))
    assert 0 < len(end) < 2500
    assert len(listed) == len(set(listed)), "a job was listed twice"
    assert (start & end) <= set(listed), "a job that stayed ready was skipped"


def test_jobs_page_walks_each_state_and_refuses_a_cursor_it_did_not_make(
    jq: tideq.Queue, client: tideq.Client, name: str
) -> None:
    one_of_each_state(jq)
    for state in ("delayed", "ready", "active", "dead", "completed"):
        assert walk(jq, state, 1) == ids(jq.jobs(state)), state  # type: ignore[arg-type]
    assert walk(jq, "delayed", 1) == ["soon", "late"]
    assert walk(jq, "ready", 2)[1:] == ["p1", "g1"]
    page = jq.jobs_page("ready", limit=1)
    assert page.cursor is not None and repr(page) == f"JobPage(jobs=[1 jobs], cursor={page.cursor!r})"
    with pytest.raises(tideq.InvalidArgumentError, match="cursor"):
        jq.jobs_page("delayed", page.cursor)
    with pytest.raises(tideq.InvalidArgumentError, match="cursor"):
        jq.jobs_page("ready", "nonsense")
    for limit in (0, 1001):
        with pytest.raises(tideq.InvalidArgumentError):
            jq.jobs_page("ready", limit=limit)

    async def main() -> None:
        aq = tideq.AsyncQueue(name, client)
        first = await aq.jobs_page("ready", limit=2)
        assert ids(first.jobs) == ids(jq.jobs_page("ready", limit=2).jobs)
        assert (await aq.jobs_page("ready", first.cursor, 10)).cursor is None

    asyncio.run(main())
