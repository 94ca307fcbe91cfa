//! `tideq.Worker` (blocking) and `tideq.AsyncWorker` (asyncio) over one `tideq::Worker`,
//! `tideq.WorkerStats`, and the plumbing that runs a Python handler for each job. The worker loop
//! (fetching, leases and their renewal, ack/fail/retry, timeouts, shutdown) is the core's; lease
//! renewal runs on a Rust thread and needs no GIL, so a handler that holds the GIL (a CPU-bound
//! loop) or blocks its event loop cannot let its lease lapse.
//!
//! Where handlers run (as for consumers, see [`crate::handler`]):
//! - a plain function: on a tokio blocking thread, holding the GIL only for the call;
//! - an `async def` with `AsyncQueue`: as a task on the event loop that called `work`/`run`,
//!   cancelled when the core drops it (the attempt timed out, or was abandoned at shutdown);
//! - an `async def` with the blocking `Queue`: on a private event loop per job, in the blocking
//!   thread.
//!
//! Returning normally completes the job. A raised exception fails the attempt with the error text
//! `"ExcType: message"` (stored with the job; retried after backoff, dead-lettered after
//! `max_attempts`) and is logged on the `tideq` logger with its traceback.

use std::sync::Arc;
use std::time::Instant;

use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use tideq::{JobHandler, WorkerOptions};

use crate::convert;
use crate::errors;
use crate::handler::{self, Loop, LoopTask};
use crate::jobs::Job;
use crate::running;
use crate::runtime;

/// Worker options converted from keyword arguments.
pub struct Options(WorkerOptions);

impl Options {
    pub fn new(
        concurrency: i64,
        batch_size: i64,
        lease: f64,
        poll_interval: f64,
        grace: f64,
        stop_when_drained: bool,
    ) -> PyResult<Self> {
        Ok(Options(WorkerOptions {
            concurrency: convert::count("concurrency", concurrency)?,
            batch_size: convert::count("batch_size", batch_size)?,
            lease: convert::duration("lease", lease)?,
            poll_interval: convert::duration("poll_interval", poll_interval)?,
            grace: convert::duration("grace", grace)?,
            stop_when_drained,
        }))
    }
}

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
        let s = &self.0;
        format!(
            "WorkerStats(completed={}, failed={}, lease_lost={}, released={}, fetch_errors={})",
            s.completed, s.failed, s.lease_lost, s.released, s.fetch_errors
        )
    }
}

struct PyJobHandler {
    func: Py<PyAny>,
    is_async: bool,
    event_loop: Loop,
}

fn job_handler(py: Python<'_>, func: Py<PyAny>, event_loop: Loop) -> PyResult<JobHandler> {
    let bound = func.bind(py);
    if !bound.is_callable() {
        return Err(PyTypeError::new_err(format!(
            "handler must be callable as handler(job), not {}",
            bound.get_type().name()?
        )));
    }
    let is_async = handler::is_coroutine_function(bound)?;
    let handler = Arc::new(PyJobHandler {
        func,
        is_async,
        event_loop,
    });
    Ok(Arc::new(move |job: tideq::Job| {
        let handler = handler.clone();
        Box::pin(async move { handler.handle(job).await })
    }))
}

impl PyJobHandler {
    async fn handle(self: Arc<Self>, job: tideq::Job) -> Result<(), String> {
        if let (true, Loop::Caller(locals)) = (self.is_async, &self.event_loop) {
            // Calling an `async def` only creates the coroutine (with the GIL, so on a blocking
            // thread); its body runs as a task on the caller's loop.
            let (this, locals) = (self.clone(), locals.clone());
            let (id, attempt, max_attempts) = (job.id.clone(), job.attempt, job.max_attempts);
            let started = tokio::task::spawn_blocking(move || {
                runtime::with_python(|py| {
                    let coro = this.func.bind(py).call1((Job::from_core(py, &job),))?;
                    LoopTask::start(py, &locals, coro)
                })
            })
            .await
            .map_err(|e| e.to_string())?
            .ok_or_else(handler::shutting_down)?;
            let task = match started {
                Ok(task) => task,
                Err(e) => return Err(self.failed(e, id, attempt, max_attempts).await),
            };
            // The core drops this future when the attempt times out or is abandoned after the
            // grace period; dropping the task then cancels the coroutine on the user's loop.
            return match task.await {
                Ok(()) => Ok(()),
                Err(err) => Err(self.failed(err, id, attempt, max_attempts).await),
            };
        }
        let this = self.clone();
        match tokio::task::spawn_blocking(move || this.call_blocking(&job)).await {
            Ok(res) => res,
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(e) => Err(e.to_string()),
        }
    }

    /// Logs a coroutine's exception and returns its text. Logging handlers may block: this
    /// runs on a blocking thread, off the runtime's workers.
    async fn failed(&self, err: PyErr, id: String, attempt: u32, max_attempts: u32) -> String {
        let text = tokio::task::spawn_blocking(move || {
            runtime::with_python(|py| {
                log_failure(py, &err, &id, attempt, max_attempts);
                handler::error_text(py, &err)
            })
        })
        .await;
        text.ok().flatten().unwrap_or_else(handler::shutting_down)
    }

    /// Runs in a blocking thread: calls the handler, runs a returned awaitable, logs a failure.
    fn call_blocking(&self, job: &tideq::Job) -> Result<(), String> {
        runtime::with_python(|py| {
            let res = self
                .func
                .bind(py)
                .call1((Job::from_core(py, job),))
                .and_then(|out| handler::finish_in_thread(py, out, &self.event_loop));
            res.map_err(|err| {
                log_failure(py, &err, &job.id, job.attempt, job.max_attempts);
                handler::error_text(py, &err)
            })
        })
        .ok_or_else(handler::shutting_down)?
    }
}

/// `logger.exception`-style record on the `tideq` logger, with the handler's traceback.
fn log_failure(py: Python<'_>, err: &PyErr, id: &str, attempt: u32, max_attempts: u32) {
    match (id, attempt, max_attempts).into_pyobject(py) {
        Ok(args) => {
            handler::log_exception(py, err, "handler failed on job %r (attempt %d of %d)", args)
        }
        Err(e) => e.write_unraisable(py, None),
    }
}

/// Starts a core worker running `func`, its awaitables on `event_loop`.
fn start(
    py: Python<'_>,
    queue: &tideq::Queue,
    opts: Options,
    func: Py<PyAny>,
    event_loop: Loop,
) -> PyResult<Arc<tideq::Worker>> {
    let rt = runtime::get()?;
    let handler = job_handler(py, func, event_loop)?;
    let _in_runtime = rt.enter();
    let grace = opts.0.grace;
    let worker = queue
        .work_boxed(opts.0, handler)
        .map(Arc::new)
        .map_err(errors::to_py)?;
    runtime::track(worker.clone(), grace);
    Ok(worker)
}

fn repr(class: &str, w: &tideq::Worker) -> String {
    let s = w.stats();
    format!(
        "{class}(running={}, completed={}, failed={}, lease_lost={}, released={}, fetch_errors={})",
        if w.is_running() { "True" } else { "False" },
        s.completed,
        s.failed,
        s.lease_lost,
        s.released,
        s.fetch_errors
    )
}

/// A running worker (blocking API). Dropping it does not stop it: call `shutdown()`.
#[pyclass(module = "tideq", frozen)]
pub struct Worker {
    inner: Arc<tideq::Worker>,
}

impl Worker {
    pub fn start(
        py: Python<'_>,
        queue: &tideq::Queue,
        opts: Options,
        handler: Py<PyAny>,
    ) -> PyResult<Self> {
        Ok(Worker {
            inner: start(py, queue, opts, handler, Loop::Private)?,
        })
    }
}

#[pymethods]
impl Worker {
    /// Stop fetching; running jobs get the grace period, then are returned to the queue.
    fn stop(&self) -> PyResult<()> {
        runtime::get()?;
        self.inner.stop();
        Ok(())
    }

    /// Wait until the worker has stopped, or `timeout` seconds; returns the stats either way
    /// (check `running`).
    #[pyo3(signature = (timeout=None))]
    fn join(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<WorkerStats> {
        let deadline = match timeout {
            Some(t) => Some(Instant::now() + convert::duration("timeout", t)?),
            None => None,
        };
        runtime::wait_until(py, self.inner.join(), deadline)?;
        Ok(WorkerStats(self.inner.stats()))
    }

    /// `stop()` then `join()`.
    fn shutdown(&self, py: Python<'_>) -> PyResult<WorkerStats> {
        self.stop()?;
        self.join(py, None)
    }

    fn stats(&self) -> WorkerStats {
        WorkerStats(self.inner.stats())
    }

    #[getter]
    fn running(&self) -> bool {
        self.inner.is_running()
    }

    fn __repr__(&self) -> String {
        repr("Worker", &self.inner)
    }
}

/// `Queue.run`: waits for the worker; SIGINT/SIGTERM stop it gracefully (see
/// [`running::run_blocking`]) and its stats are returned.
pub fn run_blocking(py: Python<'_>, worker: &Worker) -> PyResult<WorkerStats> {
    running::run_blocking(py, &*worker.inner)?;
    Ok(WorkerStats(worker.inner.stats()))
}

/// A running worker (asyncio API). Dropping it does not stop it: `await shutdown()`.
#[pyclass(module = "tideq", frozen)]
pub struct AsyncWorker {
    inner: Arc<tideq::Worker>,
}

impl AsyncWorker {
    pub fn start(
        py: Python<'_>,
        queue: &tideq::Queue,
        opts: Options,
        handler: Py<PyAny>,
    ) -> PyResult<Self> {
        let locals = pyo3_async_runtimes::tokio::get_current_locals(py).map_err(|_| {
            PyRuntimeError::new_err(
                "AsyncQueue.work()/run() need a running asyncio event loop (call them from async \
                 code); use Queue for threads",
            )
        })?;
        Ok(AsyncWorker {
            inner: start(py, queue, opts, handler, Loop::Caller(locals))?,
        })
    }
}

#[pymethods]
impl AsyncWorker {
    /// Stop fetching; running jobs get the grace period, then are returned to the queue.
    fn stop(&self) -> PyResult<()> {
        runtime::get()?;
        self.inner.stop();
        Ok(())
    }

    /// Awaitable: waits until the worker has stopped, returns its stats.
    fn join<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let inner = self.inner.clone();
        runtime::awaitable(py, async move { Ok(WorkerStats(inner.join().await)) })
    }

    /// Awaitable: `stop()` then `join()`.
    fn shutdown<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.stop()?;
        self.join(py)
    }

    fn stats(&self) -> WorkerStats {
        WorkerStats(self.inner.stats())
    }

    #[getter]
    fn running(&self) -> bool {
        self.inner.is_running()
    }

    fn __repr__(&self) -> String {
        repr("AsyncWorker", &self.inner)
    }
}

/// `AsyncQueue.run`: an awaitable that waits for the worker and returns its stats; SIGINT/SIGTERM
/// or cancelling it stop the worker gracefully (see [`running::run_async`]).
pub fn run_async(py: Python<'_>, worker: AsyncWorker) -> PyResult<Bound<'_, PyAny>> {
    let inner = worker.inner.clone();
    let stop = Py::new(py, worker)?.getattr(py, "stop")?;
    let stats_of = inner.clone();
    running::run_async(py, inner, stop, move || WorkerStats(stats_of.stats()))
}
