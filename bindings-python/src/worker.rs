//! Workers (core `worker`): `Queue.work`, `run`, `work_batches`, `run_batches` (the starters;
//! `work_tasks` is in [`crate::task`]), `tideq.Worker` (blocking) and `tideq.AsyncWorker`
//! (asyncio), the handles of a running `tideq::Worker`, and `tideq.WorkerStats`. The worker loop (fetching, leases
//! and their renewal, ack/fail/retry, timeouts, shutdown) is the core's; lease renewal runs on a
//! Rust thread and needs no GIL, so a handler that holds the GIL or blocks its event loop cannot
//! let its lease lapse. Handlers run as [`crate::handler`] says.
//!
//! Returning normally completes the job. A raised exception fails the attempt with the error text
//! `"ExcType: message"` (stored with the job; retried after backoff, dead-lettered after
//! `max_attempts`) and is logged on the `tideq` logger with its traceback.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use pyo3::exceptions::{PyBaseException, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::PyList;
use tideq::{BatchError, BatchOptions, Tasks, WorkerOptions};

use crate::convert::{self, Int, Secs, Text};
use crate::error;
use crate::handler::{self, Handler, Work};
use crate::job::Job;
use crate::jobs::QueueBase;
use crate::options::worker_options;
use crate::otel;
use crate::runtime::{Api, Running};
use crate::signal::{self, RunningBase};

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
    /// Jobs that ended cancelled: their ``cancel`` was requested while they ran.
    #[getter]
    fn cancelled(&self) -> u64 {
        self.0.cancelled
    }
    /// Attempts whose handler raised ``Snooze`` or ``BackOff`` (not counted as attempts).
    #[getter]
    fn snoozed(&self) -> u64 {
        self.0.snoozed
    }
    fn __repr__(&self) -> String {
        format!("WorkerStats({})", counters(&self.0))
    }
}

impl From<tideq::WorkerStats> for WorkerStats {
    fn from(stats: tideq::WorkerStats) -> Self {
        WorkerStats(stats)
    }
}

crate::value::value_class! {
    WorkerStats {
        completed, failed, lease_lost, released, fetch_errors, cancelled, snoozed
    }
}

fn counters(s: &tideq::WorkerStats) -> String {
    format!(
        "completed={}, failed={}, lease_lost={}, released={}, fetch_errors={}, cancelled={}, \
         snoozed={}",
        s.completed, s.failed, s.lease_lost, s.released, s.fetch_errors, s.cancelled, s.snoozed
    )
}

impl Work for tideq::Job {
    const CALL: &'static str = "handler(job)";
    type Note = (String, u32, u32);

    fn call<'py>(self, func: &Bound<'py, PyAny>) -> (PyResult<Bound<'py, PyAny>>, Self::Note) {
        let note = (self.id.clone(), self.attempt, self.max_attempts);
        (func.call1((Job::from_core(func.py(), self),)), note)
    }

    fn cancellation(&self) -> Option<tideq::CancellationToken> {
        Some(tideq::Job::cancellation(self).clone())
    }

    fn failed(py: Python<'_>, (id, attempt, max_attempts): &Self::Note, err: &PyErr) -> String {
        let msg = "handler failed on job %r (attempt %d of %d)";
        handler::log_exception(py, err, msg, (id, attempt, max_attempts));
        handler::error_text(py, err)
    }

    type Error = tideq::HandlerError;

    fn error(text: String) -> tideq::HandlerError {
        text.into()
    }

    fn raised(py: Python<'_>, note: &Self::Note, err: &PyErr) -> tideq::HandlerError {
        crate::verdict::outcome(py, err, || Self::failed(py, note, err)).unwrap_or_else(|| {
            // The text as before, the traceback kept with the attempt's record.
            Box::new(tideq::TracedError {
                message: Self::failed(py, note, err),
                trace: crate::handler::traceback(py, err),
            })
        })
    }

    /// The job's result: bytes (``bytes``, ``bytearray``, ``memoryview``) as they are, anything
    /// else JSON-encoded; a value ``json.dumps`` refuses fails the attempt with a ``TypeError``.
    type Output = Option<Vec<u8>>;

    fn returned(
        py: Python<'_>,
        note: &Self::Note,
        value: &Bound<'_, PyAny>,
    ) -> Result<Option<Vec<u8>>, tideq::HandlerError> {
        convert::json_or_bytes(value).map(Some).map_err(|err| {
            let err = PyTypeError::new_err(format!(
                "the handler's return value is stored as the job's result and must be bytes or \
                 JSON-able: {}",
                handler::error_text(py, &err)
            ));
            Self::failed(py, note, &err).into()
        })
    }
}

/// A batch of jobs for a batch handler (`work_batches`): called with a list of `Job`s. Returning
/// None completes them all; returning a mapping `{job_id: error}` fails those jobs (the error a
/// str or an exception) and completes the rest; raising fails them all.
pub struct JobBatch(pub Vec<tideq::Job>);

impl Work for JobBatch {
    const CALL: &'static str = "handler(jobs)";
    /// The batch's size.
    type Note = usize;

    fn call<'py>(self, func: &Bound<'py, PyAny>) -> (PyResult<Bound<'py, PyAny>>, Self::Note) {
        let (py, n) = (func.py(), self.0.len());
        let jobs = PyList::new(py, self.0.into_iter().map(|j| Job::from_core(py, j)));
        (jobs.and_then(|jobs| func.call1((jobs,))), n)
    }

    fn cancellation(&self) -> Option<tideq::CancellationToken> {
        // Every job of a batch is cancelled together (timeout, end of the grace period).
        self.0.first().map(|j| j.cancellation().clone())
    }

    fn failed(py: Python<'_>, n: &usize, err: &PyErr) -> String {
        handler::log_exception(py, err, "batch handler failed on %d job(s)", (n,));
        handler::error_text(py, err)
    }

    type Error = BatchError;

    fn error(text: String) -> BatchError {
        BatchError::All(text)
    }

    type Output = ();

    fn returned(py: Python<'_>, n: &usize, value: &Bound<'_, PyAny>) -> Result<(), BatchError> {
        match failed_jobs(value) {
            Ok(failed) if failed.is_empty() => Ok(()),
            Ok(failed) => Err(BatchError::Jobs(failed)),
            Err(err) => {
                let err = PyTypeError::new_err(format!(
                    "a batch handler returns None or a mapping {{job_id: error}}: {}",
                    handler::error_text(py, &err)
                ));
                Err(Self::error(Self::failed(py, n, &err)))
            }
        }
    }
}

/// The `{job_id: error}` mapping a batch handler returned, as the core's `BatchError::Jobs` (an
/// empty one completes every job). Keys are job ids (or `Job`s); an error is a str, an exception
/// (shown as `"ExcType: message"`) or anything else (its `str()`).
fn failed_jobs(value: &Bound<'_, PyAny>) -> PyResult<Vec<(String, String)>> {
    let py = value.py();
    let items = value.call_method0("items").map_err(|_| {
        PyTypeError::new_err(format!(
            "got {}",
            value
                .get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_default()
        ))
    })?;
    let mut failed = Vec::new();
    for item in items.try_iter()? {
        let (key, error): (Bound<'_, PyAny>, Bound<'_, PyAny>) = item?.extract()?;
        let id = match key.cast::<Job>() {
            Ok(job) => job.get().core().id.clone(),
            Err(_) => key.extract::<Text>()?.0,
        };
        let text = if error.is_instance_of::<PyBaseException>() {
            handler::error_text(py, &PyErr::from_value(error))
        } else {
            error.str()?.to_string()
        };
        failed.push((id, text));
    }
    Ok(failed)
}

impl Running for tideq::Worker {
    fn stop(&self) {
        tideq::Worker::stop(self)
    }
    fn abort(&self) {
        tideq::Worker::abort(self)
    }
    fn is_running(&self) -> bool {
        tideq::Worker::is_running(self)
    }
    fn wait(&self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(async move {
            self.join().await;
        })
    }
    fn error(&self) -> Option<tideq::Error> {
        tideq::Worker::error(self)
    }
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Ok(Bound::new(py, WorkerStats(tideq::Worker::stats(self)))?.into_any())
    }
    fn counters(&self) -> String {
        counters(&tideq::Worker::stats(self))
    }
}

/// What a worker runs: one handler per job, a batch handler, or handlers by task name.
pub enum Handlers {
    One(Py<PyAny>),
    Batches(Py<PyAny>, BatchOptions),
    /// (task name, handler) pairs.
    Tasks(Vec<(String, Py<PyAny>)>),
}

const NO_LOOP: &str = "AsyncQueue.work()/run() need a running asyncio event loop (call them \
                       from async code); use Queue for threads";

/// Starts a core worker on the queue of `owner` running `handlers` (kept in the queue's
/// [`signal::Started`]), and returns its handle for the queue's API. With OpenTelemetry, each job
/// handler (not a batch handler) runs inside its consumer span ([`otel::wrap`]).
pub fn start<'py>(
    py: Python<'py>,
    owner: &QueueBase,
    opts: WorkerOptions,
    handlers: Handlers,
) -> PyResult<Bound<'py, PyAny>> {
    let (api, queue, started) = (owner.api, &owner.queue, &owner.started);
    let grace = opts.grace;
    let what = ("job", "jobs");
    let handlers = match handlers {
        Handlers::One(func) => Handlers::One(otel::wrap(py, func, queue.name())?),
        Handlers::Tasks(funcs) => Handlers::Tasks(
            funcs
                .into_iter()
                .map(|(name, func)| Ok((name, otel::wrap(py, func, queue.name())?)))
                .collect::<PyResult<_>>()?,
        ),
        batches @ Handlers::Batches(..) => batches,
    };
    let (base, worker) = match handlers {
        Handlers::One(func) => signal::start(py, api, started, NO_LOOP, grace, what, |wrap| {
            queue.work_boxed(opts, wrap(func)?).map_err(error::to_py)
        })?,
        Handlers::Batches(func, batch) => {
            signal::start(py, api, started, NO_LOOP, grace, what, |wrap| {
                let handler: Handler<JobBatch> = wrap(func)?;
                let handler: tideq::JobBatchHandler =
                    Arc::new(move |jobs: Vec<tideq::Job>| handler(JobBatch(jobs)));
                queue
                    .work_batches_boxed(opts, batch, handler)
                    .map_err(error::to_py)
            })?
        }
        Handlers::Tasks(funcs) => signal::start(py, api, started, NO_LOOP, grace, what, |wrap| {
            let mut tasks = Tasks::new();
            for (name, func) in funcs {
                tasks = tasks.boxed(&name, wrap(func)?);
            }
            queue.work_tasks(opts, tasks).map_err(error::to_py)
        })?,
    };
    Ok(match api {
        Api::Blocking => Bound::new(py, base.add_subclass(Worker(worker)))?.into_any(),
        Api::Async => Bound::new(py, base.add_subclass(AsyncWorker(worker)))?.into_any(),
    })
}

/// The core worker of a `Worker` or `AsyncWorker` handle (for `serve`), or None.
pub(crate) fn core_worker(obj: &Bound<'_, PyAny>) -> Option<Arc<tideq::Worker>> {
    if let Ok(w) = obj.cast::<Worker>() {
        return Some(w.get().0.clone());
    }
    obj.cast::<AsyncWorker>().ok().map(|w| w.get().0.clone())
}

/// A running worker (blocking API). Dropping it does not stop it: call ``shutdown()``.
///
/// A worker stops by itself when Redis refuses its credentials or permissions (which retrying
/// cannot fix; other errors are retried): ``join()``, ``shutdown()`` and ``run()`` then raise
/// that error (``AuthError``, ``PermissionDeniedError``), also kept in ``error``.
#[pyclass(module = "tideq", extends = RunningBase, frozen)]
pub struct Worker(Arc<tideq::Worker>);

#[pymethods]
impl Worker {
    /// This worker's own metrics (this process only) in the Prometheus text format.
    ///
    /// Its counters (``tideq_worker_jobs_completed_total``, ...) and its handlers' run times
    /// (the ``tideq_worker_job_run_seconds`` histogram), labelled with the queue: serve it from
    /// your own ``/metrics`` endpoint. The queue-wide view, over every worker, is
    /// ``tideq exporter``'s. Still readable once the worker has stopped.
    fn metrics(&self) -> String {
        self.0.metrics()
    }

    /// True while the worker is connected and leasing.
    ///
    /// True once its latest fetch on every shard of the queue succeeded; False before its first
    /// fetch, from a failed fetch (Redis unreachable, say) until the next one that works, and
    /// once it stops leasing (stopping, or its ``max_jobs`` reached). What a readiness probe
    /// asks (``serve(health=...)`` answers ``/readyz`` with it).
    fn is_ready(&self) -> bool {
        self.0.is_ready()
    }

    /// Wait until stopped, or ``timeout`` seconds (a timeout too large to be a point in time
    /// means no limit); returns the stats either way, unless the worker stopped on an error
    /// (raised).
    #[pyo3(signature = (timeout=None))]
    fn join<'py>(slf: &Bound<'py, Self>, timeout: Option<Secs>) -> PyResult<Bound<'py, PyAny>> {
        slf.as_super().get().join(slf.py(), timeout)
    }
}

/// A running worker (asyncio API). Dropping it does not stop it: ``await shutdown()``.
///
/// It stops by itself on errors retrying cannot fix, as ``Worker`` does.
#[pyclass(module = "tideq", extends = RunningBase, frozen)]
pub struct AsyncWorker(Arc<tideq::Worker>);

#[pymethods]
impl AsyncWorker {
    /// This worker's own metrics (this process only) in the Prometheus text format.
    ///
    /// As ``Worker.metrics``: a plain call, not a coroutine (it reads in-process counters).
    fn metrics(&self) -> String {
        self.0.metrics()
    }

    /// True while the worker is connected and leasing (see ``Worker.is_ready``).
    ///
    /// A plain call, not a coroutine (it reads in-process state).
    fn is_ready(&self) -> bool {
        self.0.is_ready()
    }

    /// Wait until stopped; returns the stats, or raises the error the worker stopped on.
    fn join<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        slf.as_super().get().join(slf.py(), None)
    }
}

#[pymethods]
impl QueueBase {
    /// Start a worker in the background.
    ///
    /// ``handler(job)`` per job, up to ``concurrency`` at a
    /// time. Returning completes the job; raising fails the attempt (error text
    /// ``"ExcType: message"``, traceback logged on the ``tideq`` logger), retried after backoff
    /// or dead-lettered after ``max_attempts``. Plain handlers run in pooled worker threads (as
    /// in a ``ThreadPoolExecutor``: a ``threading.local`` lives as long as its thread, not one
    /// job), ``async def`` ones on a private event loop per job; ``AsyncQueue.work`` is called from
    /// a running event loop, on which its ``async def`` handlers run as tasks (cancelled when
    /// their attempt times out, or at the end of the shutdown grace period). The ``lease`` (seconds) is renewed by Rust
    /// while the handler runs; a worker that dies loses its jobs to another worker after it.
    /// ``batch_size``: most jobs leased per fetch, at most 1000 (0: half the concurrency, at most 1000; two fetches are kept
    /// in flight). An attempt running past its ``timeout`` fails ("timed out") and its handler is
    /// asked to stop (``job.cancelled``; ``async def`` handlers are cancelled); the job is retried
    /// only once the handler returned, and never runs twice at a time. On stop, running jobs get
    /// ``grace`` seconds, then are asked to stop likewise (see ``Worker.stop``).
    /// A worker stops by itself on ``AuthError`` or ``PermissionDeniedError`` (see ``Worker``).
    /// With ``schedules`` the worker also fires the queue's due schedule slots
    /// (``upsert_schedule``): any number of workers may, each slot still makes one job.
    /// With ``max_jobs`` the worker leases at most that many jobs in its life (never one more),
    /// then stops leasing, finishes those it runs and stops by itself (``running`` turns False,
    /// ``error`` stays None): how a worker process is recycled (``serve``, ``tideq worker
    /// --max-jobs-per-process``); 0 raises ``InvalidArgumentError``.
    /// Options not given take the core's defaults: ``concurrency`` 10, ``batch_size`` 0,
    /// ``lease`` 30 s, ``poll_interval`` 5 s, ``grace`` 10 s, ``stop_when_drained`` False,
    /// ``schedules`` True, ``max_jobs`` None (no limit).
    #[pyo3(signature = (handler, *, concurrency=None, batch_size=None, lease=None, poll_interval=None, grace=None, stop_when_drained=None, schedules=None, max_jobs=None))]
    #[allow(clippy::too_many_arguments)]
    fn work<'py>(
        &self,
        py: Python<'py>,
        handler: Py<PyAny>,
        concurrency: Option<Int>,
        batch_size: Option<Int>,
        lease: Option<Secs>,
        poll_interval: Option<Secs>,
        grace: Option<Secs>,
        stop_when_drained: Option<bool>,
        schedules: Option<bool>,
        max_jobs: Option<Int>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let opts = worker_options(
            concurrency,
            batch_size,
            lease,
            poll_interval,
            grace,
            stop_when_drained,
            schedules,
            max_jobs,
        )?;
        start(py, self, opts, Handlers::One(handler))
    }

    /// ``work()``, then wait until the worker stops.
    ///
    /// ``work()`` and block until SIGINT/SIGTERM or, with
    /// ``stop_when_drained``, until nothing is ready, delayed or active; raises the error the
    /// worker stopped on, if any. The first SIGINT/SIGTERM stops gracefully and prints one line
    /// on stderr saying so; a second one stops at once (``abort()``). ``AsyncQueue.run`` is
    /// awaited instead, and cancelling it stops the worker gracefully too.
    #[pyo3(signature = (handler, *, concurrency=None, batch_size=None, lease=None, poll_interval=None, grace=None, stop_when_drained=None, schedules=None, max_jobs=None))]
    #[allow(clippy::too_many_arguments)]
    fn run<'py>(
        &self,
        py: Python<'py>,
        handler: Py<PyAny>,
        concurrency: Option<Int>,
        batch_size: Option<Int>,
        lease: Option<Secs>,
        poll_interval: Option<Secs>,
        grace: Option<Secs>,
        stop_when_drained: Option<bool>,
        schedules: Option<bool>,
        max_jobs: Option<Int>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let worker = self.work(
            py,
            handler,
            concurrency,
            batch_size,
            lease,
            poll_interval,
            grace,
            stop_when_drained,
            schedules,
            max_jobs,
        )?;
        signal::run(&worker)
    }

    /// Start a worker whose handler gets a list of up to ``size`` jobs at once (``wait``:
    /// longest seconds a leased job waits for its batch to fill; 0 or None hands over what one
    /// fetch brought). Returning None completes them all; returning a mapping ``{job_id: error}``
    /// (an error message or an exception) fails those jobs (retried or dead-lettered, each by its
    /// attempts) and completes the rest; raising fails them all. Each job keeps its own lease,
    /// renewed while it waits and runs. ``concurrency`` counts jobs (``concurrency // size``
    /// batches at once); the other options are ``work``'s.
    #[pyo3(signature = (handler, *, size, wait=None, concurrency=None, batch_size=None, lease=None, poll_interval=None, grace=None, stop_when_drained=None, schedules=None, max_jobs=None))]
    #[allow(clippy::too_many_arguments)]
    fn work_batches<'py>(
        &self,
        py: Python<'py>,
        handler: Py<PyAny>,
        size: Int,
        wait: Option<Secs>,
        concurrency: Option<Int>,
        batch_size: Option<Int>,
        lease: Option<Secs>,
        poll_interval: Option<Secs>,
        grace: Option<Secs>,
        stop_when_drained: Option<bool>,
        schedules: Option<bool>,
        max_jobs: Option<Int>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let opts = worker_options(
            concurrency,
            batch_size,
            lease,
            poll_interval,
            grace,
            stop_when_drained,
            schedules,
            max_jobs,
        )?;
        let mut batch = tideq::BatchOptions::default();
        let size = Some(size);
        convert::set_given!(batch, size: convert::count, wait: convert::duration);
        start(py, self, opts, Handlers::Batches(handler, batch))
    }

    /// ``work_batches()`` and wait until it stops, as ``run()`` does.
    #[pyo3(signature = (handler, *, size, wait=None, concurrency=None, batch_size=None, lease=None, poll_interval=None, grace=None, stop_when_drained=None, schedules=None, max_jobs=None))]
    #[allow(clippy::too_many_arguments)]
    fn run_batches<'py>(
        &self,
        py: Python<'py>,
        handler: Py<PyAny>,
        size: Int,
        wait: Option<Secs>,
        concurrency: Option<Int>,
        batch_size: Option<Int>,
        lease: Option<Secs>,
        poll_interval: Option<Secs>,
        grace: Option<Secs>,
        stop_when_drained: Option<bool>,
        schedules: Option<bool>,
        max_jobs: Option<Int>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let worker = self.work_batches(
            py,
            handler,
            size,
            wait,
            concurrency,
            batch_size,
            lease,
            poll_interval,
            grace,
            stop_when_drained,
            schedules,
            max_jobs,
        )?;
        signal::run(&worker)
    }
}

crate::signal::context_manager!(blocking Worker);
crate::signal::context_manager!(asyncio AsyncWorker);
