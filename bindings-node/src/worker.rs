//! Workers: wraps `tideq::Worker` (`Queue::work_boxed`) and adds `Queue.work`/`run`. The core
//! owns the fetch loop, concurrency, leases and their renewal, timeouts, retries and shutdown;
//! this file reads the options and hands the core a handler that calls the JS one
//! ([`crate::handler`]), whose error text the core stores with the failed job.
//!
//! Leases: renewal runs on a core thread beside the handler and never needs the JS thread,
//! so a handler that blocks the event loop (a sync busy loop) keeps its lease.

use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi_derive::napi;

use crate::convert::{boolean, count, function, millis, Options};
use crate::error::{throw, Res};
use crate::handler::{JsHandler, Subject};
use crate::job::Job;
use crate::jobs::Queue;
use crate::signal::stop_on_signal;

/// Options of `work(handler, options)` and `run(handler, options)`. Every field is optional.
// Declared for the TypeScript definitions only; `convert::Options` reads the fields one by one.
#[allow(dead_code)]
#[napi(object, object_from_js = false, object_to_js = false)]
pub struct WorkerOptions {
    /// Jobs run at the same time. Default 10.
    pub concurrency: Option<u32>,
    /// Most jobs leased per fetch; 0: half the concurrency (two fetches are kept in flight).
    /// Default 0.
    pub batch_size: Option<u32>,
    /// Lease length: a job whose worker stops renewing is redelivered this long after the last
    /// renewal. Renewed every `leaseMs / 3` while the handler runs (from a Rust thread: a
    /// handler blocking the event loop keeps its lease). At least 30. Default 30000.
    pub lease_ms: Option<f64>,
    /// Longest idle wait before looking again (producers usually wake idle workers sooner).
    /// At least 10. Default 5000.
    pub poll_interval_ms: Option<f64>,
    /// On shutdown, how long running jobs may take; unfinished ones are then returned to the
    /// queue at once (not counted as an attempt). Default 10000.
    pub grace_ms: Option<f64>,
    /// Stop by itself once nothing is ready, delayed or active.
    pub stop_when_drained: Option<bool>,
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
    /// Jobs returned to the queue at shutdown, unfinished.
    pub released: i64,
    /// Fetches or waits that failed (e.g. Redis unreachable); the worker retried with backoff.
    pub fetch_errors: i64,
}

impl From<tideq::WorkerStats> for WorkerStats {
    fn from(s: tideq::WorkerStats) -> Self {
        WorkerStats {
            completed: s.completed as i64,
            failed: s.failed as i64,
            lease_lost: s.lease_lost as i64,
            released: s.released as i64,
            fetch_errors: s.fetch_errors as i64,
        }
    }
}

/// A running worker. Dropping it does not stop it: call `shutdown()`. While it runs it keeps
/// the process alive (like a listening server); after it has stopped it no longer does.
#[napi]
pub struct Worker {
    inner: Arc<tideq::Worker>,
}

#[napi]
impl Worker {
    /// Asks the worker to stop fetching; running jobs get the grace period, then unfinished ones
    /// are returned to the queue.
    #[napi]
    pub fn stop(&self) {
        self.inner.stop();
    }

    /// Resolves with the stats once the worker has stopped (after `stop()`, or by itself with
    /// `stopWhenDrained`).
    #[napi(ts_return_type = "Promise<WorkerStats>")]
    pub fn join<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, WorkerStats>> {
        let w = self.inner.clone();
        env.spawn_future(async move { Ok(WorkerStats::from(w.join().await)) })
    }

    /// Stops and waits: no new jobs; running jobs finish within the grace period, unfinished
    /// ones are returned to the queue at once.
    #[napi(ts_return_type = "Promise<WorkerStats>")]
    pub fn shutdown<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, WorkerStats>> {
        let w = self.inner.clone();
        env.spawn_future(async move { Ok(WorkerStats::from(w.shutdown().await)) })
    }

    /// What the worker has done so far.
    #[napi]
    pub fn stats(&self) -> WorkerStats {
        self.inner.stats().into()
    }

    /// True until the fetch loop has ended and running jobs have finished or been returned.
    #[napi(getter)]
    pub fn running(&self) -> bool {
        self.inner.is_running()
    }
}

/// A failed job is reported with the job itself: `onError(err, job)`.
impl Subject for Arc<tideq::Job> {
    type Js = Job;

    fn into_js(self) -> Job {
        Job::from(self)
    }

    fn headline(&self) -> String {
        format!(
            "tideq: handler failed on job {:?} of queue {:?} (attempt {} of {}):",
            self.id, self.queue, self.attempt, self.max_attempts
        )
    }
}

impl Queue {
    /// Reads the handler and options and starts a core worker calling the handler.
    fn start(&self, env: &Env, handler: &Unknown, options: Option<&Unknown>) -> Res<tideq::Worker> {
        let handler = function("handler", handler)?;
        let opts = Options::new("work options", options, WORK_KEYS)?;
        let d = tideq::WorkerOptions::default();
        let worker_opts = tideq::WorkerOptions {
            concurrency: opts.get("concurrency", count)?.unwrap_or(d.concurrency),
            batch_size: opts.get("batchSize", count)?.unwrap_or(d.batch_size),
            lease: opts.get("leaseMs", millis)?.unwrap_or(d.lease),
            poll_interval: opts
                .get("pollIntervalMs", millis)?
                .unwrap_or(d.poll_interval),
            grace: opts.get("graceMs", millis)?.unwrap_or(d.grace),
            stop_when_drained: opts
                .get("stopWhenDrained", boolean)?
                .unwrap_or(d.stop_when_drained),
        };
        let js = JsHandler::<_, _, Arc<tideq::Job>>::new(
            env,
            handler,
            |job: Arc<tideq::Job>| FnArgs::from((Job::from(job),)),
            opts.get("onError", function)?,
        )?;
        // The closure owns the JS functions for as long as the core's worker runs.
        let boxed: tideq::JobHandler = Arc::new(move |job: tideq::Job| -> tideq::JobFuture {
            let job = Arc::new(job);
            Box::pin(js.call(job.clone(), job))
        });
        // `work_boxed` spawns on the current tokio runtime: napi's.
        Ok(napi::bindgen_prelude::within_runtime_if_available(|| {
            self.inner.work_boxed(worker_opts, boxed)
        })?)
    }
}

#[napi]
impl Queue {
    /// Starts a worker calling `handler(job)` for each job, up to `concurrency` at a time. A
    /// handler that throws or rejects fails the attempt: the error is reported (`onError`, else
    /// `console.error`), its text (`name: message`) is stored with the job, and the job is
    /// retried after its backoff, or dead-lettered after `maxAttempts`.
    #[napi(ts_args_type = "handler: (job: Job) => void | Promise<void>, options?: WorkerOptions")]
    pub fn work(&self, env: &Env, handler: Unknown, options: Option<Unknown>) -> Result<Worker> {
        let worker = throw(env, self.start(env, &handler, options.as_ref()))?;
        Ok(Worker {
            inner: Arc::new(worker),
        })
    }

    /// Runs a worker until SIGINT or SIGTERM (listened to with `process.once`; the listeners are
    /// removed afterwards) triggers a graceful shutdown, or until it stops by itself
    /// (`stopWhenDrained`). Resolves with its stats.
    #[napi(
        ts_args_type = "handler: (job: Job) => void | Promise<void>, options?: WorkerOptions",
        ts_return_type = "Promise<WorkerStats>"
    )]
    pub fn run<'env>(
        &self,
        env: &'env Env,
        handler: Unknown,
        options: Option<Unknown>,
    ) -> Result<PromiseRaw<'env, WorkerStats>> {
        let worker = Arc::new(throw(env, self.start(env, &handler, options.as_ref()))?);
        let stop = worker.clone();
        stop_on_signal(env, move || stop.stop(), async move {
            WorkerStats::from(worker.join().await)
        })
    }
}
