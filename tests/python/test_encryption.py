"""Encryption at rest from Python (issue 45, part 1): ``Encryption`` as a queue option, with keys
and a ``key_provider``; values read back in clear with the key, a job sealed with a key the worker
lacks is dead-lettered naming it, bad keys raise at construction. The core keeps the rules
(core/tests/encryption.rs)."""

from __future__ import annotations

import pytest

import tideq

K1, K2 = b"\x01" * 32, b"\x02" * 32


def drain(q: tideq.Queue, handler) -> tideq.WorkerStats:  # type: ignore[no-untyped-def]
    return q.run(handler, poll_interval=0.05, stop_when_drained=True)


def test_values_round_trip_sealed_and_old_keys_stay_readable_after_rotation(client, name):
    q1 = tideq.Queue(name, client, max_attempts=1, encryption=tideq.Encryption("k1", {"k1": K1}))
    q1.enqueue(b"ok", id="a")
    q1.enqueue(b"fail", id="b")
    asked: list[str] = []

    def provider(key_id: str) -> bytes | None:
        asked.append(key_id)
        return K1 if key_id == "k1" else None

    enc = tideq.Encryption("k2", {"k2": K2}, key_provider=provider)
    assert enc.current_key == "k2"
    q2 = tideq.Queue(name, client, max_attempts=1, encryption=enc)

    def handler(job: tideq.Job) -> bytes:
        job.progress(b"half")
        job.log(f"line {job.payload.decode()}")
        if job.payload == b"fail":
            raise ValueError("secret failure")
        return b"done " + job.payload

    drain(q2, handler)
    assert asked == ["k1"]
    a = q2.get("a")
    assert a is not None and a.state == "completed"
    assert a.result == b"done ok" and a.progress == b"half"
    assert a.logs[0].line == "line ok"
    b = q2.get("b")
    assert b is not None and b.state == "dead"
    assert b.last_error == "ValueError: secret failure"
    assert b.attempt_history[0].trace is not None and "secret failure" in b.attempt_history[0].trace
    # The first handle has no k2: what the worker wrote shows sealed, its key named.
    seen = q1.get("b")
    assert seen is not None and seen.last_error == "encrypted (key k2)"


def test_a_job_sealed_with_a_key_the_worker_lacks_is_dead_lettered_naming_it(client, name):
    producer = tideq.Queue(name, client, encryption=tideq.Encryption("k9", {"k9": b"\x09" * 32}))
    producer.enqueue(b"x", id="j", max_attempts=5)
    worker = tideq.Queue(name, client, encryption=tideq.Encryption("k1", {"k1": K1}))
    ran: list[bytes] = []
    drain(worker, lambda job: ran.append(job.payload))
    assert ran == []
    info = worker.get("j")
    assert info is not None and info.state == "dead"
    assert info.last_error is not None and '"k9" is not available' in info.last_error


@pytest.mark.parametrize(
    "args",
    [
        ("k1", {"k1": b"short"}),
        ("k2", {"k1": K1}),
        ("bad id", {"bad id": K1}),
        ("k1", None),
    ],
)
def test_bad_keys_raise_at_construction(args):
    with pytest.raises(tideq.InvalidArgumentError):
        tideq.Encryption(*args)


def test_a_provider_without_the_current_key_raises_naming_it():
    with pytest.raises(tideq.InvalidArgumentError, match='"t1"'):
        tideq.Encryption("t1", key_provider=lambda key_id: None)
    with pytest.raises(tideq.InvalidArgumentError, match="32 bytes"):
        tideq.Encryption("t1", key_provider=lambda key_id: b"x" * 31)


def test_an_async_key_provider_is_awaited_with_or_without_a_running_loop(client, name):
    import asyncio

    asked: list[str] = []

    async def key_service(key_id: str) -> bytes | None:
        asked.append(key_id)
        await asyncio.sleep(0.01)
        return {"k1": K1, "k2": K2}.get(key_id)

    old = tideq.Queue(name, client, max_attempts=1, encryption=tideq.Encryption("k1", {"k1": K1}))
    old.enqueue(b"old", id="old")
    # Made where no loop runs: the current key is awaited at once; k1 when a job needs it.
    q = tideq.Queue(name, client, max_attempts=1, encryption=tideq.Encryption("k2", key_provider=key_service))
    q.enqueue(b"new", id="new")
    drain(q, lambda job: job.payload.upper())
    assert sorted(asked) == ["k1", "k2"]
    assert q.get("old").result == b"OLD" and q.get("new").result == b"NEW"  # type: ignore[union-attr]

    # Made inside a running event loop (an asyncio app): awaited all the same.
    async def inside() -> tideq.Encryption:
        return tideq.Encryption("k2", key_provider=key_service)

    assert asyncio.run(inside()).current_key == "k2"

    async def none(key_id: str) -> bytes | None:
        return None

    async def down(key_id: str) -> bytes | None:
        raise ConnectionError("key service down")

    for provider in (none, down):
        with pytest.raises(tideq.InvalidArgumentError, match='"k7"'):
            tideq.Encryption("k7", key_provider=provider)
