//! A job's attempts and its log: the value classes `Attempt` and `LogLine`, `JobInfo`'s
//! `started_at`, `run_ms`, `worker`, `attempt_history`, `logs`, a handler's `job.log(line)`,
//! and `Queue.job_logs(id)` (core `attempts.rs`).

use pyo3::prelude::*;

use crate::convert::{self, Text};
use crate::job::{Job, JobInfo};
use crate::jobs::QueueBase;
use crate::runtime::Api;

/// One attempt of a job (``JobInfo.attempt_history``).
#[pyclass(module = "tideq", frozen, eq)]
#[derive(PartialEq)]
pub struct Attempt(pub tideq::AttemptInfo);

#[pymethods]
impl Attempt {
    /// The attempt's number (1 the first).
    #[getter]
    fn attempt(&self) -> u32 {
        self.0.attempt
    }
    /// When it started, epoch milliseconds (Redis clock); None when unknown (a lost attempt).
    #[getter]
    fn started_at(&self) -> Option<u64> {
        self.0.started_at
    }
    /// When it ended, epoch milliseconds (Redis clock); a lost one: when its lease was found
    /// expired.
    #[getter]
    fn ended_at(&self) -> Option<u64> {
        self.0.ended_at
    }
    /// How long it ran (ms); None when its start is unknown.
    #[getter]
    fn duration_ms(&self) -> Option<u64> {
        self.0.duration_ms
    }
    /// The worker that ran it (its id, as ``workers()`` lists it); None when unknown.
    #[getter]
    fn worker(&self) -> Option<&str> {
        self.0.worker.as_deref()
    }
    /// ``"completed"``, ``"failed"`` or ``"lost"`` (its lease expired: its worker died or lost
    /// Redis).
    #[getter]
    fn outcome(&self) -> &str {
        &self.0.outcome
    }
    /// Its error (``"ExcType: message"``); None for a completed attempt.
    #[getter]
    fn error(&self) -> Option<&str> {
        self.0.error.as_deref()
    }
    /// The handler's traceback (``traceback.format_exception``), when it raised; None otherwise.
    #[getter]
    fn trace(&self) -> Option<&str> {
        self.0.trace.as_deref()
    }
    fn __repr__(&self, py: Python<'_>) -> String {
        let a = &self.0;
        let opt = |v: Option<u64>| v.map_or("None".to_string(), |v| v.to_string());
        format!(
            "Attempt(attempt={}, outcome={}, started_at={}, ended_at={}, error={})",
            a.attempt,
            convert::str_repr(py, &a.outcome),
            opt(a.started_at),
            opt(a.ended_at),
            a.error
                .as_deref()
                .map_or("None".to_string(), |e| convert::str_repr(py, e)),
        )
    }
}

crate::value::value_class! { Attempt { attempt, started_at, ended_at, duration_ms, worker, outcome, error, trace } }

/// One line of a job's log (``job.log``).
#[pyclass(module = "tideq", frozen, eq)]
#[derive(PartialEq)]
pub struct LogLine(pub tideq::LogLine);

#[pymethods]
impl LogLine {
    /// When it was logged, epoch milliseconds (Redis clock).
    #[getter]
    fn at_ms(&self) -> u64 {
        self.0.at_ms
    }
    /// The attempt that logged it.
    #[getter]
    fn attempt(&self) -> u32 {
        self.0.attempt
    }
    /// The line.
    #[getter]
    fn line(&self) -> &str {
        &self.0.line
    }
    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "LogLine(at_ms={}, attempt={}, line={})",
            self.0.at_ms,
            self.0.attempt,
            convert::str_repr(py, &self.0.line)
        )
    }
}

crate::value::value_class! { LogLine { at_ms, attempt, line } }

#[pymethods]
impl JobInfo {
    /// When its last attempt (or the one under way) started, epoch milliseconds (Redis clock);
    /// None when unknown.
    #[getter]
    fn started_at(&self) -> Option<u64> {
        self.0.started_at
    }
    /// How long its last finished attempt ran (ms); None when unknown.
    #[getter]
    fn run_ms(&self) -> Option<u64> {
        self.0.run_ms
    }
    /// The worker that ran its last attempt; None when unknown.
    #[getter]
    fn worker(&self) -> Option<&str> {
        self.0.worker.as_deref()
    }
    /// Its attempts, oldest first (the first 3 and the last 20 are kept), as ``Attempt``s:
    /// read by ``get``; empty in lists.
    #[getter]
    fn attempt_history(&self) -> Vec<Attempt> {
        self.0
            .attempt_history
            .iter()
            .cloned()
            .map(Attempt)
            .collect()
    }
    /// Its log (``job.log``), oldest first, as ``LogLine``s: read by ``get``; empty in lists.
    #[getter]
    fn logs(&self) -> Vec<LogLine> {
        self.0.logs.iter().cloned().map(LogLine).collect()
    }
}

impl Job {
    fn add_log<'py>(&self, py: Python<'py>, api: Api, line: Text) -> PyResult<Bound<'py, PyAny>> {
        let job = self.core.clone();
        api.call(py, async move { job.log(&line.0).await })
    }
}

#[pymethods]
impl Job {
    /// Add ``line`` (a ``str``) to the job's log, stamped with the Redis time and this attempt.
    ///
    /// ``get(id).logs`` and ``job_logs(id)`` read it; ``tideq job`` and the dashboard show it.
    /// A line holds at most 4096 bytes (else ``InvalidArgumentError``, nothing written); the log
    /// keeps the newest 1000 lines within 64 KiB and goes with the job. ``LeaseLostError`` when
    /// the lease was lost. Blocks for one Redis round trip (the GIL released); in an ``async
    /// def`` handler, ``await job.log_async(line)``.
    fn log<'py>(&self, py: Python<'py>, line: Text) -> PyResult<Bound<'py, PyAny>> {
        self.add_log(py, Api::Blocking, line)
    }

    /// ``log(line)`` as an awaitable, for ``async def`` handlers.
    fn log_async<'py>(&self, py: Python<'py>, line: Text) -> PyResult<Bound<'py, PyAny>> {
        self.add_log(py, Api::Async, line)
    }
}

#[pymethods]
impl QueueBase {
    /// The lines job ``id``'s handlers logged (``job.log``), oldest first, as ``LogLine``s.
    ///
    /// ``JobNotFoundError`` when there is no such job (or it is no longer kept).
    fn job_logs<'py>(&self, py: Python<'py>, id: Text) -> PyResult<Bound<'py, PyAny>> {
        let id = id.0;
        let q = self.queue.clone();
        self.api.call(py, async move {
            Ok(q.job_logs(&id)
                .await?
                .into_iter()
                .map(LogLine)
                .collect::<Vec<_>>())
        })
    }
}
