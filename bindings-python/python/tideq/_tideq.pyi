"""Compiled core of the tideq package (pyo3). Import from ``tideq``, not from here."""

import builtins
from collections.abc import Awaitable, Callable, Iterable
from typing import Optional, Union, final

__all__ = [
    "TideqError",
    "InvalidArgumentError",
    "PayloadTooLargeError",
    "ConnectionError",
    "RedisError",
    "ForkedError",
    "ClosedError",
    "Client",
    "CappedQueue",
    "AsyncCappedQueue",
    "CappedStats",
    "Consumer",
    "AsyncConsumer",
    "ConsumerStats",
    "__version__",
]

__version__: str

_BytesLike = Union[bytes, bytearray, memoryview]
_Handler = Callable[[str, list[bytes]], Union[None, Awaitable[None]]]

class TideqError(Exception):
    """Base class of every tideq error."""

    code: str
    """The stable core error code, e.g. ``"CONNECTION"``."""

class InvalidArgumentError(TideqError, ValueError):
    """A name, option or item was rejected; nothing was sent to Redis."""

class PayloadTooLargeError(TideqError, ValueError):
    """An item is larger than the client's ``max_payload``; nothing was written."""

class ConnectionError(TideqError, builtins.ConnectionError):
    """Redis could not be reached (refused, timed out, connection dropped)."""

class RedisError(TideqError):
    """Redis answered with an error (including a script error)."""

class ForkedError(TideqError):
    """Used in a process forked after tideq started: create tideq objects after forking."""

class ClosedError(TideqError):
    """The consumer was already stopped."""

@final
class Client:
    """A handle on one Redis deployment, shared by queues. Connects lazily, on the first command.

    ``url`` defaults to ``$TIDEQ_REDIS_URL``, else ``redis://127.0.0.1:6379``; ``redis://``,
    ``rediss://`` (TLS) and ``unix://`` are accepted. ``username``/``password`` override the URL's.
    """

    def __new__(
        cls,
        url: Optional[str] = None,
        *,
        username: Optional[str] = None,
        password: Optional[str] = None,
        prefix: str = "tideq",
        max_payload: int = 524288,
    ) -> Client: ...
    @property
    def url(self) -> str:
        """The URL with any password replaced by ``***``."""
    @property
    def prefix(self) -> str:
        """First segment of every Redis key."""
    @property
    def max_payload(self) -> int:
        """Largest item accepted, in bytes."""

@final
class CappedStats:
    """Queue-wide counters kept in Redis."""

    @property
    def pushed(self) -> int:
        """Items accepted by push/push_many."""
    @property
    def dropped(self) -> int:
        """Items dropped because their group was over capacity."""
    @property
    def discarded(self) -> int:
        """Items discarded when consumed because they were older than max_age."""
    @property
    def delivered(self) -> int:
        """Items handed out by pop_batch/next_batch/consumers."""
    @property
    def groups(self) -> int:
        """Groups currently holding data."""

@final
class ConsumerStats:
    """What a consumer has done so far, in this process."""

    @property
    def batches(self) -> int:
        """Batches handed to the handler (failed ones included)."""
    @property
    def items(self) -> int:
        """Items in those batches."""
    @property
    def failed(self) -> int:
        """Batches whose handler raised (their items are gone: at-most-once)."""
    @property
    def fetch_errors(self) -> int:
        """Fetches that failed (e.g. Redis unreachable) and were retried with backoff."""

@final
class Consumer:
    """A running consumer (blocking API). Dropping it does not stop it: call ``shutdown()``."""

    def stop(self) -> None:
        """Stop taking batches; running handlers get the grace period."""
    def join(self, timeout: Optional[float] = None) -> ConsumerStats:
        """Wait until stopped, or ``timeout`` seconds; returns the stats either way."""
    def shutdown(self) -> ConsumerStats:
        """``stop()`` then ``join()``."""
    def stats(self) -> ConsumerStats:
        """Counters so far."""
    @property
    def running(self) -> bool:
        """True until the loop ended and running handlers finished (or were abandoned)."""

@final
class AsyncConsumer:
    """A running consumer (asyncio API). Dropping it does not stop it: ``await shutdown()``."""

    def stop(self) -> None:
        """Stop taking batches; running handlers get the grace period."""
    def join(self) -> Awaitable[ConsumerStats]:
        """Wait until stopped; returns the stats."""
    def shutdown(self) -> Awaitable[ConsumerStats]:
        """``stop()`` then ``join()``."""
    def stats(self) -> ConsumerStats:
        """Counters so far."""
    @property
    def running(self) -> bool:
        """True until the loop ended and running handlers finished (or were abandoned)."""

@final
class CappedQueue:
    """A capped grouped queue, blocking API (the GIL is released while waiting on Redis).

    Each group keeps its newest ``capacity`` items; a group idle for ``ttl`` seconds disappears
    (``None``: never); items older than ``max_age`` seconds are discarded when consumed. Pass a
    ``client`` or a ``url`` (neither: ``Client()``). Delivery is at-most-once.
    """

    def __new__(
        cls,
        name: str,
        client: Optional[Client] = None,
        *,
        url: Optional[str] = None,
        capacity: int = 1000,
        ttl: Optional[float] = 86400.0,
        max_age: Optional[float] = None,
    ) -> CappedQueue: ...
    @property
    def name(self) -> str: ...
    @property
    def client(self) -> Client: ...
    def push(self, group: str, item: _BytesLike) -> int:
        """Append ``item`` to ``group``; returns how many old items were dropped."""
    def push_many(self, items: Iterable[tuple[str, _BytesLike]]) -> list[int]:
        """Push ``(group, item)`` pairs in one round trip; drops per item. All-or-nothing validation."""
    def pop_batch(self, group: str, max: int = 128) -> list[bytes]:
        """Remove and return up to ``max`` items of ``group``, oldest first."""
    def next_batch(self, max: int = 128) -> Optional[tuple[str, list[bytes]]]:
        """Next ``(group, items)`` round-robin over groups with data, or ``None``."""
    def len(self, group: str) -> int:
        """Items queued in ``group``."""
    def groups(self) -> list[str]:
        """Groups holding data, in round-robin order."""
    def stats(self) -> CappedStats:
        """Queue-wide counters."""
    def consume(
        self,
        handler: _Handler,
        *,
        concurrency: int = 1,
        batch_size: int = 128,
        groups: Optional[list[str]] = None,
        exclude: Optional[list[str]] = None,
        poll_interval: float = 2.0,
        grace: float = 10.0,
        stop_when_empty: bool = False,
    ) -> Consumer:
        """Start consuming in the background: ``handler(group, items)`` per batch.

        Plain handlers run in worker threads; ``async def`` handlers on a private event loop per
        batch. A handler exception is logged on the ``tideq`` logger and the batch is not
        redelivered. ``groups``: serve only these; ``exclude``: skip these.
        """
    def run(
        self,
        handler: _Handler,
        *,
        concurrency: int = 1,
        batch_size: int = 128,
        groups: Optional[list[str]] = None,
        exclude: Optional[list[str]] = None,
        poll_interval: float = 2.0,
        grace: float = 10.0,
        stop_when_empty: bool = False,
    ) -> ConsumerStats:
        """``consume()`` and block until SIGINT/SIGTERM (graceful stop) or ``stop_when_empty``."""

@final
class AsyncCappedQueue:
    """A capped grouped queue, asyncio API: same constructor and methods, all awaitable."""

    def __new__(
        cls,
        name: str,
        client: Optional[Client] = None,
        *,
        url: Optional[str] = None,
        capacity: int = 1000,
        ttl: Optional[float] = 86400.0,
        max_age: Optional[float] = None,
    ) -> AsyncCappedQueue: ...
    @property
    def name(self) -> str: ...
    @property
    def client(self) -> Client: ...
    def push(self, group: str, item: _BytesLike) -> Awaitable[int]:
        """Append ``item`` to ``group``; returns how many old items were dropped."""
    def push_many(self, items: Iterable[tuple[str, _BytesLike]]) -> Awaitable[list[int]]:
        """Push ``(group, item)`` pairs in one round trip; drops per item."""
    def pop_batch(self, group: str, max: int = 128) -> Awaitable[list[bytes]]:
        """Remove and return up to ``max`` items of ``group``, oldest first."""
    def next_batch(self, max: int = 128) -> Awaitable[Optional[tuple[str, list[bytes]]]]:
        """Next ``(group, items)`` round-robin over groups with data, or ``None``."""
    def len(self, group: str) -> Awaitable[int]:
        """Items queued in ``group``."""
    def groups(self) -> Awaitable[list[str]]:
        """Groups holding data, in round-robin order."""
    def stats(self) -> Awaitable[CappedStats]:
        """Queue-wide counters."""
    def consume(
        self,
        handler: _Handler,
        *,
        concurrency: int = 1,
        batch_size: int = 128,
        groups: Optional[list[str]] = None,
        exclude: Optional[list[str]] = None,
        poll_interval: float = 2.0,
        grace: float = 10.0,
        stop_when_empty: bool = False,
    ) -> AsyncConsumer:
        """Start consuming; call from a running event loop. ``async def`` handlers run on that
        loop, plain ones in worker threads."""
    def run(
        self,
        handler: _Handler,
        *,
        concurrency: int = 1,
        batch_size: int = 128,
        groups: Optional[list[str]] = None,
        exclude: Optional[list[str]] = None,
        poll_interval: float = 2.0,
        grace: float = 10.0,
        stop_when_empty: bool = False,
    ) -> Awaitable[ConsumerStats]:
        """``consume()`` and wait until SIGINT/SIGTERM (graceful stop), cancellation or
        ``stop_when_empty``."""
