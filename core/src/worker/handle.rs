//! A running worker's handle, and `Queue::work*`, which start one.

use std::future::Future;
use std::sync::Arc;

use crate::background::Background;

use crate::error::{Error, Result};

use crate::job::Job;
use crate::jobs::Queue;
use crate::task::Tasks;

use super::*;

/// A running worker. Dropping the handle stops it gracefully, like [`stop`](Self::stop), unless
/// it was [detached](Self::detach); call [`shutdown`](Self::shutdown) to also wait for it.
#[must_use = "dropping the handle stops the worker"]
pub struct Worker {
    bg: Background,
    counters: Arc<Counters>,
    metrics: Arc<crate::metrics::WorkerMetrics>,
    queue_name: Arc<str>,
    max_jobs: Option<u64>,
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

    /// Whether the worker is connected and leasing: true once its latest fetch on every shard of
    /// the queue succeeded; false before its first fetch, from a failed fetch (Redis down, say)
    /// until the next one that works, and once it stops leasing (stopping, or its
    /// [`max_jobs`](WorkerOptions::max_jobs) reached). What a readiness probe asks.
    pub fn is_ready(&self) -> bool {
        self.counters
            .ready
            .load(std::sync::atomic::Ordering::Relaxed)
            && self.is_running()
    }

    /// Jobs this worker has leased so far (this process only; those running included).
    pub fn jobs_taken(&self) -> u64 {
        self.counters
            .taken
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The queue this worker serves.
    pub fn queue_name(&self) -> &str {
        &self.queue_name
    }

    /// Its [`max_jobs`](WorkerOptions::max_jobs) is reached: it leases no more.
    pub(crate) fn exhausted(&self) -> bool {
        self.max_jobs.is_some_and(|m| self.jobs_taken() >= m)
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
        E: Into<crate::worker::HandlerError> + 'static,
    {
        self.work_boxed(opts, boxed(handler))
    }

    /// Binding plumbing, not part of the stable API (hidden from the docs): [`work`](Self::work)
    /// with an already boxed handler, as the Python and Node bindings call it. Unlike `work`,
    /// the handler's future is never dropped before it completes: a cancelled job (timeout,
    /// shutdown) only fires [`Job::cancellation`], and keeps its slot and lease until the future
    /// completes, so a handler running on another thread can never overlap its own retry.
    #[doc(hidden)]
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

    /// Binding plumbing, not part of the stable API (hidden from the docs):
    /// [`work_batches`](Self::work_batches) with an already boxed handler:
    /// its future is never dropped before it completes (cancellation only fires the jobs'
    /// [`Job::cancellation`]).
    #[doc(hidden)]
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
        if crate::testing::active() {
            return Err(
                crate::testing::refused("a worker").context(&format!("queue {:?}", self.name))
            );
        }
        opts.validate()?;
        let counters = Arc::new(Counters::default());
        let metrics = Arc::new(crate::metrics::WorkerMetrics::new());
        let (c, m) = (counters.clone(), metrics.clone());
        let max_jobs = opts.max_jobs;
        let queue = self.clone();
        let bg = Background::spawn("work", move |sig| run(queue, opts, handler, c, m, sig))?;
        Ok(Worker {
            bg,
            counters,
            metrics,
            queue_name: self.name.clone(),
            max_jobs,
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
    E: Into<crate::worker::HandlerError> + 'static,
{
    Arc::new(move |job: Job| {
        let cancel = job.cancel.clone();
        let fut = handler(job);
        Box::pin(async move {
            tokio::select! {
                r = fut => match r {
                    Ok(r) => R::into_job_result(r).map_err(HandlerError::from),
                    Err(e) => Err(e.into()),
                },
                _ = cancel.cancelled() => Err("stopped: the job was cancelled".into()),
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
