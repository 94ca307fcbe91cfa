//! The job queue's value classes (core `job` and the backoff policy): `Backoff`, `Enqueued`,
//! `Job`, `JobInfo`, `JobStats`. Times cross as float seconds: durations and Redis-clock
//! timestamps (`enqueued_at`, `state_since_or_until`) alike.

use std::time::Duration;

use pyo3::prelude::*;
use pyo3::types::PyBytes;
use tideq::BackoffKind;

use crate::convert::{self, millis, secs, Secs};

/// A retry delay policy: `Backoff.fixed(delay)` or `Backoff.exponential(base, max, jitter)`.
#[pyclass(module = "tideq", frozen, eq)]
#[derive(PartialEq, Clone, Copy)]
pub struct Backoff(pub tideq::Backoff);

#[pymethods]
impl Backoff {
    /// The same delay (seconds) before every retry, no jitter.
    #[staticmethod]
    fn fixed(delay: Secs) -> PyResult<Self> {
        let delay = convert::duration("delay", delay)?;
        Ok(Backoff(tideq::Backoff::fixed(millis(delay))))
    }

    /// `base` seconds before the first retry, doubling up to `max`; with `jitter`, each delay is
    /// drawn from [delay/2, delay]. What is not given is as in the core's default backoff.
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

    /// `"fixed"` or `"exponential"`.
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

/// What `enqueue` did.
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
    cancel: tideq::CancellationToken,
}

impl Job {
    pub fn from_core(py: Python<'_>, job: tideq::Job) -> Self {
        Job {
            cancel: job.cancellation().clone(),
            payload: PyBytes::new(py, &job.payload).unbind(),
            id: job.id,
            attempt: job.attempt,
            max_attempts: job.max_attempts,
            enqueued_at: job.enqueued_at,
            queue: job.queue,
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
    /// True once the handler should stop: the attempt's timeout passed, or the worker is
    /// shutting down and its grace period is over.
    #[getter]
    fn cancelled(&self) -> bool {
        self.cancel.is_cancelled()
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
pub struct JobInfo(pub tideq::JobInfo);

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
    /// Why the stored job could not be read (a damaged record), or None; `payload` then holds
    /// the stored envelope's raw bytes.
    #[getter]
    fn unreadable(&self) -> Option<&str> {
        self.0.unreadable.as_deref()
    }
    fn __repr__(&self, py: Python<'_>) -> String {
        let i = &self.0;
        let unreadable = i.unreadable.as_deref().map_or(String::new(), |u| {
            format!(", unreadable={}", convert::str_repr(py, u))
        });
        format!(
            "JobInfo(id={}, state={}, attempts={}, max_attempts={}, last_error={}{unreadable})",
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
pub struct JobStats(pub tideq::JobStats);

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
    /// Dead jobs deleted by the `keep_dead` / `keep_dead_for` bounds.
    #[getter]
    fn dead_trimmed(&self) -> u64 {
        self.0.dead_trimmed
    }
    /// Jobs found with their data missing (evicted by Redis, or deleted by hand) and removed.
    #[getter]
    fn lost(&self) -> u64 {
        self.0.lost
    }
    fn __repr__(&self) -> String {
        let s = &self.0;
        format!(
            "JobStats(delayed={}, ready={}, active={}, dead={}, enqueued={}, completed={}, \
             failed={}, retried={}, recovered={}, cancelled={}, dead_trimmed={}, lost={})",
            s.delayed,
            s.ready,
            s.active,
            s.dead,
            s.enqueued,
            s.completed,
            s.failed,
            s.retried,
            s.recovered,
            s.cancelled,
            s.dead_trimmed,
            s.lost
        )
    }
}
