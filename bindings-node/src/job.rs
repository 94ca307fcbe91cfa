//! `Job`, the class a worker's handler receives (core `job`'s `Job`): its getters (payload and
//! task data made on first read), `signal`, `progress`, `childrenResults` (a flow's parent),
//! `text`/`json`, and its `toJSON` and `console.log` forms.

use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi::{Property, PropertyAttributes};
use napi_derive::napi;

use crate::abort::JobSignal;
use crate::convert::to_millis;
use crate::error::{spawn, throw, type_error, Failure};
use crate::results::{stored_bytes, Bytes, ChildResult};
use crate::task::task_data;

/// A leased job, as a handler receives it. Read-only.
#[napi]
pub struct Job {
    pub(crate) inner: Arc<tideq::Job>,
    stop: Arc<JobSignal>,
}

impl Job {
    pub(crate) fn new(inner: Arc<tideq::Job>, stop: Arc<JobSignal>) -> Self {
        Job { inner, stop }
    }
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

    /// When this attempt started (the job was leased): ms since the epoch, Redis clock.
    #[napi(getter)]
    pub fn started_at(&self) -> f64 {
        self.inner.started_at as f64
    }

    /// The task's name when the job was enqueued as a task (`enqueueTask(name, data)`); `null` for
    /// a job with a raw payload.
    #[napi(getter)]
    pub fn task(&self) -> Option<String> {
        self.inner.task.clone()
    }

    /// How the payload encodes the task's data: `'json'` or `'msgpack'`; `null` for raw bytes.
    #[napi(getter, ts_return_type = "'json' | 'msgpack' | null")]
    pub fn format(&self) -> Option<&'static str> {
        self.inner.format.map(tideq::PayloadFormat::as_str)
    }

    /// Where the payload came from when it was filled in from the job's children's results:
    /// `'previous'` (a chain's link: the previous link's result) or `'children'` (a chord's
    /// callback: the array of its children's results); `null` for any other job.
    #[napi(getter, ts_return_type = "'previous' | 'children' | null")]
    pub fn args_from(&self) -> Option<&'static str> {
        self.inner.args_from.map(tideq::ArgsFrom::as_str)
    }

    /// The task's data, decoded from the payload by its `format` (JSON or MessagePack) into a
    /// JS value (made on first read; later reads return the same value). Throws
    /// `INVALID_ARGUMENT` for a job with a raw payload (read `payload`, `text()` or `json()`
    /// instead) or data that does not decode.
    #[napi(getter, ts_return_type = "unknown")]
    pub fn data<'env>(&self, env: &'env Env, mut this: This<'env>) -> Result<Unknown<'env>> {
        let data = throw(env, task_data(env, &self.inner))?;
        // An own data property shadows this getter from now on.
        this.define_properties(&[Property::new()
            .with_utf8_name("data")?
            .with_value(&data)
            .with_property_attributes(PropertyAttributes::Enumerable)])?;
        Ok(data)
    }

    /// The producer's trace context, as the W3C Trace Context headers (`traceparent`, and
    /// `tracestate` when set) it was enqueued with (`EnqueueOptions.trace`, or the producer's
    /// active OpenTelemetry span); `null` when it has none. With `@opentelemetry/api` installed,
    /// the handler already runs in a consumer span whose parent is this context.
    #[napi(getter, ts_return_type = "Record<string, string> | null")]
    pub fn trace(&self) -> Option<tideq::TraceContext> {
        self.inner.trace.clone()
    }

    /// The queue's name.
    #[napi(getter)]
    pub fn queue(&self) -> String {
        self.inner.queue.clone()
    }

    /// This attempt's time limit in ms, `null` when it has none.
    #[napi(getter)]
    pub fn timeout_ms(&self) -> Option<f64> {
        to_millis(self.inner.timeout)
    }

    /// Aborted when this attempt should stop: its `timeoutMs` passed (`reason`: an `Error`
    /// saying "timed out after N ms"; the attempt fails and is retried), its `cancel` was
    /// requested ("the job was cancelled"; the job ends cancelled when the handler settles), or
    /// the worker is shutting down and its `graceMs` is over ("the worker is shutting down"; a
    /// handler that then rejects returns its job to the queue, its attempt not counted). The
    /// worker waits for the handler either way: until it returns, the job keeps its slot and its
    /// lease, so it never runs twice at once. Pass it to `fetch`, timers and other calls that
    /// take a signal, or listen for `'abort'`. Also aborted when the worker is stopped with
    /// `abort()`.
    #[napi(getter, ts_return_type = "AbortSignal")]
    pub fn signal<'env>(&self, env: &'env Env, mut this: This<'env>) -> Result<Unknown<'env>> {
        let signal = self.stop.signal(env)?;
        // An own data property shadows this getter from now on (one signal per Job object).
        this.define_properties(&[Property::new()
            .with_utf8_name("signal")?
            .with_value(&signal)
            .with_property_attributes(PropertyAttributes::Enumerable)])?;
        Ok(signal)
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

    /// Stores `value` as the job's progress now (`get(id).progress` shows it), replacing the last
    /// one: a `Buffer` or `Uint8Array` as it is, anything else as JSON (`JSON.stringify`). At most
    /// the queue's `maxResultLen` bytes (else `PAYLOAD_TOO_LARGE`). Rejects with `LEASE_LOST`
    /// when the job's lease was lost (it was redelivered).
    #[napi(ts_args_type = "value: unknown", ts_return_type = "Promise<void>")]
    pub fn progress<'env>(&self, env: &'env Env, value: Unknown) -> Result<PromiseRaw<'env, ()>> {
        let job = self.inner.clone();
        let bytes = stored_bytes(env, "progress", &value).and_then(|b| {
            b.ok_or_else(|| {
                type_error("progress must be a value (not undefined or null)".to_string())
            })
        });
        spawn(
            env,
            bytes.map(|bytes| async move { Ok(job.progress(&bytes).await?) }),
        )
    }

    /// How this job's children ended (a flow's parent, `enqueueFlow`), in no particular order;
    /// every child has finished by the time a parent runs. Empty for a job without children.
    #[napi(ts_return_type = "Promise<ChildResult[]>")]
    pub fn children_results<'env>(
        &self,
        env: &'env Env,
    ) -> Result<PromiseRaw<'env, Vec<ChildResult>>> {
        let job = self.inner.clone();
        spawn(
            env,
            Ok(async move {
                let children = job.children_results().await?;
                Ok(children.into_iter().map(ChildResult::from).collect())
            }),
        )
    }

    /// The job's fields without the payload, for loggers and `JSON.stringify(job)`.
    #[napi(js_name = "toJSON")]
    pub fn to_json(&self) -> JobView {
        self.view()
    }

    /// The payload parsed as JSON (`JSON.parse(job.text())`): `unknown` unless its type is
    /// given, `job.json<Order>()` (nothing checks it).
    #[napi(ts_generic_types = "T = unknown", ts_return_type = "NoInfer<T>")]
    pub fn json<'env>(&self, env: &'env Env) -> Result<Unknown<'env>> {
        let text = self.text(env)?;
        let json: Object = env.get_global()?.get_named_property("JSON")?;
        let parse: Function<String, Unknown> = json.get_named_property("parse")?;
        parse.call(text)
    }
}

/// A job's fields as a plain object (no payload or data): `job.toJSON()`, for loggers and
/// `JSON.stringify(job)`.
#[napi(object, object_from_js = false, use_nullable = true)]
pub struct JobView {
    /// As `job.id`.
    pub id: String,
    /// As `job.queue`.
    pub queue: String,
    /// The task's name; `null` for a raw payload.
    pub task: Option<String>,
    /// As `job.attempt`.
    pub attempt: u32,
    /// As `job.maxAttempts`.
    pub max_attempts: u32,
    /// As `job.enqueuedAt`.
    pub enqueued_at: f64,
    /// As `job.startedAt`.
    pub started_at: f64,
    /// As `job.timeoutMs`.
    pub timeout_ms: Option<f64>,
}

impl Job {
    fn view(&self) -> JobView {
        let j = &self.inner;
        JobView {
            id: j.id.clone(),
            queue: j.queue.clone(),
            task: j.task.clone(),
            attempt: j.attempt,
            max_attempts: j.max_attempts,
            enqueued_at: j.enqueued_at as f64,
            started_at: j.started_at as f64,
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
