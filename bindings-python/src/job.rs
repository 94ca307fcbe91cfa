//! The job queue's value classes (core `job` and the backoff policy):
//! `Backoff`, `Enqueued`, `Job`, `JobInfo`, `JobStats` (`ScheduleInfo` is in [`crate::schedule`]).
//! Times cross as float seconds: durations and Redis-clock timestamps (`enqueued_at`,
//! `state_since_or_until`) alike.

use pyo3::prelude::*;
use pyo3::types::PyBytes;
use tideq::BackoffKind;

use crate::convert::{self, millis, secs, Secs};
use crate::runtime::Api;

/// A retry delay policy. ``None`` where a backoff is accepted means the core default:
/// exponential from 1 s, doubling, capped at 1 h, with jitter.
#[pyclass(module = "tideq", frozen, eq)]
#[derive(PartialEq, Clone, Copy)]
pub struct Backoff(pub tideq::Backoff);

#[pymethods]
impl Backoff {
    /// The same ``delay`` (seconds) before every retry, no jitter.
    #[staticmethod]
    fn fixed(delay: Secs) -> PyResult<Self> {
        let delay = convert::duration("delay", delay)?;
        Ok(Backoff(tideq::Backoff::fixed(millis(delay))))
    }

    /// ``base`` seconds before the first retry, doubling up to ``max``; with ``jitter`` each
    /// delay is drawn from [delay/2, delay]. Not given (or None): as in the default backoff
    /// (1 s, 3600 s, jitter).
    #[staticmethod]
    #[pyo3(signature = (base=None, max=None, jitter=None))]
    fn exponential(base: Option<Secs>, max: Option<Secs>, jitter: Option<bool>) -> PyResult<Self> {
        let d = tideq::Backoff::default();
        let ms = |what, secs: Option<Secs>, default| {
            secs.map_or(Ok(default), |s| convert::duration(what, s).map(millis))
        };
        let (base, max) = (ms("base", base, d.base_ms)?, ms("max", max, d.max_ms)?);
        Ok(Backoff(tideq::Backoff {
            jitter: jitter.unwrap_or(d.jitter),
            ..tideq::Backoff::exponential(base, max)
        }))
    }

    /// ``"fixed"`` or ``"exponential"``.
    #[getter]
    fn kind(&self) -> &'static str {
        self.0.kind.as_str()
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

    pub(crate) fn __repr__(&self) -> String {
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

crate::value::value_class! { Backoff { kind, base, max, jitter } }

/// What ``enqueue`` did.
#[pyclass(module = "tideq", frozen, eq)]
#[derive(PartialEq)]
pub struct Enqueued(pub tideq::Enqueued);

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

crate::value::value_class! { Enqueued { id, created } }

/// A leased job, as a worker hands it to the handler.
#[pyclass(module = "tideq", frozen)]
pub struct Job {
    /// The core's job (its payload moved to `payload`): what settling its lease needs.
    pub(crate) core: tideq::Job,
    payload: Py<PyBytes>,
}

impl Job {
    /// Stores a progress value through `api` (blocking, or a coroutine).
    fn report<'py>(
        &self,
        py: Python<'py>,
        api: Api,
        value: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let bytes = convert::json_or_bytes(value)?;
        let job = self.core.clone();
        api.call(py, async move { job.progress(&bytes).await })
    }

    /// Reads the children's results through `api` (blocking, or a coroutine).
    fn children<'py>(&self, py: Python<'py>, api: Api) -> PyResult<Bound<'py, PyAny>> {
        let job = self.core.clone();
        api.call(py, async move {
            job.children_results()
                .await
                .map(crate::workflow::child_results)
        })
    }

    pub fn from_core(py: Python<'_>, mut job: tideq::Job) -> Self {
        let payload = PyBytes::new(py, &std::mem::take(&mut job.payload)).unbind();
        Job { core: job, payload }
    }

    /// The core's job, for the lease calls (`complete`, `fail`, ...).
    pub fn core(&self) -> &tideq::Job {
        &self.core
    }
}

#[pymethods]
impl Job {
    #[getter]
    fn id(&self) -> &str {
        &self.core.id
    }
    #[getter]
    fn payload(&self, py: Python<'_>) -> Py<PyBytes> {
        self.payload.clone_ref(py)
    }
    /// 1 on the first delivery.
    #[getter]
    fn attempt(&self) -> u32 {
        self.core.attempt
    }
    #[getter]
    fn max_attempts(&self) -> u32 {
        self.core.max_attempts
    }
    /// When the job was enqueued, epoch seconds by the Redis clock.
    #[getter]
    fn enqueued_at(&self) -> f64 {
        secs(self.core.enqueued_at)
    }
    /// When this attempt started (the job was leased), epoch seconds by the Redis clock.
    #[getter]
    fn started_at(&self) -> f64 {
        secs(self.core.started_at)
    }
    /// Name of the queue the job came from.
    #[getter]
    fn queue(&self) -> &str {
        &self.core.queue
    }
    /// Longest run time of this attempt, in seconds (None: no limit).
    #[getter]
    fn timeout(&self) -> Option<f64> {
        self.core.timeout.map(|t| t.as_secs_f64())
    }
    /// The task's name, when the job was enqueued as a task (None otherwise).
    #[getter]
    fn task(&self) -> Option<&str> {
        self.core.task.as_deref()
    }
    /// How the payload encodes the task's arguments: ``"json"``, ``"msgpack"``, or None (raw
    /// bytes).
    #[getter]
    fn format(&self) -> Option<&'static str> {
        self.core.format.map(|f| f.as_str())
    }
    /// Where the payload came from when it was filled in from the job's children's results:
    /// ``"previous"`` (a chain's link: the previous link's result) or ``"children"`` (a chord's
    /// callback: the list of its children's results); None for any other job. A task function
    /// of such a job gets the value as its one argument.
    #[getter]
    fn args_from(&self) -> Option<&'static str> {
        self.core.args_from.map(tideq::ArgsFrom::as_str)
    }
    /// The producer's trace context, as W3C Trace Context headers (``traceparent``, and
    /// ``tracestate`` when set), or None: what ``enqueue(trace=...)`` gave, or the producer's
    /// current span's (OpenTelemetry). A worker's span continues it.
    #[getter]
    fn trace(&self) -> Option<tideq::TraceContext> {
        self.core.trace.clone()
    }
    /// True once the handler should stop: the attempt's ``timeout`` passed, the job's ``cancel``
    /// was requested, or the worker is shutting down and its grace period is over. A
    /// plain-function handler that can stop early (a long loop, a wait) should check it and
    /// raise: the job is then retried (timeout), ends cancelled (cancel) or is returned to the
    /// queue (shutdown). Until the handler returns, its job keeps its slot and
    /// its lease; one that returns normally at shutdown completes its job. (``async def``
    /// handlers are cancelled instead: their task gets ``asyncio.CancelledError``.)
    #[getter]
    fn cancelled(&self) -> bool {
        self.core.is_cancelled()
    }

    /// The task's arguments decoded from the payload by its format (JSON or MessagePack) as
    /// Python values. ``InvalidArgumentError`` for a raw job (no format) or arguments that do not
    /// decode.
    fn args<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        if self.core.format.is_none() {
            return Err(crate::error::invalid(format!(
                "job {:?} has no task arguments: it was enqueued with a raw payload (read \
                 job.payload, job.text() or job.json())",
                self.core.id
            )));
        }
        let mut job = self.core.clone();
        job.payload = self.payload.bind(py).as_bytes().to_vec();
        let args: tideq::envelope::Value = job.args().map_err(crate::error::to_py)?;
        convert::from_value(py, &args)
    }

    /// The payload decoded as UTF-8 (``UnicodeDecodeError`` if it is not).
    fn text<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.payload.bind(py).call_method1("decode", ("utf-8",))
    }

    /// The payload parsed as JSON (``json.loads``).
    fn json<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        py.import("json")?
            .call_method1("loads", (self.payload.bind(py),))
    }

    /// Store ``value`` as the job's progress now, replacing the last one.
    ///
    /// ``get(id).progress`` shows it. ``value`` is JSON-encoded (bytes are stored as they are);
    /// at most the queue's ``max_result_len`` bytes (else ``PayloadTooLargeError``).
    /// ``LeaseLostError`` when the job's lease was lost (it was redelivered). Blocks for one Redis
    /// round trip (the GIL released); in an ``async def`` handler, ``await
    /// job.progress_async(value)``.
    fn progress<'py>(
        &self,
        py: Python<'py>,
        value: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.report(py, Api::Blocking, value)
    }

    /// ``progress(value)`` as an awaitable, for ``async def`` handlers.
    fn progress_async<'py>(
        &self,
        py: Python<'py>,
        value: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.report(py, Api::Async, value)
    }

    /// How this job's children ended, as ``ChildResult``s (a flow's parent, ``enqueue_flow``):
    /// every child has finished by the time a parent runs. Empty for a job without children.
    /// Blocks for the Redis round trips (the GIL released); in an ``async def`` handler, ``await
    /// job.children_results_async()``.
    fn children_results<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.children(py, Api::Blocking)
    }

    /// ``children_results()`` as an awaitable, for ``async def`` handlers.
    fn children_results_async<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.children(py, Api::Async)
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        let task = self.core.task.as_deref().map_or(String::new(), |t| {
            format!(", task={}", convert::str_repr(py, t))
        });
        format!(
            "Job(id={}, queue={}{task}, attempt={}, max_attempts={}, payload=<{} bytes>)",
            convert::str_repr(py, &self.core.id),
            convert::str_repr(py, &self.core.queue),
            self.core.attempt,
            self.core.max_attempts,
            self.payload.bind(py).as_bytes().len()
        )
    }
}

/// A job as ``get``, ``jobs`` and ``dead_letters`` report it.
#[pyclass(module = "tideq", frozen, eq)]
#[derive(PartialEq)]
pub struct JobInfo(pub tideq::JobInfo);

#[pymethods]
impl JobInfo {
    #[getter]
    fn id(&self) -> &str {
        &self.0.id
    }
    /// ``"delayed"``, ``"ready"``, ``"active"``, ``"dead"``, ``"completed"``, or ``"waiting"``: a
    /// flow's job waiting for its children (``get`` only: no state lists it).
    #[getter]
    fn state(&self) -> &'static str {
        self.0.state.as_str()
    }
    #[getter]
    fn payload<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.0.payload)
    }
    /// The task's name, for a job enqueued as a task (``enqueue_task``, ``@task``); None for a
    /// raw payload.
    #[getter]
    fn task(&self) -> Option<&str> {
        self.0.task.as_deref()
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
    /// Error text of the last failed attempt (``"ExcType: message"`` for Python handlers).
    #[getter]
    fn last_error(&self) -> Option<&str> {
        self.0.last_error.as_deref()
    }
    /// Epoch seconds, Redis clock.
    #[getter]
    fn enqueued_at(&self) -> f64 {
        secs(self.0.enqueued_at)
    }
    /// Epoch seconds, Redis clock: delayed, when due; active, the lease deadline; dead, the
    /// time of death; completed, the finish time; ready, None.
    #[getter]
    fn state_since_or_until(&self) -> Option<f64> {
        self.0.state_since_or_until.map(secs)
    }
    /// The job's priority (1 runs first), or None.
    #[getter]
    fn priority(&self) -> Option<u32> {
        self.0.priority
    }
    /// The job's group, or None.
    #[getter]
    fn group(&self) -> Option<&str> {
        self.0.group.as_deref()
    }
    /// The tokens it takes from a token-bucket rate when it starts (1 unless enqueued with
    /// another ``cost``).
    #[getter]
    fn cost(&self) -> u32 {
        self.0.cost
    }
    /// Why the stored job could not be read (a damaged record: such a job is dead-lettered),
    /// or None; ``payload`` then holds the stored envelope's raw bytes.
    #[getter]
    fn unreadable(&self) -> Option<&str> {
        self.0.unreadable.as_deref()
    }
    /// What the handler returned (a completed job), decoded from JSON; the raw bytes when they
    /// are not JSON (e.g. bytes returned as they are); None when it returned nothing.
    #[getter]
    fn result<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.0
            .result
            .as_deref()
            .map(|r| convert::json_or_bytes_value(py, r))
            .transpose()
    }
    /// The stored result's raw bytes, or None.
    #[getter]
    fn result_bytes<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyBytes>> {
        self.0.result.as_deref().map(|r| PyBytes::new(py, r))
    }
    /// The last progress the handler reported (``job.progress``), decoded as ``result`` is; None
    /// when none.
    #[getter]
    fn progress<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.0
            .progress
            .as_deref()
            .map(|p| convert::json_or_bytes_value(py, p))
            .transpose()
    }
    /// The stored progress's raw bytes, or None.
    #[getter]
    fn progress_bytes<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyBytes>> {
        self.0.progress.as_deref().map(|p| PyBytes::new(py, p))
    }
    /// A flow's child: its parent, as ``(queue, id)``; None otherwise.
    #[getter]
    fn parent(&self) -> Option<(&str, &str)> {
        self.0
            .parent
            .as_ref()
            .map(|p| (p.queue.as_str(), p.id.as_str()))
    }
    /// Every job this one's outcome is reported to, as ``(queue, id)``: its parent in a flow,
    /// each job that runs after it in a graph; empty for any other job.
    #[getter]
    fn parents(&self) -> Vec<(&str, &str)> {
        self.0
            .parents
            .iter()
            .map(|p| (p.queue.as_str(), p.id.as_str()))
            .collect()
    }
    /// A flow's job waiting for its children: how many have not finished yet; None otherwise.
    #[getter]
    fn children_pending(&self) -> Option<u64> {
        self.0.children_pending
    }
    fn __repr__(&self, py: Python<'_>) -> String {
        let i = &self.0;
        let unreadable = i.unreadable.as_deref().map_or(String::new(), |u| {
            format!(", unreadable={}", convert::str_repr(py, u))
        });
        let task = i.task.as_deref().map_or(String::new(), |t| {
            format!(", task={}", convert::str_repr(py, t))
        });
        let priority = i
            .priority
            .map_or(String::new(), |p| format!(", priority={p}"));
        let group = i.group.as_deref().map_or(String::new(), |g| {
            format!(", group={}", convert::str_repr(py, g))
        });
        let parent = i.parent.as_ref().map_or(String::new(), |p| {
            format!(
                ", parent=({}, {})",
                convert::str_repr(py, &p.queue),
                convert::str_repr(py, &p.id)
            )
        });
        let pending = i
            .children_pending
            .map_or(String::new(), |n| format!(", children_pending={n}"));
        let cost = if i.cost == 1 {
            String::new()
        } else {
            format!(", cost={}", i.cost)
        };
        format!(
            "JobInfo(id={}, state={}{task}, attempts={}, max_attempts={}, last_error={}{priority}\
             {group}{cost}{parent}{pending}{unreadable})",
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

crate::value::value_class! {
    JobInfo {
        id, state, payload, task, attempts, max_attempts, last_error, enqueued_at,
        state_since_or_until, priority, group, cost, unreadable, result, result_bytes, progress,
        progress_bytes, parent, parents, children_pending, started_at, run_ms, worker,
        attempt_history, logs
    }
}

pub use crate::job_stats::JobStats;
