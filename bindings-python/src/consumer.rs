//! `tideq.Consumer` (blocking) and `tideq.AsyncConsumer` (asyncio) over one `tideq::Consumer`,
//! `tideq.ConsumerStats`, and the plumbing that runs a Python handler for each batch. The loop
//! itself (fetching, concurrency, shutdown) is the core's.
//!
//! Where handlers run:
//! - a plain function: on a tokio blocking thread (`spawn_blocking`), holding the GIL only for the
//!   call, never on a runtime worker (TOOLCHAIN pitfall 3);
//! - an `async def` with `AsyncCappedQueue`: on the event loop that called `consume`/`run`;
//! - an `async def` with the blocking `CappedQueue`: on a private event loop created for each
//!   batch in the blocking thread (so handlers of one consumer share no loop).
//!
//! A handler exception is logged on the `tideq` logger with its traceback and counted as failed;
//! the consumer goes on and the batch is not redelivered (at-most-once).

use std::sync::Arc;
use std::time::Instant;

use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use tideq::{Batch, BatchHandler, ConsumerOptions};

use crate::convert::{self, Items};
use crate::errors;
use crate::handler::{self, Loop, LoopTask};
use crate::running;
use crate::runtime;

/// Consumer options converted from keyword arguments.
pub struct Options(ConsumerOptions);

impl Options {
    pub fn new(
        concurrency: i64,
        batch_size: i64,
        groups: Option<Vec<String>>,
        exclude: Option<Vec<String>>,
        poll_interval: f64,
        grace: f64,
        stop_when_empty: bool,
    ) -> PyResult<Self> {
        Ok(Options(ConsumerOptions {
            concurrency: convert::count("concurrency", concurrency)?,
            batch_size: convert::count("batch_size", batch_size)?,
            groups: groups.unwrap_or_default(),
            exclude: exclude.unwrap_or_default(),
            poll_interval: convert::duration("poll_interval", poll_interval)?,
            grace: convert::duration("grace", grace)?,
            stop_when_empty,
        }))
    }
}

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
        let s = &self.0;
        format!(
            "ConsumerStats(batches={}, items={}, failed={}, fetch_errors={})",
            s.batches, s.items, s.failed, s.fetch_errors
        )
    }
}

struct PyHandler {
    func: Py<PyAny>,
    is_async: bool,
    event_loop: Loop,
}

fn batch_handler(py: Python<'_>, func: Py<PyAny>, event_loop: Loop) -> PyResult<BatchHandler> {
    let bound = func.bind(py);
    if !bound.is_callable() {
        return Err(PyTypeError::new_err(format!(
            "handler must be callable as handler(group, items), not {}",
            bound.get_type().name()?
        )));
    }
    let is_async = handler::is_coroutine_function(bound)?;
    let handler = Arc::new(PyHandler {
        func,
        is_async,
        event_loop,
    });
    Ok(Arc::new(move |batch: Batch| {
        let handler = handler.clone();
        Box::pin(async move { handler.handle(batch).await })
    }))
}

impl PyHandler {
    async fn handle(self: Arc<Self>, batch: Batch) -> Result<(), String> {
        let Batch { group, items } = batch;
        let n = items.len();
        if let (true, Loop::Caller(locals)) = (self.is_async, &self.event_loop) {
            // Calling an `async def` only creates the coroutine; its body runs on the caller's
            // loop. The call takes the GIL, so it is made on a blocking thread.
            let (this, locals, g) = (self.clone(), locals.clone(), group.clone());
            let task = tokio::task::spawn_blocking(move || {
                runtime::with_python(|py| {
                    let coro = this.func.bind(py).call1((g.as_str(), Items(items)))?;
                    LoopTask::start(py, &locals, coro)
                })
            })
            .await
            .map_err(|e| e.to_string())?
            .ok_or_else(handler::shutting_down)?;
            let res = match task {
                Ok(task) => task.await,
                Err(e) => Err(e),
            };
            let Err(err) = res else { return Ok(()) };
            // Logging handlers may block: keep them off the runtime's workers.
            let summary = tokio::task::spawn_blocking(move || {
                runtime::with_python(|py| {
                    log_failure(py, &err, &group, n);
                    err.to_string()
                })
            })
            .await;
            return Err(summary
                .ok()
                .flatten()
                .unwrap_or_else(handler::shutting_down));
        }
        let this = self.clone();
        match tokio::task::spawn_blocking(move || this.call_blocking(&group, items, n)).await {
            Ok(res) => res,
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(e) => Err(e.to_string()),
        }
    }

    /// Runs in a blocking thread: calls the handler, runs a returned awaitable, logs a failure.
    fn call_blocking(&self, group: &str, items: Vec<Vec<u8>>, n: usize) -> Result<(), String> {
        runtime::with_python(|py| {
            let res = self.call_in_thread(py, group, items);
            res.map_err(|err| {
                log_failure(py, &err, group, n);
                err.to_string()
            })
        })
        .ok_or_else(handler::shutting_down)?
    }

    fn call_in_thread(&self, py: Python<'_>, group: &str, items: Vec<Vec<u8>>) -> PyResult<()> {
        let out = self.func.bind(py).call1((group, Items(items)))?;
        handler::finish_in_thread(py, out, &self.event_loop)
    }
}

/// `logger.exception`-style record on the `tideq` logger, with the handler's traceback.
fn log_failure(py: Python<'_>, err: &PyErr, group: &str, n: usize) {
    let args = (n, group).into_pyobject(py);
    match args {
        Ok(args) => handler::log_exception(
            py,
            err,
            "handler failed on a batch of %d item(s) from group %r; the batch is not redelivered",
            args,
        ),
        Err(e) => e.write_unraisable(py, None),
    }
}

fn start(
    queue: &tideq::CappedQueue,
    opts: Options,
    handler: BatchHandler,
) -> PyResult<Arc<tideq::Consumer>> {
    let rt = runtime::get()?;
    let _in_runtime = rt.enter();
    let grace = opts.0.grace;
    let consumer = queue
        .consume_boxed(opts.0, handler)
        .map(Arc::new)
        .map_err(errors::to_py)?;
    runtime::track(consumer.clone(), grace);
    Ok(consumer)
}

fn repr(class: &str, c: &tideq::Consumer) -> String {
    let s = c.stats();
    format!(
        "{class}(running={}, batches={}, items={}, failed={}, fetch_errors={})",
        if c.is_running() { "True" } else { "False" },
        s.batches,
        s.items,
        s.failed,
        s.fetch_errors
    )
}

/// A running consumer (blocking API). Dropping it does not stop it: call `shutdown()`.
#[pyclass(module = "tideq", frozen)]
pub struct Consumer {
    inner: Arc<tideq::Consumer>,
}

impl Consumer {
    pub fn start(
        py: Python<'_>,
        queue: &tideq::CappedQueue,
        opts: Options,
        handler: Py<PyAny>,
    ) -> PyResult<Self> {
        let handler = batch_handler(py, handler, Loop::Private)?;
        Ok(Consumer {
            inner: start(queue, opts, handler)?,
        })
    }
}

#[pymethods]
impl Consumer {
    /// Stop taking batches; running handlers get the grace period.
    fn stop(&self) -> PyResult<()> {
        runtime::get()?;
        self.inner.stop();
        Ok(())
    }

    /// Wait until the consumer has stopped, or `timeout` seconds; returns the stats either way
    /// (check `running`).
    #[pyo3(signature = (timeout=None))]
    fn join(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<ConsumerStats> {
        let deadline = match timeout {
            Some(t) => Some(Instant::now() + convert::duration("timeout", t)?),
            None => None,
        };
        runtime::wait_until(py, self.inner.join(), deadline)?;
        Ok(ConsumerStats(self.inner.stats()))
    }

    /// `stop()` then `join()`.
    fn shutdown(&self, py: Python<'_>) -> PyResult<ConsumerStats> {
        self.stop()?;
        self.join(py, None)
    }

    fn stats(&self) -> ConsumerStats {
        ConsumerStats(self.inner.stats())
    }

    #[getter]
    fn running(&self) -> bool {
        self.inner.is_running()
    }

    fn __repr__(&self) -> String {
        repr("Consumer", &self.inner)
    }
}

/// `CappedQueue.run`: waits for the consumer; SIGINT/SIGTERM stop it gracefully (see
/// [`running::run_blocking`]) and its stats are returned.
pub fn run_blocking(py: Python<'_>, consumer: &Consumer) -> PyResult<ConsumerStats> {
    running::run_blocking(py, &*consumer.inner)?;
    Ok(ConsumerStats(consumer.inner.stats()))
}

/// A running consumer (asyncio API). Dropping it does not stop it: `await shutdown()`.
#[pyclass(module = "tideq", frozen)]
pub struct AsyncConsumer {
    inner: Arc<tideq::Consumer>,
}

impl AsyncConsumer {
    pub fn start(
        py: Python<'_>,
        queue: &tideq::CappedQueue,
        opts: Options,
        handler: Py<PyAny>,
    ) -> PyResult<Self> {
        let locals = pyo3_async_runtimes::tokio::get_current_locals(py).map_err(|_| {
            PyRuntimeError::new_err(
                "AsyncCappedQueue.consume()/run() need a running asyncio event loop (call them \
                 from async code); use CappedQueue for threads",
            )
        })?;
        let handler = batch_handler(py, handler, Loop::Caller(locals))?;
        Ok(AsyncConsumer {
            inner: start(queue, opts, handler)?,
        })
    }
}

#[pymethods]
impl AsyncConsumer {
    /// Stop taking batches; running handlers get the grace period.
    fn stop(&self) -> PyResult<()> {
        runtime::get()?;
        self.inner.stop();
        Ok(())
    }

    /// Awaitable: waits until the consumer has stopped, returns its stats.
    fn join<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let inner = self.inner.clone();
        runtime::awaitable(py, async move { Ok(ConsumerStats(inner.join().await)) })
    }

    /// Awaitable: `stop()` then `join()`.
    fn shutdown<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.stop()?;
        self.join(py)
    }

    fn stats(&self) -> ConsumerStats {
        ConsumerStats(self.inner.stats())
    }

    #[getter]
    fn running(&self) -> bool {
        self.inner.is_running()
    }

    fn __repr__(&self) -> String {
        repr("AsyncConsumer", &self.inner)
    }
}

/// `AsyncCappedQueue.run`: an awaitable that waits for the consumer and returns its stats;
/// SIGINT/SIGTERM or cancelling it stop the consumer gracefully (see [`running::run_async`]).
pub fn run_async(py: Python<'_>, consumer: AsyncConsumer) -> PyResult<Bound<'_, PyAny>> {
    let inner = consumer.inner.clone();
    let stop = Py::new(py, consumer)?.getattr(py, "stop")?;
    let stats_of = inner.clone();
    running::run_async(py, inner, stop, move || ConsumerStats(stats_of.stats()))
}
