//! Consumers: wraps `tideq::Consumer`. The core owns the fetch loop, concurrency and shutdown;
//! this file only calls the JS handler through a `ThreadsafeFunction` and awaits the Promise it
//! may return, reports handler errors, and (for `run`) hooks SIGINT/SIGTERM with `process.once`.
//!
//! Keeping the process alive: the handler's `ThreadsafeFunction` is referenced (not weak), so a
//! running consumer keeps Node's event loop alive, like a server socket. It is owned by the
//! core's consumer task and released when that task ends (after `stop()`/`shutdown()` and the
//! grace period, or by itself with `stopWhenEmpty`), so the process can exit after shutdown.

use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::JsValue;
use napi_derive::napi;
use tokio::sync::oneshot;

use crate::capped::{CappedQueue, Items};
use crate::convert::{boolean, count, describe, is_function, millis, read_value, strings, Options};
use crate::errors::{throw, type_error, Res};
use crate::signals::SignalHooks;

/// Options of `consume(handler, options)` and `run(handler, options)`. Every field is optional.
// Declared for the TypeScript definitions only; `convert::Options` reads the fields one by one.
#[allow(dead_code)]
#[napi(object, object_from_js = false, object_to_js = false)]
pub struct ConsumeOptions {
    /// Batches handled at the same time. Default 1.
    pub concurrency: Option<u32>,
    /// Most items per batch. Default 128.
    pub batch_size: Option<u32>,
    /// Serve only these groups (a consumer dedicated to hot groups).
    pub groups: Option<Vec<String>>,
    /// Groups a general consumer skips (those served by dedicated consumers).
    pub exclude: Option<Vec<String>>,
    /// Longest single wait for new data before looking again. Default 2000.
    pub poll_interval_ms: Option<f64>,
    /// On shutdown, how long running handlers may take before they are abandoned. Default 10000.
    pub grace_ms: Option<f64>,
    /// Stop by itself once no group has data and no handler is running.
    pub stop_when_empty: Option<bool>,
    /// Called with a handler's error (thrown or rejected) and the batch's group. Default: the
    /// error and its stack are printed with `console.error`. Should not throw: an error thrown
    /// here becomes an uncaught exception.
    #[napi(ts_type = "(err: unknown, group: string) => void")]
    pub on_error: Option<()>,
}

const CONSUME_KEYS: &[&str] = &[
    "concurrency",
    "batchSize",
    "groups",
    "exclude",
    "pollIntervalMs",
    "graceMs",
    "stopWhenEmpty",
    "onError",
];

/// What a consumer has done so far (this process only).
#[napi(object, object_from_js = false)]
pub struct ConsumerStats {
    /// Batches whose handler has finished, successfully or not (not those abandoned at shutdown).
    pub batches: i64,
    /// Items in those batches.
    pub items: i64,
    /// Batches whose handler threw or rejected (their items are gone: at-most-once).
    pub failed: i64,
    /// Fetches that failed (e.g. Redis unreachable); the consumer retried with backoff.
    pub fetch_errors: i64,
}

impl From<tideq::ConsumerStats> for ConsumerStats {
    fn from(s: tideq::ConsumerStats) -> Self {
        ConsumerStats {
            batches: s.batches as i64,
            items: s.items as i64,
            failed: s.failed as i64,
            fetch_errors: s.fetch_errors as i64,
        }
    }
}

/// The JS handler: called with `(group, items)`, returns anything (a Promise is awaited).
type HandlerFn =
    ThreadsafeFunction<tideq::Batch, Unknown<'static>, FnArgs<(String, Items)>, Status, false>;

/// A handler failure on its way to JS.
struct Report {
    error: napi::Error,
    group: String,
    items: usize,
}

/// Where handler errors go: the user's `onError(err, group)`, or `console.error`.
enum Reporter {
    User(
        ThreadsafeFunction<Report, Unknown<'static>, FnArgs<(napi::Error, String)>, Status, false>,
    ),
    Console(
        ThreadsafeFunction<Report, Unknown<'static>, FnArgs<(String, napi::Error)>, Status, false>,
    ),
}

impl Reporter {
    /// Calls the reporter on the JS thread and waits until it has run.
    async fn report(&self, report: Report) {
        let (tx, rx) = oneshot::channel::<()>();
        let done = move |res: Result<Unknown<'static>>, _env: Env| {
            let _ = tx.send(());
            // An error thrown by `onError` itself surfaces as an uncaught exception.
            res.map(|_| ())
        };
        let status = match self {
            Reporter::User(f) => {
                f.call_with_return_value(report, ThreadsafeFunctionCallMode::NonBlocking, done)
            }
            Reporter::Console(f) => {
                f.call_with_return_value(report, ThreadsafeFunctionCallMode::NonBlocking, done)
            }
        };
        if status == Status::Ok {
            let _ = rx.await;
        }
    }
}

/// Calls the JS handler for one batch and waits for it (and for its Promise, if it returns one).
async fn call_handler(
    handler: &HandlerFn,
    batch: tideq::Batch,
) -> std::result::Result<(), napi::Error> {
    let (tx, rx) = oneshot::channel::<Result<Option<Promise<()>>>>();
    let status = handler.call_with_return_value(
        batch,
        ThreadsafeFunctionCallMode::NonBlocking,
        move |ret: Result<Unknown<'static>>, env: Env| {
            // A sync handler's return value is ignored (so `(g, items) => out.push(...items)`
            // works); only a Promise is awaited.
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

/// A running consumer. Dropping it does not stop it: call `shutdown()`. While it runs it keeps
/// the process alive (like a listening server); after it has stopped it no longer does.
#[napi]
pub struct Consumer {
    inner: Arc<tideq::Consumer>,
}

#[napi]
impl Consumer {
    /// Asks the consumer to stop taking batches; running handlers get the grace period.
    #[napi]
    pub fn stop(&self) {
        self.inner.stop();
    }

    /// Resolves with the stats once the consumer has stopped (after `stop()`, or by itself with
    /// `stopWhenEmpty`).
    #[napi(ts_return_type = "Promise<ConsumerStats>")]
    pub fn join<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, ConsumerStats>> {
        let c = self.inner.clone();
        env.spawn_future(async move { Ok(ConsumerStats::from(c.join().await)) })
    }

    /// Stops and waits: no new batches; running handlers finish within the grace period.
    #[napi(ts_return_type = "Promise<ConsumerStats>")]
    pub fn shutdown<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, ConsumerStats>> {
        let c = self.inner.clone();
        env.spawn_future(async move { Ok(ConsumerStats::from(c.shutdown().await)) })
    }

    /// What the consumer has done so far.
    #[napi]
    pub fn stats(&self) -> ConsumerStats {
        self.inner.stats().into()
    }

    /// True until the fetch loop has ended and running handlers have finished or been abandoned.
    #[napi(getter)]
    pub fn running(&self) -> bool {
        self.inner.is_running()
    }
}

pub(crate) fn function<'env, Args: JsValuesTupleIntoVec>(
    what: &str,
    v: &Unknown<'env>,
) -> Res<Function<'env, Args, Unknown<'static>>> {
    if !is_function(v) {
        return Err(type_error(format!(
            "{what} must be a function; got {}",
            describe(v)
        )));
    }
    read_value(v)
}

impl CappedQueue {
    /// Reads the handler and options and starts a core consumer calling the handler.
    fn start(
        &self,
        env: &Env,
        handler: &Unknown,
        options: Option<&Unknown>,
    ) -> Res<tideq::Consumer> {
        let handler: Function<FnArgs<(String, Items)>, Unknown<'static>> =
            function("handler", handler)?;
        let opts = Options::new("consume options", options, CONSUME_KEYS)?;
        let defaults = tideq::ConsumerOptions::default();
        let consumer_opts = tideq::ConsumerOptions {
            concurrency: opts
                .get("concurrency", count)?
                .unwrap_or(defaults.concurrency),
            batch_size: opts.get("batchSize", count)?.unwrap_or(defaults.batch_size),
            groups: opts.get("groups", strings)?.unwrap_or_default(),
            exclude: opts.get("exclude", strings)?.unwrap_or_default(),
            poll_interval: opts
                .get("pollIntervalMs", millis)?
                .unwrap_or(defaults.poll_interval),
            grace: opts.get("graceMs", millis)?.unwrap_or(defaults.grace),
            stop_when_empty: opts
                .get("stopWhenEmpty", boolean)?
                .unwrap_or(defaults.stop_when_empty),
        };
        let reporter = match opts.get("onError", |what, v| {
            function::<FnArgs<(napi::Error, String)>>(what, v)
        })? {
            Some(on_error) => Reporter::User(
                on_error
                    .build_threadsafe_function::<Report>()
                    .callee_handled::<false>()
                    .build_callback(|ctx| Ok(FnArgs::from((ctx.value.error, ctx.value.group))))?,
            ),
            None => {
                let console: Object = env.get_global()?.get_named_property("console")?;
                let error: Function<FnArgs<(String, napi::Error)>, Unknown<'static>> =
                    console.get_named_property("error")?;
                Reporter::Console(error.build_threadsafe_function::<Report>().callee_handled::<false>().build_callback(
                    |ctx| {
                        let r = ctx.value;
                        Ok(FnArgs::from((
                            format!(
                                "tideq: handler failed on a batch of {} item(s) from group {:?}; the batch is not redelivered:",
                                r.items, r.group
                            ),
                            r.error,
                        )))
                    },
                )?)
            }
        };
        let handler: Arc<HandlerFn> = Arc::new(
            handler
                .build_threadsafe_function::<tideq::Batch>()
                .callee_handled::<false>()
                .build_callback(|ctx| {
                    Ok(FnArgs::from((ctx.value.group, Items(ctx.value.items))))
                })?,
        );
        let reporter = Arc::new(reporter);
        let boxed: tideq::BatchHandler = Arc::new(move |batch: tideq::Batch| {
            let handler = handler.clone();
            let reporter = reporter.clone();
            let fut: tideq::HandlerFuture = Box::pin(async move {
                let group = batch.group.clone();
                let items = batch.items.len();
                match call_handler(&handler, batch).await {
                    Ok(()) => Ok(()),
                    Err(error) => {
                        let message = error.reason.clone();
                        reporter
                            .report(Report {
                                error,
                                group,
                                items,
                            })
                            .await;
                        Err(message)
                    }
                }
            });
            fut
        });
        // `consume_boxed` spawns on the current tokio runtime: napi's.
        Ok(napi::bindgen_prelude::within_runtime_if_available(|| {
            self.inner.consume_boxed(consumer_opts, boxed)
        })?)
    }
}

#[napi]
impl CappedQueue {
    /// Starts a consumer calling `handler(group, items)` for each batch, up to `concurrency` at a
    /// time. A handler that throws or rejects is reported (`onError`, else `console.error`) and
    /// counted as failed; the consumer goes on and the batch is not redelivered (at-most-once).
    #[napi(
        ts_args_type = "handler: (group: string, items: Buffer[]) => void | Promise<void>, options?: ConsumeOptions"
    )]
    pub fn consume(
        &self,
        env: &Env,
        handler: Unknown,
        options: Option<Unknown>,
    ) -> Result<Consumer> {
        let consumer = throw(env, self.start(env, &handler, options.as_ref()))?;
        Ok(Consumer {
            inner: Arc::new(consumer),
        })
    }

    /// Runs a consumer until SIGINT or SIGTERM (listened to with `process.once`; the listeners
    /// are removed afterwards) triggers a graceful shutdown, or until it stops by itself
    /// (`stopWhenEmpty`). Resolves with its stats.
    #[napi(
        ts_args_type = "handler: (group: string, items: Buffer[]) => void | Promise<void>, options?: ConsumeOptions",
        ts_return_type = "Promise<ConsumerStats>"
    )]
    pub fn run<'env>(
        &self,
        env: &'env Env,
        handler: Unknown,
        options: Option<Unknown>,
    ) -> Result<PromiseRaw<'env, ConsumerStats>> {
        let consumer = Arc::new(throw(env, self.start(env, &handler, options.as_ref()))?);
        let stop = consumer.clone();
        let hooks =
            SignalHooks::install(env, move || stop.stop()).inspect_err(|_| consumer.stop())?;
        env.spawn_future_with_callback(
            async move { Ok(consumer.join().await) },
            move |env, stats| {
                hooks.remove(env)?;
                Ok(ConsumerStats::from(stats))
            },
        )
    }
}
