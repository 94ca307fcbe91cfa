//! `tideq.serve` and `tideq.serve_async` (core `serve`): a worker process's `main` over workers
//! already started (`Queue.work*`, `AsyncQueue.work*`). The loop, the signals, the health
//! endpoint, the job limit and the status lines a supervisor reads are the core's; this file
//! converts the arguments and waits in each API's way.
//!
//! Signals: the core listens to SIGINT and SIGTERM itself (the first stops every worker
//! gracefully, a second aborts them). Python sees SIGINT too (the core's handler chains to
//! Python's): blocking, a `KeyboardInterrupt` while waiting does the same here ([`OnServeSignal`]);
//! asyncio, the event loop's handlers of SIGINT and SIGTERM do, so `asyncio.run`'s Ctrl-C handling
//! does not cancel the task first. Stopping twice is harmless.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use pyo3::exceptions::{PyKeyboardInterrupt, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::convert::{self, Int, Text};
use crate::error;
use crate::runtime;
use crate::signal::LoopSignals;
use crate::worker::{self, WorkerStats};

/// The core workers behind `workers` (`Worker`s or `AsyncWorker`s) and the serve options.
fn arguments(
    workers: &Bound<'_, PyTuple>,
    health: Option<Text>,
    max_jobs: Option<Int>,
) -> PyResult<(Vec<Arc<tideq::Worker>>, tideq::ServeOptions)> {
    let ws = workers
        .iter()
        .map(|w| {
            worker::core_worker(&w).ok_or_else(|| {
                PyTypeError::new_err(format!(
                    "serve takes the workers started by work(), work_tasks() or work_batches(), \
                     not {}",
                    w.get_type()
                        .name()
                        .map(|n| n.to_string())
                        .unwrap_or_default()
                ))
            })
        })
        .collect::<PyResult<Vec<_>>>()?;
    let mut opts = tideq::ServeOptions::default();
    if let Some(addr) = health {
        opts.health = Some(addr.0.parse::<SocketAddr>().map_err(|_| {
            error::invalid(format!(
                "health must be an address such as 127.0.0.1:8080, got {:?}",
                addr.0
            ))
        })?);
    }
    if let Some(n) = max_jobs {
        opts.max_jobs = Some(convert::count("max_jobs", n)? as u64);
    }
    Ok((ws, opts))
}

/// Run ``workers`` until the process is asked to stop; returns their stats, in order.
///
/// The ``main`` of a worker process, over workers already started (one per queue, each with its
/// own options: ``work``, ``work_tasks``, ``work_batches``). SIGINT (Ctrl-C) or SIGTERM stops
/// every worker gracefully (running jobs get their ``grace``); a second one stops them at once
/// (their jobs go back to the queue by their leases). It also returns once every worker stopped
/// by itself (its ``max_jobs`` reached, ``stop_when_drained``, or an error, raised here), or
/// once the workers leased ``max_jobs`` jobs together (then all stop gracefully).
/// ``health="127.0.0.1:8080"`` serves ``GET /livez`` (200 while serving) and ``GET /readyz``
/// (200 while every worker is connected and leasing, else 503) for liveness and readiness
/// probes. Under ``tideq worker`` it also reports to the supervisor. Blocks with the GIL
/// released; ``serve_async`` is its asyncio form.
#[pyfunction]
#[pyo3(signature = (*workers, health=None, max_jobs=None))]
pub fn serve<'py>(
    py: Python<'py>,
    workers: &Bound<'py, PyTuple>,
    health: Option<Text>,
    max_jobs: Option<Int>,
) -> PyResult<Bound<'py, PyAny>> {
    let (ws, opts) = arguments(workers, health, max_jobs)?;
    let on_signal = OnServeSignal::new(ws.clone());
    let mut fut = Box::pin(tideq::serve(ws, opts));
    let res = loop {
        match runtime::wait_until(py, fut.as_mut(), None) {
            Ok(Some(res)) => break res,
            Ok(None) => unreachable!("a wait without deadline only ends with the future"),
            Err(e) if e.is_instance_of::<PyKeyboardInterrupt>(py) => on_signal.received(),
            Err(e) => {
                on_signal.stop_all();
                return Err(e);
            }
        }
    };
    stats_list(py, res.map_err(error::to_py)?)
}

/// ``serve`` for asyncio: an awaitable of the workers' stats.
///
/// As ``serve``, on the running event loop: SIGINT and SIGTERM (when their handlers are
/// Python's defaults, or ``asyncio.run``'s) stop the workers gracefully, a second one at once;
/// cancelling the awaitable stops them gracefully too.
#[pyfunction]
#[pyo3(signature = (*workers, health=None, max_jobs=None))]
pub fn serve_async<'py>(
    py: Python<'py>,
    workers: &Bound<'py, PyTuple>,
    health: Option<Text>,
    max_jobs: Option<Int>,
) -> PyResult<Bound<'py, PyAny>> {
    let (ws, opts) = arguments(workers, health, max_jobs)?;
    let on_signal = Py::new(py, OnServeSignal::new(ws.clone()))?;
    let signals = LoopSignals::install(py, on_signal.clone_ref(py).into_any())?;
    let guard = Guard {
        on_signal,
        signals,
        done: false,
    };
    runtime::awaitable(py, async move {
        let mut guard = guard;
        let res = tideq::serve(ws, opts).await;
        guard.done = true;
        drop(guard);
        res.map(|stats| stats.into_iter().map(WorkerStats::from).collect::<Vec<_>>())
    })
}

fn stats_list<'py>(py: Python<'py>, stats: Vec<tideq::WorkerStats>) -> PyResult<Bound<'py, PyAny>> {
    let list: Vec<WorkerStats> = stats.into_iter().map(WorkerStats::from).collect();
    Ok(list.into_pyobject(py)?.into_any())
}

/// Puts the event loop's signal handlers back when `serve_async` ends, and stops the workers
/// when it was cancelled before.
struct Guard {
    on_signal: Py<OnServeSignal>,
    signals: Option<Py<LoopSignals>>,
    done: bool,
}

impl Drop for Guard {
    fn drop(&mut self) {
        if !self.done {
            self.on_signal.get().stop_all();
        }
        if let Some(signals) = self.signals.take() {
            runtime::with_python(|py| {
                let loop_ = signals.get().event_loop(py);
                // Signal handlers can only change on the loop's (main) thread.
                let _ = loop_.call_method1(py, "call_soon_threadsafe", (signals,));
            });
        }
    }
}

/// What SIGINT/SIGTERM seen by Python do while serving: the first stops every worker
/// gracefully, the next ones stop them at once (as the core does on the signals it sees).
#[pyclass(frozen)]
pub struct OnServeSignal {
    workers: Vec<Arc<tideq::Worker>>,
    received: AtomicU32,
}

impl OnServeSignal {
    fn new(workers: Vec<Arc<tideq::Worker>>) -> Self {
        OnServeSignal {
            workers,
            received: AtomicU32::new(0),
        }
    }

    fn received(&self) {
        if self.received.fetch_add(1, Ordering::SeqCst) == 0 {
            self.stop_all();
        } else {
            self.workers.iter().for_each(|w| w.abort());
        }
    }

    fn stop_all(&self) {
        self.workers.iter().for_each(|w| w.stop());
    }
}

#[pymethods]
impl OnServeSignal {
    #[pyo3(signature = (*_args))]
    fn __call__(&self, _args: &Bound<'_, PyTuple>) {
        self.received();
    }
}
