"""Test harness: a private redis-server on a free loopback port (or TIDEQ_TEST_REDIS_URL)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from typing import Any, Iterator

import pytest

import tideq


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


def _ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False


@pytest.fixture(scope="session")
def redis_url(request: pytest.FixtureRequest) -> Iterator[str]:
    url = os.environ.get("TIDEQ_TEST_REDIS_URL")
    if url:
        yield url
        return
    server = shutil.which("redis-server") or "/usr/bin/redis-server"
    workdir = tempfile.mkdtemp(prefix="tideq-redis-")
    log = os.path.join(workdir, "redis.log")
    port = free_port()
    proc = subprocess.Popen(
        [server, "--port", str(port), "--bind", "127.0.0.1", "--dir", workdir,
         "--save", "", "--appendonly", "no", "--logfile", log],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )

    def show_log() -> None:
        if os.path.exists(log):
            with open(log) as f:
                print(f"\n--- redis-server log ({log}) ---\n{f.read()}")

    deadline = time.monotonic() + 10
    while not _ping(port):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            show_log()
            pytest.fail(f"redis-server did not start on port {port}")
        time.sleep(0.02)
    try:
        yield f"redis://127.0.0.1:{port}"
    finally:
        stop_process(proc)
        if request.session.testsfailed:
            show_log()
        shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture
def client(redis_url: str) -> tideq.Client:
    return tideq.Client(redis_url)


@pytest.fixture
def name() -> str:
    """A queue name no other test uses (tests never FLUSHALL)."""
    return f"test-{uuid.uuid4().hex}"


@pytest.fixture
def queue(client: tideq.Client, name: str) -> tideq.CappedQueue:
    return tideq.CappedQueue(name, client, capacity=1000)
