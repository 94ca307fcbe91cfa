//! An `async def` handler's coroutine as an asyncio task on the caller's event loop, awaited
//! from Rust and cancellable from any thread ([`LoopTask`]); [`crate::handler`] uses it for the
//! asyncio API's coroutine handlers and for awaitables run on a private loop.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use pyo3::exceptions::asyncio::CancelledError;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use pyo3_async_runtimes::TaskLocals;
use tideq::CancellationToken;
use tokio::sync::oneshot;

use crate::runtime;

/// A coroutine running as an asyncio task on the caller's loop, awaited from Rust. Unlike
/// `pyo3_async_runtimes::into_future_with_locals`, it can cancel the task: [`finish`] does when
/// the job's cancellation fires, and goes on waiting until the task has finished; dropping it
/// before the task finished (a consumer giving up on a batch after the grace period) cancels the
/// task too, so it does not keep running on the user's loop.
///
/// [`finish`]: Self::finish
pub struct LoopTask {
    rx: oneshot::Receiver<TaskOutcome>,
    shared: Arc<Mutex<TaskSlot>>,
    /// Taken by the first [`cancel`](Self::cancel).
    event_loop: Option<Py<PyAny>>,
    finished: bool,
}

/// How a [`LoopTask`] ended: its value (None when it returned None), or its exception.
pub type TaskOutcome = PyResult<Option<Py<PyAny>>>;

#[derive(Default)]
struct TaskSlot {
    task: Option<Py<PyAny>>,
    cancelled: bool,
}

impl LoopTask {
    /// Schedules `awaitable` on the loop of `locals` (in its context); needs the GIL.
    pub fn start(
        py: Python<'_>,
        locals: &TaskLocals,
        awaitable: Bound<'_, PyAny>,
    ) -> PyResult<Self> {
        let (tx, rx) = oneshot::channel();
        let shared = Arc::new(Mutex::new(TaskSlot::default()));
        let starter = StartTask {
            awaitable: Mutex::new(Some(awaitable.unbind())),
            tx: Mutex::new(Some(tx)),
            shared: shared.clone(),
        };
        let event_loop = locals.event_loop(py);
        let kwargs = PyDict::new(py);
        kwargs.set_item("context", locals.context(py))?;
        event_loop.call_method("call_soon_threadsafe", (starter,), Some(&kwargs))?;
        Ok(LoopTask {
            rx,
            shared,
            event_loop: Some(event_loop.unbind()),
            finished: false,
        })
    }

    /// Waits until the task finished; when `cancel` fires first, cancels the task and goes on
    /// waiting (a coroutine may catch the `CancelledError` and run on a while).
    pub async fn finish(mut self, cancel: Option<CancellationToken>) -> TaskOutcome {
        if let Some(cancel) = cancel {
            tokio::select! {
                res = &mut self => return res,
                () = cancel.cancelled() => self.cancel(),
            }
        }
        (&mut self).await
    }

    /// Cancels the task (from any thread, without the GIL); a no-op once it finished or was
    /// cancelled. The task's outcome still arrives (as a `CancelledError` unless it caught it).
    fn cancel(&mut self) {
        if self.finished {
            return;
        }
        let (Some(event_loop), shared) = (self.event_loop.take(), self.shared.clone()) else {
            return;
        };
        // The GIL is taken on a blocking thread, never on a runtime worker.
        pyo3_async_runtimes::tokio::get_runtime().spawn_blocking(move || {
            runtime::with_python(|py| {
                // The lock is never held while calling Python (which may release the GIL).
                let task = {
                    let mut slot = shared.lock().unwrap_or_else(|e| e.into_inner());
                    slot.cancelled = true;
                    slot.task.take()
                };
                if let Some(cancel) = task.and_then(|t| t.getattr(py, "cancel").ok()) {
                    // Fails only when the loop is closed: then nothing runs any more.
                    let _ = event_loop.call_method1(py, "call_soon_threadsafe", (cancel,));
                }
            });
        });
    }
}

impl Future for LoopTask {
    type Output = TaskOutcome;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let out = match Pin::new(&mut self.rx).poll(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(Ok(res)) => res,
            Poll::Ready(Err(_)) => Err(PyRuntimeError::new_err(
                "the event loop running the handler closed before the handler finished",
            )),
        };
        self.finished = true;
        Poll::Ready(out)
    }
}

impl Drop for LoopTask {
    fn drop(&mut self) {
        self.cancel();
    }
}

/// Runs on the event loop: wraps the awaitable in a task (unless already cancelled).
#[pyclass(frozen)]
struct StartTask {
    awaitable: Mutex<Option<Py<PyAny>>>,
    tx: Mutex<Option<oneshot::Sender<TaskOutcome>>>,
    shared: Arc<Mutex<TaskSlot>>,
}

#[pymethods]
impl StartTask {
    fn __call__(&self, py: Python<'_>) {
        let awaitable = self
            .awaitable
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        let tx = self.tx.lock().unwrap_or_else(|e| e.into_inner()).take();
        let (Some(awaitable), Some(tx)) = (awaitable, tx) else {
            return;
        };
        let awaitable = awaitable.bind(py);
        let cancelled = || {
            self.shared
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .cancelled
        };
        if cancelled() {
            // Cancelled before it started: close a coroutine so it is not reported as never
            // awaited, and report the cancellation.
            if awaitable.hasattr("close").unwrap_or(false) {
                let _ = awaitable.call_method0("close");
            }
            let _ = tx.send(Err(CancelledError::new_err("cancelled before it started")));
            return;
        }
        let task = match py
            .import("asyncio")
            .and_then(|a| a.call_method1("ensure_future", (awaitable,)))
        {
            Ok(task) => task,
            Err(e) => {
                let _ = tx.send(Err(e));
                return;
            }
        };
        let done = TaskDone {
            tx: Mutex::new(Some(tx)),
            shared: self.shared.clone(),
        };
        if let Err(e) = task.call_method1("add_done_callback", (done,)) {
            e.write_unraisable(py, Some(&task));
        }
        // The lock is never held while calling Python (which may release the GIL).
        let cancel_now = {
            let mut slot = self.shared.lock().unwrap_or_else(|e| e.into_inner());
            if slot.cancelled {
                true
            } else {
                slot.task = Some(task.clone().unbind());
                false
            }
        };
        if cancel_now {
            let _ = task.call_method0("cancel");
        }
    }
}

/// Done-callback of a [`LoopTask`]'s task: sends the outcome to Rust.
#[pyclass(frozen)]
struct TaskDone {
    tx: Mutex<Option<oneshot::Sender<TaskOutcome>>>,
    shared: Arc<Mutex<TaskSlot>>,
}

#[pymethods]
impl TaskDone {
    fn __call__(&self, task: &Bound<'_, PyAny>) -> PyResult<()> {
        self.shared
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .task
            .take();
        let Some(tx) = self.tx.lock().unwrap_or_else(|e| e.into_inner()).take() else {
            return Ok(());
        };
        let outcome = if task.call_method0("cancelled")?.is_truthy()? {
            let cancelled = task.py().import("asyncio")?.getattr("CancelledError")?;
            Err(PyErr::from_value(cancelled.call0()?))
        } else {
            // Retrieving the exception also keeps asyncio from logging it as never retrieved.
            let exc = task.call_method0("exception")?;
            if exc.is_none() {
                let value = task.call_method0("result")?;
                Ok((!value.is_none()).then(|| value.unbind()))
            } else {
                Err(PyErr::from_value(exc))
            }
        };
        let _ = tx.send(outcome);
        Ok(())
    }
}
