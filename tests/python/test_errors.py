"""Errors Redis gives that retrying cannot fix, through the Python binding: credentials
(AuthError), ACL permissions (PermissionDeniedError), a full Redis (OutOfMemoryError), an
evicting Redis refused on request (EvictionPolicyError), something that is not Redis
(NotRedisError), and workers and consumers that stop by themselves on the first two and say so
from join(), shutdown() and run(). The core's contract is core/tests/errors.rs."""

from __future__ import annotations

import asyncio
import builtins
import logging
import socket
import threading
import time
import uuid
from typing import Callable, Iterator

import pytest

import tideq
from resp import command
from tideq_harness import RedisServer, wait_for

FAST = tideq.Backoff.fixed(0.05)


def set_user(url: str, user: str, *rules: str) -> str:
    """Creates (or resets) ACL user `user` with password "pw" and `rules`; returns its URL."""
    command(url, "ACL", "SETUSER", user, "reset", "on", ">pw", *rules)
    return url.replace("redis://", f"redis://{user}:pw@", 1)


def unique(what: str) -> str:
    return f"{what}-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def secured(private_redis: Callable[..., RedisServer]) -> RedisServer:
    """A redis-server whose default user needs the password "s3cret"."""
    return private_redis("--requirepass", "s3cret")


def test_error_classes_of_refusals_carry_codes_and_auth_is_no_connection_error():
    table = {
        tideq.AuthError: "AUTH",
        tideq.PermissionDeniedError: "PERMISSION",
        tideq.OutOfMemoryError: "OUT_OF_MEMORY",
        tideq.NotRedisError: "NOT_REDIS",
        tideq.EvictionPolicyError: "EVICTION_POLICY",
    }
    for cls, code in table.items():
        assert issubclass(cls, tideq.TideqError) and cls.code == code and cls.__module__ == "tideq"
        # A retry-on-ConnectionError loop must not retry these forever.
        assert not issubclass(cls, builtins.ConnectionError) and not issubclass(cls, tideq.ConnectionError)
        assert cls.__doc__


def test_a_missing_password_is_auth_error(secured, name):
    q = tideq.Queue(name, url=secured.url)
    with pytest.raises(tideq.AuthError) as err:
        q.enqueue(b"x")
    assert err.value.code == "AUTH" and "requires a password" in str(err.value)
    with pytest.raises(tideq.AuthError):
        tideq.CappedQueue(name, url=secured.url).push("g", b"x")


def test_a_wrong_password_is_auth_error_without_the_password(secured, name):
    url = secured.url.replace("redis://", "redis://:wrong-pw@")
    q = tideq.Queue(name, url=url)
    with pytest.raises(tideq.AuthError) as err:
        q.enqueue(b"x")
    assert not isinstance(err.value, builtins.ConnectionError)
    assert "wrong-pw" not in str(err.value) and "wrong-pw" not in repr(q)
    # The same through the client option, and the right password works.
    with pytest.raises(tideq.AuthError):
        tideq.Queue(name, tideq.Client(secured.url, password="wrong-pw")).stats()
    assert tideq.Queue(name, tideq.Client(secured.url, password="s3cret")).enqueue(b"x").created


def test_client_ping_answers_and_names_the_cause_when_it_cannot(secured):
    tideq.Client(secured.url, password="s3cret").ping()
    with pytest.raises(tideq.AuthError):
        tideq.Client(secured.url, password="wrong-pw").ping()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(tideq.ConnectionError):
        tideq.Client(f"redis://127.0.0.1:{port}").ping()


def test_an_acl_user_lacking_a_command_is_permission_denied_naming_it(redis_url, name):
    # Everything but HSET, which the enqueue script runs.
    url = set_user(redis_url, unique("no-hset"), "~*", "+@all", "-hset")
    with pytest.raises(tideq.PermissionDeniedError) as err:
        tideq.Queue(name, url=url).enqueue(b"x")
    assert err.value.code == "PERMISSION" and "hset" in str(err.value).lower()
    url = set_user(redis_url, unique("no-eval"), "~*", "+@all", "-evalsha")
    with pytest.raises(tideq.PermissionDeniedError, match="(?i)evalsha"):
        tideq.CappedQueue(name, url=url).push("g", b"x")


def test_a_full_redis_refuses_enqueues_with_out_of_memory_and_reads_still_work(private_redis, name):
    server = private_redis("--maxmemory-policy", "noeviction")
    q = tideq.Queue(name, url=server.url, max_attempts=1, backoff=FAST)
    q.enqueue(b"x", id="kept", delay=3600.0)
    q.enqueue(b"x", id="dead")

    def fail(job: tideq.Job) -> None:
        raise RuntimeError("boom")

    worker = q.work(fail, poll_interval=0.1)
    try:
        assert wait_for(lambda: q.stats().dead == 1, timeout=10)
    finally:
        worker.shutdown()
    # Data well past the limit set afterwards: Redis is then over maxmemory for sure.
    filler = b"x" * (64 * 1024)
    for i in range(64):
        command(server.url, "SET", f"filler{i}", filler)
    command(server.url, "CONFIG", "SET", "maxmemory", "2mb")
    with pytest.raises(tideq.OutOfMemoryError) as err:
        q.enqueue(b"x")
    assert err.value.code == "OUT_OF_MEMORY" and "maxmemory" in str(err.value)
    with pytest.raises(tideq.OutOfMemoryError):
        tideq.CappedQueue(name, url=server.url).push("g", b"x")
    kept, dead = q.get("kept"), q.get("dead")
    assert kept is not None and kept.state == "delayed"
    assert dead is not None and dead.state == "dead"
    assert [d.id for d in q.dead_letters()] == ["dead"]
    s = q.stats()
    assert (s.delayed, s.dead, s.enqueued) == (1, 1, 2)


def test_eviction_check_refuse_raises_eviction_policy_error_on_an_evicting_redis(private_redis, name):
    server = private_redis("--maxmemory", "100mb", "--maxmemory-policy", "allkeys-lru")
    refusing = tideq.Client(server.url, eviction_check="refuse")
    assert refusing.eviction_check == "refuse"
    with pytest.raises(tideq.EvictionPolicyError) as err:
        tideq.Queue(name, refusing).enqueue(b"x")
    assert err.value.code == "EVICTION_POLICY" and "allkeys-lru" in str(err.value)
    # The default only warns; "off" does not look.
    assert tideq.Client(server.url).eviction_check == "warn"
    assert tideq.Queue(name, url=server.url).enqueue(b"x").created
    assert tideq.Queue(name, tideq.Client(server.url, eviction_check="off")).enqueue(b"y").created


def test_an_unknown_eviction_check_is_invalid_argument(redis_url):
    for bad in ("refuse ", "WARN", ""):
        with pytest.raises(tideq.InvalidArgumentError, match="eviction_check"):
            tideq.Client(redis_url, eviction_check=bad)
    with pytest.raises(TypeError):
        tideq.Client(redis_url, eviction_check=1)  # type: ignore[arg-type]


@pytest.fixture
def not_redis() -> Iterator[str]:
    """A TCP server that answers like an HTTP server would."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    stop = threading.Event()

    def serve() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            with conn:
                try:
                    conn.recv(1024)
                    conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
                except OSError:
                    pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"redis://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        thread.join()
        listener.close()


def test_something_that_is_not_redis_is_not_redis_error(not_redis, name):
    with pytest.raises(tideq.NotRedisError) as err:
        tideq.Queue(name, url=not_redis).enqueue(b"x")
    assert err.value.code == "NOT_REDIS"
    assert "\n" not in str(err.value), "one line, no parser noise"


def assert_stopped_on(handle: tideq.Worker | tideq.Consumer, cls: type[tideq.TideqError]) -> None:
    """`handle` stops by itself within seconds, and join()/shutdown() raise `cls`."""
    t0 = time.monotonic()
    with pytest.raises(cls):
        handle.join(timeout=15)
    assert time.monotonic() - t0 < 10, "retried instead of stopping"
    assert not handle.running
    assert isinstance(handle.error, cls) and handle.error.code == cls.code
    with pytest.raises(cls):
        handle.shutdown()
    with pytest.raises(cls):
        handle.join()


def test_a_worker_with_a_wrong_password_stops_and_join_raises_auth_error(secured, name, caplog):
    caplog.set_level(logging.ERROR, logger="tideq")
    q = tideq.Queue(name, url=secured.url.replace("redis://", "redis://:nope@"))
    assert_stopped_on(q.work(lambda job: None, poll_interval=0.1), tideq.AuthError)
    assert any("stopped" in r.getMessage() for r in caplog.records), "the core logs one line"


def test_a_worker_whose_user_may_not_lpop_stops_and_join_raises_permission_denied(redis_url, name):
    url = set_user(redis_url, unique("no-lpop"), "~*", "+@all", "-lpop")
    q = tideq.Queue(name, url=url)
    q.enqueue(b"x")
    worker = q.work(lambda job: None, poll_interval=0.1)
    assert_stopped_on(worker, tideq.PermissionDeniedError)
    assert worker.error is not None and "LPOP" in str(worker.error).upper()
    assert worker.stats().completed == 0


def test_a_consumer_whose_user_may_not_run_scripts_stops_and_join_raises_permission_denied(redis_url, name):
    url = set_user(redis_url, unique("no-eval"), "~*", "+@all", "-evalsha")
    consumer = tideq.CappedQueue(name, url=url).consume(lambda g, items: None, poll_interval=0.1)
    assert_stopped_on(consumer, tideq.PermissionDeniedError)


def test_run_raises_the_error_a_worker_or_consumer_stopped_on_in_both_apis(secured, name):
    url = secured.url.replace("redis://", "redis://:nope@")
    with pytest.raises(tideq.AuthError):
        tideq.Queue(name, url=url).run(lambda job: None, poll_interval=0.1)
    with pytest.raises(tideq.AuthError):
        tideq.CappedQueue(name, url=url).run(lambda g, items: None, poll_interval=0.1)

    async def main() -> None:
        with pytest.raises(tideq.AuthError):
            await tideq.AsyncQueue(name, url=url).run(lambda job: None, poll_interval=0.1)
        worker = tideq.AsyncQueue(name, url=url).work(lambda job: None, poll_interval=0.1)
        with pytest.raises(tideq.AuthError):
            await worker.join()
        assert not worker.running and isinstance(worker.error, tideq.AuthError)
        with pytest.raises(tideq.AuthError):
            await worker.shutdown()
        consumer = tideq.AsyncCappedQueue(name, url=url).consume(lambda g, items: None)
        with pytest.raises(tideq.AuthError):
            await consumer.join()
        assert isinstance(consumer.error, tideq.AuthError)

    asyncio.run(asyncio.wait_for(main(), 30))


def test_a_worker_that_stopped_normally_has_no_error(redis_url, name):
    worker = tideq.Queue(name, url=redis_url).work(lambda job: None, poll_interval=0.1)
    assert worker.error is None
    stats = worker.shutdown()
    assert worker.error is None and stats.completed == 0
