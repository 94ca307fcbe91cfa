//! Prometheus text (the exposition format, through `prometheus-client`): the exporter's series
//! of job queues and capped queues, and a worker's own.

use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

use super::{Histogram, QueueMetrics};
use crate::capped::CappedStats;
use crate::job::JobStats;

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

/// `text` (OpenMetrics, as [`encode_prometheus`] and a worker's `metrics()` write it) in the
/// Prometheus text format 0.0.4, for a scraper that asks for that (`Accept: text/plain`): no
/// `# EOF` or `# UNIT` lines, and a counter's `# HELP`/`# TYPE` name its samples' `_total` name.
pub fn openmetrics_to_text_format(text: &str) -> String {
    let counters: std::collections::HashSet<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE ")?.strip_suffix(" counter"))
        .collect();
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        let meta = ["# HELP ", "# TYPE "]
            .into_iter()
            .find_map(|p| Some((p, line.strip_prefix(p)?)));
        match meta {
            Some((p, rest)) => {
                let (name, tail) = rest.split_once(' ').unwrap_or((rest, ""));
                let tail = if tail == "unknown" { "untyped" } else { tail };
                let total = if counters.contains(name) {
                    "_total"
                } else {
                    ""
                };
                out.push_str(&format!("{p}{name}{total} {tail}\n"));
            }
            None => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
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
                ("waiting", m.waiting),
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
            "Jobs of a job queue per state (waiting: flow jobs waiting for their children).",
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
            (
                "jobs_dead_lettered",
                "Jobs that went to the dead letters (attempts used up, or a handler said not to retry).",
                |s| s.dead_lettered,
            ),
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
            (
                "jobs_lost",
                "Jobs found with their record missing (evicted by Redis, or deleted by hand): removed.",
                |s| s.lost,
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
        if !self.jobs.is_empty() {
            let mut m = enc.encode_descriptor(
                "queue_latency_seconds",
                "How long the job next in line that waited longest has been ready to start (0: no job ready).",
                None,
                MetricType::Gauge,
            )?;
            for j in &self.jobs {
                m.encode_family(&q(&j.queue))?
                    .encode_gauge(&j.stats.latency.as_secs_f64())?;
            }
        }
        let workers: Vec<_> = self.jobs.iter().map(|m| (q(&m.queue), m.workers)).collect();
        gauge_or_counter(
            &mut enc,
            "workers",
            "Workers seen in the last 45 s (a fetch, or a lease renewal while they run jobs).",
            MetricType::Gauge,
            &workers,
        )?;
        let busy: Vec<_> = self
            .jobs
            .iter()
            .map(|m| (q(&m.queue), m.busy_workers))
            .collect();
        gauge_or_counter(
            &mut enc,
            "workers_busy",
            "Workers seen in the last 45 s that were running jobs.",
            MetricType::Gauge,
            &busy,
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
                "Items discarded when consumed, older than the queue's max_age.",
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
    fn the_text_has_each_queues_series() {
        let m = QueueMetrics {
            queue: "emails".into(),
            stats: JobStats {
                ready: 3,
                completed: 7,
                latency: std::time::Duration::from_millis(2500),
                ..Default::default()
            },
            run_time: Histogram {
                counts: vec![1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
                sum_ms: 0.5,
                count: 1,
            },
            promotion_lateness: Histogram::default(),
            workers: 2,
            busy_workers: 1,
            waiting: 4,
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
        assert!(
            text.contains("tideq_queue_latency_seconds{queue=\"emails\"} 2.5\n"),
            "{text}"
        );
        assert!(text.ends_with("# EOF\n"), "{text}");
        // The text format 0.0.4: counters typed under their samples' name, no EOF.
        let old = openmetrics_to_text_format(&text);
        assert!(
            old.contains("# TYPE tideq_jobs_completed_total counter\n")
                && old.contains("# HELP tideq_jobs_completed_total Jobs completed.\n")
                && old.contains("tideq_jobs_completed_total{queue=\"emails\"} 7\n")
                && old.contains("# TYPE tideq_jobs gauge\n")
                && old.contains("# TYPE tideq_job_run_seconds histogram\n"),
            "{old}"
        );
        assert!(!old.contains("# EOF") && !old.contains("# UNIT"), "{old}");
        assert!(text.contains("tideq_workers{queue=\"emails\"} 2"), "{text}");
        assert!(
            text.contains("tideq_workers_busy{queue=\"emails\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("tideq_jobs{queue=\"emails\",state=\"waiting\"} 4"),
            "{text}"
        );
        assert!(
            text.contains("tideq_job_run_seconds_bucket{le=\"0.001\",queue=\"emails\"} 1"),
            "{text}"
        );
        // Cumulative: each higher bucket holds the one value too, and +Inf equals the count.
        for le in ["0.0025", "5.0", "10.0", "+Inf"] {
            let line = format!("tideq_job_run_seconds_bucket{{le=\"{le}\",queue=\"emails\"}} 1\n");
            assert!(text.contains(&line), "{line} in {text}");
        }
    }
}
