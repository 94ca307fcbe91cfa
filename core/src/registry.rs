//! The worker registry: who each live worker is (host, pid, runtime, concurrency, when it
//! started) and what it runs, for operators ([`Queue::workers`], `tideq workers`, the dashboard,
//! the exporter's `tideq_workers`).
//!
//! Kept up by calls the workers make anyway: a fetch that carries the worker's report (at most
//! every [`REPORT_EVERY`](crate::metrics::REPORT_EVERY), and its first fetch) writes its entry,
//! and so does each lease renewal (every `lease / 3` while it runs jobs), so a worker busy with
//! long jobs, which does not fetch, stays listed. A worker that stops removes its entry; the
//! fetch script forgets workers not seen for 10 minutes, a few per call. See
//! docs/data-model.md, "Workers".

use std::collections::HashMap;

use redis::Value;
use serde::{Deserialize, Serialize};

use crate::error::{Error, ErrorKind, Result};
use crate::jobs::Queue;
use crate::metrics::ALIVE_FOR;
use crate::scripts::encoding::{parse_worker_entry, worker_entry, WorkerEntry};
use crate::scripts::LIST_WORKERS;

/// The most running jobs' ids a worker's entry names.
pub const RUNNING_IDS_SHOWN: usize = 10;

/// The most workers one call reads (a page: every worker is read, page by page).
const WORKERS_PAGE: usize = 500;

/// A live worker, as [`Queue::workers`] lists it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct WorkerInfo {
    /// The worker's id (random, new for each worker).
    pub id: String,
    /// The queue it works.
    pub queue: String,
    /// The host name of its machine.
    pub host: String,
    /// Its process id.
    pub pid: u32,
    /// The runtime of its handlers: "rust", "python" or "node".
    pub runtime: String,
    /// The tideq version it runs.
    pub version: String,
    /// Jobs it runs at the same time, at most.
    pub concurrency: u64,
    /// Jobs it was running when last seen.
    pub running: u64,
    /// The ids of up to 10 of them.
    pub running_ids: Vec<String>,
    /// When it started (ms since the epoch, its machine's clock).
    pub started_at: u64,
    /// When it was last seen (ms since the epoch, the Redis clock).
    pub last_seen_at: u64,
}

/// A worker's identity, as its entries carry it: built once when the worker starts.
#[derive(Debug, Clone)]
pub(crate) struct Registration {
    /// The worker's id (its metrics' id: the same member of the `workers` set).
    pub id: String,
    entry: WorkerEntry,
}

impl Registration {
    pub fn new(id: &str, queue: &str, concurrency: usize, runtime: &str) -> Self {
        Registration {
            id: id.to_string(),
            entry: WorkerEntry {
                queue: queue.to_string(),
                host: host_name(),
                pid: std::process::id(),
                runtime: runtime.to_string(),
                version: env!("CARGO_PKG_VERSION").to_string(),
                concurrency: concurrency as u64,
                started: crate::job::now_ms(),
                running: 0,
                ids: Vec::new(),
            },
        }
    }

    /// The entry to store now: this worker and its `running` jobs (the ids of up to
    /// [`RUNNING_IDS_SHOWN`] of them, in order).
    pub fn entry<'a>(&self, running: impl IntoIterator<Item = &'a str>) -> String {
        let mut ids: Vec<&str> = running.into_iter().collect();
        ids.sort_unstable();
        let mut e = self.entry.clone();
        e.running = ids.len() as u64;
        e.ids = ids
            .into_iter()
            .take(RUNNING_IDS_SHOWN)
            .map(str::to_string)
            .collect();
        worker_entry(&e)
    }
}

/// This machine's host name: `HOSTNAME`, else the kernel's or `/etc/hostname`; "" if none.
fn host_name() -> String {
    let from_env = ["HOSTNAME", "COMPUTERNAME"]
        .iter()
        .find_map(|v| std::env::var(v).ok().filter(|h| !h.trim().is_empty()));
    from_env
        .or_else(|| {
            ["/proc/sys/kernel/hostname", "/etc/hostname"]
                .iter()
                .find_map(|p| std::fs::read_to_string(p).ok())
        })
        .map(|h| h.trim().to_string())
        .unwrap_or_default()
}

impl Queue {
    /// The workers of this queue seen within [`ALIVE_FOR`] (their fetches, or their lease
    /// renewals while they run jobs) by the Redis clock, over every shard, in the order they
    /// started. Read in pages of 500 workers per call, however many there are.
    pub async fn workers(&self) -> Result<Vec<WorkerInfo>> {
        self.op("workers", self.alive_workers()).await
    }

    pub(crate) async fn alive_workers(&self) -> Result<Vec<WorkerInfo>> {
        let within = ALIVE_FOR.as_millis() as u64;
        let bad = || Error::new(ErrorKind::Redis, "unexpected reply from list_workers");
        // A worker may be seen on several shards (and read twice on one, when seen again while
        // its pages are read): its latest sighting wins.
        let mut by_id: HashMap<String, WorkerInfo> = HashMap::new();
        for shard in 0..self.shards.len() {
            let mut place = String::new();
            loop {
                let mut cmd = self.script_cmd(shard, &LIST_WORKERS);
                cmd.arg(within).arg(&place).arg(WORKERS_PAGE);
                let reply: Vec<Value> = self.client.eval(&cmd, &LIST_WORKERS).await?;
                let mut flat = reply.into_iter();
                let next: Option<String> =
                    redis::from_redis_value(flat.next().ok_or_else(bad)?).map_err(|_| bad())?;
                while let Some(id) = flat.next() {
                    let (Some(seen), Some(entry)) = (flat.next(), flat.next()) else {
                        return Err(bad());
                    };
                    let id: String = redis::from_redis_value(id).map_err(|_| bad())?;
                    let seen: u64 = redis::from_redis_value(seen).map_err(|_| bad())?;
                    let entry: String = redis::from_redis_value(entry).map_err(|_| bad())?;
                    if by_id.get(&id).is_some_and(|w| w.last_seen_at >= seen) {
                        continue;
                    }
                    by_id.insert(id.clone(), self.worker_info(id, seen, &entry));
                }
                match next {
                    Some(p) => place = p,
                    None => break,
                }
            }
        }
        let mut out: Vec<WorkerInfo> = by_id.into_values().collect();
        out.sort_by(|a, b| (a.started_at, &a.id).cmp(&(b.started_at, &b.id)));
        Ok(out)
    }

    /// A worker as listed: its id, when it was last seen, and its entry (one that cannot be read
    /// is listed with this queue's name and nothing else).
    fn worker_info(&self, id: String, seen: u64, entry: &str) -> WorkerInfo {
        let e = parse_worker_entry(entry).unwrap_or_else(|| WorkerEntry {
            queue: self.name().to_string(),
            ..WorkerEntry::default()
        });
        WorkerInfo {
            id,
            queue: e.queue,
            host: e.host,
            pid: e.pid,
            runtime: e.runtime,
            version: e.version,
            concurrency: e.concurrency,
            running: e.running,
            running_ids: e.ids,
            started_at: e.started,
            last_seen_at: seen,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_names_at_most_ten_running_jobs_and_counts_them_all() {
        let r = Registration::new("w1", "emails", 4, "python");
        let ids: Vec<String> = (0..12).map(|i| format!("job-{i:02}")).collect();
        let e = parse_worker_entry(&r.entry(ids.iter().map(String::as_str))).unwrap();
        assert_eq!(e.running, 12);
        assert_eq!(e.ids, ids[..10].to_vec());
        assert_eq!((e.queue.as_str(), e.runtime.as_str()), ("emails", "python"));
        assert_eq!(e.pid, std::process::id());
        assert_eq!(e.version, env!("CARGO_PKG_VERSION"));
    }
}
