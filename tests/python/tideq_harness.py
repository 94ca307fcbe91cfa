"""The test harness shared by tests/python and tests/interop: private redis-servers on free
loopback ports, and waiting for a condition. A module of its own, with a name of its own (test
files never import ``conftest``), so both directories collect and run in one pytest session."""

from __future__ import annotations

import asyncio
import inspect
import os
import shutil
import socket
import subprocess
import tempfile
import time
from typing import Any, Callable, Iterator

import pytest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def stop_process(proc: subprocess.Popen[Any]) -> None:
    """Terminates a server process, killing it if it does not exit within 10 s."""
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def wait_for(cond: Callable[[], Any], timeout: float = 10.0, interval: float = 0.01) -> bool:
    """Polls ``cond`` until it is true or ``timeout`` seconds passed; returns its last value."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(interval)
    return bool(cond())


def _answers(port: int) -> bool:
    """True once something on the port answers a PING as Redis does (+PONG, or an error such as
    NOAUTH from a server that wants a password)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16)[:1] in (b"+", b"-")
    except OSError:
        return False


class RedisServer:
    """A redis-server of its own (``redis-server`` options in ``args``), on a free loopback port,
    in a temporary folder; ``url`` has no credentials."""

    def __init__(self, *args: str) -> None:
        binary = shutil.which("redis-server") or "/usr/bin/redis-server"
        self.workdir = tempfile.mkdtemp(prefix="tideq-redis-")
        self.log = os.path.join(self.workdir, "redis.log")
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen(
            [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", self.workdir,
             "--save", "", "--appendonly", "no", "--logfile", self.log, *args],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.STDOUT,
        )
        if not wait_for(lambda: self.proc.poll() is not None or _answers(self.port), timeout=10):
            self.stop()
            pytest.fail(f"redis-server did not start on port {self.port}\n{self.log_text()}")
        if self.proc.poll() is not None:
            log = self.log_text()
            self.stop()
            pytest.fail(f"redis-server exited at start ({self.proc.returncode})\n{log}")

    def log_text(self) -> str:
        try:
            with open(self.log) as f:
                return f"--- redis-server log ({self.log}) ---\n{f.read()}"
        except OSError:
            return ""

    def stop(self, show_log: bool = False) -> None:
        if show_log:
            print(f"\n{self.log_text()}")
        if self.proc.poll() is None:
            stop_process(self.proc)
        shutil.rmtree(self.workdir, ignore_errors=True)


@pytest.fixture(scope="session")
def redis_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """The shared server: TIDEQ_TEST_REDIS_URL, else a private redis-server for the session."""
    url = os.environ.get("TIDEQ_TEST_REDIS_URL")
    if url:
        yield url
        return
    server = RedisServer()
    try:
        yield server.url
    finally:
        server.stop(show_log=bool(request.session.testsfailed))


@pytest.fixture
def private_redis(request: pytest.FixtureRequest) -> Iterator[Callable[..., RedisServer]]:
    """Starts redis-servers of the test's own (``private_redis("--requirepass", "pw")``),
    stopped when the test ends (their logs shown if it failed)."""
    started: list[RedisServer] = []
    failed_before = request.session.testsfailed

    def start(*args: str) -> RedisServer:
        server = RedisServer(*args)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop(show_log=request.session.testsfailed > failed_before)


class Awaiting:
    """An asyncio object (``AsyncQueue``) used like its blocking twin: each method call runs in a
    fresh event loop (``asyncio.run``) and returns its awaited result, so one test body checks
    both APIs. Calls are made inside the loop, as methods such as ``work`` require."""

    def __init__(self, target: Any) -> None:
        self._target = target

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._target, name)
        if not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            async def inside() -> Any:
                result = attr(*args, **kwargs)
                return await result if inspect.isawaitable(result) else result

            return asyncio.run(inside())

        return call
