//! The worker runtime for job queues. One fetch loop per worker leases jobs in batches (up to the
//! free concurrency), runs the handler for each on its own task, renews each lease on a Rust task
//! (so a handler that holds the GIL or blocks the Node event loop cannot let it lapse), and acks
//! or fails by token. Idle, it blocks on a wake-up list that producers signal, for no longer than
//! the time until the next delayed job or lease deadline (Redis clock) or `poll_interval`.

use std::collections::HashMap;

use futures_util::FutureExt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot, watch, Semaphore};

use crate::background::{stopped, Background};
use tokio::task::JoinSet;

use crate::error::{Error, ErrorKind, Result};
use crate::jobs::{Job, Lease, Queue};
use crate::wait::Waiter;

/// The future a job handler returns.
pub type JobFuture =
    Pin<Box<dyn Future<Output = std::result::Result<(), String>> + Send + 'static>>;
/// A job handler, as the runtime stores it.
pub type JobHandler = Arc<dyn Fn(Job) -> JobFuture + Send + Sync + 'static>;

/// How a worker fetches and runs jobs.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkerOptions {
    /// Jobs run at the same time. Default 10.
    pub concurrency: usize,
    /// Most jobs leased per fetch (0 = up to the free concurrency). Default 0.
    pub batch_size: usize,
    /// Lease length: a job whose worker stops renewing is redelivered this long after the last
    /// renewal. Renewed every `lease / 3` while the handler runs. Default 30 s.
    pub lease: Duration,
    /// Longest idle wait before looking again (wake-ups usually come sooner). Default 5 s.
    pub poll_interval: Duration,
    /// On shutdown, how long running jobs may take; unfinished ones are then returned to the
    /// queue at once. Default 10 s.
    pub grace: Duration,
    /// Stop by itself once nothing is ready, delayed or active (scripts, tests).
    pub stop_when_drained: bool,
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
        }
    }
}

impl WorkerOptions {
    fn validate(&self) -> Result<()> {
        if self.concurrency == 0 {
            return Err(Error::invalid("concurrency must be at least 1"));
        }
        if self.lease < Duration::from_millis(30) {
            return Err(Error::invalid("lease must be at least 30 ms"));
        }
        if self.poll_interval < Duration::from_millis(10) {
            return Err(Error::invalid("poll_interval must be at least 10 ms"));
        }
        Ok(())
    }
}

/// What a worker has done so far (this process only).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
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
}

#[derive(Default)]
struct Counters {
    completed: AtomicU64,
    failed: AtomicU64,
    lease_lost: AtomicU64,
    released: AtomicU64,
    fetch_errors: AtomicU64,
}

impl Counters {
    fn snapshot(&self) -> WorkerStats {
        WorkerStats {
            completed: self.completed.load(Ordering::Relaxed),
            failed: self.failed.load(Ordering::Relaxed),
            lease_lost: self.lease_lost.load(Ordering::Relaxed),
            released: self.released.load(Ordering::Relaxed),
            fetch_errors: self.fetch_errors.load(Ordering::Relaxed),
        }
    }
}

/// A running worker. Dropping the handle stops it gracefully, like [`stop`](Self::stop); call
/// [`shutdown`](Self::shutdown) to also wait for it.
#[must_use = "dropping the handle stops the worker"]
pub struct Worker {
    bg: Background,
    counters: Arc<Counters>,
}

impl Worker {
    pub fn stats(&self) -> WorkerStats {
        self.counters.snapshot()
    }

    /// Stop fetching; running jobs get the grace period, then are returned to the queue.
    pub fn stop(&self) {
        self.bg.stop();
    }

    pub fn is_running(&self) -> bool {
        self.bg.is_running()
    }

    /// Waits until the worker has stopped and returns its stats.
    pub async fn join(&self) -> WorkerStats {
        self.bg.join().await;
        self.stats()
    }

    pub async fn shutdown(&self) -> WorkerStats {
        self.stop();
        self.join().await
    }

    /// Runs until SIGINT (Ctrl-C) or SIGTERM, or until the worker stops by itself, then shuts down
    /// gracefully: the usual `main` of a worker process.
    pub async fn run_until_signal(&self) -> WorkerStats {
        self.bg.until_signal().await;
        self.stats()
    }
}

impl Queue {
    /// Starts a worker on the current tokio runtime. The handler's `Err` (or panic, or timeout)
    /// fails the attempt: it is retried after the job's backoff, or dead-lettered after
    /// `max_attempts`.
    pub fn work<F, Fut, E>(&self, opts: WorkerOptions, handler: F) -> Result<Worker>
    where
        F: Fn(Job) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = std::result::Result<(), E>> + Send + 'static,
        E: std::fmt::Display + 'static,
    {
        let handler: JobHandler = Arc::new(move |job| {
            let fut = handler(job);
            Box::pin(async move { fut.await.map_err(|e| e.to_string()) })
        });
        self.work_boxed(opts, handler)
    }

    /// [`work`](Self::work) with an already boxed handler (used by the bindings).
    pub fn work_boxed(&self, opts: WorkerOptions, handler: JobHandler) -> Result<Worker> {
        opts.validate()?;
        let counters = Arc::new(Counters::default());
        let c = counters.clone();
        let queue = self.clone();
        let bg = Background::spawn("work", move |sig| {
            run(queue, opts, handler, sig.stop, c, sig.done)
        })?;
        Ok(Worker { bg, counters })
    }
}

type InFlight = Arc<Mutex<HashMap<String, Lease>>>;

/// Acks from all of a worker's jobs go through one task that sends whatever has accumulated as
/// one script call: one ack alone when traffic is light, hundreds per call under load.
type AckSender = mpsc::UnboundedSender<(Lease, oneshot::Sender<Result<bool>>)>;

fn spawn_acker(queue: Queue) -> AckSender {
    let (tx, mut rx) = mpsc::unbounded_channel::<(Lease, oneshot::Sender<Result<bool>>)>();
    tokio::spawn(async move {
        while let Some(first) = rx.recv().await {
            let mut batch = vec![first];
            while batch.len() < 500 {
                match rx.try_recv() {
                    Ok(item) => batch.push(item),
                    Err(_) => break,
                }
            }
            let (leases, replies): (Vec<Lease>, Vec<_>) = batch.into_iter().unzip();
            match queue.complete_leases(&leases).await {
                Ok(results) => {
                    for (reply, ok) in replies.into_iter().zip(results) {
                        let _ = reply.send(Ok(ok));
                    }
                }
                Err(e) => {
                    for reply in replies {
                        let _ = reply.send(Err(e.clone()));
                    }
                }
            }
        }
    });
    tx
}

async fn run(
    queue: Queue,
    opts: WorkerOptions,
    handler: JobHandler,
    mut stop_rx: watch::Receiver<bool>,
    counters: Arc<Counters>,
    done: watch::Sender<bool>,
) {
    let sem = Arc::new(Semaphore::new(opts.concurrency));
    let batch = if opts.batch_size == 0 {
        opts.concurrency
    } else {
        opts.batch_size
    };
    let in_flight: InFlight = Default::default();
    let acks = spawn_acker(queue.clone());
    let renewer = spawn_renewer(queue.clone(), in_flight.clone(), opts.lease);
    let mut tasks: JoinSet<()> = JoinSet::new();
    let wake_keys = queue.shards.iter().map(|k| k.wake()).collect();
    let mut waiter = Waiter::new(&queue.client, wake_keys);
    let mut backoff = Duration::from_millis(50);
    // Shards are served round-robin; the worker waits only after a pass found nothing anywhere.
    let shards = queue.shards.len();
    let mut next_shard = fastrand::usize(..shards);
    let mut empty_shards = 0;
    let mut soonest: Option<u64> = None;
    loop {
        while tasks.try_join_next().is_some() {}
        let first = tokio::select! {
            _ = stopped(&mut stop_rx) => break,
            p = sem.clone().acquire_owned() => p.expect("semaphore never closes"),
        };
        if *stop_rx.borrow() {
            break;
        }
        let mut permits = vec![first];
        while permits.len() < batch {
            match sem.clone().try_acquire_owned() {
                Ok(p) => permits.push(p),
                Err(_) => break,
            }
        }
        // Not raced against stop: leased jobs must reach a handler (or be released).
        let shard = next_shard;
        next_shard = (next_shard + 1) % shards;
        match queue.fetch(shard, permits.len(), opts.lease).await {
            Ok((jobs, wake_in)) => {
                backoff = Duration::from_millis(50);
                let got = jobs.len();
                for job in jobs {
                    let permit = permits.pop().expect("one permit per leased job");
                    let held = job.lease();
                    in_flight
                        .lock()
                        .unwrap()
                        .insert(held.token.clone(), held.clone());
                    let (queue, handler, counters, in_flight, acks) = (
                        queue.clone(),
                        handler.clone(),
                        counters.clone(),
                        in_flight.clone(),
                        acks.clone(),
                    );
                    tasks.spawn(async move {
                        let token = held.token.clone();
                        run_job(&queue, &handler, job, held, &counters, &acks, &in_flight).await;
                        in_flight.lock().unwrap().remove(&token);
                        drop(permit);
                    });
                }
                drop(permits);
                if got > 0 || wake_in == Some(0) {
                    empty_shards = 0;
                    soonest = None;
                    continue;
                }
                soonest = match (soonest, wake_in) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
                empty_shards += 1;
                if empty_shards < shards {
                    continue;
                }
                empty_shards = 0;
                let wake_in = soonest.take();
                if opts.stop_when_drained && wake_in.is_none() && tasks.is_empty() {
                    break;
                }
                let wait = match wake_in {
                    Some(ms) => Duration::from_millis(ms).min(opts.poll_interval),
                    None => opts.poll_interval,
                };
                if wait.is_zero() {
                    continue;
                }
                let res = if opts.stop_when_drained && !tasks.is_empty() {
                    // Draining: the last running job finishing may be what empties the queue, so
                    // look again as soon as any job ends.
                    tokio::select! {
                        _ = stopped(&mut stop_rx) => break,
                        _ = tasks.join_next() => Ok(()),
                        r = waiter.wait(wait) => r,
                    }
                } else {
                    tokio::select! {
                        _ = stopped(&mut stop_rx) => break,
                        r = waiter.wait(wait) => r,
                    }
                };
                if let Err(e) = res {
                    counters.fetch_errors.fetch_add(1, Ordering::Relaxed);
                    log::warn!("tideq: worker wait failed, retrying in {backoff:?}: {e}");
                    tokio::select! {
                        _ = stopped(&mut stop_rx) => break,
                        _ = tokio::time::sleep(backoff) => {}
                    }
                    backoff = (backoff * 2).min(Duration::from_secs(5));
                }
            }
            Err(e) => {
                drop(permits);
                counters.fetch_errors.fetch_add(1, Ordering::Relaxed);
                log::warn!("tideq: worker fetch failed, retrying in {backoff:?}: {e}");
                tokio::select! {
                    _ = stopped(&mut stop_rx) => break,
                    _ = tokio::time::sleep(backoff) => {}
                }
                backoff = (backoff * 2).min(Duration::from_secs(5));
            }
        }
    }
    let drain = async { while tasks.join_next().await.is_some() {} };
    if tokio::time::timeout(opts.grace, drain).await.is_err() {
        tasks.abort_all();
        let unfinished: Vec<Lease> = in_flight.lock().unwrap().drain().map(|(_, l)| l).collect();
        for job in unfinished {
            match queue.release_lease(&job).await {
                Ok(()) => {
                    counters.released.fetch_add(1, Ordering::Relaxed);
                }
                Err(e) => log::warn!(
                    "tideq: could not return job {:?} at shutdown (its lease will expire): {e}",
                    job.id
                ),
            }
        }
        while tasks.join_next().await.is_some() {}
    }
    renewer.abort();
    let _ = done.send(true);
}

/// One task renews every running job's lease each `lease / 3`, in one pipeline. It runs on the
/// tokio runtime, never on the host's thread, so a handler holding the GIL or blocking the Node
/// event loop cannot make its lease lapse.
fn spawn_renewer(
    queue: Queue,
    in_flight: InFlight,
    lease: Duration,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(lease / 3);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tick.tick().await;
        loop {
            tick.tick().await;
            let held: Vec<Lease> = in_flight.lock().unwrap().values().cloned().collect();
            if held.is_empty() {
                continue;
            }
            match queue.extend_leases(&held, lease).await {
                Ok(results) => {
                    for (l, ok) in held.iter().zip(results) {
                        if !ok {
                            log::warn!("tideq: the lease on job {:?} was lost; its result will be rejected", l.id);
                        }
                    }
                }
                Err(e) => log::warn!("tideq: could not extend {} lease(s): {e}", held.len()),
            }
        }
    })
}

/// Runs one job: the handler (its lease renewed by the worker's renewer), then ack or fail.
async fn run_job(
    queue: &Queue,
    handler: &JobHandler,
    job: Job,
    held: Lease,
    counters: &Counters,
    acks: &AckSender,
    in_flight: &InFlight,
) {
    let timeout = job.timeout;
    // The handler runs inline (no extra task); a panic is caught and fails the attempt.
    let handled = std::panic::AssertUnwindSafe(handler(job)).catch_unwind();
    let outcome = match timeout {
        Some(t) => match tokio::time::timeout(t, handled).await {
            Ok(r) => r,
            Err(_) => Ok(Err(format!("timed out after {t:?}"))),
        },
        None => handled.await,
    };
    let result = outcome.unwrap_or_else(|_| Err("handler panicked".to_string()));
    // Settling now: the renewer must not extend a lease the ack is about to end.
    in_flight.lock().unwrap().remove(&held.token);
    for attempt in 0..5 {
        let settled = match &result {
            Ok(()) => {
                let (tx, rx) = oneshot::channel();
                let _ = acks.send((held.clone(), tx));
                match rx.await {
                    Ok(Ok(true)) => Ok(true),
                    Ok(Ok(false)) => Err(Error::new(
                        ErrorKind::LeaseLost,
                        format!("the lease on job {:?} was lost", held.id),
                    )),
                    Ok(Err(e)) => Err(e),
                    Err(_) => Err(Error::new(ErrorKind::Closed, "acker stopped")),
                }
            }
            Err(msg) => queue.fail_lease(&held, msg).await.map(|_| false),
        };
        match settled {
            Ok(true) => {
                counters.completed.fetch_add(1, Ordering::Relaxed);
                return;
            }
            Ok(false) => {
                counters.failed.fetch_add(1, Ordering::Relaxed);
                return;
            }
            Err(e) if e.kind() == ErrorKind::LeaseLost => {
                counters.lease_lost.fetch_add(1, Ordering::Relaxed);
                log::warn!("tideq: {e}");
                return;
            }
            Err(e) => {
                log::warn!(
                    "tideq: could not settle job {:?} (try {}): {e}",
                    held.id,
                    attempt + 1
                );
                tokio::time::sleep(Duration::from_millis(100 << attempt)).await;
            }
        }
    }
    // Gave up: the lease will expire and the job will be redelivered (at-least-once).
}
