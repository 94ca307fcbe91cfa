//! Calling Python handlers, for consumers (a batch) and workers (a job) alike: [`wrap`] makes
//! a core handler of a Python callable. Where it runs:
//! - a plain function: on a tokio blocking thread, holding the GIL only for the call;
//! - an `async def` in the asyncio API: as a task on the event loop that started the consumer
//!   or worker;
//! - an `async def` (or a returned awaitable) in the blocking API: on a private event loop per
//!   call, in the blocking thread.
//!
//! Stopping a handler: a job's cancellation (its timeout passed, or the shutdown grace period is
//! over) cancels the asyncio task of an awaitable (`task.cancel()`), and the core handler's
//! future still completes only once the task has really finished, so a job keeps its slot and
//! lease while any of its code runs. A plain function cannot be stopped from outside: it reads
//! `job.cancelled`. A consumer drops a batch's future after its grace period: an asyncio task is
//! then cancelled, and a plain function's thread runs on.
//!
//! A handler exception is logged on the `tideq` logger with its traceback, and its text goes to
//! the core (a failed batch is not redelivered; a failed job is retried or dead-lettered). The
//! `CancelledError` of a task cancelled for a job's cancellation is not logged: the core reports
//! the timeout (or returns the job to the queue at shutdown).
//!
//! Rules kept here (a handler run under the GIL inside a tokio task panics when it uses a blocking
//! API): handler calls and coroutine creation never take the
//! GIL on a runtime worker thread (where a CPU-bound handler would stall the tasks that renew
//! leases); nothing holds the GIL while waiting on Redis or on another thread.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use pyo3::exceptions::asyncio::CancelledError;
use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyTuple};
use pyo3_async_runtimes::TaskLocals;
use tideq::CancellationToken;
use tokio::sync::oneshot;

use crate::loop_task::LoopTask;
use crate::runtime::{self, Api};

/// What a handler is called with: a batch (consumers) or a job (workers).
pub trait Work: Send + 'static {
    /// How the handler is called, for the error about one that is not callable.
    const CALL: &'static str;
    /// What reporting a failure needs once the work was handed to the handler.
    type Note: Send + 'static;
    /// Calls `func` with this work (with the GIL).
    fn call<'py>(self, func: &Bound<'py, PyAny>) -> (PyResult<Bound<'py, PyAny>>, Self::Note);
    /// The signal asking the handler to stop, if this work has one (a job does).
    fn cancellation(&self) -> Option<CancellationToken> {
        None
    }
    /// Logs the handler's exception and returns the failure text for the core.
    fn failed(py: Python<'_>, note: &Self::Note, err: &PyErr) -> String;
    /// How a failure reaches the core: the error text for a job or a consumer's batch, a
    /// `tideq::BatchError` for a worker's batch.
    type Error: Send + 'static;
    /// A failure as the core takes it (all of the work failed with `text`).
    fn error(text: String) -> Self::Error;
    /// The handler's exception as the core takes it: logged, and its text (a job handler's
    /// `Snooze`, `BackOff` and `DontRetry` become the core's, see `verdict.rs`).
    fn raised(py: Python<'_>, note: &Self::Note, err: &PyErr) -> Self::Error {
        Self::error(Self::failed(py, note, err))
    }
    /// What a handler's success gives the core: nothing (`()`) but for a job handler (its
    /// result, `None` when it returned None).
    type Output: Default + Send + 'static;
    /// What the handler's return value (other than None) means, read with the GIL: nothing for
    /// a consumer; a job's result for a job handler; a mapping of failed job ids for a worker's
    /// batch handler.
    fn returned(
        _py: Python<'_>,
        _note: &Self::Note,
        _value: &Bound<'_, PyAny>,
    ) -> Result<Self::Output, Self::Error> {
        Ok(Self::Output::default())
    }
}

/// A core handler: the type of `tideq::BatchHandler`, `tideq::JobHandler` and
/// `tideq::JobBatchHandler`.
pub type Handler<W> = Arc<
    dyn Fn(
            W,
        )
            -> Pin<Box<dyn Future<Output = Result<<W as Work>::Output, <W as Work>::Error>> + Send>>
        + Send
        + Sync
        + 'static,
>;

/// How many handler calls are running now (for the line `run()` prints on a signal).
#[derive(Clone, Default)]
pub struct Calls(Arc<AtomicUsize>);

impl Calls {
    pub fn count(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }

    fn enter(&self) -> CallGuard {
        self.0.fetch_add(1, Ordering::Relaxed);
        CallGuard(self.0.clone())
    }
}

/// One running handler call (see [`Calls`]).
struct CallGuard(Arc<AtomicUsize>);

impl Drop for CallGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Where the awaitable returned by a handler runs.
#[derive(Clone)]
pub enum Loop {
    /// Blocking API: a fresh event loop per call, in the handler's blocking thread.
    Private,
    /// Asyncio API: the event loop that started the consumer or worker.
    Caller(TaskLocals),
}

impl Loop {
    /// The loop of `api`: for the asyncio API the running one (`RuntimeError(no_loop)` if none).
    pub fn of(py: Python<'_>, api: Api, no_loop: &str) -> PyResult<Loop> {
        match api {
            Api::Blocking => Ok(Loop::Private),
            Api::Async => pyo3_async_runtimes::tokio::get_current_locals(py)
                .map(Loop::Caller)
                .map_err(|_| PyRuntimeError::new_err(no_loop.to_string())),
        }
    }
}

/// `func` as a core handler (`TypeError` if it is not callable); `calls` counts its running
/// calls.
pub fn wrap<W: Work>(
    py: Python<'_>,
    func: Py<PyAny>,
    event_loop: Loop,
    calls: Calls,
) -> PyResult<Handler<W>> {
    let bound = func.bind(py);
    if !bound.is_callable() {
        return Err(PyTypeError::new_err(format!(
            "handler must be callable as {}, not {}",
            W::CALL,
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
    Ok(Arc::new(move |work: W| {
        let call = calls.enter();
        let handled = handler.clone().handle(work);
        Box::pin(async move {
            let out = handled.await;
            drop(call);
            out
        })
    }))
}

struct PyHandler {
    func: Py<PyAny>,
    is_async: bool,
    event_loop: Loop,
}

impl PyHandler {
    async fn handle<W: Work>(self: Arc<Self>, work: W) -> Result<W::Output, W::Error> {
        let cancel = work.cancellation();
        if let (true, Loop::Caller(locals)) = (self.is_async, &self.event_loop) {
            // Calling an `async def` only creates the coroutine (with the GIL, so on a blocking
            // thread); its body runs as a task on the caller's loop.
            let (this, locals) = (self.clone(), locals.clone());
            let (task, note) = tokio::task::spawn_blocking(move || {
                runtime::with_python(|py| {
                    let (coro, note) = work.call(this.func.bind(py));
                    (coro.and_then(|c| LoopTask::start(py, &locals, c)), note)
                })
            })
            .await
            .map_err(|e| W::error(e.to_string()))?
            .ok_or_else(|| W::error(shutting_down()))?;
            // A job's cancellation cancels the task, which is then awaited until it finished.
            let outcome = match task {
                Ok(task) => task.finish(cancel.clone()).await,
                Err(e) => Err(e),
            };
            if let Ok(None) = outcome {
                return Ok(W::Output::default());
            }
            // Logging handlers may block, as may reading a return value: keep them off the
            // runtime's workers.
            let done = tokio::task::spawn_blocking(move || {
                runtime::with_python(|py| match outcome {
                    Ok(value) => value.map_or(Ok(W::Output::default()), |v| {
                        W::returned(py, &note, v.bind(py))
                    }),
                    Err(err) => Err(failure::<W>(py, &note, &err, cancel.as_ref())),
                })
            })
            .await;
            return done
                .ok()
                .flatten()
                .unwrap_or_else(|| Err(W::error(shutting_down())));
        }
        let this = self.clone();
        match tokio::task::spawn_blocking(move || this.call_blocking(work, cancel)).await {
            Ok(res) => res,
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(e) => Err(W::error(e.to_string())),
        }
    }

    /// Runs in a blocking thread: calls the handler, runs a returned awaitable, reads what it
    /// returned, logs a failure.
    fn call_blocking<W: Work>(
        &self,
        work: W,
        cancel: Option<CancellationToken>,
    ) -> Result<W::Output, W::Error> {
        runtime::with_python(|py| {
            let (out, note) = work.call(self.func.bind(py));
            match out.and_then(|out| finish_in_thread(py, out, &self.event_loop, cancel.as_ref())) {
                Ok(None) => Ok(W::Output::default()),
                Ok(Some(value)) => W::returned(py, &note, &value),
                Err(err) => Err(failure::<W>(py, &note, &err, cancel.as_ref())),
            }
        })
        .unwrap_or_else(|| Err(W::error(shutting_down())))
    }
}

/// The failure for the core, through [`Work::raised`]; but the `CancelledError` of a task
/// cancelled because `cancel` fired is only named (the core reports the timeout, or returns the
/// job to the queue at shutdown).
fn failure<W: Work>(
    py: Python<'_>,
    note: &W::Note,
    err: &PyErr,
    cancel: Option<&CancellationToken>,
) -> W::Error {
    if cancel.is_some_and(|c| c.is_cancelled()) && err.is_instance_of::<CancelledError>(py) {
        return W::error("CancelledError: the job was cancelled".to_string());
    }
    W::raised(py, note, err)
}

/// Runs in a blocking thread, with the GIL: waits for `out` (a handler's return value) if it is
/// awaitable, on a private loop or on the caller's loop (the GIL released while waiting there).
/// When `cancel` fires, the awaitable's task is cancelled, and still waited for. Returns the
/// final value unless it is None.
fn finish_in_thread<'py>(
    py: Python<'py>,
    out: Bound<'py, PyAny>,
    event_loop: &Loop,
    cancel: Option<&CancellationToken>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    if out.is_none() {
        return Ok(None);
    }
    if !py
        .import("inspect")?
        .call_method1("isawaitable", (&out,))?
        .is_truthy()?
    {
        return Ok(Some(out));
    }
    match event_loop {
        Loop::Private => {
            let asyncio = py.import("asyncio")?;
            let event_loop = asyncio.call_method0("new_event_loop")?;
            let res = run_private(&asyncio, &event_loop, out, cancel);
            let _ = event_loop
                .call_method0("shutdown_asyncgens")
                .and_then(|g| event_loop.call_method1("run_until_complete", (g,)));
            event_loop.call_method0("close")?;
            res
        }
        Loop::Caller(locals) => {
            // A plain function that returned an awaitable: run it on the caller's loop.
            let task = LoopTask::start(py, locals, out)?;
            let rt = tokio::runtime::Handle::current();
            let value = py.detach(|| rt.block_on(task.finish(cancel.cloned())))?;
            Ok(value.map(|v| v.into_bound(py)))
        }
    }
}

/// Runs `out` as a task of `event_loop` (a private loop, in this thread) until it finished,
/// cancelling the task when `cancel` fires.
fn run_private<'py>(
    asyncio: &Bound<'py, PyModule>,
    event_loop: &Bound<'py, PyAny>,
    out: Bound<'py, PyAny>,
    cancel: Option<&CancellationToken>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let kwargs = PyDict::new(asyncio.py());
    kwargs.set_item("loop", event_loop)?;
    let task = asyncio.call_method("ensure_future", (out,), Some(&kwargs))?;
    // Dropped when the task finished: stops watching.
    let _watch = cancel.map(|c| cancel_on(c.clone(), event_loop, &task));
    let value = event_loop.call_method1("run_until_complete", (&task,))?;
    Ok((!value.is_none()).then_some(value))
}

/// Cancels `task` (through `event_loop`, from another thread) once `cancel` fires, until the
/// returned sender is dropped.
fn cancel_on(
    cancel: CancellationToken,
    event_loop: &Bound<'_, PyAny>,
    task: &Bound<'_, PyAny>,
) -> oneshot::Sender<()> {
    let (done_tx, done_rx) = oneshot::channel::<()>();
    let (event_loop, task) = (event_loop.clone().unbind(), task.clone().unbind());
    pyo3_async_runtimes::tokio::get_runtime().spawn(async move {
        tokio::select! {
            _ = done_rx => {}
            () = cancel.cancelled() => {
                // The GIL is taken on a blocking thread, never on a runtime worker.
                tokio::task::spawn_blocking(move || {
                    runtime::with_python(|py| cancel_task(py, &event_loop, &task))
                });
            }
        }
    });
    done_tx
}

/// `event_loop.call_soon_threadsafe(task.cancel)`; nothing when the loop is already closed
/// (then the task has finished).
fn cancel_task(py: Python<'_>, event_loop: &Py<PyAny>, task: &Py<PyAny>) {
    if let Ok(cancel) = task.getattr(py, "cancel") {
        let _ = event_loop.call_method1(py, "call_soon_threadsafe", (cancel,));
    }
}

/// The message a consumer or worker is refused with once the interpreter is exiting.
fn shutting_down() -> String {
    "not run: the Python interpreter is exiting".to_string()
}

/// `"ExcType: message"` (just `"ExcType"` when the message is empty), as stored with a failed
/// job. `ExcType` is the class's `__name__`.
pub fn error_text(py: Python<'_>, err: &PyErr) -> String {
    let value = err.value(py);
    let name = value
        .get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "Exception".into());
    match value.str() {
        Ok(s) if s.to_string_lossy().is_empty() => name,
        Ok(s) => format!("{name}: {}", s.to_string_lossy()),
        Err(_) => format!("{name}: <str() failed>"),
    }
}

/// The exception's traceback as `traceback.format_exception` writes it, joined; "" when it cannot
/// be formatted.
pub fn traceback(py: Python<'_>, err: &PyErr) -> String {
    let formatted = (|| -> PyResult<String> {
        let lines = py.import("traceback")?.call_method1(
            "format_exception",
            (err.get_type(py), err.value(py), err.traceback(py)),
        )?;
        PyString::new(py, "")
            .call_method1("join", (lines,))?
            .extract::<String>()
    })();
    formatted.unwrap_or_default()
}

/// `logger.error(msg, *args, exc_info=err)` on the `tideq` logger: the message plus the
/// handler's traceback. A logging failure is reported as unraisable, never raised.
pub fn log_exception<'py, A>(py: Python<'py>, err: &PyErr, msg: &str, args: A)
where
    A: IntoPyObject<'py, Target = PyTuple, Output = Bound<'py, PyTuple>>,
{
    let res = (|| -> PyResult<()> {
        let args = args.into_pyobject(py).map_err(Into::into)?;
        let logger = py
            .import("logging")?
            .call_method1("getLogger", ("tideq",))?;
        let exc_info = (err.get_type(py), err.value(py), err.traceback(py));
        let kwargs = PyDict::new(py);
        kwargs.set_item("exc_info", exc_info)?;
        let call: Vec<Bound<'_, PyAny>> = std::iter::once(PyString::new(py, msg).into_any())
            .chain(args.iter())
            .collect();
        let call = PyTuple::new(py, call)?;
        logger.call_method("error", call, Some(&kwargs))?;
        Ok(())
    })();
    if let Err(e) = res {
        e.write_unraisable(py, None);
    }
}
