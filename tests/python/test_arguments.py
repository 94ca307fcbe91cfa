"""Arguments Python can express but the core cannot take: text that is not valid UTF-8 (a lone
surrogate) and integers out of range are InvalidArgumentError wherever they enter, never
UnicodeEncodeError or OverflowError, and nothing is written."""

from __future__ import annotations

import asyncio
from typing import Any, Callable

import pytest

import tideq
from resp import keys

SURROGATES = ["sur\ud800", "\udcff-fsdecoded"]


def raises_invalid(call: Callable[[], Any]) -> tideq.InvalidArgumentError:
    with pytest.raises(tideq.InvalidArgumentError) as err:
        call()
    assert err.value.code == "INVALID_ARGUMENT" and isinstance(err.value, ValueError)
    return err.value


@pytest.mark.parametrize("bad", SURROGATES, ids=["high", "low"])
def test_names_and_ids_that_are_not_valid_utf8_are_invalid_argument(client, name, redis_url, bad):
    q = tideq.Queue(name, client)
    cq = tideq.CappedQueue(name, client)
    err = raises_invalid(lambda: tideq.Queue(bad, client))
    assert "lone surrogate" in str(err) and repr(bad) in str(err)
    raises_invalid(lambda: tideq.CappedQueue(bad, client))
    raises_invalid(lambda: tideq.AsyncQueue(bad, client))
    # Job ids, wherever they enter.
    raises_invalid(lambda: q.enqueue(b"x", id=bad))
    raises_invalid(lambda: q.enqueue_many([b"fine", (b"x", {"id": bad})]))
    raises_invalid(lambda: q.get(bad))
    raises_invalid(lambda: q.cancel(bad))
    raises_invalid(lambda: q.requeue(bad))
    raises_invalid(lambda: asyncio.run(tideq.AsyncQueue(name, client).get(bad)))
    raises_invalid(lambda: tideq.encode_envelope({"id": bad}))
    # Group names.
    raises_invalid(lambda: cq.push(bad, b"x"))
    raises_invalid(lambda: cq.push_many([("fine", b"x"), (bad, b"y")]))
    raises_invalid(lambda: cq.pop_batch(bad))
    raises_invalid(lambda: cq.len(bad))
    raises_invalid(lambda: cq.consume(lambda g, items: None, groups=["fine", bad]))
    raises_invalid(lambda: cq.consume(lambda g, items: None, exclude=[bad]))
    # Client settings; credentials and URLs are never shown.
    raises_invalid(lambda: tideq.Client(redis_url, prefix=bad))
    raises_invalid(lambda: tideq.Client(sentinel=[redis_url], master_name=bad))
    for secret in [
        lambda: tideq.Client(redis_url, password=bad),
        lambda: tideq.Client(redis_url, username=bad),
        lambda: tideq.Client(redis_url + bad),
        lambda: tideq.Client(cluster=[redis_url + bad]),
        lambda: tideq.Queue(name, url=redis_url + bad),
    ]:
        assert bad not in str(raises_invalid(secret))
    raises_invalid(lambda: tideq.acl_rules(bad, "worker"))
    raises_invalid(lambda: tideq.acl_rules(name, "worker", prefix=bad))
    assert keys(redis_url, f"*{name}*") == []


def test_integers_out_of_range_are_invalid_argument(client, name, redis_url):
    q = tideq.Queue(name, client)
    cq = tideq.CappedQueue(name, client)
    huge, bigger = 2**64, 2**70
    err = raises_invalid(lambda: tideq.CappedQueue(name, client, capacity=huge))
    assert "capacity" in str(err) and str(huge) in str(err)
    raises_invalid(lambda: tideq.CappedQueue(name, client, shards=huge))
    raises_invalid(lambda: tideq.Queue(name, client, max_attempts=bigger))
    raises_invalid(lambda: tideq.Queue(name, client, max_attempts=2**32))
    raises_invalid(lambda: tideq.Queue(name, client, keep_completed=huge))
    raises_invalid(lambda: tideq.Queue(name, client, keep_dead=-1))
    raises_invalid(lambda: tideq.Queue(name, client, keep_dead=-(2**80)))
    raises_invalid(lambda: tideq.Queue(name, client, max_error_len=10**100))
    raises_invalid(lambda: tideq.Queue(name, client, shards=-(2**64)))
    raises_invalid(lambda: tideq.Queue(name, client, timeout=10**400))
    raises_invalid(lambda: q.enqueue(b"x", max_attempts=bigger))
    raises_invalid(lambda: q.enqueue(b"x", delay=10**400))
    raises_invalid(lambda: q.enqueue(b"x", run_at=10**400))
    raises_invalid(lambda: q.enqueue_many([(b"x", {"max_attempts": bigger})]))
    raises_invalid(lambda: q.dead_letters(offset=huge))
    raises_invalid(lambda: q.dead_letters(limit=-huge))
    raises_invalid(lambda: cq.pop_batch("g", huge))
    raises_invalid(lambda: cq.next_batch(bigger))
    raises_invalid(lambda: tideq.Client(redis_url, max_payload=huge))
    raises_invalid(lambda: tideq.Client(redis_url, replica_ack=(huge, 1.0)))
    raises_invalid(lambda: tideq.Backoff.fixed(10**400))
    raises_invalid(lambda: tideq.encode_envelope({"max_attempts": 2**70}))
    raises_invalid(lambda: tideq.acl_rules(name, "worker", shards=huge))
    bad_runs: list[dict[str, Any]] = [
        {"concurrency": -1},
        {"concurrency": huge},
        {"batch_size": bigger},
        {"grace": 10**400},
        {"poll_interval": -(10**400)},
    ]
    for opts in bad_runs:
        raises_invalid(lambda: q.work(lambda job: None, **opts))
        raises_invalid(lambda: cq.consume(lambda g, items: None, **opts))
    raises_invalid(lambda: q.work(lambda job: None, lease=10**400))
    assert keys(redis_url, f"*{name}*") == []
    # Not an int at all is still a TypeError.
    with pytest.raises(TypeError):
        tideq.CappedQueue(name, client, capacity="10")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        q.dead_letters(limit=1.5)  # type: ignore[arg-type]


def test_a_handle_with_another_shard_count_than_the_queue_recorded_is_refused(client, name, redis_url):
    """The queue's first writer records its shard count; a handle made with another one is
    InvalidArgumentError before it reads or writes anything, and its worker or consumer stops on
    it (raised by join)."""
    tideq.Queue(name, client, shards=4).enqueue(b"x")
    tideq.CappedQueue(name, client, shards=4).push("g", b"x")
    before = keys(redis_url, f"tideq:{{{name}*")
    wrong = tideq.Queue(name, client, shards=2)
    err = raises_invalid(lambda: wrong.enqueue(b"y"))
    assert "has 4 shard(s)" in str(err) and "not 2" in str(err)
    raises_invalid(lambda: wrong.stats())
    worker = wrong.work(lambda job: None)
    raises_invalid(lambda: worker.join(10))
    capped = tideq.CappedQueue(name, client)
    raises_invalid(lambda: capped.push("g", b"y"))
    raises_invalid(lambda: capped.consume(lambda g, items: None).join(10))
    raises_invalid(lambda: asyncio.run(tideq.AsyncQueue(name, client, shards=2).stats()))
    assert keys(redis_url, f"tideq:{{{name}*") == before
    assert tideq.Queue(name, client, shards=4).stats().enqueued == 1
