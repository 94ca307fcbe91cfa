//! `tideq.Queue` (blocking) and `tideq.AsyncQueue` (asyncio) over one `tideq::Queue` (core
//! `jobs`): both extend the hidden `_Queue`, which holds the API mode and has every method. This
//! file holds the handle and the producer (`enqueue`, `enqueue_many`); the other roles add their
//! methods to `_Queue` in their own files (pyo3's `multiple-pymethods`): [`crate::outcome`] (`wait`), [`crate::admin`],
//! [`crate::worker`], [`crate::task`], [`crate::schedule`], [`crate::events`], [`crate::flow`],
//! [`crate::lease`]. Conversion only: every operation, script and check is the core's.

use pyo3::prelude::*;
use pyo3::types::PyDict;
use pyo3::IntoPyObjectExt;
use tideq::QueueOptions;

use crate::client::Client;
use crate::convert::{self, Int, Opt, Secret, Secs, Text};
use crate::error;
use crate::job::{Backoff, Enqueued};
use crate::options::{self, JobArgs};
use crate::runtime::{self, Api};
use crate::signal::{self, Started};

/// A job queue; `Queue` and `AsyncQueue` differ only in the API mode they open it with.
#[pyclass(module = "tideq", name = "_Queue", subclass, frozen)]
pub struct QueueBase {
    pub(crate) queue: tideq::Queue,
    pub(crate) client: Py<Client>,
    pub(crate) api: Api,
    /// The tasks registered with `@queue.task`: name -> `Task`.
    pub(crate) tasks: Py<PyDict>,
    /// The workers started from this handle, which leaving its `with` block shuts down.
    pub(crate) started: Started,
}

runtime::api_classes!(
    /// A reliable job queue, blocking API (the GIL is released while waiting on Redis).
    ///
    /// Delivery is at-least-once: handlers should be idempotent. Queue-wide defaults:
    /// ``max_attempts`` deliveries before a job is dead-lettered, ``backoff`` before retries,
    /// ``timeout`` seconds per attempt (None: no limit); the newest ``keep_completed`` completed jobs
    /// (past it the oldest go 5% at a time) younger than ``keep_for`` seconds (None: no age limit)
    /// stay visible to ``get``; error texts
    /// are cut to ``max_error_len`` bytes. The newest ``keep_dead`` dead jobs (None: no limit)
    /// younger than ``keep_dead_for`` seconds (None: no age limit) are kept; older ones are deleted
    /// (counted in ``stats().dead_trimmed``). An ``id`` given to ``enqueue`` is remembered for
    /// ``idempotency_window`` seconds after its job completed or died, so enqueuing it again within
    /// that time creates nothing even once the job was trimmed (None: only while the job is kept;
    /// cancelled and purged jobs' ids are forgotten at once), at most ``idempotency_max_ids`` ids
    /// (the oldest forgotten first).
    /// Pass a ``client`` or a ``url`` (neither: ``Client()``).
    /// Options not given (or None where None has no meaning of its own) take the core's defaults:
    /// ``max_attempts`` 5, ``Backoff.exponential()``, no ``timeout``, ``keep_completed`` 1000,
    /// ``keep_for`` one day, ``max_error_len`` 4096, ``keep_dead`` 10000, ``keep_dead_for`` 180
    /// days, ``idempotency_window`` one day, ``idempotency_max_ids`` 100000, ``max_result_len``
    /// 65536 (the largest result or progress value stored with a job, in bytes: a larger result
    /// fails the attempt, a larger progress raises ``PayloadTooLargeError``).
    ///
    /// ``shards`` (1 to 1024) splits the queue into that many hash tags, which a Redis Cluster
    /// spreads over its masters; a job's shard is fixed by its id (so ids stay idempotent and
    /// ``get``/``cancel`` work), workers serve every shard and ``stats`` adds them up. Every
    /// handle of a queue must use the same count: the first producer or worker records it in
    /// Redis, and a handle made with another count raises ``InvalidArgumentError`` at its first
    /// call (a worker stops on it). Changing it remaps ids: drain the queue, then delete that record
    /// (``<prefix>:{<queue>}:shards``). Queue names may not contain ``#``.
    ///
    /// ``encryption`` (an ``Encryption``) seals payloads, results, progress, log lines and error
    /// texts with AES-256-GCM before they reach Redis; ids, task names, groups and priorities stay
    /// clear. A job sealed with a key the worker's queue cannot get is dead-lettered, its error
    /// naming the key id.
    ///
    /// Used as a context manager (``with Queue(...) as q:``, ``async with`` for ``AsyncQueue``),
    /// leaving the block shuts down the workers started from ``q`` that still run, as leaving a
    /// worker's own ``with`` block does; the queue stays usable. The Redis connections are its
    /// ``Client``'s (made on first use, shared by the queues on it): they stay open.
    pub struct Queue;
    /// A reliable job queue, asyncio API: same constructor and methods, all awaitable.
    pub struct AsyncQueue;
    impl QueueBase {
        #[pyo3(signature = (name, client=None, *, url=None, max_attempts=None, backoff=None, timeout=Opt::Unset, keep_completed=None, keep_for=Opt::Unset, max_error_len=None, keep_dead=Opt::Unset, keep_dead_for=Opt::Unset, idempotency_window=Opt::Unset, idempotency_max_ids=None, max_result_len=None, shards=1, encryption=None))]
        fn open(
            py: Python<'_>,
            api: Api,
            name: Text,
            client: Option<Py<Client>>,
            url: Option<Secret>,
            max_attempts: Option<Int>,
            backoff: Option<Bound<'_, Backoff>>,
            timeout: Opt<Secs>,
            keep_completed: Option<Int>,
            keep_for: Opt<Secs>,
            max_error_len: Option<Int>,
            keep_dead: Opt<Int>,
            keep_dead_for: Opt<Secs>,
            idempotency_window: Opt<Secs>,
            idempotency_max_ids: Option<Int>,
            max_result_len: Option<Int>,
            #[pyo3(from_py_with = convert::int)] shards: i64,
            // Encryption at rest.
            encryption: Option<Bound<'_, crate::crypt::Encryption>>,
        ) -> PyResult<Self> {
            let mut opts = QueueOptions {
                encryption: encryption.map(|e| e.get().0.clone()),
                ..Default::default()
            };
            let backoff = backoff.map(|b| b.get().0);
            convert::set_given!(
                opts,
                max_attempts: convert::count_u32,
                backoff: convert::as_is,
                timeout: convert::opt_duration,
                keep_completed: convert::count,
                keep_for: convert::opt_duration,
                max_error_len: convert::count,
                keep_dead: convert::opt_count,
                keep_dead_for: convert::opt_duration,
                idempotency_window: convert::opt_duration,
                idempotency_max_ids: convert::count,
                max_result_len: convert::count,
            );
            let client = Client::for_queue(py, client, url)?;
            let shards = convert::count("shards", shards)?;
            let queue = tideq::Queue::sharded(&client.get().inner, &name.0, shards, opts)
                .map_err(error::to_py)?;
            let tasks = PyDict::new(py).unbind();
            Ok(QueueBase {
                queue,
                client,
                api,
                tasks,
                started: Started::default(),
            })
        }
    }
);

impl QueueBase {
    /// The core's defaults of the constructor's [`Opt`] arguments, as its signature shows them
    /// ([`runtime::show_defaults`]).
    pub fn unset_defaults(py: Python<'_>) -> PyResult<Vec<(&'static str, Bound<'_, PyAny>)>> {
        let o = QueueOptions::default();
        Ok(vec![
            ("timeout", convert::secs_value(py, o.timeout)?),
            ("keep_for", convert::secs_value(py, o.keep_for)?),
            ("keep_dead", o.keep_dead.into_bound_py_any(py)?),
            ("keep_dead_for", convert::secs_value(py, o.keep_dead_for)?),
            (
                "idempotency_window",
                convert::secs_value(py, o.idempotency_window)?,
            ),
        ])
    }

    /// Leaving a `with` / `async with` block: the workers started from this handle shut down.
    pub fn exit<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.started.exit(py, self.api)
    }
}

signal::context_manager!(
    blocking Queue,
    "Shut down the workers started from this queue that still run (``work``, ``work_batches``,\n\
     ``work_tasks``), as leaving a worker's own ``with`` block does: running handlers get the\n\
     grace period. An exception raised in the block goes on; the queue stays usable."
);
signal::context_manager!(
    asyncio AsyncQueue,
    "Returns the queue itself.",
    "``await`` the shutdown of the workers started from this queue that still run, as leaving\n\
     a worker's own ``async with`` block does; an exception raised in the block goes on."
);

#[pymethods]
impl QueueBase {
    #[getter]
    fn name(&self) -> &str {
        self.queue.name()
    }

    #[getter]
    fn client(&self, py: Python<'_>) -> Py<Client> {
        self.client.clone_ref(py)
    }

    /// How many shards (hash tags) the queue is split into.
    #[getter]
    fn shards(&self) -> usize {
        self.queue.shard_count()
    }

    /// Enqueue one job.
    ///
    /// Ready now, after ``delay`` seconds or at ``run_at`` (a datetime, naive meaning local time,
    /// or epoch seconds), by the Redis clock. An ``id`` that already exists creates nothing
    /// (``created`` is False). Per-job options override the queue's. ``priority``: 1 (first) to
    /// ``MAX_PRIORITY`` (last); jobs without one run before any job with one, and jobs of one
    /// priority in order. ``group``: the job's group (a tenant, a user): groups are served
    /// round-robin, each in order, under the group limits.
    ///
    /// ``dedup``: a key (str) held until the job finishes (completed, dead-lettered or cancelled),
    /// or a ``(key, ttl_seconds)`` tuple held for that long from this enqueue whatever becomes of
    /// the job; while the key holds, an enqueue with it creates nothing and returns the job's id
    /// (``created`` False). ``debounce``: a ``(key, delay_seconds)`` tuple: the job waits
    /// ``delay_seconds``, and an enqueue with the same key while it waits replaces its payload and
    /// options and makes it wait again from then (same id, ``created`` False); once it started, a
    /// new job is created. Debounce takes no ``id``, ``delay``, ``run_at`` or ``dedup``; bad keys
    /// or times raise ``InvalidArgumentError`` and write nothing.
    ///
    /// ``trace``: the trace context the job carries to its worker, as W3C Trace Context headers
    /// (``{"traceparent": ..., "tracestate": ...}``, ``tracestate`` optional; another key, a
    /// malformed ``traceparent`` or more than 1024 bytes raise ``InvalidArgumentError`` and write
    /// nothing). Not given: with OpenTelemetry installed, the current span's (none outside a
    /// span); the worker's span continues it.
    ///
    /// ``expires_after`` (seconds from the job's due time) or ``expires_at`` (a datetime or epoch
    /// seconds): the job must start by then, or never. One no worker started by then (a retry
    /// included) is not run but dead-lettered with an error that says so, counted in
    /// ``stats().expired`` and reported as an ``"expired"`` event; ``wait`` raises
    /// ``JobFailedError``.
    ///
    /// ``cost``: the tokens the job takes when it starts from its queue's and its group's rate
    /// where that rate is a token bucket (``Rate(..., burst=)``), 1 (the default) to
    /// ``MAX_COST``; a cost above the burst takes the whole burst. Another value raises
    /// ``InvalidArgumentError`` and writes nothing.
    #[pyo3(signature = (payload, *, id=None, delay=None, run_at=None, max_attempts=None, backoff=None, timeout=None, priority=None, group=None, dedup=None, debounce=None, trace=None, expires_after=None, expires_at=None, cost=None))]
    #[allow(clippy::too_many_arguments)]
    fn enqueue<'py>(
        &self,
        py: Python<'py>,
        payload: &Bound<'py, PyAny>,
        id: Option<Text>,
        delay: Option<Secs>,
        run_at: Option<Bound<'py, PyAny>>,
        max_attempts: Option<Int>,
        backoff: Option<Bound<'py, Backoff>>,
        timeout: Option<Secs>,
        priority: Option<Int>,
        group: Option<Text>,
        dedup: Option<Bound<'py, PyAny>>,
        debounce: Option<Bound<'py, PyAny>>,
        trace: Option<Bound<'py, PyAny>>,
        expires_after: Option<Secs>,
        expires_at: Option<Bound<'py, PyAny>>,
        cost: Option<Int>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let payload = convert::bytes_like("payload", payload)?;
        let args = JobArgs {
            id,
            delay,
            run_at,
            max_attempts,
            backoff,
            timeout,
            priority,
            group,
            dedup,
            debounce,
            trace,
            expires_after,
            expires_at,
            cost,
        };
        let (q, opts) = (self.queue.clone(), args.convert_traced(py)?);
        self.api.call(
            py,
            async move { q.enqueue(payload, opts).await.map(Enqueued) },
        )
    }

    /// Enqueue payloads or ``(payload, options)`` pairs in one round trip.
    ///
    /// All are validated before anything is written. The options dict takes ``enqueue``'s
    /// keyword arguments; ``debounce`` only in a call of one item (``InvalidArgumentError``
    /// otherwise). Items with the same ``dedup`` key make one job. Items without a ``trace``
    /// carry the current span's, as ``enqueue`` says.
    fn enqueue_many<'py>(
        &self,
        py: Python<'py>,
        items: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (q, jobs) = (self.queue.clone(), options::jobs(items)?);
        self.api.call(py, async move {
            let done = q.enqueue_many(&jobs).await?;
            Ok(done.into_iter().map(Enqueued).collect::<Vec<_>>())
        })
    }

    fn __repr__(slf: &Bound<'_, Self>) -> PyResult<String> {
        let (this, py) = (slf.get(), slf.py());
        let o = this.queue.options();
        Ok(format!(
            "{}({}, max_attempts={}, backoff={}, timeout={}, keep_completed={}, keep_for={}, \
             keep_dead={}, keep_dead_for={}, idempotency_window={}, shards={}, client={})",
            slf.get_type().name()?,
            convert::str_repr(py, this.queue.name()),
            o.max_attempts,
            Backoff(o.backoff).__repr__(),
            convert::secs_repr(o.timeout),
            o.keep_completed,
            convert::secs_repr(o.keep_for),
            o.keep_dead.map_or("None".to_string(), |n| n.to_string()),
            convert::secs_repr(o.keep_dead_for),
            convert::secs_repr(o.idempotency_window),
            this.queue.shard_count(),
            convert::str_repr(py, &this.client.get().inner.config().redacted_url()),
        ))
    }
}
