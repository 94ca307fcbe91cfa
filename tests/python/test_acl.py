"""Least privilege through the Python binding: every role works under exactly the ACL rules
`tideq.acl_rules` gives for it (a fresh Redis user holding only those), and no more. The core's
contract is core/tests/acl.rs."""

from __future__ import annotations

import threading
import uuid

import pytest

import tideq
from resp import command


def client_as(redis_url: str, queue: str, role: str, **rules_opts: object) -> tideq.Client:
    """A client logged in as a fresh user holding exactly `role`'s rules for `queue`."""
    user = f"{role}-{uuid.uuid4().hex[:12]}"
    rules = tideq.acl_rules(queue, role, **rules_opts)  # type: ignore[arg-type]
    command(redis_url, "ACL", "SETUSER", user, "reset", "on", ">pw", *rules.split(" "))
    return tideq.Client(redis_url, username=user, password="pw")


def test_acl_rules_name_the_commands_and_only_the_queues_keys():
    worker = tideq.acl_rules("emails", "worker")
    assert worker.startswith("resetchannels -@all ")
    for rule in ("+evalsha", "+script|load", "+blpop", "+lpop"):
        assert rule in worker.split(" ")
    assert worker.endswith(" ~tideq:{emails}:*")
    assert "+lpop" not in tideq.acl_rules("emails", "producer").split(" ")
    sharded = tideq.acl_rules("emails", "producer", prefix="app", shards=3)
    assert sharded.count(" ~app:{emails#") == 3
    for role in ("producer", "worker", "admin", "capped-producer", "capped-consumer"):
        assert tideq.acl_rules("q", role).startswith("resetchannels -@all")
    with pytest.raises(tideq.InvalidArgumentError, match="capped-consumer"):
        tideq.acl_rules("emails", "reader")
    for bad in ({"shards": 0}, {"shards": 2000}, {"prefix": "a*"}):
        with pytest.raises(tideq.InvalidArgumentError):
            tideq.acl_rules("emails", "worker", **bad)  # type: ignore[arg-type]
    with pytest.raises(tideq.InvalidArgumentError):
        tideq.acl_rules("e*", "worker")


def test_each_job_role_works_under_exactly_its_acl_rules(redis_url, name):
    def as_role(role: str) -> tideq.Queue:
        return tideq.Queue(name, client_as(redis_url, name, role), max_attempts=2,
                           backoff=tideq.Backoff.fixed(0.01), keep_dead=1)

    producer, worker, admin = as_role("producer"), as_role("worker"), as_role("admin")
    assert producer.enqueue(b"ok", id="a").created
    producer.enqueue_many([(b"fail", {"id": "f1"}), (b"fail", {"id": "f2"}), (b"slow", {"id": "s"}),
                           (b"ok", {"delay": 0.05})])
    seen: list[str] = []
    lock = threading.Lock()

    def handler(job: tideq.Job) -> None:
        with lock:
            seen.append(job.id)
        if job.payload == b"fail":
            raise RuntimeError("boom")
        if job.payload == b"slow":  # several renewals of a 0.3 s lease
            threading.Event().wait(0.8)

    # Fetch, complete, fail (retry, dead letter, dead-letter trimming), lease renewal.
    stats = worker.run(handler, lease=0.3, poll_interval=0.05, stop_when_drained=True)
    assert (stats.completed, stats.failed, stats.lease_lost) == (3, 4, 0)
    assert seen.count("s") == 1, "the slow job's lease was renewed, not lost"

    # The operator's calls.
    info = admin.get("a")
    assert info is not None and info.state == "completed"
    s = admin.stats()
    assert (s.dead, s.dead_trimmed, s.completed) == (1, 1, 3)
    (dead,) = admin.dead_letters()
    admin.requeue(dead.id)
    producer.enqueue(b"x", id="c", delay=60.0)
    admin.cancel("c")
    assert admin.requeue_all() == 0
    assert admin.purge() == 0
    assert admin.stats().ready == 1

    # No more than its role: a producer's user cannot run a worker.
    refused = producer.work(lambda job: None, poll_interval=0.05)
    with pytest.raises(tideq.PermissionDeniedError):
        refused.join(timeout=15)
    assert not refused.running and isinstance(refused.error, tideq.PermissionDeniedError)
    # Nor can an admin's user fetch jobs (it may enqueue, as an operator's tools do).
    with pytest.raises(tideq.PermissionDeniedError):
        admin.lease_jobs(1, lease=1)


def test_each_capped_role_works_under_exactly_its_acl_rules(redis_url, name):
    producer = tideq.CappedQueue(name, client_as(redis_url, name, "capped-producer"), capacity=2)
    consumer = tideq.CappedQueue(name, client_as(redis_url, name, "capped-consumer"), capacity=2)
    producer.push("g1", b"a")
    assert producer.push_many([("g1", b"b"), ("g1", b"c"), ("g2", b"d")]) == [0, 1, 0]
    assert consumer.len("g1") == 2
    assert sorted(consumer.groups()) == ["g1", "g2"]
    assert consumer.stats().dropped == 1
    assert consumer.pop_batch("g1", 1) == [b"b"]
    assert consumer.next_batch(10) is not None
    producer.push("g3", b"e")
    got: list[bytes] = []
    stats = consumer.run(lambda group, items: got.extend(items), poll_interval=0.05, stop_when_empty=True)
    assert stats.batches >= 1 and b"e" in got
    # A consumer's user cannot push, nor a producer's pop.
    with pytest.raises(tideq.PermissionDeniedError):
        consumer.push("g1", b"x")
    with pytest.raises(tideq.PermissionDeniedError):
        producer.pop_batch("g1")
