//! Test modes: run the code that enqueues without a Redis. While a mode is on (process-wide),
//! every [`Queue`]'s `enqueue`, `enqueue_many` and `enqueue_task` goes through the same
//! validation and envelope encoding as against Redis (bad input still errors, and then nothing is
//! recorded), and the job is recorded here instead of being sent:
//!
//! - [`fake`]: jobs are recorded, not run. Look at them ([`TestMode::enqueued`],
//!   [`TestMode::assert_enqueued`]) and run them with [`TestMode::drain`], which also runs what
//!   their handlers enqueue.
//! - [`inline`]: each enqueue runs its job at once in the caller, with the handlers given.
//!
//! A recorded job runs through the worker's own code for one attempt (the handler's `Ok`, error,
//! panic and timeout, [`Snooze`](crate::Snooze), [`BackOff`](crate::BackOff) and
//! [`DontRetry`](crate::DontRetry) read as a worker reads them), retried at once (no backoff
//! sleep) until it completes or dies after its `max_attempts`, with the error a worker records.
//! `get` and `wait` answer from the record; every other operation of a job queue is refused
//! (`NOT_SUPPORTED`), and no Redis connection is made. [`TestMode::stop`] (or dropping the
//! [`Guard`]) returns to Redis.
//!
//! For tests against a real Redis, the `tideq-testing` crate starts a private `redis-server`
//! (`tideq_testing::RedisServer`).
//!
//! ```
//! use serde_json::json;
//! use tideq::testing::{self, Handlers, JobFilter, RecordedState};
//! use tideq::{Client, Config, EnqueueOptions, Job, Queue, QueueOptions, Tasks};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> tideq::Result<()> {
//! let fake = testing::fake_guard()?;
//! let q = Queue::new(&Client::new(Config::new("redis://127.0.0.1:6379"))?, "emails", QueueOptions::default())?;
//! q.enqueue_task("welcome", &json!({"to": "ada@example.com"}), EnqueueOptions::default()).await?;
//!
//! fake.assert_enqueued(&JobFilter::task("welcome").args(json!({"to": "ada@example.com"})))
//!     .expect("enqueued");
//! let tasks = Tasks::new().task("welcome", |args: serde_json::Value, _job: Job| async move {
//!     Ok::<_, String>(format!("sent to {}", args["to"].as_str().unwrap_or("?")))
//! });
//! let report = fake.drain(&Handlers::new().tasks("emails", tasks)).await?;
//! assert_eq!(report.completed, 1);
//! assert_eq!(fake.jobs(&JobFilter::default())[0].state, RecordedState::Completed);
//! # Ok(()) }
//! ```

mod record;
mod run;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::envelope::{Envelope, PayloadFormat, Value};
use crate::error::{Error, ErrorKind, Result};
use crate::jobs::Queue;
use crate::task::Tasks;
use crate::worker::{Handlers as Run, JobHandler};

pub(crate) use record::Entry;

/// Whether a mode is on: the one load the real path pays.
static ON: AtomicBool = AtomicBool::new(false);
/// The mode that is on.
static ACTIVE: Mutex<Option<TestMode>> = Mutex::new(None);

/// Which test mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Jobs are recorded, not run, until [`TestMode::drain`].
    Fake,
    /// Jobs run at once, in the enqueue.
    Inline,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Fake => "fake",
            Mode::Inline => "inline",
        }
    }
}

/// Whether a test mode is on (one relaxed atomic load).
#[inline]
pub(crate) fn active() -> bool {
    ON.load(Ordering::Relaxed)
}

/// Starts fake mode: enqueues are recorded, not run. `INVALID_ARGUMENT` when a mode is on.
pub fn fake() -> Result<TestMode> {
    start(Mode::Fake, Handlers::new(), false)
}

/// Starts inline mode: each enqueue runs its job at once with `handlers` (a job of a queue they
/// have no handler for stays recorded, not run). With `raise_errors`, an enqueue whose job ends
/// dead gives `JOB_FAILED` with the job's error (the job stays recorded, dead).
/// `INVALID_ARGUMENT` when a mode is on.
pub fn inline(handlers: Handlers, raise_errors: bool) -> Result<TestMode> {
    start(Mode::Inline, handlers, raise_errors)
}

/// [`fake`], stopped when the guard is dropped.
pub fn fake_guard() -> Result<Guard> {
    fake().map(Guard)
}

/// [`inline`], stopped when the guard is dropped.
pub fn inline_guard(handlers: Handlers, raise_errors: bool) -> Result<Guard> {
    inline(handlers, raise_errors).map(Guard)
}

/// The mode that is on, if any.
pub fn current() -> Option<TestMode> {
    if !active() {
        return None;
    }
    ACTIVE.lock().unwrap().clone()
}

fn start(mode: Mode, handlers: Handlers, raise_errors: bool) -> Result<TestMode> {
    let mut active = ACTIVE.lock().unwrap();
    if let Some(on) = &*active {
        return Err(Error::invalid(format!(
            "tideq's {} test mode is already on: stop it before starting another",
            on.mode().as_str()
        )));
    }
    let m = TestMode(Arc::new(Inner {
        mode,
        handlers: Mutex::new(handlers),
        raise_errors,
        jobs: Mutex::new(Vec::new()),
    }));
    *active = Some(m.clone());
    ON.store(true, Ordering::SeqCst);
    Ok(m)
}

/// The error of an operation a test mode does not answer.
pub(crate) fn refused(op: &str) -> Error {
    let mode = current().map_or("test", |m| m.mode().as_str());
    Error::new(
        ErrorKind::NotSupported,
        format!(
            "{op} is not available in tideq's {mode} mode, which records jobs without a Redis \
             (enqueue, get and wait only): test it against a real Redis"
        ),
    )
}

/// A test mode that was started (cheap to clone). It stays on until [`stop`](Self::stop).
#[derive(Clone)]
pub struct TestMode(Arc<Inner>);

struct Inner {
    mode: Mode,
    /// Inline mode's handlers (drains use them too).
    handlers: Mutex<Handlers>,
    raise_errors: bool,
    /// Every recorded job, in enqueue order.
    jobs: Mutex<Vec<Entry>>,
}

impl std::fmt::Debug for TestMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestMode")
            .field("mode", &self.0.mode)
            .field("jobs", &self.0.jobs.lock().unwrap().len())
            .finish()
    }
}

impl TestMode {
    pub fn mode(&self) -> Mode {
        self.0.mode
    }

    /// Whether this mode is the one on (false once stopped).
    pub fn is_on(&self) -> bool {
        ACTIVE
            .lock()
            .unwrap()
            .as_ref()
            .is_some_and(|m| Arc::ptr_eq(&m.0, &self.0))
    }

    /// Turns the mode off: queues use Redis again. Idempotent; the record stays readable.
    pub fn stop(&self) {
        let mut active = ACTIVE.lock().unwrap();
        if active.as_ref().is_some_and(|m| Arc::ptr_eq(&m.0, &self.0)) {
            *active = None;
            ON.store(false, Ordering::SeqCst);
        }
    }

    /// Replaces the mode's own handlers (inline mode runs jobs with them; a drain adds the ones
    /// it is given): for handlers registered after the mode started.
    pub fn set_handlers(&self, handlers: Handlers) {
        *self.0.handlers.lock().unwrap() = handlers;
    }

    pub(crate) fn own_handlers(&self) -> Handlers {
        self.0.handlers.lock().unwrap().clone()
    }

    /// Forgets every recorded job.
    pub fn clear(&self) {
        self.0.jobs.lock().unwrap().clear();
    }
}

/// Stops its mode when dropped.
#[derive(Debug)]
pub struct Guard(pub TestMode);

impl std::ops::Deref for Guard {
    type Target = TestMode;
    fn deref(&self) -> &TestMode {
        &self.0
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        self.0.stop();
    }
}

/// The handlers a drain (or inline mode) runs jobs with, by queue name: a queue's [`Tasks`] (as
/// [`Queue::work_tasks`] takes them) or one handler for all its jobs (as [`Queue::work`]).
#[derive(Clone, Default)]
pub struct Handlers {
    pub(crate) by_queue: HashMap<String, Run>,
}

impl Handlers {
    pub fn new() -> Self {
        Handlers::default()
    }

    /// Queue `queue`'s tasks.
    pub fn tasks(mut self, queue: &str, tasks: Tasks) -> Self {
        self.by_queue
            .insert(queue.to_string(), Run::Tasks(Arc::new(tasks)));
        self
    }

    /// One handler for every job of queue `queue` (as [`Queue::work`] takes it).
    pub fn raw<F, Fut, R, E>(self, queue: &str, handler: F) -> Self
    where
        F: Fn(crate::Job) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = std::result::Result<R, E>> + Send + 'static,
        R: crate::IntoJobResult + 'static,
        E: Into<crate::HandlerError> + 'static,
    {
        self.raw_boxed(queue, crate::worker::boxed(handler))
    }

    /// Binding plumbing, not part of the stable API: a queue's already boxed handler.
    #[doc(hidden)]
    pub fn raw_boxed(mut self, queue: &str, handler: JobHandler) -> Self {
        self.by_queue.insert(queue.to_string(), Run::One(handler));
        self
    }

    /// These handlers, then `other`'s (which win for a queue both have).
    pub fn merged(mut self, other: &Handlers) -> Self {
        for (q, h) in &other.by_queue {
            self.by_queue.insert(q.clone(), h.clone());
        }
        self
    }
}

/// Which recorded jobs: every field given must match.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JobFilter {
    pub queue: Option<String>,
    pub task: Option<String>,
    pub id: Option<String>,
    /// The decoded task arguments equal these (JSON arguments are compared as MessagePack
    /// values: a JSON object is a map, a number an integer or a float).
    pub args: Option<Value>,
    pub group: Option<String>,
    pub priority: Option<u32>,
    /// The delay asked for at enqueue (`delay`, or a debounce's delay).
    pub delay: Option<Duration>,
}

impl JobFilter {
    /// Jobs of task `name`.
    pub fn task(name: &str) -> Self {
        JobFilter {
            task: Some(name.to_string()),
            ..Default::default()
        }
    }

    /// Jobs of queue `name`.
    pub fn queue(name: &str) -> Self {
        JobFilter {
            queue: Some(name.to_string()),
            ..Default::default()
        }
    }

    /// Also: in queue `name`.
    pub fn in_queue(mut self, name: &str) -> Self {
        self.queue = Some(name.to_string());
        self
    }

    /// Also: with these arguments (anything serde can serialize; JSON-like values compare).
    pub fn args<T: serde::Serialize>(mut self, args: T) -> Self {
        self.args = serde_json::to_value(args)
            .ok()
            .map(|v| record::json_value(&v));
        self
    }

    /// Also: enqueued with this delay.
    pub fn delay(mut self, delay: Duration) -> Self {
        self.delay = Some(delay);
        self
    }
}

/// Where a recorded job is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordedState {
    /// Recorded, not run yet (or left by a drain: no handler for its queue, or it snoozed too
    /// many times).
    Enqueued,
    Completed,
    Dead,
}

impl RecordedState {
    /// `enqueued`, `completed` or `dead`.
    pub fn as_str(self) -> &'static str {
        match self {
            RecordedState::Enqueued => "enqueued",
            RecordedState::Completed => "completed",
            RecordedState::Dead => "dead",
        }
    }
}

/// A job as a test mode recorded it.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedJob {
    pub id: String,
    pub queue: String,
    pub task: Option<String>,
    pub format: Option<PayloadFormat>,
    /// The payload as enqueued (a task's encoded arguments).
    pub payload: Vec<u8>,
    /// The envelope as it would have been stored in Redis (the real encoding).
    pub envelope: Vec<u8>,
    /// The decoded task arguments (`None` for a job enqueued with raw bytes).
    pub args: Option<Value>,
    /// The delay asked for (`None`: none).
    pub delay: Option<Duration>,
    /// `run_at_ms` as asked.
    pub run_at_ms: Option<u64>,
    pub priority: Option<u32>,
    pub group: Option<String>,
    /// Its cost (1 unless enqueued with another).
    pub cost: u32,
    pub max_attempts: u32,
    pub state: RecordedState,
    /// Attempts made (snoozes not counted).
    pub attempts: u32,
    /// What the handler returned, as a worker stores it.
    pub result: Option<Vec<u8>>,
    /// The last progress the handler reported.
    pub progress: Option<Vec<u8>>,
    /// The last attempt's error (kept after a later attempt completed, as `get` shows it).
    pub error: Option<String>,
    /// Every failed attempt's error, in order.
    pub errors: Vec<String>,
    /// What its handlers logged ([`Job::log`](crate::Job::log)), oldest first.
    pub logs: Vec<crate::attempts::LogLine>,
}

/// What a [`TestMode::drain`] ran.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DrainReport {
    /// Attempts made (snoozes not counted).
    pub ran: usize,
    pub completed: usize,
    pub dead: usize,
    /// Jobs left recorded, not run: no handler for their queue, or they kept snoozing.
    pub left: usize,
}

#[allow(dead_code)]
fn _assert_send_sync() {
    fn is<T: Send + Sync>() {}
    is::<TestMode>();
    is::<Envelope>();
}
