//! The consumer runtime for capped queues: one fetch loop per consumer takes batches (round-robin,
//! or from dedicated hot groups) and runs the handler on up to `concurrency` batches at once.
//! When there is nothing to do it blocks on a wake-up list that producers signal when a group
//! gets data (bounded by `poll_interval`), so an idle consumer costs about one command per interval.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::Semaphore;

use crate::background::{aborted, jittered, stopped, Background, Failure, Outage, Signals};
use tokio::task::JoinSet;

use crate::capped::{Batch, CappedQueue, RoundRobin};
use crate::error::{Error, Result};
use crate::keys::{shard_of, validate_name};
use crate::wait::Waiter;

/// The future a handler returns.
pub type HandlerFuture =
    Pin<Box<dyn Future<Output = std::result::Result<(), String>> + Send + 'static>>;
/// A batch handler, as the runtime stores it.
pub type BatchHandler = Arc<dyn Fn(Batch) -> HandlerFuture + Send + Sync + 'static>;

/// How a consumer takes and runs batches.
#[derive(Debug, Clone, PartialEq)]
pub struct ConsumerOptions {
    /// Batches handled at the same time. Default 1.
    pub concurrency: usize,
    /// Most items per batch. Default 128.
    pub batch_size: usize,
    /// Serve only these groups (a consumer dedicated to hot groups). Empty: serve all groups
    /// round-robin, except `exclude`.
    pub groups: Vec<String>,
    /// Groups a general consumer skips (those served by dedicated consumers).
    pub exclude: Vec<String>,
    /// Longest single wait for a wake-up before looking again. Default 2 s.
    pub poll_interval: Duration,
    /// On shutdown, how long running handlers may take before they are abandoned. Default 10 s.
    pub grace: Duration,
    /// Stop by itself once no group has data and no handler is running (scripts, tests).
    pub stop_when_empty: bool,
}

impl Default for ConsumerOptions {
    fn default() -> Self {
        ConsumerOptions {
            concurrency: 1,
            batch_size: 128,
            groups: Vec::new(),
            exclude: Vec::new(),
            poll_interval: Duration::from_secs(2),
            grace: Duration::from_secs(10),
            stop_when_empty: false,
        }
    }
}

impl ConsumerOptions {
    pub(crate) fn validate(&self) -> Result<()> {
        if self.concurrency == 0 {
            return Err(Error::invalid("concurrency must be at least 1"));
        }
        if self.batch_size == 0 {
            return Err(Error::invalid("batch_size must be at least 1"));
        }
        if self.poll_interval < Duration::from_millis(10) {
            return Err(Error::invalid("poll_interval must be at least 10 ms"));
        }
        if !self.groups.is_empty() && !self.exclude.is_empty() {
            return Err(Error::invalid(
                "use either groups (dedicated) or exclude (general), not both",
            ));
        }
        for g in self.groups.iter().chain(&self.exclude) {
            validate_name("group", g)?;
        }
        Ok(())
    }
}

/// What a consumer has done so far (this process only).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsumerStats {
    pub batches: u64,
    pub items: u64,
    /// Batches whose handler returned an error or panicked (their items are gone: at-most-once).
    pub failed: u64,
    /// Fetches that failed (e.g. Redis unreachable); the consumer retried with backoff.
    pub fetch_errors: u64,
}

#[derive(Default)]
struct Counters {
    batches: AtomicU64,
    items: AtomicU64,
    failed: AtomicU64,
    fetch_errors: AtomicU64,
}

impl Counters {
    fn snapshot(&self) -> ConsumerStats {
        ConsumerStats {
            batches: self.batches.load(Ordering::Relaxed),
            items: self.items.load(Ordering::Relaxed),
            failed: self.failed.load(Ordering::Relaxed),
            fetch_errors: self.fetch_errors.load(Ordering::Relaxed),
        }
    }
}

/// A running consumer. Dropping the handle stops it gracefully, like [`stop`](Self::stop), unless
/// it was [detached](Self::detach); call [`shutdown`](Self::shutdown) to also wait for it.
#[must_use = "dropping the handle stops the consumer"]
pub struct Consumer {
    bg: Background,
    counters: Arc<Counters>,
}

impl CappedQueue {
    /// Starts a consumer on the current tokio runtime, calling `handler` with each batch.
    /// A handler error is logged and counted; the batch is not redelivered (at-most-once).
    pub fn consume<F, Fut, E>(&self, opts: ConsumerOptions, handler: F) -> Result<Consumer>
    where
        F: Fn(Batch) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = std::result::Result<(), E>> + Send + 'static,
        E: std::fmt::Display + 'static,
    {
        let handler: BatchHandler = Arc::new(move |batch| {
            let fut = handler(batch);
            Box::pin(async move { fut.await.map_err(|e| e.to_string()) })
        });
        self.consume_boxed(opts, handler)
    }

    /// Binding plumbing, not part of the stable API (hidden from the docs): [`consume`](Self::consume)
    /// with an already boxed handler, as the Python and Node bindings call it.
    #[doc(hidden)]
    pub fn consume_boxed(&self, opts: ConsumerOptions, handler: BatchHandler) -> Result<Consumer> {
        opts.validate()?;
        let counters = Arc::new(Counters::default());
        let c = counters.clone();
        let queue = self.clone();
        // The loop backs off by itself: its calls do not wait out a cluster failover.
        let bg = Background::spawn("consume", move |sig| {
            crate::client::without_failover_wait(run(queue, opts, handler, c, sig))
        })?;
        Ok(Consumer { bg, counters })
    }
}

impl Consumer {
    pub fn stats(&self) -> ConsumerStats {
        self.counters.snapshot()
    }

    /// Asks the consumer to stop taking batches; running handlers get the grace period.
    pub fn stop(&self) {
        self.bg.stop();
    }

    /// Keeps the consumer running when this handle is dropped: it then runs until it stops by
    /// itself (`stop_when_empty`, a fatal error) or through another handle (an `Arc` of this
    /// one). The Python and Node bindings detach every consumer they start.
    pub fn detach(&self) {
        self.bg.detach();
    }

    /// True until the fetch loop has ended and running handlers have finished or been abandoned.
    pub fn is_running(&self) -> bool {
        self.bg.is_running()
    }

    /// Waits until the consumer has stopped (after [`stop`](Self::stop), or by itself with
    /// `stop_when_empty`), and returns its stats.
    pub async fn join(&self) -> ConsumerStats {
        self.bg.join().await;
        self.stats()
    }

    /// Stops and waits: no new batches, running handlers finish within the grace period.
    pub async fn shutdown(&self) -> ConsumerStats {
        self.stop();
        self.join().await
    }

    /// Stops at once: running handlers are abandoned (their batches were popped already: a
    /// capped queue is at-most-once). What a second Ctrl-C does.
    pub fn abort(&self) {
        self.bg.abort();
    }

    /// The error the consumer stopped on by itself, if any: credentials or permissions Redis
    /// refused ([`Error::is_fatal`]), which retrying cannot fix. Transient errors are retried with
    /// backoff and never end up here.
    pub fn error(&self) -> Option<Error> {
        self.bg.error()
    }

    /// Runs until SIGINT (Ctrl-C) or SIGTERM, or until the consumer stops by itself, then shuts
    /// down gracefully.
    pub async fn run_until_signal(&self) -> ConsumerStats {
        self.bg.until_signal().await;
        self.stats()
    }
}

struct Fetcher {
    queue: CappedQueue,
    opts: ConsumerOptions,
    rr: RoundRobin,
    next_dedicated: usize,
    waiter: Waiter,
}

impl Fetcher {
    /// Up to `count` batches, each from another group, in one script call per shard: round-robin
    /// over the groups with data, or over the dedicated `groups`.
    async fn fetch(&mut self, count: usize) -> Result<Vec<Batch>> {
        let max = self.opts.batch_size;
        if self.opts.groups.is_empty() {
            return self
                .queue
                .next_batches(max, count, &self.opts.exclude, &mut self.rr)
                .await;
        }
        // Dedicated: the next `count` of our groups in turn, one call per shard they are on.
        let n = self.opts.groups.len();
        let shards = self.queue.shards.len();
        let mut by_shard: Vec<Vec<String>> = vec![Vec::new(); shards];
        for _ in 0..count.min(n) {
            let group = self.opts.groups[self.next_dedicated % n].clone();
            self.next_dedicated = (self.next_dedicated + 1) % n;
            by_shard[shard_of(&group, shards)].push(group);
        }
        let mut out = Vec::new();
        for (shard, groups) in by_shard.iter().enumerate() {
            if !groups.is_empty() {
                let (batches, _, _) = self.queue.pop_groups(shard, groups, max, 0, &[]).await?;
                out.extend(batches);
            }
        }
        Ok(out)
    }

    /// Blocks until a producer signals new data or `poll_interval` passes.
    async fn wait(&mut self) -> Result<()> {
        self.waiter.wait(self.opts.poll_interval).await
    }
}

async fn run(
    queue: CappedQueue,
    opts: ConsumerOptions,
    handler: BatchHandler,
    counters: Arc<Counters>,
    sig: Signals,
) {
    let Signals {
        stop: mut stop_rx,
        mut abort,
        done,
        failure,
    } = sig;
    // The queue's shard count, checked against the one recorded before the first pop; a
    // consumer made with another count stops at once (`shards.rs`).
    // Its failures count as fetch errors (nothing can be popped meanwhile).
    let what = format!("the consumer of capped queue {:?}", queue.name());
    let check = || async {
        let r = queue.check_shards().await;
        if r.is_err() {
            counters.fetch_errors.fetch_add(1, Ordering::Relaxed);
        }
        r
    };
    match crate::shards::check_at_start(what, &mut stop_rx, check).await {
        Ok(true) => {}
        Ok(false) => {
            let _ = done.send(true);
            return;
        }
        Err(e) => {
            stopped_on(&queue, &failure, e);
            let _ = done.send(true);
            return;
        }
    }
    let wake_keys = if opts.groups.is_empty() {
        queue.shards.iter().map(|k| k.wake()).collect()
    } else {
        opts.groups
            .iter()
            .map(|g| queue.keys_for(g).group_wake(g))
            .collect()
    };
    let waiter = Waiter::new(&queue.client, wake_keys);
    let grace = opts.grace;
    let stop_when_empty = opts.stop_when_empty;
    let sem = Arc::new(Semaphore::new(opts.concurrency));
    let mut fetcher = Fetcher {
        queue,
        opts,
        rr: RoundRobin::default(),
        next_dedicated: 0,
        waiter,
    };
    let mut tasks: JoinSet<()> = JoinSet::new();
    let mut backoff = Duration::from_millis(50);
    let mut outage = Outage::new(format!(
        "the consumer of capped queue {:?}",
        fetcher.queue.name()
    ));
    loop {
        while let Some(res) = tasks.try_join_next() {
            reap(res, &counters);
        }
        let permit = tokio::select! {
            _ = stopped(&mut stop_rx) => break,
            p = sem.clone().acquire_owned() => p.expect("semaphore never closes"),
        };
        if *stop_rx.borrow() {
            break;
        }
        // One slot taken; every other free one joins it, so one call fetches for all of them.
        let mut permits = vec![permit];
        while let Ok(p) = sem.clone().try_acquire_owned() {
            permits.push(p);
        }
        // Not raced against stop: a batch popped from Redis must reach the handler.
        match fetcher.fetch(permits.len()).await {
            Ok(batches) if !batches.is_empty() => {
                backoff = Duration::from_millis(50);
                outage.recovered();
                for batch in batches {
                    let permit = permits.pop().expect("at most one batch per slot");
                    let handler = handler.clone();
                    let counters = counters.clone();
                    tasks.spawn(async move {
                        let n = batch.items.len() as u64;
                        let group = batch.group.clone();
                        let res = handler(batch).await;
                        counters.batches.fetch_add(1, Ordering::Relaxed);
                        counters.items.fetch_add(n, Ordering::Relaxed);
                        if let Err(e) = res {
                            counters.failed.fetch_add(1, Ordering::Relaxed);
                            log::warn!(
                                target: crate::HANDLER_LOG_TARGET,
                                "tideq: handler failed on a batch of {n} from group {group:?}: {e}"
                            );
                        }
                        drop(permit);
                    });
                }
            }
            Ok(_) => {
                drop(permits);
                outage.recovered();
                if stop_when_empty {
                    if tasks.is_empty() {
                        break;
                    }
                    tokio::select! {
                        _ = stopped(&mut stop_rx) => break,
                        res = tasks.join_next() => if let Some(res) = res { reap(res, &counters) },
                    }
                    continue;
                }
                let waited = tokio::select! {
                    _ = stopped(&mut stop_rx) => break,
                    r = fetcher.wait() => r,
                };
                if let Err(e) = waited {
                    counters.fetch_errors.fetch_add(1, Ordering::Relaxed);
                    if e.is_fatal() {
                        stopped_on(&fetcher.queue, &failure, e);
                        break;
                    }
                    outage.failed(&e, backoff);
                    tokio::select! {
                        _ = stopped(&mut stop_rx) => break,
                        _ = tokio::time::sleep(jittered(backoff)) => {}
                    }
                    backoff = (backoff * 2).min(Duration::from_secs(5));
                }
            }
            Err(e) => {
                drop(permits);
                counters.fetch_errors.fetch_add(1, Ordering::Relaxed);
                if e.is_fatal() {
                    stopped_on(&fetcher.queue, &failure, e);
                    break;
                }
                outage.failed(&e, backoff);
                tokio::select! {
                    _ = stopped(&mut stop_rx) => break,
                    _ = tokio::time::sleep(jittered(backoff)) => {}
                }
                backoff = (backoff * 2).min(Duration::from_secs(5));
            }
        }
    }
    let drain = async {
        while let Some(res) = tasks.join_next().await {
            reap(res, &counters);
        }
    };
    let drained = tokio::select! {
        r = tokio::time::timeout(grace, drain) => r.is_ok(),
        _ = aborted(&mut abort) => false,
    };
    if !drained {
        log::warn!(
            "tideq: {} handler(s) still running after the grace period; abandoning them",
            tasks.len()
        );
        tasks.abort_all();
    }
    let _ = done.send(true);
}

/// Logs and keeps the error a consumer stops on (it cannot be fixed by retrying).
fn stopped_on(queue: &CappedQueue, failure: &Failure, e: Error) {
    log::error!(
        "tideq: the consumer of capped queue {:?} stopped: {e}; running handlers get the grace period",
        queue.name()
    );
    failure.set(e);
}

fn reap(res: std::result::Result<(), tokio::task::JoinError>, counters: &Counters) {
    if let Err(e) = res {
        if e.is_panic() {
            counters.batches.fetch_add(1, Ordering::Relaxed);
            counters.failed.fetch_add(1, Ordering::Relaxed);
            log::warn!("tideq: a batch handler panicked");
        }
    }
}
