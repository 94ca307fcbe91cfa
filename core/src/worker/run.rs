//! One job's (or one batch's) run: its task, its lease and stop signal as the renewer sees
//! them, and what its outcome sends (an ack, a failure, a release).

use std::collections::HashMap;

use futures_util::FutureExt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::OwnedSemaphorePermit;

use tokio::task::JoinSet;

use crate::error::{Error, ErrorKind};
use tokio_util::sync::CancellationToken;

use crate::job::{Job, Lease};
use crate::jobs::Queue;
use crate::lease::Failed;

use super::*;

/// The error text of an attempt that ended because its cancel was requested.
pub(super) const CANCELLED: &str = "cancelled: its cancel was requested";

/// A running job, as the renewer sees it.
pub(super) struct Running {
    pub(super) lease: Lease,
    /// Its stop signal (timeout, end of the shutdown grace, cancel request).
    pub(super) cancel: CancellationToken,
    /// Its [`Queue::cancel`] was requested: it ends cancelled once its handler returns (the
    /// job's own flag, [`Job::cancel_requested`]).
    pub(super) cancel_requested: Arc<AtomicBool>,
}

/// Running jobs' leases (for the renewer) and stop signals, by a per-worker sequence number.
pub(super) type InFlight = Arc<Mutex<HashMap<u64, Running>>>;

/// Leased jobs waiting for their batch to fill (a batch worker): their leases are renewed
/// meanwhile (they are in flight), and they hold their slots.
#[derive(Default)]
pub(super) struct Pending {
    pub(super) jobs: Vec<(Job, OwnedSemaphorePermit, u64)>,
    /// When the oldest waiting job's wait is over.
    pub(super) deadline: Option<tokio::time::Instant>,
}

impl Pending {
    pub(super) fn add(
        &mut self,
        ctx: &Arc<JobCtx>,
        job: Job,
        permit: OwnedSemaphorePermit,
        b: BatchOptions,
    ) {
        let key = ctx.hold(&job);
        self.jobs.push((job, permit, key));
        self.deadline
            .get_or_insert_with(|| tokio::time::Instant::now() + b.wait);
    }

    /// Starts every full batch, and (when `all`, or the wait is over) the rest.
    pub(super) fn hand_over(
        &mut self,
        ctx: &Arc<JobCtx>,
        tasks: &mut JoinSet<()>,
        b: BatchOptions,
        all: bool,
    ) {
        let due = all
            || self
                .deadline
                .is_some_and(|d| d <= tokio::time::Instant::now());
        while self.jobs.len() >= b.size || (due && !self.jobs.is_empty()) {
            let n = self.jobs.len().min(b.size);
            let batch: Vec<_> = self.jobs.drain(..n).collect();
            let ctx = ctx.clone();
            tasks.spawn(async move { ctx.run_batch(batch).await });
        }
        if self.jobs.is_empty() {
            self.deadline = None;
        } else if due {
            self.deadline = Some(tokio::time::Instant::now() + b.wait);
        }
    }
}

/// What a job's task needs from its worker (shared: one `Arc` clone per job).
pub(super) struct JobCtx {
    pub(super) next_key: AtomicU64,
    pub(super) queue: Queue,
    pub(super) handler: Handlers,
    pub(super) counters: Arc<Counters>,
    pub(super) in_flight: InFlight,
    pub(super) acks: Arc<AckQueue>,
    /// Run times, for this worker's metrics and its reports.
    pub(super) metrics: Arc<crate::metrics::WorkerMetrics>,
    /// Set when the grace period is over: a cancelled job's handler then ended because the worker
    /// is stopping, and the job goes back to the queue instead of failing its attempt.
    pub(super) shutting_down: AtomicBool,
    /// This worker's id (the `workers` set's), recorded with its jobs' attempts.
    pub(super) worker: Arc<str>,
}

impl JobCtx {
    /// `job`'s lease, naming this worker (its attempt's record says which worker ran it).
    pub(super) fn lease_of(&self, job: &Job) -> Lease {
        Lease {
            worker: Some(self.worker.clone()),
            recorded: Some(Default::default()),
            ..job.lease()
        }
    }

    /// Puts a leased job in flight: its lease is renewed and its stop signal fired at shutdown
    /// until [`settled`](Self::settled).
    pub(super) fn hold(&self, job: &Job) -> u64 {
        self.hold_lease(job).0
    }

    /// [`hold`](Self::hold), with the lease held: the renewer's copy and this one share whether
    /// the attempt's run was recorded (see [`Lease::recorded`]).
    pub(super) fn hold_lease(&self, job: &Job) -> (u64, Lease) {
        let key = self.next_key.fetch_add(1, Ordering::Relaxed);
        let lease = self.lease_of(job);
        self.in_flight.lock().unwrap().insert(
            key,
            Running {
                lease: lease.clone(),
                cancel: job.cancel.clone(),
                cancel_requested: job.cancel_requested.clone(),
            },
        );
        (key, lease)
    }

    /// The lease of a job put in flight as `key` (its renewer's copy), or a new one.
    fn held_lease(&self, key: u64, job: &Job) -> Lease {
        let in_flight = self.in_flight.lock().unwrap();
        in_flight
            .get(&key)
            .map(|r| r.lease.clone())
            .unwrap_or_else(|| self.lease_of(job))
    }

    /// Takes jobs out of flight; per job, whether its cancel was requested.
    pub(super) fn settled(&self, keys: &[u64]) -> Vec<bool> {
        let mut in_flight = self.in_flight.lock().unwrap();
        keys.iter()
            .map(|k| {
                in_flight
                    .remove(k)
                    .is_some_and(|r| r.cancel_requested.load(Ordering::SeqCst))
            })
            .collect()
    }

    /// Runs a leased job on its own task, in the worker's slot `permit`.
    pub(super) fn spawn(
        self: &Arc<Self>,
        tasks: &mut JoinSet<()>,
        job: Job,
        permit: OwnedSemaphorePermit,
    ) {
        let (key, held) = self.hold_lease(&job);
        let ctx = self.clone();
        tasks.spawn(async move { ctx.run_job(job, held, key, permit).await });
    }

    /// Runs a batch handler on `batch`, then completes, fails or (at shutdown) returns each job
    /// as the handler said. The jobs keep their slots until the handler's future has completed.
    pub(super) async fn run_batch(&self, batch: Vec<(Job, OwnedSemaphorePermit, u64)>) {
        let Handlers::Batch(handler, _) = &self.handler else {
            unreachable!("batches run only on a batch worker")
        };
        let mut jobs = Vec::with_capacity(batch.len());
        let mut held = Vec::with_capacity(batch.len());
        let mut keys = Vec::with_capacity(batch.len());
        let mut permits = Vec::with_capacity(batch.len());
        for (mut job, permit, key) in batch {
            if job.args_from.is_some() {
                if let Err(why) = Box::pin(job.fill_args()).await {
                    Box::pin(self.unfilled(job.lease(), key, permit, why)).await;
                    continue;
                }
            }
            held.push(self.held_lease(key, &job));
            keys.push(key);
            permits.push(permit);
            jobs.push(job);
        }
        if jobs.is_empty() {
            return;
        }
        // The batch's time limit is the smallest of its jobs'.
        let timeout = jobs.iter().filter_map(|j| j.timeout).min();
        let cancels: Vec<CancellationToken> = jobs.iter().map(|j| j.cancel.clone()).collect();
        let started = std::time::Instant::now();
        let handled = std::panic::AssertUnwindSafe(handler(jobs)).catch_unwind();
        tokio::pin!(handled);
        let mut timed_out = None;
        let outcome = match timeout {
            Some(t) => tokio::select! {
                r = &mut handled => r,
                _ = tokio::time::sleep(t) => {
                    timed_out = Some(t);
                    cancels.iter().for_each(CancellationToken::cancel);
                    handled.await
                }
            },
            None => handled.await,
        };
        // Each job of the batch ran for the batch's time.
        let took = started.elapsed();
        for l in &held {
            self.metrics.run.observe(took);
            self.metrics.tasks.ran(l.task.as_deref(), took);
        }
        let mut result = outcome.unwrap_or_else(|_| Err(BatchError::all("handler panicked")));
        if let Some(t) = timed_out {
            result = Err(BatchError::All(format!(
                "timed out after {} ms",
                t.as_millis()
            )));
        }
        let requested = self.settled(&keys);
        let mut failed: HashMap<String, String> = match result {
            Ok(()) => HashMap::new(),
            Err(BatchError::All(msg)) => held.iter().map(|l| (l.id.clone(), msg.clone())).collect(),
            Err(BatchError::Jobs(list)) => list.into_iter().collect(),
        };
        let stopping = timed_out.is_none()
            && self.shutting_down.load(Ordering::SeqCst)
            && cancels.iter().any(CancellationToken::is_cancelled);
        for (lease, requested) in held.into_iter().zip(requested) {
            if requested {
                failed.remove(&lease.id);
                Box::pin(self.fail(lease, CANCELLED.to_string(), None, false)).await;
                continue;
            }
            match failed.remove(&lease.id) {
                None => {
                    self.metrics.tasks.completed(lease.task.as_deref());
                    self.acks.push(lease)
                }
                Some(_) if stopping => Box::pin(self.release(lease)).await,
                Some(msg) => Box::pin(self.fail(lease, msg, None, false)).await,
            }
        }
        if !failed.is_empty() {
            let ids: Vec<&String> = failed.keys().collect();
            log::warn!(
                "tideq: a batch handler of queue {:?} failed job(s) not in its batch: {ids:?}",
                self.queue.name()
            );
        }
        drop(permits);
    }

    /// Fails a job whose arguments could not be filled from its children's results (a chain's
    /// link, a chord's callback): at once when a result cannot be passed on, else (Redis
    /// unreachable) as a failed attempt.
    async fn unfilled(&self, held: Lease, key: u64, permit: OwnedSemaphorePermit, why: Error) {
        self.in_flight.lock().unwrap().remove(&key);
        drop(permit);
        let dead_now = why.kind() == ErrorKind::InvalidArgument;
        let msg = format!("its arguments could not be read from its children's results: {why}");
        Box::pin(self.fail(held, msg, None, dead_now)).await;
    }

    /// Runs one job: the handler (its lease renewed by the worker's renewer), then ack or fail.
    /// The job's slot (`permit`) is held until the handler's future has completed, even past a
    /// timeout (which only fires the job's cancellation), so concurrency is never exceeded and an
    /// attempt never overlaps its retry. Its ack rides on the next fetch.
    pub(super) async fn run_job(
        &self,
        job: Job,
        held: Lease,
        key: u64,
        permit: OwnedSemaphorePermit,
    ) {
        let cancel = job.cancel.clone();
        let handler = match self.handler.for_job(&job) {
            Ok(h) => h,
            Err(why) => {
                // It can never run here: dead-lettered at once, not retried.
                self.in_flight.lock().unwrap().remove(&key);
                drop(permit);
                Box::pin(self.fail(held, why, None, true)).await;
                return;
            }
        };
        let mut job = job;
        // Boxed, and only for a chain's link or a chord's callback: the read's future would
        // otherwise sit in every job's future.
        if job.args_from.is_some() {
            if let Err(why) = Box::pin(job.fill_args()).await {
                Box::pin(self.unfilled(held, key, permit, why)).await;
                return;
            }
        }
        let started = std::time::Instant::now();
        let (result, timed_out) = attempt::call(&handler, job).await;
        let took = started.elapsed();
        self.metrics.run.observe(took);
        self.metrics.tasks.ran(held.task.as_deref(), took);
        // Settling now: the renewer must not extend a lease the ack is about to end.
        let requested = self.settled(&[key])[0];
        let (msg, trace, dead_now) = match attempt::classify(&self.queue, result) {
            // Its cancel was requested: it ends cancelled, whatever the handler returned.
            _ if requested => (CANCELLED.to_string(), None, false),
            // Counted when the fetch loop has sent it (AckQueue::settle); the result rides on
            // the ack.
            Attempt::Done(result) => {
                self.metrics.tasks.completed(held.task.as_deref());
                self.acks.push(Lease { result, ..held });
                return;
            }
            Attempt::Later(delay, scope) => {
                // The slot is held until a back-off is in place, so this worker starts
                // nothing it holds meanwhile.
                Box::pin(self.snooze(held, delay, scope)).await;
                drop(permit);
                return;
            }
            Attempt::Failed {
                error,
                trace,
                dead_now,
            } => (error, trace, dead_now),
        };
        drop(permit);
        // Boxed: the failure path's futures (a script call, retries) would otherwise sit in every
        // job's task, making each spawn copy kilobytes.
        if cancel.is_cancelled()
            && !timed_out
            && !requested
            && self.shutting_down.load(Ordering::SeqCst)
        {
            Box::pin(self.release(held)).await;
        } else {
            Box::pin(self.fail(held, msg, trace, dead_now)).await;
        }
    }

    /// Runs a job again after `delay`, its attempt uncounted (the handler's [`Snooze`] or
    /// [`BackOff`]).
    pub(super) async fn snooze(&self, held: Lease, delay: Duration, scope: Option<BackOffScope>) {
        let q = &self.queue;
        match self
            .settle("snooze", &held, || q.snooze_lease(&held, delay, scope))
            .await
        {
            Some(true) => self.counters.snoozed.fetch_add(1, Ordering::Relaxed),
            Some(false) => self.counters.cancelled.fetch_add(1, Ordering::Relaxed),
            None => 0,
        };
    }

    /// Runs `call` (a script that settles the attempt `held` holds), retrying Redis errors a few
    /// times (100 ms, 200 ms, ...); `None` when it did not go through: the lease was lost
    /// (counted), or the error was fatal or lasted, and then the lease will expire and the job
    /// will be redelivered (the attempt counted).
    async fn settle<T, Fut>(&self, what: &str, held: &Lease, call: impl Fn() -> Fut) -> Option<T>
    where
        Fut: std::future::Future<Output = crate::error::Result<T>>,
    {
        for attempt in 0..5 {
            match call().await {
                Ok(v) => return Some(v),
                Err(e) if e.kind() == ErrorKind::LeaseLost => {
                    self.counters.lease_lost.fetch_add(1, Ordering::Relaxed);
                    log::warn!("tideq: {e}");
                    return None;
                }
                Err(e) if e.is_fatal() => {
                    log::error!(
                        "tideq: could not {what} job {:?} (left to its lease): {e}",
                        held.id
                    );
                    return None;
                }
                Err(e) => {
                    log::warn!(
                        "tideq: could not {what} job {:?} (try {}): {e}",
                        held.id,
                        attempt + 1
                    );
                    tokio::time::sleep(Duration::from_millis(100 << attempt)).await;
                }
            }
        }
        None
    }

    /// Returns a job whose handler stopped because the worker is shutting down; its attempt is
    /// not counted.
    pub(super) async fn release(&self, held: Lease) {
        match self.queue.release_lease(&held).await {
            Ok(true) => {
                self.counters.released.fetch_add(1, Ordering::Relaxed);
            }
            Ok(false) => {
                self.counters.cancelled.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => log::warn!(
                "tideq: could not return job {:?} at shutdown (its lease will expire): {e}",
                held.id
            ),
        }
    }

    /// Fails a job's attempt (retry after backoff, or dead letter), keeping the handler's
    /// `trace` with the attempt's record.
    pub(super) async fn fail(
        &self,
        held: Lease,
        msg: String,
        trace: Option<String>,
        dead_now: bool,
    ) {
        let q = &self.queue;
        let trace = trace.as_deref();
        let failed = self
            .settle("fail", &held, || q.fail_lease(&held, &msg, trace, dead_now))
            .await;
        match failed {
            Some(Failed::Retried) => self.metrics.tasks.failed(held.task.as_deref(), false),
            Some(Failed::DeadLettered) => self.metrics.tasks.failed(held.task.as_deref(), true),
            _ => {}
        }
        match failed {
            Some(Failed::Cancelled) => self.counters.cancelled.fetch_add(1, Ordering::Relaxed),
            Some(_) => self.counters.failed.fetch_add(1, Ordering::Relaxed),
            None => 0,
        };
    }
}
