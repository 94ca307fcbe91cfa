"""Credentials that rotate through the Python binding (issue 45, part 2): a sync or coroutine
``credentials_provider`` is asked on every new connection, connections log in again after the
ACL password changes while a worker runs, no job is lost; a failing provider is an ``AuthError``
naming it, retried on the next reconnection; a provider beside a password is refused. The core's
contract is core/tests/credentials.rs."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid

import pytest

import tideq
from resp import command


def kill(url: str, user: str) -> None:
    command(url, "CLIENT", "KILL", "USER", user)


def test_a_rotated_password_reauthenticates_and_loses_no_job(private_redis):
    server = private_redis()
    url = server.url
    user = f"app-{uuid.uuid4().hex[:8]}"
    command(url, "ACL", "SETUSER", user, "reset", "on", ">old", "~*", "&*", "+@all")
    current = {"password": "old"}
    calls = []

    def provider() -> tuple[str, str]:
        calls.append(time.monotonic())
        return (user, current["password"])

    client = tideq.Client(url, credentials_provider=provider)
    q = tideq.Queue(f"rot-{uuid.uuid4().hex}", client)
    seen: set[str] = set()
    lock = threading.Lock()

    def handler(job: tideq.Job) -> None:
        with lock:
            seen.add(job.id)

    jobs = 600
    before = 0
    worker = q.work(handler, concurrency=4)
    try:
        for i in range(jobs):
            if i == jobs // 2:
                before = len(calls)
                command(url, "ACL", "SETUSER", user, ">new")
                current["password"] = "new"
                command(url, "ACL", "SETUSER", user, "<old")
                kill(url, user)
            for _ in range(50):  # an enqueue met by the kill may be sent again with its id
                try:
                    q.enqueue(b"x", id=f"j{i}")
                    break
                except tideq.ConnectionError:
                    time.sleep(0.02)
        deadline = time.monotonic() + 60
        while q.stats().completed < jobs and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        worker.shutdown()
    stats = q.stats()
    assert stats.completed == jobs and len(seen) == jobs
    assert (stats.ready, stats.active, stats.dead) == (0, 0, 0)
    # How many connections a worker holds at the kill varies; each one killed logs in again.
    assert before >= 1 and len(calls) > before, (before, calls)


def test_a_coroutine_provider_is_asked_on_each_new_connection(private_redis):
    server = private_redis()
    user = f"app-{uuid.uuid4().hex[:8]}"
    command(server.url, "ACL", "SETUSER", user, "reset", "on", ">pw", "~*", "&*", "+@all")
    calls = 0

    async def provider() -> tuple[str, str]:
        nonlocal calls
        calls += 1
        await asyncio.sleep(0.001)
        return (user, "pw")

    client = tideq.Client(server.url, credentials_provider=provider)
    assert calls == 0
    client.ping()
    client.ping()
    assert calls == 1
    kill(server.url, user)
    for _ in range(5):
        try:
            client.ping()
            break
        except tideq.ConnectionError:
            pass
    assert calls == 2


def test_a_failing_provider_is_an_auth_error_naming_it_and_is_asked_again(private_redis):
    server = private_redis("--requirepass", "pw")
    state = {"fail": True}

    def provider():
        if state["fail"]:
            raise RuntimeError("token service down")
        return "pw"

    client = tideq.Client(server.url, credentials_provider=provider)
    with pytest.raises(tideq.AuthError, match="credentials provider failed: .*token service down"):
        client.ping()
    state["fail"] = False
    client.ping()

    bad = tideq.Client(server.url, credentials_provider=lambda: 42)  # type: ignore[arg-type,return-value]
    with pytest.raises(tideq.AuthError, match=r"returned a int; expected \(username, password\)"):
        bad.ping()


def test_a_provider_beside_a_password_is_refused():
    def provider() -> str:
        return "pw"

    for kwargs in ({"url": "redis://:pw@127.0.0.1:6379"}, {"password": "pw"}):
        with pytest.raises(tideq.InvalidArgumentError, match="credentials provider"):
            tideq.Client(credentials_provider=provider, **kwargs)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="credentials_provider must be a function"):
        tideq.Client(credentials_provider="pw")  # type: ignore[arg-type]
