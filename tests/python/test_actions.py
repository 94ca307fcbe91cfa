"""The operator's per-job actions and search (``Queue.promote``, ``Queue.delete``,
``Queue.find_jobs`` and their asyncio twins): the core's promises (core/tests/actions.rs) checked
across the Python/Rust crossing, with ``JobWrongStateError``."""

from __future__ import annotations

import asyncio
import pickle

import pytest

import tideq

HOUR = 3600.0


@pytest.fixture
def jq(client: tideq.Client, name: str) -> tideq.Queue:
    return tideq.Queue(name, client)


def one_of_each(jq: tideq.Queue) -> None:
    """One job of each state: delayed, ready, active, dead, done (completed)."""
    jq.enqueue_many([(b"x", {"id": "done"}), (b"x", {"id": "dead", "max_attempts": 1}), (b"x", {"id": "active"})])
    done, dead, _active = jq.lease_jobs(3, lease=60.0)
    jq.complete(done)
    assert jq.fail(dead, "boom")
    jq.enqueue(b"x", id="ready")
    jq.enqueue(b"x", id="delayed", delay=HOUR)


def test_promote_makes_a_delayed_job_ready_now_keeping_its_group(jq):
    jq.enqueue(b"x", id="later", delay=HOUR, group="acme", priority=2)
    jq.promote("later")
    info = jq.get("later")
    assert info is not None and (info.state, info.group, info.priority) == ("ready", "acme", 2)
    assert [j.id for j in jq.lease_jobs(1, lease=60.0)] == ["later"]


def test_promote_of_a_job_not_delayed_raises_job_wrong_state_and_changes_nothing(jq):
    one_of_each(jq)
    # The counts, not the latency (the ready job's wait grows meanwhile).
    before = {**jq.stats().to_dict(), "latency": None}
    for job_id, state in (("ready", "ready"), ("active", "active"), ("dead", "dead"), ("done", "completed")):
        with pytest.raises(tideq.JobWrongStateError) as err:
            jq.promote(job_id)
        assert err.value.code == "JOB_WRONG_STATE"
        assert f"is {state}; only a delayed job can be run now" in str(err.value)
    assert {**jq.stats().to_dict(), "latency": None} == before


def test_delete_removes_a_dead_or_completed_job_and_its_id_can_be_enqueued_again(jq):
    one_of_each(jq)
    jq.delete("dead")
    jq.delete("done")
    assert jq.get("dead") is None and jq.get("done") is None
    assert jq.dead_letters() == [] and jq.jobs("completed") == []
    stats = jq.stats()
    assert (stats.dead, stats.dead_lettered, stats.completed) == (0, 1, 1)
    assert jq.enqueue(b"y", id="done").created


def test_delete_of_a_pending_or_running_job_raises_job_wrong_state(jq):
    one_of_each(jq)
    for job_id in ("ready", "delayed", "active"):
        with pytest.raises(tideq.JobWrongStateError, match="cancel it instead"):
            jq.delete(job_id)
        info = jq.get(job_id)
        assert info is not None and info.state == job_id


def test_unknown_ids_raise_job_not_found(jq):
    for call in (jq.promote, jq.delete):
        with pytest.raises(tideq.JobNotFoundError):
            call("nope")


def test_job_wrong_state_error_is_a_tideq_error_with_its_code():
    assert issubclass(tideq.JobWrongStateError, tideq.TideqError)
    assert tideq.JobWrongStateError.code == "JOB_WRONG_STATE" and tideq.JobWrongStateError.__module__ == "tideq"


def walk(jq: tideq.Queue, limit: int, **filter: str) -> list[str]:
    """Every job the search finds, page by page with the cursor each page gives."""
    found: list[str] = []
    cursor = None
    while True:
        page = jq.find_jobs(cursor=cursor, limit=limit, **filter)  # type: ignore[arg-type]
        assert isinstance(page, tideq.JobSearch)
        assert page.scanned <= 2000 and len(page.jobs) <= limit
        found += [j.id for j in page.jobs]
        cursor = page.cursor
        if cursor is None:
            break
    assert len(set(found)) == len(found), "a job was found twice"
    return sorted(found)


def test_find_jobs_by_task_and_group_walks_to_the_end_and_finds_each_match_once(jq):
    jq.enqueue_many([(b"x", {"id": f"j{i}", "delay": HOUR if i % 2 else None}) for i in range(3000)])
    needles = []
    for i in range(5):
        jq.enqueue_task("needle", {"n": i}, id=f"n{i}", delay=HOUR if i % 2 else None)
        needles.append(f"n{i}")
    grouped = [jq.enqueue(b"x", id=f"g{i}", group="gx").id for i in range(3)]
    assert walk(jq, 2, task="needle") == sorted(needles)
    assert walk(jq, 50, group="gx") == sorted(grouped)
    assert walk(jq, 10, task="needle", state="delayed") == ["n1", "n3"]
    # By a substring of the arguments (searching for a customer's address or an order number).
    assert walk(jq, 10, contains='"n":3') == ["n3"]
    assert walk(jq, 10, contains='"n"', state="ready") == ["n0", "n2", "n4"]
    page = jq.find_jobs(limit=5)
    assert len(page.jobs) == 5 and page.cursor is not None
    assert page == pickle.loads(pickle.dumps(page)) and page.to_dict()["scanned"] == page.scanned


def test_find_jobs_refuses_a_bad_filter_cursor_or_limit(jq):
    jq.enqueue(b"x", id="a")
    for kwargs in (
        {"limit": 0},
        {"limit": 1001},
        {"task": ""},
        {"group": ""},
        {"contains": ""},
        {"state": "sleeping"},
        {"cursor": "garbage"},
        {"state": "delayed", "cursor": "dead:0:"},
    ):
        with pytest.raises(tideq.InvalidArgumentError):
            jq.find_jobs(**kwargs)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        jq.find_jobs("needle")  # type: ignore[misc]


def test_async_queue_promotes_deletes_and_searches(jq, client, name):
    one_of_each(jq)

    async def main() -> None:
        aq = tideq.AsyncQueue(name, client)
        await aq.promote("delayed")
        await aq.delete("dead")
        with pytest.raises(tideq.JobWrongStateError):
            await aq.delete("ready")
        page = await aq.find_jobs(state="ready", limit=10)
        assert sorted(j.id for j in page.jobs) == ["delayed", "ready"] and page.cursor is None

    asyncio.run(main())
    assert jq.get("dead") is None
