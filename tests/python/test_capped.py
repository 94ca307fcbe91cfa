"""The blocking capped-queue API: each test checks one promise across the Python/Rust crossing."""

from __future__ import annotations

import asyncio
import builtins
import threading
import time

import pytest

import tideq
from tideq_harness import free_port


def test_push_returns_drops_and_cap_holds(client, name):
    q = tideq.CappedQueue(name, client, capacity=3)
    assert [q.push("g", b"%d" % i) for i in range(5)] == [0, 0, 0, 1, 1]
    assert q.len("g") == 3
    assert q.pop_batch("g", 10) == [b"2", b"3", b"4"]


def test_push_many_returns_drops_per_item_and_accepts_bytes_like(client, name):
    q = tideq.CappedQueue(name, client, capacity=2)
    drops = q.push_many([("a", b"1"), ("a", bytearray(b"2")), ("a", memoryview(b"3")), ("b", b"4")])
    assert drops == [0, 0, 1, 0]
    assert q.pop_batch("a", 10) == [b"2", b"3"]
    assert q.pop_batch("b", 10) == [b"4"]
    assert q.push_many([]) == []


def test_push_many_takes_any_iterable_of_pairs(queue):
    assert queue.push_many((("g", b"%d" % i) for i in range(3))) == [0, 0, 0]
    assert queue.len("g") == 3


def test_pop_batch_returns_exactly_max_oldest_first(queue):
    queue.push_many([("g", b"%d" % i) for i in range(10)])
    assert queue.pop_batch("g", 4) == [b"0", b"1", b"2", b"3"]
    assert queue.pop_batch("g", 100) == [b"4", b"5", b"6", b"7", b"8", b"9"]
    assert queue.pop_batch("g", 4) == []


def test_items_keep_arbitrary_bytes(queue):
    payload = bytes(range(256)) + b"\x00:\x00"
    queue.push("g", payload)
    assert queue.pop_batch("g", 1) == [payload]


def test_next_batch_round_robin_returns_group_and_items(queue):
    for g in ("g1", "g2", "g3"):
        queue.push_many([(g, b"%s-%d" % (g.encode(), i)) for i in range(2)])
    batches = [queue.next_batch(1) for _ in range(3)]
    assert sorted(b[0] for b in batches) == ["g1", "g2", "g3"]
    for group, items in batches:
        assert items == [group.encode() + b"-0"]
    assert queue.next_batch(10) is not None
    while queue.next_batch(10) is not None:
        pass
    assert queue.next_batch(10) is None


def test_groups_page_walks_the_groups_holding_data_once_by_cursor(client, name):
    q = tideq.CappedQueue(name, client, shards=2)
    q.push_many([(f"g{i}", b"x") for i in range(700)])
    seen: list[str] = []
    page = q.groups_page(count=250)
    assert isinstance(page, tideq.CappedGroupPage)
    assert repr(page) == f"CappedGroupPage(groups=[{len(page.groups)} groups], cursor={page.cursor!r})"
    seen += page.groups
    while page.cursor is not None:
        page = q.groups_page(page.cursor, 250)
        seen += page.groups
    assert sorted(seen) == sorted(f"g{i}" for i in range(700))
    with pytest.raises(tideq.InvalidArgumentError):
        q.groups_page(count=0)
    with pytest.raises(tideq.InvalidArgumentError):
        q.groups_page("5-0")


def test_len_groups_and_stats(client, name):
    q = tideq.CappedQueue(name, client, capacity=2)
    q.push_many([("a", b"1"), ("a", b"2"), ("a", b"3"), ("b", b"4")])
    assert q.len("a") == 2
    assert q.len("missing") == 0
    assert sorted(q.groups()) == ["a", "b"]
    q.pop_batch("b", 5)
    stats = q.stats()
    assert (stats.pushed, stats.dropped, stats.discarded, stats.delivered, stats.groups) == (4, 1, 0, 1, 1)
    assert repr(stats) == (
        "CappedStats(pushed=4, dropped=1, discarded=0, delivered=1, groups=1, unreadable=0, requeued=0)"
    )
    assert stats == q.stats()


def test_peek_shows_the_oldest_items_with_their_push_time_and_takes_nothing(queue):
    before = int(time.time() * 1000)
    queue.push_many([("g", b"%d" % i) for i in range(5)])
    after = int(time.time() * 1000)
    peeked = queue.peek("g", 3)
    assert [p.item for p in peeked] == [b"0", b"1", b"2"]
    for p in peeked:
        assert isinstance(p, tideq.Peeked) and isinstance(p.pushed_at_ms, int)
        assert before - 1000 <= p.pushed_at_ms <= after + 1000  # the Redis clock is this machine's
    assert len(queue.peek("g")) == 5  # max defaults to 10
    assert repr(peeked[0]) == f"Peeked(pushed_at_ms={peeked[0].pushed_at_ms}, item=b'0')"
    assert peeked[0] == queue.peek("g", 1)[0]
    with pytest.raises(AttributeError):
        peeked[0].item = b"x"  # type: ignore[misc]
    assert queue.len("g") == 5
    assert queue.stats().delivered == 0
    assert queue.pop_batch("g", 10) == [b"0", b"1", b"2", b"3", b"4"]
    assert queue.peek("g") == []


def test_peek_leaves_out_items_older_than_max_age(client, name):
    q = tideq.CappedQueue(name, client, max_age=0.05)
    q.push("g", b"old")
    time.sleep(0.15)
    q.push("g", b"new")
    assert [p.item for p in q.peek("g")] == [b"new"]
    assert q.len("g") == 2 and q.stats().discarded == 0


def test_peek_rejects_bad_input(queue):
    for bad_max in (0, 1001, -1):
        with pytest.raises(tideq.InvalidArgumentError):
            queue.peek("g", bad_max)
    with pytest.raises(tideq.InvalidArgumentError):
        queue.peek("a{b")


def test_async_peek(client, name):
    async def main():
        q = tideq.AsyncCappedQueue(name, client)
        await q.push("g", b"x")
        peeked = await q.peek("g", max=1)
        assert [p.item for p in peeked] == [b"x"]
        with pytest.raises(tideq.InvalidArgumentError):
            await q.peek("g", 0)

    asyncio.run(main())


def test_max_age_in_seconds_discards_old_items(client, name):
    q = tideq.CappedQueue(name, client, max_age=0.05)
    q.push("g", b"old")
    time.sleep(0.15)
    q.push("g", b"new")
    assert q.pop_batch("g", 10) == [b"new"]
    assert q.stats().discarded == 1


def test_str_item_is_type_error_and_nothing_written(queue):
    with pytest.raises(TypeError, match="not str"):
        queue.push("g", "text")
    with pytest.raises(TypeError, match="not int"):
        queue.push_many([("g", b"ok"), ("g", 42)])
    with pytest.raises(TypeError):
        queue.push_many([("g", b"ok"), "not a pair"])
    assert queue.len("g") == 0
    assert queue.stats().pushed == 0


def test_bad_group_or_queue_name_is_invalid_argument_and_nothing_written(client, queue, name):
    for bad in ("", "a{b}", "x}", "x" * 300):
        with pytest.raises(tideq.InvalidArgumentError) as err:
            queue.push(bad, b"x")
        assert isinstance(err.value, ValueError)
        assert err.value.code == "INVALID_ARGUMENT"
    with pytest.raises(ValueError):
        queue.push_many([("fine", b"x"), ("bad{", b"y")])
    assert queue.groups() == []
    assert queue.stats().pushed == 0
    with pytest.raises(tideq.InvalidArgumentError):
        tideq.CappedQueue("q{1}", client)


def test_bad_options_are_invalid_argument(client, name):
    for kwargs in ({"capacity": 0}, {"capacity": -1}, {"ttl": -1.0}, {"ttl": 0.0}, {"max_age": float("nan")}):
        with pytest.raises(tideq.InvalidArgumentError):
            tideq.CappedQueue(name, client, **kwargs)
    with pytest.raises(tideq.InvalidArgumentError):
        tideq.CappedQueue(name, client, url="redis://127.0.0.1:1")
    q = tideq.CappedQueue(name, client)
    with pytest.raises(tideq.InvalidArgumentError):
        q.pop_batch("g", 0)
    with pytest.raises(tideq.InvalidArgumentError):
        q.consume(lambda g, items: None, concurrency=0)
    with pytest.raises(tideq.InvalidArgumentError):
        q.consume(lambda g, items: None, groups=["a"], exclude=["b"])
    with pytest.raises(TypeError):
        q.consume("not callable")  # type: ignore[arg-type]


def test_oversized_item_is_payload_too_large_and_nothing_written(redis_url, name):
    q = tideq.CappedQueue(name, tideq.Client(redis_url, max_payload=16))
    q.push("g", b"x" * 16)
    with pytest.raises(tideq.PayloadTooLargeError) as err:
        q.push("g", b"x" * 17)
    assert isinstance(err.value, ValueError)
    assert err.value.code == "PAYLOAD_TOO_LARGE"
    assert q.len("g") == 1


def test_unreachable_redis_is_connection_error_without_password(name):
    q = tideq.CappedQueue(name, url=f"redis://:s3cret@127.0.0.1:{free_port()}")
    with pytest.raises(tideq.ConnectionError) as err:
        q.push("g", b"x")
    assert err.value.code == "CONNECTION"
    assert isinstance(err.value, builtins.ConnectionError)
    assert isinstance(err.value, tideq.TideqError)
    assert "s3cret" not in str(err.value) and "s3cret" not in repr(err.value)
    assert "s3cret" not in repr(q) and "s3cret" not in repr(q.client)


def test_client_url_defaults_to_env(monkeypatch, redis_url, name):
    monkeypatch.setenv("TIDEQ_REDIS_URL", redis_url)
    q = tideq.CappedQueue(name)
    q.push("g", b"x")
    assert q.client.url == redis_url
    monkeypatch.delenv("TIDEQ_REDIS_URL")
    assert tideq.Client().url == "redis://127.0.0.1:6379"


def test_prefix_separates_queues(redis_url, name):
    a = tideq.CappedQueue(name, tideq.Client(redis_url, prefix="app-a"))
    b = tideq.CappedQueue(name, tideq.Client(redis_url, prefix="app-b"))
    a.push("g", b"x")
    assert b.len("g") == 0 and a.len("g") == 1


def test_error_classes_carry_codes():
    table = {
        tideq.InvalidArgumentError: ("INVALID_ARGUMENT", ValueError),
        tideq.PayloadTooLargeError: ("PAYLOAD_TOO_LARGE", ValueError),
        tideq.ConnectionError: ("CONNECTION", builtins.ConnectionError),
        tideq.RedisError: ("REDIS", Exception),
        tideq.ForkedError: ("FORKED", Exception),
        tideq.ClosedError: ("CLOSED", Exception),
    }
    for cls, (code, also) in table.items():
        assert issubclass(cls, tideq.TideqError) and issubclass(cls, also)
        assert cls.code == code
        assert cls.__module__ == "tideq"
    assert issubclass(tideq.TideqError, Exception)


def test_blocking_calls_release_the_gil(queue):
    consumer = queue.consume(lambda g, items: None)
    ticks = 0
    stop = threading.Event()

    def spin() -> None:
        nonlocal ticks
        while not stop.is_set():
            ticks += 1

    t = threading.Thread(target=spin)
    t.start()
    try:
        before = ticks
        consumer.join(timeout=0.3)  # waits in Rust without the GIL
        assert ticks - before > 1000
    finally:
        stop.set()
        t.join()
        consumer.shutdown()
