//! `tideq.Queue` (blocking) and `tideq.AsyncQueue` (asyncio) over one `tideq::Queue` (core
//! `jobs` and `admin`): both extend the hidden `_Queue`, which holds the API mode and has every
//! method. Conversion only: every operation, script and check is the core's.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};
use tideq::{Debounce, Dedup, EnqueueOptions, Every, QueueOptions};

use crate::admin::JobPage;
use crate::client::Client;
use crate::convert::set_given;
use crate::convert::{self, Int, Opt, Secret, Secs, Text};
use crate::error;
use crate::events;
use crate::flow::{self, GroupInfo, GroupPage, Limits, Rate};
use crate::handler;
use crate::job::{Backoff, Enqueued, Job, JobInfo, JobStats, ScheduleInfo};
use crate::otel;
use crate::runtime::{self, Api};
use crate::signal;
use crate::worker::{self, Handlers};

/// Per-job options as keyword arguments (or an `enqueue_many` dict) before conversion.
#[derive(Default)]
struct JobArgs<'py> {
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
}

impl<'py> JobArgs<'py> {
    /// From an `enqueue_many` options dict: the keys are `enqueue`'s keyword arguments.
    fn from_dict(dict: &Bound<'py, PyDict>) -> PyResult<Self> {
        let mut args = JobArgs::default();
        for (key, value) in dict.iter() {
            let Text(key) = key.extract()?;
            if value.is_none() {
                continue;
            }
            let shown = convert::str_repr(dict.py(), &key);
            // A value of the wrong type is a TypeError naming the option; other errors (an id
            // that is not valid UTF-8, an int out of range) keep their class.
            let py = dict.py();
            let named = |e: PyErr| {
                if e.is_instance_of::<PyTypeError>(py) {
                    PyTypeError::new_err(format!("option {shown}: {e}"))
                } else {
                    e
                }
            };
            match key.as_str() {
                "id" => args.id = Some(value.extract().map_err(named)?),
                "delay" => args.delay = Some(value.extract().map_err(named)?),
                "run_at" => args.run_at = Some(value),
                "max_attempts" => args.max_attempts = Some(value.extract().map_err(named)?),
                "backoff" => {
                    args.backoff = Some(value.cast_into::<Backoff>().map_err(|e| named(e.into()))?)
                }
                "timeout" => args.timeout = Some(value.extract().map_err(named)?),
                "priority" => args.priority = Some(value.extract().map_err(named)?),
                "group" => args.group = Some(value.extract().map_err(named)?),
                "dedup" => args.dedup = Some(value),
                "debounce" => args.debounce = Some(value),
                "trace" => args.trace = Some(value),
                _ => {
                    return Err(PyTypeError::new_err(format!(
                        "unknown enqueue option {shown} (expected id, delay, run_at, \
                         max_attempts, backoff, timeout, priority, group, dedup, debounce or \
                         trace)"
                    )))
                }
            }
        }
        Ok(args)
    }

    fn convert(self) -> PyResult<EnqueueOptions> {
        Ok(EnqueueOptions {
            id: self.id.map(|t| t.0),
            delay: convert::opt_duration("delay", self.delay)?,
            run_at_ms: self
                .run_at
                .map(|t| convert::epoch_ms("run_at", &t))
                .transpose()?,
            max_attempts: self
                .max_attempts
                .map(|n| convert::count_u32("max_attempts", n))
                .transpose()?,
            backoff: self.backoff.map(|b| b.get().0),
            timeout: convert::opt_duration("timeout", self.timeout)?,
            priority: self
                .priority
                .map(|n| convert::count_u32("priority", n))
                .transpose()?,
            group: self.group.map(|t| t.0),
            dedup: self.dedup.map(|d| dedup(&d)).transpose()?,
            debounce: self.debounce.map(|d| debounce(&d)).transpose()?,
            trace: self.trace.map(|t| otel::context(&t)).transpose()?,
            ..EnqueueOptions::default()
        })
    }

    /// [`convert`](Self::convert), the trace context defaulting to the caller's current span's
    /// (OpenTelemetry; see [`otel::current`]).
    fn convert_traced(self, py: Python<'_>) -> PyResult<EnqueueOptions> {
        let mut opts = self.convert()?;
        if opts.trace.is_none() {
            opts.trace = otel::current(py);
        }
        Ok(opts)
    }
}

/// `dedup=`: a key (held until its job finishes) or a `(key, ttl_seconds)` tuple (a `None` TTL:
/// until its job finishes). Whether the key and TTL are acceptable is the core's check.
fn dedup(obj: &Bound<'_, PyAny>) -> PyResult<Dedup> {
    let wrong = || {
        PyTypeError::new_err(format!(
            "dedup must be a key (str) or a (key, ttl_seconds) tuple, not {}",
            shown(obj)
        ))
    };
    if obj.is_instance_of::<PyString>() {
        return Ok(Dedup::new(obj.extract::<Text>()?.0));
    }
    let (key, ttl) = pair(obj).ok_or_else(wrong)?;
    let ttl: Option<Secs> = ttl.extract().map_err(|_| wrong())?;
    Ok(Dedup {
        key: key.extract::<Text>()?.0,
        ttl: convert::opt_duration("dedup ttl", ttl)?,
    })
}

/// `debounce=`: a `(key, delay_seconds)` tuple. Whether the key and delay are acceptable is the
/// core's check.
fn debounce(obj: &Bound<'_, PyAny>) -> PyResult<Debounce> {
    let wrong = || {
        PyTypeError::new_err(format!(
            "debounce must be a (key, delay_seconds) tuple, not {}",
            shown(obj)
        ))
    };
    let (key, delay) = pair(obj).ok_or_else(wrong)?;
    let delay: Secs = delay.extract().map_err(|_| wrong())?;
    Ok(Debounce::new(
        key.extract::<Text>()?.0,
        convert::duration("debounce delay", delay)?,
    ))
}

/// A wrong `dedup`/`debounce` value as an error shows it: a tuple by its `repr()`, anything else
/// by its type.
fn shown(obj: &Bound<'_, PyAny>) -> String {
    match obj.cast::<PyTuple>() {
        Ok(_) => obj
            .repr()
            .map(|r| r.to_string())
            .unwrap_or_else(|_| "a tuple".into()),
        Err(_) => convert::type_name(obj),
    }
}

/// The two items of a 2-tuple whose first item is a `str`.
fn pair<'py>(obj: &Bound<'py, PyAny>) -> Option<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    let t = obj.cast::<PyTuple>().ok().filter(|t| t.len() == 2)?;
    let (first, second) = (t.get_item(0).ok()?, t.get_item(1).ok()?);
    first
        .is_instance_of::<PyString>()
        .then_some((first, second))
}

/// When a schedule's slots come, from `upsert_schedule`'s `cron`, `timezone` and `every`
/// (seconds): exactly one of `cron` and `every`, and a time zone only with `cron`.
fn every_of(cron: Option<Text>, timezone: Option<Text>, every: Option<Secs>) -> PyResult<Every> {
    match (cron, every) {
        (Some(Text(pattern)), None) => Ok(Every::Cron {
            pattern,
            timezone: timezone.map(|t| t.0),
        }),
        (None, Some(secs)) if timezone.is_none() => {
            Ok(Every::Interval(convert::duration("every", secs)?))
        }
        (None, Some(_)) => Err(error::invalid(
            "timezone applies to a cron pattern: give cron with it, not every",
        )),
        (Some(_), Some(_)) => Err(error::invalid("give a schedule cron or every, not both")),
        (None, None) => Err(error::invalid(
            "give a schedule cron (a pattern) or every (seconds)",
        )),
    }
}

/// `enqueue_many` items: each bytes-like, or a `(payload, options dict)` tuple. Everything is
/// converted before anything is sent. Items without a `trace` carry the caller's current span's
/// (looked up once per call).
fn jobs(items: &Bound<'_, PyAny>) -> PyResult<Vec<(Vec<u8>, EnqueueOptions)>> {
    let mut out = untraced_jobs(items)?;
    if out.iter().any(|(_, o)| o.trace.is_none()) {
        if let Some(current) = otel::current(items.py()) {
            for (_, o) in out.iter_mut().filter(|(_, o)| o.trace.is_none()) {
                o.trace = Some(current.clone());
            }
        }
    }
    Ok(out)
}

fn untraced_jobs(items: &Bound<'_, PyAny>) -> PyResult<Vec<(Vec<u8>, EnqueueOptions)>> {
    let mut out = Vec::with_capacity(items.len().unwrap_or(0));
    for item in items.try_iter()? {
        let item = item?;
        let Ok(tuple) = item.cast::<PyTuple>() else {
            out.push((
                convert::bytes_like("payload", &item)?,
                EnqueueOptions::default(),
            ));
            continue;
        };
        let options = tuple.get_item(1).ok().filter(|_| tuple.len() == 2);
        let options = options
            .as_ref()
            .and_then(|o| o.cast::<PyDict>().ok())
            .ok_or_else(|| {
                PyTypeError::new_err(
                    "enqueue_many items are payloads or (payload, options dict) tuples",
                )
            })?;
        let payload = convert::bytes_like("payload", &tuple.get_item(0)?)?;
        out.push((payload, JobArgs::from_dict(options)?.convert()?));
    }
    Ok(out)
}

/// Worker options from keyword arguments; those not given keep the core's defaults.
#[allow(clippy::too_many_arguments)]
fn worker_options(
    concurrency: Option<Int>,
    batch_size: Option<Int>,
    lease: Option<Secs>,
    poll_interval: Option<Secs>,
    grace: Option<Secs>,
    stop_when_drained: Option<bool>,
    schedules: Option<bool>,
) -> PyResult<tideq::WorkerOptions> {
    let mut opts = tideq::WorkerOptions::default();
    convert::set_given!(
        opts,
        concurrency: convert::count,
        batch_size: convert::count,
        lease: convert::duration,
        poll_interval: convert::duration,
        grace: convert::duration,
        stop_when_drained: convert::as_is,
        schedules: convert::as_is,
    );
    Ok(opts)
}

/// Task arguments as a MessagePack value, the core then encodes (JSON or MessagePack).
fn args_value(obj: &Bound<'_, PyAny>) -> PyResult<tideq::envelope::Value> {
    convert::to_value(obj, args_value)
}

/// Jobs `lease_jobs` leased, converted to `list[Job]` when delivered.
struct Leased(Vec<tideq::Job>);

impl<'py> IntoPyObject<'py> for Leased {
    type Target = PyList;
    type Output = Bound<'py, PyList>;
    type Error = PyErr;

    fn into_pyobject(self, py: Python<'py>) -> PyResult<Self::Output> {
        PyList::new(py, self.0.into_iter().map(|j| Job::from_core(py, j)))
    }
}

/// A waited-for job's result, decoded when delivered as `JobInfo.result` is (None: nothing).
struct Outcome(Option<Vec<u8>>);

impl<'py> IntoPyObject<'py> for Outcome {
    type Target = PyAny;
    type Output = Bound<'py, PyAny>;
    type Error = PyErr;

    fn into_pyobject(self, py: Python<'py>) -> PyResult<Self::Output> {
        match self.0 {
            None => Ok(py.None().into_bound(py)),
            Some(bytes) => convert::json_or_bytes_value(py, &bytes),
        }
    }
}

/// A job queue; `Queue` and `AsyncQueue` differ only in the API mode they open it with.
#[pyclass(module = "tideq", name = "_Queue", subclass, frozen)]
pub struct QueueBase {
    queue: tideq::Queue,
    client: Py<Client>,
    api: Api,
    /// The tasks registered with `@queue.task`: name -> `Task`.
    tasks: Py<PyDict>,
}

runtime::api_classes!(
    /// A reliable job queue, blocking API (the GIL is released while waiting on Redis).
    ///
    /// Delivery is at-least-once: handlers should be idempotent. Queue-wide defaults:
    /// ``max_attempts`` deliveries before a job is dead-lettered, ``backoff`` before retries,
    /// ``timeout`` seconds per attempt (None: no limit); the newest ``keep_completed`` completed jobs
    /// younger than ``keep_for`` seconds (None: no age limit) stay visible to ``get``; error texts
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
    /// producer and worker of a queue must use the same count (changing it remaps ids: drain the
    /// queue first). Queue names may not contain ``#``.
    pub struct Queue;
    /// A reliable job queue, asyncio API: same constructor and methods, all awaitable.
    pub struct AsyncQueue;
    impl QueueBase {
        #[pyo3(signature = (name, client=None, *, url=None, max_attempts=None, backoff=None, timeout=Opt::Unset, keep_completed=None, keep_for=Opt::Unset, max_error_len=None, keep_dead=Opt::Unset, keep_dead_for=Opt::Unset, idempotency_window=Opt::Unset, idempotency_max_ids=None, max_result_len=None, shards=1))]
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
        ) -> PyResult<Self> {
            let mut opts = QueueOptions::default();
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
            })
        }
    }
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
    #[pyo3(signature = (payload, *, id=None, delay=None, run_at=None, max_attempts=None, backoff=None, timeout=None, priority=None, group=None, dedup=None, debounce=None, trace=None))]
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
        let (q, jobs) = (self.queue.clone(), jobs(items)?);
        self.api.call(py, async move {
            let done = q.enqueue_many(&jobs).await?;
            Ok(done.into_iter().map(Enqueued).collect::<Vec<_>>())
        })
    }

    /// A job's state, attempts, last error and times; None if unknown.
    ///
    /// None too once the job is no longer kept.
    fn get<'py>(&self, py: Python<'py>, id: Text) -> PyResult<Bound<'py, PyAny>> {
        let id = id.0;
        let q = self.queue.clone();
        self.api
            .call(py, async move { Ok(q.get(&id).await?.map(JobInfo)) })
    }

    /// Wait until job ``id`` has finished and return its result.
    ///
    /// The result is decoded as ``JobInfo.result`` is (None when the handler returned nothing).
    /// Also answers for a job that finished before the call, while it is retained
    /// (``keep_completed``, ``keep_for``). A job that went to the dead letters (or was cancelled)
    /// raises ``JobFailedError`` with its last error; an unknown id ``JobNotFoundError``; no
    /// outcome within ``timeout`` seconds (None: no limit) ``TimeoutError`` (a subclass of the
    /// builtin one). Returns as soon as the job ends: the script finishing the job wakes it.
    #[pyo3(signature = (id, timeout=None))]
    fn wait<'py>(
        &self,
        py: Python<'py>,
        id: Text,
        timeout: Option<Secs>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let id = id.0;
        let timeout = convert::opt_duration("timeout", timeout)?;
        let q = self.queue.clone();
        self.api.call(py, async move {
            Ok(Outcome(q.wait(&id, timeout).await?.result))
        })
    }

    /// Cancel a job: a delayed or ready one is removed; a running one is asked to stop.
    ///
    /// A running job's worker sets ``job.cancelled`` (and cancels an ``async def`` handler's
    /// task) within a second; the job ends cancelled when its handler returns, whatever it
    /// returns, and is never retried (a handler that finished first completes it). Either way
    /// ``get`` then gives ``None`` and ``stats().cancelled`` counts it.
    /// ``JobNotCancellableError`` for dead or completed jobs, ``JobNotFoundError`` for unknown ids.
    fn cancel<'py>(&self, py: Python<'py>, id: Text) -> PyResult<Bound<'py, PyAny>> {
        let id = id.0;
        let q = self.queue.clone();
        self.api.call(py, async move { q.cancel(&id).await })
    }

    /// The jobs in one state, ``limit`` (at most 1000) from ``offset``.
    ///
    /// ``state``: ``"delayed"`` (by due time), ``"ready"`` (in the order workers take them:
    /// plain, then by priority, then group by group), ``"active"`` (by lease deadline),
    /// ``"dead"`` (oldest death first) or ``"completed"`` (newest first); a sharded queue lists
    /// shard by shard. An unknown state or a ``limit`` over 1000 raises ``InvalidArgumentError``.
    /// Offsets shift as workers move jobs, so a walk of pages by offset can list a job twice or
    /// skip one: walk a state with ``jobs_page``.
    #[pyo3(signature = (state, offset=0, limit=100))]
    fn jobs<'py>(
        &self,
        py: Python<'py>,
        state: Text,
        #[pyo3(from_py_with = convert::int)] offset: i64,
        #[pyo3(from_py_with = convert::int)] limit: i64,
    ) -> PyResult<Bound<'py, PyAny>> {
        let state = tideq::JobState::parse(&state.0).map_err(error::to_py)?;
        let (offset, limit) = (
            convert::count("offset", offset)?,
            convert::count("limit", limit)?,
        );
        let q = self.queue.clone();
        self.api.call(py, async move {
            let jobs = q.jobs(state, offset, limit).await?;
            Ok(jobs.into_iter().map(JobInfo).collect::<Vec<_>>())
        })
    }

    /// Up to ``limit`` (1 to 1000) of the jobs in ``state`` after ``cursor`` (None: the start),
    /// and the cursor of the next page (None after the last).
    ///
    /// A walk page by page while workers run never lists a job twice and never skips one that
    /// stayed in the state for the whole walk: the cursor is the last job's place in the state's
    /// order (delayed by due time, dead by time of death, completed newest first, active by id,
    /// ready as workers take them with grouped jobs last in no particular order). A job that left
    /// the state and came back may show again. A page may hold fewer than ``limit`` jobs before
    /// the end; only a None cursor ends the walk. A cursor not made by a walk of this queue's
    /// ``state`` raises ``InvalidArgumentError``.
    #[pyo3(signature = (state, cursor=None, limit=100))]
    fn jobs_page<'py>(
        &self,
        py: Python<'py>,
        state: Text,
        cursor: Option<Text>,
        #[pyo3(from_py_with = convert::int)] limit: i64,
    ) -> PyResult<Bound<'py, PyAny>> {
        let state = tideq::JobState::parse(&state.0).map_err(error::to_py)?;
        let limit = convert::count("limit", limit)?;
        let q = self.queue.clone();
        self.api.call(py, async move {
            let cursor = cursor.as_ref().map(|c| c.0.as_str());
            Ok(JobPage(q.jobs_page(state, cursor, limit).await?))
        })
    }

    /// Dead jobs, oldest death first.
    #[pyo3(signature = (offset=0, limit=100))]
    fn dead_letters<'py>(
        &self,
        py: Python<'py>,
        #[pyo3(from_py_with = convert::int)] offset: i64,
        #[pyo3(from_py_with = convert::int)] limit: i64,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (offset, limit) = (
            convert::count("offset", offset)?,
            convert::count("limit", limit)?,
        );
        let q = self.queue.clone();
        self.api.call(py, async move {
            let dead = q.dead_letters(offset, limit).await?;
            Ok(dead.into_iter().map(JobInfo).collect::<Vec<_>>())
        })
    }

    /// Move a dead job back to ready with its attempts reset.
    ///
    /// ``JobNotFoundError`` if it is not dead.
    fn requeue<'py>(&self, py: Python<'py>, id: Text) -> PyResult<Bound<'py, PyAny>> {
        let id = id.0;
        let q = self.queue.clone();
        self.api.call(py, async move { q.requeue(&id).await })
    }

    /// Requeue every dead job; returns how many.
    fn requeue_all<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let q = self.queue.clone();
        self.api.call(py, async move { q.requeue_all().await })
    }

    /// Delete every dead job; returns how many.
    fn purge<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let q = self.queue.clone();
        self.api.call(py, async move { q.purge().await })
    }

    /// Jobs per state and lifetime counters.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let q = self.queue.clone();
        self.api
            .call(py, async move { q.stats().await.map(JobStats) })
    }

    /// Start a worker in the background.
    ///
    /// ``handler(job)`` per job, up to ``concurrency`` at a
    /// time. Returning completes the job; raising fails the attempt (error text
    /// ``"ExcType: message"``, traceback logged on the ``tideq`` logger), retried after backoff
    /// or dead-lettered after ``max_attempts``. Plain handlers run in pooled worker threads (as
    /// in a ``ThreadPoolExecutor``: a ``threading.local`` lives as long as its thread, not one
    /// job), ``async def`` ones on a private event loop per job. The ``lease`` (seconds) is renewed by Rust
    /// while the handler runs; a worker that dies loses its jobs to another worker after it.
    /// ``batch_size``: most jobs leased per fetch, at most 1000 (0: half the concurrency, at most 1000; two fetches are kept
    /// in flight). An attempt running past its ``timeout`` fails ("timed out") and its handler is
    /// asked to stop (``job.cancelled``; ``async def`` handlers are cancelled); the job is retried
    /// only once the handler returned, and never runs twice at a time. On stop, running jobs get
    /// ``grace`` seconds, then are asked to stop likewise (see ``Worker.stop``).
    /// A worker stops by itself on ``AuthError`` or ``PermissionDeniedError`` (see ``Worker``).
    /// With ``schedules`` the worker also fires the queue's due schedule slots
    /// (``upsert_schedule``): any number of workers may, each slot still makes one job.
    /// Options not given take the core's defaults: ``concurrency`` 10, ``batch_size`` 0,
    /// ``lease`` 30 s, ``poll_interval`` 5 s, ``grace`` 10 s, ``stop_when_drained`` False,
    /// ``schedules`` True.
    #[pyo3(signature = (handler, *, concurrency=None, batch_size=None, lease=None, poll_interval=None, grace=None, stop_when_drained=None, schedules=None))]
    #[allow(clippy::too_many_arguments)]
    fn work<'py>(
        &self,
        py: Python<'py>,
        handler: Py<PyAny>,
        concurrency: Option<Int>,
        batch_size: Option<Int>,
        lease: Option<Secs>,
        poll_interval: Option<Secs>,
        grace: Option<Secs>,
        stop_when_drained: Option<bool>,
        schedules: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let opts = worker_options(
            concurrency,
            batch_size,
            lease,
            poll_interval,
            grace,
            stop_when_drained,
            schedules,
        )?;
        worker::start(py, self.api, &self.queue, opts, Handlers::One(handler))
    }

    /// ``work()``, then wait until the worker stops.
    ///
    /// ``work()`` and block until SIGINT/SIGTERM or, with
    /// ``stop_when_drained``, until nothing is ready, delayed or active; raises the error the
    /// worker stopped on, if any. The first SIGINT/SIGTERM stops gracefully and prints one line
    /// on stderr saying so; a second one stops at once (``abort()``).
    #[pyo3(signature = (handler, *, concurrency=None, batch_size=None, lease=None, poll_interval=None, grace=None, stop_when_drained=None, schedules=None))]
    #[allow(clippy::too_many_arguments)]
    fn run<'py>(
        &self,
        py: Python<'py>,
        handler: Py<PyAny>,
        concurrency: Option<Int>,
        batch_size: Option<Int>,
        lease: Option<Secs>,
        poll_interval: Option<Secs>,
        grace: Option<Secs>,
        stop_when_drained: Option<bool>,
        schedules: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let worker = self.work(
            py,
            handler,
            concurrency,
            batch_size,
            lease,
            poll_interval,
            grace,
            stop_when_drained,
            schedules,
        )?;
        signal::run(&worker)
    }

    /// Start a worker whose handler gets a list of up to ``size`` jobs at once (``wait``:
    /// longest seconds a leased job waits for its batch to fill; 0 or None hands over what one
    /// fetch brought). Returning None completes them all; returning a mapping ``{job_id: error}``
    /// (an error message or an exception) fails those jobs (retried or dead-lettered, each by its
    /// attempts) and completes the rest; raising fails them all. Each job keeps its own lease,
    /// renewed while it waits and runs. ``concurrency`` counts jobs (``concurrency // size``
    /// batches at once); the other options are ``work``'s.
    #[pyo3(signature = (handler, *, size, wait=None, concurrency=None, batch_size=None, lease=None, poll_interval=None, grace=None, stop_when_drained=None, schedules=None))]
    #[allow(clippy::too_many_arguments)]
    fn work_batches<'py>(
        &self,
        py: Python<'py>,
        handler: Py<PyAny>,
        size: Int,
        wait: Option<Secs>,
        concurrency: Option<Int>,
        batch_size: Option<Int>,
        lease: Option<Secs>,
        poll_interval: Option<Secs>,
        grace: Option<Secs>,
        stop_when_drained: Option<bool>,
        schedules: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let opts = worker_options(
            concurrency,
            batch_size,
            lease,
            poll_interval,
            grace,
            stop_when_drained,
            schedules,
        )?;
        let mut batch = tideq::BatchOptions::default();
        let size = Some(size);
        set_given!(batch, size: convert::count, wait: convert::duration);
        worker::start(
            py,
            self.api,
            &self.queue,
            opts,
            Handlers::Batches(handler, batch),
        )
    }

    /// ``work_batches()`` and wait until it stops, as ``run()`` does.
    #[pyo3(signature = (handler, *, size, wait=None, concurrency=None, batch_size=None, lease=None, poll_interval=None, grace=None, stop_when_drained=None, schedules=None))]
    #[allow(clippy::too_many_arguments)]
    fn run_batches<'py>(
        &self,
        py: Python<'py>,
        handler: Py<PyAny>,
        size: Int,
        wait: Option<Secs>,
        concurrency: Option<Int>,
        batch_size: Option<Int>,
        lease: Option<Secs>,
        poll_interval: Option<Secs>,
        grace: Option<Secs>,
        stop_when_drained: Option<bool>,
        schedules: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let worker = self.work_batches(
            py,
            handler,
            size,
            wait,
            concurrency,
            batch_size,
            lease,
            poll_interval,
            grace,
            stop_when_drained,
            schedules,
        )?;
        signal::run(&worker)
    }

    /// Register ``func`` as a task of this queue, named by ``name`` (default: the function's
    /// name), with default enqueue options (``priority``, ``group``, ``format``, ...); returns a
    /// ``Task``: call it to run the function here, ``.enqueue(*args, **kwargs)`` to enqueue it
    /// (arguments bound to the parameters by name), and ``work_tasks()`` runs it by name.
    #[pyo3(signature = (func=None, /, *, name=None, **defaults))]
    fn task<'py>(
        slf: &Bound<'py, Self>,
        func: Option<Bound<'py, PyAny>>,
        name: Option<Text>,
        defaults: Option<Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        py.import("tideq._tasks")?
            .getattr("task")?
            .call1((slf, func, name.map(|t| t.0), defaults))
    }

    /// The tasks registered with `@queue.task`, by name (the mapping itself).
    #[getter]
    fn _tasks(&self, py: Python<'_>) -> Py<PyDict> {
        self.tasks.clone_ref(py)
    }

    /// Enqueue task ``name`` with ``data`` as its arguments (a dict runs ``f(**data)``, a list
    /// ``f(*data)``, anything else ``f(data)``), encoded as ``format`` (``"json"``, the default,
    /// or ``"msgpack"``). The other options are ``enqueue``'s.
    #[pyo3(signature = (name, data=None, *, format=None, id=None, delay=None, run_at=None, max_attempts=None, backoff=None, timeout=None, priority=None, group=None, dedup=None, debounce=None, trace=None))]
    #[allow(clippy::too_many_arguments)]
    fn enqueue_task<'py>(
        &self,
        py: Python<'py>,
        name: Text,
        data: Option<Bound<'py, PyAny>>,
        format: Option<Text>,
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
    ) -> PyResult<Bound<'py, PyAny>> {
        let data = match data {
            Some(d) => convert::to_value(&d, args_value)?,
            None => tideq::envelope::Value::Nil,
        };
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
        };
        let mut opts = args.convert_traced(py)?;
        opts.format = format
            .map(|f| tideq::PayloadFormat::parse(&f.0))
            .transpose()
            .map_err(error::to_py)?;
        let q = self.queue.clone();
        self.api.call(py, async move {
            q.enqueue_task(&name.0, &data, opts).await.map(Enqueued)
        })
    }

    /// Start a worker running each job's task by name: ``tasks`` maps names to functions
    /// (default: the tasks registered with ``@queue.task``), plain or ``async def``, called with
    /// the job's decoded arguments. A job with no task name, or one not in ``tasks``, is
    /// dead-lettered at once with an error naming the tasks this worker runs. The options are
    /// ``work``'s.
    #[pyo3(signature = (tasks=None, *, concurrency=None, batch_size=None, lease=None, poll_interval=None, grace=None, stop_when_drained=None, schedules=None))]
    #[allow(clippy::too_many_arguments)]
    fn work_tasks<'py>(
        &self,
        py: Python<'py>,
        tasks: Option<Bound<'py, PyAny>>,
        concurrency: Option<Int>,
        batch_size: Option<Int>,
        lease: Option<Secs>,
        poll_interval: Option<Secs>,
        grace: Option<Secs>,
        stop_when_drained: Option<bool>,
        schedules: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let opts = worker_options(
            concurrency,
            batch_size,
            lease,
            poll_interval,
            grace,
            stop_when_drained,
            schedules,
        )?;
        let tasks = tasks.unwrap_or_else(|| self.tasks.bind(py).clone().into_any());
        let pairs: Vec<(String, Py<PyAny>)> = py
            .import("tideq._tasks")?
            .getattr("handlers")?
            .call1((tasks,))?
            .extract::<Vec<(Text, Py<PyAny>)>>()?
            .into_iter()
            .map(|(n, f)| (n.0, f))
            .collect();
        worker::start(py, self.api, &self.queue, opts, Handlers::Tasks(pairs))
    }

    /// ``work_tasks()`` and wait until it stops, as ``run()`` does.
    #[pyo3(signature = (tasks=None, *, concurrency=None, batch_size=None, lease=None, poll_interval=None, grace=None, stop_when_drained=None, schedules=None))]
    #[allow(clippy::too_many_arguments)]
    fn run_tasks<'py>(
        &self,
        py: Python<'py>,
        tasks: Option<Bound<'py, PyAny>>,
        concurrency: Option<Int>,
        batch_size: Option<Int>,
        lease: Option<Secs>,
        poll_interval: Option<Secs>,
        grace: Option<Secs>,
        stop_when_drained: Option<bool>,
        schedules: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let worker = self.work_tasks(
            py,
            tasks,
            concurrency,
            batch_size,
            lease,
            poll_interval,
            grace,
            stop_when_drained,
            schedules,
        )?;
        signal::run(&worker)
    }

    // Schedules (core `schedule`).

    /// Create the schedule ``name``, or change it; returns its next slot (epoch ms, Redis clock).
    ///
    /// Each slot enqueues one job with ``payload`` and the options given, id
    /// ``"<name>@<slot ms>"``, whichever workers (started with ``schedules``, the default) see it
    /// due: exactly one of ``cron`` (a cron pattern, 5 fields or 6 with seconds first, in
    /// ``timezone``, an IANA name such as ``"Europe/Paris"``; default UTC) or ``every`` (seconds,
    /// at least 0.01: slots at the multiples of the interval since the epoch). Declaring the same
    /// schedule again changes nothing (its next slot stays); after an outage a schedule runs once
    /// for the slots it missed. ``priority``, ``group``, ``max_attempts``, ``backoff`` and
    /// ``timeout`` are given to each job as ``enqueue`` takes them; ``task`` makes each job a run
    /// of that task, ``payload`` then holding its arguments encoded as ``format`` says
    /// (``"json"`` or ``"msgpack"``; a task worker needs it). Bad input raises
    /// ``InvalidArgumentError`` and writes nothing. None when the pattern has no slot to come.
    #[pyo3(
        signature = (name, payload=None, *, cron=None, every=None, timezone=None, task=None, format=None, priority=None, group=None, max_attempts=None, backoff=None, timeout=None),
        text_signature = "($self, name, payload=b'', *, cron=None, every=None, timezone=None, task=None, format=None, priority=None, group=None, max_attempts=None, backoff=None, timeout=None)"
    )]
    #[allow(clippy::too_many_arguments)]
    fn upsert_schedule<'py>(
        &self,
        py: Python<'py>,
        name: Text,
        payload: Option<Bound<'py, PyAny>>,
        cron: Option<Text>,
        every: Option<Secs>,
        timezone: Option<Text>,
        task: Option<Text>,
        format: Option<Text>,
        priority: Option<Int>,
        group: Option<Text>,
        max_attempts: Option<Int>,
        backoff: Option<Bound<'py, Backoff>>,
        timeout: Option<Secs>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let payload = match payload {
            Some(p) => convert::bytes_like("payload", &p)?,
            None => Vec::new(),
        };
        let slots = every_of(cron, timezone, every)?;
        let args = JobArgs {
            max_attempts,
            backoff,
            timeout,
            priority,
            group,
            ..JobArgs::default()
        };
        let mut opts = args.convert()?;
        opts.task = task.map(|t| t.0);
        opts.format = format
            .map(|f| tideq::PayloadFormat::parse(&f.0))
            .transpose()
            .map_err(error::to_py)?;
        let q = self.queue.clone();
        self.api.call(py, async move {
            q.upsert_schedule(&name.0, slots, payload, opts).await
        })
    }

    /// Remove the schedule ``name`` (no slot of it fires after this); True if it existed.
    fn remove_schedule<'py>(&self, py: Python<'py>, name: Text) -> PyResult<Bound<'py, PyAny>> {
        let q = self.queue.clone();
        self.api
            .call(py, async move { q.remove_schedule(&name.0).await })
    }

    /// The queue's schedules with their next slots, by name.
    fn schedules<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let q = self.queue.clone();
        self.api.call(py, async move {
            let listed = q.schedules().await?;
            Ok(listed.into_iter().map(ScheduleInfo).collect::<Vec<_>>())
        })
    }

    // The event log (core `events`).

    /// Turn the queue's event log on, keeping about its newest ``max_len`` entries, or off (None).
    ///
    /// An entry holds one kind of event for a batch of jobs. Every producer and worker of the
    /// queue follows the setting at once; turning it off deletes the log. Events are off by
    /// default. ``max_len`` 0 raises ``InvalidArgumentError``.
    #[pyo3(signature = (max_len))]
    fn set_events<'py>(
        &self,
        py: Python<'py>,
        max_len: Option<Int>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let max_len = convert::opt_count("max_len", max_len)?;
        let q = self.queue.clone();
        self.api
            .call(py, async move { q.set_events(max_len).await })
    }

    /// A reader of the queue's event log: what happened to its jobs, in order, as ``Event``s.
    ///
    /// It reads from now on (from this call), or with ``from_start`` from the oldest event kept.
    /// A reader with a ``name`` keeps its place in Redis: started again with the same name (in
    /// any process), it resumes where it stopped (events it took but had not stored yet may come
    /// again), so one started ``from_start`` (the first time) misses nothing the log still holds
    /// even if it crashed; one that fell behind the log's length gets a ``"lagged"`` event first.
    /// The blocking API returns an ``EventReader`` (``for event in q.events(): ...``), the
    /// asyncio API an ``AsyncEventReader`` (``async for event in aq.events(): ...``; ``events()``
    /// itself is not awaited). Nothing is logged until ``set_events`` turns the log on.
    #[pyo3(signature = (name=None, from_start=false))]
    fn events<'py>(
        &self,
        py: Python<'py>,
        name: Option<Text>,
        from_start: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        events::open(py, self.api, &self.queue, name.map(|n| n.0), from_start)
    }

    // Flow control (core `flow`).

    /// Workers stop starting jobs of this queue (running ones finish; enqueues go on).
    fn pause<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let q = self.queue.clone();
        self.api.call(py, async move { q.pause().await })
    }

    /// Workers start jobs again; idle ones are woken at once.
    fn resume<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let q = self.queue.clone();
        self.api.call(py, async move { q.resume().await })
    }

    /// Stop starting jobs of ``group`` (other groups go on).
    fn pause_group<'py>(&self, py: Python<'py>, group: Text) -> PyResult<Bound<'py, PyAny>> {
        let q = self.queue.clone();
        self.api
            .call(py, async move { q.pause_group(&group.0).await })
    }

    /// Start jobs of ``group`` again.
    fn resume_group<'py>(&self, py: Python<'py>, group: Text) -> PyResult<Bound<'py, PyAny>> {
        let q = self.queue.clone();
        self.api
            .call(py, async move { q.resume_group(&group.0).await })
    }

    /// True when the queue is paused.
    fn is_paused<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let q = self.queue.clone();
        self.api.call(py, async move { q.is_paused().await })
    }

    /// Replace the queue's limits, kept in Redis for every worker (None: no limit):
    /// ``max_active`` jobs running at once, ``rate`` job starts per window, and per group
    /// (groups without limits of their own) ``group_concurrency`` running and ``group_rate``
    /// starts. Bad values raise ``InvalidArgumentError`` and change nothing.
    #[pyo3(signature = (*, max_active=None, rate=None, group_concurrency=None, group_rate=None))]
    fn set_limits<'py>(
        &self,
        py: Python<'py>,
        max_active: Option<Int>,
        rate: Option<Bound<'py, Rate>>,
        group_concurrency: Option<Int>,
        group_rate: Option<Bound<'py, Rate>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let limits = tideq::Limits {
            max_active: flow::limit("max_active", max_active)?,
            rate: rate.map(|r| r.get().0),
            group_concurrency: flow::limit("group_concurrency", group_concurrency)?,
            group_rate: group_rate.map(|r| r.get().0),
        };
        let q = self.queue.clone();
        self.api.call(py, async move { q.set_limits(limits).await })
    }

    /// The queue's limits.
    fn limits<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let q = self.queue.clone();
        self.api
            .call(py, async move { q.limits().await.map(Limits) })
    }

    /// Set ``group``'s own limits (None: the queue's defaults).
    #[pyo3(signature = (group, *, concurrency=None, rate=None))]
    fn set_group_limits<'py>(
        &self,
        py: Python<'py>,
        group: Text,
        concurrency: Option<Int>,
        rate: Option<Bound<'py, Rate>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let limits = tideq::GroupLimits {
            concurrency: flow::limit("concurrency", concurrency)?,
            rate: rate.map(|r| r.get().0),
        };
        let q = self.queue.clone();
        self.api.call(
            py,
            async move { q.set_group_limits(&group.0, limits).await },
        )
    }

    /// What group ``name`` holds (ready, running) and obeys (paused, limits in force).
    fn group<'py>(&self, py: Python<'py>, name: Text) -> PyResult<Bound<'py, PyAny>> {
        let q = self.queue.clone();
        self.api
            .call(py, async move { q.group(&name.0).await.map(GroupInfo) })
    }

    /// Every group the queue knows (with jobs, running jobs or settings of its own), by name,
    /// each as ``group`` tells it. Reads every group (in short calls); to show some of many,
    /// read a page with ``groups_page``.
    fn groups<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let q = self.queue.clone();
        self.api.call(py, async move {
            let all = q.groups().await?;
            Ok(all.into_iter().map(GroupInfo).collect::<Vec<_>>())
        })
    }

    /// About ``count`` (1 to 250, default 100) of the groups ``groups`` lists, from ``cursor`` (None: the
    /// start), in no particular order, and the cursor of the next page (None after the last).
    /// Each call costs about ``count`` groups' work, however many the queue has.
    #[pyo3(signature = (cursor=None, count=None))]
    fn groups_page<'py>(
        &self,
        py: Python<'py>,
        cursor: Option<Text>,
        count: Option<Int>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let count = convert::page_count(count)?;
        let q = self.queue.clone();
        self.api.call(py, async move {
            let cursor = cursor.as_ref().map(|c| c.0.as_str());
            Ok(GroupPage(q.groups_page(cursor, count).await?))
        })
    }

    // Manual leasing (core `lease`).

    /// Lease up to ``max`` (at most 1000) ready jobs for ``lease`` seconds, for processing without a worker
    /// (empty when nothing is ready). Settle each with ``complete``, ``fail`` or ``release``;
    /// nothing renews these leases but ``extend``: a job whose lease expires is delivered
    /// again.
    #[pyo3(signature = (max, *, lease))]
    fn lease_jobs<'py>(
        &self,
        py: Python<'py>,
        max: Int,
        lease: Secs,
    ) -> PyResult<Bound<'py, PyAny>> {
        let max = convert::count("max", max)?;
        let lease = convert::duration("lease", lease)?;
        let q = self.queue.clone();
        self.api.call(
            py,
            async move { Ok(Leased(q.lease_jobs(max, lease).await?)) },
        )
    }

    /// Mark a leased job done (``LeaseLostError`` if its lease expired and it was
    /// redelivered).
    fn complete<'py>(&self, py: Python<'py>, job: &Bound<'py, Job>) -> PyResult<Bound<'py, PyAny>> {
        let (q, job) = (self.queue.clone(), job.get().core().clone());
        self.api.call(py, async move { q.complete(&job).await })
    }

    /// Fail a leased attempt with ``error`` (a message, or an exception shown as
    /// ``"ExcType: message"``): retried after the job's backoff, or dead-lettered after
    /// ``max_attempts``. Returns True when dead-lettered.
    fn fail<'py>(
        &self,
        py: Python<'py>,
        job: &Bound<'py, Job>,
        error: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let text = if error.is_instance_of::<pyo3::exceptions::PyBaseException>() {
            handler::error_text(py, &PyErr::from_value(error.clone()))
        } else {
            error.extract::<Text>()?.0
        };
        let (q, job) = (self.queue.clone(), job.get().core().clone());
        self.api.call(py, async move { q.fail(&job, &text).await })
    }

    /// Return a leased job to the front of the queue without counting the attempt.
    fn release<'py>(&self, py: Python<'py>, job: &Bound<'py, Job>) -> PyResult<Bound<'py, PyAny>> {
        let (q, job) = (self.queue.clone(), job.get().core().clone());
        self.api.call(py, async move { q.release(&job).await })
    }

    /// Push a leased job's lease deadline to ``lease`` seconds from now.
    fn extend<'py>(
        &self,
        py: Python<'py>,
        job: &Bound<'py, Job>,
        lease: Secs,
    ) -> PyResult<Bound<'py, PyAny>> {
        let lease = convert::duration("lease", lease)?;
        let (q, job) = (self.queue.clone(), job.get().core().clone());
        self.api
            .call(py, async move { q.extend(&job, lease).await })
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
