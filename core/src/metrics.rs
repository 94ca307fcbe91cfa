//! Metrics: what a worker measures (its jobs' run times, in this process) and what the queue
//! keeps in Redis for an exporter to read (the run-time and promotion-lateness histograms summed
//! over every worker, and which workers are alive), and both as Prometheus text through
//! `prometheus-client` (`metrics/prometheus.rs`).
//!
//! Cheap by construction: a worker adds each run time to atomic buckets, and sends what it
//! gathered along with a fetch it makes anyway, at most every [`REPORT_EVERY`] (one more
//! argument to that call, a few `HINCRBY` in the script); the fetch script files the lateness of
//! the delayed jobs it promotes (only when it promotes some). See docs/data-model.md, "Metrics".

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::error::Result;
use crate::job::JobStats;
use crate::jobs::Queue;

mod prometheus;
pub(crate) mod tasks;

pub(crate) use prometheus::encode_worker;
pub use prometheus::{encode_prometheus, openmetrics_to_text_format};

/// Upper bounds of the histograms' buckets, in ms (one more bucket above the last). The fetch
/// script files lateness with the same bounds (lua/lib/metrics.lua, `METRIC_BOUNDS_MS`). In
/// Redis a bucket is a field named by its bound (`rt:le2.5`, `rt:leinf` above the last), so a
/// bound added later never files values under another's name.
/// From 1 ms to an hour, so minute-long jobs land in buckets of their own, not all above 10 s.
pub const BUCKETS_MS: [f64; 18] = [
    1.0, 2.5, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0, 2500.0, 5000.0, 10000.0, 30000.0,
    60000.0, 300000.0, 900000.0, 3600000.0,
];

/// The name of bucket `i`'s field after `<histogram>:` (`le2.5`; `leinf` above every bound).
fn bucket_field(i: usize) -> String {
    match BUCKETS_MS.get(i) {
        Some(b) => format!("le{b}"),
        None => "leinf".to_string(),
    }
}

/// The bucket a field names (see [`bucket_field`]).
fn bucket_of_field(part: &str) -> Option<usize> {
    let bound = part.strip_prefix("le")?;
    if bound == "inf" {
        return Some(BUCKETS_MS.len());
    }
    let b: f64 = bound.parse().ok()?;
    BUCKETS_MS.iter().position(|&x| x == b)
}

/// How often at most a worker sends what it gathered (and says it is alive: its lease renewals
/// say so too while it runs jobs, see [`Queue::workers`]).
pub const REPORT_EVERY: Duration = Duration::from_secs(15);

/// A worker counts as alive this long after it was last seen (its last report or renewal).
pub const ALIVE_FOR: Duration = Duration::from_secs(45);

/// A histogram's state: counts per bucket (not cumulative; the last is above every bound), the
/// sum of the values (ms) and their count.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Histogram {
    pub counts: Vec<u64>,
    pub sum_ms: f64,
    pub count: u64,
}

impl Histogram {
    /// (upper bound in seconds, count in that bucket) pairs, the last one above every bound:
    /// prometheus-client adds them up into the cumulative buckets itself.
    fn buckets(&self) -> Vec<(f64, u64)> {
        let mut out = Vec::with_capacity(BUCKETS_MS.len() + 1);
        for (i, le) in BUCKETS_MS.iter().enumerate() {
            out.push((le / 1000.0, self.counts.get(i).copied().unwrap_or(0)));
        }
        let below: u64 = out.iter().map(|b| b.1).sum();
        out.push((f64::INFINITY, self.count.saturating_sub(below)));
        out
    }
}

fn bucket_of(ms: f64) -> usize {
    BUCKETS_MS
        .iter()
        .position(|&b| ms <= b)
        .unwrap_or(BUCKETS_MS.len())
}

/// A histogram a worker fills from its job tasks (lock-free).
#[derive(Debug, Default)]
pub(crate) struct AtomicHistogram {
    counts: [AtomicU64; BUCKETS_MS.len() + 1],
    sum_us: AtomicU64,
}

impl AtomicHistogram {
    pub fn observe(&self, d: Duration) {
        let us = d.as_micros().min(u128::from(u64::MAX)) as u64;
        self.counts[bucket_of(us as f64 / 1000.0)].fetch_add(1, Ordering::Relaxed);
        self.sum_us.fetch_add(us, Ordering::Relaxed);
    }

    fn snapshot(&self) -> ([u64; BUCKETS_MS.len() + 1], u64) {
        let mut c = [0; BUCKETS_MS.len() + 1];
        for (i, v) in self.counts.iter().enumerate() {
            c[i] = v.load(Ordering::Relaxed);
        }
        (c, self.sum_us.load(Ordering::Relaxed))
    }

    pub fn histogram(&self) -> Histogram {
        let (c, sum_us) = self.snapshot();
        Histogram {
            counts: c.to_vec(),
            sum_ms: sum_us as f64 / 1000.0,
            count: c.iter().sum(),
        }
    }
}

/// A worker's metrics and what it has reported of them so far.
#[derive(Debug)]
pub(crate) struct WorkerMetrics {
    /// This worker's id in the queue's `workers` set.
    pub id: String,
    pub run: AtomicHistogram,
    /// Per-task counts since the last report.
    pub tasks: tasks::TaskTally,
    reported: Mutex<Reported>,
}

#[derive(Debug)]
struct Reported {
    at: Option<Instant>,
    counts: [u64; BUCKETS_MS.len() + 1],
    sum_us: u64,
}

impl WorkerMetrics {
    pub fn new() -> Self {
        WorkerMetrics {
            id: format!("{:016x}", fastrand::u64(..)),
            run: AtomicHistogram::default(),
            tasks: Default::default(),
            reported: Mutex::new(Reported {
                at: None,
                counts: [0; BUCKETS_MS.len() + 1],
                sum_us: 0,
            }),
        }
    }

    /// The report to send with the next fetch, when one is due:
    /// "<id>|rt:<bucket>=<n>,...[|<per-task counts>]" (per-task counts: see `metrics/tasks.rs`). Taken
    /// as sent (a fetch that fails loses it: metrics are best effort).
    pub fn take_report(&self) -> Option<String> {
        self.report(false)
    }

    /// The last report, at the worker's end: what was measured since the last one, if anything.
    pub fn take_final(&self) -> Option<String> {
        self.report(true)
    }

    fn report(&self, last: bool) -> Option<String> {
        let mut r = self.reported.lock().unwrap();
        let (counts, _) = self.run.snapshot();
        if last && counts == r.counts && self.tasks.is_empty() {
            return None;
        }
        if !last && r.at.is_some_and(|at| at.elapsed() < REPORT_EVERY) {
            return None;
        }
        let (counts, sum_us) = self.run.snapshot();
        let mut out = format!("{}|", self.id);
        let mut n = 0;
        for (i, (now, before)) in counts.iter().zip(r.counts.iter()).enumerate() {
            if now > before {
                let _ = write!(out, "rt:{}={},", bucket_field(i), now - before);
                n += now - before;
            }
        }
        if n > 0 {
            let _ = write!(out, "rt:count={n},rt:sum_us={}", sum_us - r.sum_us);
        }
        let tasks = self.tasks.take();
        if !tasks.is_empty() {
            out.push('|');
            out.push_str(&tasks);
        }
        r.at = Some(Instant::now());
        r.counts = counts;
        r.sum_us = sum_us;
        Some(out)
    }
}

/// A job queue's metrics as the exporter reads them.
#[derive(Debug, Clone, PartialEq)]
pub struct QueueMetrics {
    pub queue: String,
    pub stats: JobStats,
    /// Handlers' run times, over every worker's reports.
    pub run_time: Histogram,
    /// How late delayed jobs (and retries) were made ready after their due time.
    pub promotion_lateness: Histogram,
    /// Workers seen within [`ALIVE_FOR`]: a fetch's report, or a lease renewal while they run
    /// jobs ([`Queue::workers`]).
    pub workers: u64,
    /// Of those, the workers running jobs.
    pub busy_workers: u64,
    /// Flow jobs waiting for their children (the state [`JobState::Waiting`](crate::JobState)).
    pub waiting: u64,
}

impl Queue {
    /// The queue's metrics: [`stats`](Self::stats), the run-time and promotion-lateness
    /// histograms the workers and scripts keep in Redis, the workers alive, and the flow jobs
    /// waiting for their children.
    pub async fn metrics(&self) -> Result<QueueMetrics> {
        let stats = self.stats().await?;
        self.op("metrics", async {
            let mut run = Histogram::default();
            let mut late = Histogram::default();
            run.counts = vec![0; BUCKETS_MS.len() + 1];
            late.counts = vec![0; BUCKETS_MS.len() + 1];
            let mut waiting = 0;
            let alive = self.alive_workers().await?;
            let workers = alive.len() as u64;
            let busy_workers = alive.iter().filter(|w| w.running > 0).count() as u64;
            let mut conn = self.client.conn().await?;
            for k in self.shards.iter() {
                let (fields, parents): (Vec<(String, u64)>, u64) = redis::pipe()
                    .hgetall(k.metrics())
                    .hlen(k.fwait())
                    .query_async(&mut conn)
                    .await
                    .map_err(|e| self.client.err(e))?;
                waiting += parents;
                for (f, v) in fields {
                    let Some((h, part)) = f.split_once(':') else {
                        continue;
                    };
                    // "rt": run times, "lt": promotion lateness (fields of earlier versions,
                    // "run:<i>" and "late:<i>", are left alone).
                    let h = match h {
                        "rt" => &mut run,
                        "lt" => &mut late,
                        _ => continue,
                    };
                    match part {
                        "count" => h.count += v,
                        "sum_us" => h.sum_ms += v as f64 / 1000.0,
                        "sum_ms" => h.sum_ms += v as f64,
                        bucket => {
                            if let Some(c) =
                                bucket_of_field(bucket).and_then(|i| h.counts.get_mut(i))
                            {
                                *c += v;
                            }
                        }
                    }
                }
            }
            Ok(QueueMetrics {
                queue: self.name().to_string(),
                stats,
                run_time: run,
                promotion_lateness: late,
                workers,
                busy_workers,
                waiting,
            })
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The run-time histogram topped at 10 s, so minute-long jobs all landed in `+Inf`; the
    /// bounds go to an hour (the fetch script's lateness too: see the next test).
    #[test]
    fn minute_long_runs_get_buckets_of_their_own_not_all_above_10_s() {
        assert_eq!(
            bucket_of(45_000.0),
            BUCKETS_MS.iter().position(|&b| b == 60_000.0).unwrap()
        );
        assert!(
            bucket_of(45_000.0) < BUCKETS_MS.len(),
            "not above every bound"
        );
    }

    #[test]
    fn a_report_carries_what_was_measured_since_the_last_one() {
        let m = WorkerMetrics::new();
        m.run.observe(Duration::from_micros(700));
        m.run.observe(Duration::from_millis(30));
        let r = m.take_report().unwrap();
        assert!(r.starts_with(&format!("{}|", m.id)), "{r}");
        assert!(
            r.contains("rt:le1=1,")
                && r.contains("rt:le50=1,")
                && r.contains("rt:count=2,rt:sum_us=30700"),
            "{r}"
        );
        // Not due again yet.
        assert_eq!(m.take_report(), None);
    }

    #[test]
    fn bucket_fields_name_their_bounds_and_read_back() {
        assert_eq!(bucket_field(1), "le2.5");
        assert_eq!(bucket_field(11), "le5000");
        assert_eq!(bucket_field(BUCKETS_MS.len()), "leinf");
        for i in 0..=BUCKETS_MS.len() {
            assert_eq!(bucket_of_field(&bucket_field(i)), Some(i));
        }
        // An earlier version's index fields ("run:3") are not buckets.
        assert_eq!(bucket_of_field("3"), None);
        assert_eq!(bucket_of_field("le7"), None);
    }

    #[test]
    fn the_lua_side_files_lateness_with_the_same_bucket_bounds() {
        let lua = include_str!("lua/lib/metrics.lua");
        let bounds: Vec<String> = BUCKETS_MS.iter().map(|b| b.to_string()).collect();
        assert!(
            lua.contains(&format!("METRIC_BOUNDS_MS = {{ {} }}", bounds.join(", "))),
            "lib/metrics.lua's METRIC_BOUNDS_MS must list {bounds:?}"
        );
    }
}
