"""Dedup and debounce keys on enqueue (blocking and asyncio APIs): one test per promise of the
core contract (core/tests/dedup.rs), checked across the Python/Rust crossing, against a real
redis-server."""

from __future__ import annotations

import time
from typing import Any

import pytest

import tideq
from resp import keys
from tideq_harness import Awaiting

FAST = tideq.Backoff.fixed(0.05)


@pytest.fixture(params=["blocking", "asyncio"])
def jq(request: pytest.FixtureRequest, client: tideq.Client, name: str) -> Any:
    """The queue under test, through the blocking API or the asyncio one."""
    if request.param == "blocking":
        return tideq.Queue(name, client, backoff=FAST)
    return Awaiting(tideq.AsyncQueue(name, client, backoff=FAST))


def drain(q: Any) -> list[bytes]:
    """Runs every job of ``q`` (through its own API) and returns their payloads in order."""
    seen: list[bytes] = []
    q.run(lambda job: seen.append(job.payload), concurrency=1, poll_interval=0.1, stop_when_drained=True)
    return seen


def test_a_second_enqueue_with_a_dedup_key_within_its_ttl_creates_nothing_and_returns_the_first_id(jq):
    first = jq.enqueue(b"a", dedup=("k", 60.0))
    assert first.created
    second = jq.enqueue(b"b", dedup=("k", 60))
    assert (second.id, second.created) == (first.id, False)
    info = jq.get(first.id)
    assert info is not None and info.payload == b"a", "the first job is untouched"
    s = jq.stats()
    assert (s.ready, s.enqueued) == (1, 1)
    # Within its TTL the key holds even after its job completed (throttling).
    assert drain(jq) == [b"a"]
    third = jq.enqueue(b"c", dedup=("k", 60.0))
    assert (third.id, third.created) == (first.id, False)
    assert jq.stats().enqueued == 1


def test_a_dedup_key_with_a_ttl_frees_itself_when_the_ttl_ends(jq):
    first = jq.enqueue(b"a", dedup=("k", 0.15))
    time.sleep(0.3)
    second = jq.enqueue(b"b", dedup=("k", 0.15))
    assert second.created and second.id != first.id


@pytest.mark.parametrize("dedup", ["k", ("k", None)], ids=["str", "ttl None"])
def test_a_dedup_key_without_ttl_holds_while_its_job_is_pending_and_is_freed_when_it_completes(
    jq, redis_url, name, dedup
):
    first = jq.enqueue(b"a", dedup=dedup)
    again = jq.enqueue(b"b", dedup=dedup)
    assert (again.id, again.created) == (first.id, False)
    assert drain(jq) == [b"a"]
    assert keys(redis_url, f"*{name}*:dd:*") == [], "the key went with its job"
    after = jq.enqueue(b"c", dedup=dedup)
    assert after.created and after.id != first.id


def test_dedup_keys_within_one_enqueue_many_create_one_job_per_key(jq):
    done = jq.enqueue_many([(b"a", {"dedup": "x"}), (b"b", {"dedup": ("y", 60.0)}), (b"c", {"dedup": "x"})])
    assert [d.created for d in done] == [True, True, False]
    assert done[2].id == done[0].id
    assert jq.stats().ready == 2


def test_a_debounced_enqueue_replaces_the_waiting_jobs_payload_and_pushes_its_due_time_back(jq):
    first = jq.enqueue(b"v1", debounce=("save", 0.4))
    assert first.created
    info = jq.get(first.id)
    assert info is not None and info.state == "delayed" and info.state_since_or_until is not None
    due1 = info.state_since_or_until
    time.sleep(0.1)
    second = jq.enqueue(b"v2", debounce=("save", 0.4))
    assert (second.id, second.created) == (first.id, False)
    info = jq.get(first.id)
    assert info is not None and info.state_since_or_until is not None
    assert (info.state, info.payload) == ("delayed", b"v2")
    assert info.state_since_or_until >= due1 + 0.09, "the due time moved back"
    s = jq.stats()
    assert (s.delayed, s.enqueued) == (1, 1)
    assert drain(jq) == [b"v2"]


def test_a_debounced_enqueue_as_the_only_item_of_enqueue_many_debounces_too(jq):
    (first,) = jq.enqueue_many([(b"v1", {"debounce": ("save", 30.0)})])
    (second,) = jq.enqueue_many([(b"v2", {"debounce": ("save", 30.0)})])
    assert first.created and (second.id, second.created) == (first.id, False)
    info = jq.get(first.id)
    assert info is not None and info.payload == b"v2"


BAD_OPTIONS: list[dict[str, Any]] = [
    {"dedup": ""},
    {"dedup": ("", 10.0)},
    {"dedup": ("k", 0)},
    {"dedup": ("k", -1.0)},
    {"dedup": "a\nb"},
    {"debounce": ("", 1.0)},
    {"debounce": ("k", 0)},
    {"debounce": ("k", 0.01), "delay": 1.0},
    {"debounce": ("k", 0.01), "run_at": 2e9},
    {"debounce": ("k", 0.01), "id": "mine"},
    {"debounce": ("k", 0.01), "dedup": "k"},
]


def test_a_debounced_enqueue_never_replaces_a_job_waiting_for_its_retry(client, name):
    q = tideq.Queue(name, client, backoff=tideq.Backoff.fixed(30.0), max_attempts=3)
    first = q.enqueue(b"v1", debounce=("k", 0.001))
    time.sleep(0.02)
    [job] = q.lease_jobs(1, lease=30)
    assert not q.fail(job, "first attempt failed")
    second = q.enqueue(b"v2", debounce=("k", 0.3))
    assert second.created and second.id != first.id, "the retrying job was taken over"
    info = q.get(first.id)
    assert info is not None and (info.payload, info.attempts) == (b"v1", 1)


def test_a_requeued_dead_job_takes_its_dedup_key_back(client, name):
    q = tideq.Queue(name, client, max_attempts=1)
    dead = q.enqueue(b"a", dedup="k")
    [job] = q.lease_jobs(1, lease=30)
    assert q.fail(job, "no")
    q.requeue(dead.id)
    again = q.enqueue(b"b", dedup="k")
    assert (again.created, again.id) == (False, dead.id), "a second pending job for key k"


def test_bad_dedup_and_debounce_options_are_refused_and_nothing_is_written(jq, redis_url, name):
    for options in BAD_OPTIONS:
        with pytest.raises(tideq.InvalidArgumentError):
            jq.enqueue(b"x", **options)
        with pytest.raises(tideq.InvalidArgumentError):
            jq.enqueue_many([(b"ok", {}), (b"x", options)])
        with pytest.raises(tideq.InvalidArgumentError):
            jq.enqueue_task("t", {}, **options)
    with pytest.raises(tideq.InvalidArgumentError, match="not enqueue_many"):
        jq.enqueue_many([(b"x", {"debounce": ("k", 1.0)}), (b"y", {"debounce": ("j", 1.0)})])
    assert jq.stats().enqueued == 0
    assert keys(redis_url, f"*{name}*") == [], "nothing written"


@pytest.mark.parametrize(
    "options",
    [{"dedup": 3}, {"dedup": ("k",)}, {"dedup": (1, 2.0)}, {"dedup": ("k", "1s")}, {"debounce": "k"},
     {"debounce": ("k", None)}, {"debounce": ["k", 1.0]}],
)
def test_dedup_and_debounce_values_of_the_wrong_shape_are_type_errors(jq, options):
    with pytest.raises(TypeError, match="dedup must be|debounce must be"):
        jq.enqueue(b"x", **options)
    with pytest.raises(TypeError, match="dedup must be|debounce must be"):
        jq.enqueue_many([(b"x", options)])
    assert jq.stats().enqueued == 0


def test_enqueue_task_and_task_enqueue_with_take_dedup_and_debounce(client, name):
    q = tideq.Queue(name, client)

    @q.task
    def resize(width: int) -> None: ...

    first = q.enqueue_task("resize", {"width": 1}, dedup="img-7")
    again = q.enqueue_task("resize", {"width": 2}, dedup=("img-7", 60.0))
    assert first.created and (again.id, again.created) == (first.id, False)
    assert resize.enqueue_with(kwargs={"width": 3}, dedup="img-7") == first.id
    debounced = resize.enqueue_with(kwargs={"width": 4}, debounce=("thumb", 30.0))
    assert resize.enqueue_with(kwargs={"width": 5}, debounce=("thumb", 30.0)) == debounced
    info = q.get(debounced)
    assert info is not None and info.state == "delayed" and info.payload == b'{"width":5}'
    assert q.stats().enqueued == 2
