"""Compiled core of the tideq package (pyo3). Import from ``tideq``, not from here."""

import builtins
import datetime
import os
import types
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping, Sequence
from typing import Any, Literal, Optional, TypeVar, TypedDict, Union, final, overload

from typing_extensions import ParamSpec

from tideq._tasks import AsyncTask, Task

# Seconds: a number, or a datetime.timedelta (its total_seconds()).
_Seconds = Union[float, datetime.timedelta]

_P = ParamSpec("_P")
_R = TypeVar("_R")

__all__ = [
    "TideqError",
    "Encryption",
    "InvalidArgumentError",
    "PayloadTooLargeError",
    "ConnectionError",
    "AuthError",
    "PermissionDeniedError",
    "OutOfMemoryError",
    "NotRedisError",
    "EvictionPolicyError",
    "RedisError",
    "ForkedError",
    "ClosedError",
    "JobNotFoundError",
    "JobNotCancellableError",
    "JobWrongStateError",
    "LeaseLostError",
    "NotReplicatedError",
    "JobFailedError",
    "TimeoutError",
    "NotSupportedError",
    "Client",
    "CappedQueue",
    "AsyncCappedQueue",
    "CappedGroupPage",
    "CappedStats",
    "Peeked",
    "UnreadableItem",
    "Consumer",
    "AsyncConsumer",
    "ConsumerStats",
    "Queue",
    "AsyncQueue",
    "Backoff",
    "Enqueued",
    "Job",
    "JobInfo",
    "Attempt",
    "LogLine",
    "JobPage",
    "JobSearch",
    "JobStats",
    "ScheduleInfo",
    "WorkerInfo",
    "HistoryPoint",
    "TaskMetrics",
    "ServerInfo",
    "Event",
    "EventReader",
    "AsyncEventReader",
    "Rate",
    "Limits",
    "GroupInfo",
    "GroupPage",
    "MAX_PRIORITY",
    "MAX_COST",
    "Worker",
    "AsyncWorker",
    "WorkerStats",
    "FlowJob",
    "GraphNode",
    "ChildResult",
    "acl_rules",
    "chain",
    "chord",
    "serve",
    "serve_async",
    "_Dashboard",  # tideq.asgi uses it
    "_run_cli",  # in the runtime's __all__ too (pyo3 adds every function); tideq._cli calls it
    "_set_otel_hooks",  # likewise; tideq._otel calls it
    "_testing_start",  # likewise; tideq.testing calls it
    "_TestMode",  # what it returns
    "_Limiter",  # tideq._limiter wraps it (shared limiters)
    "_LimitSlot",  # what its acquire takes
    "decode_envelope",
    "encode_envelope",
    "__version__",
]

__version__: str

MAX_PRIORITY: int
"""The largest job priority (2**21 - 1); 1 runs first."""

MAX_COST: int
"""The largest cost of a job (1,000,000 tokens), see ``enqueue``'s ``cost``."""

_BytesLike = Union[bytes, bytearray, memoryview]
# What a credentials provider returns: (username or None, password), or a password alone.
_Credentials = Union[tuple[Optional[str], str], str]
_Handler = Callable[[str, list[bytes]], Union[None, Awaitable[None]]]
# What a job handler returns (or its awaitable resolves to) is stored as the job's result: bytes
# as they are, anything else JSON-encoded (None: no result).
_JobHandler = Callable[[Job], Any]
_BatchResult = Optional[Mapping[Any, Union[str, BaseException]]]  # keys: job ids or Jobs
_BatchHandler = Callable[[list[Job]], Union[_BatchResult, Awaitable[_BatchResult]]]
_Format = Literal["json", "msgpack"]
_JobState = Literal["delayed", "ready", "active", "dead", "completed", "waiting"]
_OnChildFailure = Literal["fail", "ignore", "continue"]
_ChildOutcome = Literal["completed", "failed", "expired", "cancelled", "lost", "ignored"]
_EventKind = Literal[
    "enqueued", "active", "progress", "completed", "failed", "retried", "dead", "cancelled",
    "snoozed", "expired", "lagged",
]
_When = Union[datetime.datetime, float]
# ``dedup=``: a key held until its job finishes, or (key, ttl seconds; None: until it finishes).
_Dedup = Union[str, tuple[str, Optional[float]]]
# ``debounce=``: (key, delay seconds).
_Debounce = tuple[str, float]
# ``trace=``: W3C Trace Context headers, ``{"traceparent": ..., "tracestate": ...}``.
_Trace = Mapping[str, str]

class _EnqueueOptions(TypedDict, total=False):
    """Per-job options of ``enqueue_many`` items: ``enqueue``'s keyword arguments."""

    id: Optional[str]
    delay: Optional[_Seconds]
    run_at: Optional[_When]
    expires_after: Optional[_Seconds]
    expires_at: Optional[_When]
    max_attempts: Optional[int]
    backoff: Optional[Backoff]
    timeout: Optional[_Seconds]
    priority: Optional[int]
    group: Optional[str]
    dedup: Optional[_Dedup]
    debounce: Optional[_Debounce]
    trace: Optional[_Trace]
    cost: Optional[int]

_JobItem = Union[_BytesLike, tuple[_BytesLike, _EnqueueOptions]]

class _BulkItem(TypedDict):
    id: str
    outcome: Literal["done", "wrong_state", "unknown"]
    state: Optional[str]

class _BulkCounts(TypedDict):
    done: int
    skipped: int

class _BulkPage(TypedDict):
    done: int
    skipped: int
    cursor: Optional[str]

class TideqError(Exception):
    """Base class of every tideq error.

    ``code`` is the stable core error code (e.g. "CONNECTION")."""

    code: str
    """The stable core error code, e.g. ``"CONNECTION"``."""

class InvalidArgumentError(TideqError, ValueError):
    """A name, option or item was rejected; nothing was sent to Redis."""

class PayloadTooLargeError(TideqError, ValueError):
    """An item is larger than the client's ``max_payload``; nothing was written."""

class ConnectionError(TideqError, builtins.ConnectionError):
    """Redis could not be reached (refused, timed out, connection dropped)."""

class AuthError(TideqError):
    """Redis refused the user name or password, or needs one and none was given. Retrying cannot
    fix it: workers and consumers stop on it (``join()`` raises it)."""

class PermissionDeniedError(TideqError):
    """The Redis (ACL) user may not run a command tideq needs, or touch a key (the message names
    it). Retrying cannot fix it: workers and consumers stop on it (``join()`` raises it)."""

class OutOfMemoryError(TideqError):
    """Redis is at ``maxmemory`` with the ``noeviction`` policy and refuses writes; reads (``get``,
    ``dead_letters``, ``stats``) still work."""

class NotRedisError(TideqError):
    """The server at the address did not answer as Redis does."""

class EvictionPolicyError(TideqError):
    """Redis may evict keys (its ``maxmemory-policy`` is not ``noeviction``) and the client was
    created with ``eviction_check="refuse"``."""

class RedisError(TideqError):
    """Redis answered with an error (including a script error)."""

class ForkedError(TideqError):
    """Used in a process forked after tideq started: create tideq objects after forking."""

class ClosedError(TideqError):
    """The consumer or worker was already stopped."""

class JobNotFoundError(TideqError, LookupError):
    """No job with that id (or it is no longer retained); for requeue, no dead job with that id."""

class JobNotCancellableError(TideqError):
    """The job is active, dead or completed; only delayed or ready jobs can be cancelled."""

class JobWrongStateError(TideqError):
    """The job is not in a state the operation applies to (``promote`` needs a delayed job,
    ``delete`` a dead or completed one); the message names its state."""

class LeaseLostError(TideqError):
    """The job's lease expired and it was redelivered: this worker may no longer settle it."""

class NotReplicatedError(TideqError):
    """The enqueue reached the primary but fewer replicas than ``replica_ack`` asks confirmed it
    in time; the job exists, so enqueuing again with the same id is safe."""

class JobFailedError(TideqError):
    """The job waited for went to the dead letters (the message holds its last error) or was
    cancelled."""

class TimeoutError(TideqError, builtins.TimeoutError):
    """A wait ran out of time before the job finished; nothing was changed. Also a builtin
    ``TimeoutError``."""

class NotSupportedError(TideqError):
    """The server is older than tideq supports (Redis 7.0, Valkey 7.2); the message names its
    version."""

@final
class _Limiter:
    """The shared limiters of a client (``tideq.Limiter`` and ``tideq.AsyncLimiter`` wrap it; not
    for direct use)."""

    def __new__(cls, client: Client) -> _Limiter: ...
    def concurrent(self, name: str, n: int, lease: _Seconds, asyncio: bool) -> Any:
        """Defines a concurrency limiter."""
    def window(self, name: str, n: int, per: _Seconds, asyncio: bool) -> Any:
        """Defines a window limiter."""
    def bucket(self, name: str, capacity: int, refill: float, asyncio: bool) -> Any:
        """Defines a token bucket."""
    def acquire(self, name: str, cost: int, asyncio: bool) -> Any:
        """Takes from a limiter: a slot, or the seconds until it may have room."""

@final
class _LimitSlot:
    """What an acquire took (``tideq.LimitSlot`` wraps it; not for direct use)."""

    def release(self, asyncio: bool) -> Any:
        """Gives the slot back; true when it was still held."""
    def extend(self, lease: _Seconds, asyncio: bool) -> Any:
        """Holds the slot for `lease` from now; true when it was still held."""
    @property
    def lease_deadline(self) -> Optional[float]:
        """When the slot is given back unless released or extended (Unix seconds, Redis clock)."""

@final
class _Dashboard:
    """The dashboard for one ASGI app (``tideq.asgi.dashboard`` makes it; not for direct use)."""

    def __new__(
        cls,
        url: Optional[str] = None,
        *,
        client: Optional[Client] = None,
        queues: Optional[list[str]] = None,
        shards: Optional[int] = None,
        refresh: Optional[_Seconds] = None,
        read_only: bool = False,
        allowed_hosts: Optional[list[str]] = None,
    ) -> _Dashboard: ...
    def handle(
        self,
        method: str,
        prefix: str,
        path: str,
        query: Optional[str],
        headers: list[tuple[str, str]],
        body: bytes,
        granted: list[tuple[str, bool]],
    ) -> Coroutine[Any, Any, tuple[Optional[str], int, list[tuple[str, str]], bytes]]:
        """Answers one request (a coroutine): ``(ask, status, headers, body)``. ``path`` is the path
        under the mount (``""`` for the prefix itself), ``prefix`` the mount as the browser sees
        it, ``granted`` the app hook's answers so far (``[("read", True)]``)."""

@final
class Client:
    """A handle on one Redis deployment, shared by queues. Connects lazily, on the first command.

    Give at most one of:

    - ``url``: one server; ``redis://``, ``rediss://`` (TLS) and ``unix://`` are accepted. With
      none of the three, ``$TIDEQ_REDIS_URL``, else ``redis://127.0.0.1:6379``.
    - ``cluster``: a Redis Cluster, through any of these seed URLs (``redis://host:port`` or
      ``rediss://``, at least one). Redirects, topology changes and failovers are followed; spread
      a queue over the masters with the queue option ``shards``.
    - ``sentinel``: the Sentinels' URLs (at least one) of a primary they monitor as
      ``master_name``; the client asks them for the current primary again after a failover.

    ``username``/``password`` override the URL's (with Sentinel: the primary's credentials).
    ``prefix`` is the first segment of every key (default ``"tideq"``); ``max_payload`` the
    largest item accepted, in bytes (default 512 KiB).
    ``replica_ack=(replicas, timeout)`` makes every job enqueue wait (Redis ``WAIT``) until
    ``replicas`` replicas have it, at most ``timeout`` seconds, else ``NotReplicatedError``.
    ``tls_ca`` trusts a private CA for ``rediss://`` (single server, cluster and Sentinel, both
    to the Sentinels and to the primary) instead of the public roots; verification stays on. Give
    the PEM contents as ``bytes`` or the path of a PEM file as ``str``/``os.PathLike`` (read when
    the client is created; an unreadable file raises ``InvalidArgumentError``, so do ``bytes``
    holding no PEM certificate).
    ``eviction_check`` says what to do when Redis's ``maxmemory-policy`` lets it evict keys (and
    so lose jobs without any error), checked on the first command: ``"warn"`` (the default: log a
    warning once per server), ``"refuse"`` (every call raises ``EvictionPolicyError``) or
    ``"off"``.
    ``credentials_provider`` is asked for the credentials each time a connection logs in (the
    first connection, every reconnection, each blocking connection, each cluster node and the
    primary the Sentinels name), for short-lived tokens (ElastiCache IAM, Entra ID): a function
    or a coroutine function (run on an event loop of its own, in a background thread) returning
    ``(username, password)`` (``username`` None: the URL's user, else ``default``) or a password
    alone. What it raises becomes an ``AuthError`` naming it, and it is asked again on the next
    reconnection. It gives the password: a password in the URL or ``password`` too raises
    ``InvalidArgumentError``.
    Conflicting or empty options raise ``InvalidArgumentError``, as do names, URLs and
    credentials that are not valid UTF-8 (a ``str`` holding a lone surrogate).
    """

    def __new__(
        cls,
        url: Optional[str] = None,
        *,
        cluster: Optional[list[str]] = None,
        sentinel: Optional[list[str]] = None,
        master_name: Optional[str] = None,
        username: Optional[str] = None,
        password: Optional[str] = None,
        prefix: Optional[str] = None,
        max_payload: Optional[int] = None,
        replica_ack: Optional[tuple[int, _Seconds]] = None,
        tls_ca: Union[bytes, str, os.PathLike[str], None] = None,
        eviction_check: Optional[str] = None,
        credentials_provider: Optional[
            Callable[[], Union[_Credentials, Coroutine[Any, Any, _Credentials]]]
        ] = None,
    ) -> Client: ...
    def ping(self) -> None:
        """A round trip to Redis (blocking, the GIL released); raises ``ConnectionError`` when Redis
        cannot be reached, ``AuthError`` when it refuses the credentials.

        In asyncio code: ``await asyncio.to_thread(client.ping)``."""
    def server_info(self) -> ServerInfo:
        """What the Redis server says of itself (one ``INFO``; blocking, the GIL released): its
        version, memory used and limit, eviction policy (``evicts`` is true for any policy but
        ``noeviction``: jobs are keys, and such a policy deletes them under memory pressure),
        clients connected and commands per second. A cluster's primaries are summed. Raises
        ``PermissionError`` for a user not allowed ``INFO``.

        In asyncio code: ``await asyncio.to_thread(client.server_info)``."""
    @property
    def url(self) -> str:
        """The URL with any password replaced by ``***`` (cluster: the first seed; Sentinel: the
        first Sentinel)."""
    @property
    def mode(self) -> str:
        """``"single"``, ``"cluster"`` or ``"sentinel"``."""
    @property
    def cluster(self) -> Optional[list[str]]:
        """The cluster seed URLs (passwords redacted), or None."""
    @property
    def sentinel(self) -> Optional[list[str]]:
        """The Sentinel URLs (passwords redacted), or None."""
    @property
    def master_name(self) -> Optional[str]:
        """The name the Sentinels monitor the primary under, or None."""
    @property
    def replica_ack(self) -> Optional[tuple[int, float]]:
        """``(replicas, timeout seconds)`` each enqueue waits for, or None."""
    @property
    def eviction_check(self) -> str:
        """``"warn"``, ``"refuse"`` or ``"off"``: what the client does about a Redis that may
        evict keys."""
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
    @property
    def unreadable(self) -> int:
        """Popped items that could not be opened (a missing or wrong key), kept in the unreadable
        list instead of being delivered (not counted in ``delivered``)."""
    @property
    def requeued(self) -> int:
        """Unreadable items pushed back by ``requeue_unreadable``."""
    def to_dict(self) -> dict[str, Any]:
        """The fields as a plain ``dict``, one key per property (value objects in them, or in
        a list in them, as dicts too).

        Value objects compare equal when they are of the same class with equal fields, and
        then hash alike: every value class is hashable (a stored result or progress counts
        by its bytes). They pickle and copy by value."""

@final
class CappedGroupPage:
    """A page of a capped queue's groups (``CappedQueue.groups_page``) and the cursor of the next."""

    @property
    def groups(self) -> list[str]:
        """The page's groups, in no particular order."""
    @property
    def cursor(self) -> str | None:
        """Give it to the next ``groups_page`` call; None when this was the last page."""
    def to_dict(self) -> dict[str, Any]:
        """The fields as a plain ``dict``, one key per property (value objects in them, or in
        a list in them, as dicts too).

        Value objects compare equal when they are of the same class with equal fields, and
        then hash alike: every value class is hashable (a stored result or progress counts
        by its bytes). They pickle and copy by value."""

@final
class Peeked:
    """An item still queued in a group, as ``peek`` shows it."""

    @property
    def pushed_at_ms(self) -> int:
        """When it was pushed, epoch milliseconds by the Redis clock."""
    @property
    def item(self) -> bytes:
        """The item's bytes (its sealed bytes when ``unreadable`` is set)."""
    @property
    def unreadable(self) -> Optional[str]:
        """None, or why this handle cannot open the item (it is encrypted with a key the handle
        lacks or that does not match, or the handle has no encryption), naming the key id."""
    def to_dict(self) -> dict[str, Any]:
        """The fields as a plain ``dict``, one key per property (value objects in them, or in
        a list in them, as dicts too).

        Value objects compare equal when they are of the same class with equal fields, and
        then hash alike: every value class is hashable (a stored result or progress counts
        by its bytes). They pickle and copy by value."""

@final
class UnreadableItem:
    """An item a pop took but could not open (its key was missing or did not match), kept in the
    queue's unreadable list (``CappedQueue.unreadable``)."""

    @property
    def group(self) -> str:
        """The group it was popped from (and goes back to)."""
    @property
    def key_id(self) -> str:
        """The id of the key it is sealed with."""
    @property
    def error(self) -> str:
        """Why it could not be opened (names the key id)."""
    @property
    def at_ms(self) -> int:
        """When the pop found it unreadable, epoch milliseconds (the consumer's clock)."""
    @property
    def item(self) -> bytes:
        """The sealed bytes, as they were stored."""
    def to_dict(self) -> dict[str, Any]:
        """The fields as a plain ``dict``, one key per property (value objects in them, or in
        a list in them, as dicts too).

        Value objects compare equal when they are of the same class with equal fields, and
        then hash alike: every value class is hashable (a stored result or progress counts
        by its bytes). They pickle and copy by value."""

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
    def to_dict(self) -> dict[str, Any]:
        """The fields as a plain ``dict``, one key per property (value objects in them, or in
        a list in them, as dicts too).

        Value objects compare equal when they are of the same class with equal fields, and
        then hash alike: every value class is hashable (a stored result or progress counts
        by its bytes). They pickle and copy by value."""

@final
class Consumer:
    """A running consumer (blocking API). Dropping it does not stop it: call ``shutdown()``.

    A consumer stops by itself when Redis refuses its credentials or permissions (which retrying
    cannot fix; other errors are retried): ``join()``, ``shutdown()`` and ``run()`` then raise
    that error (``AuthError``, ``PermissionDeniedError``), also kept in ``error``."""

    def stop(self) -> None:
        """Stop taking work; running handlers get the grace period.

        A worker fetches no new jobs. Past the grace period, its handlers are asked to stop
        (``job.cancelled``; ``async def`` handlers are cancelled): a job whose handler then raises
        is returned to the queue (its attempt not counted), one whose handler returns is
        completed. Until its handler returns, a job keeps its slot and its lease. A consumer takes
        no new batches; its handlers still running after the grace period are abandoned."""
    def abort(self) -> None:
        """Stop at once, without waiting for running handlers: their jobs are left to their leases
        (run again once a lease expires; a consumer's batches are gone). What a second Ctrl-C in
        ``run()`` does."""
    def join(self, timeout: Optional[_Seconds] = None) -> ConsumerStats:
        """Wait until stopped, or ``timeout`` seconds (a timeout too large to be a point in time
        means no limit); returns the stats either way, unless the consumer stopped on an error
        (raised)."""
    def shutdown(self) -> ConsumerStats:
        """``stop()`` then ``join()``."""
    def __enter__(self) -> Consumer: ...
    def __exit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc_value: Optional[BaseException],
        traceback: Optional[types.TracebackType],
    ) -> None:
        """``shutdown()``: running handlers get the grace period; an exception raised in the block
        goes on."""
    def stats(self) -> ConsumerStats:
        """Counters so far."""
    @property
    def running(self) -> bool:
        """True until the loop ended and running handlers finished (or were abandoned)."""
    @property
    def error(self) -> Optional[TideqError]:
        """The error it stopped on by itself (as ``join()`` raises it), or None."""

@final
class CappedQueue:
    """A capped grouped queue, blocking API (the GIL is released while waiting on Redis).

    Each group keeps its newest ``capacity`` items; a group idle for ``ttl`` seconds disappears
    (``None``: never); items older than ``max_age`` seconds are discarded when consumed
    (``None``: no limit). Pass a ``client`` or a ``url`` (neither: ``Client()``). Delivery is
    at-most-once. Options not given (or None where None has no meaning of its own) take the
    core's defaults: ``capacity`` 1000, ``ttl`` one day, no ``max_age``.

    ``shards`` (1 to 1024) splits the queue into that many hash tags, which a Redis Cluster
    spreads over its masters; a group's shard is fixed by its name, consumers serve every shard
    and ``stats`` adds them up. Every handle of a queue must use the same count: the first push
    records it in Redis, and a handle made with another count raises ``InvalidArgumentError``
    at its first call. Queue names may not contain ``#``.

    ``encryption`` (an ``Encryption``) seals each item before it reaches Redis and opens it
    when popped or peeked; items stored in clear read as they are. An item a pop cannot open
    (its key is missing or does not match) is not delivered: it is kept in the queue's
    unreadable list (``unreadable``, ``requeue_unreadable``).

    Used as a context manager (``with CappedQueue(...) as q:``, ``async with`` for
    ``AsyncCappedQueue``), leaving the block shuts down the consumers started from ``q``
    that still run, as leaving a consumer's own ``with`` block does; the queue stays usable.
    The Redis connections are its ``Client``'s (made on first use, shared by the queues on
    it): they stay open.
    """

    def __new__(
        cls,
        name: str,
        client: Optional[Client] = None,
        *,
        url: Optional[str] = None,
        capacity: Optional[int] = None,
        ttl: Optional[_Seconds] = 86400.0,
        max_age: Optional[_Seconds] = None,
        shards: int = 1,
        encryption: Optional[Encryption] = None,
    ) -> CappedQueue: ...
    @property
    def name(self) -> str: ...
    @property
    def client(self) -> Client: ...
    @property
    def shards(self) -> int:
        """How many shards (hash tags) the queue is split into."""
    def __enter__(self) -> CappedQueue: ...
    def __exit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc_value: Optional[BaseException],
        traceback: Optional[types.TracebackType],
    ) -> None:
        """Shut down the consumers started from this queue that still run (``consume``), as leaving a
        consumer's own ``with`` block does: running handlers get the grace period. An exception
        raised in the block goes on; the queue stays usable."""
    def push(self, group: str, item: _BytesLike) -> int:
        """Append ``item`` to ``group``; returns how many old items were dropped."""
    def push_many(self, items: Iterable[tuple[str, _BytesLike]]) -> list[int]:
        """Push ``(group, item)`` pairs in one round trip; drops per item.

        All-or-nothing validation."""
    def pop_batch(self, group: str, max: int = 128) -> list[bytes]:
        """Remove and return up to ``max`` items of ``group``, oldest first."""
    def next_batch(self, max: int = 128) -> Optional[tuple[str, list[bytes]]]:
        """Next ``(group, items)`` round-robin over groups with data, or ``None``."""
    def peek(self, group: str, max: int = 10) -> list[Peeked]:
        """The oldest ``max`` items of ``group`` (1 to 1000), oldest first, left in place.

        Items older than ``max_age`` are left out, as a pop would discard them, so fewer than
        ``max`` may come back. An encrypted item this handle cannot open comes back as stored
        (sealed), its ``unreadable`` naming the key id."""
    def unreadable(self, max: int = 100) -> list[UnreadableItem]:
        """Up to ``max`` (1 to 1000) of the items pops could not open, newest first (``UnreadableItem``:
        group, key id, error, sealed bytes). They stay listed.

        The list keeps the newest 1000 per shard."""
    def requeue_unreadable(self) -> int:
        """Push the unreadable items this handle can now open back to their groups; returns how many.

        Once their key is restored (in this handle's ``encryption``) nothing is lost; the others
        stay listed."""
    def len(self, group: str) -> int:
        """Items queued in ``group``."""
    def groups(self) -> list[str]:
        """Groups holding data, in round-robin order. Reads the whole rotation; to show some of
        many, read a page with ``groups_page``."""
    def groups_page(self, cursor: str | None = None, count: int | None = None) -> CappedGroupPage:
        """About ``count`` (1 to 250, default 100) of the groups holding data, from ``cursor`` (None: the
        start), in no particular order, and the cursor of the next page (None after the last).
        Each call costs about ``count`` groups' work, however many there are."""
    def stats(self) -> CappedStats:
        """Queue-wide counters."""
    def consume(
        self,
        handler: _Handler,
        *,
        concurrency: Optional[int] = None,
        batch_size: Optional[int] = None,
        groups: Optional[list[str]] = None,
        exclude: Optional[list[str]] = None,
        poll_interval: Optional[_Seconds] = None,
        grace: Optional[_Seconds] = None,
        stop_when_empty: Optional[bool] = None,
    ) -> Consumer:
        """Start consuming in the background.

        ``handler(group, items)`` per batch.

        Plain handlers run in worker threads; ``async def`` handlers on a private event loop per
        batch (``AsyncCappedQueue.consume`` is called from a running event loop, on which its
        ``async def`` handlers run). A handler exception is logged on the ``tideq`` logger and the batch is not
        redelivered. ``groups``: serve only these; ``exclude``: skip these. Options not given
        take the core's defaults: ``concurrency`` 1, ``batch_size`` 128, ``poll_interval`` 2 s,
        ``grace`` 10 s, ``stop_when_empty`` False."""
    def run(
        self,
        handler: _Handler,
        *,
        concurrency: Optional[int] = None,
        batch_size: Optional[int] = None,
        groups: Optional[list[str]] = None,
        exclude: Optional[list[str]] = None,
        poll_interval: Optional[_Seconds] = None,
        grace: Optional[_Seconds] = None,
        stop_when_empty: Optional[bool] = None,
    ) -> ConsumerStats:
        """``consume()``, then wait until the consumer stops.

        ``consume()`` and block until SIGINT/SIGTERM (graceful stop) or ``stop_when_empty``;
        raises the error the consumer stopped on, if any. ``AsyncCappedQueue.run`` is awaited
        instead, and cancelling it stops the consumer gracefully too."""

@final
class Encryption:
    """A queue's encryption at rest (``Queue(..., encryption=...)``, ``CappedQueue(...,
    encryption=...)``): AES-256-GCM over payloads, results, progress, log lines and error texts
    (a capped queue's items) before they reach Redis. ``current_key`` is the
    key id new values are sealed with; ``keys`` maps key ids to 32-byte keys; ``key_provider``
    (called with a key id, returning its 32 bytes or ``None``; an ``async def`` is run to its end
    on an event loop of its own) is asked for any other id, once per id (a tenant's keys from a
    key service). Keep old keys readable while a new one is current to
    rotate without downtime. A bad key raises ``InvalidArgumentError`` here, before anything is
    written."""

    def __new__(
        cls,
        current_key: str,
        keys: Optional[dict[str, bytes]] = None,
        key_provider: Optional[
            Callable[[str], Union[Optional[bytes], Awaitable[Optional[bytes]]]]
        ] = None,
    ) -> Encryption: ...
    @property
    def current_key(self) -> str:
        """The key id new values are sealed with."""

@final
class Backoff:
    """A retry delay policy. ``None`` where a backoff is accepted means the core default:
    exponential from 1 s, doubling, capped at 1 h, with jitter."""

    @staticmethod
    def fixed(delay: _Seconds) -> Backoff:
        """The same ``delay`` (seconds) before every retry, no jitter."""
    @staticmethod
    def exponential(
        base: Optional[_Seconds] = None, max: Optional[_Seconds] = None, jitter: Optional[bool] = None
    ) -> Backoff:
        """``base`` seconds before the first retry, doubling up to ``max``; with ``jitter`` each
        delay is drawn from [delay/2, delay]. Not given (or None): as in the default backoff
        (1 s, 3600 s, jitter)."""
    @property
    def kind(self) -> str:
        """``"fixed"`` or ``"exponential"``."""
    @property
    def base(self) -> float:
        """First delay, in seconds."""
    @property
    def max(self) -> float:
        """Longest delay, in seconds."""
    @property
    def jitter(self) -> bool: ...
    def to_dict(self) -> dict[str, Any]:
        """The fields as a plain ``dict``, one key per property (value objects in them, or in
        a list in them, as dicts too).

        Value objects compare equal when they are of the same class with equal fields, and
        then hash alike: every value class is hashable (a stored result or progress counts
        by its bytes). They pickle and copy by value."""

@final
class Enqueued:
    """What ``enqueue`` did."""

    @property
    def id(self) -> str: ...
    @property
    def created(self) -> bool:
        """False when a job with this id already existed (nothing was written)."""
    def to_dict(self) -> dict[str, Any]:
        """The fields as a plain ``dict``, one key per property (value objects in them, or in
        a list in them, as dicts too).

        Value objects compare equal when they are of the same class with equal fields, and
        then hash alike: every value class is hashable (a stored result or progress counts
        by its bytes). They pickle and copy by value."""

@final
class Job:
    """A leased job, as a worker hands it to the handler."""

    @property
    def id(self) -> str: ...
    @property
    def payload(self) -> bytes: ...
    @property
    def attempt(self) -> int:
        """1 on the first delivery."""
    @property
    def max_attempts(self) -> int: ...
    @property
    def enqueued_at(self) -> float:
        """When the job was enqueued, epoch seconds by the Redis clock."""
    @property
    def started_at(self) -> float:
        """When this attempt started (the job was leased), epoch seconds by the Redis clock."""
    @property
    def queue(self) -> str:
        """Name of the queue the job came from."""
    @property
    def timeout(self) -> Optional[float]:
        """Longest run time of this attempt, in seconds (None: no limit)."""
    @property
    def task(self) -> Optional[str]:
        """The task's name, when the job was enqueued as a task (None otherwise)."""
    @property
    def format(self) -> Optional[str]:
        """How the payload encodes the task's arguments: ``"json"``, ``"msgpack"``, or None (raw
        bytes)."""
    @property
    def args_from(self) -> Optional[Literal["previous", "children"]]:
        """Where the payload came from when it was filled in from the job's children's results:
        ``"previous"`` (a chain's link: the previous link's result) or ``"children"`` (a chord's
        callback: the list of its children's results); None for any other job. A task function
        of such a job gets the value as its one argument."""
    @property
    def trace(self) -> Optional[dict[str, str]]:
        """The producer's trace context, as W3C Trace Context headers (``traceparent``, and
        ``tracestate`` when set), or None: what ``enqueue(trace=...)`` gave, or the producer's
        current span's (OpenTelemetry). A worker's span continues it."""
    @property
    def cancelled(self) -> bool:
        """True once the handler should stop: the attempt's ``timeout`` passed, the job's ``cancel``
        was requested, or the worker is shutting down and its grace period is over. A
        plain-function handler that can stop early (a long loop, a wait) should check it and
        raise: the job is then retried (timeout), ends cancelled (cancel) or is returned to the
        queue (shutdown). Until the handler returns, its job keeps its slot and
        its lease; one that returns normally at shutdown completes its job. (``async def``
        handlers are cancelled instead: their task gets ``asyncio.CancelledError``.)"""
    def text(self) -> str:
        """The payload decoded as UTF-8 (``UnicodeDecodeError`` if it is not)."""
    def json(self) -> Any:
        """The payload parsed as JSON (``json.loads``)."""
    def args(self) -> Any:
        """The task's arguments decoded from the payload by its format (JSON or MessagePack) as
        Python values. ``InvalidArgumentError`` for a raw job (no format) or arguments that do not
        decode."""
    def progress(self, value: Any) -> None:
        """Store ``value`` as the job's progress now, replacing the last one.

        ``get(id).progress`` shows it. ``value`` is JSON-encoded (bytes are stored as they are);
        at most the queue's ``max_result_len`` bytes (else ``PayloadTooLargeError``).
        ``LeaseLostError`` when the job's lease was lost (it was redelivered). Blocks for one Redis
        round trip (the GIL released); in an ``async def`` handler, ``await
        job.progress_async(value)``."""
    def progress_async(self, value: Any) -> Coroutine[Any, Any, None]:
        """``progress(value)`` as an awaitable, for ``async def`` handlers."""
    def children_results(self) -> list[ChildResult]:
        """How this job's children ended, as ``ChildResult``s (a flow's parent, ``enqueue_flow``):
        every child has finished by the time a parent runs. Empty for a job without children.
        Blocks for the Redis round trips (the GIL released); in an ``async def`` handler, ``await
        job.children_results_async()``."""
    def children_results_async(self) -> Coroutine[Any, Any, list[ChildResult]]:
        """``children_results()`` as an awaitable, for ``async def`` handlers."""
    def log(self, line: str) -> None:
        """Add ``line`` (a ``str``) to the job's log, stamped with the Redis time and this attempt.

        ``get(id).logs`` and ``job_logs(id)`` read it; ``tideq job`` and the dashboard show it.
        A line holds at most 4096 bytes (else ``InvalidArgumentError``, nothing written); the log
        keeps the newest 1000 lines within 64 KiB and goes with the job. ``LeaseLostError`` when
        the lease was lost. Blocks for one Redis round trip (the GIL released); in an ``async
        def`` handler, ``await job.log_async(line)``."""
    def log_async(self, line: str) -> Coroutine[Any, Any, None]:
        """``log(line)`` as an awaitable, for ``async def`` handlers."""

@final
class JobPage:
    """A page of one state's jobs (``Queue.jobs_page``) and the cursor of the next page."""

    @property
    def jobs(self) -> list[JobInfo]:
        """The page's jobs, in the state's order."""
    @property
    def cursor(self) -> str | None:
        """Give it to the next ``jobs_page`` call; None when this was the last page."""
    def to_dict(self) -> dict[str, Any]:
        """The fields as a plain ``dict``, one key per property (value objects in them, or in
        a list in them, as dicts too).

        Value objects compare equal when they are of the same class with equal fields, and
        then hash alike: every value class is hashable (a stored result or progress counts
        by its bytes). They pickle and copy by value."""

@final
class JobSearch:
    """A page of a search (``Queue.find_jobs``): the matching jobs, the cursor to go on with, and
    how many jobs the call looked at."""

    @property
    def jobs(self) -> list[JobInfo]:
        """The matching jobs this call found (at most ``limit``)."""
    @property
    def cursor(self) -> str | None:
        """Give it to the next ``find_jobs`` call, with the same filter; None when the search is over."""
    @property
    def scanned(self) -> int:
        """How many jobs this call looked at (at most 2000), counting the delayed and running
        grouped jobs it passed over on the way to the ready ones."""
    def to_dict(self) -> dict[str, Any]:
        """The fields as a plain ``dict``, one key per property (value objects in them, or in
        a list in them, as dicts too).

        Value objects compare equal when they are of the same class with equal fields, and
        then hash alike: every value class is hashable (a stored result or progress counts
        by its bytes). They pickle and copy by value."""

@final
class JobInfo:
    """A job as ``get``, ``jobs`` and ``dead_letters`` report it."""

    @property
    def id(self) -> str: ...
    @property
    def state(self) -> _JobState:
        """``"delayed"``, ``"ready"``, ``"active"``, ``"dead"``, ``"completed"``, or ``"waiting"``: a
        flow's job waiting for its children (``get`` only: no state lists it)."""
    @property
    def payload(self) -> bytes: ...
    @property
    def task(self) -> Optional[str]:
        """The task's name, for a job enqueued as a task (``enqueue_task``, ``@task``); None for a
        raw payload."""
    @property
    def attempts(self) -> int:
        """Deliveries so far."""
    @property
    def max_attempts(self) -> int: ...
    @property
    def last_error(self) -> Optional[str]:
        """Error text of the last failed attempt (``"ExcType: message"`` for Python handlers)."""
    @property
    def enqueued_at(self) -> float:
        """Epoch seconds, Redis clock."""
    @property
    def state_since_or_until(self) -> Optional[float]:
        """Epoch seconds, Redis clock: delayed, when due; active, the lease deadline; dead, the
        time of death; completed, the finish time; ready, None."""
    @property
    def priority(self) -> Optional[int]:
        """The job's priority (1 runs first), or None."""
    @property
    def group(self) -> Optional[str]:
        """The job's group, or None."""
    @property
    def cost(self) -> int:
        """The tokens it takes from a token-bucket rate when it starts (1 unless enqueued with
        another ``cost``)."""
    @property
    def unreadable(self) -> Optional[str]:
        """Why the stored job could not be read (a damaged record: such a job is dead-lettered),
        or None; ``payload`` then holds the stored envelope's raw bytes."""
    @property
    def result(self) -> Any:
        """What the handler returned (a completed job), decoded from JSON; the raw bytes when they
        are not JSON (e.g. bytes returned as they are); None when it returned nothing."""
    @property
    def result_bytes(self) -> Optional[bytes]:
        """The stored result's raw bytes, or None."""
    @property
    def progress(self) -> Any:
        """The last progress the handler reported (``job.progress``), decoded as ``result`` is; None
        when none."""
    @property
    def progress_bytes(self) -> Optional[bytes]:
        """The stored progress's raw bytes, or None."""
    @property
    def parent(self) -> Optional[tuple[str, str]]:
        """A flow's child: its parent, as ``(queue, id)``; None otherwise."""
    @property
    def parents(self) -> list[tuple[str, str]]:
        """Every job this one's outcome is reported to, as ``(queue, id)``: its parent in a flow,
        each job that runs after it in a graph; empty for any other job."""
    @property
    def children_pending(self) -> Optional[int]:
        """A flow's job waiting for its children: how many have not finished yet; None otherwise."""
    @property
    def started_at(self) -> Optional[int]:
        """When its last attempt (or the one under way) started, epoch milliseconds (Redis clock);
        None when unknown."""
    @property
    def run_ms(self) -> Optional[int]:
        """How long its last finished attempt ran (ms); None when unknown."""
    @property
    def worker(self) -> Optional[str]:
        """The worker that ran its last attempt; None when unknown."""
    @property
    def attempt_history(self) -> list[Attempt]:
        """Its attempts, oldest first (the first 3 and the last 20 are kept), as ``Attempt``s:
        read by ``get``; empty in lists."""
    @property
    def logs(self) -> list[LogLine]:
        """Its log (``job.log``), oldest first, as ``LogLine``s: read by ``get``; empty in lists."""
    def to_dict(self) -> dict[str, Any]:
        """The fields as a plain ``dict``, one key per property (value objects in them, or in
        a list in them, as dicts too).

        Value objects compare equal when they are of the same class with equal fields, and
        then hash alike: every value class is hashable (a stored result or progress counts
        by its bytes). They pickle and copy by value."""

@final
class JobStats:
    """Jobs per state, and lifetime counters of the queue (kept in Redis)."""

    @property
    def delayed(self) -> int: ...
    @property
    def ready(self) -> int: ...
    @property
    def active(self) -> int: ...
    @property
    def dead(self) -> int: ...
    @property
    def completed_kept(self) -> int:
        """Completed jobs kept now (``keep_completed``, ``keep_for``): what
        ``jobs("completed")`` lists. ``completed`` counts every job ever completed."""
    @property
    def waiting(self) -> int:
        """Flow jobs waiting for their children."""
    @property
    def enqueued(self) -> int:
        """Jobs created (an id that already existed is not counted)."""
    @property
    def completed(self) -> int:
        """Jobs completed, ever (``completed_kept`` of them are kept)."""
    @property
    def dead_lettered(self) -> int:
        """Jobs that exhausted their attempts (dead-lettered)."""
    @property
    def retried(self) -> int:
        """Failed attempts scheduled for a retry."""
    @property
    def recovered(self) -> int:
        """Expired leases recovered (a worker died or stalled)."""
    @property
    def cancelled(self) -> int: ...
    @property
    def snoozed(self) -> int:
        """Deliveries whose handler raised ``Snooze`` or ``BackOff`` (not counted as attempts)."""
    @property
    def expired(self) -> int:
        """Jobs not started by their deadline (``expires_after``, ``expires_at``): dead-lettered
        without running."""
    @property
    def dead_trimmed(self) -> int:
        """Dead jobs deleted by the ``keep_dead`` / ``keep_dead_for`` bounds."""
    @property
    def lost(self) -> int:
        """Jobs found with their data missing (evicted by Redis, or deleted by hand) and removed,
        since they could not run. Unreadable ones are dead-lettered instead."""
    @property
    def paused(self) -> bool:
        """True when the queue is paused (``pause()``): workers start nothing."""
    @property
    def latency(self) -> float:
        """Seconds the job next in line that waited longest has been ready to start (0.0 when no
        job is ready): since its enqueue, or since it became ready later (a delayed job's or a
        retry's due time, a release, a requeue). Due delayed jobs count before a worker picks them
        up, so it grows with no worker running: the number to scale workers on. Read from the
        first jobs in line and the first 100 groups in turn; the longest over the shards."""
    def to_dict(self) -> dict[str, Any]:
        """The fields as a plain ``dict``, one key per property (value objects in them, or in
        a list in them, as dicts too).

        Value objects compare equal when they are of the same class with equal fields, and
        then hash alike: every value class is hashable (a stored result or progress counts
        by its bytes). They pickle and copy by value."""

@final
class FlowJob:
    """One job of a flow, and the jobs it waits for (``children``): give the root to
    ``Queue.enqueue_flow``.

    A job is a ``payload`` (bytes-like) or a ``task`` run by name with ``data`` as its arguments
    (encoded as ``format`` says, as ``enqueue_task`` does), never both. It goes to ``queue`` (a
    ``Queue`` or ``AsyncQueue`` of the same Redis), or else to its parent's (the root: the queue
    ``enqueue_flow`` is called on). A parent runs once every one of its children finished, and
    reads how they ended with ``job.children_results()``. ``on_failure`` is what this job's
    failure (dead-lettered, expired, cancelled or lost) does to its parent: ``"fail"`` (the
    default) dead-letters the parent at once, its error naming this job; ``"ignore"`` runs the
    parent anyway, this job's result showing as ``"ignored"``; ``"continue"`` runs the parent
    once all its children finished, this job's result showing as ``"failed"`` (or ``"expired"``,
    ...). The other options are ``enqueue``'s, but no ``dedup`` or ``debounce``. A task without
    ``data`` is a step: as a chain's link or a chord's callback (``chain``, ``chord``) it gets
    its children's results as its argument (elsewhere, None). A FlowJob is a description
    (nothing is written until ``enqueue_flow``) and may be reused."""

    def __new__(
        cls,
        payload: Optional[_BytesLike] = None,
        *,
        task: Optional[str] = None,
        data: Any = None,
        format: Optional[_Format] = None,
        queue: Union[Queue, AsyncQueue, None] = None,
        children: Optional[Iterable[FlowJob]] = None,
        on_failure: Optional[_OnChildFailure] = None,
        id: Optional[str] = None,
        delay: Optional[_Seconds] = None,
        run_at: Optional[_When] = None,
        max_attempts: Optional[int] = None,
        backoff: Optional[Backoff] = None,
        timeout: Optional[_Seconds] = None,
        priority: Optional[int] = None,
        group: Optional[str] = None,
        trace: Optional[_Trace] = None,
        expires_after: Optional[_Seconds] = None,
        expires_at: Optional[_When] = None,
        cost: Optional[int] = None,
    ) -> FlowJob: ...
    @property
    def id(self) -> Optional[str]:
        """The job's id, or None when it gets a random one (``enqueue_flow`` returns the root's)."""
    @property
    def queue(self) -> Optional[str]:
        """The name of the queue given as ``queue=``, or None (its parent's)."""
    @property
    def task(self) -> Optional[str]:
        """The task's name, or None for a payload job."""
    @property
    def children(self) -> tuple[FlowJob, ...]:
        """The jobs this one waits for."""
    @property
    def on_failure(self) -> _OnChildFailure:
        """What this job's failure does to its parent: ``"fail"``, ``"ignore"`` or ``"continue"``."""

@final
class GraphNode:
    """One job of a graph: ``id`` (its job id, unique in the graph), ``job`` (a ``FlowJob`` without
    children) and ``after``, the ids of the jobs it runs after, each an id or an ``(id,
    on_failure)`` pair whose ``on_failure`` ("fail", "ignore", "continue") is what that job's
    failure does to this one (else that job's own ``on_failure``). Give a list of them to
    ``Queue.enqueue_graph``."""

    def __new__(
        cls,
        id: str,
        job: FlowJob,
        *,
        after: Optional[Iterable[Union[str, tuple[str, _OnChildFailure]]]] = None,
    ) -> GraphNode: ...
    @property
    def id(self) -> str:
        """The job's id."""
    @property
    def after(self) -> list[str]:
        """The ids of the jobs it runs after."""

@final
class ChildResult:
    """One finished child of a parent, as ``children_results`` lists it."""

    @property
    def queue(self) -> str:
        """The child's queue."""
    @property
    def id(self) -> str:
        """The child's id."""
    @property
    def outcome(self) -> _ChildOutcome:
        """How it ended: ``"completed"``, ``"failed"`` (dead-lettered), ``"expired"`` (not started
        by its deadline), ``"cancelled"``, ``"lost"`` (its data went missing) or ``"ignored"``
        (failed, under ``on_failure="ignore"``)."""
    @property
    def result(self) -> Optional[bytes]:
        """What a completed child's handler returned, as stored (JSON, or bytes returned as they
        are); None when it returned nothing or did not complete."""
    @property
    def error(self) -> Optional[str]:
        """Why a child failed: its last error (``"failed"``, ``"expired"``), or for ``"ignored"``
        that error, ``"cancelled"`` or ``"lost"``; None otherwise."""
    def json(self) -> Any:
        """The result parsed as JSON (``json.loads``); None without a result."""
    def to_dict(self) -> dict[str, Any]:
        """The fields as a plain ``dict``, one key per property (value objects in them, or in
        a list in them, as dicts too).

        Value objects compare equal when they are of the same class with equal fields, and
        then hash alike: every value class is hashable (a stored result or progress counts
        by its bytes). They pickle and copy by value."""

@final
class ScheduleInfo:
    """A schedule as ``schedules()`` lists it."""

    @property
    def name(self) -> str: ...
    @property
    def cron(self) -> Optional[str]:
        """The cron pattern, or None for an interval schedule."""
    @property
    def timezone(self) -> Optional[str]:
        """The cron pattern's time zone (an IANA name), or None (UTC, or an interval schedule)."""
    @property
    def every(self) -> Optional[float]:
        """The interval in seconds, or None for a cron schedule."""
    @property
    def payload(self) -> bytes:
        """The payload each job gets."""
    @property
    def next_run_ms(self) -> Optional[int]:
        """The next slot, epoch milliseconds by the Redis clock; None when the pattern has no more."""
    @property
    def paused(self) -> bool:
        """True while paused (``pause_schedule``): it keeps its next slot and does not fire."""
    @property
    def last_job_id(self) -> Optional[str]:
        """The id of the last job the schedule enqueued (a slot fired, or ``run_schedule``); None
        before its first."""
    @property
    def last_job_state(self) -> Optional[str]:
        """That job's state: ``"delayed"``, ``"ready"``, ``"active"``, ``"completed"``, ``"dead"``,
        or ``"gone"`` once the queue no longer keeps it; None before its first job."""
    @property
    def task(self) -> Optional[str]:
        """The task each job runs (its name), or None."""
    @property
    def format(self) -> Optional[str]:
        """How the payload encodes the task's arguments: ``"json"``, ``"msgpack"``, or None."""
    @property
    def priority(self) -> Optional[int]:
        """Each job's priority, or None."""
    @property
    def group(self) -> Optional[str]:
        """Each job's group, or None."""
    @property
    def max_attempts(self) -> Optional[int]:
        """Each job's ``max_attempts``, or None (the queue's)."""
    @property
    def backoff(self) -> Optional[Backoff]:
        """Each job's backoff, or None (the queue's)."""
    @property
    def timeout(self) -> Optional[float]:
        """Each job's timeout in seconds, or None (the queue's)."""
    def to_dict(self) -> dict[str, Any]:
        """The fields as a plain ``dict``, one key per property (value objects in them, or in
        a list in them, as dicts too).

        Value objects compare equal when they are of the same class with equal fields, and
        then hash alike: every value class is hashable (a stored result or progress counts
        by its bytes). They pickle and copy by value."""


@final
class WorkerInfo:
    """A live worker as ``workers()`` lists it."""

    @property
    def id(self) -> str:
        """The worker's id (random, new for each worker)."""
    @property
    def queue(self) -> str:
        """The queue it works."""
    @property
    def host(self) -> str:
        """The host name of its machine."""
    @property
    def pid(self) -> int:
        """Its process id."""
    @property
    def runtime(self) -> str:
        """The runtime of its handlers: ``"python"``, ``"node"`` or ``"rust"``."""
    @property
    def version(self) -> str:
        """The tideq version it runs."""
    @property
    def concurrency(self) -> int:
        """Jobs it runs at the same time, at most."""
    @property
    def running(self) -> int:
        """Jobs it was running when last seen."""
    @property
    def running_ids(self) -> list[str]:
        """The ids of up to 10 of them."""
    @property
    def started_at_ms(self) -> int:
        """When it started, epoch milliseconds by its machine's clock."""
    @property
    def last_seen_at_ms(self) -> int:
        """When it was last seen, epoch milliseconds by the Redis clock."""
    def to_dict(self) -> dict[str, Any]:
        """The fields as a plain ``dict``, one key per property (value objects in them, or in
        a list in them, as dicts too).

        Value objects compare equal when they are of the same class with equal fields, and
        then hash alike: every value class is hashable (a stored result or progress counts
        by its bytes). They pickle and copy by value."""

@final
class Attempt:
    """One attempt of a job (``JobInfo.attempt_history``)."""

    @property
    def attempt(self) -> int:
        """The attempt's number (1 the first)."""
    @property
    def started_at(self) -> Optional[int]:
        """When it started, epoch milliseconds (Redis clock); None when unknown (a lost attempt)."""
    @property
    def ended_at(self) -> Optional[int]:
        """When it ended, epoch milliseconds (Redis clock); a lost one: when its lease was found
        expired."""
    @property
    def duration_ms(self) -> Optional[int]:
        """How long it ran (ms); None when its start is unknown."""
    @property
    def worker(self) -> Optional[str]:
        """The worker that ran it (its id, as ``workers()`` lists it); None when unknown."""
    @property
    def outcome(self) -> str:
        """``"completed"``, ``"failed"`` or ``"lost"`` (its lease expired: its worker died or lost
        Redis)."""
    @property
    def error(self) -> Optional[str]:
        """Its error (``"ExcType: message"``); None for a completed attempt."""
    @property
    def trace(self) -> Optional[str]:
        """The handler's traceback (``traceback.format_exception``), when it raised; None otherwise."""
    def to_dict(self) -> dict[str, Any]:
        """The fields as a plain ``dict``, one key per property (value objects in them, or in
        a list in them, as dicts too).

        Value objects compare equal when they are of the same class with equal fields, and
        then hash alike: every value class is hashable (a stored result or progress counts
        by its bytes). They pickle and copy by value."""


@final
class LogLine:
    """One line of a job's log (``job.log``)."""

    @property
    def at_ms(self) -> int:
        """When it was logged, epoch milliseconds (Redis clock)."""
    @property
    def attempt(self) -> int:
        """The attempt that logged it."""
    @property
    def line(self) -> str:
        """The line."""
    def to_dict(self) -> dict[str, Any]:
        """The fields as a plain ``dict``, one key per property (value objects in them, or in
        a list in them, as dicts too).

        Value objects compare equal when they are of the same class with equal fields, and
        then hash alike: every value class is hashable (a stored result or progress counts
        by its bytes). They pickle and copy by value."""


@final
class HistoryPoint:
    """One step of a queue's history, as ``history()`` lists it."""

    @property
    def at_ms(self) -> int:
        """The start of the step, epoch milliseconds by the Redis clock (UTC)."""
    @property
    def enqueued(self) -> int:
        """Jobs enqueued."""
    @property
    def completed(self) -> int:
        """Jobs completed."""
    @property
    def retried(self) -> int:
        """Failed attempts that were retried."""
    @property
    def dead_lettered(self) -> int:
        """Jobs dead-lettered."""
    @property
    def failed(self) -> int:
        """Attempts that failed: ``retried + dead_lettered``."""
    @property
    def cancelled(self) -> int:
        """Jobs cancelled."""
    @property
    def lateness_ms(self) -> Optional[float]:
        """Mean lateness (ms) of the delayed jobs and retries promoted in the step; None if none."""
    def to_dict(self) -> dict[str, Any]:
        """The fields as a plain ``dict``, one key per property (value objects in them, or in
        a list in them, as dicts too).

        Value objects compare equal when they are of the same class with equal fields, and
        then hash alike: every value class is hashable (a stored result or progress counts
        by its bytes). They pickle and copy by value."""


@final
class TaskMetrics:
    """One task's counts over a window, as ``task_metrics()`` lists them."""

    @property
    def task(self) -> str:
        """The task's name: ``""`` for jobs without one, ``"(other)"`` for names past the 100 tracked."""
    @property
    def completed(self) -> int:
        """Jobs completed."""
    @property
    def failed(self) -> int:
        """Attempts that failed (retried or dead-lettered)."""
    @property
    def dead_lettered(self) -> int:
        """Jobs dead-lettered."""
    @property
    def runs(self) -> int:
        """Handler runs."""
    @property
    def run_ms_sum(self) -> float:
        """Their run time, summed (ms)."""
    @property
    def run_ms_avg(self) -> Optional[float]:
        """Their mean run time (ms); None without runs."""
    def to_dict(self) -> dict[str, Any]:
        """The fields as a plain ``dict``, one key per property (value objects in them, or in
        a list in them, as dicts too).

        Value objects compare equal when they are of the same class with equal fields, and
        then hash alike: every value class is hashable (a stored result or progress counts
        by its bytes). They pickle and copy by value."""


@final
class ServerInfo:
    """The Redis server's state, as ``Client.server_info()`` gives it."""

    @property
    def server(self) -> str:
        """``"redis"`` or ``"valkey"``."""
    @property
    def version(self) -> str:
        """The server's version, e.g. ``"7.0.15"``."""
    @property
    def used_memory(self) -> int:
        """Memory used, in bytes."""
    @property
    def maxmemory(self) -> int:
        """The memory limit in bytes (``maxmemory``); 0: none."""
    @property
    def maxmemory_policy(self) -> str:
        """``maxmemory-policy``."""
    @property
    def evicts(self) -> bool:
        """True when that policy evicts keys (anything but ``noeviction``): jobs can be lost."""
    @property
    def connected_clients(self) -> int:
        """Clients connected."""
    @property
    def ops_per_sec(self) -> int:
        """Commands per second, as the server measures it now."""
    @property
    def uptime_secs(self) -> int:
        """Seconds since the server started."""
    @property
    def nodes(self) -> int:
        """Nodes that answered (more than 1 on a cluster only)."""
    def to_dict(self) -> dict[str, Any]:
        """The fields as a plain ``dict``, one key per property (value objects in them, or in
        a list in them, as dicts too).

        Value objects compare equal when they are of the same class with equal fields, and
        then hash alike: every value class is hashable (a stored result or progress counts
        by its bytes). They pickle and copy by value."""


@final
class Event:
    """One event of a queue's event log (see ``Queue.events``)."""

    @property
    def kind(self) -> _EventKind:
        """What happened: ``"enqueued"``, ``"active"``, ``"progress"``, ``"completed"``,
        ``"failed"``, ``"retried"``, ``"dead"``, ``"cancelled"``, ``"snoozed"`` (the handler raised
        ``Snooze`` or ``BackOff``), ``"expired"`` (not started by its deadline), or ``"lagged"``
        (not a job's event: the reader fell behind the log's length, ``data`` says how much it
        missed)."""
    @property
    def job_id(self) -> str:
        """The job's id (empty for ``"lagged"``)."""
    @property
    def data(self) -> Optional[bytes]:
        """The event's raw data, or None: ``"active"`` the attempt number, ``"progress"`` the value
        reported, ``"completed"`` what the handler returned, ``"failed"``, ``"dead"`` and
        ``"expired"`` the error, ``"retried"`` and ``"snoozed"`` the delay in ms (``"retried"``: or why), ``"lagged"``
        how much was missed."""
    @property
    def data_omitted_bytes(self) -> Optional[int]:
        """When data over 1 KiB was left out of the log (``data`` is then None): its size in bytes.
        A completed job's result kept with the job is given in full instead; this is set when it
        was not kept or is gone (look it up with ``Queue.get``)."""
    @property
    def at_ms(self) -> int:
        """When it happened, epoch milliseconds by the Redis clock."""
    @property
    def value(self) -> Any:
        """``data`` decoded as ``JobInfo.result`` is: the JSON value it holds, else the bytes
        themselves; None when there is no data."""
    def to_dict(self) -> dict[str, Any]:
        """The fields as a plain ``dict``, one key per property (value objects in them, or in
        a list in them, as dicts too).

        Value objects compare equal when they are of the same class with equal fields, and
        then hash alike: every value class is hashable (a stored result or progress counts
        by its bytes). They pickle and copy by value."""

@final
class EventReader:
    """A reader of a queue's event log, blocking API: ``for event in reader`` waits for each event
    (the GIL released; Ctrl-C interrupts it).

    Used as a context manager, it stores a named reader's place on leaving (``commit()``)."""

    def __iter__(self) -> EventReader: ...
    def __next__(self) -> Event: ...
    def next(self, timeout: Optional[_Seconds] = None) -> Optional[Event]:
        """The next event, waiting up to ``timeout`` seconds (None: no limit); None when none came
        in time.

        A named reader's place is stored each time it reads more from Redis (the events it had
        taken so far), so one started again after a crash gets again at most what it took since."""
    def commit(self) -> None:
        """Store a named reader's place (the events it has taken so far); nothing for an unnamed
        one.

        Each read stores it before reading more, so call this when you stop reading (leaving the
        reader's ``with`` block does)."""
    def __enter__(self) -> EventReader: ...
    def __exit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc_value: Optional[BaseException],
        traceback: Optional[types.TracebackType],
    ) -> None:
        """Store a named reader's place (``commit()``); exceptions go on."""

@final
class Rate:
    """At most ``max`` job starts in any window of ``per_seconds``; with ``burst``, a token bucket
    holding up to ``burst`` starts, refilled at ``max`` per ``per_seconds``."""

    def __new__(cls, max: int, per_seconds: _Seconds, burst: Optional[int] = None) -> Rate: ...
    @property
    def max(self) -> int:
        """Most starts per window (a bucket: the starts it refills per window)."""
    @property
    def per_seconds(self) -> float:
        """The window, in seconds."""
    @property
    def burst(self) -> Optional[int]:
        """A token bucket's capacity: the most starts at once; None for a sliding window."""
    def to_dict(self) -> dict[str, Any]:
        """The fields as a plain ``dict``, one key per property (value objects in them, or in
        a list in them, as dicts too).

        Value objects compare equal when they are of the same class with equal fields, and
        then hash alike: every value class is hashable (a stored result or progress counts
        by its bytes). They pickle and copy by value."""

@final
class Limits:
    """The queue's limits, as ``limits()`` reads them (None: no limit)."""

    @property
    def max_active(self) -> Optional[int]:
        """At most this many jobs of the queue running at once, across all workers."""
    @property
    def rate(self) -> Optional[Rate]:
        """At most this many job starts per window, across all workers."""
    @property
    def group_concurrency(self) -> Optional[int]:
        """Each group: at most this many of its jobs running at once (groups without their own)."""
    @property
    def group_rate(self) -> Optional[Rate]:
        """Each group: at most this many starts per window (groups without their own)."""
    def to_dict(self) -> dict[str, Any]:
        """The fields as a plain ``dict``, one key per property (value objects in them, or in
        a list in them, as dicts too).

        Value objects compare equal when they are of the same class with equal fields, and
        then hash alike: every value class is hashable (a stored result or progress counts
        by its bytes). They pickle and copy by value."""

@final
class GroupPage:
    """A page of groups (``Queue.groups_page``) and the cursor of the next page."""

    @property
    def groups(self) -> list[GroupInfo]:
        """The page's groups, in no particular order."""
    @property
    def cursor(self) -> str | None:
        """Give it to the next ``groups_page`` call; None when this was the last page."""
    def to_dict(self) -> dict[str, Any]:
        """The fields as a plain ``dict``, one key per property (value objects in them, or in
        a list in them, as dicts too).

        Value objects compare equal when they are of the same class with equal fields, and
        then hash alike: every value class is hashable (a stored result or progress counts
        by its bytes). They pickle and copy by value."""

@final
class GroupInfo:
    """What a group holds and obeys now."""

    @property
    def group(self) -> str:
        """The group's name."""
    @property
    def ready(self) -> int:
        """Jobs ready to start (not delayed)."""
    @property
    def active(self) -> int:
        """Jobs running."""
    @property
    def paused(self) -> bool:
        """True when the group is paused (``pause_group``)."""
    @property
    def concurrency(self) -> Optional[int]:
        """The concurrency limit in force (its own, else the queue's default), or None."""
    @property
    def rate(self) -> Optional[Rate]:
        """The start rate in force (its own, else the queue's default), or None."""
    @property
    def latency(self) -> Optional[float]:
        """Seconds the longest-ready of its next 10 jobs has been ready (0.0 when none is). Read by
        ``group(name)`` only: None in ``groups()`` and ``groups_page()``."""
    @property
    def limiter(self) -> Optional[str]:
        """The shared limiter the group's starts take from (``set_group_limiter``), or None."""
    def to_dict(self) -> dict[str, Any]:
        """The fields as a plain ``dict``, one key per property (value objects in them, or in
        a list in them, as dicts too).

        Value objects compare equal when they are of the same class with equal fields, and
        then hash alike: every value class is hashable (a stored result or progress counts
        by its bytes). They pickle and copy by value."""

@final
class WorkerStats:
    """What a worker has done so far, in this process."""

    @property
    def completed(self) -> int:
        """Jobs whose handler returned and whose completion was accepted."""
    @property
    def failed(self) -> int:
        """Attempts that failed (handler raised, or timed out)."""
    @property
    def lease_lost(self) -> int:
        """Results refused because the lease had expired and the job was redelivered."""
    @property
    def released(self) -> int:
        """Unfinished jobs returned to the queue at shutdown."""
    @property
    def fetch_errors(self) -> int:
        """Fetches or waits that failed (e.g. Redis unreachable) and were retried with backoff."""
    @property
    def cancelled(self) -> int:
        """Jobs that ended cancelled: their ``cancel`` was requested while they ran."""
    @property
    def snoozed(self) -> int:
        """Attempts whose handler raised ``Snooze`` or ``BackOff`` (not counted as attempts)."""
    def to_dict(self) -> dict[str, Any]:
        """The fields as a plain ``dict``, one key per property (value objects in them, or in
        a list in them, as dicts too).

        Value objects compare equal when they are of the same class with equal fields, and
        then hash alike: every value class is hashable (a stored result or progress counts
        by its bytes). They pickle and copy by value."""

@final
class Worker:
    """A running worker (blocking API). Dropping it does not stop it: call ``shutdown()``.

    A worker stops by itself when Redis refuses its credentials or permissions (which retrying
    cannot fix; other errors are retried): ``join()``, ``shutdown()`` and ``run()`` then raise
    that error (``AuthError``, ``PermissionDeniedError``), also kept in ``error``."""

    def stop(self) -> None:
        """Stop taking work; running handlers get the grace period.

        A worker fetches no new jobs. Past the grace period, its handlers are asked to stop
        (``job.cancelled``; ``async def`` handlers are cancelled): a job whose handler then raises
        is returned to the queue (its attempt not counted), one whose handler returns is
        completed. Until its handler returns, a job keeps its slot and its lease. A consumer takes
        no new batches; its handlers still running after the grace period are abandoned."""
    def abort(self) -> None:
        """Stop at once, without waiting for running handlers: their jobs are left to their leases
        (run again once a lease expires; a consumer's batches are gone). What a second Ctrl-C in
        ``run()`` does."""
    def join(self, timeout: Optional[_Seconds] = None) -> WorkerStats:
        """Wait until stopped, or ``timeout`` seconds (a timeout too large to be a point in time
        means no limit); returns the stats either way, unless the worker stopped on an error
        (raised)."""
    def shutdown(self) -> WorkerStats:
        """``stop()`` then ``join()``."""
    def __enter__(self) -> Worker: ...
    def __exit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc_value: Optional[BaseException],
        traceback: Optional[types.TracebackType],
    ) -> None:
        """``shutdown()``: running handlers get the grace period; an exception raised in the block
        goes on."""
    def stats(self) -> WorkerStats:
        """Counters so far."""
    def metrics(self) -> str:
        """This worker's own metrics (this process only) in the Prometheus text format.

        Its counters (``tideq_worker_jobs_completed_total``, ...) and its handlers' run times
        (the ``tideq_worker_job_run_seconds`` histogram), labelled with the queue: serve it from
        your own ``/metrics`` endpoint. The queue-wide view, over every worker, is
        ``tideq exporter``'s. Still readable once the worker has stopped."""
    def is_ready(self) -> bool:
        """True while the worker is connected and leasing.

        True once its latest fetch on every shard of the queue succeeded; False before its first
        fetch, from a failed fetch (Redis unreachable, say) until the next one that works, and
        once it stops leasing (stopping, or its ``max_jobs`` reached). What a readiness probe
        asks (``serve(health=...)`` answers ``/readyz`` with it)."""
    @property
    def running(self) -> bool:
        """True until the loop ended and running handlers finished (or were abandoned)."""
    @property
    def error(self) -> Optional[TideqError]:
        """The error it stopped on by itself (as ``join()`` raises it), or None."""

@final
class Queue:
    """A reliable job queue, blocking API (the GIL is released while waiting on Redis).

    Delivery is at-least-once: handlers should be idempotent. Queue-wide defaults:
    ``max_attempts`` deliveries before a job is dead-lettered, ``backoff`` before retries,
    ``timeout`` seconds per attempt (None: no limit); the newest ``keep_completed`` completed jobs
    (past it the oldest go 5% at a time) younger than ``keep_for`` seconds (None: no age limit)
    stay visible to ``get``; error texts
    are cut to ``max_error_len`` bytes. The newest ``keep_dead`` dead jobs (None: no limit)
    younger than ``keep_dead_for`` seconds (None: no age limit) are kept; older ones are deleted
    (counted in ``stats().dead_trimmed``). An ``id`` given to ``enqueue`` is remembered for
    ``idempotency_window`` seconds after its job completed or died, so enqueuing it again within
    that time creates nothing even once the job was trimmed (None: only while the job is kept;
    cancelled and purged jobs' ids are forgotten at once), at most ``idempotency_max_ids`` ids
    (the oldest forgotten first).
    Pass a ``client`` or a ``url`` (neither: ``Client()``).
    Options not given (or None where None has no meaning of its own) take the core's defaults:
    ``max_attempts`` 5, ``Backoff.exponential()``, no ``timeout``, ``keep_completed`` 1000,
    ``keep_for`` one day, ``max_error_len`` 4096, ``keep_dead`` 10000, ``keep_dead_for`` 180
    days, ``idempotency_window`` one day, ``idempotency_max_ids`` 100000, ``max_result_len``
    65536 (the largest result or progress value stored with a job, in bytes: a larger result
    fails the attempt, a larger progress raises ``PayloadTooLargeError``).

    ``shards`` (1 to 1024) splits the queue into that many hash tags, which a Redis Cluster
    spreads over its masters; a job's shard is fixed by its id (so ids stay idempotent and
    ``get``/``cancel`` work), workers serve every shard and ``stats`` adds them up. Every
    handle of a queue must use the same count: the first producer or worker records it in
    Redis, and a handle made with another count raises ``InvalidArgumentError`` at its first
    call (a worker stops on it). Changing it remaps ids: drain the queue, then delete that record
    (``<prefix>:{<queue>}:shards``). Queue names may not contain ``#``.

    ``encryption`` (an ``Encryption``) seals payloads, results, progress, log lines and error
    texts with AES-256-GCM before they reach Redis; ids, task names, groups and priorities stay
    clear. A job sealed with a key the worker's queue cannot get is dead-lettered, its error
    naming the key id.

    Used as a context manager (``with Queue(...) as q:``, ``async with`` for ``AsyncQueue``),
    leaving the block shuts down the workers started from ``q`` that still run, as leaving a
    worker's own ``with`` block does; the queue stays usable. The Redis connections are its
    ``Client``'s (made on first use, shared by the queues on it): they stay open.
    """

    def __new__(
        cls,
        name: str,
        client: Optional[Client] = None,
        *,
        url: Optional[str] = None,
        max_attempts: Optional[int] = None,
        backoff: Optional[Backoff] = None,
        timeout: Optional[_Seconds] = None,
        keep_completed: Optional[int] = None,
        keep_for: Optional[_Seconds] = 86400.0,
        max_error_len: Optional[int] = None,
        keep_dead: Optional[int] = 10000,
        keep_dead_for: Optional[_Seconds] = 15552000.0,
        idempotency_window: Optional[_Seconds] = 86400.0,
        idempotency_max_ids: Optional[int] = None,
        max_result_len: Optional[int] = None,
        shards: int = 1,
        encryption: Optional[Encryption] = None,
    ) -> Queue: ...
    @property
    def name(self) -> str: ...
    @property
    def client(self) -> Client: ...
    @property
    def shards(self) -> int:
        """How many shards (hash tags) the queue is split into."""
    def __enter__(self) -> Queue: ...
    def __exit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc_value: Optional[BaseException],
        traceback: Optional[types.TracebackType],
    ) -> None:
        """Shut down the workers started from this queue that still run (``work``, ``work_batches``,
        ``work_tasks``), as leaving a worker's own ``with`` block does: running handlers get the
        grace period. An exception raised in the block goes on; the queue stays usable."""
    def enqueue(
        self,
        payload: _BytesLike,
        *,
        id: Optional[str] = None,
        delay: Optional[_Seconds] = None,
        run_at: Optional[_When] = None,
        max_attempts: Optional[int] = None,
        backoff: Optional[Backoff] = None,
        timeout: Optional[_Seconds] = None,
        priority: Optional[int] = None,
        group: Optional[str] = None,
        dedup: Optional[_Dedup] = None,
        debounce: Optional[_Debounce] = None,
        trace: Optional[_Trace] = None,
        expires_after: Optional[_Seconds] = None,
        expires_at: Optional[_When] = None,
        cost: Optional[int] = None,
    ) -> Enqueued:
        """Enqueue one job.

        Ready now, after ``delay`` seconds or at ``run_at`` (a datetime, naive meaning local time,
        or epoch seconds), by the Redis clock. An ``id`` that already exists creates nothing
        (``created`` is False). Per-job options override the queue's. ``priority``: 1 (first) to
        ``MAX_PRIORITY`` (last); jobs without one run before any job with one, and jobs of one
        priority in order. ``group``: the job's group (a tenant, a user): groups are served
        round-robin, each in order, under the group limits.

        ``dedup``: a key (str) held until the job finishes (completed, dead-lettered or cancelled),
        or a ``(key, ttl_seconds)`` tuple held for that long from this enqueue whatever becomes of
        the job; while the key holds, an enqueue with it creates nothing and returns the job's id
        (``created`` False). ``debounce``: a ``(key, delay_seconds)`` tuple: the job waits
        ``delay_seconds``, and an enqueue with the same key while it waits replaces its payload and
        options and makes it wait again from then (same id, ``created`` False); once it started, a
        new job is created. Debounce takes no ``id``, ``delay``, ``run_at`` or ``dedup``; bad keys
        or times raise ``InvalidArgumentError`` and write nothing.

        ``trace``: the trace context the job carries to its worker, as W3C Trace Context headers
        (``{"traceparent": ..., "tracestate": ...}``, ``tracestate`` optional; another key, a
        malformed ``traceparent`` or more than 1024 bytes raise ``InvalidArgumentError`` and write
        nothing). Not given: with OpenTelemetry installed, the current span's (none outside a
        span); the worker's span continues it.

        ``expires_after`` (seconds from the job's due time) or ``expires_at`` (a datetime or epoch
        seconds): the job must start by then, or never. One no worker started by then (a retry
        included) is not run but dead-lettered with an error that says so, counted in
        ``stats().expired`` and reported as an ``"expired"`` event; ``wait`` raises
        ``JobFailedError``.

        ``cost``: the tokens the job takes when it starts from its queue's and its group's rate
        where that rate is a token bucket (``Rate(..., burst=)``), 1 (the default) to
        ``MAX_COST``; a cost above the burst takes the whole burst. Another value raises
        ``InvalidArgumentError`` and writes nothing."""
    def enqueue_many(self, items: Iterable[_JobItem]) -> list[Enqueued]:
        """Enqueue payloads or ``(payload, options)`` pairs in one round trip.

        All are validated before anything is written. The options dict takes ``enqueue``'s
        keyword arguments; ``debounce`` only in a call of one item (``InvalidArgumentError``
        otherwise). Items with the same ``dedup`` key make one job. Items without a ``trace``
        carry the current span's, as ``enqueue`` says."""
    def get(self, id: str) -> Optional[JobInfo]:
        """A job's state, attempts, last error and times; None if unknown.

        None too once the job is no longer kept."""
    def job_logs(self, id: str) -> list[LogLine]:
        """The lines job ``id``'s handlers logged (``job.log``), oldest first, as ``LogLine``s.

        ``JobNotFoundError`` when there is no such job (or it is no longer kept)."""
    def wait(self, id: str, timeout: Optional[_Seconds] = None) -> Any:
        """Wait until job ``id`` has finished and return its result.

        The result is decoded as ``JobInfo.result`` is (None when the handler returned nothing).
        Also answers for a job that finished before the call, while it is retained
        (``keep_completed``, ``keep_for``). A job that went to the dead letters (or was cancelled)
        raises ``JobFailedError`` with its last error; an unknown id ``JobNotFoundError``; no
        outcome within ``timeout`` seconds (None: no limit) ``TimeoutError`` (a subclass of the
        builtin one). Returns as soon as the job ends: the script finishing the job wakes it."""
    def cancel(self, id: str) -> None:
        """Cancel a job: a delayed or ready one is removed; a running one is asked to stop.

        A running job's worker sets ``job.cancelled`` (and cancels an ``async def`` handler's
        task) within a second; the job ends cancelled when its handler returns, whatever it
        returns, and is never retried (a handler that finished first completes it). Either way
        ``get`` then gives ``None`` and ``stats().cancelled`` counts it.
        ``JobNotCancellableError`` for dead or completed jobs, ``JobNotFoundError`` for unknown ids."""
    def promote(self, id: str) -> None:
        """Run a delayed job now.

        A job waiting for its due time, a retry's backoff or a snooze becomes ready at once, with
        its priority and group (their limits apply when a worker fetches it), and idle workers
        are woken. ``JobWrongStateError`` for a job in any other state, ``JobNotFoundError`` for
        unknown ids."""
    def delete(self, id: str) -> None:
        """Delete a finished (dead or completed) job and everything kept for it.

        Its data, result and place in the dead letters or completed jobs go, and its id is
        forgotten, so ``get`` gives None and the id may be enqueued again; lifetime counters stay.
        ``JobWrongStateError`` for a pending or running job (cancel it instead),
        ``JobNotFoundError`` for unknown ids."""
    def find_jobs(
        self,
        *,
        task: str | None = None,
        group: str | None = None,
        state: _JobState | None = None,
        contains: str | None = None,
        cursor: str | None = None,
        limit: int = 50,
    ) -> JobSearch:
        """Up to ``limit`` (1 to 1000) jobs of ``task`` and ``group`` (None: any), after ``cursor``.

        ``contains`` keeps the jobs whose payload (a task's arguments, as JSON or MessagePack)
        holds that text, e.g. an address. The search walks ``state``'s jobs, or (None) every
        state in turn (delayed, ready, active, dead, completed), as ``jobs_page`` does, and looks
        at no more than 2000 jobs a call however big the queue: a page may hold fewer than
        ``limit`` jobs, even none, before the end; only a None cursor ends the search. Give the
        cursor back with the same filter. An empty ``task``, ``group`` or ``contains``, an
        unknown state, a bad ``limit`` or a cursor not made by this search raise
        ``InvalidArgumentError``. Writes nothing."""
    def jobs(self, state: _JobState, offset: int = 0, limit: int = 100) -> list[JobInfo]:
        """The jobs in one state, ``limit`` (at most 1000) from ``offset``.

        ``state``: ``"delayed"`` (by due time), ``"ready"`` (in the order workers take them:
        plain, then by priority, then group by group), ``"active"`` (by lease deadline),
        ``"dead"`` (oldest death first), ``"completed"`` (newest first) or ``"waiting"`` (flow
        jobs waiting for their children, by id); a sharded queue lists shard by shard. An unknown
        state, a ``limit`` over 1000 or an ``offset`` of ready or waiting jobs past 10,000
        (skipping them looks at every group they are in, or reads every one before) raises
        ``InvalidArgumentError``.
        Offsets shift as workers move jobs, so a walk of pages by offset can list a job twice or
        skip one: walk a state with ``jobs_page``."""
    def jobs_page(self, state: _JobState, cursor: str | None = None, limit: int = 100) -> JobPage:
        """Up to ``limit`` (1 to 1000) of the jobs in ``state`` after ``cursor`` (None: the start),
        and the cursor of the next page (None after the last).

        A walk page by page while workers run never lists a job twice and never skips one that
        stayed in the state for the whole walk: the cursor is the last job's place in the state's
        order (delayed by due time, dead by time of death, completed newest first, active by id,
        ready as workers take them with grouped jobs last in no particular order). A job that left
        the state and came back may show again. A page may hold fewer than ``limit`` jobs before
        the end; only a None cursor ends the walk. A cursor not made by a walk of this queue's
        ``state`` raises ``InvalidArgumentError``."""
    def dead_letters(self, offset: int = 0, limit: int = 100) -> list[JobInfo]:
        """Dead jobs, oldest death first."""
    def requeue(self, id: str) -> None:
        """Move a dead job back to ready with its attempts reset.

        ``JobNotFoundError`` if it is not dead."""
    def requeue_all(self) -> int:
        """Requeue every dead job; returns how many."""
    def purge(self) -> int:
        """Delete every dead job; returns how many."""
    def retry_jobs(self, ids: Sequence[str]) -> list[_BulkItem]:
        """Retry the dead jobs of ``ids`` (at most 1000): each back to ready, attempts reset.

        Returns, per id in order, ``{"id", "outcome", "state"}``: outcome ``"done"``,
        ``"wrong_state"`` (``state`` names the job's state) or ``"unknown"``. More than 1000 ids
        or an invalid one: ``InvalidArgumentError``, nothing done."""
    def delete_jobs(self, ids: Sequence[str]) -> list[_BulkItem]:
        """Delete the finished (dead or completed) jobs of ``ids`` (at most 1000) and all kept for
        them; per id, what happened (as ``retry_jobs``)."""
    def cancel_jobs(self, ids: Sequence[str]) -> list[_BulkItem]:
        """Cancel the delayed, ready or active jobs of ``ids`` (at most 1000); per id, what
        happened (as ``retry_jobs``)."""
    def bulk_found(
        self,
        action: Literal["retry", "delete", "cancel", "promote"],
        *,
        task: Optional[str] = None,
        group: Optional[str] = None,
        state: Optional[str] = None,
        contains: Optional[str] = None,
        cursor: Optional[str] = None,
    ) -> _BulkPage:
        """One page of ``action`` (``"retry"``, ``"delete"``, ``"cancel"`` or ``"promote"``) on the
        jobs a search finds (the filter of ``find_jobs``).

        Returns ``{"done", "skipped", "cursor"}``: pass ``cursor`` to the next call; None when
        the search is over. A state the action does not apply to is ``InvalidArgumentError``."""
    def retry_found(
        self,
        *,
        task: Optional[str] = None,
        group: Optional[str] = None,
        contains: Optional[str] = None,
    ) -> _BulkCounts:
        """Retry every dead job a search finds, a page at a time; returns ``{"done", "skipped"}``."""
    def delete_found(
        self,
        *,
        task: Optional[str] = None,
        group: Optional[str] = None,
        state: Optional[str] = None,
        contains: Optional[str] = None,
    ) -> _BulkCounts:
        """Delete every finished job a search finds (``state``: ``"dead"``, ``"completed"`` or
        None for both), a page at a time; returns ``{"done", "skipped"}``."""
    def cancel_found(
        self,
        *,
        task: Optional[str] = None,
        group: Optional[str] = None,
        state: Optional[str] = None,
        contains: Optional[str] = None,
    ) -> _BulkCounts:
        """Cancel every delayed, ready or active job a search finds, a page at a time; returns
        ``{"done", "skipped"}``."""
    def promote_all(self) -> int:
        """Run every delayed job now; returns how many."""
    def clean(self, state: Literal["completed", "dead"], older_than: _Seconds) -> int:
        """Delete the ``"completed"`` or ``"dead"`` jobs that finished more than ``older_than``
        seconds ago (by the Redis clock), in calls of 1000; returns how many."""
    def obliterate(self, *, force: bool = False) -> int:
        """Delete the queue: every key of every shard (jobs, data, schedules, groups, history,
        settings); returns how many keys.

        Refused (``InvalidArgumentError``, nothing written) while workers are live, unless
        ``force``. Enqueues during the call are refused; afterwards they start a fresh queue."""
    def stats(self) -> JobStats:
        """Jobs per state and lifetime counters."""
    def work(
        self,
        handler: _JobHandler,
        *,
        concurrency: Optional[int] = None,
        batch_size: Optional[int] = None,
        lease: Optional[_Seconds] = None,
        poll_interval: Optional[_Seconds] = None,
        grace: Optional[_Seconds] = None,
        stop_when_drained: Optional[bool] = None,
        schedules: Optional[bool] = None,
        max_jobs: Optional[int] = None,
    ) -> Worker:
        """Start a worker in the background.

        ``handler(job)`` per job, up to ``concurrency`` at a
        time. Returning completes the job; raising fails the attempt (error text
        ``"ExcType: message"``, traceback logged on the ``tideq`` logger), retried after backoff
        or dead-lettered after ``max_attempts``. Plain handlers run in pooled worker threads (as
        in a ``ThreadPoolExecutor``: a ``threading.local`` lives as long as its thread, not one
        job), ``async def`` ones on a private event loop per job; ``AsyncQueue.work`` is called from
        a running event loop, on which its ``async def`` handlers run as tasks (cancelled when
        their attempt times out, or at the end of the shutdown grace period). The ``lease`` (seconds) is renewed by Rust
        while the handler runs; a worker that dies loses its jobs to another worker after it.
        ``batch_size``: most jobs leased per fetch, at most 1000 (0: half the concurrency, at most 1000; two fetches are kept
        in flight). An attempt running past its ``timeout`` fails ("timed out") and its handler is
        asked to stop (``job.cancelled``; ``async def`` handlers are cancelled); the job is retried
        only once the handler returned, and never runs twice at a time. On stop, running jobs get
        ``grace`` seconds, then are asked to stop likewise (see ``Worker.stop``).
        A worker stops by itself on ``AuthError`` or ``PermissionDeniedError`` (see ``Worker``).
        With ``schedules`` the worker also fires the queue's due schedule slots
        (``upsert_schedule``): any number of workers may, each slot still makes one job.
        With ``max_jobs`` the worker leases at most that many jobs in its life (never one more),
        then stops leasing, finishes those it runs and stops by itself (``running`` turns False,
        ``error`` stays None): how a worker process is recycled (``serve``, ``tideq worker
        --max-jobs-per-process``); 0 raises ``InvalidArgumentError``.
        Options not given take the core's defaults: ``concurrency`` 10, ``batch_size`` 0,
        ``lease`` 30 s, ``poll_interval`` 5 s, ``grace`` 10 s, ``stop_when_drained`` False,
        ``schedules`` True, ``max_jobs`` None (no limit)."""
    def run(
        self,
        handler: _JobHandler,
        *,
        concurrency: Optional[int] = None,
        batch_size: Optional[int] = None,
        lease: Optional[_Seconds] = None,
        poll_interval: Optional[_Seconds] = None,
        grace: Optional[_Seconds] = None,
        stop_when_drained: Optional[bool] = None,
        schedules: Optional[bool] = None,
        max_jobs: Optional[int] = None,
    ) -> WorkerStats:
        """``work()``, then wait until the worker stops.

        ``work()`` and block until SIGINT/SIGTERM or, with
        ``stop_when_drained``, until nothing is ready, delayed or active; raises the error the
        worker stopped on, if any. The first SIGINT/SIGTERM stops gracefully and prints one line
        on stderr saying so; a second one stops at once (``abort()``). ``AsyncQueue.run`` is
        awaited instead, and cancelling it stops the worker gracefully too."""
    def work_batches(
        self,
        handler: _BatchHandler,
        *,
        size: int,
        wait: Optional[_Seconds] = None,
        concurrency: Optional[int] = None,
        batch_size: Optional[int] = None,
        lease: Optional[_Seconds] = None,
        poll_interval: Optional[_Seconds] = None,
        grace: Optional[_Seconds] = None,
        stop_when_drained: Optional[bool] = None,
        schedules: Optional[bool] = None,
        max_jobs: Optional[int] = None,
    ) -> Worker:
        """Start a worker whose handler gets a list of up to ``size`` jobs at once (``wait``:
        longest seconds a leased job waits for its batch to fill; 0 or None hands over what one
        fetch brought). Returning None completes them all; returning a mapping ``{job_id: error}``
        (an error message or an exception) fails those jobs (retried or dead-lettered, each by its
        attempts) and completes the rest; raising fails them all. Each job keeps its own lease,
        renewed while it waits and runs. ``concurrency`` counts jobs (``concurrency // size``
        batches at once); the other options are ``work``'s."""
    def run_batches(
        self,
        handler: _BatchHandler,
        *,
        size: int,
        wait: Optional[_Seconds] = None,
        concurrency: Optional[int] = None,
        batch_size: Optional[int] = None,
        lease: Optional[_Seconds] = None,
        poll_interval: Optional[_Seconds] = None,
        grace: Optional[_Seconds] = None,
        stop_when_drained: Optional[bool] = None,
        schedules: Optional[bool] = None,
        max_jobs: Optional[int] = None,
    ) -> WorkerStats:
        """``work_batches()`` and wait until it stops, as ``run()`` does."""
    @overload
    def task(self, func: Callable[_P, _R], /) -> Task[_P, _R]:
        """Register ``func`` as a task of this queue, named by ``name`` (default: the function's
        name), with default enqueue options (``priority``, ``group``, ``format``, ...); returns a
        ``Task``: call it to run the function here, ``.enqueue(*args, **kwargs)`` to enqueue it
        (arguments bound to the parameters by name), and ``work_tasks()`` runs it by name."""
    @overload
    def task(
        self, func: None = None, /, *, name: Optional[str] = None, **defaults: Any
    ) -> Callable[[Callable[_P, _R]], Task[_P, _R]]: ...
    def enqueue_task(
        self,
        name: str,
        data: Any = None,
        *,
        format: Optional[_Format] = None,
        id: Optional[str] = None,
        delay: Optional[_Seconds] = None,
        run_at: Optional[_When] = None,
        max_attempts: Optional[int] = None,
        backoff: Optional[Backoff] = None,
        timeout: Optional[_Seconds] = None,
        priority: Optional[int] = None,
        group: Optional[str] = None,
        dedup: Optional[_Dedup] = None,
        debounce: Optional[_Debounce] = None,
        trace: Optional[_Trace] = None,
        expires_after: Optional[_Seconds] = None,
        expires_at: Optional[_When] = None,
        cost: Optional[int] = None,
    ) -> Enqueued:
        """Enqueue task ``name`` with ``data`` as its arguments (a dict runs ``f(**data)``, a list
        ``f(*data)``, anything else ``f(data)``), encoded as ``format`` (``"json"``, the default,
        or ``"msgpack"``). The other options are ``enqueue``'s."""
    def work_tasks(
        self,
        tasks: Optional[Mapping[str, Callable[..., Any]]] = None,
        *,
        concurrency: Optional[int] = None,
        batch_size: Optional[int] = None,
        lease: Optional[_Seconds] = None,
        poll_interval: Optional[_Seconds] = None,
        grace: Optional[_Seconds] = None,
        stop_when_drained: Optional[bool] = None,
        schedules: Optional[bool] = None,
        max_jobs: Optional[int] = None,
    ) -> Worker:
        """Start a worker running each job's task by name: ``tasks`` maps names to functions
        (default: the tasks registered with ``@queue.task``), plain or ``async def``, called with
        the job's decoded arguments. A job with no task name, or one not in ``tasks``, is
        dead-lettered at once with an error naming the tasks this worker runs. The options are
        ``work``'s."""
    def run_tasks(
        self,
        tasks: Optional[Mapping[str, Callable[..., Any]]] = None,
        *,
        concurrency: Optional[int] = None,
        batch_size: Optional[int] = None,
        lease: Optional[_Seconds] = None,
        poll_interval: Optional[_Seconds] = None,
        grace: Optional[_Seconds] = None,
        stop_when_drained: Optional[bool] = None,
        schedules: Optional[bool] = None,
        max_jobs: Optional[int] = None,
    ) -> WorkerStats:
        """``work_tasks()`` and wait until it stops, as ``run()`` does."""
    def upsert_schedule(
        self,
        name: str,
        payload: _BytesLike = b"",
        *,
        cron: Optional[str] = None,
        every: Optional[_Seconds] = None,
        timezone: Optional[str] = None,
        task: Optional[str] = None,
        format: Optional[_Format] = None,
        priority: Optional[int] = None,
        group: Optional[str] = None,
        max_attempts: Optional[int] = None,
        backoff: Optional[Backoff] = None,
        timeout: Optional[_Seconds] = None,
    ) -> Optional[int]:
        """Create the schedule ``name``, or change it; returns its next slot (epoch ms, Redis clock).

        Each slot enqueues one job with ``payload`` and the options given, id
        ``"<name>@<slot ms>"``, whichever workers (started with ``schedules``, the default) see it
        due: exactly one of ``cron`` (a cron pattern, 5 fields or 6 with seconds first, in
        ``timezone``, an IANA name such as ``"Europe/Paris"``; default UTC) or ``every`` (seconds,
        at least 0.01: slots at the multiples of the interval since the epoch). Declaring the same
        schedule again changes nothing (its next slot stays); after an outage a schedule runs once
        for the slots it missed. ``priority``, ``group``, ``max_attempts``, ``backoff`` and
        ``timeout`` are given to each job as ``enqueue`` takes them; ``task`` makes each job a run
        of that task, ``payload`` then holding its arguments encoded as ``format`` says
        (``"json"``, the default with a task, or ``"msgpack"``): arguments that do not decode so
        raise ``InvalidArgumentError``, as does any other bad input, and nothing is written.
        None when the pattern has no slot to come."""
    def remove_schedule(self, name: str) -> bool:
        """Remove the schedule ``name`` (no slot of it fires after this); True if it existed."""
    def run_schedule(self, name: str) -> str:
        """Enqueue one job of the schedule ``name`` now, as its next slot would (same payload and
        options), without moving its slots: the next one still fires when due. The job's id is
        ``"<name>@run-<ms>"`` (the current second of the Redis clock), so a second call within
        that second enqueues nothing more and returns the same id. Returns the job's id; an unknown
        name raises ``InvalidArgumentError``, nothing written."""
    def pause_schedule(self, name: str) -> bool:
        """Pause the schedule ``name``: it keeps its definition and next slot and does not fire until
        ``resume_schedule``. False if it was paused already; an unknown name raises
        ``InvalidArgumentError``, nothing written."""
    def resume_schedule(self, name: str) -> bool:
        """Resume the paused schedule ``name``. Slots passed while paused are not all run: as after
        an outage, the latest of them fires once, then the schedule goes on. False if it was not
        paused; an unknown name raises ``InvalidArgumentError``, nothing written."""
    def schedules(self) -> list[ScheduleInfo]:
        """The queue's schedules with their next slots, by name."""
    def workers(self) -> list[WorkerInfo]:
        """The queue's live workers (seen in the last 45 s), in the order they started.

        A worker is seen when it fetches jobs and, while it runs jobs, each time it renews their
        leases, so a worker busy with long jobs stays listed. One that stops leaves the list."""
    def history(self, window: _Seconds = 3600.0, step: _Seconds = 60.0) -> list[HistoryPoint]:
        """What the queue did in each ``step`` of the last ``window``, oldest first.

        Seconds (or ``timedelta``): ``step`` a whole number of minutes, ``window`` at least
        ``step`` and at most 14 days (else ``InvalidArgumentError``). The workers' reports leave a
        snapshot of the queue's totals in Redis once a minute, kept 14 days, so every reader sees
        the same history. Steps are aligned on multiples of ``step`` (UTC, the Redis clock); the
        last is the step under way, counted up to now. Minutes without any worker running are
        spread evenly over the gap once one reports again."""
    def task_metrics(self, window: Optional[_Seconds] = None) -> list[TaskMetrics]:
        """Per task: jobs completed, failed attempts, jobs dead-lettered and handler run times over
        the last ``window``, by task name.

        Seconds (or ``timedelta``), from 60 s to 14 days (else ``InvalidArgumentError``); ``None``
        (the default): since the queue's workers began counting. Jobs without a task count under
        ``""``; a queue tracks its first 100 task names, later ones count under ``"(other)"``.
        Counted from the workers' periodic reports (every 15 s at most, and when a worker stops)."""
    def set_events(self, max_len: Optional[int]) -> None:
        """Turn the queue's event log on, keeping about its newest ``max_len`` entries, or off (None).

        An entry holds one kind of event for a batch of jobs. Every producer and worker of the
        queue follows the setting at once; turning it off deletes the log. Events are off by
        default. ``max_len`` 0 raises ``InvalidArgumentError``."""
    def events(self, name: Optional[str] = None, from_start: bool = False) -> EventReader:
        """A reader of the queue's event log: what happened to its jobs, in order, as ``Event``s.

        It reads from now on (from this call), or with ``from_start`` from the oldest event kept.
        A reader with a ``name`` keeps its place in Redis: started again with the same name (in
        any process), it resumes where it stopped (events it took but had not stored yet may come
        again), so one started ``from_start`` (the first time) misses nothing the log still holds
        even if it crashed; one that fell behind the log's length gets a ``"lagged"`` event first.
        The blocking API returns an ``EventReader`` (``for event in q.events(): ...``), the
        asyncio API an ``AsyncEventReader`` (``async for event in aq.events(): ...``; ``events()``
        itself is not awaited). Nothing is logged until ``set_events`` turns the log on.

        An ``AsyncEventReader`` starts at the call (so "from now on" means from the call) and is
        awaited on its first use (``async for``, ``await reader.next()``, ``async with``), which
        raises the start's errors."""
    def pause(self) -> None:
        """Workers stop starting jobs of this queue (running ones finish; enqueues go on)."""
    def resume(self) -> None:
        """Workers start jobs again; idle ones are woken at once."""
    def pause_group(self, group: str) -> None:
        """Stop starting jobs of ``group`` (other groups go on)."""
    def resume_group(self, group: str) -> None:
        """Start jobs of ``group`` again."""
    def is_paused(self) -> bool:
        """True when the queue is paused."""
    def set_limits(
        self,
        *,
        max_active: Optional[int] = None,
        rate: Optional[Rate] = None,
        group_concurrency: Optional[int] = None,
        group_rate: Optional[Rate] = None,
    ) -> None:
        """Replace the queue's limits, kept in Redis for every worker (None: no limit):
        ``max_active`` jobs running at once, ``rate`` job starts per window, and per group
        (groups without limits of their own) ``group_concurrency`` running and ``group_rate``
        starts. Bad values raise ``InvalidArgumentError`` and change nothing."""
    def limits(self) -> Limits:
        """The queue's limits."""
    def set_limiter(self, name: Optional[str]) -> None:
        """Make every start of this queue's jobs take from the shared limiter ``name`` (defined
        with ``Limiter``), across its workers and every queue that names it; None stops it. A
        concurrency limiter's slot is held while the job runs. Jobs over the limit stay ready, in
        their place. A limiter never defined raises ``InvalidArgumentError``; nothing is written."""
    def limiter_name(self) -> Optional[str]:
        """The shared limiter this queue's starts take from, or None."""
    def set_group_limiter(self, group: str, name: Optional[str]) -> None:
        """Make every start of ``group``'s jobs take from the shared limiter ``name`` (defined with
        ``Limiter``), whichever queue the group is in; None stops it. A job over the limit is not
        run: it keeps its place in its group without using an attempt, and the group waits for
        room while the queue's other groups go on. A limiter never defined raises
        ``InvalidArgumentError``; nothing is written."""
    def set_group_limits(
        self, group: str, *, concurrency: Optional[int] = None, rate: Optional[Rate] = None
    ) -> None:
        """Set ``group``'s own limits (None: the queue's defaults)."""
    def group(self, name: str) -> GroupInfo:
        """What group ``name`` holds (ready, running) and obeys (paused, limits in force)."""
    def groups(self) -> list[GroupInfo]:
        """Every group the queue knows (with jobs, running jobs or settings of its own), by name,
        each as ``group`` tells it. Reads every group (in short calls); to show some of many,
        read a page with ``groups_page``."""
    def groups_page(self, cursor: str | None = None, count: int | None = None) -> GroupPage:
        """About ``count`` (1 to 250, default 100) of the groups ``groups`` lists, from ``cursor`` (None: the
        start), in no particular order, and the cursor of the next page (None after the last).
        Each call costs about ``count`` groups' work, however many the queue has."""
    def lease_jobs(self, max: int, *, lease: _Seconds) -> list[Job]:
        """Lease up to ``max`` (at most 1000) ready jobs for ``lease`` seconds, for processing without a worker
        (empty when nothing is ready). Settle each with ``complete``, ``fail`` or ``release``;
        nothing renews these leases but ``extend``: a job whose lease expires is delivered
        again."""
    def complete(self, job: Job) -> None:
        """Mark a leased job done (``LeaseLostError`` if its lease expired and it was
        redelivered)."""
    def fail(self, job: Job, error: Union[str, BaseException]) -> bool:
        """Fail a leased attempt with ``error`` (a message, or an exception shown as
        ``"ExcType: message"``): retried after the job's backoff, or dead-lettered after
        ``max_attempts``. Returns True when dead-lettered."""
    def release(self, job: Job) -> None:
        """Return a leased job to the front of the queue without counting the attempt."""
    def extend(self, job: Job, lease: _Seconds) -> None:
        """Push a leased job's lease deadline to ``lease`` seconds from now."""
    def enqueue_flow(self, root: FlowJob) -> Enqueued:
        """Enqueue a flow: ``root`` and, to any depth, the jobs it waits for (``FlowJob``); returns
        the root's ``Enqueued``.

        The root goes to this queue unless its ``queue=`` says otherwise, each child to its
        parent's unless its own does. A parent waits (``get`` shows ``"waiting"`` and
        ``children_pending``) until every one of its children finished, then runs once, and
        reads how they ended with ``job.children_results()``; its ``on_failure`` says what a
        child's failure does to it. Workers of each queue of the flow relay its children's ends to
        their parents. The whole flow is written or none of it. A root ``id`` that exists already
        (or finished within the idempotency window) creates nothing (``created`` False). Refused
        with ``InvalidArgumentError``, nothing written: more than 100000 jobs under the root (a
        chord of 100000 children and its callback fits), two jobs with the same id, a child id
        that exists already (or finished within its queue's idempotency window), a queue of
        another key prefix, and what ``enqueue`` refuses. Cancelling a waiting parent
        (``cancel``) cancels its pending children, to any depth."""
    def children_results(self, parent_id: str) -> list[ChildResult]:
        """How the children of job ``parent_id`` (of this queue) ended so far, as ``ChildResult``s,
        in no particular order (each once). Every child has finished when a parent runs; kept
        while the parent is."""
    def enqueue_graph(self, nodes: Iterable[GraphNode]) -> Enqueued:
        """Enqueue a graph of ``GraphNode``s: each job runs once every job it runs ``after``
        finished, and reads how they ended with ``job.children_results()``; a step
        (``FlowJob(task=...)`` without ``data``) gets their results as its argument, a list in its
        ``after`` order. Jobs go to this queue unless their ``queue=`` says otherwise. Written whole
        or not at all; returns the ``Enqueued`` of the last job declared that no job runs after (if
        it exists already, nothing is created: ``created`` False). Refused with
        ``InvalidArgumentError``, nothing written: no jobs, an id declared twice, an ``after``
        naming an id not declared, a cycle (the error names it), more than 1000 jobs after one
        job, a job with children, and what ``enqueue_flow`` refuses. Cancelling a job cancels the
        jobs it runs after that are still pending."""

def _run_cli(argv: list[str], host_child: Optional[list[str]] = None) -> int:
    """Run the ``tideq`` command line on ``argv`` (the first item is the program name); returns its
    exit code. ``host_child``: the argv prefix that starts one ``tideq worker`` child."""

def serve(
    *workers: Union[Worker, AsyncWorker],
    health: Optional[str] = None,
    max_jobs: Optional[int] = None,
) -> list[WorkerStats]:
    """Run ``workers`` until the process is asked to stop; returns their stats, in order.

    The ``main`` of a worker process, over workers already started (one per queue, each with its
    own options: ``work``, ``work_tasks``, ``work_batches``). SIGINT (Ctrl-C) or SIGTERM stops
    every worker gracefully (running jobs get their ``grace``); a second one stops them at once
    (their jobs go back to the queue by their leases). It also returns once every worker stopped
    by itself (its ``max_jobs`` reached, ``stop_when_drained``, or an error, raised here), or
    once the workers leased ``max_jobs`` jobs together (then all stop gracefully).
    ``health="127.0.0.1:8080"`` serves ``GET /livez`` (200 while serving) and ``GET /readyz``
    (200 while every worker is connected and leasing, else 503) for liveness and readiness
    probes. Under ``tideq worker`` it also reports to the supervisor. Blocks with the GIL
    released; ``serve_async`` is its asyncio form."""

def serve_async(
    *workers: Union[Worker, AsyncWorker],
    health: Optional[str] = None,
    max_jobs: Optional[int] = None,
) -> Coroutine[Any, Any, list[WorkerStats]]:
    """``serve`` for asyncio: an awaitable of the workers' stats.

    As ``serve``, on the running event loop: SIGINT and SIGTERM (when their handlers are
    Python's defaults, or ``asyncio.run``'s) stop the workers gracefully, a second one at once;
    cancelling the awaitable stops them gracefully too."""

_TestHandlers = list[tuple[str, Optional[str], Callable[..., Any]]]

@final
class _TestMode:
    """A test mode that is on (or was): ``tideq.testing``'s handle on the core's."""
    @property
    def mode(self) -> str: ...
    @property
    def is_on(self) -> bool: ...
    def stop(self) -> None: ...
    def set_handlers(self, handlers: _TestHandlers) -> None: ...
    def clear(self) -> None: ...
    def jobs(self, **kw: Any) -> list[dict[str, Any]]: ...
    def enqueued(self, **kw: Any) -> list[dict[str, Any]]: ...
    def assert_enqueued(self, **kw: Any) -> dict[str, Any]: ...
    def drain(self, handlers: _TestHandlers) -> tuple[int, int, int, int]: ...
    def drain_async(self, handlers: _TestHandlers) -> Coroutine[Any, Any, tuple[int, int, int, int]]: ...

def _testing_start(
    mode: str,
    handlers: Optional[_TestHandlers] = None,
    raise_errors: bool = True,
) -> _TestMode:
    """Turn test mode ``mode`` (``"fake"`` or ``"inline"``) on; ``tideq.testing`` wraps the handle
    it returns (a private ``_TestMode``)."""

def _set_otel_hooks(
    inject: Optional[Callable[[], Optional[dict[str, str]]]],
    wrap: Optional[Callable[[_JobHandler, str], _JobHandler]],
) -> None:
    """Register the OpenTelemetry hooks (``tideq._otel`` does, on import), or remove them (both
    None). ``inject()`` returns the current span's W3C headers (or None) for enqueues that give no
    ``trace``; ``wrap(handler, queue_name)`` returns the handler a worker runs instead of
    ``handler``."""

def chain(*links: FlowJob) -> FlowJob:
    """A chain: ``links`` (``FlowJob``s) run one after another, each once the one before it
    completed, each link after the first getting the previous link's result as its one argument
    (a task's) or its payload (a raw job's). Returns the last link (the flow's root): give it to
    ``enqueue_flow``, whose id is the last link's, and whose result is the chain's. A link
    without ``queue=`` goes where the last link goes. A failed link fails the rest, unless its ``on_failure`` lets it through (then the next link gets None).
    The first link may be any flow (a chord, say); the others are built with only a task name
    (``FlowJob(task="parse")``): ``ValueError`` for no links, or a later link with ``data``, a
    ``payload`` or ``children``."""

def chord(children: Sequence[FlowJob], callback: FlowJob) -> FlowJob:
    """A chord: ``children`` (``FlowJob``s) run, then ``callback`` runs once, after the last of
    them, with their results as its one argument: a list in the children's order (each a
    completed child's result, None for one whose failure its ``on_failure`` let through). Returns
    the callback (the flow's root). The callback is built with only a task name
    (``FlowJob(task="total")``): ``ValueError`` if it has ``data``, a ``payload`` or ``children``."""

def acl_rules(queue: str, role: str, *, prefix: str = "tideq", shards: int = 1) -> str:
    """The Redis ACL rules that let a user do ``role`` on ``queue`` (split in ``shards``) under
    the key ``prefix`` (default: the client's default, ``"tideq"``), and nothing else: for
    ``ACL SETUSER <user> reset on ><password> <rules>``. Roles: ``"producer"`` (enqueue),
    ``"worker"`` (run a worker), ``"admin"`` (``get``, ``jobs``, ``cancel``, dead letters,
    ``stats``), ``"capped-producer"`` (push) and ``"capped-consumer"`` (pop, consume, ``len``,
    ``groups``, ``stats``). On a Redis Cluster add ``+cluster|slots +cluster|shards``. An
    unknown role or a bad name raises ``InvalidArgumentError``."""

def decode_envelope(data: _BytesLike) -> dict[str, Any]:
    """The fields of a job envelope (wire format v1): ``v``, ``id``, ``payload`` (bytes),
    ``created_at``, ``max_attempts``, ``backoff`` (``kind``, ``base_ms``, ``max_ms``, ``jitter``),
    ``timeout_ms``, and when set ``task``, ``format`` and ``trace`` (a dict of W3C Trace Context
    headers); fields of later versions are left out. ``InvalidArgumentError`` for bytes that are
    not an envelope this build reads."""

def encode_envelope(fields: dict[str, Any]) -> bytes:
    """The envelope bytes for ``fields`` (as ``decode_envelope`` returns them; ``v`` defaults to
    the current version, ``timeout_ms`` to None; ``backoff`` may also be a ``Backoff``). Unknown
    or missing fields and values of the wrong type raise ``InvalidArgumentError``."""

# ---- generated by scripts/gen_async_pyi.py from the blocking classes above: do not edit ----

@final
class AsyncConsumer:
    """A running consumer (asyncio API). Dropping it does not stop it: ``await shutdown()``.

    It stops by itself on errors retrying cannot fix, as ``Consumer`` does."""

    def stop(self) -> None:
        """Stop taking work; running handlers get the grace period.

        A worker fetches no new jobs. Past the grace period, its handlers are asked to stop
        (``job.cancelled``; ``async def`` handlers are cancelled): a job whose handler then raises
        is returned to the queue (its attempt not counted), one whose handler returns is
        completed. Until its handler returns, a job keeps its slot and its lease. A consumer takes
        no new batches; its handlers still running after the grace period are abandoned."""
    def abort(self) -> None:
        """Stop at once, without waiting for running handlers: their jobs are left to their leases
        (run again once a lease expires; a consumer's batches are gone). What a second Ctrl-C in
        ``run()`` does."""
    def join(self) -> Coroutine[Any, Any, ConsumerStats]:
        """Wait until stopped; returns the stats, or raises the error the consumer stopped on."""
    def shutdown(self) -> Coroutine[Any, Any, ConsumerStats]:
        """``stop()`` then ``join()``."""
    def __aenter__(self) -> Coroutine[Any, Any, AsyncConsumer]:
        """Returns the handle itself (it is already running)."""
    def __aexit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc_value: Optional[BaseException],
        traceback: Optional[types.TracebackType],
    ) -> Coroutine[Any, Any, None]:
        """``await shutdown()``: running handlers get the grace period; an exception raised
        in the block goes on."""
    def stats(self) -> ConsumerStats:
        """Counters so far."""
    @property
    def running(self) -> bool:
        """True until the loop ended and running handlers finished (or were abandoned)."""
    @property
    def error(self) -> Optional[TideqError]:
        """The error it stopped on by itself (as ``join()`` raises it), or None."""

@final
class AsyncCappedQueue:
    """A capped grouped queue, asyncio API: same constructor and methods, all awaitable."""

    def __new__(
        cls,
        name: str,
        client: Optional[Client] = None,
        *,
        url: Optional[str] = None,
        capacity: Optional[int] = None,
        ttl: Optional[_Seconds] = 86400.0,
        max_age: Optional[_Seconds] = None,
        shards: int = 1,
        encryption: Optional[Encryption] = None,
    ) -> AsyncCappedQueue: ...
    @property
    def name(self) -> str: ...
    @property
    def client(self) -> Client: ...
    @property
    def shards(self) -> int:
        """How many shards (hash tags) the queue is split into."""
    def __aenter__(self) -> Coroutine[Any, Any, AsyncCappedQueue]:
        """Returns the queue itself."""
    def __aexit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc_value: Optional[BaseException],
        traceback: Optional[types.TracebackType],
    ) -> Coroutine[Any, Any, None]:
        """``await`` the shutdown of the consumers started from this queue that still run, as leaving
        a consumer's own ``async with`` block does; an exception raised in the block goes on."""
    def push(self, group: str, item: _BytesLike) -> Coroutine[Any, Any, int]:
        """Append ``item`` to ``group``; returns how many old items were dropped."""
    def push_many(self, items: Iterable[tuple[str, _BytesLike]]) -> Coroutine[Any, Any, list[int]]:
        """Push ``(group, item)`` pairs in one round trip; drops per item.

        All-or-nothing validation."""
    def pop_batch(self, group: str, max: int = 128) -> Coroutine[Any, Any, list[bytes]]:
        """Remove and return up to ``max`` items of ``group``, oldest first."""
    def next_batch(self, max: int = 128) -> Coroutine[Any, Any, Optional[tuple[str, list[bytes]]]]:
        """Next ``(group, items)`` round-robin over groups with data, or ``None``."""
    def peek(self, group: str, max: int = 10) -> Coroutine[Any, Any, list[Peeked]]:
        """The oldest ``max`` items of ``group`` (1 to 1000), oldest first, left in place.

        Items older than ``max_age`` are left out, as a pop would discard them, so fewer than
        ``max`` may come back. An encrypted item this handle cannot open comes back as stored
        (sealed), its ``unreadable`` naming the key id."""
    def unreadable(self, max: int = 100) -> Coroutine[Any, Any, list[UnreadableItem]]:
        """Up to ``max`` (1 to 1000) of the items pops could not open, newest first (``UnreadableItem``:
        group, key id, error, sealed bytes). They stay listed.

        The list keeps the newest 1000 per shard."""
    def requeue_unreadable(self) -> Coroutine[Any, Any, int]:
        """Push the unreadable items this handle can now open back to their groups; returns how many.

        Once their key is restored (in this handle's ``encryption``) nothing is lost; the others
        stay listed."""
    def len(self, group: str) -> Coroutine[Any, Any, int]:
        """Items queued in ``group``."""
    def groups(self) -> Coroutine[Any, Any, list[str]]:
        """Groups holding data, in round-robin order. Reads the whole rotation; to show some of
        many, read a page with ``groups_page``."""
    def groups_page(self, cursor: str | None = None, count: int | None = None) -> Coroutine[Any, Any, CappedGroupPage]:
        """About ``count`` (1 to 250, default 100) of the groups holding data, from ``cursor`` (None: the
        start), in no particular order, and the cursor of the next page (None after the last).
        Each call costs about ``count`` groups' work, however many there are."""
    def stats(self) -> Coroutine[Any, Any, CappedStats]:
        """Queue-wide counters."""
    def consume(
        self,
        handler: _Handler,
        *,
        concurrency: Optional[int] = None,
        batch_size: Optional[int] = None,
        groups: Optional[list[str]] = None,
        exclude: Optional[list[str]] = None,
        poll_interval: Optional[_Seconds] = None,
        grace: Optional[_Seconds] = None,
        stop_when_empty: Optional[bool] = None,
    ) -> AsyncConsumer:
        """Start consuming in the background.

        ``handler(group, items)`` per batch.

        Plain handlers run in worker threads; ``async def`` handlers on a private event loop per
        batch (``AsyncCappedQueue.consume`` is called from a running event loop, on which its
        ``async def`` handlers run). A handler exception is logged on the ``tideq`` logger and the batch is not
        redelivered. ``groups``: serve only these; ``exclude``: skip these. Options not given
        take the core's defaults: ``concurrency`` 1, ``batch_size`` 128, ``poll_interval`` 2 s,
        ``grace`` 10 s, ``stop_when_empty`` False."""
    def run(
        self,
        handler: _Handler,
        *,
        concurrency: Optional[int] = None,
        batch_size: Optional[int] = None,
        groups: Optional[list[str]] = None,
        exclude: Optional[list[str]] = None,
        poll_interval: Optional[_Seconds] = None,
        grace: Optional[_Seconds] = None,
        stop_when_empty: Optional[bool] = None,
    ) -> Coroutine[Any, Any, ConsumerStats]:
        """``consume()``, then wait until the consumer stops.

        ``consume()`` and block until SIGINT/SIGTERM (graceful stop) or ``stop_when_empty``;
        raises the error the consumer stopped on, if any. ``AsyncCappedQueue.run`` is awaited
        instead, and cancelling it stops the consumer gracefully too."""

@final
class AsyncEventReader:
    """A reader of a queue's event log, asyncio API: ``async for event in reader`` awaits each
    event.

    It started when ``events()`` was called; errors of the start (a bad name, Redis unreachable)
    are raised by its first use. Used as an async context manager, it waits for the start on
    entering and stores a named reader's place on leaving (``commit()``)."""

    def __aiter__(self) -> AsyncEventReader: ...
    def __anext__(self) -> Coroutine[Any, Any, Event]: ...
    def next(self, timeout: Optional[_Seconds] = None) -> Coroutine[Any, Any, Optional[Event]]:
        """The next event, waiting up to ``timeout`` seconds (None: no limit); None when none came
        in time.

        A named reader's place is stored each time it reads more from Redis (the events it had
        taken so far), so one started again after a crash gets again at most what it took since."""
    def commit(self) -> Coroutine[Any, Any, None]:
        """Store a named reader's place (the events it has taken so far); nothing for an unnamed
        one.

        Each read stores it before reading more, so call this when you stop reading (leaving the
        reader's ``with`` block does)."""
    def __aenter__(self) -> Coroutine[Any, Any, AsyncEventReader]:
        """Wait for the reader's start; returns the reader."""
    def __aexit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc_value: Optional[BaseException],
        traceback: Optional[types.TracebackType],
    ) -> Coroutine[Any, Any, None]:
        """Store a named reader's place (``commit()``); exceptions go on."""

@final
class AsyncWorker:
    """A running worker (asyncio API). Dropping it does not stop it: ``await shutdown()``.

    It stops by itself on errors retrying cannot fix, as ``Worker`` does."""

    def stop(self) -> None:
        """Stop taking work; running handlers get the grace period.

        A worker fetches no new jobs. Past the grace period, its handlers are asked to stop
        (``job.cancelled``; ``async def`` handlers are cancelled): a job whose handler then raises
        is returned to the queue (its attempt not counted), one whose handler returns is
        completed. Until its handler returns, a job keeps its slot and its lease. A consumer takes
        no new batches; its handlers still running after the grace period are abandoned."""
    def abort(self) -> None:
        """Stop at once, without waiting for running handlers: their jobs are left to their leases
        (run again once a lease expires; a consumer's batches are gone). What a second Ctrl-C in
        ``run()`` does."""
    def join(self) -> Coroutine[Any, Any, WorkerStats]:
        """Wait until stopped; returns the stats, or raises the error the worker stopped on."""
    def shutdown(self) -> Coroutine[Any, Any, WorkerStats]:
        """``stop()`` then ``join()``."""
    def __aenter__(self) -> Coroutine[Any, Any, AsyncWorker]:
        """Returns the handle itself (it is already running)."""
    def __aexit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc_value: Optional[BaseException],
        traceback: Optional[types.TracebackType],
    ) -> Coroutine[Any, Any, None]:
        """``await shutdown()``: running handlers get the grace period; an exception raised
        in the block goes on."""
    def stats(self) -> WorkerStats:
        """Counters so far."""
    def metrics(self) -> str:
        """This worker's own metrics (this process only) in the Prometheus text format.

        As ``Worker.metrics``: a plain call, not a coroutine (it reads in-process counters)."""
    def is_ready(self) -> bool:
        """True while the worker is connected and leasing (see ``Worker.is_ready``).

        A plain call, not a coroutine (it reads in-process state)."""
    @property
    def running(self) -> bool:
        """True until the loop ended and running handlers finished (or were abandoned)."""
    @property
    def error(self) -> Optional[TideqError]:
        """The error it stopped on by itself (as ``join()`` raises it), or None."""

@final
class AsyncQueue:
    """A reliable job queue, asyncio API: same constructor and methods, all awaitable."""

    def __new__(
        cls,
        name: str,
        client: Optional[Client] = None,
        *,
        url: Optional[str] = None,
        max_attempts: Optional[int] = None,
        backoff: Optional[Backoff] = None,
        timeout: Optional[_Seconds] = None,
        keep_completed: Optional[int] = None,
        keep_for: Optional[_Seconds] = 86400.0,
        max_error_len: Optional[int] = None,
        keep_dead: Optional[int] = 10000,
        keep_dead_for: Optional[_Seconds] = 15552000.0,
        idempotency_window: Optional[_Seconds] = 86400.0,
        idempotency_max_ids: Optional[int] = None,
        max_result_len: Optional[int] = None,
        shards: int = 1,
        encryption: Optional[Encryption] = None,
    ) -> AsyncQueue: ...
    @property
    def name(self) -> str: ...
    @property
    def client(self) -> Client: ...
    @property
    def shards(self) -> int:
        """How many shards (hash tags) the queue is split into."""
    def __aenter__(self) -> Coroutine[Any, Any, AsyncQueue]:
        """Returns the queue itself."""
    def __aexit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc_value: Optional[BaseException],
        traceback: Optional[types.TracebackType],
    ) -> Coroutine[Any, Any, None]:
        """``await`` the shutdown of the workers started from this queue that still run, as leaving
        a worker's own ``async with`` block does; an exception raised in the block goes on."""
    def enqueue(
        self,
        payload: _BytesLike,
        *,
        id: Optional[str] = None,
        delay: Optional[_Seconds] = None,
        run_at: Optional[_When] = None,
        max_attempts: Optional[int] = None,
        backoff: Optional[Backoff] = None,
        timeout: Optional[_Seconds] = None,
        priority: Optional[int] = None,
        group: Optional[str] = None,
        dedup: Optional[_Dedup] = None,
        debounce: Optional[_Debounce] = None,
        trace: Optional[_Trace] = None,
        expires_after: Optional[_Seconds] = None,
        expires_at: Optional[_When] = None,
        cost: Optional[int] = None,
    ) -> Coroutine[Any, Any, Enqueued]:
        """Enqueue one job.

        Ready now, after ``delay`` seconds or at ``run_at`` (a datetime, naive meaning local time,
        or epoch seconds), by the Redis clock. An ``id`` that already exists creates nothing
        (``created`` is False). Per-job options override the queue's. ``priority``: 1 (first) to
        ``MAX_PRIORITY`` (last); jobs without one run before any job with one, and jobs of one
        priority in order. ``group``: the job's group (a tenant, a user): groups are served
        round-robin, each in order, under the group limits.

        ``dedup``: a key (str) held until the job finishes (completed, dead-lettered or cancelled),
        or a ``(key, ttl_seconds)`` tuple held for that long from this enqueue whatever becomes of
        the job; while the key holds, an enqueue with it creates nothing and returns the job's id
        (``created`` False). ``debounce``: a ``(key, delay_seconds)`` tuple: the job waits
        ``delay_seconds``, and an enqueue with the same key while it waits replaces its payload and
        options and makes it wait again from then (same id, ``created`` False); once it started, a
        new job is created. Debounce takes no ``id``, ``delay``, ``run_at`` or ``dedup``; bad keys
        or times raise ``InvalidArgumentError`` and write nothing.

        ``trace``: the trace context the job carries to its worker, as W3C Trace Context headers
        (``{"traceparent": ..., "tracestate": ...}``, ``tracestate`` optional; another key, a
        malformed ``traceparent`` or more than 1024 bytes raise ``InvalidArgumentError`` and write
        nothing). Not given: with OpenTelemetry installed, the current span's (none outside a
        span); the worker's span continues it.

        ``expires_after`` (seconds from the job's due time) or ``expires_at`` (a datetime or epoch
        seconds): the job must start by then, or never. One no worker started by then (a retry
        included) is not run but dead-lettered with an error that says so, counted in
        ``stats().expired`` and reported as an ``"expired"`` event; ``wait`` raises
        ``JobFailedError``.

        ``cost``: the tokens the job takes when it starts from its queue's and its group's rate
        where that rate is a token bucket (``Rate(..., burst=)``), 1 (the default) to
        ``MAX_COST``; a cost above the burst takes the whole burst. Another value raises
        ``InvalidArgumentError`` and writes nothing."""
    def enqueue_many(self, items: Iterable[_JobItem]) -> Coroutine[Any, Any, list[Enqueued]]:
        """Enqueue payloads or ``(payload, options)`` pairs in one round trip.

        All are validated before anything is written. The options dict takes ``enqueue``'s
        keyword arguments; ``debounce`` only in a call of one item (``InvalidArgumentError``
        otherwise). Items with the same ``dedup`` key make one job. Items without a ``trace``
        carry the current span's, as ``enqueue`` says."""
    def get(self, id: str) -> Coroutine[Any, Any, Optional[JobInfo]]:
        """A job's state, attempts, last error and times; None if unknown.

        None too once the job is no longer kept."""
    def job_logs(self, id: str) -> Coroutine[Any, Any, list[LogLine]]:
        """The lines job ``id``'s handlers logged (``job.log``), oldest first, as ``LogLine``s.

        ``JobNotFoundError`` when there is no such job (or it is no longer kept)."""
    def wait(self, id: str, timeout: Optional[_Seconds] = None) -> Coroutine[Any, Any, Any]:
        """Wait until job ``id`` has finished and return its result.

        The result is decoded as ``JobInfo.result`` is (None when the handler returned nothing).
        Also answers for a job that finished before the call, while it is retained
        (``keep_completed``, ``keep_for``). A job that went to the dead letters (or was cancelled)
        raises ``JobFailedError`` with its last error; an unknown id ``JobNotFoundError``; no
        outcome within ``timeout`` seconds (None: no limit) ``TimeoutError`` (a subclass of the
        builtin one). Returns as soon as the job ends: the script finishing the job wakes it."""
    def cancel(self, id: str) -> Coroutine[Any, Any, None]:
        """Cancel a job: a delayed or ready one is removed; a running one is asked to stop.

        A running job's worker sets ``job.cancelled`` (and cancels an ``async def`` handler's
        task) within a second; the job ends cancelled when its handler returns, whatever it
        returns, and is never retried (a handler that finished first completes it). Either way
        ``get`` then gives ``None`` and ``stats().cancelled`` counts it.
        ``JobNotCancellableError`` for dead or completed jobs, ``JobNotFoundError`` for unknown ids."""
    def promote(self, id: str) -> Coroutine[Any, Any, None]:
        """Run a delayed job now.

        A job waiting for its due time, a retry's backoff or a snooze becomes ready at once, with
        its priority and group (their limits apply when a worker fetches it), and idle workers
        are woken. ``JobWrongStateError`` for a job in any other state, ``JobNotFoundError`` for
        unknown ids."""
    def delete(self, id: str) -> Coroutine[Any, Any, None]:
        """Delete a finished (dead or completed) job and everything kept for it.

        Its data, result and place in the dead letters or completed jobs go, and its id is
        forgotten, so ``get`` gives None and the id may be enqueued again; lifetime counters stay.
        ``JobWrongStateError`` for a pending or running job (cancel it instead),
        ``JobNotFoundError`` for unknown ids."""
    def find_jobs(
        self,
        *,
        task: str | None = None,
        group: str | None = None,
        state: _JobState | None = None,
        contains: str | None = None,
        cursor: str | None = None,
        limit: int = 50,
    ) -> Coroutine[Any, Any, JobSearch]:
        """Up to ``limit`` (1 to 1000) jobs of ``task`` and ``group`` (None: any), after ``cursor``.

        ``contains`` keeps the jobs whose payload (a task's arguments, as JSON or MessagePack)
        holds that text, e.g. an address. The search walks ``state``'s jobs, or (None) every
        state in turn (delayed, ready, active, dead, completed), as ``jobs_page`` does, and looks
        at no more than 2000 jobs a call however big the queue: a page may hold fewer than
        ``limit`` jobs, even none, before the end; only a None cursor ends the search. Give the
        cursor back with the same filter. An empty ``task``, ``group`` or ``contains``, an
        unknown state, a bad ``limit`` or a cursor not made by this search raise
        ``InvalidArgumentError``. Writes nothing."""
    def jobs(self, state: _JobState, offset: int = 0, limit: int = 100) -> Coroutine[Any, Any, list[JobInfo]]:
        """The jobs in one state, ``limit`` (at most 1000) from ``offset``.

        ``state``: ``"delayed"`` (by due time), ``"ready"`` (in the order workers take them:
        plain, then by priority, then group by group), ``"active"`` (by lease deadline),
        ``"dead"`` (oldest death first), ``"completed"`` (newest first) or ``"waiting"`` (flow
        jobs waiting for their children, by id); a sharded queue lists shard by shard. An unknown
        state, a ``limit`` over 1000 or an ``offset`` of ready or waiting jobs past 10,000
        (skipping them looks at every group they are in, or reads every one before) raises
        ``InvalidArgumentError``.
        Offsets shift as workers move jobs, so a walk of pages by offset can list a job twice or
        skip one: walk a state with ``jobs_page``."""
    def jobs_page(self, state: _JobState, cursor: str | None = None, limit: int = 100) -> Coroutine[Any, Any, JobPage]:
        """Up to ``limit`` (1 to 1000) of the jobs in ``state`` after ``cursor`` (None: the start),
        and the cursor of the next page (None after the last).

        A walk page by page while workers run never lists a job twice and never skips one that
        stayed in the state for the whole walk: the cursor is the last job's place in the state's
        order (delayed by due time, dead by time of death, completed newest first, active by id,
        ready as workers take them with grouped jobs last in no particular order). A job that left
        the state and came back may show again. A page may hold fewer than ``limit`` jobs before
        the end; only a None cursor ends the walk. A cursor not made by a walk of this queue's
        ``state`` raises ``InvalidArgumentError``."""
    def dead_letters(self, offset: int = 0, limit: int = 100) -> Coroutine[Any, Any, list[JobInfo]]:
        """Dead jobs, oldest death first."""
    def requeue(self, id: str) -> Coroutine[Any, Any, None]:
        """Move a dead job back to ready with its attempts reset.

        ``JobNotFoundError`` if it is not dead."""
    def requeue_all(self) -> Coroutine[Any, Any, int]:
        """Requeue every dead job; returns how many."""
    def purge(self) -> Coroutine[Any, Any, int]:
        """Delete every dead job; returns how many."""
    def retry_jobs(self, ids: Sequence[str]) -> Coroutine[Any, Any, list[_BulkItem]]:
        """Retry the dead jobs of ``ids`` (at most 1000): each back to ready, attempts reset.

        Returns, per id in order, ``{"id", "outcome", "state"}``: outcome ``"done"``,
        ``"wrong_state"`` (``state`` names the job's state) or ``"unknown"``. More than 1000 ids
        or an invalid one: ``InvalidArgumentError``, nothing done."""
    def delete_jobs(self, ids: Sequence[str]) -> Coroutine[Any, Any, list[_BulkItem]]:
        """Delete the finished (dead or completed) jobs of ``ids`` (at most 1000) and all kept for
        them; per id, what happened (as ``retry_jobs``)."""
    def cancel_jobs(self, ids: Sequence[str]) -> Coroutine[Any, Any, list[_BulkItem]]:
        """Cancel the delayed, ready or active jobs of ``ids`` (at most 1000); per id, what
        happened (as ``retry_jobs``)."""
    def bulk_found(
        self,
        action: Literal["retry", "delete", "cancel", "promote"],
        *,
        task: Optional[str] = None,
        group: Optional[str] = None,
        state: Optional[str] = None,
        contains: Optional[str] = None,
        cursor: Optional[str] = None,
    ) -> Coroutine[Any, Any, _BulkPage]:
        """One page of ``action`` (``"retry"``, ``"delete"``, ``"cancel"`` or ``"promote"``) on the
        jobs a search finds (the filter of ``find_jobs``).

        Returns ``{"done", "skipped", "cursor"}``: pass ``cursor`` to the next call; None when
        the search is over. A state the action does not apply to is ``InvalidArgumentError``."""
    def retry_found(
        self,
        *,
        task: Optional[str] = None,
        group: Optional[str] = None,
        contains: Optional[str] = None,
    ) -> Coroutine[Any, Any, _BulkCounts]:
        """Retry every dead job a search finds, a page at a time; returns ``{"done", "skipped"}``."""
    def delete_found(
        self,
        *,
        task: Optional[str] = None,
        group: Optional[str] = None,
        state: Optional[str] = None,
        contains: Optional[str] = None,
    ) -> Coroutine[Any, Any, _BulkCounts]:
        """Delete every finished job a search finds (``state``: ``"dead"``, ``"completed"`` or
        None for both), a page at a time; returns ``{"done", "skipped"}``."""
    def cancel_found(
        self,
        *,
        task: Optional[str] = None,
        group: Optional[str] = None,
        state: Optional[str] = None,
        contains: Optional[str] = None,
    ) -> Coroutine[Any, Any, _BulkCounts]:
        """Cancel every delayed, ready or active job a search finds, a page at a time; returns
        ``{"done", "skipped"}``."""
    def promote_all(self) -> Coroutine[Any, Any, int]:
        """Run every delayed job now; returns how many."""
    def clean(self, state: Literal["completed", "dead"], older_than: _Seconds) -> Coroutine[Any, Any, int]:
        """Delete the ``"completed"`` or ``"dead"`` jobs that finished more than ``older_than``
        seconds ago (by the Redis clock), in calls of 1000; returns how many."""
    def obliterate(self, *, force: bool = False) -> Coroutine[Any, Any, int]:
        """Delete the queue: every key of every shard (jobs, data, schedules, groups, history,
        settings); returns how many keys.

        Refused (``InvalidArgumentError``, nothing written) while workers are live, unless
        ``force``. Enqueues during the call are refused; afterwards they start a fresh queue."""
    def stats(self) -> Coroutine[Any, Any, JobStats]:
        """Jobs per state and lifetime counters."""
    def work(
        self,
        handler: _JobHandler,
        *,
        concurrency: Optional[int] = None,
        batch_size: Optional[int] = None,
        lease: Optional[_Seconds] = None,
        poll_interval: Optional[_Seconds] = None,
        grace: Optional[_Seconds] = None,
        stop_when_drained: Optional[bool] = None,
        schedules: Optional[bool] = None,
        max_jobs: Optional[int] = None,
    ) -> AsyncWorker:
        """Start a worker in the background.

        ``handler(job)`` per job, up to ``concurrency`` at a
        time. Returning completes the job; raising fails the attempt (error text
        ``"ExcType: message"``, traceback logged on the ``tideq`` logger), retried after backoff
        or dead-lettered after ``max_attempts``. Plain handlers run in pooled worker threads (as
        in a ``ThreadPoolExecutor``: a ``threading.local`` lives as long as its thread, not one
        job), ``async def`` ones on a private event loop per job; ``AsyncQueue.work`` is called from
        a running event loop, on which its ``async def`` handlers run as tasks (cancelled when
        their attempt times out, or at the end of the shutdown grace period). The ``lease`` (seconds) is renewed by Rust
        while the handler runs; a worker that dies loses its jobs to another worker after it.
        ``batch_size``: most jobs leased per fetch, at most 1000 (0: half the concurrency, at most 1000; two fetches are kept
        in flight). An attempt running past its ``timeout`` fails ("timed out") and its handler is
        asked to stop (``job.cancelled``; ``async def`` handlers are cancelled); the job is retried
        only once the handler returned, and never runs twice at a time. On stop, running jobs get
        ``grace`` seconds, then are asked to stop likewise (see ``Worker.stop``).
        A worker stops by itself on ``AuthError`` or ``PermissionDeniedError`` (see ``Worker``).
        With ``schedules`` the worker also fires the queue's due schedule slots
        (``upsert_schedule``): any number of workers may, each slot still makes one job.
        With ``max_jobs`` the worker leases at most that many jobs in its life (never one more),
        then stops leasing, finishes those it runs and stops by itself (``running`` turns False,
        ``error`` stays None): how a worker process is recycled (``serve``, ``tideq worker
        --max-jobs-per-process``); 0 raises ``InvalidArgumentError``.
        Options not given take the core's defaults: ``concurrency`` 10, ``batch_size`` 0,
        ``lease`` 30 s, ``poll_interval`` 5 s, ``grace`` 10 s, ``stop_when_drained`` False,
        ``schedules`` True, ``max_jobs`` None (no limit)."""
    def run(
        self,
        handler: _JobHandler,
        *,
        concurrency: Optional[int] = None,
        batch_size: Optional[int] = None,
        lease: Optional[_Seconds] = None,
        poll_interval: Optional[_Seconds] = None,
        grace: Optional[_Seconds] = None,
        stop_when_drained: Optional[bool] = None,
        schedules: Optional[bool] = None,
        max_jobs: Optional[int] = None,
    ) -> Coroutine[Any, Any, WorkerStats]:
        """``work()``, then wait until the worker stops.

        ``work()`` and block until SIGINT/SIGTERM or, with
        ``stop_when_drained``, until nothing is ready, delayed or active; raises the error the
        worker stopped on, if any. The first SIGINT/SIGTERM stops gracefully and prints one line
        on stderr saying so; a second one stops at once (``abort()``). ``AsyncQueue.run`` is
        awaited instead, and cancelling it stops the worker gracefully too."""
    def work_batches(
        self,
        handler: _BatchHandler,
        *,
        size: int,
        wait: Optional[_Seconds] = None,
        concurrency: Optional[int] = None,
        batch_size: Optional[int] = None,
        lease: Optional[_Seconds] = None,
        poll_interval: Optional[_Seconds] = None,
        grace: Optional[_Seconds] = None,
        stop_when_drained: Optional[bool] = None,
        schedules: Optional[bool] = None,
        max_jobs: Optional[int] = None,
    ) -> AsyncWorker:
        """Start a worker whose handler gets a list of up to ``size`` jobs at once (``wait``:
        longest seconds a leased job waits for its batch to fill; 0 or None hands over what one
        fetch brought). Returning None completes them all; returning a mapping ``{job_id: error}``
        (an error message or an exception) fails those jobs (retried or dead-lettered, each by its
        attempts) and completes the rest; raising fails them all. Each job keeps its own lease,
        renewed while it waits and runs. ``concurrency`` counts jobs (``concurrency // size``
        batches at once); the other options are ``work``'s."""
    def run_batches(
        self,
        handler: _BatchHandler,
        *,
        size: int,
        wait: Optional[_Seconds] = None,
        concurrency: Optional[int] = None,
        batch_size: Optional[int] = None,
        lease: Optional[_Seconds] = None,
        poll_interval: Optional[_Seconds] = None,
        grace: Optional[_Seconds] = None,
        stop_when_drained: Optional[bool] = None,
        schedules: Optional[bool] = None,
        max_jobs: Optional[int] = None,
    ) -> Coroutine[Any, Any, WorkerStats]:
        """``work_batches()`` and wait until it stops, as ``run()`` does."""
    @overload
    def task(self, func: Callable[_P, _R], /) -> AsyncTask[_P, _R]:
        """Register ``func`` as a task of this queue, named by ``name`` (default: the function's
        name), with default enqueue options (``priority``, ``group``, ``format``, ...); returns a
        ``Task``: call it to run the function here, ``.enqueue(*args, **kwargs)`` to enqueue it
        (arguments bound to the parameters by name), and ``work_tasks()`` runs it by name."""
    @overload
    def task(
        self, func: None = None, /, *, name: Optional[str] = None, **defaults: Any
    ) -> Callable[[Callable[_P, _R]], AsyncTask[_P, _R]]: ...
    def enqueue_task(
        self,
        name: str,
        data: Any = None,
        *,
        format: Optional[_Format] = None,
        id: Optional[str] = None,
        delay: Optional[_Seconds] = None,
        run_at: Optional[_When] = None,
        max_attempts: Optional[int] = None,
        backoff: Optional[Backoff] = None,
        timeout: Optional[_Seconds] = None,
        priority: Optional[int] = None,
        group: Optional[str] = None,
        dedup: Optional[_Dedup] = None,
        debounce: Optional[_Debounce] = None,
        trace: Optional[_Trace] = None,
        expires_after: Optional[_Seconds] = None,
        expires_at: Optional[_When] = None,
        cost: Optional[int] = None,
    ) -> Coroutine[Any, Any, Enqueued]:
        """Enqueue task ``name`` with ``data`` as its arguments (a dict runs ``f(**data)``, a list
        ``f(*data)``, anything else ``f(data)``), encoded as ``format`` (``"json"``, the default,
        or ``"msgpack"``). The other options are ``enqueue``'s."""
    def work_tasks(
        self,
        tasks: Optional[Mapping[str, Callable[..., Any]]] = None,
        *,
        concurrency: Optional[int] = None,
        batch_size: Optional[int] = None,
        lease: Optional[_Seconds] = None,
        poll_interval: Optional[_Seconds] = None,
        grace: Optional[_Seconds] = None,
        stop_when_drained: Optional[bool] = None,
        schedules: Optional[bool] = None,
        max_jobs: Optional[int] = None,
    ) -> AsyncWorker:
        """Start a worker running each job's task by name: ``tasks`` maps names to functions
        (default: the tasks registered with ``@queue.task``), plain or ``async def``, called with
        the job's decoded arguments. A job with no task name, or one not in ``tasks``, is
        dead-lettered at once with an error naming the tasks this worker runs. The options are
        ``work``'s."""
    def run_tasks(
        self,
        tasks: Optional[Mapping[str, Callable[..., Any]]] = None,
        *,
        concurrency: Optional[int] = None,
        batch_size: Optional[int] = None,
        lease: Optional[_Seconds] = None,
        poll_interval: Optional[_Seconds] = None,
        grace: Optional[_Seconds] = None,
        stop_when_drained: Optional[bool] = None,
        schedules: Optional[bool] = None,
        max_jobs: Optional[int] = None,
    ) -> Coroutine[Any, Any, WorkerStats]:
        """``work_tasks()`` and wait until it stops, as ``run()`` does."""
    def upsert_schedule(
        self,
        name: str,
        payload: _BytesLike = b"",
        *,
        cron: Optional[str] = None,
        every: Optional[_Seconds] = None,
        timezone: Optional[str] = None,
        task: Optional[str] = None,
        format: Optional[_Format] = None,
        priority: Optional[int] = None,
        group: Optional[str] = None,
        max_attempts: Optional[int] = None,
        backoff: Optional[Backoff] = None,
        timeout: Optional[_Seconds] = None,
    ) -> Coroutine[Any, Any, Optional[int]]:
        """Create the schedule ``name``, or change it; returns its next slot (epoch ms, Redis clock).

        Each slot enqueues one job with ``payload`` and the options given, id
        ``"<name>@<slot ms>"``, whichever workers (started with ``schedules``, the default) see it
        due: exactly one of ``cron`` (a cron pattern, 5 fields or 6 with seconds first, in
        ``timezone``, an IANA name such as ``"Europe/Paris"``; default UTC) or ``every`` (seconds,
        at least 0.01: slots at the multiples of the interval since the epoch). Declaring the same
        schedule again changes nothing (its next slot stays); after an outage a schedule runs once
        for the slots it missed. ``priority``, ``group``, ``max_attempts``, ``backoff`` and
        ``timeout`` are given to each job as ``enqueue`` takes them; ``task`` makes each job a run
        of that task, ``payload`` then holding its arguments encoded as ``format`` says
        (``"json"``, the default with a task, or ``"msgpack"``): arguments that do not decode so
        raise ``InvalidArgumentError``, as does any other bad input, and nothing is written.
        None when the pattern has no slot to come."""
    def remove_schedule(self, name: str) -> Coroutine[Any, Any, bool]:
        """Remove the schedule ``name`` (no slot of it fires after this); True if it existed."""
    def run_schedule(self, name: str) -> Coroutine[Any, Any, str]:
        """Enqueue one job of the schedule ``name`` now, as its next slot would (same payload and
        options), without moving its slots: the next one still fires when due. The job's id is
        ``"<name>@run-<ms>"`` (the current second of the Redis clock), so a second call within
        that second enqueues nothing more and returns the same id. Returns the job's id; an unknown
        name raises ``InvalidArgumentError``, nothing written."""
    def pause_schedule(self, name: str) -> Coroutine[Any, Any, bool]:
        """Pause the schedule ``name``: it keeps its definition and next slot and does not fire until
        ``resume_schedule``. False if it was paused already; an unknown name raises
        ``InvalidArgumentError``, nothing written."""
    def resume_schedule(self, name: str) -> Coroutine[Any, Any, bool]:
        """Resume the paused schedule ``name``. Slots passed while paused are not all run: as after
        an outage, the latest of them fires once, then the schedule goes on. False if it was not
        paused; an unknown name raises ``InvalidArgumentError``, nothing written."""
    def schedules(self) -> Coroutine[Any, Any, list[ScheduleInfo]]:
        """The queue's schedules with their next slots, by name."""
    def workers(self) -> Coroutine[Any, Any, list[WorkerInfo]]:
        """The queue's live workers (seen in the last 45 s), in the order they started.

        A worker is seen when it fetches jobs and, while it runs jobs, each time it renews their
        leases, so a worker busy with long jobs stays listed. One that stops leaves the list."""
    def history(self, window: _Seconds = 3600.0, step: _Seconds = 60.0) -> Coroutine[Any, Any, list[HistoryPoint]]:
        """What the queue did in each ``step`` of the last ``window``, oldest first.

        Seconds (or ``timedelta``): ``step`` a whole number of minutes, ``window`` at least
        ``step`` and at most 14 days (else ``InvalidArgumentError``). The workers' reports leave a
        snapshot of the queue's totals in Redis once a minute, kept 14 days, so every reader sees
        the same history. Steps are aligned on multiples of ``step`` (UTC, the Redis clock); the
        last is the step under way, counted up to now. Minutes without any worker running are
        spread evenly over the gap once one reports again."""
    def task_metrics(self, window: Optional[_Seconds] = None) -> Coroutine[Any, Any, list[TaskMetrics]]:
        """Per task: jobs completed, failed attempts, jobs dead-lettered and handler run times over
        the last ``window``, by task name.

        Seconds (or ``timedelta``), from 60 s to 14 days (else ``InvalidArgumentError``); ``None``
        (the default): since the queue's workers began counting. Jobs without a task count under
        ``""``; a queue tracks its first 100 task names, later ones count under ``"(other)"``.
        Counted from the workers' periodic reports (every 15 s at most, and when a worker stops)."""
    def set_events(self, max_len: Optional[int]) -> Coroutine[Any, Any, None]:
        """Turn the queue's event log on, keeping about its newest ``max_len`` entries, or off (None).

        An entry holds one kind of event for a batch of jobs. Every producer and worker of the
        queue follows the setting at once; turning it off deletes the log. Events are off by
        default. ``max_len`` 0 raises ``InvalidArgumentError``."""
    def events(self, name: Optional[str] = None, from_start: bool = False) -> AsyncEventReader:
        """A reader of the queue's event log: what happened to its jobs, in order, as ``Event``s.

        It reads from now on (from this call), or with ``from_start`` from the oldest event kept.
        A reader with a ``name`` keeps its place in Redis: started again with the same name (in
        any process), it resumes where it stopped (events it took but had not stored yet may come
        again), so one started ``from_start`` (the first time) misses nothing the log still holds
        even if it crashed; one that fell behind the log's length gets a ``"lagged"`` event first.
        The blocking API returns an ``EventReader`` (``for event in q.events(): ...``), the
        asyncio API an ``AsyncEventReader`` (``async for event in aq.events(): ...``; ``events()``
        itself is not awaited). Nothing is logged until ``set_events`` turns the log on.

        An ``AsyncEventReader`` starts at the call (so "from now on" means from the call) and is
        awaited on its first use (``async for``, ``await reader.next()``, ``async with``), which
        raises the start's errors."""
    def pause(self) -> Coroutine[Any, Any, None]:
        """Workers stop starting jobs of this queue (running ones finish; enqueues go on)."""
    def resume(self) -> Coroutine[Any, Any, None]:
        """Workers start jobs again; idle ones are woken at once."""
    def pause_group(self, group: str) -> Coroutine[Any, Any, None]:
        """Stop starting jobs of ``group`` (other groups go on)."""
    def resume_group(self, group: str) -> Coroutine[Any, Any, None]:
        """Start jobs of ``group`` again."""
    def is_paused(self) -> Coroutine[Any, Any, bool]:
        """True when the queue is paused."""
    def set_limits(
        self,
        *,
        max_active: Optional[int] = None,
        rate: Optional[Rate] = None,
        group_concurrency: Optional[int] = None,
        group_rate: Optional[Rate] = None,
    ) -> Coroutine[Any, Any, None]:
        """Replace the queue's limits, kept in Redis for every worker (None: no limit):
        ``max_active`` jobs running at once, ``rate`` job starts per window, and per group
        (groups without limits of their own) ``group_concurrency`` running and ``group_rate``
        starts. Bad values raise ``InvalidArgumentError`` and change nothing."""
    def limits(self) -> Coroutine[Any, Any, Limits]:
        """The queue's limits."""
    def set_limiter(self, name: Optional[str]) -> Coroutine[Any, Any, None]:
        """Make every start of this queue's jobs take from the shared limiter ``name`` (defined
        with ``Limiter``), across its workers and every queue that names it; None stops it. A
        concurrency limiter's slot is held while the job runs. Jobs over the limit stay ready, in
        their place. A limiter never defined raises ``InvalidArgumentError``; nothing is written."""
    def limiter_name(self) -> Coroutine[Any, Any, Optional[str]]:
        """The shared limiter this queue's starts take from, or None."""
    def set_group_limiter(self, group: str, name: Optional[str]) -> Coroutine[Any, Any, None]:
        """Make every start of ``group``'s jobs take from the shared limiter ``name`` (defined with
        ``Limiter``), whichever queue the group is in; None stops it. A job over the limit is not
        run: it keeps its place in its group without using an attempt, and the group waits for
        room while the queue's other groups go on. A limiter never defined raises
        ``InvalidArgumentError``; nothing is written."""
    def set_group_limits(
        self, group: str, *, concurrency: Optional[int] = None, rate: Optional[Rate] = None
    ) -> Coroutine[Any, Any, None]:
        """Set ``group``'s own limits (None: the queue's defaults)."""
    def group(self, name: str) -> Coroutine[Any, Any, GroupInfo]:
        """What group ``name`` holds (ready, running) and obeys (paused, limits in force)."""
    def groups(self) -> Coroutine[Any, Any, list[GroupInfo]]:
        """Every group the queue knows (with jobs, running jobs or settings of its own), by name,
        each as ``group`` tells it. Reads every group (in short calls); to show some of many,
        read a page with ``groups_page``."""
    def groups_page(self, cursor: str | None = None, count: int | None = None) -> Coroutine[Any, Any, GroupPage]:
        """About ``count`` (1 to 250, default 100) of the groups ``groups`` lists, from ``cursor`` (None: the
        start), in no particular order, and the cursor of the next page (None after the last).
        Each call costs about ``count`` groups' work, however many the queue has."""
    def lease_jobs(self, max: int, *, lease: _Seconds) -> Coroutine[Any, Any, list[Job]]:
        """Lease up to ``max`` (at most 1000) ready jobs for ``lease`` seconds, for processing without a worker
        (empty when nothing is ready). Settle each with ``complete``, ``fail`` or ``release``;
        nothing renews these leases but ``extend``: a job whose lease expires is delivered
        again."""
    def complete(self, job: Job) -> Coroutine[Any, Any, None]:
        """Mark a leased job done (``LeaseLostError`` if its lease expired and it was
        redelivered)."""
    def fail(self, job: Job, error: Union[str, BaseException]) -> Coroutine[Any, Any, bool]:
        """Fail a leased attempt with ``error`` (a message, or an exception shown as
        ``"ExcType: message"``): retried after the job's backoff, or dead-lettered after
        ``max_attempts``. Returns True when dead-lettered."""
    def release(self, job: Job) -> Coroutine[Any, Any, None]:
        """Return a leased job to the front of the queue without counting the attempt."""
    def extend(self, job: Job, lease: _Seconds) -> Coroutine[Any, Any, None]:
        """Push a leased job's lease deadline to ``lease`` seconds from now."""
    def enqueue_flow(self, root: FlowJob) -> Coroutine[Any, Any, Enqueued]:
        """Enqueue a flow: ``root`` and, to any depth, the jobs it waits for (``FlowJob``); returns
        the root's ``Enqueued``.

        The root goes to this queue unless its ``queue=`` says otherwise, each child to its
        parent's unless its own does. A parent waits (``get`` shows ``"waiting"`` and
        ``children_pending``) until every one of its children finished, then runs once, and
        reads how they ended with ``job.children_results()``; its ``on_failure`` says what a
        child's failure does to it. Workers of each queue of the flow relay its children's ends to
        their parents. The whole flow is written or none of it. A root ``id`` that exists already
        (or finished within the idempotency window) creates nothing (``created`` False). Refused
        with ``InvalidArgumentError``, nothing written: more than 100000 jobs under the root (a
        chord of 100000 children and its callback fits), two jobs with the same id, a child id
        that exists already (or finished within its queue's idempotency window), a queue of
        another key prefix, and what ``enqueue`` refuses. Cancelling a waiting parent
        (``cancel``) cancels its pending children, to any depth."""
    def children_results(self, parent_id: str) -> Coroutine[Any, Any, list[ChildResult]]:
        """How the children of job ``parent_id`` (of this queue) ended so far, as ``ChildResult``s,
        in no particular order (each once). Every child has finished when a parent runs; kept
        while the parent is."""
    def enqueue_graph(self, nodes: Iterable[GraphNode]) -> Coroutine[Any, Any, Enqueued]:
        """Enqueue a graph of ``GraphNode``s: each job runs once every job it runs ``after``
        finished, and reads how they ended with ``job.children_results()``; a step
        (``FlowJob(task=...)`` without ``data``) gets their results as its argument, a list in its
        ``after`` order. Jobs go to this queue unless their ``queue=`` says otherwise. Written whole
        or not at all; returns the ``Enqueued`` of the last job declared that no job runs after (if
        it exists already, nothing is created: ``created`` False). Refused with
        ``InvalidArgumentError``, nothing written: no jobs, an id declared twice, an ``after``
        naming an id not declared, a cycle (the error names it), more than 1000 jobs after one
        job, a job with children, and what ``enqueue_flow`` refuses. Cancelling a job cancels the
        jobs it runs after that are still pending."""

# ---- end of generated section ----
