//! `tideq.Worker` (blocking) and `tideq.AsyncWorker` (asyncio), the handles of a running
//! `tideq::Worker` (core `worker`), and `tideq.WorkerStats`. The worker loop (fetching, leases
//! and their renewal, ack/fail/retry, timeouts, shutdown) is the core's; lease renewal runs on a
//! Rust thread and needs no GIL, so a handler that holds the GIL or blocks its event loop cannot
//! let its lease lapse. Handlers run as [`crate::handler`] says.
//!
//! Returning normally completes the job. A raised exception fails the attempt with the error text
//! `"ExcType: message"` (stored with the job; retried after backoff, dead-lettered after
//! `max_attempts`) and is logged on the `tideq` logger with its traceback.

use std::future::Future;
use std::pin::Pin;

use pyo3::prelude::*;
use tideq::WorkerOptions;

use crate::convert::Secs;
use crate::handler::{self, Work};
use crate::job::Job;
use crate::runtime::{Api, Running};
use crate::signal::{self, RunningBase};

/// What a worker has done so far, in this process.
#[pyclass(module = "tideq", frozen, eq)]
#[derive(PartialEq)]
pub struct WorkerStats(tideq::WorkerStats);

#[pymethods]
impl WorkerStats {
    /// Jobs whose handler returned and whose completion was accepted.
    #[getter]
    fn completed(&self) -> u64 {
        self.0.completed
    }
    /// Attempts that failed (handler raised, or timed out).
    #[getter]
    fn failed(&self) -> u64 {
        self.0.failed
    }
    /// Results refused because the lease had expired and the job was redelivered.
    #[getter]
    fn lease_lost(&self) -> u64 {
        self.0.lease_lost
    }
    /// Unfinished jobs returned to the queue at shutdown.
    #[getter]
    fn released(&self) -> u64 {
        self.0.released
    }
    /// Fetches or waits that failed (e.g. Redis unreachable) and were retried with backoff.
    #[getter]
    fn fetch_errors(&self) -> u64 {
        self.0.fetch_errors
    }
    fn __repr__(&self) -> String {
        format!("WorkerStats({})", counters(&self.0))
    }
}

fn counters(s: &tideq::WorkerStats) -> String {
    format!(
        "completed={}, failed={}, lease_lost={}, released={}, fetch_errors={}",
        s.completed, s.failed, s.lease_lost, s.released, s.fetch_errors
    )
}

impl Work for tideq::Job {
    const CALL: &'static str = "handler(job)";
    type Note = (String, u32, u32);

    fn call<'py>(self, func: &Bound<'py, PyAny>) -> (PyResult<Bound<'py, PyAny>>, Self::Note) {
        let note = (self.id.clone(), self.attempt, self.max_attempts);
        (func.call1((Job::from_core(func.py(), self),)), note)
    }

    fn cancellation(&self) -> Option<tideq::CancellationToken> {
        Some(tideq::Job::cancellation(self).clone())
    }

    fn failed(py: Python<'_>, (id, attempt, max_attempts): &Self::Note, err: &PyErr) -> String {
        let msg = "handler failed on job %r (attempt %d of %d)";
        handler::log_exception(py, err, msg, (id, attempt, max_attempts));
        handler::error_text(py, err)
    }
}

impl Running for tideq::Worker {
    fn stop(&self) {
        tideq::Worker::stop(self)
    }
    fn is_running(&self) -> bool {
        tideq::Worker::is_running(self)
    }
    fn wait(&self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(async move {
            self.join().await;
        })
    }
    fn error(&self) -> Option<tideq::Error> {
        tideq::Worker::error(self)
    }
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Ok(Bound::new(py, WorkerStats(tideq::Worker::stats(self)))?.into_any())
    }
    fn counters(&self) -> String {
        counters(&tideq::Worker::stats(self))
    }
}

/// Starts a core worker on `queue` running `func`, and returns its handle for `api`.
pub fn start<'py>(
    py: Python<'py>,
    api: Api,
    queue: &tideq::Queue,
    opts: WorkerOptions,
    func: Py<PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let grace = opts.grace;
    let base = signal::start(
        py,
        api,
        func,
        "AsyncQueue.work()/run() need a running asyncio event loop (call them from async code); \
         use Queue for threads",
        grace,
        |handler| queue.work_boxed(opts, handler),
    )?;
    Ok(match api {
        Api::Blocking => Bound::new(py, base.add_subclass(Worker))?.into_any(),
        Api::Async => Bound::new(py, base.add_subclass(AsyncWorker))?.into_any(),
    })
}

/// A running worker (blocking API). Dropping it does not stop it: call `shutdown()`.
#[pyclass(module = "tideq", extends = RunningBase, frozen)]
pub struct Worker;

#[pymethods]
impl Worker {
    /// Wait until the worker has stopped, or `timeout` seconds; returns the stats either way
    /// (check `running`).
    #[pyo3(signature = (timeout=None))]
    fn join<'py>(slf: &Bound<'py, Self>, timeout: Option<Secs>) -> PyResult<Bound<'py, PyAny>> {
        slf.as_super().get().join(slf.py(), timeout)
    }
}

/// A running worker (asyncio API). Dropping it does not stop it: `await shutdown()`.
#[pyclass(module = "tideq", extends = RunningBase, frozen)]
pub struct AsyncWorker;

#[pymethods]
impl AsyncWorker {
    /// Awaitable: waits until the worker has stopped, returns its stats.
    fn join<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        slf.as_super().get().join(slf.py(), None)
    }
}
