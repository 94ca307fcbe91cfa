"""The value classes (the read-only results and small values: ``JobInfo``, ``JobStats``, ``Rate``,
...) behave as values: equal when of the same class with equal fields, hashing alike then (every
one is hashable, a stored result counting by its bytes, not by the dict it decodes to),
``to_dict()`` giving a plain dict of every property (value objects in it as dicts too), and
``pickle`` / ``copy`` giving an equal object back. One instance of each class comes from a real
call against Redis, read twice: two distinct objects that must be equal."""

from __future__ import annotations

import ast
import copy
import pathlib
import pickle
from typing import Any, Callable

import pytest

import tideq
from tideq import _tideq
from tideq_harness import wait_for

STUB = pathlib.Path(_tideq.__file__).with_name("_tideq.pyi")

VALUE_CLASSES = {
    "Attempt", "LogLine", "Backoff", "CappedGroupPage", "CappedStats", "ChildResult", "ConsumerStats", "Enqueued",
    "Event", "GroupInfo", "GroupPage", "HistoryPoint", "JobInfo", "JobPage", "JobSearch",
    "JobStats", "Limits", "Peeked", "Rate", "ScheduleInfo", "ServerInfo", "UnreadableItem",
    "WorkerInfo", "WorkerStats",
}  # fmt: skip


def stub_properties() -> dict[str, list[str]]:
    """Each stub class's properties, in the stub's order."""
    out = {}
    for node in ast.parse(STUB.read_text()).body:
        if isinstance(node, ast.ClassDef):
            out[node.name] = [
                m.name
                for m in node.body
                if isinstance(m, ast.FunctionDef)
                and any(isinstance(d, ast.Name) and d.id == "property" for d in m.decorator_list)
            ]
    return out


def runtime_properties(cls: type) -> set[str]:
    return {n for n, a in vars(cls).items() if type(a).__name__ == "getset_descriptor" and not n.startswith("_")}


def plain(value: Any) -> Any:
    """What ``to_dict()`` makes of a property's value."""
    if type(value).__name__ in VALUE_CLASSES:
        return value.to_dict()
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def read_twice(read: Callable[[], Any]) -> tuple[Any, Any]:
    return read(), read()


@pytest.fixture
def pairs(client: tideq.Client, name: str) -> list[tuple[Any, Any]]:
    """(a, b) for one value of each class: two reads of the same thing, equal but not the same
    object."""
    q = tideq.Queue(name, client)
    q.set_events(1000)
    kid = tideq.FlowJob(b"kid", id="kid")
    q.enqueue_flow(tideq.FlowJob(b"parent", id="parent", children=[kid]))
    # A result that decodes to a dict holding a list: unhashable as a Python value.
    def handler(job: tideq.Job) -> dict[str, Any]:
        job.log(f"ran {job.id}")
        return {"id": job.id, "n": [1, 2]}

    w = q.work(handler, stop_when_drained=True, poll_interval=0.05)
    worker_stats = w.join(10)
    assert worker_stats.completed == 2
    # A live worker, read twice before it reports again (its report comes every 15 s).
    idle = q.work(lambda job: None, poll_interval=0.05)
    assert wait_for(lambda: q.workers() != [])
    live_worker = read_twice(lambda: q.workers()[0])
    idle.shutdown()
    q.upsert_schedule("hourly", b"tick", every=3600, priority=3, backoff=tideq.Backoff.fixed(2))
    q.set_limits(max_active=5, rate=tideq.Rate(10, 1.0), group_rate=tideq.Rate(2, 0.5))
    q.enqueue(b"waits", id="grouped", group="g1")
    q.enqueue(b"x", id="dup")
    enqueued = read_twice(lambda: q.enqueue(b"x", id="dup"))
    # Both leased: a ready job's wait (the latency in stats and group info) grows between reads.
    assert len(q.lease_jobs(10, lease=60)) == 2

    cq = tideq.CappedQueue(name + "-capped", client)
    cq.push("g", b"item")
    capped = [read_twice(cq.stats), read_twice(cq.groups_page), read_twice(lambda: cq.peek("g")[0])]
    # An item a handle without its key popped: kept in the unreadable list.
    sealed = tideq.CappedQueue(name + "-sealed", client, encryption=tideq.Encryption("k9", {"k9": bytes(32)}))
    sealed.push("g", b"secret")
    lacking = tideq.CappedQueue(name + "-sealed", client, encryption=tideq.Encryption("k1", {"k1": bytes([1]) * 32}))
    assert lacking.pop_batch("g") == []
    capped.append(read_twice(lambda: lacking.unreadable()[0]))
    c = cq.consume(lambda group, items: None, stop_when_empty=True, poll_interval=0.05)
    c.join(10)

    past = q.history()[5].at_ms

    def first_event() -> tideq.Event:
        with q.events(from_start=True) as reader:
            event = reader.next(timeout=5)
        assert event is not None
        return event

    return [
        (w.stats(), worker_stats),
        (c.stats(), c.join(10)),
        enqueued,
        read_twice(lambda: q.get("kid")),
        read_twice(lambda: q.get("kid").attempt_history[0]),  # type: ignore[union-attr]
        read_twice(lambda: q.job_logs("kid")[0]),
        read_twice(q.stats),
        read_twice(lambda: q.jobs_page("completed")),
        read_twice(lambda: q.find_jobs(state="completed")),
        read_twice(lambda: q.children_results("parent")[0]),
        read_twice(lambda: q.schedules()[0]),
        live_worker,
        read_twice(lambda: next(p for p in q.history() if p.at_ms == past)),
        read_twice(first_event),
        read_twice(q.limits),
        read_twice(lambda: q.group("g1")),
        read_twice(q.groups_page),
        read_twice(lambda: tideq.Rate(10, 1.0)),
        read_twice(lambda: tideq.Backoff.exponential(base=2)),
        # The server's numbers move between two reads: one read and its pickled copy.
        (server := client.server_info(), pickle.loads(pickle.dumps(server))),
        *capped,
    ]


def test_value_classes_compare_hash_pickle_and_convert_to_dict(pairs: list[tuple[Any, Any]]) -> None:
    assert {type(a).__name__ for a, _ in pairs} == VALUE_CLASSES, "one pair per value class"
    in_stub = stub_properties()
    for a, b in pairs:
        cls = type(a)
        assert a is not b and a == b and not (a != b), cls
        assert hash(a) == hash(b) and len({a, b}) == 1, cls
        assert a != object() and a != a.to_dict(), cls
        for twin in (
            pickle.loads(pickle.dumps(a)),
            pickle.loads(pickle.dumps(a, protocol=0)),
            copy.copy(a),
            copy.deepcopy(a),
        ):
            assert type(twin) is cls and twin == a and hash(twin) == hash(a), cls
            assert repr(twin) == repr(a), cls
        d = a.to_dict()
        assert type(d) is dict, cls
        assert list(d) == in_stub[cls.__name__], f"{cls.__name__}: every property, in the stub's order"
        assert set(d) == runtime_properties(cls), cls
        for key, value in d.items():
            assert value == plain(getattr(a, key)), (cls, key)


def test_to_dict_converts_nested_value_objects_and_keeps_results_as_decoded(pairs: list[tuple[Any, Any]]) -> None:
    by_class = {type(a).__name__: a for a, _ in pairs}
    page = by_class["JobPage"].to_dict()
    assert page["cursor"] is None and sorted(j["id"] for j in page["jobs"]) == ["kid", "parent"]
    kid = next(j for j in page["jobs"] if j["id"] == "kid")
    # A list reads no attempts nor log: get does.
    assert kid == {**by_class["JobInfo"].to_dict(), "attempt_history": [], "logs": []}
    assert by_class["JobInfo"].to_dict()["logs"] == [by_class["LogLine"].to_dict()]
    assert kid["result"] == {"id": "kid", "n": [1, 2]} and kid["result_bytes"] == b'{"id":"kid","n":[1,2]}'
    assert kid["parent"] == (by_class["ChildResult"].queue, "parent")
    assert by_class["Limits"].to_dict() == {
        "max_active": 5,
        "rate": {"max": 10, "per_seconds": 1.0, "burst": None},
        "group_concurrency": None,
        "group_rate": {"max": 2, "per_seconds": 0.5, "burst": None},
    }
    schedule = by_class["ScheduleInfo"].to_dict()
    assert schedule["backoff"] == {"kind": "fixed", "base": 2.0, "max": 2.0, "jitter": False}
    assert (schedule["every"], schedule["priority"], schedule["cron"]) == (3600.0, 3, None)
    # The same group, but its latency, which a page of groups does not read.
    assert by_class["GroupPage"].to_dict()["groups"] == [{**by_class["GroupInfo"].to_dict(), "latency": None}]
    assert by_class["Enqueued"].to_dict() == {"id": "dup", "created": False}


def test_values_differ_by_field_and_by_class(pairs: list[tuple[Any, Any]]) -> None:
    assert tideq.Rate(10, 1.0) != tideq.Rate(10, 2.0)
    assert tideq.Backoff.fixed(2) != tideq.Backoff.exponential()
    assert len({hash(tideq.Rate(n, 1.0)) for n in range(1, 50)}) > 1
    assert len({a for a, _ in pairs}) == len(pairs), "distinct values of distinct classes"
