//! The binding's one tokio runtime: pyo3-async-runtimes' runtime, built by the core's
//! `tideq::runtime_builder` (one worker thread unless TOKIO_WORKER_THREADS says otherwise), used
//! by the asyncio API and (through [`block_on`]) by the blocking API, so a connection is never
//! used from two runtimes (a connection made on one tokio runtime breaks on another).
//!
//! A forked child cannot use it: its worker threads stayed in the parent, so any call would hang. The PID is recorded when the runtime is created and every call checks it first,
//! raising `ForkedError` instead of hanging.
//!
//! Runtime threads enter Python only through [`with_python`], which an `atexit` hook closes
//! before the interpreter finalizes.
//!
//! [`Api`] is what a method written once does in each API: wait for the core call
//! ([`block_on`]) or return a coroutine for it ([`awaitable`]). [`api_classes!`] declares the
//! two public classes over one hidden base class, [`show_defaults`] the core's defaults in their
//! signature.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use pyo3::prelude::*;
use pyo3::types::PyDict;
use pyo3::IntoPyObjectExt;
use tideq::{Error, ErrorKind};
use tokio::runtime::Runtime;
use tokio::sync::oneshot;

use crate::error;

/// How often a blocking call wakes up to let Python handle signals (Ctrl-C).
const SIGNAL_CHECK: Duration = Duration::from_millis(100);

static OWNER_PID: OnceLock<u32> = OnceLock::new();

/// The runtime, created on first use; `ForkedError` in a process forked after that.
pub fn get() -> PyResult<&'static Runtime> {
    let owner = *OWNER_PID.get_or_init(|| {
        // The core's configuration (one worker thread unless TOKIO_WORKER_THREADS says
        // otherwise); set before anything creates the runtime.
        pyo3_async_runtimes::tokio::init(tideq::runtime_builder());
        pyo3_async_runtimes::tokio::get_runtime();
        std::process::id()
    });
    if owner != std::process::id() {
        return Err(error::to_py(forked(owner)));
    }
    Ok(pyo3_async_runtimes::tokio::get_runtime())
}

fn forked(owner: u32) -> Error {
    Error::new(
        ErrorKind::Forked,
        format!(
            "tideq was started in process {owner} and this process ({}) is a fork of it; its \
             threads and connections do not survive fork(). Create tideq objects after forking and \
             use them only in the child (do not use tideq in the parent before it forks), or use the \
             'spawn' or 'forkserver' multiprocessing start method.",
            std::process::id()
        ),
    )
}

/// Which API a handle belongs to: blocking (`Queue`) or asyncio (`AsyncQueue`). Their methods
/// are written once, on a hidden base class holding the mode, and end in [`Api::call`].
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Api {
    Blocking,
    Async,
}

impl Api {
    /// Runs a core call the mode's way: blocking, waits for it (see [`block_on`]) and returns
    /// its converted result; asyncio, returns a coroutine that runs it (see [`awaitable`]).
    pub fn call<'py, F, T>(self, py: Python<'py>, fut: F) -> PyResult<Bound<'py, PyAny>>
    where
        F: Future<Output = tideq::Result<T>> + Send + 'static,
        T: for<'a> IntoPyObject<'a> + Send + 'static,
    {
        match self {
            Api::Blocking => block_on(py, fut)?.into_bound_py_any(py),
            Api::Async => awaitable(py, fut),
        }
    }
}

/// Declares the public blocking and asyncio classes of a hidden base class (`subclass`,
/// `frozen`) from the base's `open(py, api, args...)`: `#[pyclass(extends = Base)]` unit
/// structs whose constructors take `open`'s arguments (with its `signature`, and attributes
/// such as `#[pyo3(from_py_with = ...)]` on the arguments) and open the base in their mode.
/// Written as plain items, so rustfmt formats the invocation.
macro_rules! api_classes {
    (
        $(#[$blocking_doc:meta])* pub struct $blocking:ident;
        $(#[$async_doc:meta])* pub struct $asyncio:ident;
        impl $base:ident {
            #[pyo3(signature = $signature:tt)]
            fn open($py:ident: Python<'_>, $api:ident: Api, $($(#[$attr:meta])* $arg:ident: $ty:ty),* $(,)?) -> PyResult<Self>
            $body:block
        }
    ) => {
        impl $base {
            #[allow(clippy::too_many_arguments)]
            fn open($py: Python<'_>, $api: Api, $($arg: $ty),*) -> PyResult<Self> $body
        }
        $crate::runtime::api_classes!(@class $base, Blocking, $(#[$blocking_doc])* $blocking, $signature, $($(#[$attr])* $arg: $ty),*);
        $crate::runtime::api_classes!(@class $base, Async, $(#[$async_doc])* $asyncio, $signature, $($(#[$attr])* $arg: $ty),*);
    };
    (@class $base:ident, $api:ident, $(#[$doc:meta])* $class:ident, $signature:tt, $($(#[$attr:meta])* $arg:ident: $ty:ty),*) => {
        $(#[$doc])*
        #[pyclass(module = "tideq", extends = $base, frozen)]
        pub struct $class;

        #[pymethods]
        impl $class {
            #[new]
            #[pyo3(signature = $signature)]
            #[allow(clippy::too_many_arguments)]
            fn new(py: Python<'_>, $($(#[$attr])* $arg: $ty),*) -> PyResult<PyClassInitializer<Self>> {
                let base = $base::open(py, $crate::runtime::Api::$api, $($arg),*)?;
                Ok(PyClassInitializer::from(base).add_subclass($class))
            }
        }
    };
}
pub(crate) use api_classes;

/// Shows the core's defaults in the signature of `cls`, an [`api_classes!`] class whose
/// constructor takes [`Opt`](crate::convert::Opt) arguments: the signature pyo3 wrote, with each
/// `...` default (an `Opt::Unset`) replaced by the core's default for that argument from
/// `defaults`, so `inspect.signature(cls)` and `help(cls)` show `keep_for=86400.0` rather than
/// `keep_for=Ellipsis`. It is set as the `__signature__` of
/// `base`, the hidden base class the blocking and asyncio classes share (where both find it).
/// A `...` without a default in `defaults`, or a default for no `...` argument, is a
/// `RuntimeError` (at import).
pub fn show_defaults(
    cls: &Bound<'_, PyAny>,
    base: &Bound<'_, PyAny>,
    defaults: &[(&str, Bound<'_, PyAny>)],
) -> PyResult<()> {
    let py = cls.py();
    let signature = py.import("inspect")?.call_method1("signature", (cls,))?;
    let mut params = Vec::new();
    let mut replaced = 0;
    for param in signature
        .getattr("parameters")?
        .call_method0("values")?
        .try_iter()?
    {
        let param = param?;
        if !param.getattr("default")?.is(py.Ellipsis()) {
            params.push(param);
            continue;
        }
        let name: String = param.getattr("name")?.extract()?;
        let (_, default) = defaults.iter().find(|(n, _)| *n == name).ok_or_else(|| {
            pyo3::exceptions::PyRuntimeError::new_err(format!("no core default for {name}"))
        })?;
        let kwargs = PyDict::new(py);
        kwargs.set_item("default", default)?;
        params.push(param.call_method("replace", (), Some(&kwargs))?);
        replaced += 1;
    }
    if replaced != defaults.len() {
        return Err(pyo3::exceptions::PyRuntimeError::new_err(
            "a core default for an argument that is not Opt::Unset",
        ));
    }
    let kwargs = PyDict::new(py);
    kwargs.set_item("parameters", params)?;
    base.setattr(
        "__signature__",
        signature.call_method("replace", (), Some(&kwargs))?,
    )
}

/// Runs `fut` on the runtime with the GIL released, for the blocking API. Wakes every 100 ms to
/// run Python signal handlers, so Ctrl-C interrupts a call waiting on an unreachable Redis.
pub fn block_on<F, T>(py: Python<'_>, fut: F) -> PyResult<T>
where
    F: Future<Output = tideq::Result<T>> + Send,
    T: Send,
{
    match wait_until(py, fut, None)? {
        Some(res) => res.map_err(error::to_py),
        None => unreachable!("a wait without deadline only ends with the future"),
    }
}

/// Waits for `fut` until `deadline` (forever when `None`), with the GIL released and signals
/// checked as in [`block_on`]. Returns `None` when the deadline passed first.
pub fn wait_until<F>(
    py: Python<'_>,
    fut: F,
    deadline: Option<Instant>,
) -> PyResult<Option<F::Output>>
where
    F: Future + Send,
    F::Output: Send,
{
    let rt = get()?;
    let mut fut = std::pin::pin!(fut);
    loop {
        let slice = match deadline {
            Some(d) => d
                .saturating_duration_since(Instant::now())
                .min(SIGNAL_CHECK),
            None => SIGNAL_CHECK,
        };
        // The timer must be created inside the runtime, hence the async block.
        let step =
            py.detach(|| rt.block_on(async { tokio::time::timeout(slice, fut.as_mut()).await }));
        if let Ok(out) = step {
            return Ok(Some(out));
        }
        py.check_signals()?;
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Ok(None);
        }
    }
}

/// An asyncio-API call's future with its output type erased: the output is converted to a
/// Python object (with the GIL) when it is delivered.
type Convert = Box<dyn FnOnce(Python<'_>) -> PyResult<Py<PyAny>> + Send>;
type Deferred = Pin<Box<dyn Future<Output = tideq::Result<Convert>> + Send>>;

/// `async def _await(start): return await start()`: what makes an asyncio-API method return a
/// coroutine, as an `async def` would.
static AWAIT: pyo3::sync::PyOnceLock<Py<PyAny>> = pyo3::sync::PyOnceLock::new();

/// Wraps `fut` in a coroutine (asyncio API). Like any `async def`, nothing runs until it is
/// awaited or wrapped in a task, so it works with `asyncio.run(q.stats())` and
/// `asyncio.create_task(...)`; then `fut` runs on the runtime and the coroutine awaits an asyncio
/// future of the running loop (see [`start_awaitable`]).
pub fn awaitable<'py, F, T>(py: Python<'py>, fut: F) -> PyResult<Bound<'py, PyAny>>
where
    F: Future<Output = tideq::Result<T>> + Send + 'static,
    T: for<'a> IntoPyObject<'a> + Send + 'static,
{
    get()?;
    let deferred: Deferred = Box::pin(async move {
        fut.await
            .map(|v| Box::new(move |py: Python<'_>| v.into_py_any(py)) as Convert)
    });
    let wrap = AWAIT.get_or_try_init(py, || -> PyResult<Py<PyAny>> {
        let module = PyModule::from_code(
            py,
            c"async def _await(start):\n    return await start()\n",
            c"<tideq>",
            c"tideq._await",
        )?;
        Ok(module.getattr("_await")?.unbind())
    })?;
    wrap.bind(py).call1((Start(Mutex::new(Some(deferred))),))
}

/// Called by the coroutine once it runs: starts the call.
#[pyclass(frozen)]
struct Start(Mutex<Option<Deferred>>);

#[pymethods]
impl Start {
    fn __call__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let fut = self.0.lock().unwrap_or_else(|e| e.into_inner()).take();
        match fut {
            Some(fut) => start_awaitable(py, fut),
            None => Err(pyo3::exceptions::PyRuntimeError::new_err(
                "tideq: this call was already started",
            )),
        }
    }
}

/// Spawns `fut` and returns an asyncio future of the running loop for it. The result is
/// converted and handed to the loop from a blocking thread through [`with_python`], so no runtime
/// thread is inside Python once the interpreter starts finalizing. Cancelling the future drops
/// `fut`.
fn start_awaitable<'py>(py: Python<'py>, fut: Deferred) -> PyResult<Bound<'py, PyAny>> {
    let rt = get()?;
    let event_loop = pyo3_async_runtimes::get_running_loop(py)?;
    let py_fut = event_loop.call_method0("create_future")?;
    let (cancel_tx, cancel_rx) = oneshot::channel::<()>();
    py_fut.call_method1(
        "add_done_callback",
        (CancelOnDone(Mutex::new(Some(cancel_tx))),),
    )?;
    let event_loop = event_loop.unbind();
    let target = py_fut.clone().unbind();
    rt.spawn(async move {
        let cancelled = async move {
            if cancel_rx.await.is_err() {
                std::future::pending::<()>().await;
            }
        };
        let res = tokio::select! {
            res = fut => res,
            () = cancelled => return,
        };
        deliver(Box::new(move |py| {
            let outcome = res.map_err(error::to_py).and_then(|convert| convert(py));
            (
                event_loop,
                target,
                outcome.map_err(|e| e.into_value(py).into_any()),
            )
        }));
    });
    Ok(py_fut)
}

/// Done-callback of a [`start_awaitable`] future: tells the Rust side when Python cancelled it.
#[pyclass(frozen)]
struct CancelOnDone(Mutex<Option<oneshot::Sender<()>>>);

#[pymethods]
impl CancelOnDone {
    fn __call__(&self, fut: &Bound<'_, PyAny>) -> PyResult<()> {
        let tx = self.0.lock().unwrap_or_else(|e| e.into_inner()).take();
        if fut.call_method0("cancelled")?.is_truthy()? {
            if let Some(tx) = tx {
                let _ = tx.send(());
            }
        }
        Ok(())
    }
}

type Outcome = Result<Py<PyAny>, Py<PyAny>>;
/// asyncio futures of one loop with what to set on them.
type Resolutions = Vec<(Py<PyAny>, Outcome)>;
/// Converts a finished future's output (with the GIL): (event loop, asyncio future, outcome).
type Delivery = Box<dyn FnOnce(Python<'_>) -> (Py<PyAny>, Py<PyAny>, Outcome) + Send>;

static PENDING: Mutex<Vec<Delivery>> = Mutex::new(Vec::new());
static DRAINING: AtomicBool = AtomicBool::new(false);

/// Queues a result for its event loop. One blocking thread drains the queue, so a burst of
/// results (e.g. `asyncio.gather` of many pushes) costs one GIL entry and one
/// `call_soon_threadsafe` per loop instead of one per result.
fn deliver(delivery: Delivery) {
    PENDING
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(delivery);
    if !DRAINING.swap(true, Ordering::SeqCst) {
        tokio::task::spawn_blocking(drain);
    }
}

fn drain() {
    loop {
        let batch = std::mem::take(&mut *PENDING.lock().unwrap_or_else(|e| e.into_inner()));
        if batch.is_empty() {
            DRAINING.store(false, Ordering::SeqCst);
            // A result queued between the take and the store would otherwise wait for the next.
            if PENDING.lock().unwrap_or_else(|e| e.into_inner()).is_empty()
                || DRAINING.swap(true, Ordering::SeqCst)
            {
                return;
            }
            continue;
        }
        with_python(|py| {
            let mut by_loop: Vec<(Py<PyAny>, Resolutions)> = Vec::new();
            for delivery in batch {
                let (event_loop, fut, outcome) = delivery(py);
                match by_loop.iter_mut().find(|(l, _)| l.is(&event_loop)) {
                    Some((_, list)) => list.push((fut, outcome)),
                    None => by_loop.push((event_loop, vec![(fut, outcome)])),
                }
            }
            for (event_loop, list) in by_loop {
                let resolve = ResolveAll(Mutex::new(list));
                // Fails only when the loop is closed: nobody is waiting any more.
                let _ = event_loop.call_method1(py, "call_soon_threadsafe", (resolve,));
            }
        });
    }
}

/// Runs on the event loop: sets each [`awaitable`]'s result or exception unless it was cancelled.
#[pyclass(frozen)]
struct ResolveAll(Mutex<Resolutions>);

#[pymethods]
impl ResolveAll {
    fn __call__(&self, py: Python<'_>) {
        let list = std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()));
        for (fut, outcome) in list {
            let fut = fut.bind(py);
            if fut
                .call_method0("done")
                .and_then(|d| d.is_truthy())
                .unwrap_or(true)
            {
                continue;
            }
            let res = match outcome {
                Ok(value) => fut.call_method1("set_result", (value,)),
                Err(exc) => fut.call_method1("set_exception", (exc,)),
            };
            if let Err(e) = res {
                e.write_unraisable(py, Some(fut));
            }
        }
    }
}

static EXITING: AtomicBool = AtomicBool::new(false);
static ATTACHED: AtomicUsize = AtomicUsize::new(0);
/// Consumers and workers started in this process: kept alive while they run (the core stops one
/// when its handle is dropped, and a Python program may drop its handle), and stopped at
/// interpreter exit.
static RUNNING: Mutex<Vec<(Arc<dyn Running>, Duration)>> = Mutex::new(Vec::new());

/// A core consumer or worker, as the binding stops, waits for and reports it.
pub trait Running: Send + Sync + 'static {
    /// Stop taking work; running handlers get the grace period.
    fn stop(&self);
    /// Stop at once: running handlers are abandoned.
    fn abort(&self);
    fn is_running(&self) -> bool;
    /// Resolves once the loop has ended and its handlers finished (or were abandoned).
    fn wait(&self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>>;
    /// The error it stopped on by itself (credentials or permissions Redis refused), if any.
    fn error(&self) -> Option<Error>;
    /// Its `ConsumerStats` or `WorkerStats`.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>>;
    /// Its counters as `name=value, ...`, for `repr`.
    fn counters(&self) -> String;
}

/// Runs `f` with the GIL from a runtime or blocking thread, unless the interpreter is exiting
/// (then `None`). [`at_exit`] waits for the calls in progress, so none is still inside Python
/// when finalization starts (which aborts the process with "PyGILState_Release: thread state
/// must be current").
pub fn with_python<R>(f: impl for<'py> FnOnce(Python<'py>) -> R) -> Option<R> {
    ATTACHED.fetch_add(1, Ordering::SeqCst);
    let out = if EXITING.load(Ordering::SeqCst) {
        None
    } else {
        keep_thread_state();
        Python::try_attach(f)
    };
    ATTACHED.fetch_sub(1, Ordering::SeqCst);
    out
}

/// A runtime thread's Python thread state, made on its first [`with_python`] and kept (detached,
/// without the GIL) until the thread ends. Without it every call made a thread state and freed it
/// again, and Python 3.11+ gives each thread state a frame stack it maps and unmaps: an `munmap`
/// per job, each a TLB shootdown interrupting every core (a third of a sync-handler worker's CPU
/// went to that and the thread-state churn).
struct KeptThreadState {
    gil: pyo3::ffi::PyGILState_STATE,
    saved: *mut pyo3::ffi::PyThreadState,
}

impl Drop for KeptThreadState {
    fn drop(&mut self) {
        ATTACHED.fetch_add(1, Ordering::SeqCst);
        // Once the interpreter is exiting it frees every thread state itself: leave this one.
        if !EXITING.load(Ordering::SeqCst) {
            unsafe {
                pyo3::ffi::PyEval_RestoreThread(self.saved);
                pyo3::ffi::PyGILState_Release(self.gil);
            }
        }
        ATTACHED.fetch_sub(1, Ordering::SeqCst);
    }
}

thread_local! {
    static KEPT: std::cell::RefCell<Option<KeptThreadState>> =
        const { std::cell::RefCell::new(None) };
}

/// Gives this thread a thread state that outlives each call (see [`KeptThreadState`]). Only for
/// threads Python does not know: a Python thread (or one already attached) keeps its own.
fn keep_thread_state() {
    KEPT.with(|kept| {
        let mut kept = kept.borrow_mut();
        if kept.is_some() {
            return;
        }
        unsafe {
            if pyo3::ffi::Py_IsInitialized() == 0
                || !pyo3::ffi::PyGILState_GetThisThreadState().is_null()
            {
                return;
            }
            let gil = pyo3::ffi::PyGILState_Ensure();
            let saved = pyo3::ffi::PyEval_SaveThread();
            *kept = Some(KeptThreadState { gil, saved });
        }
    });
}

/// Keeps a consumer or worker alive until it stops (so dropping its Python handle does not stop
/// it), and lets [`at_exit`] stop it.
pub fn track(running: Arc<dyn Running>, grace: Duration) {
    let mut list = RUNNING.lock().unwrap_or_else(|e| e.into_inner());
    list.retain(|(c, _)| c.is_running());
    list.push((running, grace));
}

/// Registered with `atexit`: stops the consumers and workers still running and waits for their
/// handlers (each within its grace period), then closes [`with_python`] and waits for the calls
/// in progress. Handler calls after that are refused (and counted as failed).
#[pyfunction]
pub fn at_exit(py: Python<'_>) {
    let running: Vec<(Arc<dyn Running>, Duration)> =
        std::mem::take(&mut *RUNNING.lock().unwrap_or_else(|e| e.into_inner()))
            .into_iter()
            .filter(|(c, _)| c.is_running())
            .collect();
    if OWNER_PID.get() != Some(&std::process::id()) {
        // No runtime here (never started, or it belongs to the parent of this fork): no thread of
        // ours can be inside Python, and the counters are the parent's.
        EXITING.store(true, Ordering::SeqCst);
        return;
    }
    if !running.is_empty() {
        let rt = pyo3_async_runtimes::tokio::get_runtime();
        let longest = running.iter().map(|(_, g)| *g).max().unwrap_or_default();
        py.detach(|| {
            rt.block_on(async {
                for (c, _) in &running {
                    c.stop();
                }
                let all = async {
                    for (c, _) in &running {
                        c.wait().await;
                    }
                };
                let _ = tokio::time::timeout(longest + Duration::from_secs(2), all).await;
            })
        });
    }
    EXITING.store(true, Ordering::SeqCst);
    let deadline = Instant::now() + Duration::from_secs(5);
    py.detach(|| {
        while ATTACHED.load(Ordering::SeqCst) > 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
    });
}
