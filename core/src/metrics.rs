//! Metrics: what a worker measures (its jobs' run times, in this process) and what the queue
//! keeps in Redis for an exporter to read (the run-time and promotion-lateness histograms summed
//! over every worker, and which workers are alive), and both as Prometheus text through
//! `prometheus-client`.
//!
//! Cheap by construction: a worker adds each run time to atomic buckets, and sends what it
//! gathered along with a fetch it makes anyway, at most every [`REPORT_EVERY`] (one more
//! argument to that call, a few `HINCRBY` in the script); the fetch script files the lateness of
//! the delayed jobs it promotes (only when it promotes some). See docs/data-model.md, "Metrics".

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

use crate::capped::CappedStats;
use crate::error::Result;
use crate::job::JobStats;
use crate::jobs::Queue;

/// Upper bounds of the histograms' buckets, in ms (one more bucket above the last). The fetch
/// script files lateness with the same bounds (lua/lib/metrics.lua, `METRIC_BOUNDS_MS`).
pub const BUCKETS_MS: [f64; 12] = [
    1.0, 2.5, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0, 2500.0, 10000.0,
];

/// How often at most a worker sends what it gathered (and says it is alive).
pub const REPORT_EVERY: Duration = Duration::from_secs(15);

/// A worker counts as alive this long after its last report.
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
            reported: Mutex::new(Reported {
                at: None,
                counts: [0; BUCKETS_MS.len() + 1],
                sum_us: 0,
            }),
        }
    }

    /// The report to send with the next fetch, when one is due: "<id>|run:<i>=<n>,...". Taken
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
        if last && counts == r.counts {
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
                let _ = write!(out, "run:{i}={},", now - before);
                n += now - before;
            }
        }
        if n > 0 {
            let _ = write!(out, "run:count={n},run:sum_us={}", sum_us - r.sum_us);
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
    /// Workers that reported within [`ALIVE_FOR`].
    pub workers: u64,
}

impl Queue {
    /// The queue's metrics: [`stats`](Self::stats), the run-time and promotion-lateness
    /// histograms the workers and scripts keep in Redis, and the workers alive.
    pub async fn metrics(&self) -> Result<QueueMetrics> {
        let stats = self.stats().await?;
        self.op("metrics", async {
            let mut run = Histogram::default();
            let mut late = Histogram::default();
            run.counts = vec![0; BUCKETS_MS.len() + 1];
            late.counts = vec![0; BUCKETS_MS.len() + 1];
            let mut workers = 0;
            let mut conn = self.client.conn().await?;
            for k in self.shards.iter() {
                let (fields, alive): (Vec<(String, u64)>, u64) = redis::pipe()
                    .hgetall(k.metrics())
                    .cmd("ZCOUNT")
                    .arg(k.workers())
                    .arg(format!(
                        "({}",
                        crate::job::now_ms().saturating_sub(ALIVE_FOR.as_millis() as u64)
                    ))
                    .arg("+inf")
                    .query_async(&mut conn)
                    .await
                    .map_err(|e| self.client.err(e))?;
                workers += alive;
                for (f, v) in fields {
                    let Some((h, part)) = f.split_once(':') else {
                        continue;
                    };
                    let h = match h {
                        "run" => &mut run,
                        "late" => &mut late,
                        _ => continue,
                    };
                    match part {
                        "count" => h.count += v,
                        "sum_us" => h.sum_ms += v as f64 / 1000.0,
                        "sum_ms" => h.sum_ms += v as f64,
                        i => {
                            if let Some(c) =
                                i.parse::<usize>().ok().and_then(|i| h.counts.get_mut(i))
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
            })
        })
        .await
    }
}

/// Prometheus text (the exposition format) of job queues' and capped queues' metrics, every
/// series labelled with its queue.
pub fn encode_prometheus(jobs: &[QueueMetrics], capped: &[(String, CappedStats)]) -> String {
    let mut registry = Registry::with_prefix("tideq");
    registry.register_collector(Box::new(Exported {
        jobs: jobs.to_vec(),
        capped: capped.to_vec(),
    }));
    let mut out = String::new();
    prometheus_client::encoding::text::encode(&mut out, &registry).expect("writing to a String");
    out
}

/// A worker's own metrics (this process), as Prometheus text.
pub(crate) fn encode_worker(queue: &str, stats: &crate::WorkerStats, run: &Histogram) -> String {
    let mut registry = Registry::with_prefix("tideq_worker");
    registry.register_collector(Box::new(OwnWorker {
        queue: queue.to_string(),
        stats: *stats,
        run: run.clone(),
    }));
    let mut out = String::new();
    prometheus_client::encoding::text::encode(&mut out, &registry).expect("writing to a String");
    out
}

#[derive(Debug)]
struct Exported {
    jobs: Vec<QueueMetrics>,
    capped: Vec<(String, CappedStats)>,
}

type Labels = Vec<(&'static str, String)>;

fn counter(
    enc: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    rows: &[(Labels, u64)],
) -> std::fmt::Result {
    gauge_or_counter(enc, name, help, MetricType::Counter, rows)
}

fn gauge_or_counter(
    enc: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    kind: MetricType,
    rows: &[(Labels, u64)],
) -> std::fmt::Result {
    if rows.is_empty() {
        return Ok(());
    }
    let mut m = enc.encode_descriptor(name, help, None, kind)?;
    for (labels, v) in rows {
        let mut f = m.encode_family(labels)?;
        match kind {
            MetricType::Counter => f.encode_counter::<Vec<(String, String)>, _, u64>(v, None)?,
            _ => f.encode_gauge(&(*v as i64))?,
        }
    }
    Ok(())
}

fn histogram(
    enc: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    rows: &[(Labels, &Histogram)],
) -> std::fmt::Result {
    if rows.is_empty() {
        return Ok(());
    }
    let mut m = enc.encode_descriptor(name, help, None, MetricType::Histogram)?;
    for (labels, h) in rows {
        let mut f = m.encode_family(labels)?;
        f.encode_histogram::<Vec<(String, String)>>(
            h.sum_ms / 1000.0,
            h.count,
            &h.buckets(),
            None,
        )?;
    }
    Ok(())
}

fn q(name: &str) -> Labels {
    vec![("queue", name.to_string())]
}

impl prometheus_client::collector::Collector for Exported {
    fn encode(&self, mut enc: DescriptorEncoder) -> std::fmt::Result {
        let mut states = Vec::new();
        for m in &self.jobs {
            let s = &m.stats;
            for (state, n) in [
                ("delayed", s.delayed),
                ("ready", s.ready),
                ("active", s.active),
                ("dead", s.dead),
            ] {
                states.push((
                    vec![("queue", m.queue.clone()), ("state", state.to_string())],
                    n,
                ));
            }
        }
        gauge_or_counter(
            &mut enc,
            "jobs",
            "Jobs of a job queue per state.",
            MetricType::Gauge,
            &states,
        )?;
        let jobs_counter = |f: fn(&JobStats) -> u64| -> Vec<(Labels, u64)> {
            self.jobs
                .iter()
                .map(|m| (q(&m.queue), f(&m.stats)))
                .collect()
        };
        for (name, help, f) in [
            (
                "jobs_enqueued",
                "Jobs enqueued.",
                (|s: &JobStats| s.enqueued) as fn(&JobStats) -> u64,
            ),
            ("jobs_completed", "Jobs completed.", |s| s.completed),
            ("jobs_failed", "Jobs that went to the dead letters.", |s| {
                s.dead_lettered
            }),
            ("jobs_retried", "Failed attempts scheduled again.", |s| {
                s.retried
            }),
            ("jobs_recovered", "Expired leases made ready again.", |s| {
                s.recovered
            }),
            ("jobs_cancelled", "Jobs cancelled.", |s| s.cancelled),
            (
                "jobs_snoozed",
                "Deliveries whose handler snoozed or backed off (not counted as attempts).",
                |s| s.snoozed,
            ),
            (
                "jobs_expired",
                "Jobs not started by their deadline (dead-lettered without running).",
                |s| s.expired,
            ),
            (
                "jobs_dead_trimmed",
                "Dead jobs deleted by the retention policy.",
                |s| s.dead_trimmed,
            ),
        ] {
            counter(&mut enc, name, help, &jobs_counter(f))?;
        }
        let paused: Vec<_> = self
            .jobs
            .iter()
            .map(|m| (q(&m.queue), u64::from(m.stats.paused)))
            .collect();
        gauge_or_counter(
            &mut enc,
            "queue_paused",
            "1 while the queue is paused.",
            MetricType::Gauge,
            &paused,
        )?;
        let workers: Vec<_> = self.jobs.iter().map(|m| (q(&m.queue), m.workers)).collect();
        gauge_or_counter(
            &mut enc,
            "workers",
            "Workers that reported in the last 45 s.",
            MetricType::Gauge,
            &workers,
        )?;
        let run: Vec<_> = self
            .jobs
            .iter()
            .map(|m| (q(&m.queue), &m.run_time))
            .collect();
        histogram(
            &mut enc,
            "job_run_seconds",
            "Handlers' run times (every worker's reports).",
            &run,
        )?;
        let late: Vec<_> = self
            .jobs
            .iter()
            .map(|m| (q(&m.queue), &m.promotion_lateness))
            .collect();
        histogram(
            &mut enc,
            "job_promotion_lateness_seconds",
            "How late delayed jobs and retries were made ready.",
            &late,
        )?;
        let capped = |f: fn(&CappedStats) -> u64| -> Vec<(Labels, u64)> {
            self.capped.iter().map(|(n, s)| (q(n), f(s))).collect()
        };
        for (name, help, f) in [
            (
                "capped_pushed",
                "Items pushed to a capped queue.",
                (|s: &CappedStats| s.pushed) as fn(&CappedStats) -> u64,
            ),
            (
                "capped_dropped",
                "Items dropped (oldest first) above a group's capacity.",
                |s| s.dropped,
            ),
            (
                "capped_discarded",
                "Items discarded at pop, past the queue's TTL.",
                |s| s.discarded,
            ),
            ("capped_delivered", "Items delivered to consumers.", |s| {
                s.delivered
            }),
        ] {
            counter(&mut enc, name, help, &capped(f))?;
        }
        gauge_or_counter(
            &mut enc,
            "capped_groups",
            "Groups holding items.",
            MetricType::Gauge,
            &capped(|s| s.groups),
        )?;
        Ok(())
    }
}

#[derive(Debug)]
struct OwnWorker {
    queue: String,
    stats: crate::WorkerStats,
    run: Histogram,
}

impl prometheus_client::collector::Collector for OwnWorker {
    fn encode(&self, mut enc: DescriptorEncoder) -> std::fmt::Result {
        let l = q(&self.queue);
        let s = &self.stats;
        for (name, help, v) in [
            ("jobs_completed", "Jobs this worker completed.", s.completed),
            (
                "jobs_failed",
                "Attempts that failed in this worker.",
                s.failed,
            ),
            (
                "jobs_cancelled",
                "Jobs this worker ended as cancelled.",
                s.cancelled,
            ),
            (
                "jobs_released",
                "Jobs this worker returned at shutdown.",
                s.released,
            ),
            (
                "leases_lost",
                "Acks refused because the lease had expired.",
                s.lease_lost,
            ),
            (
                "fetch_errors",
                "Fetches that failed (Redis away).",
                s.fetch_errors,
            ),
        ] {
            counter(&mut enc, name, help, &[(l.clone(), v)])?;
        }
        histogram(
            &mut enc,
            "job_run_seconds",
            "This worker's handlers' run times.",
            &[(l, &self.run)],
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_carries_what_was_measured_since_the_last_one() {
        let m = WorkerMetrics::new();
        m.run.observe(Duration::from_micros(700));
        m.run.observe(Duration::from_millis(30));
        let r = m.take_report().unwrap();
        assert!(r.starts_with(&format!("{}|", m.id)), "{r}");
        assert!(
            r.contains("run:0=1,")
                && r.contains("run:5=1,")
                && r.contains("run:count=2,run:sum_us=30700"),
            "{r}"
        );
        // Not due again yet.
        assert_eq!(m.take_report(), None);
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

    #[test]
    fn the_text_has_each_queues_series() {
        let m = QueueMetrics {
            queue: "emails".into(),
            stats: JobStats {
                ready: 3,
                completed: 7,
                ..Default::default()
            },
            run_time: Histogram {
                counts: vec![1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
                sum_ms: 0.5,
                count: 1,
            },
            promotion_lateness: Histogram::default(),
            workers: 2,
        };
        let text = encode_prometheus(&[m], &[]);
        assert!(
            text.contains("tideq_jobs{queue=\"emails\",state=\"ready\"} 3"),
            "{text}"
        );
        assert!(
            text.contains("tideq_jobs_completed_total{queue=\"emails\"} 7"),
            "{text}"
        );
        assert!(text.contains("tideq_workers{queue=\"emails\"} 2"), "{text}");
        assert!(
            text.contains("tideq_job_run_seconds_bucket{le=\"0.001\",queue=\"emails\"} 1"),
            "{text}"
        );
        // Cumulative: each higher bucket holds the one value too, and +Inf equals the count.
        for le in ["0.0025", "10.0", "+Inf"] {
            let line = format!("tideq_job_run_seconds_bucket{{le=\"{le}\",queue=\"emails\"}} 1\n");
            assert!(text.contains(&line), "{line} in {text}");
        }
    }
}
