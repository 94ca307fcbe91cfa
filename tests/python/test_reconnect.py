"""A Redis restarted under a connected client: the first call afterwards works (its connection was
found closed before the call went out, so it is sent on a new one). The core's contract is
core/tests/reconnect.rs."""

from __future__ import annotations

import asyncio
from typing import Callable

import pytest

import tideq
from resp import command
from tideq_harness import RedisServer


# Issue 40 item 3: `ConnectionError: broken pipe` on the first call after a SIGKILL or a
# SHUTDOWN restart; the next one succeeded.
@pytest.mark.parametrize("how", ["sigkill", "shutdown"])
def test_the_first_call_after_a_redis_restart_succeeds(
    private_redis: Callable[..., RedisServer], name: str, how: str
) -> None:
    server = private_redis()
    client = tideq.Client(server.url)
    q = tideq.Queue(name, client)
    q.enqueue(b"x", id="before")
    for round in range(3):
        if how == "shutdown":
            try:
                command(server.url, "SHUTDOWN", "NOSAVE")
            except Exception:
                pass  # the server closes the connection as it exits
        server.restart()
        assert q.enqueue(b"x", id=f"after-{round}").created
        assert q.get(f"after-{round}") is not None


def test_the_first_async_call_after_a_redis_restart_succeeds(
    private_redis: Callable[..., RedisServer], name: str
) -> None:
    server = private_redis()
    client = tideq.Client(server.url)
    aq = tideq.AsyncQueue(name, client)

    async def main() -> None:
        await aq.enqueue(b"x", id="before")
        server.restart()
        assert (await aq.enqueue(b"x", id="after")).created
        server.restart()
        assert (await aq.stats()).ready == 0

    asyncio.run(main())


def test_calls_while_redis_is_down_raise_connection_error_and_the_first_after_works(
    private_redis: Callable[..., RedisServer], name: str
) -> None:
    server = private_redis()
    q = tideq.Queue(name, tideq.Client(server.url))
    q.enqueue(b"x")
    server.proc.kill()
    server.proc.wait()
    with pytest.raises(tideq.ConnectionError):
        q.enqueue(b"x")
    server.restart()
    assert q.enqueue(b"x", id="after").created
