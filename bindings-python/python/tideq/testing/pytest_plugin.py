"""tideq's pytest plugin (registered by the package: the ``pytest11`` entry point), with fixtures
for the three test modes:

- ``tideq_fake``: fake mode for the test (``tideq.testing.fake()``);
- ``tideq_inline``: inline mode for the test (``tideq.testing.inline()``);
- ``tideq_redis``: the URL of a private ``redis-server`` started for the session (on a free
  loopback port, no persistence), or of the server at ``TIDEQ_TEST_REDIS_URL`` when set;
- ``tideq_queue``: a factory, ``tideq_queue("emails")``, of ``tideq.Queue``s on ``tideq_redis``
  whose names are the test's own (``tideq_queue("emails", asyncio=True)``: an ``AsyncQueue``).

Loading the plugin imports the ``tideq`` package and nothing else; no server starts and no mode
turns on until a test asks for a fixture.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Callable, Union

import pytest

if TYPE_CHECKING:
    import tideq
    from tideq.testing import TestMode

__all__ = ["tideq_fake", "tideq_inline", "tideq_queue", "tideq_redis"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_ready(port: int, proc: subprocess.Popen[bytes], log: str) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            break
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
                s.sendall(b"PING\r\n")
                if s.recv(16).startswith(b"+PONG"):
                    return
        except OSError:
            time.sleep(0.05)
    proc.kill()
    with open(log, errors="replace") as f:
        raise RuntimeError(f"tideq_redis: redis-server did not start on port {port}:\n{f.read()}")


@pytest.fixture(scope="session")
def tideq_redis() -> Iterator[str]:
    """The URL of a private ``redis-server`` for the test session (``TIDEQ_TEST_REDIS_URL``
    instead, when set)."""
    url = os.environ.get("TIDEQ_TEST_REDIS_URL")
    if url:
        yield url
        return
    exe = shutil.which("redis-server")
    if exe is None:
        raise RuntimeError(
            "the tideq_redis fixture starts a private redis-server, and no `redis-server` is on "
            "PATH: install Redis (or Valkey's redis-server), or set TIDEQ_TEST_REDIS_URL to a "
            "server the tests may use"
        )
    with tempfile.TemporaryDirectory(prefix="tideq-redis-") as folder:
        port = _free_port()
        log = os.path.join(folder, "redis.log")
        args = [exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                "--appendonly", "no", "--dir", folder, "--logfile", log]
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            _wait_ready(port, proc, log)
            yield f"redis://127.0.0.1:{port}"
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@pytest.fixture
def tideq_queue(tideq_redis: str, request: pytest.FixtureRequest) -> Callable[..., Any]:
    """A factory of queues on ``tideq_redis``: ``tideq_queue("emails", **options)`` gives a
    ``tideq.Queue`` (``asyncio=True``: an ``AsyncQueue``) named ``emails-<unique>``, so tests
    sharing the server never share a queue."""
    import tideq

    def make(name: str = "queue", *, asyncio: bool = False,
             **options: Any) -> Union[tideq.Queue, tideq.AsyncQueue]:
        cls = tideq.AsyncQueue if asyncio else tideq.Queue
        return cls(f"{name}-{uuid.uuid4().hex[:12]}", url=tideq_redis, **options)

    return make


@pytest.fixture
def tideq_fake() -> Iterator[TestMode]:
    """Fake mode for the test: enqueues are recorded, not sent (``tideq.testing.fake()``)."""
    from tideq.testing import fake

    with fake() as mode:
        yield mode


@pytest.fixture
def tideq_inline() -> Iterator[TestMode]:
    """Inline mode for the test: enqueues run their job at once (``tideq.testing.inline()``)."""
    from tideq.testing import inline

    with inline() as mode:
        yield mode
