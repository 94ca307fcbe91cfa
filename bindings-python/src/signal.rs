//! A running consumer or worker as Python sees it: [`RunningBase`] (`_Running`), the hidden
//! base class of `Consumer`, `AsyncConsumer`, `Worker` and `AsyncWorker` (`stop`, `abort`,
//! `join`, `shutdown`, `stats`, `running`), and [`run`], which waits until it stops and turns
//! SIGINT/SIGTERM into a stop in each API's idiom (Python signal handlers in the blocking API,
//! event-loop signal handlers in the asyncio API): the first signal stops gracefully and says so
//! on stderr (one line, as the Node binding's), a second one stops at once.

use std::io::Write;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use pyo3::exceptions::PyKeyboardInterrupt;
use pyo3::prelude::*;

use crate::convert::{self, Secs};
use crate::error;
use crate::handler::{self, Calls, Handler, Loop, Work};
use crate::runtime::{self, Api, Running};

/// Starts a consumer or worker: `start` makes the core loop, turning Python callables into core
/// handlers with the function it is given (all counted in one count of running calls). The loop
/// is kept running until stopped (see [`runtime::track`]), and `queue` (the [`Started`] of the
/// queue handle it was started from) keeps it too; returns the base of its handle and the loop
/// itself (for what only a subclass offers). `what` names what runs, singular and plural
/// (`("job", "jobs")`), for `run()`'s line.
pub fn start<W: Work, R: Running>(
    py: Python<'_>,
    api: Api,
    queue: &Started,
    no_loop: &str,
    grace: Duration,
    what: (&'static str, &'static str),
    start: impl FnOnce(&dyn Fn(Py<PyAny>) -> PyResult<Handler<W>>) -> PyResult<R>,
) -> PyResult<(PyClassInitializer<RunningBase>, Arc<R>)> {
    let event_loop = Loop::of(py, api, no_loop)?;
    let rt = runtime::get()?;
    let calls = Calls::default();
    let wrap = |func: Py<PyAny>| handler::wrap(py, func, event_loop.clone(), calls.clone());
    let _in_runtime = rt.enter();
    let running = Arc::new(start(&wrap)?);
    runtime::track(running.clone(), grace);
    queue.add(running.clone());
    let base = RunningBase {
        running: running.clone(),
        api,
        calls,
        grace,
        what,
    };
    Ok((base.into(), running))
}

/// What the handles of both APIs share; `join` is each subclass's (with a timeout, or
/// awaitable). Dropping a handle does not stop its consumer or worker.
#[pyclass(module = "tideq", name = "_Running", subclass, frozen)]
pub struct RunningBase {
    running: Arc<dyn Running>,
    api: Api,
    /// The handler calls running now.
    calls: Calls,
    grace: Duration,
    what: (&'static str, &'static str),
}

impl RunningBase {
    /// Blocking: waits until stopped or for `timeout` seconds and returns the stats either way,
    /// unless it stopped on an error (raised). Asyncio: an awaitable of the stats once stopped
    /// (or of that error).
    pub fn join<'py>(&self, py: Python<'py>, timeout: Option<Secs>) -> PyResult<Bound<'py, PyAny>> {
        let running = self.running.clone();
        match self.api {
            Api::Blocking => {
                let deadline = convert::deadline("timeout", timeout)?;
                if runtime::wait_until(py, running.wait(), deadline)?.is_some() {
                    raise_failure(&*running)?;
                }
                running.stats(py)
            }
            Api::Async => runtime::awaitable(py, async move {
                running.wait().await;
                outcome(running)
            }),
        }
    }
}

impl RunningBase {
    /// Leaving a `with` / `async with` block: `shutdown()` (running handlers get the grace
    /// period), its stats dropped so an exception raised in the block goes on. Blocking: returns
    /// None once stopped; asyncio: an awaitable of None. The error the loop stopped on by itself,
    /// if any, is raised.
    pub fn exit<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.stop()?;
        let running = self.running.clone();
        match self.api {
            Api::Blocking => {
                self.join(py, None)?;
                Ok(py.None().into_bound(py))
            }
            Api::Async => runtime::awaitable(py, async move {
                running.wait().await;
                match running.error() {
                    Some(e) => Err(e),
                    None => Ok(()),
                }
            }),
        }
    }
}

/// The consumers or workers started from one queue handle (`work`, `consume`, ...), so that
/// leaving the queue's `with` block can shut them down ([`Started::exit`]). Held weakly: while
/// one runs, [`runtime::track`] keeps it, and a handler holding its queue makes no cycle.
#[derive(Default)]
pub struct Started(Mutex<Vec<Weak<dyn Running>>>);

impl Started {
    fn add(&self, running: Arc<dyn Running>) {
        let mut list = self.0.lock().unwrap_or_else(|e| e.into_inner());
        list.retain(|r| r.upgrade().is_some_and(|r| r.is_running()));
        list.push(Arc::downgrade(&running));
    }

    /// Leaving a queue's `with` / `async with` block: stops those still running (handlers get
    /// their grace period, as `shutdown()` gives them) and waits until they have. Blocking:
    /// returns None then; asyncio: an awaitable of None. The error one stopped on by itself
    /// stays with its handle (`join()`, `error`).
    pub fn exit<'py>(&self, py: Python<'py>, api: Api) -> PyResult<Bound<'py, PyAny>> {
        runtime::get()?;
        let running: Vec<Arc<dyn Running>> =
            std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()))
                .into_iter()
                .filter_map(|r| r.upgrade())
                .filter(|r| r.is_running())
                .collect();
        for r in &running {
            r.stop();
        }
        let stopped = async move {
            for r in &running {
                r.wait().await;
            }
            Ok::<(), tideq::Error>(())
        };
        match api {
            Api::Blocking => {
                runtime::block_on(py, stopped)?;
                Ok(py.None().into_bound(py))
            }
            Api::Async => runtime::awaitable(py, stopped),
        }
    }
}

/// `with` (blocking) and `async with` (asyncio) on a handle whose base has `exit(py)` (the
/// blocking result, or an awaitable): entering gives the handle, leaving calls `exit`. On a
/// consumer's or worker's handle (already running), leaving shuts it down
/// ([`RunningBase::exit`]); on a queue, it shuts down what was started from it
/// ([`Started::exit`]), with the docs given.
macro_rules! context_manager {
    (blocking $class:ty, $exit_doc:literal) => {
        #[pyo3::pymethods]
        impl $class {
            fn __enter__(slf: pyo3::Bound<'_, Self>) -> pyo3::Bound<'_, Self> {
                slf
            }

            #[doc = $exit_doc]
            fn __exit__(
                slf: &pyo3::Bound<'_, Self>,
                exc_type: &pyo3::Bound<'_, pyo3::PyAny>,
                exc_value: &pyo3::Bound<'_, pyo3::PyAny>,
                traceback: &pyo3::Bound<'_, pyo3::PyAny>,
            ) -> pyo3::PyResult<()> {
                let _ = (exc_type, exc_value, traceback);
                slf.as_super().get().exit(slf.py()).map(|_| ())
            }
        }
    };
    (asyncio $class:ty, $enter_doc:literal, $exit_doc:literal) => {
        #[pyo3::pymethods]
        impl $class {
            #[doc = $enter_doc]
            fn __aenter__<'py>(
                slf: &pyo3::Bound<'py, Self>,
            ) -> pyo3::PyResult<pyo3::Bound<'py, pyo3::PyAny>> {
                let me = slf.clone().unbind();
                $crate::runtime::awaitable(slf.py(), async move { Ok(me) })
            }

            #[doc = $exit_doc]
            fn __aexit__<'py>(
                slf: &pyo3::Bound<'py, Self>,
                exc_type: &pyo3::Bound<'py, pyo3::PyAny>,
                exc_value: &pyo3::Bound<'py, pyo3::PyAny>,
                traceback: &pyo3::Bound<'py, pyo3::PyAny>,
            ) -> pyo3::PyResult<pyo3::Bound<'py, pyo3::PyAny>> {
                let _ = (exc_type, exc_value, traceback);
                slf.as_super().get().exit(slf.py())
            }
        }
    };
    (blocking $class:ty) => {
        $crate::signal::context_manager!(
            blocking $class,
            "``shutdown()``: running handlers get the grace period; an exception raised in the \
             block goes on."
        );
    };
    (asyncio $class:ty) => {
        $crate::signal::context_manager!(
            asyncio $class,
            "Returns the handle itself (it is already running).",
            "``await shutdown()``: running handlers get the grace period; an exception raised \
             in the block goes on."
        );
    };
}
pub(crate) use context_manager;

/// The error a stopped consumer or worker stopped on, raised.
fn raise_failure(running: &dyn Running) -> PyResult<()> {
    match running.error() {
        Some(e) => Err(error::to_py(e)),
        None => Ok(()),
    }
}

/// What waiting for a stopped consumer or worker gives: its stats, or the error it stopped on.
fn outcome(running: Arc<dyn Running>) -> tideq::Result<Stats> {
    match running.error() {
        Some(e) => Err(e),
        None => Ok(Stats(running)),
    }
}

#[pymethods]
impl RunningBase {
    /// Stop taking work; running handlers get the grace period.
    ///
    /// A worker fetches no new jobs. Past the grace period, its handlers are asked to stop
    /// (``job.cancelled``; ``async def`` handlers are cancelled): a job whose handler then raises
    /// is returned to the queue (its attempt not counted), one whose handler returns is
    /// completed. Until its handler returns, a job keeps its slot and its lease. A consumer takes
    /// no new batches; its handlers still running after the grace period are abandoned.
    fn stop(&self) -> PyResult<()> {
        runtime::get()?;
        self.running.stop();
        Ok(())
    }

    /// Stop at once, without waiting for running handlers: their jobs are left to their leases
    /// (run again once a lease expires; a consumer's batches are gone). What a second Ctrl-C in
    /// ``run()`` does.
    fn abort(&self) -> PyResult<()> {
        runtime::get()?;
        self.running.abort();
        Ok(())
    }

    /// ``stop()`` then ``join()``.
    fn shutdown<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.stop()?;
        self.join(py, None)
    }

    /// Counters so far.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.running.stats(py)
    }

    /// True until the loop ended and running handlers finished (or were abandoned).
    #[getter]
    fn running(&self) -> bool {
        self.running.is_running()
    }

    /// The error it stopped on by itself (as ``join()`` raises it), or None.
    #[getter]
    fn error(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.running
            .error()
            .map(|e| error::to_py(e).into_value(py).into_any())
    }

    fn __repr__(slf: &Bound<'_, Self>) -> PyResult<String> {
        let running = &slf.get().running;
        Ok(format!(
            "{}(running={}, {})",
            slf.get_type().name()?,
            if running.is_running() {
                "True"
            } else {
                "False"
            },
            running.counters()
        ))
    }
}

/// The stats of a consumer or worker, made when an asyncio call delivers them.
struct Stats(Arc<dyn Running>);

impl<'py> IntoPyObject<'py> for Stats {
    type Target = PyAny;
    type Output = Bound<'py, PyAny>;
    type Error = PyErr;

    fn into_pyobject(self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.0.stats(py)
    }
}

/// `run()` once `handle` (a `_Running`) started: blocking, waits until it stops and returns its
/// stats; asyncio, an awaitable of them. The first SIGINT/SIGTERM stops it gracefully (one line
/// on stderr), the second at once ([`OnSignal`]); cancelling the awaitable stops it gracefully.
pub fn run<'py>(handle: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let py = handle.py();
    let base = handle.cast::<RunningBase>()?.get();
    let running = base.running.clone();
    let on_signal = Py::new(
        py,
        OnSignal {
            running: running.clone(),
            calls: base.calls.clone(),
            grace: base.grace,
            what: base.what,
            received: AtomicU32::new(0),
        },
    )?;
    match base.api {
        Api::Blocking => {
            run_blocking(py, &*running, on_signal)?;
            raise_failure(&*running)?;
            running.stats(py)
        }
        Api::Async => run_async(py, running, on_signal),
    }
}

/// What SIGINT and SIGTERM do during `run()`: the first stops gracefully and prints one line on
/// stderr saying so, the next stops at once (running handlers are abandoned, their jobs left to
/// their leases). Called with the signal's number (a Python signal handler, or an event-loop
/// signal handler given it as argument).
#[pyclass(frozen)]
struct OnSignal {
    running: Arc<dyn Running>,
    calls: Calls,
    grace: Duration,
    what: (&'static str, &'static str),
    received: AtomicU32,
}

impl OnSignal {
    fn received(&self, signal: &str) {
        if self.received.fetch_add(1, Ordering::SeqCst) == 0 {
            let n = self.calls.count();
            let (one, many) = self.what;
            notice(&format!(
                "tideq: {signal} received: shutting down gracefully, waiting up to {} s for {n} \
                 running {}; press Ctrl-C again (or send {signal} again) to stop at once",
                seconds(self.grace),
                if n == 1 { one } else { many },
            ));
            self.running.stop();
        } else {
            notice(&format!("tideq: {signal} received again: stopping at once"));
            self.running.abort();
        }
    }
}

#[pymethods]
impl OnSignal {
    #[pyo3(signature = (signum, _frame=None))]
    fn __call__(&self, py: Python<'_>, signum: i32, _frame: Option<Bound<'_, PyAny>>) {
        let name = py
            .import("signal")
            .and_then(|s| s.getattr("Signals")?.call1((signum,))?.getattr("name"))
            .and_then(|n| n.extract::<String>())
            .unwrap_or_else(|_| format!("signal {signum}"));
        self.received(&name);
    }
}

/// Seconds as the line shows them: `10`, `0.5`.
fn seconds(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0}")
    } else {
        format!("{s}")
    }
}

/// One line on stderr (the process's, not `sys.stderr`, as the Node binding writes it).
fn notice(line: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// Blocking `run`: waits until `running` stops, with `on_signal` as the handler of SIGINT and
/// SIGTERM while their handlers are Python's defaults (main thread only). A `KeyboardInterrupt`
/// from elsewhere (another SIGINT handler that raises it) counts as a signal; any other
/// exception stops the worker gracefully and propagates.
fn run_blocking(py: Python<'_>, running: &dyn Running, on_signal: Py<OnSignal>) -> PyResult<()> {
    let previous = install_handlers(py, &on_signal)?;
    let res = loop {
        match runtime::wait_until(py, running.wait(), None) {
            Ok(_) => break Ok(()),
            Err(e) if e.is_instance_of::<PyKeyboardInterrupt>(py) => {
                on_signal.get().received("SIGINT");
            }
            Err(e) => {
                running.stop();
                break Err(e);
            }
        }
    };
    let signal = py.import("signal")?;
    for (sig, handler) in previous {
        signal.call_method1("signal", (sig, handler))?;
    }
    res
}

fn on_main_thread(py: Python<'_>) -> PyResult<bool> {
    let threading = py.import("threading")?;
    Ok(threading
        .call_method0("current_thread")?
        .is(&threading.call_method0("main_thread")?))
}

/// Makes `on_signal` the handler of SIGINT and SIGTERM where theirs are Python's defaults (main
/// thread only); returns the handlers to put back.
fn install_handlers<'py>(
    py: Python<'py>,
    on_signal: &Py<OnSignal>,
) -> PyResult<Vec<(Bound<'py, PyAny>, Bound<'py, PyAny>)>> {
    let mut previous = Vec::new();
    if !on_main_thread(py)? {
        return Ok(previous);
    }
    let signal = py.import("signal")?;
    for name in ["SIGINT", "SIGTERM"] {
        let sig = signal.getattr(name)?;
        let handler = signal.call_method1("getsignal", (&sig,))?;
        if is_default_handler(py, name, &handler)? {
            signal.call_method1("signal", (&sig, on_signal))?;
            previous.push((sig, handler));
        }
    }
    Ok(previous)
}

/// Asyncio `run`: an awaitable that waits until `running` stops and resolves to its stats. On
/// the main thread, SIGINT and SIGTERM (when their handlers are Python's defaults) call
/// `on_signal` through the event loop's signal handlers; cancelling the awaitable stops it
/// gracefully.
fn run_async<'py>(
    py: Python<'py>,
    running: Arc<dyn Running>,
    on_signal: Py<OnSignal>,
) -> PyResult<Bound<'py, PyAny>> {
    let signals = LoopSignals::install(py, on_signal.into_any())?;
    let guard = RunGuard {
        running: running.clone(),
        signals,
    };
    runtime::awaitable(py, async move {
        running.wait().await;
        drop(guard);
        outcome(running)
    })
}

/// Stops the consumer or worker and puts the signal handlers back when `run` ends or is
/// cancelled.
struct RunGuard {
    running: Arc<dyn Running>,
    signals: Option<Py<LoopSignals>>,
}

impl Drop for RunGuard {
    fn drop(&mut self) {
        self.running.stop();
        if let Some(signals) = self.signals.take() {
            runtime::with_python(|py| {
                let loop_ = signals.get().event_loop(py);
                // Signal handlers can only change on the loop's (main) thread.
                let _ = loop_.call_method1(py, "call_soon_threadsafe", (signals,));
            });
        }
    }
}

/// Event-loop signal handlers installed by an asyncio `run` (or `serve_async`); calling it
/// removes them.
#[pyclass(frozen)]
pub(crate) struct LoopSignals {
    event_loop: Py<PyAny>,
    installed: Vec<(Py<PyAny>, Py<PyAny>)>,
}

impl LoopSignals {
    /// Makes `on_signal` (called with the signal's number) the event loop's handler of SIGINT
    /// and SIGTERM where theirs are Python's defaults (main thread only).
    pub(crate) fn install(
        py: Python<'_>,
        on_signal: Py<PyAny>,
    ) -> PyResult<Option<Py<LoopSignals>>> {
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
                .call_method1("add_signal_handler", (&sig, &on_signal, &sig))
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

impl LoopSignals {
    /// The loop they are installed on.
    pub(crate) fn event_loop(&self, py: Python<'_>) -> Py<PyAny> {
        self.event_loop.clone_ref(py)
    }
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
