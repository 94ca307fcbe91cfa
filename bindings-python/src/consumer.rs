//! `tideq.Consumer` (blocking) and `tideq.AsyncConsumer` (asyncio), the handles of a running
//! `tideq::Consumer` (core `consumer`), and `tideq.ConsumerStats`. The loop itself (fetching,
//! concurrency, shutdown) is the core's; handlers run as [`crate::handler`] says.
//!
//! A handler exception is logged on the `tideq` logger with its traceback and counted as failed;
//! the consumer goes on and the batch is not redelivered (at-most-once).

use std::future::Future;
use std::pin::Pin;

use pyo3::prelude::*;
use tideq::{Batch, ConsumerOptions};

use crate::convert::{Items, Secs};
use crate::error;
use crate::handler::{self, Work};
use crate::runtime::{Api, Running};
use crate::signal::{self, RunningBase};

/// What a consumer has done so far, in this process.
#[pyclass(module = "tideq", frozen, eq)]
#[derive(PartialEq)]
pub struct ConsumerStats(tideq::ConsumerStats);

#[pymethods]
impl ConsumerStats {
    /// Batches handed to the handler (failed ones included).
    #[getter]
    fn batches(&self) -> u64 {
        self.0.batches
    }
    /// Items in those batches.
    #[getter]
    fn items(&self) -> u64 {
        self.0.items
    }
    /// Batches whose handler raised (their items are gone: at-most-once).
    #[getter]
    fn failed(&self) -> u64 {
        self.0.failed
    }
    /// Fetches that failed (e.g. Redis unreachable) and were retried with backoff.
    #[getter]
    fn fetch_errors(&self) -> u64 {
        self.0.fetch_errors
    }
    fn __repr__(&self) -> String {
        format!("ConsumerStats({})", counters(&self.0))
    }
}

crate::value::value_class! { ConsumerStats { batches, items, failed, fetch_errors } }

fn counters(s: &tideq::ConsumerStats) -> String {
    format!(
        "batches={}, items={}, failed={}, fetch_errors={}",
        s.batches, s.items, s.failed, s.fetch_errors
    )
}

impl Work for Batch {
    const CALL: &'static str = "handler(group, items)";
    type Note = (String, usize);

    fn call<'py>(self, func: &Bound<'py, PyAny>) -> (PyResult<Bound<'py, PyAny>>, Self::Note) {
        let n = self.items.len();
        let out = func.call1((self.group.as_str(), Items(self.items)));
        (out, (self.group, n))
    }

    type Error = String;
    type Output = ();

    fn error(text: String) -> String {
        text
    }

    fn failed(py: Python<'_>, (group, n): &Self::Note, err: &PyErr) -> String {
        let msg = "handler failed on a batch of %d item(s) from group %r; the batch is not \
                   redelivered";
        handler::log_exception(py, err, msg, (n, group));
        err.to_string()
    }
}

impl Running for tideq::Consumer {
    fn stop(&self) {
        tideq::Consumer::stop(self)
    }
    fn abort(&self) {
        tideq::Consumer::abort(self)
    }
    fn is_running(&self) -> bool {
        tideq::Consumer::is_running(self)
    }
    fn wait(&self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(async move {
            self.join().await;
        })
    }
    fn error(&self) -> Option<tideq::Error> {
        tideq::Consumer::error(self)
    }
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Ok(Bound::new(py, ConsumerStats(tideq::Consumer::stats(self)))?.into_any())
    }
    fn counters(&self) -> String {
        counters(&tideq::Consumer::stats(self))
    }
}

/// Starts a core consumer on `queue` running `func` (kept in `started`, the queue handle's), and
/// returns its handle for `api`.
pub fn start<'py>(
    py: Python<'py>,
    api: Api,
    queue: &tideq::CappedQueue,
    started: &signal::Started,
    opts: ConsumerOptions,
    func: Py<PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let grace = opts.grace;
    let (base, _) = signal::start(
        py,
        api,
        started,
        "AsyncCappedQueue.consume()/run() need a running asyncio event loop (call them from \
         async code); use CappedQueue for threads",
        grace,
        ("batch handler", "batch handlers"),
        |wrap| queue.consume_boxed(opts, wrap(func)?).map_err(error::to_py),
    )?;
    Ok(match api {
        Api::Blocking => Bound::new(py, base.add_subclass(Consumer))?.into_any(),
        Api::Async => Bound::new(py, base.add_subclass(AsyncConsumer))?.into_any(),
    })
}

/// A running consumer (blocking API). Dropping it does not stop it: call ``shutdown()``.
///
/// A consumer stops by itself when Redis refuses its credentials or permissions (which retrying
/// cannot fix; other errors are retried): ``join()``, ``shutdown()`` and ``run()`` then raise
/// that error (``AuthError``, ``PermissionDeniedError``), also kept in ``error``.
#[pyclass(module = "tideq", extends = RunningBase, frozen)]
pub struct Consumer;

#[pymethods]
impl Consumer {
    /// Wait until stopped, or ``timeout`` seconds (a timeout too large to be a point in time
    /// means no limit); returns the stats either way, unless the consumer stopped on an error
    /// (raised).
    #[pyo3(signature = (timeout=None))]
    fn join<'py>(slf: &Bound<'py, Self>, timeout: Option<Secs>) -> PyResult<Bound<'py, PyAny>> {
        slf.as_super().get().join(slf.py(), timeout)
    }
}

/// A running consumer (asyncio API). Dropping it does not stop it: ``await shutdown()``.
///
/// It stops by itself on errors retrying cannot fix, as ``Consumer`` does.
#[pyclass(module = "tideq", extends = RunningBase, frozen)]
pub struct AsyncConsumer;

#[pymethods]
impl AsyncConsumer {
    /// Wait until stopped; returns the stats, or raises the error the consumer stopped on.
    fn join<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        slf.as_super().get().join(slf.py(), None)
    }
}

crate::signal::context_manager!(blocking Consumer);
crate::signal::context_manager!(asyncio AsyncConsumer);
