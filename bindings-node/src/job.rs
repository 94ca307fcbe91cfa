//! The job queue's value objects (core `job`): `Job`, the class a worker's handler receives;
//! what `Queue` methods resolve with (`Enqueued`, `JobInfo`, `JobStats`, `BackoffInfo`); and the
//! `backoff`, `dedup` and `debounce` options, read into core's `tideq::Backoff`, `tideq::Dedup`
//! and `tideq::Debounce`.

use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi::{JsValue, Property, PropertyAttributes, ValueType};
use napi_derive::napi;
use tideq::BackoffKind;

use crate::abort::JobSignal;
use crate::convert::{
    boolean, describe, millis, read_value, string, to_millis, whole_millis, Options,
};
use crate::error::{invalid, spawn, throw, type_error, Failure, Res};
use crate::task::{encode_data, task_data};

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

    /// The task's data, decoded from the payload by its `format` (JSON or MessagePack) into a
    /// JS value (made on first read; later reads return the same value). Throws
    /// `INVALID_ARGUMENT` for a job with a raw payload (read `payload`, `text()` or `json()`
    /// instead) or data that does not decode.
    #[napi(getter, ts_return_type = "any")]
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

/// What `enqueue` did.
#[napi(object, object_from_js = false)]
pub struct Enqueued {
    pub id: String,
    /// False when a job with this id already existed (nothing was written).
    pub created: bool,
}

impl From<tideq::Enqueued> for Enqueued {
    fn from(e: tideq::Enqueued) -> Self {
        Enqueued {
            id: e.id,
            created: e.created,
        }
    }
}

/// Bytes on their way to JS: a `Buffer` holding a copy (cheaper for small payloads than handing
/// V8 the Rust allocation with a finalizer).
pub struct Bytes(pub Vec<u8>);

impl ToNapiValue for Bytes {
    unsafe fn to_napi_value(
        raw_env: napi::sys::napi_env,
        val: Self,
    ) -> Result<napi::sys::napi_value> {
        let env = Env::from_raw(raw_env);
        unsafe { BufferSlice::to_napi_value(raw_env, BufferSlice::copy_from(&env, &val.0)?) }
    }
}

/// A result or progress value as stored: `undefined` and `null` are none; a `Buffer` or
/// `Uint8Array` its bytes as they are; anything else its JSON (`JSON.stringify`; a value without
/// one, such as a function, is a `TypeError` naming `what`).
pub(crate) fn stored_bytes(env: &Env, what: &str, v: &Unknown) -> Res<Option<Vec<u8>>> {
    match v.get_type()? {
        ValueType::Undefined | ValueType::Null => return Ok(None),
        ValueType::Object if v.is_typedarray()? => {
            if let Ok(slice) = read_value::<Uint8ArraySlice>(v) {
                return Ok(Some(slice.to_vec()));
            }
        }
        _ => {}
    }
    encode_data(env, what, Some(v), tideq::PayloadFormat::Json)
        .map(Some)
        .map_err(|e| match e {
            Failure::Type(m) => type_error(format!(
                "{what} must be a Buffer, a Uint8Array or JSON-able ({m}); got {}",
                describe(v)
            )),
            other => other,
        })
}

/// A stored result or progress value on its way to JS: its JSON parsed, or a `Buffer` of the
/// bytes when they are not JSON (a raw result, e.g. from a Rust handler); `null` for none.
pub struct Stored(pub Option<Vec<u8>>);

impl ToNapiValue for Stored {
    unsafe fn to_napi_value(
        raw_env: napi::sys::napi_env,
        val: Self,
    ) -> Result<napi::sys::napi_value> {
        let Some(bytes) = val.0 else {
            return unsafe { Null::to_napi_value(raw_env, Null) };
        };
        let env = Env::from_raw(raw_env);
        if let Ok(text) = std::str::from_utf8(&bytes) {
            let json: Object = env.get_global()?.get_named_property("JSON")?;
            let parse: Function<&str, Unknown> = json.get_named_property("parse")?;
            if let Ok(value) = parse.call(text) {
                return Ok(value.raw());
            }
            // JSON.parse threw: the exception is pending; clear it and hand out the bytes.
            let mut pending = std::ptr::null_mut();
            unsafe { napi::sys::napi_get_and_clear_last_exception(raw_env, &mut pending) };
        }
        unsafe { Bytes::to_napi_value(raw_env, Bytes(bytes)) }
    }
}

/// A job as `get`, `jobs` and `deadLetters` report it.
#[napi(object, object_from_js = false, use_nullable = true)]
pub struct JobInfo {
    /// The job's id.
    pub id: String,
    /// Where the job is now.
    #[napi(ts_type = "'delayed' | 'ready' | 'active' | 'dead' | 'completed'")]
    pub state: String,
    /// The stored payload: raw bytes, or a task's encoded data.
    #[napi(ts_type = "Buffer")]
    pub payload: Bytes,
    /// Deliveries so far.
    pub attempts: u32,
    /// Deliveries before the job is dead-lettered.
    pub max_attempts: u32,
    /// The error text of the last failed attempt, if any.
    pub last_error: Option<String>,
    /// When the job was enqueued: ms since the epoch, Redis clock.
    pub enqueued_at: i64,
    /// Delayed: due time; active: lease deadline; dead: time of death; completed: finish time
    /// (ms since the epoch, Redis clock). `null` for a ready job.
    pub state_since_or_until: Option<i64>,
    /// The job's priority, 1 (first) to `MAX_PRIORITY`; `null` when it has none (such jobs run
    /// before any prioritized one).
    pub priority: Option<u32>,
    /// The group the job belongs to; `null` when it has none.
    pub group: Option<String>,
    /// Why the stored job could not be read (a damaged record, e.g. changed by hand), when it
    /// could not; `payload` then holds the stored record's raw bytes. `null` for a sound job.
    pub unreadable: Option<String>,
    /// What the handler returned (a completed job), its JSON parsed; a `Buffer` when the stored
    /// bytes are not JSON (a handler that returned a `Buffer`); `null` when it returned nothing.
    #[napi(ts_type = "any")]
    pub result: Stored,
    /// The stored result's raw bytes; `null` when none.
    #[napi(ts_type = "Buffer")]
    pub result_bytes: Option<Bytes>,
    /// The last progress the handler reported (`job.progress`), read as `result` is; `null` when
    /// none.
    #[napi(ts_type = "any")]
    pub progress: Stored,
    /// The stored progress's raw bytes; `null` when none.
    #[napi(ts_type = "Buffer")]
    pub progress_bytes: Option<Bytes>,
}

impl From<tideq::JobInfo> for JobInfo {
    fn from(j: tideq::JobInfo) -> Self {
        JobInfo {
            id: j.id,
            state: j.state.as_str().to_string(),
            payload: Bytes(j.payload),
            attempts: j.attempts,
            max_attempts: j.max_attempts,
            last_error: j.last_error,
            enqueued_at: j.enqueued_at as i64,
            state_since_or_until: j.state_since_or_until.map(|t| t as i64),
            priority: j.priority,
            group: j.group,
            unreadable: j.unreadable,
            result: Stored(j.result.clone()),
            result_bytes: j.result.map(Bytes),
            progress: Stored(j.progress.clone()),
            progress_bytes: j.progress.map(Bytes),
        }
    }
}

/// Counts per state (now) plus lifetime counters of the queue, kept in Redis.
#[napi(object, object_from_js = false)]
pub struct JobStats {
    /// Jobs waiting for their due time.
    pub delayed: i64,
    /// Jobs ready to run (including those held back by a pause or a limit).
    pub ready: i64,
    /// Jobs leased by a worker (running).
    pub active: i64,
    /// Dead-lettered jobs kept (see `deadLetters()`).
    pub dead: i64,
    /// Jobs created by `enqueue`/`enqueueMany` (not counting existing ids).
    pub enqueued: i64,
    /// Jobs completed.
    pub completed: i64,
    /// Jobs dead-lettered: their attempts exhausted, or (task workers) a task name no handler
    /// has. (Failed attempts that were retried are counted in `retried`; a worker's own
    /// `WorkerStats.failed` counts failed attempts.)
    pub dead_lettered: i64,
    /// Failed attempts scheduled for a retry.
    pub retried: i64,
    /// Expired leases recovered (a worker died or stalled).
    pub recovered: i64,
    /// Jobs removed by `cancel`.
    pub cancelled: i64,
    /// Dead-lettered jobs deleted by the `keepDead` / `keepDeadForMs` bounds.
    pub dead_trimmed: i64,
    /// Jobs found with their data or state record missing (evicted by Redis, or deleted by
    /// hand) and removed, since they could not run. Unreadable records are dead-lettered instead.
    pub lost: i64,
    /// The queue is paused (`pause()`): workers start none of its jobs.
    pub paused: bool,
}

impl From<tideq::JobStats> for JobStats {
    fn from(s: tideq::JobStats) -> Self {
        JobStats {
            delayed: s.delayed as i64,
            ready: s.ready as i64,
            active: s.active as i64,
            dead: s.dead as i64,
            enqueued: s.enqueued as i64,
            completed: s.completed as i64,
            dead_lettered: s.dead_lettered as i64,
            retried: s.retried as i64,
            recovered: s.recovered as i64,
            cancelled: s.cancelled as i64,
            dead_trimmed: s.dead_trimmed as i64,
            lost: s.lost as i64,
            paused: s.paused,
        }
    }
}

/// The `dedup` option in its object form (a string is the key alone, held until its job
/// finishes).
// Declared for the TypeScript definitions only; `dedup_arg` reads the fields one by one.
#[allow(dead_code)]
#[napi(object, object_from_js = false, object_to_js = false)]
pub struct DedupOptions {
    /// The key (1–256 bytes, no control characters): while it names a job, an enqueue with the
    /// same key creates nothing and resolves with that job's id (`created: false`).
    pub key: String,
    /// How long the key holds from the enqueue that set it, whatever becomes of its job (at
    /// least 1). Default: until its job finishes (completed, dead-lettered or cancelled), never
    /// longer.
    pub ttl_ms: Option<f64>,
}

/// Reads the `dedup` option: a string (the key, held until its job finishes) or
/// `{ key, ttlMs }`. The key's rules and `ttlMs >= 1` are the core's.
pub(crate) fn dedup_arg(what: &str, v: &Unknown) -> Res<tideq::Dedup> {
    if v.get_type()? == ValueType::String {
        return Ok(tideq::Dedup::new(string(what, v)?));
    }
    if v.get_type()? != ValueType::Object || v.is_array()? {
        return Err(type_error(format!(
            "{what} must be a string (the key) or an object {{ key, ttlMs }}; got {}",
            describe(v)
        )));
    }
    let opts = Options::new(what, Some(v), &["key", "ttlMs"])?;
    Ok(tideq::Dedup {
        key: opts.required("key", string)?,
        ttl: opts.get("ttlMs", millis)?,
    })
}

/// The `debounce` option: the job waits `delayMs`; an enqueue with the same key while it waits
/// replaces its payload and options and makes it wait `delayMs` again from then.
// Declared for the TypeScript definitions only; `debounce_arg` reads the fields one by one.
#[allow(dead_code)]
#[napi(object, object_from_js = false, object_to_js = false)]
pub struct DebounceOptions {
    /// The key (1–256 bytes, no control characters) naming the waiting job.
    pub key: String,
    /// How long the job waits after the last enqueue with its key (at least 1).
    pub delay_ms: f64,
}

/// Reads the `debounce` option `{ key, delayMs }` (both required; their ranges are the core's).
pub(crate) fn debounce_arg(what: &str, v: &Unknown) -> Res<tideq::Debounce> {
    let opts = Options::new(what, Some(v), &["key", "delayMs"])?;
    Ok(tideq::Debounce::new(
        opts.required("key", string)?,
        opts.required("delayMs", millis)?,
    ))
}

/// Retry delays. `{ type: 'fixed', delayMs }`, or `{ type: 'exponential', baseMs = 1000,
/// maxMs = 3600000, jitter = true }` (doubling from `baseMs`, capped at `maxMs`; with jitter
/// each delay is drawn from [delay/2, delay]).
// Declared for the TypeScript definitions only; `backoff_arg` reads the fields one by one.
#[allow(dead_code)]
#[napi(object, object_from_js = false, object_to_js = false)]
pub struct BackoffOptions {
    #[napi(js_name = "type", ts_type = "'fixed' | 'exponential'")]
    pub kind: String,
    /// `fixed`: the delay before every retry.
    pub delay_ms: Option<f64>,
    /// `exponential`: the first retry's delay. Default 1000.
    pub base_ms: Option<f64>,
    /// `exponential`: the longest delay. Default 3600000.
    pub max_ms: Option<f64>,
    /// `exponential`: randomise each delay. Default true.
    pub jitter: Option<bool>,
}

const BACKOFF_KEYS: &[&str] = &["type", "delayMs", "baseMs", "maxMs", "jitter"];

/// The backoff kinds for messages: `'fixed' or 'exponential'`.
fn kinds() -> String {
    BackoffKind::ALL
        .map(|k| format!("'{}'", k.as_str()))
        .join(" or ")
}

/// Reads a backoff object. Range checks (`maxMs >= baseMs`) stay in the core.
pub(crate) fn backoff_arg(_what: &str, v: &Unknown) -> Res<tideq::Backoff> {
    let what = "backoff";
    let opts = Options::new(what, Some(v), BACKOFF_KEYS)?;
    let kind = opts
        .get("type", string)?
        .ok_or_else(|| invalid(format!("{what}.type is required: {}", kinds())))?;
    let kind = BackoffKind::parse(&kind)
        .map_err(|_| invalid(format!("{what}.type must be {}; got {kind:?}", kinds())))?;
    let present = |key: &str| -> Res<bool> { Ok(opts.raw(key)?.is_some()) };
    let (fixed, exponential) = (
        BackoffKind::Fixed.as_str(),
        BackoffKind::Exponential.as_str(),
    );
    match kind {
        BackoffKind::Fixed => {
            for key in ["baseMs", "maxMs", "jitter"] {
                if present(key)? {
                    return Err(invalid(format!(
                        "{what}.{key} applies to {exponential} backoff; {fixed} backoff takes delayMs"
                    )));
                }
            }
            let delay = opts.get("delayMs", whole_millis)?.ok_or_else(|| {
                invalid(format!("{what}.delayMs is required for {fixed} backoff"))
            })?;
            Ok(tideq::Backoff::fixed(delay))
        }
        BackoffKind::Exponential => {
            if present("delayMs")? {
                return Err(invalid(format!(
                    "{what}.delayMs applies to {fixed} backoff; {exponential} backoff takes baseMs and maxMs"
                )));
            }
            let d = tideq::Backoff::default();
            Ok(tideq::Backoff {
                kind,
                base_ms: opts.get("baseMs", whole_millis)?.unwrap_or(d.base_ms),
                max_ms: opts.get("maxMs", whole_millis)?.unwrap_or(d.max_ms),
                jitter: opts.get("jitter", boolean)?.unwrap_or(d.jitter),
            })
        }
    }
}

/// A backoff policy as the queue reports it (`queue.backoff`).
#[napi(object, object_from_js = false)]
pub struct BackoffInfo {
    #[napi(js_name = "type", ts_type = "'fixed' | 'exponential'")]
    pub kind: String,
    pub delay_ms: Option<f64>,
    pub base_ms: Option<f64>,
    pub max_ms: Option<f64>,
    pub jitter: Option<bool>,
}

impl From<&tideq::Backoff> for BackoffInfo {
    fn from(b: &tideq::Backoff) -> Self {
        let kind = b.kind.as_str().to_string();
        match b.kind {
            BackoffKind::Fixed => BackoffInfo {
                kind,
                delay_ms: Some(b.base_ms as f64),
                base_ms: None,
                max_ms: None,
                jitter: None,
            },
            BackoffKind::Exponential => BackoffInfo {
                kind,
                delay_ms: None,
                base_ms: Some(b.base_ms as f64),
                max_ms: Some(b.max_ms as f64),
                jitter: Some(b.jitter),
            },
        }
    }
}
