//! How a worker fetches and runs jobs (its options, a batch worker's options), and what it has
//! done so far (its stats).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// How a batch worker gathers jobs for its handler ([`Queue::work_batches`](crate::Queue::work_batches)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchOptions {
    /// Most jobs per handler call (at most the worker's concurrency, and at most
    /// [`MAX_FETCH`](crate::MAX_FETCH)).
    pub size: usize,
    /// Longest a leased job waits for the batch to fill; zero hands over whatever one fetch
    /// brought. The jobs' leases are renewed while they wait.
    pub wait: Duration,
}

impl Default for BatchOptions {
    fn default() -> Self {
        BatchOptions {
            size: 10,
            wait: Duration::ZERO,
        }
    }
}

/// How a worker fetches and runs jobs.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkerOptions {
    /// Jobs run at the same time. Default 10.
    pub concurrency: usize,
    /// Most jobs leased per fetch (0 = half the concurrency, rounded up, at most
    /// [`MAX_FETCH`](crate::MAX_FETCH): two fetches are kept in flight). At most `MAX_FETCH`.
    /// Default 0.
    pub batch_size: usize,
    /// Lease length: a job whose worker stops renewing is redelivered this long after the last
    /// renewal. Renewed every `lease / 3` (at least every 15 s) while the handler runs. Default
    /// 30 s.
    pub lease: Duration,
    /// Longest idle wait before looking again (wake-ups usually come sooner). Default 5 s.
    pub poll_interval: Duration,
    /// On shutdown, how long running jobs may take. Past it, the handlers still running are asked
    /// to stop ([`Job::cancellation`](crate::Job::cancellation)); each such job is returned to the queue (its attempt not
    /// counted) once its handler has returned, never while it may still run: until then it keeps
    /// its lease. Default 10 s.
    pub grace: Duration,
    /// Stop by itself once nothing is ready, delayed or active (scripts, tests).
    pub stop_when_drained: bool,
    /// Fire the queue's schedules' due slots ([`Queue::upsert_schedule`](crate::Queue::upsert_schedule)): any number of
    /// workers may, each slot still makes one job. A new or changed schedule is seen within
    /// `poll_interval`; without schedules this costs one call per `poll_interval`. Default true.
    pub schedules: bool,
    /// Most jobs this worker leases in its life (`None`: no limit). Once it has leased that
    /// many it stops leasing, lets the jobs it holds finish (a stop meanwhile gives them the
    /// grace, as usual) and stops by itself: a way to recycle a worker process (see
    /// [`serve`](crate::serve)). Exact: it never leases one more. Default `None`.
    pub max_jobs: Option<u64>,
    /// The runtime the worker's handlers are written for, as [`Queue::workers`](crate::Queue::workers)
    /// shows it: "rust", or "python" / "node" (set by the bindings). Default "rust".
    #[doc(hidden)]
    pub runtime: &'static str,
}

impl Default for WorkerOptions {
    fn default() -> Self {
        WorkerOptions {
            concurrency: 10,
            batch_size: 0,
            lease: Duration::from_secs(30),
            poll_interval: Duration::from_secs(5),
            grace: Duration::from_secs(10),
            stop_when_drained: false,
            schedules: true,
            max_jobs: None,
            runtime: "rust",
        }
    }
}

impl WorkerOptions {
    pub(super) fn validate(&self) -> Result<()> {
        if self.concurrency == 0 {
            return Err(Error::invalid("concurrency must be at least 1"));
        }
        if self.max_jobs == Some(0) {
            return Err(Error::invalid("max_jobs must be at least 1"));
        }
        if self.lease < Duration::from_millis(30) {
            return Err(Error::invalid("lease must be at least 30 ms"));
        }
        if self.poll_interval < Duration::from_millis(10) {
            return Err(Error::invalid("poll_interval must be at least 10 ms"));
        }
        if self.batch_size > crate::job::MAX_FETCH {
            return Err(Error::invalid(format!(
                "batch_size is {}; one fetch leases at most {} jobs (a larger concurrency is \
                 filled by several fetches)",
                self.batch_size,
                crate::job::MAX_FETCH
            )));
        }
        Ok(())
    }
}

/// What a worker has done so far (this process only).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkerStats {
    /// Jobs whose handler succeeded and whose ack was accepted.
    pub completed: u64,
    /// Attempts that failed (handler error, panic or timeout).
    pub failed: u64,
    /// Acks/fails refused because the lease had been lost.
    pub lease_lost: u64,
    /// Jobs returned to the queue at shutdown.
    pub released: u64,
    pub fetch_errors: u64,
    /// Jobs that ended cancelled: their [`Queue::cancel`](crate::Queue::cancel) was requested while they ran.
    pub cancelled: u64,
    /// Attempts whose handler asked to run the job later ([`Snooze`](crate::Snooze),
    /// [`BackOff`](crate::BackOff)), not counted as attempts.
    pub snoozed: u64,
}

#[derive(Default)]
pub(super) struct Counters {
    pub(super) completed: AtomicU64,
    pub(super) failed: AtomicU64,
    pub(super) lease_lost: AtomicU64,
    pub(super) released: AtomicU64,
    pub(super) fetch_errors: AtomicU64,
    pub(super) cancelled: AtomicU64,
    pub(super) snoozed: AtomicU64,
    /// Jobs leased so far (`Worker::jobs_taken`).
    pub(super) taken: AtomicU64,
    /// The latest fetch on every shard succeeded (`Worker::is_ready`).
    pub(super) ready: AtomicBool,
}

impl Counters {
    pub(super) fn snapshot(&self) -> WorkerStats {
        WorkerStats {
            completed: self.completed.load(Ordering::Relaxed),
            failed: self.failed.load(Ordering::Relaxed),
            lease_lost: self.lease_lost.load(Ordering::Relaxed),
            released: self.released.load(Ordering::Relaxed),
            fetch_errors: self.fetch_errors.load(Ordering::Relaxed),
            cancelled: self.cancelled.load(Ordering::Relaxed),
            snoozed: self.snoozed.load(Ordering::Relaxed),
        }
    }
}
