//! `Queue`: wraps `tideq::Queue`, the job queue: the handle and its producer side (core
//! `jobs`: enqueue, enqueueTask, enqueueMany). The other roles are in the files named after
//! them: [`crate::admin`] (get, jobs by state, cancel, dead letters, stats),
//! [`crate::outcome`] (wait), [`crate::lease`], [`crate::flow`], [`crate::schedule`],
//! [`crate::events`] and [`crate::worker`] (work/run). Arguments are converted here (durations
//! in ms, camelCase options; the readers are in [`crate::options`]), the work is done by the
//! core on napi's tokio runtime, and results come back as Promises. Delivery is at-least-once:
//! a job leaves Redis only when a handler has completed it (or it is purged).

use napi::bindgen_prelude::*;
use napi::{JsValue, ValueType};
use napi_derive::napi;

use crate::client::client_option;
use crate::convert::{
    array, count1, describe, is_string, is_typed_array, string, to_millis, Options,
};
use crate::error::{spawn, throw, type_error, Res};
use crate::options::{
    job_spec, queue_options, raw_job, task_job, BackoffOptions, ENQUEUE_KEYS, ENQUEUE_MANY_KEYS,
    QUEUE_KEYS,
};
use crate::results::{BackoffInfo, Enqueued};

/// The largest job priority (`enqueue` option `priority`): 1 runs first, `MAX_PRIORITY` last.
// Exported to JS by napi's registration; Rust code never reads it.
#[allow(dead_code)]
#[napi]
pub const MAX_PRIORITY: u32 = tideq::MAX_PRIORITY;

/// The largest cost of a job (`enqueue` option `cost`).
// Exported to JS by napi's registration; Rust code never reads it.
#[allow(dead_code)]
#[napi]
pub const MAX_COST: u32 = tideq::MAX_COST;

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
        let queue_opts = queue_options(&opts)?;
        let shards = opts.get("shards", count1)?.unwrap_or(1);
        Ok(tideq::Queue::sharded(&client, &name, shards, queue_opts)?)
    }
}

/// An optional argument that was given (not absent, not `undefined`).
fn given(v: Option<Unknown>) -> Option<Unknown> {
    v.filter(|v| v.get_type().ok() != Some(ValueType::Undefined))
}

/// A job id argument: a string (its format is checked by the core).
pub(crate) fn job_id(v: &Unknown) -> Res<String> {
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
            job_spec(env, &format!("jobs[{i}]"), &opts)
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
}

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
    /// As in `EnqueueOptions`.
    pub expires_after_ms: Option<f64>,
    /// As in `EnqueueOptions`.
    #[napi(ts_type = "Date | number")]
    pub expires_at: Option<f64>,
    /// As in `EnqueueOptions`.
    pub cost: Option<u32>,
}
