//! Workers: wraps `tideq::Worker` (`Queue::work_boxed`). The core owns the fetch loop,
//! concurrency, leases and their renewal, timeouts, retries and shutdown; this file only calls
//! the JS handler through a `ThreadsafeFunction`, awaits the Promise it may return, turns a
//! thrown or rejected error into the text the core stores, reports it (`onError` or
//! `console.error`), and (for `run`) hooks SIGINT/SIGTERM with `process.once`.
//!
//! Leases: renewal runs on a core thread beside the handler and never needs the JS thread,
//! so a handler that blocks the event loop (a sync busy loop) keeps its lease.
//!
//! Keeping the process alive: the handler's and reporter's `ThreadsafeFunction`s are referenced
//! and owned by the handler closure the core's worker task holds, so a running worker keeps
//! Node's event loop alive, like a server socket. The future of each job holds them only weakly
//! while it waits for the JS Promise: a handler that never settles (abandoned after a timeout or
//! at shutdown) does not keep the process alive once the worker has stopped.

use std::sync::{Arc, Weak};

use napi::bindgen_prelude::*;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::{JsValue, Property, PropertyAttributes, ValueType};
use napi_derive::napi;
use tokio::sync::oneshot;

use crate::consumer::function;
use crate::convert::{boolean, count, millis, Options};
use crate::errors::{throw, Failure, Res};
use crate::jobs::{Bytes, Queue};
use crate::signals::SignalHooks;

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

/// A leased job, as a handler receives it. Read-only.
#[napi]
pub struct Job {
    inner: Arc<tideq::Job>,
}

#[napi]
impl Job {
    #[napi(getter)]
    pub fn id(&self) -> String {
        self.inner.id.clone()
    }

    /// The payload's bytes (made on first read; later reads return the same Buffer).
    #[napi(getter, ts_return_type = "Buffer")]
    pub fn payload<'env>(&self, env: &'env Env, mut this: This<'env>) -> Result<BufferSlice<'env>> {
        let buf = BufferSlice::copy_from(env, &self.inner.payload)?;
        // An own data property shadows this getter from now on.
        this.define_properties(&[Property::new()
            .with_utf8_name("payload")?
            .with_value(&buf)
            .with_property_attributes(PropertyAttributes::Enumerable)])?;
        Ok(buf)
    }

    /// 1 on the first delivery.
    #[napi(getter)]
    pub fn attempt(&self) -> u32 {
        self.inner.attempt
    }

    #[napi(getter)]
    pub fn max_attempts(&self) -> u32 {
        self.inner.max_attempts
    }

    /// When the job was enqueued: ms since the epoch, Redis clock.
    #[napi(getter)]
    pub fn enqueued_at(&self) -> f64 {
        self.inner.enqueued_at as f64
    }

    /// The queue's name.
    #[napi(getter)]
    pub fn queue(&self) -> String {
        self.inner.queue.clone()
    }

    /// This attempt's time limit in ms, `null` when it has none.
    #[napi(getter)]
    pub fn timeout_ms(&self) -> Option<f64> {
        self.inner.timeout.map(|t| t.as_secs_f64() * 1000.0)
    }

    /// The payload as UTF-8 text; throws `INVALID_ARGUMENT` if it is not valid UTF-8.
    #[napi]
    pub fn text(&self, env: &Env) -> Result<String> {
        throw(
            env,
            self.inner
                .payload_str()
                .map(str::to_owned)
                .map_err(Failure::from),
        )
    }

    /// The job's fields without the payload, for loggers and `JSON.stringify(job)`.
    #[napi(js_name = "toJSON")]
    pub fn to_json(&self) -> JobView {
        self.view()
    }

    /// The payload parsed as JSON (`JSON.parse(job.text())`).
    #[napi(ts_return_type = "any")]
    pub fn json<'env>(&self, env: &'env Env) -> Result<Unknown<'env>> {
        let text = self.text(env)?;
        let json: Object = env.get_global()?.get_named_property("JSON")?;
        let parse: Function<String, Unknown> = json.get_named_property("parse")?;
        parse.call(text)
    }
}

/// A job's fields as a plain object (no payload): `job.toJSON()`, for loggers and
/// `JSON.stringify(job)`.
#[napi(object, object_from_js = false, use_nullable = true)]
pub struct JobView {
    pub id: String,
    pub queue: String,
    pub attempt: u32,
    pub max_attempts: u32,
    pub enqueued_at: f64,
    pub timeout_ms: Option<f64>,
}

impl Job {
    fn view(&self) -> JobView {
        let j = &self.inner;
        JobView {
            id: j.id.clone(),
            queue: j.queue.clone(),
            attempt: j.attempt,
            max_attempts: j.max_attempts,
            enqueued_at: j.enqueued_at as f64,
            timeout_ms: self.timeout_ms(),
        }
    }
}

/// Gives `Job` a readable `console.log`/`util.inspect` form (its fields and payload) through
/// `Symbol.for('nodejs.util.inspect.custom')`; the getters alone would print `Job {}`.
// Registered with Node at load time; a `cargo test` build sees no caller.
#[cfg_attr(test, allow(dead_code))]
#[napi(module_exports)]
pub fn job_inspect(exports: Object, env: Env) -> Result<()> {
    // Cosmetic: never let it stop the addon from loading.
    let _ = add_job_inspect(&exports, &env);
    Ok(())
}

#[cfg_attr(test, allow(dead_code))]
fn add_job_inspect(exports: &Object, env: &Env) -> Result<()> {
    let class: Function<(), ()> = exports.get_named_property("Job")?;
    let mut proto: Object = class.get_named_property("prototype")?;
    let symbol: Function<(), ()> = env.get_global()?.get_named_property("Symbol")?;
    let symbol_for: Function<&str, Unknown> = symbol.get_named_property("for")?;
    let key = symbol_for.call("nodejs.util.inspect.custom")?;
    // `console.log(job)` shows `toJSON()` plus the payload.
    let inspect = env.create_function_from_closure::<(), Object, _>("inspect", |ctx| {
        let this: ClassInstance<Job> = ctx.this()?;
        let raw = unsafe { JobView::to_napi_value(ctx.env.raw(), this.view())? };
        let mut view = Object::from_raw(ctx.env.raw(), raw);
        view.set_named_property("payload", Bytes(this.inner.payload.clone()))?;
        Ok(view)
    })?;
    proto.set_property(key, inspect)
}

/// The JS handler: called with the job, returns anything (a Promise is awaited).
type HandlerFn =
    ThreadsafeFunction<Arc<tideq::Job>, Unknown<'static>, FnArgs<(Job,)>, Status, false>;

/// A handler failure on its way to JS, and where to send the error's text.
struct Report {
    error: napi::Error,
    job: Arc<tideq::Job>,
    text: oneshot::Sender<String>,
}

/// The text the core stores for a thrown or rejected value: `name: message` for an error
/// (`Error: boom`, `TypeError: x is undefined`), `String(value)` for anything else.
fn error_text(v: &Unknown) -> String {
    let as_string = |v: &Unknown| -> Option<String> {
        if v.get_type().ok()? != ValueType::String {
            return None;
        }
        crate::convert::read_value::<String>(v).ok()
    };
    match v.get_type() {
        Ok(ValueType::Object) | Ok(ValueType::Function) => {
            if let Ok(obj) = crate::convert::read_value::<Object>(v) {
                let message = obj
                    .get_named_property::<Unknown>("message")
                    .ok()
                    .and_then(|m| as_string(&m));
                if let Some(message) = message {
                    let name = obj
                        .get_named_property::<Unknown>("name")
                        .ok()
                        .and_then(|n| as_string(&n))
                        .unwrap_or_else(|| "Error".into());
                    return match (name.is_empty(), message.is_empty()) {
                        (_, true) => name,
                        (true, false) => message,
                        (false, false) => format!("{name}: {message}"),
                    };
                }
            }
        }
        Ok(ValueType::Symbol) => return "a Symbol was thrown".into(),
        _ => {}
    }
    v.coerce_to_string()
        .and_then(|s| s.into_utf8()?.into_owned())
        .unwrap_or_else(|_| "the handler failed with a value that has no text".into())
}

/// Turns the reported error into a JS value and sends its text back; returns the value.
fn reported_value(env: &Env, report: Report) -> Result<(Unknown<'static>, Arc<tideq::Job>)> {
    let raw = unsafe { napi::Error::to_napi_value(env.raw(), report.error)? };
    let value: Unknown<'static> = unsafe { Unknown::from_raw_unchecked(env.raw(), raw) };
    let _ = report.text.send(error_text(&value));
    Ok((value, report.job))
}

/// Where handler errors go: the user's `onError(err, job)`, or `console.error`.
enum Reporter {
    User(
        ThreadsafeFunction<
            Report,
            Unknown<'static>,
            FnArgs<(Unknown<'static>, Job)>,
            Status,
            false,
        >,
    ),
    Console(
        ThreadsafeFunction<
            Report,
            Unknown<'static>,
            FnArgs<(String, Unknown<'static>)>,
            Status,
            false,
        >,
    ),
}

impl Reporter {
    /// Reports `error` on the JS thread, waits until the reporter has run, and returns the
    /// error's text (`error.reason` if JS could not be reached).
    async fn report(&self, error: napi::Error, job: Arc<tideq::Job>) -> String {
        let fallback = error.reason.clone();
        let (text_tx, text_rx) = oneshot::channel::<String>();
        let (done_tx, done_rx) = oneshot::channel::<()>();
        let done = move |res: Result<Unknown<'static>>, _env: Env| {
            let _ = done_tx.send(());
            // An error thrown by `onError` itself surfaces as an uncaught exception.
            res.map(|_| ())
        };
        let report = Report {
            error,
            job,
            text: text_tx,
        };
        let status = match self {
            Reporter::User(f) => {
                f.call_with_return_value(report, ThreadsafeFunctionCallMode::NonBlocking, done)
            }
            Reporter::Console(f) => {
                f.call_with_return_value(report, ThreadsafeFunctionCallMode::NonBlocking, done)
            }
        };
        if status != Status::Ok {
            return fallback;
        }
        let text = text_rx.await.unwrap_or(fallback);
        let _ = done_rx.await;
        text
    }
}

/// Calls the JS handler for one job and waits for it (and for its Promise, if it returns one).
/// Holds the handler only for the call itself, not while waiting for the Promise.
async fn call_handler(
    handler: &Weak<HandlerFn>,
    job: Arc<tideq::Job>,
) -> std::result::Result<(), napi::Error> {
    let Some(handler) = handler.upgrade() else {
        return Err(napi::Error::new(
            Status::GenericFailure,
            "tideq: the worker stopped before the handler was called",
        ));
    };
    let (tx, rx) = oneshot::channel::<Result<Option<Promise<()>>>>();
    let status = handler.call_with_return_value(
        job,
        ThreadsafeFunctionCallMode::NonBlocking,
        move |ret: Result<Unknown<'static>>, env: Env| {
            // A sync handler's return value is ignored; only a Promise is awaited.
            let outcome = ret.and_then(|v| {
                if v.is_promise()? {
                    Ok(Some(unsafe {
                        Promise::<()>::from_napi_value(env.raw(), v.raw())
                    }?))
                } else {
                    Ok(None)
                }
            });
            let _ = tx.send(outcome);
            Ok(())
        },
    );
    drop(handler);
    if status != Status::Ok {
        return Err(napi::Error::new(
            Status::GenericFailure,
            format!("tideq: the handler could not be called ({status})"),
        ));
    }
    match rx.await {
        Ok(Ok(Some(promise))) => promise.await,
        Ok(Ok(None)) => Ok(()),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(napi::Error::new(
            Status::GenericFailure,
            "tideq: the handler call was dropped (is the process exiting?)",
        )),
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

impl Queue {
    /// Reads the handler and options and starts a core worker calling the handler.
    fn start(&self, env: &Env, handler: &Unknown, options: Option<&Unknown>) -> Res<tideq::Worker> {
        let handler: Function<FnArgs<(Job,)>, Unknown<'static>> = function("handler", handler)?;
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
        let reporter = match opts.get("onError", |what, v| {
            function::<FnArgs<(Unknown<'static>, Job)>>(what, v)
        })? {
            Some(on_error) => Reporter::User(
                on_error
                    .build_threadsafe_function::<Report>()
                    .callee_handled::<false>()
                    .build_callback(|ctx| {
                        let (err, job) = reported_value(&ctx.env, ctx.value)?;
                        Ok(FnArgs::from((err, Job { inner: job })))
                    })?,
            ),
            None => {
                let console: Object = env.get_global()?.get_named_property("console")?;
                let error: Function<FnArgs<(String, Unknown<'static>)>, Unknown<'static>> =
                    console.get_named_property("error")?;
                Reporter::Console(
                    error
                        .build_threadsafe_function::<Report>()
                        .callee_handled::<false>()
                        .build_callback(|ctx| {
                            let (err, job) = reported_value(&ctx.env, ctx.value)?;
                            Ok(FnArgs::from((
                                format!(
                                    "tideq: handler failed on job {:?} of queue {:?} (attempt {} of {}):",
                                    job.id, job.queue, job.attempt, job.max_attempts
                                ),
                                err,
                            )))
                        })?,
                )
            }
        };
        let handler: Arc<HandlerFn> = Arc::new(
            handler
                .build_threadsafe_function::<Arc<tideq::Job>>()
                .callee_handled::<false>()
                .build_callback(|ctx| Ok(FnArgs::from((Job { inner: ctx.value },))))?,
        );
        let reporter = Arc::new(reporter);
        // The closure owns the (referenced) functions for as long as the core's worker runs;
        // each job's future only borrows them weakly.
        let boxed: tideq::JobHandler = Arc::new(move |job: tideq::Job| {
            let handler = Arc::downgrade(&handler);
            let reporter = Arc::downgrade(&reporter);
            let fut: tideq::JobFuture = Box::pin(async move {
                let job = Arc::new(job);
                match call_handler(&handler, job.clone()).await {
                    Ok(()) => Ok(()),
                    Err(error) => Err(match reporter.upgrade() {
                        Some(r) => r.report(error, job).await,
                        None => error.reason,
                    }),
                }
            });
            fut
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
        let hooks =
            SignalHooks::install(env, move || stop.stop()).inspect_err(|_| worker.stop())?;
        env.spawn_future_with_callback(async move { Ok(worker.join().await) }, move |env, stats| {
            hooks.remove(env)?;
            Ok(WorkerStats::from(stats))
        })
    }
}
