"""Fixtures of the Python tests: the shared redis-server (a private one per session, or
TIDEQ_TEST_REDIS_URL), private servers per test, clients and fresh queue names. Helpers live in
tideq_harness (test files import them from there, never from ``conftest``)."""

from __future__ import annotations

import signal
import uuid

import pytest

import tideq
from tideq_harness import otel_provider, otel_spans, private_redis, redis_url

__all__ = ["otel_provider", "otel_spans", "private_redis", "redis_url", "client", "name", "queue"]

# A shell without job control starts background commands with SIGINT ignored, and an ignored
# signal stays ignored in every child: the worker processes these tests start would never see
# their Ctrl-C. A handler here is reset to the default in children.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


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
