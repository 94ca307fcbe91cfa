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

use pyo3::exceptions::{PyKeyboardInterrupt, PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3_async_runtimes::TaskLocals;
use tideq::{Batch, BatchHandler, ConsumerOptions};

use crate::convert::{self, Items};
use crate::errors;
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

/// Where the awaitable returned by a handler runs.
enum Loop {
    /// Blocking API: a fresh event loop per batch, in the handler's blocking thread.
    Private,
    /// Asyncio API: the event loop that started the consumer.
    Caller(TaskLocals),
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
    let is_async = py
        .import("inspect")?
        .call_method1("iscoroutinefunction", (bound,))?
        .is_truthy()?;
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
            // Calling an `async def` only creates the coroutine; its body runs on the caller's loop.
            let fut = runtime::with_python(|py| {
                let coro = self.func.bind(py).call1((group.as_str(), Items(items)))?;
                pyo3_async_runtimes::into_future_with_locals(locals, coro)
            })
            .ok_or_else(shutting_down)?;
            let res = match fut {
                Ok(fut) => fut.await.map(drop),
                Err(e) => Err(e),
            };
            let Err(err) = res else { return Ok(()) };
            let summary = err.to_string();
            // Logging handlers may block: keep them off the runtime's workers.
            let _ = tokio::task::spawn_blocking(move || {
                runtime::with_python(|py| log_failure(py, &err, &group, n));
            })
            .await;
            return Err(summary);
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
        .ok_or_else(shutting_down)?
    }

    fn call_in_thread(&self, py: Python<'_>, group: &str, items: Vec<Vec<u8>>) -> PyResult<()> {
        let out = self.func.bind(py).call1((group, Items(items)))?;
        if out.is_none()
            || !py
                .import("inspect")?
                .call_method1("isawaitable", (&out,))?
                .is_truthy()?
        {
            return Ok(());
        }
        match &self.event_loop {
            Loop::Private => {
                let asyncio = py.import("asyncio")?;
                let event_loop = asyncio.call_method0("new_event_loop")?;
                let res = event_loop.call_method1("run_until_complete", (out,));
                let _ = event_loop
                    .call_method0("shutdown_asyncgens")
                    .and_then(|g| event_loop.call_method1("run_until_complete", (g,)));
                event_loop.call_method0("close")?;
                res.map(drop)
            }
            Loop::Caller(locals) => {
                // A plain function that returned an awaitable: run it on the caller's loop.
                let fut = pyo3_async_runtimes::into_future_with_locals(locals, out)?;
                let rt = tokio::runtime::Handle::current();
                py.detach(|| rt.block_on(fut)).map(drop)
            }
        }
    }
}

fn shutting_down() -> String {
    "not run: the Python interpreter is exiting".to_string()
}

/// `logger.exception`-style record on the `tideq` logger, with the handler's traceback.
fn log_failure(py: Python<'_>, err: &PyErr, group: &str, n: usize) {
    let res = (|| -> PyResult<()> {
        let logger = py
            .import("logging")?
            .call_method1("getLogger", ("tideq",))?;
        let exc_info = (err.get_type(py), err.value(py), err.traceback(py));
        let kwargs = pyo3::types::PyDict::new(py);
        kwargs.set_item("exc_info", exc_info)?;
        logger.call_method(
            "error",
            (
                "handler failed on a batch of %d item(s) from group %r; the batch is not redelivered",
                n,
                group,
            ),
            Some(&kwargs),
        )?;
        Ok(())
    })();
    if let Err(e) = res {
        e.write_unraisable(py, None);
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
    runtime::track(&consumer, grace);
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

/// `CappedQueue.run`: waits for the consumer; SIGINT (and SIGTERM, while its handler is the
/// default) raise `KeyboardInterrupt`, which stops the consumer gracefully and returns its stats.
/// A second interrupt during the grace period propagates.
pub fn run_blocking(py: Python<'_>, consumer: &Consumer) -> PyResult<ConsumerStats> {
    let previous_term = sigterm_as_interrupt(py)?;
    let mut res = runtime::wait_until(py, consumer.inner.join(), None).map(drop);
    if let Err(e) = &res {
        consumer.inner.stop();
        if e.is_instance_of::<PyKeyboardInterrupt>(py) {
            res = runtime::wait_until(py, consumer.inner.join(), None).map(drop);
        }
    }
    if let Some(previous) = previous_term {
        let signal = py.import("signal")?;
        signal.call_method1("signal", (signal.getattr("SIGTERM")?, previous))?;
    }
    res.map(|_| ConsumerStats(consumer.inner.stats()))
}

fn on_main_thread(py: Python<'_>) -> PyResult<bool> {
    let threading = py.import("threading")?;
    Ok(threading
        .call_method0("current_thread")?
        .is(&threading.call_method0("main_thread")?))
}

/// Makes SIGTERM raise `KeyboardInterrupt` (main thread, default handler only); returns the
/// handler to put back.
fn sigterm_as_interrupt(py: Python<'_>) -> PyResult<Option<Bound<'_, PyAny>>> {
    if !on_main_thread(py)? {
        return Ok(None);
    }
    let signal = py.import("signal")?;
    let term = signal.getattr("SIGTERM")?;
    let previous = signal.call_method1("getsignal", (&term,))?;
    if !previous.eq(signal.getattr("SIG_DFL")?)? {
        return Ok(None);
    }
    signal.call_method1("signal", (&term, signal.getattr("default_int_handler")?))?;
    Ok(Some(previous))
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

/// `AsyncCappedQueue.run`: an awaitable that waits for the consumer. On the main thread, SIGINT
/// and SIGTERM (when their handlers are Python's defaults) stop it gracefully through the event
/// loop's signal handlers; cancelling the awaitable stops it too.
pub fn run_async(py: Python<'_>, consumer: AsyncConsumer) -> PyResult<Bound<'_, PyAny>> {
    let inner = consumer.inner.clone();
    let consumer = Py::new(py, consumer)?;
    let signals = LoopSignals::install(py, consumer.getattr(py, "stop")?)?;
    let guard = RunGuard {
        consumer: inner.clone(),
        signals,
    };
    runtime::awaitable(py, async move {
        let stats = inner.join().await;
        drop(guard);
        Ok(ConsumerStats(stats))
    })
}

/// Stops the consumer and puts the signal handlers back when `run` ends or is cancelled.
struct RunGuard {
    consumer: Arc<tideq::Consumer>,
    signals: Option<Py<LoopSignals>>,
}

impl Drop for RunGuard {
    fn drop(&mut self) {
        self.consumer.stop();
        if let Some(signals) = self.signals.take() {
            runtime::with_python(|py| {
                let loop_ = signals.get().event_loop.clone_ref(py);
                // Signal handlers can only change on the loop's (main) thread.
                let _ = loop_.call_method1(py, "call_soon_threadsafe", (signals,));
            });
        }
    }
}

/// Event-loop signal handlers installed by `AsyncCappedQueue.run`; calling it removes them.
#[pyclass(frozen)]
struct LoopSignals {
    event_loop: Py<PyAny>,
    installed: Vec<(Py<PyAny>, Py<PyAny>)>,
}

impl LoopSignals {
    fn install(py: Python<'_>, stop: Py<PyAny>) -> PyResult<Option<Py<LoopSignals>>> {
        if !on_main_thread(py)? {
            return Ok(None);
        }
        let signal = py.import("signal")?;
        let event_loop = pyo3_async_runtimes::get_running_loop(py)?;
        let mut installed = Vec::new();
        for name in ["SIGINT", "SIGTERM"] {
            let sig = signal.getattr(name)?;
            let previous = signal.call_method1("getsignal", (&sig,))?;
            if !is_default_handler(py, name, &previous)? {
                continue;
            }
            // Not available on every loop (e.g. Windows); then Python's defaults stay.
            if event_loop
                .call_method1("add_signal_handler", (&sig, &stop))
                .is_ok()
            {
                installed.push((sig.unbind(), previous.unbind()));
            }
        }
        if installed.is_empty() {
            return Ok(None);
        }
        Py::new(
            py,
            LoopSignals {
                event_loop: event_loop.unbind(),
                installed,
            },
        )
        .map(Some)
    }
}

/// SIG_DFL for SIGTERM; for SIGINT, Python's `default_int_handler` or asyncio.run's handler.
fn is_default_handler(py: Python<'_>, name: &str, handler: &Bound<'_, PyAny>) -> PyResult<bool> {
    let signal = py.import("signal")?;
    if name == "SIGTERM" {
        return handler.eq(signal.getattr("SIG_DFL")?);
    }
    if handler.eq(signal.getattr("default_int_handler")?)? {
        return Ok(true);
    }
    // asyncio.run (3.11+) installs `functools.partial(runner._on_sigint, ...)`.
    let method = handler.getattr("func").unwrap_or_else(|_| handler.clone());
    let owner = method.getattr("__self__").ok();
    let module = owner.and_then(|o| o.get_type().getattr("__module__").ok());
    Ok(module.is_some_and(|m| m.eq("asyncio.runners").unwrap_or(false)))
}

#[pymethods]
impl LoopSignals {
    fn __call__(&self, py: Python<'_>) -> PyResult<()> {
        let signal = py.import("signal")?;
        for (sig, previous) in &self.installed {
            self.event_loop
                .call_method1(py, "remove_signal_handler", (sig,))?;
            signal.call_method1("signal", (sig, previous))?;
        }
        Ok(())
    }
}
