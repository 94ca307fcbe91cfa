//! `run()` for consumers and workers: wait until stopped, turning SIGINT/SIGTERM into a graceful
//! stop in each API's idiom (a `KeyboardInterrupt` in the blocking API, event-loop signal
//! handlers in the asyncio API).

use std::sync::Arc;

use pyo3::exceptions::PyKeyboardInterrupt;
use pyo3::prelude::*;
use pyo3::IntoPyObject;

use crate::runtime::{self, Stoppable};

/// Blocking `run`: waits until `running` stops; SIGINT (and SIGTERM, while its handler is the
/// default) raise `KeyboardInterrupt`, which stops it gracefully; `run` then returns normally.
/// A second interrupt during the grace period propagates.
pub fn run_blocking(py: Python<'_>, running: &dyn Stoppable) -> PyResult<()> {
    let previous_term = sigterm_as_interrupt(py)?;
    let mut res = runtime::wait_until(py, running.wait(), None).map(drop);
    if let Err(e) = &res {
        running.stop();
        if e.is_instance_of::<PyKeyboardInterrupt>(py) {
            res = runtime::wait_until(py, running.wait(), None).map(drop);
        }
    }
    if let Some(previous) = previous_term {
        let signal = py.import("signal")?;
        signal.call_method1("signal", (signal.getattr("SIGTERM")?, previous))?;
    }
    res
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

/// Asyncio `run`: an awaitable that waits until `running` stops and resolves to `finish()`. On
/// the main thread, SIGINT and SIGTERM (when their handlers are Python's defaults) call `stop`
/// (a Python callable) through the event loop's signal handlers; cancelling the awaitable stops
/// it too.
pub fn run_async<'py, T, F>(
    py: Python<'py>,
    running: Arc<dyn Stoppable>,
    stop: Py<PyAny>,
    finish: F,
) -> PyResult<Bound<'py, PyAny>>
where
    F: FnOnce() -> T + Send + 'static,
    T: for<'a> IntoPyObject<'a> + Send + 'static,
{
    let signals = LoopSignals::install(py, stop)?;
    let guard = RunGuard {
        running: running.clone(),
        signals,
    };
    runtime::awaitable(py, async move {
        running.wait().await;
        drop(guard);
        Ok(finish())
    })
}

/// Stops the consumer or worker and puts the signal handlers back when `run` ends or is
/// cancelled.
struct RunGuard {
    running: Arc<dyn Stoppable>,
    signals: Option<Py<LoopSignals>>,
}

impl Drop for RunGuard {
    fn drop(&mut self) {
        self.running.stop();
        if let Some(signals) = self.signals.take() {
            runtime::with_python(|py| {
                let loop_ = signals.get().event_loop.clone_ref(py);
                // Signal handlers can only change on the loop's (main) thread.
                let _ = loop_.call_method1(py, "call_soon_threadsafe", (signals,));
            });
        }
    }
}

/// Event-loop signal handlers installed by an asyncio `run`; calling it removes them.
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
