//! Consumers: wraps `tideq::Consumer` (`CappedQueue::consume_boxed`) and adds
//! `CappedQueue.consume`/`run`. The core owns the fetch loop, concurrency and shutdown; this file
//! reads the options and hands the core a handler that calls the JS one ([`crate::handler`]).

use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use napi::bindgen_prelude::*;
use napi_derive::napi;

use crate::capped::{CappedQueue, Items};
use crate::convert::{boolean, count1, function, millis, strings, Options};
use crate::error::{error_value, spawn, throw, Failure, Res};
use crate::handler::{JsHandler, Running, Subject};
use crate::signal::{stop_on_signal, Stopper};

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

/// A running consumer. Dropping it does not stop it: call `shutdown()`. While it runs it keeps
/// the process alive (like a listening server); after it has stopped it no longer does.
///
/// What it retries (Redis unreachable, a lost lease, a damaged record) is printed on stderr as
/// `tideq: ...` lines, at most one line per cause every 5 seconds. The environment variable
/// `TIDEQ_LOG` sets how much: `off`, `error`, `warn` (the default), `info` or `debug`.
#[napi]
pub struct Consumer {
    inner: Arc<tideq::Consumer>,
}

/// The consumer's stats once it has stopped, or the error it stopped on by itself.
fn outcome(c: &tideq::Consumer, stats: tideq::ConsumerStats) -> Res<ConsumerStats> {
    match c.error() {
        Some(e) => Err(Failure::Core(e)),
        None => Ok(stats.into()),
    }
}

#[napi]
impl Consumer {
    /// Asks the consumer to stop taking batches; running handlers get the grace period.
    #[napi]
    pub fn stop(&self) {
        self.inner.stop();
    }

    /// Stops at once: running handlers are abandoned (their batches were taken from Redis
    /// already: a capped queue is at-most-once). What a second Ctrl-C does to `run()`.
    #[napi]
    pub fn abort(&self) {
        self.inner.abort();
    }

    /// Resolves with the stats once the consumer has stopped (after `stop()`, or by itself with
    /// `stopWhenEmpty`). Rejects with the error the consumer stopped on by itself (`AUTH` or
    /// `PERMISSION`: Redis refused its credentials or a command; see `error`).
    #[napi(ts_return_type = "Promise<ConsumerStats>")]
    pub fn join<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, ConsumerStats>> {
        let c = self.inner.clone();
        spawn(
            env,
            Ok(async move {
                let stats = c.join().await;
                outcome(&c, stats)
            }),
        )
    }

    /// Stops and waits: no new batches; running handlers finish within the grace period.
    /// Rejects like `join()`.
    #[napi(ts_return_type = "Promise<ConsumerStats>")]
    pub fn shutdown<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, ConsumerStats>> {
        let c = self.inner.clone();
        spawn(
            env,
            Ok(async move {
                let stats = c.shutdown().await;
                outcome(&c, stats)
            }),
        )
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

    /// The error the consumer stopped on by itself, with its `code`: `AUTH` (Redis refused the
    /// credentials) or `PERMISSION` (the Redis user may not run a command the consumer needs).
    /// Retrying cannot fix these, so the consumer stops instead. `null` otherwise: transient
    /// errors (Redis unreachable, busy) are retried with backoff and logged to stderr.
    #[napi(getter, ts_return_type = "TideqError | null")]
    pub fn error<'env>(&self, env: &'env Env) -> Result<Option<Unknown<'env>>> {
        self.inner
            .error()
            .map(|e| error_value(env, Failure::Core(e)))
            .transpose()
    }
}

/// A batch whose handler failed: `onError(err, group)`. Its items have gone to JS.
struct FailedBatch {
    group: String,
    items: usize,
}

impl Subject for FailedBatch {
    type Js = String;

    fn into_js(self) -> String {
        self.group
    }

    fn headline(&self) -> String {
        format!(
            "tideq: handler failed on a batch of {} item(s) from group {:?}; the batch is not redelivered:",
            self.items, self.group
        )
    }
}

impl CappedQueue {
    /// Reads the handler and options and starts a core consumer calling the handler. Also
    /// returns the count of running handlers and the grace period, for `run()`.
    fn start(
        &self,
        env: &Env,
        handler: &Unknown,
        options: Option<&Unknown>,
    ) -> Res<(tideq::Consumer, Running, Duration)> {
        let handler = function("handler", handler)?;
        let opts = Options::new("consume options", options, CONSUME_KEYS)?;
        let defaults = tideq::ConsumerOptions::default();
        let consumer_opts = tideq::ConsumerOptions {
            concurrency: opts
                .get("concurrency", count1)?
                .unwrap_or(defaults.concurrency),
            batch_size: opts
                .get("batchSize", count1)?
                .unwrap_or(defaults.batch_size),
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
        let grace = consumer_opts.grace;
        let js = JsHandler::<_, _, FailedBatch>::new(
            env,
            handler,
            |batch: tideq::Batch| FnArgs::from((batch.group, Items(batch.items))),
            opts.get("onError", function)?,
        )?;
        let running = Running::default();
        let counted = running.clone();
        // The closure owns the JS functions for as long as the core's consumer runs.
        let boxed: tideq::BatchHandler =
            Arc::new(move |batch: tideq::Batch| -> tideq::HandlerFuture {
                let failed = FailedBatch {
                    group: batch.group.clone(),
                    items: batch.items.len(),
                };
                let call = js.call(batch, failed);
                let counting = counted.enter();
                Box::pin(async move {
                    let res = call.await;
                    drop(counting);
                    res
                })
            });
        // `consume_boxed` spawns on the current tokio runtime: napi's.
        let consumer = napi::bindgen_prelude::within_runtime_if_available(|| {
            self.inner.consume_boxed(consumer_opts, boxed)
        })?;
        // The JS handle may be garbage-collected while the consumer should run on: the
        // runtime holds it until it has stopped.
        consumer.detach();
        Ok((consumer, running, grace))
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
        let (consumer, _, _) = throw(env, self.start(env, &handler, options.as_ref()))?;
        Ok(Consumer {
            inner: Arc::new(consumer),
        })
    }

    /// Runs a consumer until SIGINT or SIGTERM triggers a graceful shutdown (a line on stderr
    /// says how long it waits for how many running handlers), or until it stops by itself
    /// (`stopWhenEmpty`). A second SIGINT or SIGTERM stops it at once, like `abort()`. The
    /// listeners (`process.on`) are removed afterwards. Resolves with its stats; rejects like
    /// `Consumer.join()`.
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
        let (consumer, running, grace) = throw(env, self.start(env, &handler, options.as_ref()))?;
        let consumer = Arc::new(consumer);
        let (stop, abort) = (consumer.clone(), consumer.clone());
        let stopper = Stopper {
            stop: Rc::new(move || stop.stop()),
            abort: Rc::new(move || abort.abort()),
            running,
            grace,
            what: ("batch handler", "batch handlers"),
        };
        stop_on_signal(env, stopper, async move {
            let stats = consumer.join().await;
            outcome(&consumer, stats)
        })
    }
}
