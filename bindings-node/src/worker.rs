//! Workers: wraps `tideq::Worker` (`Queue::work_boxed`) and adds `Queue.work`/`run`. The core
//! owns the fetch loop, concurrency, leases and their renewal, timeouts, retries and shutdown;
//! this file reads the options and hands the core a handler that calls the JS one
//! ([`crate::handler`]), whose error text the core stores with the failed job.
//!
//! Leases: renewal runs on a core thread beside the handler and never needs the JS thread,
//! so a handler that blocks the event loop (a sync busy loop) keeps its lease.
//!
//! Stopping: the core never drops a handler's future before it completes; when it cancels an
//! attempt (timeout, or the end of the shutdown grace) this file aborts the job's `signal`
//! ([`crate::abort`]) and keeps waiting for the handler's Promise. Only `abort()` abandons it.

use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use napi::bindgen_prelude::*;
use napi_derive::napi;

use crate::abort::{Aborter, JobSignal, Reason};
use napi::{JsValue, ValueType};
use tideq::CancellationToken;

use crate::convert::{
    boolean, count, count1, describe, entries, function, millis, read_value, Options,
};
use crate::error::{error_value, spawn, throw, type_error, Failure, Res};
use crate::handler::{error_text, JsHandler, Reply, Running, RunningCall, Subject};
use crate::job::{stored_bytes, Job};
use crate::jobs::Queue;
use crate::signal::{stop_on_signal, Stopper};
use crate::task::task_handlers;

/// Options of `work(handler, options)` and `run(handler, options)`. Every field is optional.
// Declared for the TypeScript definitions only; `convert::Options` reads the fields one by one.
#[allow(dead_code)]
#[napi(object, object_from_js = false, object_to_js = false)]
pub struct WorkerOptions {
    /// Jobs run at the same time. Default 10.
    pub concurrency: Option<u32>,
    /// Most jobs leased per fetch, at most 1000; 0: half the concurrency, at most 1000 (two
    /// fetches are kept in flight).
    /// Default 0.
    pub batch_size: Option<u32>,
    /// Lease length: a job whose worker stops renewing is redelivered this long after the last
    /// renewal. Renewed every `leaseMs / 3` while the handler runs (from a Rust thread: a
    /// handler blocking the event loop keeps its lease). At least 30. Default 30000.
    pub lease_ms: Option<f64>,
    /// Longest idle wait before looking again (producers usually wake idle workers sooner).
    /// At least 10. Default 5000.
    pub poll_interval_ms: Option<f64>,
    /// On shutdown, how long running jobs may take before their `job.signal` is aborted. The
    /// worker then keeps waiting for their handlers: a job whose handler rejects (or throws) is
    /// returned to the queue, its attempt not counted; one whose handler resolves is completed.
    /// `abort()` stops waiting. Default 10000.
    pub grace_ms: Option<f64>,
    /// Stop by itself once nothing is ready, delayed or active.
    pub stop_when_drained: Option<bool>,
    /// Fire the queue's schedules' due slots (`upsertSchedule`): any number of workers may, in
    /// any process or runtime, and each slot still makes one job. A new or changed schedule is
    /// seen within `pollIntervalMs`. Default true.
    pub schedules: Option<bool>,
    /// Called with a handler's error (thrown or rejected) and the job. Default: the error and
    /// its stack are printed with `console.error`. Should not throw: an error thrown here
    /// becomes an uncaught exception.
    #[napi(ts_type = "(err: unknown, job: Job) => void")]
    pub on_error: Option<()>,
}

const WORK_KEYS: &[&str] = &[
    "concurrency",
    "batchSize",
    "leaseMs",
    "pollIntervalMs",
    "graceMs",
    "stopWhenDrained",
    "schedules",
    "onError",
];

/// What a worker has done so far (this process only).
#[napi(object, object_from_js = false)]
pub struct WorkerStats {
    /// Jobs whose handler succeeded and whose completion was accepted.
    pub completed: i64,
    /// Attempts that failed (handler threw or rejected, or exceeded its timeout).
    pub failed: i64,
    /// Completions or failures refused because the lease had expired and the job had been
    /// redelivered (e.g. the process was frozen longer than the lease).
    pub lease_lost: i64,
    /// Jobs returned to the queue at shutdown, their handler having stopped (rejected or thrown)
    /// after the grace period.
    pub released: i64,
    /// Fetches or waits that failed (e.g. Redis unreachable); the worker retried with backoff.
    pub fetch_errors: i64,
    /// Jobs that ended cancelled: their `cancel` was requested while they ran.
    pub cancelled: i64,
}

impl From<tideq::WorkerStats> for WorkerStats {
    fn from(s: tideq::WorkerStats) -> Self {
        WorkerStats {
            completed: s.completed as i64,
            failed: s.failed as i64,
            lease_lost: s.lease_lost as i64,
            released: s.released as i64,
            fetch_errors: s.fetch_errors as i64,
            cancelled: s.cancelled as i64,
        }
    }
}

/// A running worker. Dropping it does not stop it: call `shutdown()`. While it runs it keeps
/// the process alive (like a listening server); after it has stopped it no longer does.
///
/// What it retries (Redis unreachable, a lost lease, a damaged record) is printed on stderr as
/// `tideq: ...` lines, at most one line per cause every 5 seconds. The environment variable
/// `TIDEQ_LOG` sets how much: `off`, `error`, `warn` (the default), `info` or `debug`.
#[napi]
pub struct Worker {
    inner: Arc<tideq::Worker>,
}

/// The worker's stats once it has stopped, or the error it stopped on by itself.
fn outcome(w: &tideq::Worker, stats: tideq::WorkerStats) -> Res<WorkerStats> {
    match w.error() {
        Some(e) => Err(Failure::Core(e)),
        None => Ok(stats.into()),
    }
}

#[napi]
impl Worker {
    /// Asks the worker to stop fetching; running jobs get the grace period, then their
    /// `job.signal` is aborted and the worker waits for their handlers.
    #[napi]
    pub fn stop(&self) {
        self.inner.stop();
    }

    /// Stops at once, without waiting for running handlers: they are abandoned (their
    /// `job.signal` is aborted) and their jobs are left to their leases, so they run again once
    /// a lease expires. What a second Ctrl-C does to `run()`.
    #[napi]
    pub fn abort(&self) {
        self.inner.abort();
    }

    /// Resolves with the stats once the worker has stopped (after `stop()`, or by itself with
    /// `stopWhenDrained`). Rejects with the error the worker stopped on by itself (`AUTH` or
    /// `PERMISSION`: Redis refused its credentials or a command; see `error`).
    #[napi(ts_return_type = "Promise<WorkerStats>")]
    pub fn join<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, WorkerStats>> {
        let w = self.inner.clone();
        spawn(
            env,
            Ok(async move {
                let stats = w.join().await;
                outcome(&w, stats)
            }),
        )
    }

    /// Stops and waits: no new jobs; running jobs get the grace period, then their `job.signal`
    /// is aborted and the worker waits for their handlers (`abort()` stops waiting). Rejects
    /// like `join()`.
    #[napi(ts_return_type = "Promise<WorkerStats>")]
    pub fn shutdown<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, WorkerStats>> {
        let w = self.inner.clone();
        spawn(
            env,
            Ok(async move {
                let stats = w.shutdown().await;
                outcome(&w, stats)
            }),
        )
    }

    /// What the worker has done so far.
    #[napi]
    pub fn stats(&self) -> WorkerStats {
        self.inner.stats().into()
    }

    /// This worker's own metrics (this process only) in the Prometheus text format: its
    /// counters (`tideq_worker_jobs_completed_total`, ...) and its handlers' run times (the
    /// `tideq_worker_job_run_seconds` histogram), labelled with the queue. Serve it from your own
    /// `/metrics` endpoint; the queue-wide view, over every worker, is `tideq exporter`'s. Still
    /// readable once the worker has stopped.
    #[napi]
    pub fn metrics(&self) -> String {
        self.inner.metrics()
    }

    /// True until the fetch loop has ended and running jobs have finished or been returned.
    #[napi(getter)]
    pub fn running(&self) -> bool {
        self.inner.is_running()
    }

    /// The error the worker stopped on by itself, with its `code`: `AUTH` (Redis refused the
    /// credentials) or `PERMISSION` (the Redis user may not run a command the worker needs).
    /// Retrying cannot fix these, so the worker stops instead. `null` otherwise: transient errors
    /// (Redis unreachable, busy) are retried with backoff and logged to stderr.
    #[napi(getter, ts_return_type = "Error | null")]
    pub fn error<'env>(&self, env: &'env Env) -> Result<Option<Unknown<'env>>> {
        self.inner
            .error()
            .map(|e| error_value(env, Failure::Core(e)))
            .transpose()
    }
}

/// A leased job on its way to the handler (and, if it fails, to `onError`).
#[derive(Clone)]
struct Leased {
    job: Arc<tideq::Job>,
    stop: Arc<JobSignal>,
}

/// A failed job is reported with the job itself: `onError(err, job)`.
impl Subject for Leased {
    type Js = Job;

    fn into_js(self) -> Job {
        Job::new(self.job, self.stop)
    }

    /// A handler that stops when told the worker is shutting down hands its job back to the
    /// queue, and one stopped by a cancel ends its job cancelled: not failures.
    fn reported(&self) -> bool {
        !self.stop.stopped_for_shutdown() && !self.job.cancel_requested()
    }

    fn headline(&self) -> String {
        let j = &self.job;
        format!(
            "tideq: handler failed on job {:?} of queue {:?} (attempt {} of {}):",
            j.id, j.queue, j.attempt, j.max_attempts
        )
    }
}

/// A batch of leased jobs on its way to a batch handler (and, if it throws, to `onError`).
#[derive(Clone)]
struct LeasedBatch(Vec<Leased>);

/// A failed batch is reported with its jobs: `onError(err, jobs)`.
impl Subject for LeasedBatch {
    type Js = Vec<Job>;

    fn into_js(self) -> Vec<Job> {
        self.0.into_iter().map(Leased::into_js).collect()
    }

    fn reported(&self) -> bool {
        !self
            .0
            .iter()
            .any(|l| l.stop.stopped_for_shutdown() || l.job.cancel_requested())
    }

    fn headline(&self) -> String {
        let queue = self.0.first().map(|l| l.job.queue.as_str()).unwrap_or("");
        format!(
            "tideq: batch handler failed on {} job(s) of queue {queue:?}:",
            self.0.len()
        )
    }
}

/// What a batch handler resolved with: nothing (all done), `{ [jobId]: error }` or a `Map` of
/// the same (those failed, the rest done), or something else (the whole batch fails, saying so).
enum BatchReply {
    Done,
    Failed(Vec<(String, String)>),
    Bad(String),
}

impl Reply for BatchReply {
    fn read(v: &Unknown) -> Self {
        match batch_failures(v) {
            Ok(None) => BatchReply::Done,
            Ok(Some(failed)) => BatchReply::Failed(failed),
            Err(why) => BatchReply::Bad(why),
        }
    }
}

/// The failures a batch handler reported, `None` for none (`undefined` or `null`).
fn batch_failures(v: &Unknown) -> std::result::Result<Option<Vec<(String, String)>>, String> {
    let bad = || {
        format!(
            "the batch handler resolved with {}: expected undefined (every job done) or an \
             object or Map of {{ [jobId]: error }} (those jobs failed)",
            describe(v)
        )
    };
    match v.get_type().map_err(|e| e.reason)? {
        ValueType::Undefined | ValueType::Null => return Ok(None),
        ValueType::Object if !v.is_array().unwrap_or(true) => {}
        _ => return Err(bad()),
    }
    let env = Env::from_raw(v.value().env);
    let read = || -> Result<Object> {
        let global = env.get_global()?;
        let map: Function<(), Unknown> = global.get_named_property("Map")?;
        if v.instanceof(map)? {
            // A Map's entries as an object's (keys become strings, as job ids are).
            let object: Function<(), Unknown> = global.get_named_property("Object")?;
            let from_entries: Function<Unknown, Object> =
                object.get_named_property("fromEntries")?;
            return from_entries.call(*v);
        }
        read_value(v).map_err(|_| napi::Error::from_reason(bad()))
    };
    let obj = read().map_err(|e| e.reason)?;
    let mut failed = Vec::new();
    entries("the batch handler's failures", &obj, None, |id, error| {
        failed.push((id, error_text(&error)));
        Ok(())
    })
    .map_err(|e| match e {
        Failure::Core(e) => e.message().to_string(),
        Failure::Type(m) => m,
    })?;
    Ok(Some(failed))
}

/// One handler call (of one job, or of a batch): fires the jobs' signals when the core cancels
/// the attempt, and when the call is abandoned (dropped before it settled: `abort()`).
struct Attempt {
    stops: Vec<Arc<JobSignal>>,
    /// The jobs (as the core sees them), in the order of `stops`: whether a cancel was requested.
    jobs: Vec<Arc<tideq::Job>>,
    timeout: Option<Duration>,
    /// Taken before the core starts the attempt's timer, so a timeout is never mistaken for a
    /// shutdown.
    started: Instant,
    settled: bool,
    _running: RunningCall,
}

impl Attempt {
    /// The core cancelled the attempt: its timeout passed, its job's cancel was requested, or
    /// the shutdown grace is over.
    fn cancelled(&self) {
        let reason = match self.timeout {
            Some(t) if self.started.elapsed() >= t => Reason::Timeout(t),
            _ if self.jobs.iter().any(|j| j.cancel_requested()) => Reason::Cancelled,
            _ => Reason::Shutdown,
        };
        for stop in &self.stops {
            stop.fire(reason.clone());
        }
    }

    fn settled(mut self) {
        self.settled = true;
        for stop in &self.stops {
            stop.settle();
        }
    }
}

impl Drop for Attempt {
    fn drop(&mut self) {
        if !self.settled {
            for stop in &self.stops {
                stop.fire(Reason::Abandoned);
            }
        }
    }
}

/// Runs `call` (a handler call for the jobs `stops` belong to) until it settles; when `token`
/// fires first (timeout, end of the shutdown grace), aborts the jobs' signals and keeps waiting.
async fn attempt<T>(
    call: impl std::future::Future<Output = T>,
    token: CancellationToken,
    attempt: Attempt,
) -> T {
    tokio::pin!(call);
    let res = tokio::select! {
        biased;
        res = &mut call => res,
        _ = token.cancelled() => {
            // Told to stop: abort `job.signal` and wait for the handler all the same.
            attempt.cancelled();
            call.await
        }
    };
    attempt.settled();
    res
}

/// Options of `workBatches(handler, options)`: the worker's options plus the batch's. Every
/// field but `size` is optional.
// Declared for the TypeScript definitions only; `convert::Options` reads the fields one by one.
#[allow(dead_code)]
#[napi(object, object_from_js = false, object_to_js = false)]
pub struct BatchWorkerOptions {
    /// Most jobs per handler call; at most `concurrency` (whose default is 10) and at most 1000.
    /// Default 10.
    pub size: Option<u32>,
    /// Longest a leased job waits for its batch to fill (its lease is renewed meanwhile); 0
    /// hands over whatever one fetch brought. Default 0.
    pub wait_ms: Option<f64>,
    /// Jobs (not batches) run at the same time: `concurrency / size` batches at once.
    /// Default 10.
    pub concurrency: Option<u32>,
    /// As in `WorkerOptions`.
    pub lease_ms: Option<f64>,
    /// As in `WorkerOptions`.
    pub poll_interval_ms: Option<f64>,
    /// As in `WorkerOptions`: past it, the batch's jobs' `signal`s are aborted.
    pub grace_ms: Option<f64>,
    /// As in `WorkerOptions`.
    pub stop_when_drained: Option<bool>,
    /// As in `WorkerOptions`.
    pub schedules: Option<bool>,
    /// Called with the error a batch handler threw or rejected with, and the batch's jobs.
    /// Default: `console.error`. Should not throw.
    #[napi(ts_type = "(err: unknown, jobs: Job[]) => void")]
    pub on_error: Option<()>,
}

const BATCH_KEYS: &[&str] = &[
    "size",
    "waitMs",
    "concurrency",
    "leaseMs",
    "pollIntervalMs",
    "graceMs",
    "stopWhenDrained",
    "schedules",
    "onError",
];

/// A JS function called with one job.
type JobFn<'env> = Function<'env, FnArgs<(Job,)>, Unknown<'static>>;

/// What a worker calls: one handler for every job, handlers by task name, or a batch handler.
enum Handlers<'env> {
    One(JobFn<'env>),
    Tasks(Vec<(String, JobFn<'env>)>),
    Batches(
        Function<'env, FnArgs<(Vec<Job>,)>, Unknown<'static>>,
        tideq::BatchOptions,
    ),
}

/// The worker options common to `work`, `run` and `workBatches`, defaults from the core.
fn worker_options(opts: &Options) -> Res<tideq::WorkerOptions> {
    let d = tideq::WorkerOptions::default();
    Ok(tideq::WorkerOptions {
        concurrency: opts.get("concurrency", count1)?.unwrap_or(d.concurrency),
        // A batch worker leases a batch's size per fetch instead.
        batch_size: match opts.knows("batchSize") {
            true => opts.get("batchSize", count)?.unwrap_or(d.batch_size),
            false => d.batch_size,
        },
        lease: opts.get("leaseMs", millis)?.unwrap_or(d.lease),
        poll_interval: opts
            .get("pollIntervalMs", millis)?
            .unwrap_or(d.poll_interval),
        grace: opts.get("graceMs", millis)?.unwrap_or(d.grace),
        stop_when_drained: opts
            .get("stopWhenDrained", boolean)?
            .unwrap_or(d.stop_when_drained),
        schedules: opts.get("schedules", boolean)?.unwrap_or(d.schedules),
    })
}

/// What a job handler returned (or its Promise resolved with), as the job's result: none for
/// `undefined` or `null`, a `Buffer`'s bytes as they are, anything else its JSON. A value with no
/// JSON form fails the attempt with the error text.
struct JobReply(std::result::Result<Option<Vec<u8>>, String>);

impl Reply for JobReply {
    fn read(v: &Unknown) -> Self {
        let env = Env::from_raw(v.value().env);
        JobReply(
            stored_bytes(
                &env,
                "the handler's return value (stored as the job's result)",
                v,
            )
            .map_err(|e| match e {
                Failure::Core(e) => e.message().to_string(),
                Failure::Type(m) => format!("TypeError: {m}"),
            }),
        )
    }
}

/// The core's handler for one job: calls the JS handler `js` with the job and waits for it
/// (its `signal` aborted when the core cancels the attempt); what it returns is the job's
/// result.
fn job_handler(
    js: JsHandler<Leased, FnArgs<(Job,)>, Leased>,
    aborter: Arc<Aborter>,
    running: Running,
) -> tideq::JobHandler {
    // The closure owns the JS functions for as long as the core's worker runs.
    Arc::new(move |job: tideq::Job| -> tideq::JobFuture {
        let job = Arc::new(job);
        let stop = JobSignal::new(&aborter);
        let token = job.cancellation().clone();
        let started = Attempt {
            stops: vec![stop.clone()],
            jobs: vec![job.clone()],
            timeout: job.timeout,
            started: Instant::now(),
            settled: false,
            _running: running.enter(),
        };
        let leased = Leased { job, stop };
        let call = js.call_for::<JobReply>(leased.clone(), leased);
        Box::pin(async move {
            match attempt(call, token, started).await {
                Ok(JobReply(result)) => result,
                Err(error) => Err(error),
            }
        })
    })
}

/// The core's handler for a batch: calls the JS handler with the jobs, and maps what it
/// resolved with (or threw) to the core's batch outcome.
fn batch_handler(
    js: JsHandler<LeasedBatch, FnArgs<(Vec<Job>,)>, LeasedBatch>,
    aborter: Arc<Aborter>,
    running: Running,
) -> tideq::JobBatchHandler {
    Arc::new(move |jobs: Vec<tideq::Job>| -> tideq::BatchFuture {
        // The core cancels a batch's jobs together (its timeout is the smallest of theirs).
        let token = jobs
            .first()
            .map(|j| j.cancellation().clone())
            .unwrap_or_default();
        let timeout = jobs.iter().filter_map(|j| j.timeout).min();
        let batch = LeasedBatch(
            jobs.into_iter()
                .map(|job| Leased {
                    job: Arc::new(job),
                    stop: JobSignal::new(&aborter),
                })
                .collect(),
        );
        let started = Attempt {
            stops: batch.0.iter().map(|l| l.stop.clone()).collect(),
            jobs: batch.0.iter().map(|l| l.job.clone()).collect(),
            timeout,
            started: Instant::now(),
            settled: false,
            _running: running.enter(),
        };
        let call = js.call_for::<BatchReply>(batch.clone(), batch);
        Box::pin(async move {
            match attempt(call, token, started).await {
                Ok(BatchReply::Done) => Ok(()),
                Ok(BatchReply::Failed(failed)) => Err(tideq::BatchError::Jobs(failed)),
                Ok(BatchReply::Bad(why)) => Err(tideq::BatchError::All(why)),
                Err(error) => Err(tideq::BatchError::All(error)),
            }
        })
    })
}

impl Queue {
    /// Reads the handler(s) and options and starts a core worker calling them. Also returns the
    /// count of running handlers and the grace period, for `run()`.
    fn start(
        &self,
        env: &Env,
        handler: &Unknown,
        options: Option<&Unknown>,
        batches: bool,
    ) -> Res<(tideq::Worker, Running, Duration)> {
        let (what, keys) = match batches {
            true => ("workBatches options", BATCH_KEYS),
            false => ("work options", WORK_KEYS),
        };
        let opts = Options::new(what, options, keys)?;
        let worker_opts = worker_options(&opts)?;
        let handlers = if batches {
            let d = tideq::BatchOptions::default();
            let batch = tideq::BatchOptions {
                size: opts.get("size", count1)?.unwrap_or(d.size),
                wait: opts.get("waitMs", millis)?.unwrap_or(d.wait),
            };
            Handlers::Batches(function("handler", handler)?, batch)
        } else if handler.get_type()? == ValueType::Function {
            Handlers::One(function("handler", handler)?)
        } else if handler.get_type()? == ValueType::Object && !handler.is_array()? {
            Handlers::Tasks(task_handlers(env, "handlers", handler)?)
        } else {
            return Err(type_error(format!(
                "the handler must be a function (job) => ... or an object of task handlers \
                 {{ 'task-name': (data, job) => ... }}; got {}",
                describe(handler)
            )));
        };
        let grace = worker_opts.grace;
        let aborter = Aborter::new(env)?;
        let running = Running::default();
        let job_js = |f| {
            JsHandler::<_, _, Leased>::new(
                env,
                f,
                |leased: Leased| FnArgs::from((leased.into_js(),)),
                opts.get("onError", function)?,
            )
        };
        let q = &self.inner;
        let start = || -> Res<tideq::Worker> {
            Ok(match handlers {
                Handlers::One(f) => q.work_boxed(
                    worker_opts,
                    job_handler(job_js(f)?, aborter, running.clone()),
                )?,
                Handlers::Tasks(fs) => {
                    let mut tasks = tideq::Tasks::new();
                    for (name, f) in fs {
                        let h = job_handler(job_js(f)?, aborter.clone(), running.clone());
                        tasks = tasks.boxed(&name, h);
                    }
                    q.work_tasks(worker_opts, tasks)?
                }
                Handlers::Batches(f, batch) => {
                    let js = JsHandler::<_, _, LeasedBatch>::new(
                        env,
                        f,
                        |b: LeasedBatch| FnArgs::from((b.into_js(),)),
                        opts.get("onError", function)?,
                    )?;
                    let h = batch_handler(js, aborter, running.clone());
                    q.work_batches_boxed(worker_opts, batch, h)?
                }
            })
        };
        // The core's workers spawn on the current tokio runtime: napi's.
        let worker = napi::bindgen_prelude::within_runtime_if_available(start)?;
        // The JS handle may be garbage-collected while the worker should run on: the runtime
        // holds it until it has stopped.
        worker.detach();
        Ok((worker, running, grace))
    }
}

#[napi]
impl Queue {
    /// Starts a worker, up to `concurrency` jobs at a time. `handler` is either a function
    /// called with each job, or an object of task handlers by name, `{ 'send-email': (data,
    /// job) => ... }`, each called with the job's decoded `data` for the jobs enqueued with its
    /// name (`enqueueTask(name, data)`); a job with another name, or none, is dead-lettered at once
    /// (not retried) with an error naming the tasks this worker runs. A handler that throws or
    /// rejects fails the attempt: the error is reported (`onError`, else `console.error`), its
    /// text (`name: message`) is stored with the job, and the job is retried after its backoff,
    /// or dead-lettered after `maxAttempts`. A job keeps its slot and its lease until its
    /// handler settles, even past its timeout (`job.signal` is aborted then). What a handler
    /// returns (or its Promise resolves with) is stored as the job's result (`get(id).result`,
    /// `wait(id)`): a `Buffer` as it is, anything else as JSON; `undefined` or `null`, none. A
    /// value with no JSON form, or one over the queue's `maxResultLen`, fails the attempt.
    #[napi(
        ts_args_type = "handler: ((job: Job) => unknown) | Record<string, (data: any, job: Job) => unknown>, options?: WorkerOptions"
    )]
    pub fn work(&self, env: &Env, handler: Unknown, options: Option<Unknown>) -> Result<Worker> {
        let (worker, _, _) = throw(env, self.start(env, &handler, options.as_ref(), false))?;
        Ok(Worker {
            inner: Arc::new(worker),
        })
    }

    /// Starts a worker whose handler gets up to `size` leased jobs at once, as an array. The
    /// handler resolving to `undefined` completes them all; resolving to an object (or `Map`)
    /// `{ [jobId]: error }` (an `Error` or a message) fails those jobs (each retried or
    /// dead-lettered by its own attempts) and completes the rest; throwing or rejecting fails
    /// them all. Each job keeps its own lease (renewed while it waits for its batch and while
    /// the handler runs); the batch's time limit is the smallest of its jobs' `timeoutMs`.
    #[napi(
        ts_args_type = "handler: (jobs: Job[]) => void | Record<string, Error | string> | Map<string, Error | string> | Promise<void | Record<string, Error | string> | Map<string, Error | string>>, options?: BatchWorkerOptions"
    )]
    pub fn work_batches(
        &self,
        env: &Env,
        handler: Unknown,
        options: Option<Unknown>,
    ) -> Result<Worker> {
        let (worker, _, _) = throw(env, self.start(env, &handler, options.as_ref(), true))?;
        Ok(Worker {
            inner: Arc::new(worker),
        })
    }

    /// Runs a worker (a handler function or task handlers, as `work`) until SIGINT or SIGTERM
    /// triggers a graceful shutdown (one line on stderr says how long it waits for how many
    /// running jobs), or until it stops by itself (`stopWhenDrained`). A second SIGINT or
    /// SIGTERM stops it at once, like `abort()`. The listeners (`process.on`) are removed
    /// afterwards. Resolves with its stats; rejects like `Worker.join()`.
    #[napi(
        ts_args_type = "handler: ((job: Job) => unknown) | Record<string, (data: any, job: Job) => unknown>, options?: WorkerOptions",
        ts_return_type = "Promise<WorkerStats>"
    )]
    pub fn run<'env>(
        &self,
        env: &'env Env,
        handler: Unknown,
        options: Option<Unknown>,
    ) -> Result<PromiseRaw<'env, WorkerStats>> {
        self.run_until_signal(env, handler, options, false)
    }

    /// `workBatches()`, run until SIGINT or SIGTERM (or until it stops by itself), as `run()`
    /// does. Resolves with its stats; rejects like `Worker.join()`.
    #[napi(
        ts_args_type = "handler: (jobs: Job[]) => void | Record<string, Error | string> | Map<string, Error | string> | Promise<void | Record<string, Error | string> | Map<string, Error | string>>, options?: BatchWorkerOptions",
        ts_return_type = "Promise<WorkerStats>"
    )]
    pub fn run_batches<'env>(
        &self,
        env: &'env Env,
        handler: Unknown,
        options: Option<Unknown>,
    ) -> Result<PromiseRaw<'env, WorkerStats>> {
        self.run_until_signal(env, handler, options, true)
    }
}

impl Queue {
    fn run_until_signal<'env>(
        &self,
        env: &'env Env,
        handler: Unknown,
        options: Option<Unknown>,
        batches: bool,
    ) -> Result<PromiseRaw<'env, WorkerStats>> {
        let (worker, running, grace) =
            throw(env, self.start(env, &handler, options.as_ref(), batches))?;
        let worker = Arc::new(worker);
        let (stop, abort) = (worker.clone(), worker.clone());
        let stopper = Stopper {
            stop: Rc::new(move || stop.stop()),
            abort: Rc::new(move || abort.abort()),
            running,
            grace,
            what: ("job", "jobs"),
        };
        stop_on_signal(env, stopper, async move {
            let stats = worker.join().await;
            outcome(&worker, stats)
        })
    }
}
