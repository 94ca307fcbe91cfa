//! What a worker's fetch loop keeps for `max_jobs` and readiness: the jobs taken (in the
//! worker's counters, for `Worker::jobs_taken`), the jobs asked for by fetches in flight, and
//! which shards' latest fetch succeeded (`Worker::is_ready`: all of them, and leasing).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use super::Counters;

pub(super) struct Budget {
    max_jobs: Option<u64>,
    counters: Arc<Counters>,
    /// Jobs asked for by the fetches in flight: a fetch asks for at most what is left once
    /// those are counted, so the worker never leases one more than `max_jobs`.
    asked: AtomicU64,
    /// Per shard: its latest fetch succeeded.
    shard_ok: Vec<AtomicBool>,
}

impl Budget {
    pub(super) fn new(max_jobs: Option<u64>, counters: Arc<Counters>, shards: usize) -> Self {
        Budget {
            max_jobs,
            counters,
            asked: AtomicU64::new(0),
            shard_ok: (0..shards).map(|_| AtomicBool::new(false)).collect(),
        }
    }

    fn taken(&self) -> u64 {
        self.counters.taken.load(Ordering::Relaxed)
    }

    /// `max_jobs` is reached: the worker leases no more.
    pub(super) fn exhausted(&self) -> bool {
        self.max_jobs.is_some_and(|m| self.taken() >= m)
    }

    /// How many more jobs may be asked for now (`u64::MAX` without a limit).
    pub(super) fn left(&self) -> u64 {
        match self.max_jobs {
            Some(m) => m
                .saturating_sub(self.taken())
                .saturating_sub(self.asked.load(Ordering::Relaxed)),
            None => u64::MAX,
        }
    }

    /// A fetch asking for `n` jobs is sent.
    pub(super) fn ask(&self, n: u64) {
        self.asked.fetch_add(n, Ordering::Relaxed);
    }

    /// A fetch that asked for `asked` jobs is back.
    pub(super) fn returned(&self, asked: u64) {
        self.asked.fetch_sub(asked, Ordering::Relaxed);
    }

    /// Jobs a fetch leased.
    pub(super) fn took(&self, n: usize) {
        self.counters.taken.fetch_add(n as u64, Ordering::Relaxed);
    }

    /// A fetch on `shard` succeeded (`ok`) or failed: readiness follows.
    pub(super) fn fetched(&self, shard: usize, ok: bool) {
        self.shard_ok[shard].store(ok, Ordering::Relaxed);
        let ready =
            ok && self.shard_ok.iter().all(|s| s.load(Ordering::Relaxed)) && !self.exhausted();
        self.counters.ready.store(ready, Ordering::Relaxed);
    }

    /// The worker stopped leasing: not ready any more.
    pub(super) fn stopped(&self) {
        self.counters.ready.store(false, Ordering::Relaxed);
    }
}
