"""Bulk actions (``Queue.retry_jobs``, ``delete_jobs``, ``cancel_jobs``, ``bulk_found``,
``retry_found``, ``promote_all``, ``clean``, ``obliterate`` and their asyncio twins): the core's
promises (core/tests/bulk.rs) checked across the Python/Rust crossing."""

from __future__ import annotations

import asyncio
import time

import pytest

import tideq

HOUR = 3600.0


@pytest.fixture
def jq(client: tideq.Client, name: str) -> tideq.Queue:
    return tideq.Queue(name, client)


def kill(jq: tideq.Queue, *ids: str) -> None:
    for i in ids:
        jq.enqueue(b"order", id=i, max_attempts=1)
        (job,) = jq.lease_jobs(1, lease=60.0)
        assert jq.fail(job, "boom")


def test_retry_jobs_requeues_the_dead_ids_and_reports_the_others(jq):
    kill(jq, "d1", "d2")
    jq.enqueue(b"x", id="later", delay=HOUR)
    got = jq.retry_jobs(["d1", "later", "nope", "d2"])
    assert got == [
        {"id": "d1", "outcome": "done", "state": None},
        {"id": "later", "outcome": "wrong_state", "state": "delayed"},
        {"id": "nope", "outcome": "unknown", "state": None},
        {"id": "d2", "outcome": "done", "state": None},
    ]
    assert jq.get("d1").state == "ready"


def test_more_than_1000_ids_raise_invalid_argument_and_change_nothing(jq):
    kill(jq, "d1")
    ids = [f"j{i}" for i in range(1000)] + ["d1"]
    for call in (jq.retry_jobs, jq.delete_jobs, jq.cancel_jobs):
        with pytest.raises(tideq.InvalidArgumentError):
            call(ids)
    assert jq.get("d1").state == "dead"


def test_delete_and_cancel_jobs_act_on_the_states_they_apply_to(jq):
    kill(jq, "d1")
    jq.enqueue(b"x", id="r1")
    assert [i["outcome"] for i in jq.delete_jobs(["d1", "r1"])] == ["done", "wrong_state"]
    assert [i["outcome"] for i in jq.cancel_jobs(["r1", "d1"])] == ["done", "unknown"]
    assert jq.get("d1") is None and jq.get("r1") is None


def test_bulk_found_walks_a_search_page_by_page_and_retry_found_does_it_all(jq):
    kill(jq, *[f"o{i}" for i in range(5)])
    page = jq.bulk_found("retry", contains="order")
    assert page["done"] == 5 and page["cursor"] is None
    kill(jq, "o9")
    assert jq.retry_found(contains="order") == {"done": 1, "skipped": 0}
    with pytest.raises(tideq.InvalidArgumentError):
        jq.bulk_found("retry", state="ready")
    with pytest.raises(tideq.InvalidArgumentError):
        jq.bulk_found("explode")


def test_promote_all_and_clean_and_a_bad_state_or_age(jq):
    kill(jq, "d1")
    for i in range(3):
        jq.enqueue(b"x", id=f"l{i}", delay=HOUR)
    assert jq.promote_all() == 3
    assert jq.clean("dead", HOUR) == 0
    assert jq.clean("dead", 0) == 1
    with pytest.raises(tideq.InvalidArgumentError):
        jq.clean("ready", 0)
    with pytest.raises(tideq.InvalidArgumentError):
        jq.clean("dead", -1)


def test_obliterate_deletes_every_key_and_is_refused_with_a_live_worker(client, name):
    jq = tideq.Queue(name, client)
    jq.enqueue(b"x", id="l1", delay=HOUR)
    kill(jq, "d1")
    worker = jq.work(lambda job: None)
    try:
        for _ in range(500):
            if jq.workers():
                break
            time.sleep(0.02)
        with pytest.raises(tideq.InvalidArgumentError, match="live"):
            jq.obliterate()
        kept = jq.get("l1")
        assert kept is not None and kept.state == "delayed"
        assert jq.obliterate(force=True) > 0
    finally:
        worker.stop()
        worker.join()
    jq.obliterate()
    assert jq.get("l1") is None and jq.get("d1") is None
    assert jq.stats().enqueued == 0


def test_the_asyncio_queue_has_the_same_bulk_calls(client, name):
    async def main():
        aq = tideq.AsyncQueue(name, client)
        await aq.enqueue(b"x", id="l1", delay=HOUR)
        assert await aq.promote_all() == 1
        assert (await aq.cancel_jobs(["l1"]))[0]["outcome"] == "done"
        assert await aq.cancel_found() == {"done": 0, "skipped": 0}
        assert await aq.obliterate() >= 1

    asyncio.run(main())
