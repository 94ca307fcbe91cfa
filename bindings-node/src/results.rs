//! The job queue's result and value objects (core `job`'s `Enqueued`, `JobInfo`, `JobPage`,
//! `JobSearch`, `JobStats`, `Backoff`, core `worker`'s `WorkerStats`, and core `workflow`'s `ChildResult`
//! and `FlowRef`): what `Queue`, `Job` and `Worker` methods resolve with, as plain JS objects; and stored bytes both ways (`Bytes`, `Stored`: a result or
//! progress value read back, `stored_bytes`: one on its way to Redis).

use napi::bindgen_prelude::*;
use napi::{JsValue, ValueType};
use napi_derive::napi;
use tideq::BackoffKind;

use crate::convert::{describe, read_value};
use crate::error::{type_error, Failure, Res};
use crate::task::encode_data;

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
    /// Where the job is now. `'waiting'`: a flow job waiting for its children to finish
    /// (`enqueueFlow`; `childrenPending` says how many have not); `get` alone reports it, no
    /// listing by state has it.
    #[napi(ts_type = "'delayed' | 'ready' | 'active' | 'dead' | 'completed' | 'waiting'")]
    pub state: String,
    /// The stored payload: raw bytes, or a task's encoded data.
    #[napi(ts_type = "Buffer")]
    pub payload: Bytes,
    /// The task's name, for a job enqueued as a task (`enqueueTask`); `null` for a raw payload.
    pub task: Option<String>,
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
    /// The tokens it takes from a token-bucket rate when it starts (1 unless enqueued with
    /// another `cost`).
    pub cost: u32,
    /// Why the stored job could not be read (a damaged record, e.g. changed by hand), when it
    /// could not; `payload` then holds the stored record's raw bytes. `null` for a sound job.
    pub unreadable: Option<String>,
    /// What the handler returned (a completed job), its JSON parsed; a `Buffer` when the stored
    /// bytes are not JSON (a handler that returned a `Buffer`); `null` when it returned nothing.
    #[napi(ts_type = "unknown")]
    pub result: Stored,
    /// The stored result's raw bytes; `null` when none.
    #[napi(ts_type = "Buffer")]
    pub result_bytes: Option<Bytes>,
    /// The last progress the handler reported (`job.progress`), read as `result` is; `null` when
    /// none.
    #[napi(ts_type = "unknown")]
    pub progress: Stored,
    /// The stored progress's raw bytes; `null` when none.
    #[napi(ts_type = "Buffer")]
    pub progress_bytes: Option<Bytes>,
    /// A flow's child (`enqueueFlow`): its parent's queue and id; `null` for any other job. A
    /// graph's job that several run after: the first of them (all are in `parents`).
    pub parent: Option<FlowRef>,
    /// Every job this one's outcome is reported to: its parent in a flow, each job that runs
    /// after it in a graph (`enqueueGraph`); empty for any other job.
    pub parents: Vec<FlowRef>,
    /// A flow job waiting for its children (state `'waiting'`): how many have not finished;
    /// `null` otherwise.
    pub children_pending: Option<i64>,
    /// When its last attempt (or the one under way) started: ms since the epoch, Redis clock;
    /// `null` when unknown.
    pub started_at: Option<i64>,
    /// How long its last finished attempt ran (ms); `null` when unknown.
    pub run_ms: Option<i64>,
    /// The worker that ran its last attempt; `null` when unknown.
    pub worker: Option<String>,
    /// Its attempts, oldest first (the first 3 and the last 20 are kept): read by `get`; empty
    /// in lists.
    pub attempt_history: Vec<crate::attempts::Attempt>,
    /// Its log (`job.log`), oldest first: read by `get`; empty in lists.
    pub logs: Vec<crate::attempts::LogLine>,
}

impl From<tideq::JobInfo> for JobInfo {
    fn from(j: tideq::JobInfo) -> Self {
        JobInfo {
            id: j.id,
            state: j.state.as_str().to_string(),
            payload: Bytes(j.payload),
            task: j.task,
            attempts: j.attempts,
            max_attempts: j.max_attempts,
            last_error: j.last_error,
            enqueued_at: j.enqueued_at as i64,
            state_since_or_until: j.state_since_or_until.map(|t| t as i64),
            priority: j.priority,
            group: j.group,
            cost: j.cost,
            unreadable: j.unreadable,
            result: Stored(j.result.clone()),
            result_bytes: j.result.map(Bytes),
            progress: Stored(j.progress.clone()),
            progress_bytes: j.progress.map(Bytes),
            parent: j.parent.map(FlowRef::from),
            parents: j.parents.into_iter().map(FlowRef::from).collect(),
            children_pending: j.children_pending.map(|n| n as i64),
            started_at: j.started_at.map(|t| t as i64),
            run_ms: j.run_ms.map(|t| t as i64),
            worker: j.worker,
            attempt_history: j.attempt_history.into_iter().map(Into::into).collect(),
            logs: j.logs.into_iter().map(Into::into).collect(),
        }
    }
}

/// A flow job's parent, as `get` reports it (`JobInfo.parent`).
#[napi(object, object_from_js = false)]
pub struct FlowRef {
    /// The parent's queue.
    pub queue: String,
    /// The parent's id.
    pub id: String,
}

impl From<tideq::FlowRef> for FlowRef {
    fn from(r: tideq::FlowRef) -> Self {
        FlowRef {
            queue: r.queue,
            id: r.id,
        }
    }
}

/// How one child of a flow job ended (`childrenResults`, `job.childrenResults()`).
#[napi(object, object_from_js = false, use_nullable = true)]
pub struct ChildResult {
    /// The child's queue.
    pub queue: String,
    /// The child's id.
    pub id: String,
    /// `'completed'`; `'failed'` (dead-lettered), `'expired'` (not started by its deadline),
    /// `'cancelled'` or `'lost'` (its data went missing); `'ignored'`: one of these failures,
    /// under `onFailure: 'ignore'` (`error` says which).
    #[napi(ts_type = "'completed' | 'failed' | 'expired' | 'cancelled' | 'lost' | 'ignored'")]
    pub outcome: String,
    /// `'completed'`: what its handler returned, read as `JobInfo.result` is (its JSON parsed, or
    /// a `Buffer` of bytes that are not JSON); `null` when it returned nothing, and for the
    /// other outcomes.
    #[napi(ts_type = "unknown")]
    pub result: Stored,
    /// That result's raw bytes; `null` when none.
    #[napi(ts_type = "Buffer")]
    pub result_bytes: Option<Bytes>,
    /// `'failed'` and `'expired'`: its last error; `'ignored'`: the error, or `'cancelled'` or
    /// `'lost'`; `null` for the other outcomes.
    pub error: Option<String>,
}

impl From<tideq::ChildResult> for ChildResult {
    fn from(c: tideq::ChildResult) -> Self {
        let outcome = c.outcome.as_str().to_string();
        let (result, error) = match c.outcome {
            tideq::ChildOutcome::Completed(r) => (r, None),
            tideq::ChildOutcome::Failed(e)
            | tideq::ChildOutcome::Expired(e)
            | tideq::ChildOutcome::Ignored(e) => (None, Some(e)),
            tideq::ChildOutcome::Cancelled | tideq::ChildOutcome::Lost => (None, None),
        };
        ChildResult {
            queue: c.queue,
            id: c.id,
            outcome,
            result: Stored(result.clone()),
            result_bytes: result.map(Bytes),
            error,
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
    /// Completed jobs kept now (`keepCompleted`, `keepForMs`): what
    /// `jobs('completed')` lists. `completed` counts every job ever completed.
    pub completed_kept: i64,
    /// Flow jobs waiting for their children.
    pub waiting: i64,
    /// Jobs created by `enqueue`/`enqueueMany` (not counting existing ids).
    pub enqueued: i64,
    /// Jobs completed, ever (`completedKept` of them are kept).
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
    /// Deliveries whose handler threw `Snooze` or `BackOff` (not counted as attempts).
    pub snoozed: i64,
    /// Jobs not started by their deadline (`expiresAfterMs`, `expiresAt`): dead-lettered
    /// without running.
    pub expired: i64,
    /// Dead-lettered jobs deleted by the `keepDead` / `keepDeadForMs` bounds.
    pub dead_trimmed: i64,
    /// Jobs found with their data or state record missing (evicted by Redis, or deleted by
    /// hand) and removed, since they could not run. Unreadable records are dead-lettered instead.
    pub lost: i64,
    /// The queue is paused (`pause()`): workers start none of its jobs.
    pub paused: bool,
    /// Milliseconds the job next in line that waited longest has been ready to start (0 when no
    /// job is ready): since its enqueue, or since it became ready later (a delayed job's or a
    /// retry's due time, a release, a requeue). Due delayed jobs count before a worker picks them
    /// up, so it grows with no worker running: the number to scale workers on. Read from the
    /// first jobs in line and the first 100 groups in turn; the longest over the shards.
    pub latency_ms: f64,
}

impl From<tideq::JobStats> for JobStats {
    fn from(s: tideq::JobStats) -> Self {
        JobStats {
            delayed: s.delayed as i64,
            ready: s.ready as i64,
            active: s.active as i64,
            dead: s.dead as i64,
            completed_kept: s.completed_kept as i64,
            waiting: s.waiting as i64,
            enqueued: s.enqueued as i64,
            completed: s.completed as i64,
            dead_lettered: s.dead_lettered as i64,
            retried: s.retried as i64,
            recovered: s.recovered as i64,
            cancelled: s.cancelled as i64,
            snoozed: s.snoozed as i64,
            expired: s.expired as i64,
            dead_trimmed: s.dead_trimmed as i64,
            lost: s.lost as i64,
            paused: s.paused,
            latency_ms: s.latency.as_millis() as f64,
        }
    }
}

/// A page of one state's jobs (`jobsPage`) and the cursor of the next page.
#[napi(object, object_from_js = false, use_nullable = true)]
pub struct JobPage {
    /// The page's jobs, in the state's order.
    pub jobs: Vec<JobInfo>,
    /// Give it to the next `jobsPage` call; `null` when this was the last page.
    pub cursor: Option<String>,
}

/// A page of a search (`findJobs`): the matching jobs, the cursor to go on with, and how many
/// jobs the call looked at.
#[napi(object, object_from_js = false, use_nullable = true)]
pub struct JobSearch {
    /// The matching jobs this call found (at most `limit`).
    pub jobs: Vec<JobInfo>,
    /// Give it to the next `findJobs` call, with the same filter; `null` when the search is over.
    pub cursor: Option<String>,
    /// How many jobs this call looked at (at most 2000), counting the delayed and running grouped
    /// jobs it passed over on the way to the ready ones.
    pub scanned: i64,
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
    /// Jobs that ended cancelled: their `cancel` was requested while they ran.
    pub cancelled: i64,
    /// Attempts whose handler threw `Snooze` or `BackOff` (not counted as attempts).
    pub snoozed: i64,
}

impl From<tideq::WorkerStats> for WorkerStats {
    fn from(s: tideq::WorkerStats) -> Self {
        WorkerStats {
            completed: s.completed as i64,
            failed: s.failed as i64,
            lease_lost: s.lease_lost as i64,
            released: s.released as i64,
            fetch_errors: s.fetch_errors as i64,
            cancelled: s.cancelled as i64,
            snoozed: s.snoozed as i64,
        }
    }
}
