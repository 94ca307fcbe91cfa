//! `tideq.Queue` (blocking) and `tideq.AsyncQueue` (asyncio) over one `tideq::Queue`, the value
//! classes of the job queue (`Backoff`, `Enqueued`, `Job`, `JobInfo`, `JobStats`), and
//! `decode_envelope`/`encode_envelope` over the core's `Envelope`. Conversion only: every
//! operation, script and check is the core's.
//!
//! Times cross as float seconds: durations (`delay`, `timeout`, backoff delays) and Redis-clock
//! timestamps (`enqueued_at`, `state_since_or_until`) alike.

use std::time::Duration;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyTuple};
use tideq::{BackoffKind, EnqueueOptions, Envelope, QueueOptions};

use crate::client::Client;
use crate::convert::{self, millis, secs};
use crate::errors::{self, invalid};
use crate::runtime;
use crate::worker::{self, AsyncWorker, Options, Worker, WorkerStats};

/// A retry delay policy: `Backoff.fixed(delay)` or `Backoff.exponential(base, max, jitter)`.
#[pyclass(module = "tideq", frozen, eq)]
#[derive(PartialEq, Clone, Copy)]
pub struct Backoff(pub tideq::Backoff);

#[pymethods]
impl Backoff {
    /// The same delay (seconds) before every retry, no jitter.
    #[staticmethod]
    fn fixed(delay: f64) -> PyResult<Self> {
        let delay = convert::duration("delay", delay)?;
        Ok(Backoff(tideq::Backoff::fixed(millis(delay))))
    }

    /// `base` seconds before the first retry, doubling up to `max`; with `jitter`, each delay is
    /// drawn from [delay/2, delay].
    #[staticmethod]
    #[pyo3(signature = (base=1.0, max=3600.0, jitter=true))]
    fn exponential(base: f64, max: f64, jitter: bool) -> PyResult<Self> {
        let base = millis(convert::duration("base", base)?);
        let max = millis(convert::duration("max", max)?);
        Ok(Backoff(tideq::Backoff {
            jitter,
            ..tideq::Backoff::exponential(base, max)
        }))
    }

    /// `"fixed"` or `"exponential"`.
    #[getter]
    fn kind(&self) -> &'static str {
        kind_name(self.0.kind)
    }
    /// First delay, in seconds.
    #[getter]
    fn base(&self) -> f64 {
        secs(self.0.base_ms)
    }
    /// Longest delay, in seconds.
    #[getter]
    fn max(&self) -> f64 {
        secs(self.0.max_ms)
    }
    #[getter]
    fn jitter(&self) -> bool {
        self.0.jitter
    }

    fn __repr__(&self) -> String {
        let b = &self.0;
        match b.kind {
            BackoffKind::Fixed => format!("Backoff.fixed({:?})", secs(b.base_ms)),
            BackoffKind::Exponential => format!(
                "Backoff.exponential(base={:?}, max={:?}, jitter={})",
                secs(b.base_ms),
                secs(b.max_ms),
                if b.jitter { "True" } else { "False" }
            ),
        }
    }
}

fn kind_name(kind: BackoffKind) -> &'static str {
    match kind {
        BackoffKind::Fixed => "fixed",
        BackoffKind::Exponential => "exponential",
    }
}

/// What `enqueue` did.
#[pyclass(module = "tideq", frozen, eq)]
#[derive(PartialEq)]
pub struct Enqueued(tideq::Enqueued);

#[pymethods]
impl Enqueued {
    #[getter]
    fn id(&self) -> &str {
        &self.0.id
    }
    /// False when a job with this id already existed (nothing was written).
    #[getter]
    fn created(&self) -> bool {
        self.0.created
    }
    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "Enqueued(id={}, created={})",
            convert::str_repr(py, &self.0.id),
            if self.0.created { "True" } else { "False" }
        )
    }
}

/// A leased job, as a worker hands it to the handler.
#[pyclass(module = "tideq", frozen)]
pub struct Job {
    id: String,
    payload: Py<PyBytes>,
    attempt: u32,
    max_attempts: u32,
    enqueued_at: u64,
    queue: String,
    timeout: Option<Duration>,
}

impl Job {
    pub fn from_core(py: Python<'_>, job: &tideq::Job) -> Self {
        Job {
            id: job.id.clone(),
            payload: PyBytes::new(py, &job.payload).unbind(),
            attempt: job.attempt,
            max_attempts: job.max_attempts,
            enqueued_at: job.enqueued_at,
            queue: job.queue.clone(),
            timeout: job.timeout,
        }
    }
}

#[pymethods]
impl Job {
    #[getter]
    fn id(&self) -> &str {
        &self.id
    }
    #[getter]
    fn payload(&self, py: Python<'_>) -> Py<PyBytes> {
        self.payload.clone_ref(py)
    }
    /// 1 on the first delivery.
    #[getter]
    fn attempt(&self) -> u32 {
        self.attempt
    }
    #[getter]
    fn max_attempts(&self) -> u32 {
        self.max_attempts
    }
    /// When the job was enqueued, epoch seconds by the Redis clock.
    #[getter]
    fn enqueued_at(&self) -> f64 {
        secs(self.enqueued_at)
    }
    /// Name of the queue the job came from.
    #[getter]
    fn queue(&self) -> &str {
        &self.queue
    }
    /// Longest run time of this attempt, in seconds (None: no limit).
    #[getter]
    fn timeout(&self) -> Option<f64> {
        self.timeout.map(|t| t.as_secs_f64())
    }

    /// The payload decoded as UTF-8 (`UnicodeDecodeError` if it is not).
    fn text<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.payload.bind(py).call_method1("decode", ("utf-8",))
    }

    /// The payload parsed as JSON (`json.loads`).
    fn json<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        py.import("json")?
            .call_method1("loads", (self.payload.bind(py),))
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "Job(id={}, queue={}, attempt={}, max_attempts={}, payload=<{} bytes>)",
            convert::str_repr(py, &self.id),
            convert::str_repr(py, &self.queue),
            self.attempt,
            self.max_attempts,
            self.payload.bind(py).as_bytes().len()
        )
    }
}

/// A job as `get` and `dead_letters` report it.
#[pyclass(module = "tideq", frozen, eq)]
#[derive(PartialEq)]
pub struct JobInfo(tideq::JobInfo);

#[pymethods]
impl JobInfo {
    #[getter]
    fn id(&self) -> &str {
        &self.0.id
    }
    /// `"delayed"`, `"ready"`, `"active"`, `"dead"` or `"completed"`.
    #[getter]
    fn state(&self) -> &'static str {
        self.0.state.as_str()
    }
    #[getter]
    fn payload<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.0.payload)
    }
    /// Deliveries so far.
    #[getter]
    fn attempts(&self) -> u32 {
        self.0.attempts
    }
    #[getter]
    fn max_attempts(&self) -> u32 {
        self.0.max_attempts
    }
    /// Error text of the last failed attempt (`"ExcType: message"` for Python handlers).
    #[getter]
    fn last_error(&self) -> Option<&str> {
        self.0.last_error.as_deref()
    }
    /// Epoch seconds, Redis clock.
    #[getter]
    fn enqueued_at(&self) -> f64 {
        secs(self.0.enqueued_at)
    }
    /// Epoch seconds, Redis clock: delayed, when due; active, the lease deadline; dead, the time
    /// of death; completed, the finish time; ready, None.
    #[getter]
    fn state_since_or_until(&self) -> Option<f64> {
        self.0.state_since_or_until.map(secs)
    }
    fn __repr__(&self, py: Python<'_>) -> String {
        let i = &self.0;
        format!(
            "JobInfo(id={}, state={}, attempts={}, max_attempts={}, last_error={})",
            convert::str_repr(py, &i.id),
            convert::str_repr(py, i.state.as_str()),
            i.attempts,
            i.max_attempts,
            i.last_error
                .as_deref()
                .map_or("None".to_string(), |e| convert::str_repr(py, e)),
        )
    }
}

/// Jobs per state, and lifetime counters of the queue (kept in Redis).
#[pyclass(module = "tideq", frozen, eq)]
#[derive(PartialEq)]
pub struct JobStats(tideq::JobStats);

#[pymethods]
impl JobStats {
    #[getter]
    fn delayed(&self) -> u64 {
        self.0.delayed
    }
    #[getter]
    fn ready(&self) -> u64 {
        self.0.ready
    }
    #[getter]
    fn active(&self) -> u64 {
        self.0.active
    }
    #[getter]
    fn dead(&self) -> u64 {
        self.0.dead
    }
    /// Jobs created (an id that already existed is not counted).
    #[getter]
    fn enqueued(&self) -> u64 {
        self.0.enqueued
    }
    #[getter]
    fn completed(&self) -> u64 {
        self.0.completed
    }
    /// Jobs that exhausted their attempts (dead-lettered).
    #[getter]
    fn failed(&self) -> u64 {
        self.0.failed
    }
    /// Failed attempts scheduled for a retry.
    #[getter]
    fn retried(&self) -> u64 {
        self.0.retried
    }
    /// Expired leases recovered (a worker died or stalled).
    #[getter]
    fn recovered(&self) -> u64 {
        self.0.recovered
    }
    #[getter]
    fn cancelled(&self) -> u64 {
        self.0.cancelled
    }
    fn __repr__(&self) -> String {
        let s = &self.0;
        format!(
            "JobStats(delayed={}, ready={}, active={}, dead={}, enqueued={}, completed={}, \
             failed={}, retried={}, recovered={}, cancelled={})",
            s.delayed,
            s.ready,
            s.active,
            s.dead,
            s.enqueued,
            s.completed,
            s.failed,
            s.retried,
            s.recovered,
            s.cancelled
        )
    }
}

/// Per-job options as keyword arguments (or an `enqueue_many` dict) before conversion.
#[derive(Default)]
struct JobArgs<'py> {
    id: Option<String>,
    delay: Option<f64>,
    run_at: Option<Bound<'py, PyAny>>,
    max_attempts: Option<i64>,
    backoff: Option<Bound<'py, Backoff>>,
    timeout: Option<f64>,
}

impl<'py> JobArgs<'py> {
    /// From an `enqueue_many` options dict: the keys are `enqueue`'s keyword arguments.
    fn from_dict(dict: &Bound<'py, PyDict>) -> PyResult<Self> {
        let mut args = JobArgs::default();
        for (key, value) in dict.iter() {
            let key: String = key.extract()?;
            if value.is_none() {
                continue;
            }
            let shown = convert::str_repr(dict.py(), &key);
            let named = |e: PyErr| PyTypeError::new_err(format!("option {shown}: {e}"));
            match key.as_str() {
                "id" => args.id = Some(value.extract().map_err(named)?),
                "delay" => args.delay = Some(value.extract().map_err(named)?),
                "run_at" => args.run_at = Some(value),
                "max_attempts" => args.max_attempts = Some(value.extract().map_err(named)?),
                "backoff" => {
                    args.backoff = Some(value.cast_into::<Backoff>().map_err(|e| named(e.into()))?)
                }
                "timeout" => args.timeout = Some(value.extract().map_err(named)?),
                _ => {
                    return Err(PyTypeError::new_err(format!(
                        "unknown enqueue option {shown} (expected id, delay, run_at, \
                         max_attempts, backoff or timeout)"
                    )))
                }
            }
        }
        Ok(args)
    }

    fn convert(self) -> PyResult<EnqueueOptions> {
        Ok(EnqueueOptions {
            id: self.id,
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
        })
    }
}

/// `enqueue_many` items: each bytes-like, or a `(payload, options dict)` tuple. Everything is
/// converted before anything is sent.
fn jobs(items: &Bound<'_, PyAny>) -> PyResult<Vec<(Vec<u8>, EnqueueOptions)>> {
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

fn queue_options(
    max_attempts: i64,
    backoff: Option<Bound<'_, Backoff>>,
    timeout: Option<f64>,
    keep_completed: i64,
    keep_for: Option<f64>,
    max_error_len: i64,
) -> PyResult<QueueOptions> {
    Ok(QueueOptions {
        max_attempts: convert::count_u32("max_attempts", max_attempts)?,
        backoff: backoff.map_or_else(tideq::Backoff::default, |b| b.get().0),
        timeout: convert::opt_duration("timeout", timeout)?,
        keep_completed: convert::count("keep_completed", keep_completed)?,
        keep_for: convert::opt_duration("keep_for", keep_for)?,
        max_error_len: convert::count("max_error_len", max_error_len)?,
    })
}

/// What both queue classes hold: the core queue and the Python client it was opened with.
struct Handle {
    queue: tideq::Queue,
    client: Py<Client>,
}

impl Handle {
    fn open(
        py: Python<'_>,
        name: &str,
        client: Option<Py<Client>>,
        url: Option<String>,
        opts: QueueOptions,
        shards: i64,
    ) -> PyResult<Self> {
        let client = match (client, url) {
            (Some(_), Some(_)) => return Err(invalid("pass either client or url, not both")),
            (Some(client), None) => client,
            (None, url) => Py::new(py, Client::from_url(url)?)?,
        };
        let shards = convert::count("shards", shards)?;
        let queue = tideq::Queue::sharded(&client.get().inner, name, shards, opts)
            .map_err(errors::to_py)?;
        Ok(Handle { queue, client })
    }

    fn repr(&self, py: Python<'_>, class: &str) -> String {
        let o = self.queue.options();
        let secs = |d: Option<Duration>| {
            d.map_or("None".to_string(), |d| format!("{:?}", d.as_secs_f64()))
        };
        format!(
            "{class}({}, max_attempts={}, backoff={}, timeout={}, keep_completed={}, keep_for={}, shards={}, client={})",
            convert::str_repr(py, self.queue.name()),
            o.max_attempts,
            Backoff(o.backoff).__repr__(),
            secs(o.timeout),
            o.keep_completed,
            secs(o.keep_for),
            self.queue.shard_count(),
            convert::str_repr(py, &self.client.get().inner.config().redacted_url()),
        )
    }
}

/// A job queue with a blocking API (the GIL is released while waiting on Redis).
#[pyclass(module = "tideq", frozen)]
pub struct Queue(Handle);

#[pymethods]
impl Queue {
    #[new]
    #[pyo3(signature = (name, client=None, *, url=None, max_attempts=5, backoff=None, timeout=None, keep_completed=1000, keep_for=Some(86400.0), max_error_len=4096, shards=1))]
    #[pyo3(
        text_signature = "(name, client=None, *, url=None, max_attempts=5, backoff=None, timeout=None, keep_completed=1000, keep_for=86400.0, max_error_len=4096, shards=1)"
    )]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        name: &str,
        client: Option<Py<Client>>,
        url: Option<String>,
        max_attempts: i64,
        backoff: Option<Bound<'_, Backoff>>,
        timeout: Option<f64>,
        keep_completed: i64,
        keep_for: Option<f64>,
        max_error_len: i64,
        shards: i64,
    ) -> PyResult<Self> {
        let opts = queue_options(
            max_attempts,
            backoff,
            timeout,
            keep_completed,
            keep_for,
            max_error_len,
        )?;
        Handle::open(py, name, client, url, opts, shards).map(Queue)
    }

    #[getter]
    fn name(&self) -> &str {
        self.0.queue.name()
    }

    #[getter]
    fn client(&self, py: Python<'_>) -> Py<Client> {
        self.0.client.clone_ref(py)
    }

    /// How many shards (hash tags) the queue is split into.
    #[getter]
    fn shards(&self) -> usize {
        self.0.queue.shard_count()
    }

    #[pyo3(signature = (payload, *, id=None, delay=None, run_at=None, max_attempts=None, backoff=None, timeout=None))]
    #[allow(clippy::too_many_arguments)]
    fn enqueue<'py>(
        &self,
        py: Python<'py>,
        payload: &Bound<'py, PyAny>,
        id: Option<String>,
        delay: Option<f64>,
        run_at: Option<Bound<'py, PyAny>>,
        max_attempts: Option<i64>,
        backoff: Option<Bound<'py, Backoff>>,
        timeout: Option<f64>,
    ) -> PyResult<Enqueued> {
        let payload = convert::bytes_like("payload", payload)?;
        let opts = JobArgs {
            id,
            delay,
            run_at,
            max_attempts,
            backoff,
            timeout,
        }
        .convert()?;
        runtime::block_on(py, self.0.queue.enqueue(payload, opts)).map(Enqueued)
    }

    fn enqueue_many(&self, py: Python<'_>, items: &Bound<'_, PyAny>) -> PyResult<Vec<Enqueued>> {
        let jobs = jobs(items)?;
        let done = runtime::block_on(py, self.0.queue.enqueue_many(&jobs))?;
        Ok(done.into_iter().map(Enqueued).collect())
    }

    fn get(&self, py: Python<'_>, id: String) -> PyResult<Option<JobInfo>> {
        runtime::block_on(py, self.0.queue.get(&id)).map(|i| i.map(JobInfo))
    }

    fn cancel(&self, py: Python<'_>, id: String) -> PyResult<()> {
        runtime::block_on(py, self.0.queue.cancel(&id))
    }

    #[pyo3(signature = (offset=0, limit=100))]
    fn dead_letters(&self, py: Python<'_>, offset: i64, limit: i64) -> PyResult<Vec<JobInfo>> {
        let (offset, limit) = (
            convert::count("offset", offset)?,
            convert::count("limit", limit)?,
        );
        let dead = runtime::block_on(py, self.0.queue.dead_letters(offset, limit))?;
        Ok(dead.into_iter().map(JobInfo).collect())
    }

    fn requeue(&self, py: Python<'_>, id: String) -> PyResult<()> {
        runtime::block_on(py, self.0.queue.requeue(&id))
    }

    fn requeue_all(&self, py: Python<'_>) -> PyResult<u64> {
        runtime::block_on(py, self.0.queue.requeue_all())
    }

    fn purge(&self, py: Python<'_>) -> PyResult<u64> {
        runtime::block_on(py, self.0.queue.purge())
    }

    fn stats(&self, py: Python<'_>) -> PyResult<JobStats> {
        runtime::block_on(py, self.0.queue.stats()).map(JobStats)
    }

    #[pyo3(signature = (handler, *, concurrency=10, batch_size=0, lease=30.0, poll_interval=5.0, grace=10.0, stop_when_drained=false))]
    #[allow(clippy::too_many_arguments)]
    fn work(
        &self,
        py: Python<'_>,
        handler: Py<PyAny>,
        concurrency: i64,
        batch_size: i64,
        lease: f64,
        poll_interval: f64,
        grace: f64,
        stop_when_drained: bool,
    ) -> PyResult<Worker> {
        let opts = Options::new(
            concurrency,
            batch_size,
            lease,
            poll_interval,
            grace,
            stop_when_drained,
        )?;
        Worker::start(py, &self.0.queue, opts, handler)
    }

    #[pyo3(signature = (handler, *, concurrency=10, batch_size=0, lease=30.0, poll_interval=5.0, grace=10.0, stop_when_drained=false))]
    #[allow(clippy::too_many_arguments)]
    fn run(
        &self,
        py: Python<'_>,
        handler: Py<PyAny>,
        concurrency: i64,
        batch_size: i64,
        lease: f64,
        poll_interval: f64,
        grace: f64,
        stop_when_drained: bool,
    ) -> PyResult<WorkerStats> {
        let opts = Options::new(
            concurrency,
            batch_size,
            lease,
            poll_interval,
            grace,
            stop_when_drained,
        )?;
        let worker = Worker::start(py, &self.0.queue, opts, handler)?;
        worker::run_blocking(py, &worker)
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        self.0.repr(py, "Queue")
    }
}

/// A job queue with an asyncio API: every method returns an awaitable.
#[pyclass(module = "tideq", frozen)]
pub struct AsyncQueue(Handle);

#[pymethods]
impl AsyncQueue {
    #[new]
    #[pyo3(signature = (name, client=None, *, url=None, max_attempts=5, backoff=None, timeout=None, keep_completed=1000, keep_for=Some(86400.0), max_error_len=4096, shards=1))]
    #[pyo3(
        text_signature = "(name, client=None, *, url=None, max_attempts=5, backoff=None, timeout=None, keep_completed=1000, keep_for=86400.0, max_error_len=4096, shards=1)"
    )]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        name: &str,
        client: Option<Py<Client>>,
        url: Option<String>,
        max_attempts: i64,
        backoff: Option<Bound<'_, Backoff>>,
        timeout: Option<f64>,
        keep_completed: i64,
        keep_for: Option<f64>,
        max_error_len: i64,
        shards: i64,
    ) -> PyResult<Self> {
        let opts = queue_options(
            max_attempts,
            backoff,
            timeout,
            keep_completed,
            keep_for,
            max_error_len,
        )?;
        Handle::open(py, name, client, url, opts, shards).map(AsyncQueue)
    }

    #[getter]
    fn name(&self) -> &str {
        self.0.queue.name()
    }

    #[getter]
    fn client(&self, py: Python<'_>) -> Py<Client> {
        self.0.client.clone_ref(py)
    }

    /// How many shards (hash tags) the queue is split into.
    #[getter]
    fn shards(&self) -> usize {
        self.0.queue.shard_count()
    }

    #[pyo3(signature = (payload, *, id=None, delay=None, run_at=None, max_attempts=None, backoff=None, timeout=None))]
    #[allow(clippy::too_many_arguments)]
    fn enqueue<'py>(
        &self,
        py: Python<'py>,
        payload: &Bound<'py, PyAny>,
        id: Option<String>,
        delay: Option<f64>,
        run_at: Option<Bound<'py, PyAny>>,
        max_attempts: Option<i64>,
        backoff: Option<Bound<'py, Backoff>>,
        timeout: Option<f64>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let payload = convert::bytes_like("payload", payload)?;
        let opts = JobArgs {
            id,
            delay,
            run_at,
            max_attempts,
            backoff,
            timeout,
        }
        .convert()?;
        let q = self.0.queue.clone();
        runtime::awaitable(
            py,
            async move { q.enqueue(payload, opts).await.map(Enqueued) },
        )
    }

    fn enqueue_many<'py>(
        &self,
        py: Python<'py>,
        items: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let jobs = jobs(items)?;
        let q = self.0.queue.clone();
        runtime::awaitable(py, async move {
            let done = q.enqueue_many(&jobs).await?;
            Ok(done.into_iter().map(Enqueued).collect::<Vec<_>>())
        })
    }

    fn get<'py>(&self, py: Python<'py>, id: String) -> PyResult<Bound<'py, PyAny>> {
        let q = self.0.queue.clone();
        runtime::awaitable(py, async move { Ok(q.get(&id).await?.map(JobInfo)) })
    }

    fn cancel<'py>(&self, py: Python<'py>, id: String) -> PyResult<Bound<'py, PyAny>> {
        let q = self.0.queue.clone();
        runtime::awaitable(py, async move { q.cancel(&id).await })
    }

    #[pyo3(signature = (offset=0, limit=100))]
    fn dead_letters<'py>(
        &self,
        py: Python<'py>,
        offset: i64,
        limit: i64,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (offset, limit) = (
            convert::count("offset", offset)?,
            convert::count("limit", limit)?,
        );
        let q = self.0.queue.clone();
        runtime::awaitable(py, async move {
            let dead = q.dead_letters(offset, limit).await?;
            Ok(dead.into_iter().map(JobInfo).collect::<Vec<_>>())
        })
    }

    fn requeue<'py>(&self, py: Python<'py>, id: String) -> PyResult<Bound<'py, PyAny>> {
        let q = self.0.queue.clone();
        runtime::awaitable(py, async move { q.requeue(&id).await })
    }

    fn requeue_all<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let q = self.0.queue.clone();
        runtime::awaitable(py, async move { q.requeue_all().await })
    }

    fn purge<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let q = self.0.queue.clone();
        runtime::awaitable(py, async move { q.purge().await })
    }

    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let q = self.0.queue.clone();
        runtime::awaitable(py, async move { q.stats().await.map(JobStats) })
    }

    /// Must be called with an asyncio loop running: `async def` handlers run on that loop.
    #[pyo3(signature = (handler, *, concurrency=10, batch_size=0, lease=30.0, poll_interval=5.0, grace=10.0, stop_when_drained=false))]
    #[allow(clippy::too_many_arguments)]
    fn work(
        &self,
        py: Python<'_>,
        handler: Py<PyAny>,
        concurrency: i64,
        batch_size: i64,
        lease: f64,
        poll_interval: f64,
        grace: f64,
        stop_when_drained: bool,
    ) -> PyResult<AsyncWorker> {
        let opts = Options::new(
            concurrency,
            batch_size,
            lease,
            poll_interval,
            grace,
            stop_when_drained,
        )?;
        AsyncWorker::start(py, &self.0.queue, opts, handler)
    }

    #[pyo3(signature = (handler, *, concurrency=10, batch_size=0, lease=30.0, poll_interval=5.0, grace=10.0, stop_when_drained=false))]
    #[allow(clippy::too_many_arguments)]
    fn run<'py>(
        &self,
        py: Python<'py>,
        handler: Py<PyAny>,
        concurrency: i64,
        batch_size: i64,
        lease: f64,
        poll_interval: f64,
        grace: f64,
        stop_when_drained: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let opts = Options::new(
            concurrency,
            batch_size,
            lease,
            poll_interval,
            grace,
            stop_when_drained,
        )?;
        let worker = AsyncWorker::start(py, &self.0.queue, opts, handler)?;
        worker::run_async(py, worker)
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        self.0.repr(py, "AsyncQueue")
    }
}

/// The fields of a job envelope (wire format v1) as a dict: `v`, `id`, `payload` (bytes),
/// `created_at`, `max_attempts`, `backoff` (`kind`, `base_ms`, `max_ms`, `jitter`), `timeout_ms`.
/// `InvalidArgumentError` for bytes that are not an envelope this build reads.
#[pyfunction]
pub fn decode_envelope<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyDict>> {
    let bytes = convert::bytes_like("data", data)?;
    let env = Envelope::decode(&bytes).map_err(errors::to_py)?;
    let backoff = PyDict::new(py);
    backoff.set_item("kind", kind_name(env.backoff.kind))?;
    backoff.set_item("base_ms", env.backoff.base_ms)?;
    backoff.set_item("max_ms", env.backoff.max_ms)?;
    backoff.set_item("jitter", env.backoff.jitter)?;
    let d = PyDict::new(py);
    d.set_item("v", env.v)?;
    d.set_item("id", env.id)?;
    d.set_item("payload", PyBytes::new(py, &env.payload))?;
    d.set_item("created_at", env.created_at)?;
    d.set_item("max_attempts", env.max_attempts)?;
    d.set_item("backoff", backoff)?;
    d.set_item("timeout_ms", env.timeout_ms)?;
    Ok(d)
}

/// The envelope bytes for `fields` (the dict `decode_envelope` returns; `v` defaults to the
/// current version, `timeout_ms` to None). Unknown or missing fields are `InvalidArgumentError`.
#[pyfunction]
pub fn encode_envelope<'py>(
    py: Python<'py>,
    fields: &Bound<'py, PyDict>,
) -> PyResult<Bound<'py, PyBytes>> {
    const FIELDS: [&str; 7] = [
        "v",
        "id",
        "payload",
        "created_at",
        "max_attempts",
        "backoff",
        "timeout_ms",
    ];
    for key in fields.keys() {
        let key: String = key.extract()?;
        if !FIELDS.contains(&key.as_str()) {
            let shown = convert::str_repr(py, &key);
            return Err(invalid(format!("unknown envelope field {shown}")));
        }
    }
    let env = Envelope {
        v: optional(fields, "v")?.unwrap_or(tideq::envelope::ENVELOPE_VERSION),
        id: required(fields, "id")?,
        payload: convert::bytes_like("payload", &required::<Bound<'_, PyAny>>(fields, "payload")?)?,
        created_at: required(fields, "created_at")?,
        max_attempts: required(fields, "max_attempts")?,
        backoff: envelope_backoff(&required(fields, "backoff")?)?,
        timeout_ms: optional(fields, "timeout_ms")?,
    };
    Ok(PyBytes::new(py, &env.encode()))
}

fn optional<'py, T: FromPyObjectOwned<'py>>(
    d: &Bound<'py, PyDict>,
    key: &str,
) -> PyResult<Option<T>> {
    match d.get_item(key)? {
        Some(v) if !v.is_none() => v.extract::<T>().map(Some).map_err(|e| {
            let e: PyErr = e.into();
            let shown = convert::str_repr(d.py(), key);
            PyTypeError::new_err(format!("envelope field {shown}: {e}"))
        }),
        _ => Ok(None),
    }
}

fn required<'py, T: FromPyObjectOwned<'py>>(d: &Bound<'py, PyDict>, key: &str) -> PyResult<T> {
    optional(d, key)?.ok_or_else(|| {
        let shown = convert::str_repr(d.py(), key);
        invalid(format!("envelope field {shown} is missing"))
    })
}

/// A backoff from a `{kind, base_ms, max_ms, jitter}` dict or a `Backoff`.
fn envelope_backoff(obj: &Bound<'_, PyAny>) -> PyResult<tideq::Backoff> {
    if let Ok(b) = obj.cast::<Backoff>() {
        return Ok(b.get().0);
    }
    let d = obj.cast::<PyDict>().map_err(|_| {
        PyTypeError::new_err("envelope field 'backoff' must be a dict or a tideq.Backoff")
    })?;
    for key in d.keys() {
        let key: String = key.extract()?;
        if !["kind", "base_ms", "max_ms", "jitter"].contains(&key.as_str()) {
            let shown = convert::str_repr(d.py(), &key);
            return Err(invalid(format!("unknown backoff field {shown}")));
        }
    }
    let kind: String = required(d, "kind")?;
    let kind = match kind.as_str() {
        "fixed" => BackoffKind::Fixed,
        "exponential" => BackoffKind::Exponential,
        other => {
            return Err(invalid(format!(
                "backoff kind must be 'fixed' or 'exponential', not {}",
                convert::str_repr(d.py(), other)
            )))
        }
    };
    Ok(tideq::Backoff {
        kind,
        base_ms: required(d, "base_ms")?,
        max_ms: required(d, "max_ms")?,
        jitter: required(d, "jitter")?,
    })
}
