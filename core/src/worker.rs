//! The worker runtime for job queues. One fetch loop per worker keeps up to two fetches in
//! flight, each leasing up to half the concurrency and carrying the acks of the jobs that finished
//! since (one script call per batch), so Redis serves one fetch while this process runs the
//! other's jobs; the second goes out once a whole batch of slots is free. Each job's handler runs on its own task. Leases are renewed from a thread of the
//! worker's own (see `spawn_renewer`), so a handler that holds the GIL, blocks the Node event loop
//! or blocks a runtime thread cannot let them lapse. Idle, the loop blocks on a wake-up list that
//! producers signal, for no longer than the time until the next delayed job or lease deadline
//! (Redis clock) or `poll_interval`.

use std::collections::HashMap;

use futures_util::stream::FuturesUnordered;
use futures_util::{FutureExt, StreamExt};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{oneshot, Notify, OwnedSemaphorePermit, Semaphore};

use crate::background::{aborted, jittered, stopped, Background, Failure, Outage, Signals};
use tokio::task::JoinSet;

use crate::client::Client;
use crate::error::{Error, ErrorKind, Result};
use tokio_util::sync::CancellationToken;

use crate::job::{Job, Lease};
use crate::jobs::Queue;
use crate::lease::{Acked, Failed, Fetched};
use crate::task::Tasks;
use crate::wait::Waiter;

/// The future a job handler returns: `Ok` with the result to store with the job (`None`:
/// nothing), or the error text that fails the attempt.
pub type JobFuture =
    Pin<Box<dyn Future<Output = std::result::Result<Option<Vec<u8>>, String>> + Send + 'static>>;

/// What a job handler's `Ok` may hold: nothing (`()`), or a result stored with the completed job
/// (readable with `get` and `wait`, kept as long as the job is: `keep_completed`, `keep_for`):
/// bytes (`Vec<u8>`), text (`String`, stored as UTF-8), or JSON (`serde_json::Value`, stored
/// encoded, as the Python and Node bindings store their handlers' values). `Option<T>` stores
/// nothing for `None`. A result larger than the queue's `max_result_len` fails the attempt.
pub trait IntoJobResult {
    /// The bytes to store (`None`: nothing); `Err` fails the attempt with that text.
    fn into_job_result(self) -> std::result::Result<Option<Vec<u8>>, String>;
}

impl IntoJobResult for () {
    fn into_job_result(self) -> std::result::Result<Option<Vec<u8>>, String> {
        Ok(None)
    }
}

impl IntoJobResult for Vec<u8> {
    fn into_job_result(self) -> std::result::Result<Option<Vec<u8>>, String> {
        Ok(Some(self))
    }
}

impl IntoJobResult for String {
    fn into_job_result(self) -> std::result::Result<Option<Vec<u8>>, String> {
        Ok(Some(self.into_bytes()))
    }
}

impl IntoJobResult for serde_json::Value {
    fn into_job_result(self) -> std::result::Result<Option<Vec<u8>>, String> {
        serde_json::to_vec(&self)
            .map(Some)
            .map_err(|e| format!("the handler's result does not encode as JSON: {e}"))
    }
}

impl<T: IntoJobResult> IntoJobResult for Option<T> {
    fn into_job_result(self) -> std::result::Result<Option<Vec<u8>>, String> {
        self.map_or(Ok(None), T::into_job_result)
    }
}
/// A job handler, as the runtime stores it.
pub type JobHandler = Arc<dyn Fn(Job) -> JobFuture + Send + Sync + 'static>;

/// What a batch handler's future returns: `Ok` completes every job of the batch.
pub type BatchFuture =
    Pin<Box<dyn Future<Output = std::result::Result<(), BatchError>> + Send + 'static>>;
/// A batch handler, as the runtime stores it.
pub type JobBatchHandler = Arc<dyn Fn(Vec<Job>) -> BatchFuture + Send + Sync + 'static>;

/// How a batch worker gathers jobs for its handler ([`Queue::work_batches`]).
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

/// How a batch failed: all of it, or some of its jobs (the others are completed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BatchError {
    /// Every job of the batch failed with this error (retried or dead-lettered, each by its own
    /// attempts).
    All(String),
    /// These jobs failed, as (job id, error); every other job of the batch is completed.
    Jobs(Vec<(String, String)>),
}

impl BatchError {
    /// Every job of the batch failed with `error`.
    pub fn all(error: impl std::fmt::Display) -> Self {
        BatchError::All(error.to_string())
    }

    /// These jobs failed; the rest of the batch succeeded.
    pub fn jobs<I, S, E>(failed: I) -> Self
    where
        I: IntoIterator<Item = (S, E)>,
        S: Into<String>,
        E: std::fmt::Display,
    {
        BatchError::Jobs(
            failed
                .into_iter()
                .map(|(id, e)| (id.into(), e.to_string()))
                .collect(),
        )
    }
}

impl std::fmt::Display for BatchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BatchError::All(e) => write!(f, "{e}"),
            BatchError::Jobs(failed) => write!(f, "{} job(s) of the batch failed", failed.len()),
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
    /// renewal. Renewed every `lease / 3` while the handler runs. Default 30 s.
    pub lease: Duration,
    /// Longest idle wait before looking again (wake-ups usually come sooner). Default 5 s.
    pub poll_interval: Duration,
    /// On shutdown, how long running jobs may take. Past it, the handlers still running are asked
    /// to stop ([`Job::cancellation`]); each such job is returned to the queue (its attempt not
    /// counted) once its handler has returned, never while it may still run: until then it keeps
    /// its lease. Default 10 s.
    pub grace: Duration,
    /// Stop by itself once nothing is ready, delayed or active (scripts, tests).
    pub stop_when_drained: bool,
    /// Fire the queue's schedules' due slots ([`Queue::upsert_schedule`]): any number of
    /// workers may, each slot still makes one job. A new or changed schedule is seen within
    /// `poll_interval`; without schedules this costs one call per `poll_interval`. Default true.
    pub schedules: bool,
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
    /// Jobs that ended cancelled: their [`Queue::cancel`] was requested while they ran.
    pub cancelled: u64,
}

#[derive(Default)]
struct Counters {
    completed: AtomicU64,
    failed: AtomicU64,
    lease_lost: AtomicU64,
    released: AtomicU64,
    fetch_errors: AtomicU64,
    cancelled: AtomicU64,
}

impl Counters {
    fn snapshot(&self) -> WorkerStats {
        WorkerStats {
            completed: self.completed.load(Ordering::Relaxed),
            failed: self.failed.load(Ordering::Relaxed),
            lease_lost: self.lease_lost.load(Ordering::Relaxed),
            released: self.released.load(Ordering::Relaxed),
            fetch_errors: self.fetch_errors.load(Ordering::Relaxed),
            cancelled: self.cancelled.load(Ordering::Relaxed),
        }
    }
}

/// A running worker. Dropping the handle stops it gracefully, like [`stop`](Self::stop), unless
/// it was [detached](Self::detach); call [`shutdown`](Self::shutdown) to also wait for it.
#[must_use = "dropping the handle stops the worker"]
pub struct Worker {
    bg: Background,
    counters: Arc<Counters>,
    metrics: Arc<crate::metrics::WorkerMetrics>,
    queue_name: Arc<str>,
}

impl std::fmt::Debug for Worker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Worker")
            .field("running", &self.is_running())
            .field("stats", &self.stats())
            .finish()
    }
}

impl Worker {
    pub fn stats(&self) -> WorkerStats {
        self.counters.snapshot()
    }

    /// This worker's own metrics (this process only) in the Prometheus text format: its
    /// counters and its handlers' run times, labelled with the queue. Serve it from your own
    /// `/metrics` endpoint; the queue-wide view is `tideq exporter`'s.
    pub fn metrics(&self) -> String {
        crate::metrics::encode_worker(
            &self.queue_name,
            &self.counters.snapshot(),
            &self.metrics.run.histogram(),
        )
    }

    /// Stop fetching; running jobs get the grace period, then are returned to the queue.
    pub fn stop(&self) {
        self.bg.stop();
    }

    /// Keeps the worker running when this handle is dropped: it then runs until it stops by
    /// itself (`stop_when_drained`, a fatal error) or through another handle (an `Arc` of this
    /// one). The Python and Node bindings detach every worker they start, so a handle the
    /// garbage collector takes does not stop it.
    pub fn detach(&self) {
        self.bg.detach();
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

    /// Stops at once, without waiting for running handlers: they are abandoned and their jobs
    /// left to their leases, so they run again once a lease expires (safe: no job is handed
    /// back while its handler may still run). What a second Ctrl-C does.
    pub fn abort(&self) {
        self.bg.abort();
    }

    /// The error the worker stopped on by itself, if any: credentials or permissions Redis
    /// refused ([`Error::is_fatal`]), which retrying cannot fix. Transient errors (Redis down,
    /// busy) are retried with backoff and never end up here.
    pub fn error(&self) -> Option<Error> {
        self.bg.error()
    }

    /// Runs until SIGINT (Ctrl-C) or SIGTERM, or until the worker stops by itself, then shuts down
    /// gracefully: the usual `main` of a worker process.
    pub async fn run_until_signal(&self) -> WorkerStats {
        self.bg.until_signal().await;
        self.stats()
    }
}

impl Queue {
    /// Starts a worker on the current tokio runtime. The handler's `Ok` completes the job,
    /// storing what it holds as the job's result (`()`: none; see [`IntoJobResult`]); its `Err`
    /// (or panic, or timeout) fails the attempt: it is retried after the job's backoff, or
    /// dead-lettered after `max_attempts`.
    pub fn work<F, Fut, R, E>(&self, opts: WorkerOptions, handler: F) -> Result<Worker>
    where
        F: Fn(Job) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = std::result::Result<R, E>> + Send + 'static,
        R: IntoJobResult + 'static,
        E: std::fmt::Display + 'static,
    {
        self.work_boxed(opts, boxed(handler))
    }

    /// [`work`](Self::work) with an already boxed handler (used by the bindings). Unlike `work`,
    /// the handler's future is never dropped before it completes: a cancelled job (timeout,
    /// shutdown) only fires [`Job::cancellation`], and keeps its slot and lease until the future
    /// completes, so a handler running on another thread can never overlap its own retry.
    pub fn work_boxed(&self, opts: WorkerOptions, handler: JobHandler) -> Result<Worker> {
        self.start_worker(opts, Handlers::One(handler))
    }

    /// Starts a worker whose handler gets up to `batch.size` jobs at once (`batch.wait` bounds
    /// how long a job waits for its batch to fill). Each job keeps its own lease; the handler's
    /// `Ok` completes them all, [`BatchError::Jobs`] fails those it names and completes the
    /// rest, [`BatchError::All`] (or a panic, or a timeout: the smallest of the jobs' timeouts)
    /// fails them all. `opts.concurrency` counts jobs: `concurrency / size` batches run at once.
    pub fn work_batches<F, Fut>(
        &self,
        opts: WorkerOptions,
        batch: BatchOptions,
        handler: F,
    ) -> Result<Worker>
    where
        F: Fn(Vec<Job>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = std::result::Result<(), BatchError>> + Send + 'static,
    {
        let handler: JobBatchHandler = Arc::new(move |jobs: Vec<Job>| {
            let cancel = jobs.first().map(|j| j.cancel.clone()).unwrap_or_default();
            let fut = handler(jobs);
            Box::pin(async move {
                tokio::select! {
                    r = fut => r,
                    _ = cancel.cancelled() => Err(BatchError::all("stopped: the batch was cancelled")),
                }
            })
        });
        self.work_batches_boxed(opts, batch, handler)
    }

    /// [`work_batches`](Self::work_batches) with an already boxed handler (used by the bindings):
    /// its future is never dropped before it completes (cancellation only fires the jobs'
    /// [`Job::cancellation`]).
    pub fn work_batches_boxed(
        &self,
        opts: WorkerOptions,
        batch: BatchOptions,
        handler: JobBatchHandler,
    ) -> Result<Worker> {
        if batch.size == 0 {
            return Err(Error::invalid("batch size must be at least 1"));
        }
        if batch.size > crate::job::MAX_FETCH {
            return Err(Error::invalid(format!(
                "batch size is {}; a batch holds at most {} jobs",
                batch.size,
                crate::job::MAX_FETCH
            )));
        }
        if batch.size > opts.concurrency {
            return Err(Error::invalid(format!(
                "batch size ({}) must not exceed the worker's concurrency ({})",
                batch.size, opts.concurrency
            )));
        }
        self.start_worker(opts, Handlers::Batch(handler, batch))
    }

    pub(crate) fn start_worker(&self, opts: WorkerOptions, handler: Handlers) -> Result<Worker> {
        opts.validate()?;
        let counters = Arc::new(Counters::default());
        let metrics = Arc::new(crate::metrics::WorkerMetrics::new());
        let (c, m) = (counters.clone(), metrics.clone());
        let queue = self.clone();
        let bg = Background::spawn("work", move |sig| run(queue, opts, handler, c, m, sig))?;
        Ok(Worker {
            bg,
            counters,
            metrics,
            queue_name: self.name.clone(),
        })
    }
}

/// A Rust handler boxed for the runtime. Rust's way to stop a future is to drop it: a cancelled
/// job's handler (timeout, shutdown) is dropped at its next await point.
pub(crate) fn boxed<F, Fut, R, E>(handler: F) -> JobHandler
where
    F: Fn(Job) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = std::result::Result<R, E>> + Send + 'static,
    R: IntoJobResult + 'static,
    E: std::fmt::Display + 'static,
{
    Arc::new(move |job: Job| {
        let cancel = job.cancel.clone();
        let fut = handler(job);
        Box::pin(async move {
            tokio::select! {
                r = fut => r.map_err(|e| e.to_string()).and_then(R::into_job_result),
                _ = cancel.cancelled() => Err("stopped: the job was cancelled".to_string()),
            }
        })
    })
}

/// What a worker runs: one handler for every job, a handler per task name, or a handler for
/// batches of jobs.
#[derive(Clone)]
pub(crate) enum Handlers {
    One(JobHandler),
    Tasks(Arc<Tasks>),
    Batch(JobBatchHandler, BatchOptions),
}

/// The error text of an attempt that ended because its cancel was requested.
const CANCELLED: &str = "cancelled: its cancel was requested";

/// A running job, as the renewer sees it.
struct Running {
    lease: Lease,
    /// Its stop signal (timeout, end of the shutdown grace, cancel request).
    cancel: CancellationToken,
    /// Its [`Queue::cancel`] was requested: it ends cancelled once its handler returns (the
    /// job's own flag, [`Job::cancel_requested`]).
    cancel_requested: Arc<AtomicBool>,
}

/// Running jobs' leases (for the renewer) and stop signals, by a per-worker sequence number.
type InFlight = Arc<Mutex<HashMap<u64, Running>>>;

/// Acks waiting to be sent. The fetch loop takes them along on its next fetch (one script call
/// completes a batch and leases the next); when it has nothing to fetch it sends them on their
/// own. Their results only feed the worker's counters, so a job's task ends with its handler.
struct AckQueue {
    items: Mutex<Vec<Lease>>,
    notify: Notify,
    counters: Arc<Counters>,
}

impl AckQueue {
    fn new(counters: Arc<Counters>) -> Self {
        AckQueue {
            items: Mutex::new(Vec::new()),
            notify: Notify::new(),
            counters,
        }
    }

    fn push(&self, lease: Lease) {
        self.items.lock().unwrap().push(lease);
        self.notify.notify_one();
    }

    fn is_empty(&self) -> bool {
        self.items.lock().unwrap().is_empty()
    }

    fn take(&self) -> Vec<Lease> {
        std::mem::take(&mut *self.items.lock().unwrap())
    }

    /// Counts what came back; acks that could not be sent wait for the next call.
    fn settle(&self, leases: Vec<Lease>, results: std::result::Result<&[Acked], &Error>) -> bool {
        match results {
            Ok(results) => {
                for (lease, &acked) in leases.iter().zip(results) {
                    match acked {
                        Acked::Completed => {
                            self.counters.completed.fetch_add(1, Ordering::Relaxed);
                        }
                        // A resent ack whose first reply was lost: that first one completed it.
                        Acked::AlreadyCompleted if lease.resent => {
                            self.counters.completed.fetch_add(1, Ordering::Relaxed);
                        }
                        _ => {
                            self.counters.lease_lost.fetch_add(1, Ordering::Relaxed);
                            log::warn!(
                                "tideq: the lease on job {:?} was lost (expired and redelivered); \
                                 its completion was refused",
                                lease.id
                            );
                        }
                    }
                }
                true
            }
            Err(e) if e.is_fatal() => {
                // Retrying cannot help: the jobs are left to their leases (and run again).
                if !leases.is_empty() {
                    log::error!(
                        "tideq: could not complete {} job(s), left to their leases: {e}",
                        leases.len()
                    );
                }
                true
            }
            Err(e) => {
                if !leases.is_empty() {
                    log::warn!(
                        "tideq: could not complete {} job(s), will retry: {e}",
                        leases.len()
                    );
                }
                let mut items = self.items.lock().unwrap();
                items.extend(leases.into_iter().map(|l| Lease { resent: true, ..l }));
                false
            }
        }
    }

    /// Sends every waiting ack (complete_jobs, one call per shard). False if that failed (the
    /// acks wait for the next try).
    async fn flush(&self, queue: &Queue) -> bool {
        let leases = self.take();
        if leases.is_empty() {
            return true;
        }
        let results = queue.complete_leases(&leases).await;
        self.settle(leases, results.as_deref())
    }
}

/// What one fetch hands back to the loop: the slots it reserved (one per leased job) and the result.
struct FetchDone {
    shard: usize,
    permits: Vec<OwnedSemaphorePermit>,
    result: Result<Fetched>,
}

/// What the fetches of one pass over the shards found. The worker waits only once the latest
/// fetch of *every* shard came back empty: counting empty replies in a row is not enough, since
/// with two fetches in flight the replies arrive out of step with the shards they were sent to
/// (a shard that just gave jobs could be followed by three empty replies from the other shards,
/// and a drained worker would stop with that shard still full).
struct Pass {
    /// Per shard: `Some(wake_in)` when its latest fetch found nothing to lease.
    empty: Vec<Option<Option<u64>>>,
    empties: usize,
}

impl Pass {
    fn new(shards: usize) -> Self {
        Pass {
            empty: vec![None; shards],
            empties: 0,
        }
    }

    /// Records one fetch's reply. Returns `Some(soonest wake_in)` once every shard is empty (the
    /// pass then starts over).
    fn record(&mut self, shard: usize, leased: usize, wake_in: Option<u64>) -> Option<Option<u64>> {
        let slot = &mut self.empty[shard];
        if leased > 0 || wake_in == Some(0) {
            if slot.take().is_some() {
                self.empties -= 1;
            }
            return None;
        }
        if slot.replace(wake_in).is_none() {
            self.empties += 1;
        }
        if self.empties < self.empty.len() {
            return None;
        }
        let soonest = self.empty.iter().filter_map(|w| w.flatten()).min();
        self.empty.iter_mut().for_each(|w| *w = None);
        self.empties = 0;
        Some(soonest)
    }
}

type FetchFuture = Pin<Box<dyn Future<Output = FetchDone> + Send>>;

/// How often a worker busy leasing asks its fetch for the upkeep that goes by time alone
/// (recovering expired leases, dropping stale cancel requests, deleting completed jobs past
/// `keep_for`). A fetch after one that leased nothing always does it; so does any other caller.
/// Skipping it on the calls between saves two to three Redis calls per fetch (a fetch per job at
/// concurrency 1) and delays none of it by more than this.
pub(crate) const UPKEEP_EVERY: Duration = Duration::from_millis(250);

/// When each shard's fetch last did its upkeep (see [`UPKEEP_EVERY`]).
struct Upkeep(Vec<Option<tokio::time::Instant>>);

impl Upkeep {
    /// Whether a fetch of `shard` now does its upkeep: always unless the worker is `busy` (its
    /// last fetch leased jobs) and the shard's last upkeep is recent.
    fn due(&mut self, shard: usize, busy: bool) -> bool {
        let now = tokio::time::Instant::now();
        let last = &mut self.0[shard];
        if busy && last.is_some_and(|t| now.duration_since(t) < UPKEEP_EVERY) {
            return false;
        }
        *last = Some(now);
        true
    }
}

/// One fetch: leases up to `permits.len()` jobs of `shard` and completes every waiting ack in the
/// same round trip (acks of other shards, on a sharded queue, go out beside it).
fn start_fetch(
    queue: &Queue,
    acks: &Arc<AckQueue>,
    metrics: &crate::metrics::WorkerMetrics,
    shard: usize,
    permits: Vec<OwnedSemaphorePermit>,
    lease: Duration,
    upkeep: bool,
) -> FetchFuture {
    let queue = queue.clone();
    let acks = acks.clone();
    let (mine, others): (Vec<Lease>, Vec<Lease>) =
        acks.take().into_iter().partition(|l| l.shard == shard);
    // What the handlers took, and that this worker is alive, at most every 15 s.
    let report = metrics.take_report().unwrap_or_default();
    Box::pin(async move {
        let fetch = queue.fetch(shard, permits.len(), lease, &mine, &report, upkeep);
        let result = if others.is_empty() {
            fetch.await
        } else {
            let (fetched, completed) =
                futures_util::future::join(fetch, queue.complete_leases(&others)).await;
            acks.settle(others, completed.as_deref());
            fetched
        };
        match &result {
            Ok(f) => acks.settle(mine, Ok(&f.acked)),
            Err(e) => acks.settle(mine, Err(e)),
        };
        FetchDone {
            shard,
            permits,
            result,
        }
    })
}

async fn run(
    queue: Queue,
    opts: WorkerOptions,
    handler: Handlers,
    counters: Arc<Counters>,
    metrics: Arc<crate::metrics::WorkerMetrics>,
    sig: Signals,
) {
    let Signals {
        stop: mut stop_rx,
        mut abort,
        done,
        failure,
    } = sig;
    let sem = Arc::new(Semaphore::new(opts.concurrency));
    // Two fetches may be in flight, each for up to half the slots: Redis serves one while this
    // process runs the other's jobs, so neither side waits for the other.
    let max_fetches = opts.concurrency.min(2);
    // A batch worker gathers leased jobs here until a batch is full or its wait is over.
    let batching = match &handler {
        Handlers::Batch(_, b) => Some(*b),
        _ => None,
    };
    let mut pending = Pending::default();
    let batch = if let Some(b) = batching {
        b.size
    } else if opts.batch_size == 0 {
        opts.concurrency
            .div_ceil(max_fetches)
            .min(crate::job::MAX_FETCH)
    } else {
        opts.batch_size
    };
    let in_flight: InFlight = Default::default();
    let acks = Arc::new(AckQueue::new(counters.clone()));
    let renewer = spawn_renewer(&queue, in_flight.clone(), opts.lease);
    let sched_wake = Arc::new(crate::schedule::SchedulerWake::default());
    let scheduler = opts.schedules.then(|| {
        tokio::spawn(crate::schedule::drive_schedules(
            queue.clone(),
            opts.poll_interval,
            sched_wake.clone(),
            stop_rx.clone(),
        ))
    });
    let ctx = Arc::new(JobCtx {
        next_key: Default::default(),
        queue: queue.clone(),
        handler,
        counters: counters.clone(),
        in_flight: in_flight.clone(),
        acks: acks.clone(),
        metrics: metrics.clone(),
        shutting_down: AtomicBool::new(false),
    });
    let mut tasks: JoinSet<()> = JoinSet::new();
    let mut fetches: FuturesUnordered<FetchFuture> = FuturesUnordered::new();
    let wake_keys = queue.shards.iter().map(|k| k.wake()).collect();
    let mut waiter = Waiter::new(&queue.client, wake_keys);
    let mut backoff = Duration::from_millis(50);
    let mut outage = Outage::new(format!("the worker of queue {:?}", queue.name()));
    // Shards are served round-robin; the worker waits only after a pass found nothing anywhere.
    let shards = queue.shards.len();
    let mut next_shard = fastrand::usize(..shards);
    let mut pass = Pass::new(shards);
    let mut upkeep = Upkeep(vec![None; shards]);
    let mut soonest: Option<u64> = None;
    // A full pass found nothing: wait (once the fetches in flight are back) for a wake-up.
    let mut idle = false;
    // The last fetch leased jobs: only then is a second fetch sent before the first is back (an
    // idle worker's look-around stays one call).
    let mut busy = false;
    let mut failed = false;
    loop {
        while tasks.try_join_next().is_some() {}
        if let Some(b) = batching {
            pending.hand_over(&ctx, &mut tasks, b, false);
        }
        if failed && fetches.is_empty() {
            failed = false;
            tokio::select! {
                _ = stopped(&mut stop_rx) => break,
                _ = tokio::time::sleep(jittered(backoff)) => {}
            }
            backoff = (backoff * 2).min(Duration::from_secs(5));
            continue;
        }
        if idle && fetches.is_empty() {
            idle = false;
            let wake_in = soonest.take();
            if opts.stop_when_drained
                && wake_in.is_none()
                && tasks.is_empty()
                && acks.is_empty()
                && pending.jobs.is_empty()
            {
                break;
            }
            let mut wait = match wake_in {
                Some(ms) => Duration::from_millis(ms).min(opts.poll_interval),
                None => opts.poll_interval,
            };
            if let Some(d) = pending.deadline {
                wait = wait.min(d.saturating_duration_since(tokio::time::Instant::now()));
            }
            if wait.is_zero() {
                continue;
            }
            // A job ending wakes the loop too: its ack rides on the next fetch.
            let res = if opts.stop_when_drained && !tasks.is_empty() {
                // Draining: the last running job finishing may be what empties the queue, so
                // look again as soon as any job ends.
                tokio::select! {
                    _ = stopped(&mut stop_rx) => break,
                    _ = tasks.join_next() => Ok(()),
                    _ = acks.notify.notified() => Ok(()),
                    r = waiter.wait(wait) => r,
                }
            } else {
                tokio::select! {
                    _ = stopped(&mut stop_rx) => break,
                    _ = acks.notify.notified() => Ok(()),
                    r = waiter.wait(wait) => r,
                }
            };
            if let Err(e) = res {
                counters.fetch_errors.fetch_add(1, Ordering::Relaxed);
                if e.is_fatal() {
                    stopped_on(&queue, &failure, e);
                    break;
                }
                outage.failed(&e, backoff);
                failed = true;
            }
            continue;
        }
        let can_fetch =
            !idle && !failed && (fetches.is_empty() || (busy && fetches.len() < max_fetches));
        // With a fetch already out, the next waits until a whole batch of slots is free: sending
        // one per freed slot made many small fetches (25 jobs on average at concurrency 100),
        // each a round trip the jobs behind it waited for. Node's worker went from ~110k to
        // ~180k jobs/s with this alone. Nothing starves: once the fetch in flight is back, the
        // next goes out for whatever is free.
        let need = if fetches.is_empty() {
            1
        } else {
            batch.min(opts.concurrency)
        };
        let batch_due = pending.deadline;
        tokio::select! {
            biased;
            _ = stopped(&mut stop_rx) => break,
            // A partial batch's wait is over: handed over at the top of the loop.
            _ = tokio::time::sleep_until(batch_due.unwrap_or_else(tokio::time::Instant::now)),
                if batch_due.is_some() => {}
            Some(done) = fetches.next(), if !fetches.is_empty() => {
                let FetchDone {
                    shard,
                    mut permits,
                    result,
                } = done;
                match result {
                    Ok(f) => {
                        backoff = Duration::from_millis(50);
                        outage.recovered();
                        if f.lost > 0 {
                            log::warn!(
                                "tideq: queue {:?}: {} job record(s) were missing or unreadable \
                                 (evicted by Redis, or changed by hand); the missing ones were \
                                 removed and the unreadable ones dead-lettered (stats: lost, dead)",
                                queue.name(),
                                f.lost
                            );
                        }
                        let got = f.jobs.len();
                        if f.schedules {
                            sched_wake.schedules_seen();
                        }
                        for job in f.jobs {
                            let permit = permits.pop().expect("one permit per leased job");
                            match batching {
                                Some(b) => pending.add(&ctx, job, permit, b),
                                None => ctx.spawn(&mut tasks, job, permit),
                            }
                        }
                        drop(permits);
                        busy = got > 0;
                        if let Some(wake_in) = pass.record(shard, got, f.wake_in) {
                            soonest = wake_in;
                            idle = true;
                        } else if got > 0 || f.wake_in == Some(0) {
                            idle = false;
                        }
                    }
                    Err(e) => {
                        drop(permits);
                        busy = false;
                        counters.fetch_errors.fetch_add(1, Ordering::Relaxed);
                        if e.is_fatal() {
                            stopped_on(&queue, &failure, e);
                            break;
                        }
                        outage.failed(&e, backoff);
                        failed = true;
                    }
                }
            }
            p = sem.clone().acquire_many_owned(need as u32), if can_fetch => {
                // One permit per job: the leased jobs take one each, unused ones drop.
                let mut reserved = p.expect("semaphore never closes");
                let mut permits: Vec<_> = (1..need).filter_map(|_| reserved.split(1)).collect();
                permits.push(reserved);
                while permits.len() < batch {
                    match sem.clone().try_acquire_owned() {
                        Ok(p) => permits.push(p),
                        Err(_) => break,
                    }
                }
                // Not raced against stop once started: leased jobs must reach a handler (or be
                // released).
                let shard = next_shard;
                next_shard = (next_shard + 1) % shards;
                let upkeep = upkeep.due(shard, busy);
                fetches.push(start_fetch(
                    &queue, &acks, &metrics, shard, permits, opts.lease, upkeep,
                ));
            }
        }
    }
    // Fetches already sent may lease jobs: those still run (or are released below).
    while let Some(done) = fetches.next().await {
        let FetchDone {
            mut permits,
            result,
            ..
        } = done;
        if let Ok(f) = result {
            for job in f.jobs {
                let permit = permits.pop().expect("one permit per leased job");
                match batching {
                    Some(b) => pending.add(&ctx, job, permit, b),
                    None => ctx.spawn(&mut tasks, job, permit),
                }
            }
        }
    }
    // Jobs gathered for a batch run now, in what batches they make.
    if let Some(b) = batching {
        pending.hand_over(&ctx, &mut tasks, b, true);
    }
    // Stopped fetching: running jobs get the grace period; their acks still go out.
    let drain = async {
        loop {
            while tasks.try_join_next().is_some() {}
            if !acks.flush(&queue).await {
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
            if tasks.is_empty() && acks.is_empty() {
                break;
            }
            tokio::select! {
                _ = tasks.join_next() => {}
                _ = acks.notify.notified() => {}
            }
        }
    };
    let drained = tokio::select! {
        r = tokio::time::timeout(opts.grace, drain) => Some(r.is_ok()),
        _ = aborted(&mut abort) => None,
    };
    if drained == Some(false) {
        // Past the grace period: ask the handlers still running to stop. A job is handed back
        // (released) only once its handler has returned, never while it may still run; until
        // then it keeps its slot and its lease (the renewer goes on).
        ctx.shutting_down.store(true, Ordering::SeqCst);
        let running: Vec<CancellationToken> = in_flight
            .lock()
            .unwrap()
            .values()
            .map(|r| r.cancel.clone())
            .collect();
        if !running.is_empty() {
            log::warn!(
                "tideq: {} job(s) still running after the grace period of {:?}; asked them to \
                 stop, and waiting for their handlers to return (each is then returned to the \
                 queue, or completed if it succeeded); stop again to leave them to their leases",
                running.len(),
                opts.grace
            );
        }
        for c in running {
            c.cancel();
        }
        let finished = tokio::select! {
            _ = async { while tasks.join_next().await.is_some() {} } => true,
            _ = aborted(&mut abort) => false,
        };
        if finished {
            // Acks that still cannot be sent are left to their leases: those jobs run again
            // (at-least-once).
            for attempt in 0..5 {
                if acks.flush(&queue).await {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(100 << attempt)).await;
            }
        }
    }
    if !tasks.is_empty() {
        // Aborted: the handlers still running are abandoned, and their jobs left to their
        // leases (they run again once a lease expires). Finished jobs' acks get one try.
        log::warn!(
            "tideq: stopped at once; {} running job(s) left to their leases",
            tasks.len()
        );
        tasks.abort_all();
        acks.flush(&queue).await;
    }
    drop(renewer);
    if let Some(s) = scheduler {
        s.abort();
    }
    // The run times measured since the last report (with a maintenance fetch, which leases
    // nothing); best effort.
    if let Some(report) = metrics.take_final() {
        let _ = queue.fetch(0, 0, opts.lease, &[], &report, true).await;
    }
    let _ = done.send(true);
}

/// Logs and keeps the error a worker stops on (it cannot be fixed by retrying).
fn stopped_on(queue: &Queue, failure: &Failure, e: Error) {
    log::error!(
        "tideq: the worker of queue {:?} stopped: {e}; running jobs get the grace period",
        queue.name()
    );
    failure.set(e);
}

/// Renews every running job's lease each `lease / 3`, in one pipeline, and looks for cancel
/// requests of the running jobs every [`CANCEL_CHECK`], from a thread of its own
/// with its own connection and a small runtime. Nothing the handlers do can starve it: not a
/// Python handler holding the GIL, not a Node handler blocking the event loop, and not a Rust
/// handler blocking a thread of the worker's tokio runtime (tasks queued behind a blocked thread
/// wait for it, and a shared connection's driver task can be one of them).
/// Dropping the returned sender stops the thread.
fn spawn_renewer(queue: &Queue, in_flight: InFlight, lease: Duration) -> oneshot::Sender<()> {
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    let queue = queue.clone();
    let spawned = std::thread::Builder::new()
        .name("tideq-renewer".into())
        .spawn(move || {
            let rt = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => {
                    log::error!("tideq: could not start the lease renewer: {e}");
                    return;
                }
            };
            rt.block_on(async move {
                // A client of its own: its connection is driven on this thread's runtime.
                let queue = match Client::new(queue.client.config().clone()) {
                    Ok(client) => queue.with_client(client),
                    Err(e) => {
                        log::error!("tideq: could not start the lease renewer: {e}");
                        return;
                    }
                };
                tokio::select! {
                    _ = stop_rx => {}
                    _ = renew(&queue, &in_flight, lease) => {}
                }
            });
        });
    if let Err(e) = spawned {
        log::error!("tideq: could not start the lease renewer thread: {e}");
    }
    stop_tx
}

/// How often a worker running jobs looks for their cancel requests: one `SMISMEMBER` per shard,
/// so a request reaches the handler within a second (no call while no job runs).
const CANCEL_CHECK: Duration = Duration::from_millis(500);

async fn renew(queue: &Queue, in_flight: &InFlight, lease: Duration) {
    let every = lease / 3;
    let mut tick = tokio::time::interval(every.min(CANCEL_CHECK));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tick.tick().await;
    let mut next_renewal = tokio::time::Instant::now() + every;
    loop {
        tick.tick().await;
        let (keys, held): (Vec<u64>, Vec<Lease>) = in_flight
            .lock()
            .unwrap()
            .iter()
            .map(|(k, r)| (*k, r.lease.clone()))
            .unzip();
        if held.is_empty() {
            next_renewal = tokio::time::Instant::now() + every;
            continue;
        }
        match queue.cancel_requested(&held).await {
            Ok(found) => {
                let running = in_flight.lock().unwrap();
                for (key, _) in keys.iter().zip(found).filter(|(_, f)| *f) {
                    if let Some(r) = running.get(key) {
                        if !r.cancel_requested.swap(true, Ordering::SeqCst) {
                            r.cancel.cancel();
                        }
                    }
                }
            }
            Err(e) => log::warn!("tideq: could not look for cancel requests: {e}"),
        }
        if tokio::time::Instant::now() < next_renewal {
            continue;
        }
        next_renewal = tokio::time::Instant::now() + every;
        match queue.extend_leases(&held, lease).await {
            Ok(results) => {
                // A job that ended while the call was on its way is no longer active (its ack
                // went out with a fetch): refused, but nothing was lost. Only a job still running
                // has really lost its lease.
                let running = in_flight.lock().unwrap();
                for ((l, key), ok) in held.iter().zip(&keys).zip(results) {
                    if !ok && running.contains_key(key) {
                        log::warn!(
                            "tideq: the lease on job {:?} was lost; its result will be rejected",
                            l.id
                        );
                    }
                }
            }
            Err(e) => log::warn!("tideq: could not extend {} lease(s): {e}", held.len()),
        }
    }
}

/// Leased jobs waiting for their batch to fill (a batch worker): their leases are renewed
/// meanwhile (they are in flight), and they hold their slots.
#[derive(Default)]
struct Pending {
    jobs: Vec<(Job, OwnedSemaphorePermit, u64)>,
    /// When the oldest waiting job's wait is over.
    deadline: Option<tokio::time::Instant>,
}

impl Pending {
    fn add(&mut self, ctx: &Arc<JobCtx>, job: Job, permit: OwnedSemaphorePermit, b: BatchOptions) {
        let key = ctx.hold(&job);
        self.jobs.push((job, permit, key));
        self.deadline
            .get_or_insert_with(|| tokio::time::Instant::now() + b.wait);
    }

    /// Starts every full batch, and (when `all`, or the wait is over) the rest.
    fn hand_over(
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
struct JobCtx {
    next_key: AtomicU64,
    queue: Queue,
    handler: Handlers,
    counters: Arc<Counters>,
    in_flight: InFlight,
    acks: Arc<AckQueue>,
    /// Run times, for this worker's metrics and its reports.
    metrics: Arc<crate::metrics::WorkerMetrics>,
    /// Set when the grace period is over: a cancelled job's handler then ended because the worker
    /// is stopping, and the job goes back to the queue instead of failing its attempt.
    shutting_down: AtomicBool,
}

impl JobCtx {
    /// Puts a leased job in flight: its lease is renewed and its stop signal fired at shutdown
    /// until [`settled`](Self::settled).
    fn hold(&self, job: &Job) -> u64 {
        let key = self.next_key.fetch_add(1, Ordering::Relaxed);
        self.in_flight.lock().unwrap().insert(
            key,
            Running {
                lease: job.lease(),
                cancel: job.cancel.clone(),
                cancel_requested: job.cancel_requested.clone(),
            },
        );
        key
    }

    /// Takes jobs out of flight; per job, whether its cancel was requested.
    fn settled(&self, keys: &[u64]) -> Vec<bool> {
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
    fn spawn(self: &Arc<Self>, tasks: &mut JoinSet<()>, job: Job, permit: OwnedSemaphorePermit) {
        let held = job.lease();
        let key = self.hold(&job);
        let ctx = self.clone();
        tasks.spawn(async move { ctx.run_job(job, held, key, permit).await });
    }

    /// Runs a batch handler on `batch`, then completes, fails or (at shutdown) returns each job
    /// as the handler said. The jobs keep their slots until the handler's future has completed.
    async fn run_batch(&self, batch: Vec<(Job, OwnedSemaphorePermit, u64)>) {
        let Handlers::Batch(handler, _) = &self.handler else {
            unreachable!("batches run only on a batch worker")
        };
        let mut jobs = Vec::with_capacity(batch.len());
        let mut held = Vec::with_capacity(batch.len());
        let mut keys = Vec::with_capacity(batch.len());
        let mut permits = Vec::with_capacity(batch.len());
        for (job, permit, key) in batch {
            held.push(job.lease());
            keys.push(key);
            permits.push(permit);
            jobs.push(job);
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
        for _ in 0..cancels.len() {
            self.metrics.run.observe(took);
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
                Box::pin(self.fail(lease, CANCELLED.to_string(), false)).await;
                continue;
            }
            match failed.remove(&lease.id) {
                None => self.acks.push(lease),
                Some(_) if stopping => Box::pin(self.release(lease)).await,
                Some(msg) => Box::pin(self.fail(lease, msg, false)).await,
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

    /// Runs one job: the handler (its lease renewed by the worker's renewer), then ack or fail.
    /// The job's slot (`permit`) is held until the handler's future has completed, even past a
    /// timeout (which only fires the job's cancellation), so concurrency is never exceeded and an
    /// attempt never overlaps its retry. Its ack rides on the next fetch.
    async fn run_job(&self, job: Job, held: Lease, key: u64, permit: OwnedSemaphorePermit) {
        let timeout = job.timeout;
        let cancel = job.cancel.clone();
        let handler = match &self.handler {
            Handlers::One(h) => h.clone(),
            Handlers::Batch(..) => unreachable!("a batch worker runs jobs in batches"),
            Handlers::Tasks(tasks) => match tasks.unknown(&job) {
                None => tasks.handlers[job.task.as_deref().unwrap_or_default()].clone(),
                Some(why) => {
                    // It can never run here: dead-lettered at once, not retried.
                    self.in_flight.lock().unwrap().remove(&key);
                    drop(permit);
                    Box::pin(self.fail(held, why, true)).await;
                    return;
                }
            },
        };
        // The handler runs inline (no extra task); a panic is caught and fails the attempt.
        let started = std::time::Instant::now();
        let handled = std::panic::AssertUnwindSafe(crate::otel::run(&handler, job)).catch_unwind();
        tokio::pin!(handled);
        let mut timed_out = None;
        let outcome = match timeout {
            Some(t) => tokio::select! {
                r = &mut handled => r,
                _ = tokio::time::sleep(t) => {
                    timed_out = Some(t);
                    cancel.cancel();
                    handled.await
                }
            },
            None => handled.await,
        };
        self.metrics.run.observe(started.elapsed());
        let mut result = outcome.unwrap_or_else(|_| Err("handler panicked".to_string()));
        if let Some(t) = timed_out {
            result = Err(format!("timed out after {} ms", t.as_millis()));
        }
        // Settling now: the renewer must not extend a lease the ack is about to end.
        let requested = self.settled(&[key])[0];
        let msg = match result {
            // Its cancel was requested: it ends cancelled, whatever the handler returned.
            _ if requested => CANCELLED.to_string(),
            Ok(None) => {
                // Counted when the fetch loop has sent it (AckQueue::settle).
                self.acks.push(held);
                return;
            }
            // The result rides on the ack; one over the queue's cap fails the attempt instead.
            Ok(Some(bytes)) => match self.queue.check_result_len("result", bytes.len()) {
                Ok(()) => {
                    self.acks.push(Lease {
                        result: Some(bytes),
                        ..held
                    });
                    return;
                }
                Err(e) => e.message().to_string(),
            },
            Err(msg) => msg,
        };
        drop(permit);
        // Boxed: the failure path's futures (a script call, retries) would otherwise sit in every
        // job's task, making each spawn copy kilobytes.
        if cancel.is_cancelled()
            && timed_out.is_none()
            && !requested
            && self.shutting_down.load(Ordering::SeqCst)
        {
            Box::pin(self.release(held)).await;
        } else {
            Box::pin(self.fail(held, msg, false)).await;
        }
    }

    /// Returns a job whose handler stopped because the worker is shutting down; its attempt is
    /// not counted.
    async fn release(&self, held: Lease) {
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

    /// Fails a job's attempt (retry after backoff, or dead letter), retrying Redis errors a few
    /// times.
    async fn fail(&self, held: Lease, msg: String, dead_now: bool) {
        for attempt in 0..5 {
            match self.queue.fail_lease(&held, &msg, dead_now).await {
                Ok(Failed::Cancelled) => {
                    self.counters.cancelled.fetch_add(1, Ordering::Relaxed);
                    return;
                }
                Ok(_) => {
                    self.counters.failed.fetch_add(1, Ordering::Relaxed);
                    return;
                }
                Err(e) if e.kind() == ErrorKind::LeaseLost => {
                    self.counters.lease_lost.fetch_add(1, Ordering::Relaxed);
                    log::warn!("tideq: {e}");
                    return;
                }
                Err(e) if e.is_fatal() => {
                    log::error!(
                        "tideq: could not fail job {:?} (left to its lease): {e}",
                        held.id
                    );
                    return;
                }
                Err(e) => {
                    log::warn!(
                        "tideq: could not fail job {:?} (try {}): {e}",
                        held.id,
                        attempt + 1
                    );
                    tokio::time::sleep(Duration::from_millis(100 << attempt)).await;
                }
            }
        }
        // Gave up: the lease will expire and the job will be redelivered (at-least-once).
    }
}

#[cfg(test)]
mod tests {
    use super::Pass;

    #[test]
    fn a_worker_goes_idle_only_once_every_shard_came_back_empty() {
        // Three shards, two fetches in flight: shard 1's reply (jobs) overtakes shard 0's, then
        // shards 0, 2 and 0 again come back empty. Shard 1 was not looked at again: not idle.
        let mut pass = Pass::new(3);
        assert_eq!(pass.record(1, 5, Some(0)), None);
        assert_eq!(pass.record(0, 0, None), None);
        assert_eq!(pass.record(2, 0, None), None);
        assert_eq!(pass.record(0, 0, None), None);
        // Shard 1 empty too: idle, waking for the soonest due job of any shard.
        assert_eq!(pass.record(1, 0, Some(700)), Some(Some(700)));
        // A new pass starts from scratch; a shard with jobs clears its own mark only.
        assert_eq!(pass.record(0, 0, Some(300)), None);
        assert_eq!(pass.record(1, 0, None), None);
        assert_eq!(pass.record(1, 2, Some(0)), None);
        assert_eq!(pass.record(2, 0, None), None);
        assert_eq!(pass.record(1, 0, None), Some(Some(300)));
        // "Look again now" counts as not empty.
        let mut one = Pass::new(1);
        assert_eq!(one.record(0, 0, Some(0)), None);
        assert_eq!(one.record(0, 0, None), Some(None));
    }
}
