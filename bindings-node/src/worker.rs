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
use crate::convert::{boolean, count, count1, function, millis, Options};
use crate::error::{error_value, spawn, throw, Failure, Res};
use crate::handler::{JsHandler, Running, RunningCall, Subject};
use crate::job::Job;
use crate::jobs::Queue;
use crate::signal::{stop_on_signal, Stopper};

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
    /// On shutdown, how long running jobs may take before their `job.signal` is aborted. The
    /// worker then keeps waiting for their handlers: a job whose handler rejects (or throws) is
    /// returned to the queue, its attempt not counted; one whose handler resolves is completed.
    /// `abort()` stops waiting. Default 10000.
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
    /// Jobs returned to the queue at shutdown, their handler having stopped (rejected or thrown)
    /// after the grace period.
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
    /// queue: not a failure.
    fn reported(&self) -> bool {
        !self.stop.stopped_for_shutdown()
    }

    fn headline(&self) -> String {
        let j = &self.job;
        format!(
            "tideq: handler failed on job {:?} of queue {:?} (attempt {} of {}):",
            j.id, j.queue, j.attempt, j.max_attempts
        )
    }
}

/// One attempt's handler call: fires the job's signal when the core cancels the attempt, and
/// when the call is abandoned (dropped before it settled: `abort()`).
struct Attempt {
    stop: Arc<JobSignal>,
    timeout: Option<Duration>,
    /// Taken before the core starts the attempt's timer, so a timeout is never mistaken for a
    /// shutdown.
    started: Instant,
    settled: bool,
    _running: RunningCall,
}

impl Attempt {
    /// The core cancelled the attempt: its timeout passed, or the shutdown grace is over.
    fn cancelled(&self) {
        let reason = match self.timeout {
            Some(t) if self.started.elapsed() >= t => Reason::Timeout(t),
            _ => Reason::Shutdown,
        };
        self.stop.fire(reason);
    }

    fn settled(mut self) {
        self.settled = true;
        self.stop.settle();
    }
}

impl Drop for Attempt {
    fn drop(&mut self) {
        if !self.settled {
            self.stop.fire(Reason::Abandoned);
        }
    }
}

impl Queue {
    /// Reads the handler and options and starts a core worker calling the handler. Also returns
    /// the count of running handlers and the grace period, for `run()`.
    fn start(
        &self,
        env: &Env,
        handler: &Unknown,
        options: Option<&Unknown>,
    ) -> Res<(tideq::Worker, Running, Duration)> {
        let handler = function("handler", handler)?;
        let opts = Options::new("work options", options, WORK_KEYS)?;
        let d = tideq::WorkerOptions::default();
        let worker_opts = tideq::WorkerOptions {
            concurrency: opts.get("concurrency", count1)?.unwrap_or(d.concurrency),
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
        let grace = worker_opts.grace;
        let js = JsHandler::<_, _, Leased>::new(
            env,
            handler,
            |leased: Leased| FnArgs::from((Job::new(leased.job, leased.stop),)),
            opts.get("onError", function)?,
        )?;
        let aborter = Aborter::new(env)?;
        let running = Running::default();
        let counted = running.clone();
        // The closure owns the JS functions for as long as the core's worker runs.
        let boxed: tideq::JobHandler = Arc::new(move |job: tideq::Job| -> tideq::JobFuture {
            let job = Arc::new(job);
            let stop = JobSignal::new(&aborter);
            let token = job.cancellation().clone();
            let attempt = Attempt {
                stop: stop.clone(),
                timeout: job.timeout,
                started: Instant::now(),
                settled: false,
                _running: counted.enter(),
            };
            let leased = Leased { job, stop };
            let call = js.call(leased.clone(), leased);
            Box::pin(async move {
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
            })
        });
        // `work_boxed` spawns on the current tokio runtime: napi's.
        let worker = napi::bindgen_prelude::within_runtime_if_available(|| {
            self.inner.work_boxed(worker_opts, boxed)
        })?;
        Ok((worker, running, grace))
    }
}

#[napi]
impl Queue {
    /// Starts a worker calling `handler(job)` for each job, up to `concurrency` at a time. A
    /// handler that throws or rejects fails the attempt: the error is reported (`onError`, else
    /// `console.error`), its text (`name: message`) is stored with the job, and the job is
    /// retried after its backoff, or dead-lettered after `maxAttempts`. A job keeps its slot and
    /// its lease until its handler settles, even past its timeout (`job.signal` is aborted then).
    #[napi(ts_args_type = "handler: (job: Job) => void | Promise<void>, options?: WorkerOptions")]
    pub fn work(&self, env: &Env, handler: Unknown, options: Option<Unknown>) -> Result<Worker> {
        let (worker, _, _) = throw(env, self.start(env, &handler, options.as_ref()))?;
        Ok(Worker {
            inner: Arc::new(worker),
        })
    }

    /// Runs a worker until SIGINT or SIGTERM triggers a graceful shutdown (a line on stderr says
    /// how long it waits for how many running jobs), or until it stops by itself
    /// (`stopWhenDrained`). A second SIGINT or SIGTERM stops it at once, like `abort()`. The
    /// listeners (`process.on`) are removed afterwards. Resolves with its stats; rejects like
    /// `Worker.join()`.
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
        let (worker, running, grace) = throw(env, self.start(env, &handler, options.as_ref()))?;
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
