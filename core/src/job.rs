//! The job queue's value types: queue and job options, what `enqueue`, `get` and `stats`
//! report, the leased [`Job`] a handler receives, and the job-id rules.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::envelope::{Backoff, PayloadFormat, TraceContext};
use crate::error::{Error, Result};

/// Most jobs one `enqueue_many` (or items one `push_many`) takes: a batch is checked whole before
/// anything is written, so it is held in memory whole; send larger ones in parts.
pub const MAX_BATCH: usize = 100_000;

/// Most jobs one fetch leases: a worker's `batch_size`, a batch handler's `size` and
/// [`Queue::lease_jobs`](crate::Queue::lease_jobs)'s `max` are at most this. A worker with a
/// larger concurrency fills its slots with several fetches. One fetch stays a short script call
/// however many groups it takes from.
pub const MAX_FETCH: usize = 1000;

/// Most jobs one [`Queue::jobs`](crate::Queue::jobs) page returns.
pub const MAX_PAGE: usize = 1000;

/// The default [`QueueOptions::max_result_len`]: 64 KiB.
pub const DEFAULT_MAX_RESULT_LEN: usize = 64 * 1024;

/// Queue-wide defaults. Per-job options in [`EnqueueOptions`] override the first three.
#[derive(Debug, Clone, PartialEq)]
pub struct QueueOptions {
    /// Deliveries before a job is dead-lettered. Default 5.
    pub max_attempts: u32,
    /// Delay before retries. Default: exponential from 1 s, capped at 1 h, with jitter.
    pub backoff: Backoff,
    /// Longest run time of one attempt; past it the attempt fails and is retried. Default none.
    pub timeout: Option<Duration>,
    /// Completed jobs kept for `get` (newest N; past N the oldest go 5% at a time, so between
    /// 95% and 100% of N are kept). 0 = delete on completion. Default 1000.
    pub keep_completed: usize,
    /// Completed jobs older than this are deleted. Default 1 day.
    pub keep_for: Option<Duration>,
    /// Longest error text stored with a failed job, in bytes. Default 4096.
    pub max_error_len: usize,
    /// Dead-lettered jobs kept (the newest N; older ones are deleted and counted in
    /// [`JobStats::dead_trimmed`]). `None`: no limit. Default 10 000.
    pub keep_dead: Option<usize>,
    /// Dead-lettered jobs older than this are deleted (counted in `dead_trimmed`). `None`: no age
    /// limit. Default 180 days.
    pub keep_dead_for: Option<Duration>,
    /// How long an id given to `enqueue` is remembered after its job completed or died: enqueuing
    /// it again within this window creates nothing, even once the job's data was trimmed by
    /// `keep_completed`/`keep_for`. (While the job exists, its id always creates nothing.)
    /// Cancelled and purged jobs' ids are forgotten at once. Costs about 100 bytes of Redis memory
    /// per id, bounded by `idempotency_max_ids`. `None`: ids are remembered only as long as their
    /// job is retained. Default 1 day.
    pub idempotency_window: Option<Duration>,
    /// The most finished ids the idempotency window remembers: the oldest beyond are forgotten
    /// first, so Redis memory stays flat however many ids a queue sees. Default 100 000.
    pub idempotency_max_ids: usize,
    /// Largest result (what a handler returns) or progress value stored with a job, in bytes. A
    /// larger result fails the attempt (retried like any handler error); a larger progress value
    /// is refused (`PAYLOAD_TOO_LARGE`). Default 64 KiB.
    pub max_result_len: usize,
    // Encryption at rest.
    /// Seals payloads, results, progress, log lines and error texts with AES-256-GCM before they
    /// reach Redis (see [`Encryption`](crate::Encryption)). Default none.
    pub encryption: Option<crate::crypt::Encryption>,
}

impl Default for QueueOptions {
    fn default() -> Self {
        QueueOptions {
            max_attempts: 5,
            backoff: Backoff::default(),
            timeout: None,
            keep_completed: 1000,
            keep_for: Some(Duration::from_secs(24 * 3600)),
            max_error_len: 4096,
            keep_dead: Some(10_000),
            keep_dead_for: Some(Duration::from_secs(180 * 24 * 3600)),
            idempotency_window: Some(Duration::from_secs(24 * 3600)),
            idempotency_max_ids: 100_000,
            max_result_len: DEFAULT_MAX_RESULT_LEN,
            encryption: None,
        }
    }
}

impl QueueOptions {
    /// The scripts' view of the retention settings (see docs/data-model.md, "Queue policy").
    pub(crate) fn policy(&self) -> String {
        format!(
            "{}|{}|{}|{}|{}|{}",
            self.keep_completed,
            self.keep_for.map(ms).unwrap_or(0),
            self.keep_dead
                .map_or(-1, |n| n.min(i64::MAX as usize) as i64),
            self.keep_dead_for.map(ms).unwrap_or(0),
            self.idempotency_window.map(ms).unwrap_or(0),
            self.idempotency_max_ids,
        )
    }
}

/// Options of one enqueued job.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EnqueueOptions {
    /// Idempotency key: enqueuing an id that exists creates nothing, nor does one whose job
    /// finished within the queue's `idempotency_window`. Default: a random id.
    pub id: Option<String>,
    /// Run no earlier than this long from now (Redis clock).
    pub delay: Option<Duration>,
    /// Run no earlier than this time (ms since the epoch). Exclusive with `delay`.
    pub run_at_ms: Option<u64>,
    pub max_attempts: Option<u32>,
    pub backoff: Option<Backoff>,
    pub timeout: Option<Duration>,
    /// The task's name: a worker started with [`Tasks`](crate::Tasks) runs the handler of that
    /// name (1–256 bytes, no control characters). Usually set by `enqueue_task`.
    pub task: Option<String>,
    /// How the payload encodes the task's arguments (set by `enqueue_task`; `None`: raw bytes).
    pub format: Option<PayloadFormat>,
    /// Priority, 1 (first) to [`MAX_PRIORITY`] (last); jobs without one run before any job
    /// with one (as in BullMQ). Jobs of the same priority run in order.
    pub priority: Option<u32>,
    /// The group the job belongs to (a tenant, a user, an account): groups are served
    /// round-robin, each in order, under the queue's per-group concurrency limit and rate.
    pub group: Option<String>,
    /// Deduplication: while the key names a job (for its TTL, or until the job finishes), an
    /// enqueue with the same key creates nothing and returns that job's id.
    pub dedup: Option<Dedup>,
    /// Debounce: the job waits `delay`; an enqueue with the same key while it waits replaces its
    /// payload and options and makes it wait `delay` again from then.
    pub debounce: Option<Debounce>,
    /// The trace context to carry to the worker (W3C `traceparent`, optional `tracestate`). With
    /// the `opentelemetry` feature, an enqueue without one carries the caller's current span's.
    pub trace: Option<TraceContext>,
    /// Start by this long after the job's due time, or never: a job no worker started by then
    /// (a retry included) is not run but dead-lettered with an error that says so, counted in
    /// stats as `expired` (not `dead_lettered`) and reported as an `expired` event; its waiters
    /// get the failure. At least 1 ms. Exclusive with `expires_at_ms`.
    pub expires_after: Option<Duration>,
    /// Start by this time (ms since the epoch, Redis clock), or never (as `expires_after`).
    pub expires_at_ms: Option<u64>,
    /// The tokens the job takes when it starts from the queue's and its group's rate when that
    /// rate is a token bucket ([`Rate::bucket`](crate::Rate::bucket)), 1 to [`MAX_COST`]
    /// (`None`: 1). A cost above the bucket's burst takes the whole burst.
    pub cost: Option<u32>,
}

/// The largest cost of a job ([`EnqueueOptions::cost`]).
pub const MAX_COST: u32 = 1_000_000;

/// A dedup key (see [`EnqueueOptions::dedup`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dedup {
    /// 1–256 bytes, no control characters.
    pub key: String,
    /// How long the key holds from the enqueue that set it, whatever becomes of its job. `None`:
    /// until its job finishes (completed, dead-lettered or cancelled), never longer.
    pub ttl: Option<Duration>,
}

impl Dedup {
    /// A key held until its job finishes.
    pub fn new(key: impl Into<String>) -> Self {
        Dedup {
            key: key.into(),
            ttl: None,
        }
    }

    /// A key held for `ttl` from the enqueue that set it.
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self
    }
}

/// A debounce key (see [`EnqueueOptions::debounce`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Debounce {
    /// 1–256 bytes, no control characters.
    pub key: String,
    /// How long the job waits after the last enqueue with its key (at least 1 ms).
    pub delay: Duration,
}

impl Debounce {
    pub fn new(key: impl Into<String>, delay: Duration) -> Self {
        Debounce {
            key: key.into(),
            delay,
        }
    }
}

/// The largest job priority (2^21 - 1): priority and order share one exact sorted-set score.
pub const MAX_PRIORITY: u32 = (1 << 21) - 1;

/// What `enqueue` did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Enqueued {
    pub id: String,
    /// False when a job with this id already existed (nothing was written).
    pub created: bool,
}

/// Where a job is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum JobState {
    Delayed,
    Ready,
    Active,
    Dead,
    Completed,
    /// A flow job waiting for its children to finish (or for its flow to be written whole):
    /// reported by `get` only, not listed by state.
    Waiting,
}

impl JobState {
    pub const ALL: [JobState; 5] = [
        JobState::Delayed,
        JobState::Ready,
        JobState::Active,
        JobState::Dead,
        JobState::Completed,
    ];

    /// The state named `name` (as [`as_str`](Self::as_str) spells it); `INVALID_ARGUMENT`
    /// otherwise.
    pub fn parse(name: &str) -> Result<Self> {
        Self::ALL
            .into_iter()
            .chain([JobState::Waiting])
            .find(|s| s.as_str() == name)
            .ok_or_else(|| {
                Error::invalid(format!(
                    "unknown job state {name:?}; states: delayed, ready, active, dead, \
                     completed, waiting"
                ))
            })
    }

    /// `delayed`, `ready`, `active`, `dead`, `completed` or `waiting`.
    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Delayed => "delayed",
            JobState::Ready => "ready",
            JobState::Active => "active",
            JobState::Dead => "dead",
            JobState::Completed => "completed",
            JobState::Waiting => "waiting",
        }
    }

    /// From the meta state letter; `q` (pending) is delayed while the job is in the delayed set,
    /// active while it is in the active set, else ready.
    pub(crate) fn from_code(c: &str, in_delayed: bool, in_active: bool) -> Option<Self> {
        Some(match c {
            "q" if in_delayed => JobState::Delayed,
            "q" if in_active => JobState::Active,
            "q" => JobState::Ready,
            "x" => JobState::Dead,
            "c" => JobState::Completed,
            _ => return None,
        })
    }
}

/// A job as `get`, `jobs` and `dead_letters` report it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobInfo {
    pub id: String,
    pub state: JobState,
    #[serde(with = "serde_bytes")]
    pub payload: Vec<u8>,
    /// The task's name, for a job enqueued as a task (`enqueue_task`); `None` for a raw payload.
    pub task: Option<String>,
    /// Deliveries so far.
    pub attempts: u32,
    pub max_attempts: u32,
    pub last_error: Option<String>,
    /// Redis-clock ms.
    pub enqueued_at: u64,
    /// Delayed: due time; active: lease deadline; dead: time of death; completed: finish time.
    pub state_since_or_until: Option<u64>,
    /// The job's priority (`None`: none).
    pub priority: Option<u32>,
    /// The job's group.
    pub group: Option<String>,
    /// The tokens it takes from a token-bucket rate when it starts (1 unless enqueued with
    /// another [`EnqueueOptions::cost`]).
    #[serde(default = "one")]
    pub cost: u32,
    /// Why the stored job could not be read (a damaged envelope or state record), when it could
    /// not; `payload` then holds the stored envelope's raw bytes.
    pub unreadable: Option<String>,
    /// What the handler returned, for a completed job whose handler returned something.
    #[serde(with = "serde_bytes")]
    pub result: Option<Vec<u8>>,
    /// The last progress the handler reported ([`Job::progress`]), kept until the job's data is
    /// deleted.
    #[serde(with = "serde_bytes")]
    pub progress: Option<Vec<u8>>,
    /// A flow's child: its parent ([`Queue::enqueue_flow`](crate::Queue::enqueue_flow)); a
    /// graph's job that runs after several: the first of them (all are in `parents`).
    pub parent: Option<crate::workflow::FlowRef>,
    /// Every job this one's outcome is reported to: its parent in a flow, each job that runs
    /// after it in a graph ([`Queue::enqueue_graph`](crate::Queue::enqueue_graph)); empty for
    /// any other job.
    #[serde(default)]
    pub parents: Vec<crate::workflow::FlowRef>,
    /// A flow job waiting for its children: how many have not finished.
    pub children_pending: Option<u64>,
    /// When its last attempt (or the one under way) started, Redis-clock ms, when known: a
    /// completed job's always (while it is retained); others' from their attempts, which
    /// [`Queue::get`](crate::Queue::get) reads (lists leave it out).
    #[serde(default)]
    pub started_at: Option<u64>,
    /// How long its last finished attempt ran (ms), when its start is known.
    #[serde(default)]
    pub run_ms: Option<u64>,
    /// The worker that ran its last attempt (its id, as `workers` lists it), when known.
    #[serde(default)]
    pub worker: Option<String>,
    /// Its attempts, oldest first (the first 3 and the last 20 are kept): read by
    /// [`Queue::get`](crate::Queue::get); empty in lists.
    #[serde(default)]
    pub attempt_history: Vec<crate::attempts::AttemptInfo>,
    /// Its log ([`Job::log`]), oldest first: read by [`Queue::get`](crate::Queue::get); empty in
    /// lists.
    #[serde(default)]
    pub logs: Vec<crate::attempts::LogLine>,
}

fn one() -> u32 {
    1
}

/// How a job ended, as [`Queue::wait`](crate::Queue::wait) reports a completed one (a job that
/// went to the dead letters or was cancelled is an error, `JOB_FAILED`, instead).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct JobOutcome {
    pub id: String,
    /// What the handler returned (`None`: nothing).
    pub result: Option<Vec<u8>>,
}

/// Counts per state plus lifetime counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobStats {
    pub delayed: u64,
    pub ready: u64,
    pub active: u64,
    pub dead: u64,
    /// Completed jobs kept now (`keep_completed`, `keep_for`): what a listing of the
    /// completed state holds. `completed` is the lifetime counter.
    pub completed_kept: u64,
    /// Flow jobs waiting for their children (or for their flow to be written whole).
    pub waiting: u64,
    pub enqueued: u64,
    /// Jobs completed, ever (a counter; `completed_kept` of them are kept).
    pub completed: u64,
    /// Jobs that exhausted their attempts (dead-lettered).
    pub dead_lettered: u64,
    /// Failed attempts scheduled for a retry.
    pub retried: u64,
    /// Expired leases recovered (worker died or stalled).
    pub recovered: u64,
    pub cancelled: u64,
    /// Jobs not started by their deadline (`expires_after`, `expires_at_ms`): dead-lettered
    /// without running.
    pub expired: u64,
    /// Deliveries whose handler asked to run the job later ([`Snooze`](crate::Snooze),
    /// [`BackOff`](crate::BackOff)), not counted as attempts.
    pub snoozed: u64,
    /// Dead-lettered jobs deleted by the `keep_dead` / `keep_dead_for` bounds.
    pub dead_trimmed: u64,
    /// Jobs found with their envelope or their state record missing (evicted by Redis, or deleted
    /// by hand): removed, since they could not run. Unreadable records are dead-lettered instead.
    pub lost: u64,
    /// The queue is paused ([`Queue::pause`](crate::Queue::pause)): workers start nothing.
    pub paused: bool,
    /// How long the job next in line that waited longest has been ready to start (zero when no
    /// job is ready): since its enqueue, or since it became ready later (a delayed job's or a
    /// retry's due time, a release, a requeue). Due delayed jobs count before a worker promotes
    /// them, so it grows with no worker running. Read from the first jobs in line of each list and
    /// of the first 100 groups in the rotation; the longest over the shards.
    #[serde(default)]
    pub latency: Duration,
}

/// A leased job, as the worker runtime hands it to a handler.
#[derive(Debug, Clone)]
pub struct Job {
    pub id: String,
    pub payload: Vec<u8>,
    /// 1 on first delivery.
    pub attempt: u32,
    pub max_attempts: u32,
    /// Redis-clock ms.
    pub enqueued_at: u64,
    /// When this attempt started (leased), Redis-clock ms.
    pub started_at: u64,
    pub queue: String,
    pub timeout: Option<Duration>,
    /// The task's name, when the job was enqueued as a task.
    pub task: Option<String>,
    /// How the payload encodes the task's arguments (`None`: raw bytes).
    pub format: Option<PayloadFormat>,
    /// The producer's trace context, when it had one (see [`EnqueueOptions::trace`]).
    pub trace: Option<TraceContext>,
    /// Where its payload came from, when it was filled from its children's results (a chain's
    /// link, a chord's callback).
    pub args_from: Option<crate::envelope::ArgsFrom>,
    pub(crate) backoff: Backoff,
    pub(crate) token: String,
    pub(crate) shard: usize,
    /// Fired when the handler should stop: its attempt timed out, its cancel was requested, or
    /// the worker is shutting down and the grace period is over.
    pub(crate) cancel: CancellationToken,
    /// The queue the job was leased from (for [`progress`](Self::progress)), shared by the jobs
    /// of one fetch.
    pub(crate) owner: std::sync::Arc<crate::jobs::Queue>,
    /// Set (before `cancel` fires) when the job's cancel was requested.
    pub(crate) cancel_requested: Arc<AtomicBool>,
    /// The concurrency limiter its group names, whose slot it holds until it ends
    /// ([`Queue::set_group_limiter`](crate::Queue::set_group_limiter)).
    pub(crate) group_limit: Option<Arc<str>>,
}

/// What settling a leased job needs (no payload): id, lease token, attempt, backoff.
#[derive(Debug, Clone)]
pub(crate) struct Lease {
    pub id: String,
    pub token: String,
    pub attempt: u32,
    pub backoff: Backoff,
    pub shard: usize,
    /// An ack of this lease was sent before and its reply lost (so "already completed" means
    /// this delivery completed it).
    pub resent: bool,
    /// What the handler returned, sent with the ack (`None`: nothing, the common case).
    pub result: Option<Vec<u8>>,
    /// When the attempt started (Redis-clock ms; 0: unknown), and the worker that runs it (its
    /// id in the queue's `workers` set): recorded with the attempt's end (see
    /// docs/data-model.md, "Attempts and logs").
    pub started: u64,
    pub worker: Option<std::sync::Arc<str>>,
    /// Set once a lease renewal recorded the attempt as under way in the job's attempts (a
    /// worker's lease: `None` for a manual one), so that its end is recorded there too.
    pub recorded: Option<Arc<AtomicBool>>,
    /// The job's task name (`None`: a raw payload), for the worker's per-task counts
    /// ([`Queue::task_metrics`](crate::Queue::task_metrics)).
    pub task: Option<Arc<str>>,
    /// The concurrency limiter its group names, whose slot it holds (see [`Job`]).
    pub group_limit: Option<Arc<str>>,
}

impl Lease {
    /// The attempt's run as the scripts take it, `"<start ms>~<worker id>"` (`lib/attempts.lua`
    /// `run_of`), or "" when its start is unknown.
    pub(crate) fn run_arg(&self) -> String {
        if self.started == 0 {
            return String::new();
        }
        format!("{}~{}", self.started, self.worker.as_deref().unwrap_or(""))
    }

    /// Whether a renewal recorded the attempt as under way (see [`recorded`](Self::recorded)).
    pub(crate) fn is_recorded(&self) -> bool {
        self.recorded
            .as_ref()
            .is_some_and(|r| r.load(Ordering::Relaxed))
    }
}

impl Job {
    pub(crate) fn lease(&self) -> Lease {
        Lease {
            id: self.id.clone(),
            token: self.token.clone(),
            attempt: self.attempt,
            backoff: self.backoff,
            shard: self.shard,
            resent: false,
            result: None,
            started: self.started_at,
            worker: None,
            recorded: None,
            task: self.task.as_deref().map(Arc::from),
            group_limit: self.group_limit.clone(),
        }
    }

    /// Stores `value` as this job's progress (readable with `get`), replacing the last one, at
    /// once. `LEASE_LOST` when the lease was lost (the job was redelivered); `PAYLOAD_TOO_LARGE`
    /// past the queue's `max_result_len`.
    pub async fn progress(&self, value: impl AsRef<[u8]>) -> Result<()> {
        self.owner.set_progress(self, value.as_ref()).await
    }

    /// The cooperative stop signal of this attempt: cancelled when the attempt's `timeout`
    /// passes, when the job's [`Queue::cancel`](crate::Queue::cancel) is requested (within a
    /// second) or when the worker shuts down and its grace period is over. A handler that can
    /// stop early (a long loop, a wait) should watch it (`is_cancelled()`, or `await cancelled()`
    /// in a `select!`) and return; its job is then retried (timeout), ends cancelled (cancel) or
    /// is returned to the queue (shutdown). Until the handler returns, the job keeps its slot and
    /// its lease.
    pub fn cancellation(&self) -> &CancellationToken {
        &self.cancel
    }

    /// True once the job's [`Queue::cancel`](crate::Queue::cancel) was requested and its worker
    /// saw it (then [`cancellation`](Self::cancellation) has fired, and the job ends cancelled).
    pub fn cancel_requested(&self) -> bool {
        self.cancel_requested.load(Ordering::SeqCst)
    }

    /// True once the attempt should stop (see [`cancellation`](Self::cancellation)).
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// The payload as UTF-8 text.
    pub fn payload_str(&self) -> Result<&str> {
        std::str::from_utf8(&self.payload)
            .map_err(|e| Error::invalid(format!("payload is not UTF-8: {e}")).with_source(e))
    }
}

/// Checks a job id: 1–256 bytes, no control characters.
pub fn validate_job_id(id: &str) -> Result<()> {
    validate_label("job id", id)
}

/// Checks the id of a job to be made: a valid id that is not `.` or `..` (which a URL path, such
/// as the dashboard's job page, cannot carry).
pub(crate) fn validate_new_job_id(id: &str) -> Result<()> {
    validate_job_id(id)?;
    if id == "." || id == ".." {
        return Err(Error::invalid(format!(
            "job id {id:?} is refused: it cannot be part of a URL path (the dashboard's job page)"
        )));
    }
    Ok(())
}

/// The latest time (and longest delay) a job takes, in ms: 9999-12-31 23:59:59.999 UTC.
pub(crate) const MAX_TIME_MS: u64 = 253_402_300_799_999;

/// Checks a time (epoch ms) or duration (ms) of a job's options against [`MAX_TIME_MS`].
pub(crate) fn check_time(what: &str, value: Option<u64>) -> Result<()> {
    match value {
        Some(v) if v > MAX_TIME_MS => Err(Error::invalid(format!(
            "{what} is past the year 9999 ({v} ms); give a time or delay before it"
        ))),
        _ => Ok(()),
    }
}

/// Checks a job id or task name: 1–256 bytes, no control characters.
pub(crate) fn validate_label(what: &str, s: &str) -> Result<()> {
    if s.is_empty() || s.len() > 256 {
        return Err(Error::invalid(format!(
            "{what} must be 1 to 256 bytes, got {}",
            s.len()
        )));
    }
    if s.chars().any(char::is_control) {
        return Err(Error::invalid(format!(
            "{what} {s:?} contains control characters"
        )));
    }
    Ok(())
}

pub(crate) fn new_job_id() -> String {
    format!("{:032x}", fastrand::u128(..))
}

pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

pub(crate) fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
