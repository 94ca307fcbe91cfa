//! The job queue's options (core `job`'s `QueueOptions`, `EnqueueOptions`, `Backoff`, `Dedup`,
//! `Debounce`, and core `worker`'s `WorkerOptions`/`BatchOptions`): their TypeScript
//! declarations (`#[napi(object)]` structs, never built from JS) and the readers that turn a JS
//! options object into the core's values, key by key (`convert::Options`), with the core's
//! defaults.

use napi::bindgen_prelude::*;
use napi::ValueType;
use napi_derive::napi;
use tideq::BackoffKind;

use crate::convert::{
    boolean, count, count1, count1_u32, describe, entries, epoch_ms, millis, object, string,
    whole_millis, Options,
};
use crate::error::{invalid, type_error, Res};
use crate::task::{encode_data, format_arg};

/// Options of `new Queue(name, options)`. Every field is optional.
// Declared for the TypeScript definitions only; `convert::Options` reads the fields one by one.
#[allow(dead_code)]
#[napi(object, object_from_js = false, object_to_js = false)]
pub struct QueueOptions {
    /// The connection to use. Default: a new `Client` on `url`.
    #[napi(ts_type = "Client")]
    pub client: Option<()>,
    /// Shorthand for `client: new Client({ url })`; not allowed together with `client`.
    pub url: Option<String>,
    /// Deliveries before a job is dead-lettered. Default 5.
    pub max_attempts: Option<u32>,
    /// Delay before retries. Default: exponential from 1 s, capped at 1 h, with jitter.
    pub backoff: Option<BackoffOptions>,
    /// Longest run time of one attempt; past it the attempt fails and is retried. `null`: no
    /// limit (the default).
    #[napi(ts_type = "number | null")]
    pub timeout_ms: Option<f64>,
    /// Completed jobs kept for `get` (the newest N; past N the oldest go 5% at a time). 0: deleted on completion. Default 1000.
    pub keep_completed: Option<u32>,
    /// Completed jobs older than this are deleted. `null`: no age limit. Default 1 day.
    #[napi(ts_type = "number | null")]
    pub keep_for_ms: Option<f64>,
    /// Longest error text stored with a failed job, in bytes. Default 4096.
    pub max_error_len: Option<u32>,
    /// Dead-lettered jobs kept (the newest N; older ones are deleted and counted in
    /// `stats().deadTrimmed`). `null`: no limit. Default 10000.
    #[napi(ts_type = "number | null")]
    pub keep_dead: Option<u32>,
    /// Dead-lettered jobs older than this are deleted. `null`: no age limit. Default 180 days.
    #[napi(ts_type = "number | null")]
    pub keep_dead_for_ms: Option<f64>,
    /// How long an `id` given to `enqueue` is remembered after its job completed or died:
    /// enqueuing it again within this window creates nothing, even once the job's data was
    /// trimmed. Cancel and purge forget the id. About 100 bytes of Redis memory per id. `null`:
    /// ids are remembered only while their job is retained. Default 1 day.
    #[napi(ts_type = "number | null")]
    pub idempotency_window_ms: Option<f64>,
    /// The most finished ids the idempotency window remembers: the oldest beyond are forgotten
    /// first, so Redis memory stays flat however many ids a queue sees. Default 100000.
    pub idempotency_max_ids: Option<u32>,
    /// Largest result (what a handler returns) or progress value stored with a job, in bytes. A
    /// larger result fails the attempt; a larger progress rejects with `PAYLOAD_TOO_LARGE`.
    /// Default 65536.
    pub max_result_len: Option<u32>,
    /// Split the queue in this many shards (1 to 1024), each with its own Redis Cluster hash
    /// tag, so one queue spreads over a cluster's masters. Queue names may not contain `#`.
    /// A job's shard is fixed by its id, so ids stay idempotent and `get`/`cancel` find it;
    /// workers serve every shard; `stats` adds the shards up.
    /// Every handle on a queue must use the same count: the first producer, worker or push
    /// records it in Redis, and a handle made with another count is refused (`INVALID_ARGUMENT`)
    /// at its first call. Changing it means draining the queue, then deleting that record
    /// (`<prefix>:{<queue>}:shards`). Default 1. On a single server it works but gains nothing.
    pub shards: Option<u32>,
    // Encryption at rest.
    /// Seal payloads, results, progress, log lines and error texts with AES-256-GCM before they
    /// reach Redis. Default: none.
    pub encryption: Option<crate::crypt::EncryptionOptions>,
}

pub(crate) const QUEUE_KEYS: &[&str] = &[
    "client",
    "url",
    "maxAttempts",
    "backoff",
    "timeoutMs",
    "keepCompleted",
    "keepForMs",
    "maxErrorLen",
    "keepDead",
    "keepDeadForMs",
    "idempotencyWindowMs",
    "idempotencyMaxIds",
    "maxResultLen",
    "shards",
    "encryption",
];

/// The `QueueOptions` the core takes (every key of `QUEUE_KEYS` but `client`, `url` and
/// `shards`), defaults from the core.
pub(crate) fn queue_options(opts: &Options) -> Res<tideq::QueueOptions> {
    let d = tideq::QueueOptions::default();
    Ok(tideq::QueueOptions {
        max_attempts: opts
            .get("maxAttempts", count1_u32)?
            .unwrap_or(d.max_attempts),
        backoff: opts.get("backoff", backoff_arg)?.unwrap_or(d.backoff),
        timeout: opts.nullable_millis("timeoutMs", d.timeout)?,
        keep_completed: opts
            .get("keepCompleted", count)?
            .unwrap_or(d.keep_completed),
        keep_for: opts.nullable_millis("keepForMs", d.keep_for)?,
        max_error_len: opts.get("maxErrorLen", count)?.unwrap_or(d.max_error_len),
        keep_dead: match opts.raw("keepDead")? {
            None => d.keep_dead,
            Some(_) => opts.get("keepDead", count)?,
        },
        keep_dead_for: opts.nullable_millis("keepDeadForMs", d.keep_dead_for)?,
        idempotency_window: opts.nullable_millis("idempotencyWindowMs", d.idempotency_window)?,
        idempotency_max_ids: opts
            .get("idempotencyMaxIds", count)?
            .unwrap_or(d.idempotency_max_ids),
        max_result_len: opts.get("maxResultLen", count)?.unwrap_or(d.max_result_len),
        encryption: opts.get("encryption", crate::crypt::encryption)?,
    })
}

/// Options of one job (`enqueueTask(name, data, options)`, `enqueue(payload, options)`, or the
/// fields next to `name`/`payload` in `enqueueMany`). Every field is optional.
// Declared for the TypeScript definitions only; `enqueue_options` reads the fields one by one.
#[allow(dead_code)]
#[napi(object, object_from_js = false, object_to_js = false)]
pub struct EnqueueOptions {
    /// Idempotency key (1–256 bytes, no control characters): enqueuing an id that exists
    /// creates nothing. Default: a random id.
    pub id: Option<String>,
    /// Run no earlier than this many ms from now (Redis clock). Not with `runAt`.
    pub delay_ms: Option<f64>,
    /// Run no earlier than this time: a `Date` or ms since the epoch. Not with `delayMs`.
    #[napi(ts_type = "Date | number")]
    pub run_at: Option<f64>,
    /// Overrides the queue's `maxAttempts`.
    pub max_attempts: Option<u32>,
    /// Overrides the queue's `backoff`.
    pub backoff: Option<BackoffOptions>,
    /// Overrides the queue's `timeoutMs`.
    pub timeout_ms: Option<f64>,
    /// Priority: 1 runs first, `MAX_PRIORITY` last. Jobs without a priority run before any job
    /// with one (as in BullMQ); jobs of the same priority run in the order they were enqueued.
    /// Default: none.
    pub priority: Option<u32>,
    /// The group the job belongs to (a tenant, a user, an account): groups are served
    /// round-robin, each in its own order, under the queue's per-group limits (`setLimits`,
    /// `setGroupLimits`). Same rules as a queue name. Default: none.
    pub group: Option<String>,
    /// Tasks only (`enqueueTask(name, data)`): how the data is encoded, `'json'` (with
    /// `JSON.stringify`, the default) or `'msgpack'` (MessagePack: Buffers stay binary).
    #[napi(ts_type = "'json' | 'msgpack'")]
    pub format: Option<String>,
    /// Deduplication: while the key names a job, an enqueue with the same key creates nothing
    /// and resolves with that job's id (`created: false`). A string is the key, held until its
    /// job finishes; `{ key, ttlMs }` holds it for `ttlMs` from the enqueue that set it. Not
    /// with `debounce`.
    #[napi(ts_type = "string | DedupOptions")]
    pub dedup: Option<()>,
    /// Debounce (`enqueue` only, not `enqueueMany`): the job waits `delayMs`; an enqueue with the
    /// same key while it waits replaces its payload and options, makes it wait `delayMs` again,
    /// and resolves with its id (`created: false`). Not with `id`, `delayMs`, `runAt` or `dedup`.
    pub debounce: Option<DebounceOptions>,
    /// The trace context the job carries to its worker, as W3C Trace Context headers:
    /// `traceparent` (`00-<32 hex trace id>-<16 hex span id>-<2 hex flags>`) and optionally
    /// `tracestate`, no other keys, at most 1024 bytes (else `INVALID_ARGUMENT`). The worker's
    /// handler sees it as `job.trace`. Default: with `@opentelemetry/api` installed, the active
    /// span's context (injected with the global propagator), else none. Given here, it is
    /// carried as it is.
    #[napi(ts_type = "Record<string, string>")]
    pub trace: Option<()>,
    /// Start by this many ms after the job's due time, or never: a job no worker started by
    /// then (a retry included) is not run but dead-lettered with an error that says so, counted
    /// in `stats().expired` and reported as an `'expired'` event; `wait` rejects with
    /// `JOB_FAILED`. At least 1. Not with `expiresAt`.
    pub expires_after_ms: Option<f64>,
    /// Start by this time (a `Date` or ms since the epoch, Redis clock), or never (as
    /// `expiresAfterMs`). Not with `expiresAfterMs`.
    #[napi(ts_type = "Date | number")]
    pub expires_at: Option<f64>,
    /// The tokens the job takes when it starts from its queue's and its group's rate where that
    /// rate is a token bucket (`{ max, perMs, burst }`), 1 to `MAX_COST`; a cost above the
    /// burst takes the whole burst. Default: 1.
    pub cost: Option<u32>,
}

/// The keys of a `JobSpec` (`name`, `data`, `payload`, then those of `EnqueueOptions` but
/// `debounce`: one job at a time), then `$extra`.
macro_rules! job_spec_keys {
    ($($extra:literal),*) => {
        &[
            "name",
            "data",
            "payload",
            "id",
            "delayMs",
            "runAt",
            "maxAttempts",
            "backoff",
            "timeoutMs",
            "priority",
            "group",
            "format",
            "dedup",
            "trace",
            "expiresAfterMs",
            "expiresAt",
            "cost",
            $($extra),*
        ]
    };
}

/// The keys of one job of `enqueueMany` (a `JobSpec`).
pub(crate) const ENQUEUE_MANY_KEYS: &[&str] = job_spec_keys!();
/// The keys of one job of `enqueueFlow` (a `FlowSpec`): a `JobSpec`'s, and where it goes, the
/// jobs it waits for and what its failure does to its parent. (`dedup` is read as in a
/// `JobSpec`, for the core to refuse it with its reason.)
pub(crate) const FLOW_KEYS: &[&str] = job_spec_keys!("queue", "children", "onFailure");
pub(crate) const ENQUEUE_KEYS: &[&str] = &[
    "id",
    "delayMs",
    "runAt",
    "maxAttempts",
    "backoff",
    "timeoutMs",
    "priority",
    "group",
    "format",
    "dedup",
    "debounce",
    "trace",
    "expiresAfterMs",
    "expiresAt",
    "cost",
];

/// The options every job takes (not `format`, which only a task takes: see [`task_job`]).
fn enqueue_options(opts: &Options) -> Res<tideq::EnqueueOptions> {
    Ok(tideq::EnqueueOptions {
        id: opts.get("id", string)?,
        delay: opts.get("delayMs", millis)?,
        run_at_ms: opts.get("runAt", epoch_ms)?,
        max_attempts: opts.get("maxAttempts", count1_u32)?,
        backoff: opts.get("backoff", backoff_arg)?,
        timeout: opts.get("timeoutMs", millis)?,
        priority: opts.get("priority", count1_u32)?,
        group: opts.get("group", string)?,
        dedup: opts.get("dedup", dedup_arg)?,
        // Not an option of enqueueMany's or enqueueFlow's jobs.
        debounce: match opts.knows("debounce") {
            true => opts.get("debounce", debounce_arg)?,
            false => None,
        },
        trace: opts.get("trace", trace_arg)?,
        expires_after: opts.get("expiresAfterMs", millis)?,
        expires_at_ms: opts.get("expiresAt", epoch_ms)?,
        cost: opts.get("cost", count1_u32)?,
        ..Default::default()
    })
}

/// The `trace` option: an object of strings (the W3C Trace Context headers). Its keys and
/// values are checked by the core (`traceparent`'s form, no other keys but `tracestate`, size).
fn trace_arg(what: &str, v: &Unknown) -> Res<tideq::TraceContext> {
    let obj = object(what, v)?;
    let mut trace = tideq::TraceContext::new();
    entries(what, &obj, None, |key, value| {
        let value = string(&format!("{what}.{key}"), &value)?;
        trace.insert(key, value);
        Ok(())
    })?;
    Ok(trace)
}

/// A task job: `name`, its `data` encoded in the `format` option (JSON unless it says
/// `'msgpack'`, as the core's `enqueue_task`), and the other options.
pub(crate) fn task_job(
    env: &Env,
    what: &str,
    name: &Unknown,
    data: Option<&Unknown>,
    opts: &Options,
) -> Res<(Vec<u8>, tideq::EnqueueOptions)> {
    let name = string(&format!("{what}name"), name)?;
    let format = opts
        .get("format", format_arg)?
        .unwrap_or(tideq::PayloadFormat::Json);
    let payload = encode_data(env, &format!("{what}data"), data, format)?;
    Ok((
        payload,
        tideq::EnqueueOptions {
            task: Some(name),
            format: Some(format),
            ..enqueue_options(opts)?
        },
    ))
}

/// A raw job: its bytes and options (`format` is refused: it describes task data).
pub(crate) fn raw_job(
    what: &str,
    payload: &Unknown,
    opts: &Options,
) -> Res<(Vec<u8>, tideq::EnqueueOptions)> {
    let bytes = crate::convert::payload(&format!("{what}payload"), payload)?;
    if opts.raw("format")?.is_some() {
        return Err(invalid(format!(
            "{what}format applies to tasks (enqueueTask(name, data, {{ format }})); a raw payload \
             is stored as it is"
        )));
    }
    Ok((bytes, enqueue_options(opts)?))
}

/// One job of `enqueueMany` or `enqueueFlow`, read from its object's options `opts` (named
/// `what`, e.g. `jobs[2]`): a task (`name`, with its `data`) or a raw `payload`, and the job's
/// options.
pub(crate) fn job_spec(
    env: &Env,
    what: &str,
    opts: &Options,
) -> Res<(Vec<u8>, tideq::EnqueueOptions)> {
    let at = format!("{what}.");
    match (opts.raw("name")?, opts.raw("payload")?) {
        (Some(name), None) => task_job(env, &at, &name, opts.raw("data")?.as_ref(), opts),
        (None, Some(payload)) if opts.raw("data")?.is_none() => raw_job(&at, &payload, opts),
        (None, Some(_)) => Err(invalid(format!(
            "{what}.data goes with a task name (name); a raw job has only payload"
        ))),
        (Some(_), Some(_)) => Err(invalid(format!(
            "{what} has both name (a task) and payload (raw bytes): give one"
        ))),
        (None, None) => Err(type_error(format!(
            "{what} needs name (a task, with its data) or payload (raw bytes)"
        ))),
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
    /// Most jobs this worker leases in its life: once it has leased that many it leases no
    /// more (never one more), lets its running jobs finish and stops by itself (`join()`
    /// resolves). A way to recycle a worker process (see `serve`). At least 1. Default: no
    /// limit.
    pub max_jobs: Option<f64>,
    /// Called with a handler's error (thrown or rejected) and the job. Default: the error and
    /// its stack are printed with `console.error`. Should not throw: an error thrown here
    /// becomes an uncaught exception.
    #[napi(ts_type = "(err: unknown, job: Job) => void")]
    pub on_error: Option<()>,
}

pub(crate) const WORK_KEYS: &[&str] = &[
    "concurrency",
    "batchSize",
    "leaseMs",
    "pollIntervalMs",
    "graceMs",
    "stopWhenDrained",
    "schedules",
    "maxJobs",
    "onError",
];

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
    /// As in `WorkerOptions`: counts jobs, not batches.
    pub max_jobs: Option<f64>,
    /// Called with the error a batch handler threw or rejected with, and the batch's jobs.
    /// Default: `console.error`. Should not throw.
    #[napi(ts_type = "(err: unknown, jobs: Job[]) => void")]
    pub on_error: Option<()>,
}

pub(crate) const BATCH_KEYS: &[&str] = &[
    "size",
    "waitMs",
    "concurrency",
    "leaseMs",
    "pollIntervalMs",
    "graceMs",
    "stopWhenDrained",
    "schedules",
    "maxJobs",
    "onError",
];

/// The worker options common to `work`, `run` and `workBatches`, defaults from the core.
pub(crate) fn worker_options(opts: &Options) -> Res<tideq::WorkerOptions> {
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
        max_jobs: opts.get("maxJobs", count1)?.map(|n| n as u64),
        runtime: "node",
    })
}
