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
        self._argv = [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", self.workdir,
                      "--save", "", "--appendonly", "no", "--logfile", self.log, *args]
        self._spawn()

    def _spawn(self) -> None:
        self.proc = subprocess.Popen(self._argv, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        if not wait_for(lambda: self.proc.poll() is not None or _answers(self.port), timeout=10):
            self.stop()
            pytest.fail(f"redis-server did not start on port {self.port}\n{self.log_text()}")
        if self.proc.poll() is not None:
            log = self.log_text()
            self.stop()
            pytest.fail(f"redis-server exited at start ({self.proc.returncode})\n{log}")

    def restart(self) -> None:
        """SIGKILLs the server and starts it again on the same port (its data is gone)."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._spawn()

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


_OTEL_SPANS: Any = None


def otel_recorder() -> Any:
    """The session's OpenTelemetry SDK: a ``TracerProvider`` set as the global one (it can be
    set only once per process, so this runs once, whichever directory's tests ask first), the
    default W3C propagator, and a ``SimpleSpanProcessor`` into an ``InMemorySpanExporter`` that
    records only while the ``otel_spans`` fixture is in use (returned: ``.exporter``,
    ``.recording``). Imported lazily: only tests that ask for spans need ``opentelemetry-sdk``."""
    global _OTEL_SPANS
    if _OTEL_SPANS is None:
        from opentelemetry import trace
        from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        class Recorder(SimpleSpanProcessor):
            def __init__(self) -> None:
                self.exporter = InMemorySpanExporter()
                self.recording = False
                super().__init__(self.exporter)

            def on_end(self, span: ReadableSpan) -> None:
                if self.recording:
                    super().on_end(span)

        recorder = Recorder()
        provider = TracerProvider()
        provider.add_span_processor(recorder)
        trace.set_tracer_provider(provider)
        if trace.get_tracer_provider() is not provider:
            pytest.fail("another global OpenTelemetry tracer provider was set first")
        _OTEL_SPANS = recorder
    return _OTEL_SPANS


@pytest.fixture(scope="session")
def otel_provider() -> Any:
    """The session's global OpenTelemetry tracer provider and its recorder (``otel_recorder``)."""
    return otel_recorder()


@pytest.fixture
def otel_spans(otel_provider: Any) -> Iterator[Any]:
    """The ``InMemorySpanExporter`` of the session's OpenTelemetry SDK, empty at the start of the
    test and recording the spans that end during it (``get_finished_spans()``)."""
    otel_provider.exporter.clear()
    otel_provider.recording = True
    try:
        yield otel_provider.exporter
    finally:
        otel_provider.recording = False
        otel_provider.exporter.clear()

