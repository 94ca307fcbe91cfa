//! Workers: wraps `tideq::Worker` (`Queue::work_boxed`) and adds `Queue.work`/`run`. The core
//! owns the fetch loop, concurrency, leases and their renewal, timeouts, retries and shutdown;
//! the binding reads the options and hands the core a handler that calls the JS one
//! ([`crate::handler`]), whose error text the core stores with the failed job.
//!
//! Leases: renewal runs on a core thread beside the handler and never needs the JS thread,
//! so a handler that blocks the event loop (a sync busy loop) keeps its lease.
//!
//! Stopping: the core never drops a handler's future before it completes; when it cancels an
//! attempt (timeout, or the end of the shutdown grace) [`run`] aborts the job's `signal`
//! ([`crate::abort`]) and keeps waiting for the handler's Promise. Only `abort()` abandons it.
//!
//! Files: this one holds `Worker` and `Queue.work`/`workBatches`/`run`/`runBatches`;
//! [`crate::serve`] runs several workers as a process's main loop;
//! [`run`] the handler calls (one job or a batch, and their cancellation); the options are read
//! in [`crate::options`], `WorkerStats` is in [`crate::results`].

mod run;

use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use napi::bindgen_prelude::*;
use napi::ValueType;
use napi_derive::napi;

use crate::abort::Aborter;
use crate::convert::{count1, describe, entries, function, millis, object, Options};
use crate::error::{error_value, spawn, throw, type_error, Failure, Res};
use crate::handler::{JsHandler, Running, Subject};
use crate::job::Job;
use crate::jobs::Queue;
use crate::options::{worker_options, BATCH_KEYS, WORK_KEYS};
use crate::results::WorkerStats;
use crate::signal::{stop_on_signal, Stopper};
use crate::task::task_handlers;
use run::{batch_handler, job_handler, Leased, LeasedBatch};

/// A running worker. Dropping it does not stop it: call `shutdown()`. While it runs it keeps
/// the process alive (like a listening server); after it has stopped it no longer does.
///
/// What it retries (Redis unreachable, a lost lease, a damaged record) is printed on stderr as
/// `tideq: ...` lines, at most one line per cause every 5 seconds. The environment variable
/// `TIDEQ_LOG` sets how much: `off`, `error`, `warn` (the default), `info` or `debug`.
#[napi]
pub struct Worker {
    pub(crate) inner: Arc<tideq::Worker>,
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

    /// Whether the worker is connected and leasing: true once its latest fetch on every shard of
    /// the queue succeeded; false before its first fetch, from a failed fetch (Redis down, say)
    /// until the next one that works, and once it stops leasing (stopping, or its `maxJobs`
    /// reached). What a readiness probe asks (`serve`'s `/readyz`).
    #[napi]
    pub fn is_ready(&self) -> bool {
        self.inner.is_ready()
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
    #[napi(getter, ts_return_type = "TideqError | null")]
    pub fn error<'env>(&self, env: &'env Env) -> Result<Option<Unknown<'env>>> {
        self.inner
            .error()
            .map(|e| error_value(env, Failure::Core(e)))
            .transpose()
    }
}

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

/// The handlers of the test modes (`TestMode.drain`, `TestMode.inline`): `handlers` maps queue
/// names to one job handler `(job) => ...` or an object of task handlers, each read and called
/// as `work` reads and calls its handler. Failures go to `on_error`, else nowhere (they are
/// recorded with the job). `referenced: false` for handlers a mode keeps: they do not keep the
/// process alive.
pub(crate) fn test_handlers(
    env: &Env,
    handlers: &Unknown,
    on_error: Option<&Unknown>,
    referenced: bool,
) -> Res<tideq::testing::Handlers> {
    let obj = object("handlers", handlers)?;
    let mut queues = Vec::new();
    entries("handlers", &obj, None, |name, value| {
        queues.push((name, value));
        Ok(())
    })?;
    let aborter = match referenced {
        true => Aborter::new(env)?,
        false => Aborter::unreferenced(env)?,
    };
    let running = Running::default();
    // No `onError`: a function that does nothing (`Object`, called with the error and job).
    let quiet: Unknown = env.get_global()?.get_named_property("Object")?;
    let on_error = on_error.unwrap_or(&quiet);
    let handler = |f: JobFn| -> Res<tideq::JobHandler> {
        let mut js = JsHandler::<_, _, Leased>::new(
            env,
            f,
            |leased: Leased| FnArgs::from((leased.into_js(),)),
            Some(function("onError", on_error)?),
        )?
        .reading_verdicts(env)?;
        if !referenced {
            js = js.unreferenced(env)?;
        }
        Ok(job_handler(js, aborter.clone(), running.clone()))
    };
    let mut out = tideq::testing::Handlers::new();
    for (queue, value) in queues {
        let what = format!("handlers[{queue:?}]");
        out = match value.get_type()? {
            ValueType::Function => out.raw_boxed(&queue, handler(function(&what, &value)?)?),
            ValueType::Object if !value.is_array()? => {
                let mut tasks = tideq::Tasks::new();
                for (name, f) in task_handlers(env, &what, &value)? {
                    tasks = tasks.boxed(&name, handler(f)?);
                }
                out.tasks(&queue, tasks)
            }
            _ => {
                return Err(type_error(format!(
                    "{what} must be a job handler (job) => ... or an object of task handlers \
                     {{ 'task-name': (args, job) => ... }}; got {}",
                    describe(&value)
                )))
            }
        };
    }
    Ok(out)
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
            )?
            .reading_verdicts(env)
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
        ts_args_type = "handler: ((job: Job) => unknown) | Record<string, TaskHandler>, options?: WorkerOptions"
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
        ts_args_type = "handler: ((job: Job) => unknown) | Record<string, TaskHandler>, options?: WorkerOptions",
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
