"""tideq: Redis-backed queues whose logic lives in one Rust core.

``CappedQueue`` (blocking) and ``AsyncCappedQueue`` (asyncio) are capped grouped queues: each
group keeps its newest ``capacity`` items (pushing more drops the oldest), batches are served
round-robin over groups, and delivery is at-most-once (a popped batch is gone even if its handler
fails). ``peek`` shows a group's oldest items (``Peeked``) without taking them.

``Queue`` (blocking) and ``AsyncQueue`` (asyncio) are reliable job queues: delayed jobs (by the
Redis clock), leases renewed while the handler runs, retries with backoff, dead letters after
``max_attempts``, idempotent ids and cancel. Delivery is at-least-once, so handlers should be
idempotent.

``Client`` reaches one server (``url``), a Redis Cluster (``cluster=[seed URLs]``; split a queue
over the masters with ``shards=N``) or a Sentinel-managed primary (``sentinel=[URLs]``,
``master_name``).

Errors derive from ``TideqError``, whose ``code`` is the core's stable error code.
Jobs can carry a ``priority`` (1 runs first, up to ``MAX_PRIORITY``; jobs without one run before
any prioritized job) and a ``group`` (groups are served round-robin, under per-group limits);
``pause``/``resume``, ``set_limits`` (``Rate``) and ``group`` control and show the flow.
``@queue.task`` registers a function as a ``Task`` run by name (``work_tasks``); ``work_batches``
hands a handler lists of jobs; ``lease_jobs`` leases jobs for manual processing. What a handler
returns is stored with its job (``get(id).result``; ``job.progress(value)`` reports progress) and
``wait(id)`` waits for it. ``enqueue(dedup=..., debounce=...)`` drops or merges repeated
enqueues; ``upsert_schedule`` enqueues a job per cron or interval slot, fired by the workers
(``schedules()`` lists them as ``ScheduleInfo``); ``workers()`` lists the live workers
(``WorkerInfo``). ``set_events`` turns on the queue's event log,
which ``events()`` readers (``EventReader``, ``AsyncEventReader``) read as ``Event``s, a named
reader resuming where it stopped.

``enqueue_flow`` enqueues a flow of ``FlowJob``s: a parent job runs once every one of its
children (on any queues, to any depth) finished, and reads how they ended
(``job.children_results()``, ``ChildResult``). ``chain(a, b, c)`` runs jobs one after another,
each getting the previous result; ``chord(children, callback)`` runs a callback once after all
its children, with their results. ``enqueue_graph`` enqueues ``GraphNode``s, jobs that run after
several others (a graph without cycles).

``enqueue(trace=...)`` carries a W3C trace context to the job's worker (``Job.trace``); with
OpenTelemetry installed (the ``otel`` extra), enqueues carry the current span's and workers run
each handler in a consumer span continuing it.

A job handler raises ``Snooze(delay)`` to run its job again later without using an attempt,
``BackOff(delay, group=...)`` to hold the queue or the job's group (a rate limit it ran into),
and ``DontRetry`` to dead-letter the job at once.

``Limiter`` (``AsyncLimiter`` in asyncio) defines concurrency, window and token-bucket limits by
name, shared by every queue and process; ``acquire`` inside a handler takes from one, raising
``OverLimit`` (a ``Snooze``) when it is over its limit.

``serve(*workers)`` (``await serve_async(*workers)`` in asyncio) is a worker process's main: it
runs started workers until SIGINT/SIGTERM, with an optional health endpoint (``/livez``,
``/readyz``) and a job limit for recycling; ``tideq worker module:queue --processes N`` (the
command installed with the package) runs supervised worker processes of it.

``acl_rules`` gives the Redis ACL rules of each role (producer, worker, admin, capped producer
and consumer) on a queue.
"""

from importlib.util import find_spec as _find_spec

from tideq._tideq import (
    AsyncCappedQueue,
    AsyncConsumer,
    AsyncEventReader,
    AsyncQueue,
    AsyncWorker,
    AuthError,
    Backoff,
    CappedQueue,
    CappedGroupPage,
    CappedStats,
    ChildResult,
    Client,
    ClosedError,
    ConnectionError,
    Encryption,
    Consumer,
    ConsumerStats,
    Enqueued,
    Event,
    EventReader,
    EvictionPolicyError,
    FlowJob,
    ForkedError,
    GraphNode,
    GroupInfo,
    GroupPage,
    InvalidArgumentError,
    Job,
    JobFailedError,
    JobInfo,
    Attempt,
    LogLine,
    JobNotCancellableError,
    JobNotFoundError,
    JobWrongStateError,
    JobPage,
    JobSearch,
    JobStats,
    LeaseLostError,
    Limits,
    MAX_COST,
    MAX_PRIORITY,
    NotRedisError,
    NotReplicatedError,
    OutOfMemoryError,
    PayloadTooLargeError,
    Peeked,
    PermissionDeniedError,
    Queue,
    Rate,
    RedisError,
    ScheduleInfo,
    TideqError,
    TimeoutError,
    NotSupportedError,
    UnreadableItem,
    Worker,
    HistoryPoint,
    TaskMetrics,
    ServerInfo,
    WorkerInfo,
    WorkerStats,
    __version__,
    acl_rules,
    chain,
    chord,
    decode_envelope,
    encode_envelope,
    serve,
    serve_async,
)
from tideq._outcomes import BackOff, DontRetry, Snooze
from tideq._limiter import AsyncLimiter, AsyncLimitSlot, Limiter, LimitSlot, OverLimit
from tideq._tasks import AsyncTask, Task

# OpenTelemetry, when installed: enqueues carry the current span's trace context and workers run
# handlers in consumer spans that continue it (tideq._otel). Without it, nothing of it is
# imported and the native code never calls back for it.
def _opentelemetry() -> bool:
    try:
        return _find_spec("opentelemetry") is not None
    except (ImportError, ValueError):  # e.g. sys.modules["opentelemetry"] without a __spec__
        return False


if _opentelemetry():
    try:
        from tideq import _otel  # noqa: F401  (registers its hooks on import)
    except ImportError:  # an opentelemetry namespace package without opentelemetry-api
        pass
del _find_spec, _opentelemetry

__all__ = [
    "AsyncCappedQueue",
    "AsyncConsumer",
    "AsyncEventReader",
    "AsyncQueue",
    "AsyncTask",
    "AsyncWorker",
    "AuthError",
    "BackOff",
    "Backoff",
    "CappedQueue",
    "CappedGroupPage",
    "CappedStats",
    "ChildResult",
    "Client",
    "ClosedError",
    "ConnectionError",
    "Encryption",
    "Consumer",
    "ConsumerStats",
    "DontRetry",
    "Enqueued",
    "Event",
    "EventReader",
    "EvictionPolicyError",
    "FlowJob",
    "ForkedError",
    "GraphNode",
    "GroupInfo",
    "GroupPage",
    "InvalidArgumentError",
    "Job",
    "JobFailedError",
    "JobInfo",
    "Attempt",
    "LogLine",
    "JobNotCancellableError",
    "JobNotFoundError",
    "JobWrongStateError",
    "JobPage",
    "JobSearch",
    "JobStats",
    "LeaseLostError",
    "Limits",
    "MAX_COST",
    "MAX_PRIORITY",
    "NotRedisError",
    "NotReplicatedError",
    "OutOfMemoryError",
    "PayloadTooLargeError",
    "Peeked",
    "PermissionDeniedError",
    "Queue",
    "Rate",
    "RedisError",
    "ScheduleInfo",
    "Snooze",
    "Limiter",
    "AsyncLimiter",
    "LimitSlot",
    "AsyncLimitSlot",
    "OverLimit",
    "Task",
    "TideqError",
    "TimeoutError",
    "NotSupportedError",
    "UnreadableItem",
    "Worker",
    "HistoryPoint",
    "TaskMetrics",
    "ServerInfo",
    "WorkerInfo",
    "WorkerStats",
    "__version__",
    "acl_rules",
    "chain",
    "chord",
    "decode_envelope",
    "encode_envelope",
    "serve",
    "serve_async",
]
