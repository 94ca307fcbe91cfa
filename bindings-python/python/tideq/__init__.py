"""tideq: Redis-backed queues whose logic lives in one Rust core.

``CappedQueue`` (blocking) and ``AsyncCappedQueue`` (asyncio) are capped grouped queues: each
group keeps its newest ``capacity`` items (pushing more drops the oldest), batches are served
round-robin over groups, and delivery is at-most-once (a popped batch is gone even if its handler
fails). Errors derive from ``TideqError``, whose ``code`` is the core's stable error code.
"""

from tideq._tideq import (
    AsyncCappedQueue,
    AsyncConsumer,
    CappedQueue,
    CappedStats,
    Client,
    ClosedError,
    ConnectionError,
    Consumer,
    ConsumerStats,
    ForkedError,
    InvalidArgumentError,
    PayloadTooLargeError,
    RedisError,
    TideqError,
    __version__,
)

__all__ = [
    "AsyncCappedQueue",
    "AsyncConsumer",
    "CappedQueue",
    "CappedStats",
    "Client",
    "ClosedError",
    "ConnectionError",
    "Consumer",
    "ConsumerStats",
    "ForkedError",
    "InvalidArgumentError",
    "PayloadTooLargeError",
    "RedisError",
    "TideqError",
    "__version__",
]
