"""Encryption at rest for the capped queue from Python (issue 45, part 1): items sealed with
``CappedQueue(..., encryption=...)`` leave nothing in clear in Redis and pop in clear; an item a
handle cannot open is kept in the unreadable list naming its key, and comes back with the key.
The core keeps the rules (core/tests/capped_encryption.rs)."""

from __future__ import annotations

import asyncio

import pytest

import tideq
from resp import command, keys

K1, K9 = b"\x01" * 32, b"\x09" * 32
MARKER = b"capped-plaintext-marker"


def every_value(url: str, name: str) -> list[bytes]:
    """Every key of queue ``name`` and what it holds, read by type."""
    out: list[bytes] = []
    for k in keys(url, f"*{name}*"):
        kind = command(url, "TYPE", k)
        value = {
            "list": lambda: command(url, "LRANGE", k, 0, -1),
            "hash": lambda: command(url, "HGETALL", k),
            "zset": lambda: command(url, "ZRANGE", k, 0, -1),
            "set": lambda: command(url, "SMEMBERS", k),
            "string": lambda: [command(url, "GET", k)],
        }[kind]()
        out.append(k)
        out.extend(v if isinstance(v, bytes) else str(v).encode() for v in value)
    return out


def test_items_round_trip_sealed_with_nothing_in_clear_in_redis(redis_url, client, name):
    q = tideq.CappedQueue(name, client, encryption=tideq.Encryption("k1", {"k1": K1}))
    q.push_many([("g", MARKER + b"-%d" % i) for i in range(5)])
    q.push("h", MARKER + b"-h")
    assert not any(MARKER in v for v in every_value(redis_url, name))
    peeked = q.peek("g")
    assert [p.item for p in peeked] == [MARKER + b"-%d" % i for i in range(5)]
    assert all(p.unreadable is None for p in peeked)
    assert q.pop_batch("g", 2) == [MARKER + b"-0", MARKER + b"-1"]
    got = {}
    while (batch := q.next_batch(10)) is not None:
        got[batch[0]] = batch[1]
    assert got == {"g": [MARKER + b"-%d" % i for i in range(2, 5)], "h": [MARKER + b"-h"]}
    # The check sees a clear item.
    tideq.CappedQueue(name + "-clear", client).push("g", MARKER)
    assert any(MARKER in v for v in every_value(redis_url, name + "-clear"))


def test_items_a_handle_cannot_open_are_kept_unreadable_and_requeued_with_the_key(client, name):
    producer = tideq.CappedQueue(name, client, encryption=tideq.Encryption("k9", {"k9": K9}))
    producer.push_many([("g", b"secret-1"), ("g", b"secret-2")])
    lacking = tideq.CappedQueue(name, client, encryption=tideq.Encryption("k1", {"k1": K1}))
    peeked = lacking.peek("g")
    assert peeked[0].unreadable is not None and '"k9"' in peeked[0].unreadable
    assert b"secret" not in peeked[0].item
    assert lacking.pop_batch("g", 10) == []
    kept = lacking.unreadable()
    assert [(u.group, u.key_id) for u in kept] == [("g", "k9"), ("g", "k9")]
    assert '"k9"' in kept[0].error and isinstance(kept[0].at_ms, int)
    assert all(b"secret" not in u.item for u in kept)
    stats = lacking.stats()
    assert (stats.delivered, stats.unreadable, stats.requeued) == (0, 2, 0)
    assert lacking.requeue_unreadable() == 0
    restored = tideq.CappedQueue(name, client, encryption=tideq.Encryption("k1", {"k1": K1, "k9": K9}))
    assert restored.requeue_unreadable() == 2
    assert restored.unreadable() == []
    assert restored.pop_batch("g", 10) == [b"secret-1", b"secret-2"]
    with pytest.raises(tideq.InvalidArgumentError):
        restored.unreadable(1001)


def test_the_asyncio_queue_takes_encryption_too(client, name):
    async def main() -> None:
        q = tideq.AsyncCappedQueue(name, client, encryption=tideq.Encryption("k1", {"k1": K1}))
        await q.push("g", b"x")
        assert await q.pop_batch("g") == [b"x"]
        assert await q.unreadable() == [] and await q.requeue_unreadable() == 0

    asyncio.run(main())
