//! `Queue`: wraps `tideq::Queue`, the job queue (core `jobs` and `admin`: enqueue, get, jobs by
//! state, cancel, dead letters, stats; `work`/`run` are in [`crate::worker`]). Arguments are
//! converted here (durations in ms, camelCase options), the work is done by the core on napi's
//! tokio runtime, and results come back as Promises. Delivery is at-least-once: a job leaves
//! Redis only when a handler has completed it (or it is purged).

use napi::bindgen_prelude::*;
use napi::{JsValue, ValueType};
use napi_derive::napi;

use crate::client::client_option;
use crate::convert::{
    array, count, count1, count1_u32, describe, entries, epoch_ms, is_string, is_typed_array,
    millis, object, string, to_millis, Options,
};
use crate::error::{invalid, spawn, throw, type_error, Res};
use crate::job::{
    backoff_arg, debounce_arg, dedup_arg, BackoffInfo, BackoffOptions, DebounceOptions, Enqueued,
    JobInfo, JobStats, Stored,
};
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
    /// Every handle on a queue (producers and consumers) must use the same count; changing it
    /// means draining the queue first. Default 1. On a single server it works but gains nothing.
    pub shards: Option<u32>,
}

const QUEUE_KEYS: &[&str] = &[
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
];

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
}

/// The keys of a `JobSpec`: `name`, `data`, `payload`, then those of `EnqueueOptions` but
/// `debounce` (one job at a time).
const ENQUEUE_MANY_KEYS: &[&str] = &[
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
];
const ENQUEUE_KEYS: &[&str] = &[
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
];

/// One job of `enqueueMany`: a task (`name`, `data`) or a raw `payload`, plus the options of
/// `enqueue`. A bare `Buffer` or `Uint8Array` in the list is a raw job with no options.
// Declared for the TypeScript definitions only.
#[allow(dead_code)]
#[napi(object, object_from_js = false, object_to_js = false)]
pub struct JobSpec {
    /// The task's name (1–256 bytes, no control characters): a worker started with
    /// `work({ [name]: handler })` runs it. Not with `payload`.
    pub name: Option<String>,
    /// The task's data (with `name`), encoded as `format` says (JSON by default).
    #[napi(ts_type = "unknown")]
    pub data: Option<()>,
    /// Raw bytes for a handler that reads `job.payload` (not with `name`).
    #[napi(ts_type = "Buffer | Uint8Array")]
    pub payload: Option<()>,
    /// As in `EnqueueOptions`.
    pub id: Option<String>,
    /// As in `EnqueueOptions`.
    pub delay_ms: Option<f64>,
    /// As in `EnqueueOptions`.
    #[napi(ts_type = "Date | number")]
    pub run_at: Option<f64>,
    /// As in `EnqueueOptions`.
    pub max_attempts: Option<u32>,
    /// As in `EnqueueOptions`.
    pub backoff: Option<BackoffOptions>,
    /// As in `EnqueueOptions`.
    pub timeout_ms: Option<f64>,
    /// As in `EnqueueOptions`.
    pub priority: Option<u32>,
    /// As in `EnqueueOptions`.
    pub group: Option<String>,
    /// As in `EnqueueOptions` (tasks only).
    #[napi(ts_type = "'json' | 'msgpack'")]
    pub format: Option<String>,
    /// As in `EnqueueOptions`: jobs of one call with the same key make one job.
    #[napi(ts_type = "string | DedupOptions")]
    pub dedup: Option<()>,
    /// As in `EnqueueOptions` (with `@opentelemetry/api`, the active span's context is injected
    /// once per `enqueueMany` call into each job without one).
    #[napi(ts_type = "Record<string, string>")]
    pub trace: Option<()>,
}

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
        // Not an option of enqueueMany's jobs.
        debounce: match opts.knows("debounce") {
            true => opts.get("debounce", debounce_arg)?,
            false => None,
        },
        trace: opts.get("trace", trace_arg)?,
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
fn task_job(
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
fn raw_job(what: &str, payload: &Unknown, opts: &Options) -> Res<(Vec<u8>, tideq::EnqueueOptions)> {
    let bytes = crate::convert::payload(&format!("{what}payload"), payload)?;
    if opts.raw("format")?.is_some() {
        return Err(invalid(format!(
            "{what}format applies to tasks (enqueueTask(name, data, {{ format }})); a raw payload \
             is stored as it is"
        )));
    }
    Ok((bytes, enqueue_options(opts)?))
}

/// Options of `jobs(state, options)`.
// Declared for the TypeScript definitions only.
#[allow(dead_code)]
#[napi(object, object_from_js = false, object_to_js = false)]
pub struct JobsOptions {
    /// Jobs of the state to skip (in its order). Default 0.
    pub offset: Option<u32>,
    /// Most jobs returned, at most 1000. Default 100.
    pub limit: Option<u32>,
}

/// Options of `deadLetters(options)`.
// Declared for the TypeScript definitions only.
#[allow(dead_code)]
#[napi(object, object_from_js = false, object_to_js = false)]
pub struct DeadLettersOptions {
    /// Dead jobs to skip (oldest death first). Default 0.
    pub offset: Option<u32>,
    /// Most jobs returned. Default 100.
    pub limit: Option<u32>,
}

/// Options of `wait(id, options)`.
// Declared for the TypeScript definitions only; the method reads the field itself.
#[allow(dead_code)]
#[napi(object, object_from_js = false, object_to_js = false)]
pub struct WaitOptions {
    /// Longest wait in ms, then the Promise rejects with `TIMEOUT`. `null` or absent: no limit.
    #[napi(ts_type = "number | null")]
    pub timeout_ms: Option<f64>,
}

/// The largest job priority (`enqueue` option `priority`): 1 runs first, `MAX_PRIORITY` last.
// Exported to JS by napi's registration; Rust code never reads it.
#[allow(dead_code)]
#[napi]
pub const MAX_PRIORITY: u32 = tideq::MAX_PRIORITY;

/// A reliable job queue: delayed jobs, leases, retries with backoff, dead letters, idempotent
/// ids, cancel. Delivery is at-least-once, so handlers should be idempotent.
///
/// Errors carry `err.code`: `INVALID_ARGUMENT`, `PAYLOAD_TOO_LARGE`, `CONNECTION`, `AUTH`
/// (Redis refused the credentials, or needs some), `PERMISSION` (the Redis user may not run a
/// command), `OUT_OF_MEMORY` (Redis is full and refuses writes; `get`, `deadLetters` and `stats`
/// still work), `NOT_REDIS`, `EVICTION_POLICY` (the client's `evictionCheck: 'refuse'`), `REDIS`,
/// `JOB_NOT_FOUND`, `JOB_NOT_CANCELLABLE`, `NOT_REPLICATED` (an enqueue the client's
/// `replicaAck` replicas did not confirm in time; the job is on the primary), `JOB_FAILED` (a
/// job `wait` waited for went to the dead letters or was cancelled), `TIMEOUT` (a `wait` ran
/// out of time) and `NOT_SUPPORTED` (the server is older than Redis 7.0 or Valkey 7.2). An
/// argument of the wrong JS type is a `TypeError` whose code is `INVALID_ARGUMENT`. Async methods reject (they never throw synchronously), with the stack of
/// the call; constructors throw.
#[napi]
pub struct Queue {
    pub(crate) inner: tideq::Queue,
}

impl Queue {
    fn build(name: &Unknown, options: Option<&Unknown>) -> Res<tideq::Queue> {
        let name = string("queue name", name)?;
        let opts = Options::new("Queue options", options, QUEUE_KEYS)?;
        let client = client_option(&opts)?;
        let d = tideq::QueueOptions::default();
        let queue_opts = tideq::QueueOptions {
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
            idempotency_window: opts
                .nullable_millis("idempotencyWindowMs", d.idempotency_window)?,
            idempotency_max_ids: opts
                .get("idempotencyMaxIds", count)?
                .unwrap_or(d.idempotency_max_ids),
            max_result_len: opts.get("maxResultLen", count)?.unwrap_or(d.max_result_len),
        };
        let shards = opts.get("shards", count1)?.unwrap_or(1);
        Ok(tideq::Queue::sharded(&client, &name, shards, queue_opts)?)
    }
}

/// An optional argument that was given (not absent, not `undefined`).
fn given(v: Option<Unknown>) -> Option<Unknown> {
    v.filter(|v| v.get_type().ok() != Some(ValueType::Undefined))
}

/// A job id argument: a string (its format is checked by the core).
fn job_id(v: &Unknown) -> Res<String> {
    string("job id", v)
}

#[napi]
impl Queue {
    /// A handle on job queue `name`. Validates the name and options (throws
    /// `INVALID_ARGUMENT`); does not touch Redis.
    #[napi(constructor, ts_args_type = "name: string, options?: QueueOptions")]
    pub fn new(env: &Env, name: Unknown, options: Option<Unknown>) -> Result<Self> {
        Ok(Queue {
            inner: throw(env, Queue::build(&name, options.as_ref()))?,
        })
    }

    #[napi(getter)]
    pub fn name(&self) -> String {
        self.inner.name().to_string()
    }

    /// How many shards the queue is split in (1 when not sharded).
    #[napi(getter)]
    pub fn shards(&self) -> u32 {
        self.inner.shard_count() as u32
    }

    #[napi(getter)]
    pub fn max_attempts(&self) -> u32 {
        self.inner.options().max_attempts
    }

    #[napi(getter)]
    pub fn backoff(&self) -> BackoffInfo {
        BackoffInfo::from(&self.inner.options().backoff)
    }

    /// `null` when attempts have no time limit.
    #[napi(getter)]
    pub fn timeout_ms(&self) -> Option<f64> {
        to_millis(self.inner.options().timeout)
    }

    #[napi(getter)]
    pub fn keep_completed(&self) -> f64 {
        self.inner.options().keep_completed as f64
    }

    /// `null` when completed jobs have no age limit.
    #[napi(getter)]
    pub fn keep_for_ms(&self) -> Option<f64> {
        to_millis(self.inner.options().keep_for)
    }

    #[napi(getter)]
    pub fn max_error_len(&self) -> f64 {
        self.inner.options().max_error_len as f64
    }

    /// Enqueues one job with a raw payload (a `Buffer` or `Uint8Array`; for text,
    /// `Buffer.from(text)`), for a handler that reads `job.payload`. With an `id` that already
    /// exists nothing is written and `created` is false; with a `dedup` key that names a job,
    /// nothing is written and `id` is that job's (a `debounce` key replaces that job's payload,
    /// options and delay). A string is refused with a `TypeError` (nothing is written): a task
    /// by name is `enqueueTask(name, data, options)`.
    #[napi(
        ts_args_type = "payload: Buffer | Uint8Array, options?: EnqueueOptions",
        ts_return_type = "Promise<Enqueued>"
    )]
    pub fn enqueue<'env>(
        &self,
        env: &'env Env,
        payload: Unknown,
        options: Option<Unknown>,
        extra: Option<Unknown>,
    ) -> Result<PromiseRaw<'env, Enqueued>> {
        let q = self.inner.clone();
        let args = if is_string(&payload) {
            let name = string("payload", &payload).unwrap_or_default();
            Err(type_error(format!(
                "enqueue(payload, options) takes raw bytes (a Buffer or Uint8Array; for text, \
                 Buffer.from(text)), not a string: to enqueue task {name:?}, call \
                 enqueueTask({name:?}, data, options)"
            )))
        } else if !is_typed_array(&payload) {
            Err(type_error(format!(
                "enqueue(payload, options) takes raw bytes (a Buffer or Uint8Array); got {}; a \
                 task by name is enqueueTask(name, data, options)",
                describe(&payload)
            )))
        } else if given(extra).is_some() {
            Err(type_error(
                "enqueue(payload, options) takes two arguments; a task with data is \
                 enqueueTask(name, data, options)",
            ))
        } else {
            Options::new("enqueue options", options.as_ref(), ENQUEUE_KEYS)
                .and_then(|opts| raw_job("", &payload, &opts))
        };
        spawn(
            env,
            args.map(|(payload, opts)| async move { Ok(q.enqueue(payload, opts).await?.into()) }),
        )
    }

    /// Enqueues task `name` with `data` (encoded as JSON by default; `options.format:
    /// 'msgpack'` for MessagePack), for a worker started with `work({ [name]: handler })`. With
    /// an `id` that already exists nothing is written and `created` is false; with a `dedup`
    /// key that names a job, nothing is written and `id` is that job's (a `debounce` key
    /// replaces that job's data, options and delay).
    #[napi(
        ts_args_type = "name: string, data?: unknown, options?: EnqueueOptions",
        ts_return_type = "Promise<Enqueued>"
    )]
    pub fn enqueue_task<'env>(
        &self,
        env: &'env Env,
        name: Unknown,
        data: Option<Unknown>,
        options: Option<Unknown>,
    ) -> Result<PromiseRaw<'env, Enqueued>> {
        let q = self.inner.clone();
        let args = if is_string(&name) {
            Options::new("enqueueTask options", options.as_ref(), ENQUEUE_KEYS)
                .and_then(|opts| task_job(env, "", &name, given(data).as_ref(), &opts))
        } else {
            Err(type_error(format!(
                "enqueueTask(name, data, options) takes the task's name (a string) first; got \
                 {}; raw bytes are enqueue(payload, options)",
                describe(&name)
            )))
        };
        spawn(
            env,
            args.map(|(payload, opts)| async move { Ok(q.enqueue(payload, opts).await?.into()) }),
        )
    }

    /// Enqueues many jobs in one round trip, each a task `{ name, data, ...options }` or a raw
    /// job `{ payload, ...options }` (or a bare `Buffer`). Every job is checked first: on bad
    /// input nothing is written. Resolves with one result per job, in order.
    #[napi(
        ts_args_type = "jobs: Array<JobSpec | Buffer | Uint8Array>",
        ts_return_type = "Promise<Enqueued[]>"
    )]
    pub fn enqueue_many<'env>(
        &self,
        env: &'env Env,
        jobs: Unknown,
    ) -> Result<PromiseRaw<'env, Vec<Enqueued>>> {
        let q = self.inner.clone();
        let jobs = array("jobs", &jobs, |i, job| {
            let what = format!("jobs[{i}].");
            if is_typed_array(job) {
                return raw_job(&what, job, &Options::new("", None, ENQUEUE_KEYS)?);
            }
            if job.get_type()? != ValueType::Object || job.is_array()? {
                return Err(type_error(format!(
                    "jobs[{i}] must be an object {{ name, data, ...options }} or {{ payload, \
                     ...options }}, or a Buffer; got {}",
                    describe(job)
                )));
            }
            let opts = Options::new(format!("jobs[{i}]"), Some(job), ENQUEUE_MANY_KEYS)?;
            match (opts.raw("name")?, opts.raw("payload")?) {
                (Some(name), None) => {
                    task_job(env, &what, &name, opts.raw("data")?.as_ref(), &opts)
                }
                (None, Some(payload)) if opts.raw("data")?.is_none() => {
                    raw_job(&what, &payload, &opts)
                }
                (None, Some(_)) => Err(invalid(format!(
                    "jobs[{i}].data goes with a task name (name); a raw job has only payload"
                ))),
                (Some(_), Some(_)) => Err(invalid(format!(
                    "jobs[{i}] has both name (a task) and payload (raw bytes): give one"
                ))),
                (None, None) => Err(type_error(format!(
                    "jobs[{i}] needs name (a task, with its data) or payload (raw bytes)"
                ))),
            }
        });
        spawn(
            env,
            jobs.map(|jobs| async move {
                Ok(q.enqueue_many(&jobs)
                    .await?
                    .into_iter()
                    .map(Enqueued::from)
                    .collect())
            }),
        )
    }

    /// A job's state, payload, attempts, last error and timestamps; `null` if the id is unknown
    /// (or the completed job is no longer retained).
    #[napi(
        ts_args_type = "id: string",
        ts_return_type = "Promise<JobInfo | null>"
    )]
    pub fn get<'env>(
        &self,
        env: &'env Env,
        id: Unknown,
    ) -> Result<PromiseRaw<'env, Option<JobInfo>>> {
        let q = self.inner.clone();
        spawn(
            env,
            job_id(&id).map(|id| async move { Ok(q.get(&id).await?.map(JobInfo::from)) }),
        )
    }

    /// Waits until job `id` has finished and resolves with its result (read as `JobInfo.result`
    /// is; `null` when the handler returned nothing), also when it finished before the call,
    /// while it is retained (`keepCompleted`, `keepForMs`). Rejects with `JOB_FAILED` (its last
    /// error in the message) when the job went to the dead letters or was cancelled,
    /// `JOB_NOT_FOUND` when there is no such job, and `TIMEOUT` after `timeoutMs`. Resolves as
    /// soon as the job ends: the script that finishes it wakes the wait (no polling).
    #[napi(
        ts_args_type = "id: string, options?: WaitOptions",
        ts_return_type = "Promise<any>"
    )]
    pub fn wait<'env>(
        &self,
        env: &'env Env,
        id: Unknown,
        options: Option<Unknown>,
    ) -> Result<PromiseRaw<'env, Stored>> {
        let q = self.inner.clone();
        let args = job_id(&id).and_then(|id| {
            let o = Options::new("wait options", options.as_ref(), &["timeoutMs"])?;
            Ok((id, o.nullable_millis("timeoutMs", None)?))
        });
        spawn(
            env,
            args.map(|(id, timeout)| async move { Ok(Stored(q.wait(&id, timeout).await?.result)) }),
        )
    }

    /// Cancels a job: a delayed or ready one is removed; a running one is asked to stop: its
    /// worker aborts `job.signal` within a second, and the job ends cancelled when its handler
    /// settles, whatever the outcome, never retried (a handler that finished first completes
    /// it). Either way `get` then gives `null` and `stats().cancelled` counts it. Rejects with
    /// `JOB_NOT_CANCELLABLE` when it is dead or completed, and `JOB_NOT_FOUND` when there is no
    /// such job.
    #[napi(ts_args_type = "id: string", ts_return_type = "Promise<void>")]
    pub fn cancel<'env>(&self, env: &'env Env, id: Unknown) -> Result<PromiseRaw<'env, ()>> {
        let q = self.inner.clone();
        spawn(
            env,
            job_id(&id).map(|id| async move { Ok(q.cancel(&id).await?) }),
        )
    }

    /// The jobs in one state, `limit` (default 100, at most 1000) from `offset` (default 0):
    /// `delayed` by due time, `ready` in the order workers take them (plain, then by priority,
    /// then group by group), `active` by lease deadline, `dead` oldest death first, `completed`
    /// newest first; a sharded queue lists shard by shard. Rejects with `INVALID_ARGUMENT` for an
    /// unknown state or a `limit` over 1000. Offsets shift as workers move jobs, so a walk of
    /// pages by offset can list a job twice or skip one: walk a state with `jobsPage`.
    #[napi(
        ts_args_type = "state: 'delayed' | 'ready' | 'active' | 'dead' | 'completed', options?: JobsOptions",
        ts_return_type = "Promise<JobInfo[]>"
    )]
    pub fn jobs<'env>(
        &self,
        env: &'env Env,
        state: Unknown,
        options: Option<Unknown>,
    ) -> Result<PromiseRaw<'env, Vec<JobInfo>>> {
        let q = self.inner.clone();
        let args = string("state", &state).and_then(|state| {
            let state = tideq::JobState::parse(&state)?;
            let o = Options::new("jobs options", options.as_ref(), &["offset", "limit"])?;
            Ok((
                state,
                o.get("offset", count)?.unwrap_or(0),
                o.get("limit", count)?.unwrap_or(100),
            ))
        });
        spawn(
            env,
            args.map(|(state, offset, limit)| async move {
                Ok(q.jobs(state, offset, limit)
                    .await?
                    .into_iter()
                    .map(JobInfo::from)
                    .collect())
            }),
        )
    }

    /// Dead-lettered jobs, oldest death first: `limit` (default 100) from `offset` (default 0).
    #[napi(
        ts_args_type = "options?: DeadLettersOptions",
        ts_return_type = "Promise<JobInfo[]>"
    )]
    pub fn dead_letters<'env>(
        &self,
        env: &'env Env,
        options: Option<Unknown>,
    ) -> Result<PromiseRaw<'env, Vec<JobInfo>>> {
        let q = self.inner.clone();
        let args = Options::new(
            "deadLetters options",
            options.as_ref(),
            &["offset", "limit"],
        )
        .and_then(|o| {
            Ok((
                o.get("offset", count)?.unwrap_or(0),
                o.get("limit", count)?.unwrap_or(100),
            ))
        });
        spawn(
            env,
            args.map(|(offset, limit)| async move {
                Ok(q.dead_letters(offset, limit)
                    .await?
                    .into_iter()
                    .map(JobInfo::from)
                    .collect())
            }),
        )
    }

    /// Moves a dead job back to ready with its attempts reset. Rejects with `JOB_NOT_FOUND` if
    /// no dead job has this id.
    #[napi(ts_args_type = "id: string", ts_return_type = "Promise<void>")]
    pub fn requeue<'env>(&self, env: &'env Env, id: Unknown) -> Result<PromiseRaw<'env, ()>> {
        let q = self.inner.clone();
        spawn(
            env,
            job_id(&id).map(|id| async move { Ok(q.requeue(&id).await?) }),
        )
    }

    /// Requeues every dead job; resolves with how many.
    #[napi(ts_return_type = "Promise<number>")]
    pub fn requeue_all<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, i64>> {
        let q = self.inner.clone();
        spawn(env, Ok(async move { Ok(q.requeue_all().await? as i64) }))
    }

    /// Deletes every dead job; resolves with how many.
    #[napi(ts_return_type = "Promise<number>")]
    pub fn purge<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, i64>> {
        let q = self.inner.clone();
        spawn(env, Ok(async move { Ok(q.purge().await? as i64) }))
    }

    /// Jobs per state and the queue's lifetime counters.
    #[napi(ts_return_type = "Promise<JobStats>")]
    pub fn stats<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, JobStats>> {
        let q = self.inner.clone();
        spawn(env, Ok(async move { Ok(q.stats().await?.into()) }))
    }
}
