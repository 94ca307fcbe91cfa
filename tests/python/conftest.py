"""Fixtures of the Python tests: the shared redis-server (a private one per session, or
TIDEQ_TEST_REDIS_URL), private servers per test, clients and fresh queue names. Helpers live in
tideq_harness (test files import them from there, never from ``conftest``)."""

from __future__ import annotations

import uuid

import pytest

import tideq
from tideq_harness import private_redis, redis_url

__all__ = ["private_redis", "redis_url", "client", "name", "queue"]


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
