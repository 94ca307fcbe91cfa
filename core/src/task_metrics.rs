//! Per-task metrics ([`Queue::task_metrics`]): per task name, jobs completed, failed attempts,
//! jobs dead-lettered and handler run times, over the last hour, day or 14 days.
//!
//! Written by the reports the workers send anyway (see `metrics.rs`): each worker counts per task
//! in memory and its report adds the counts to the shard's running totals (`tstat`); the first
//! report of each 10 minutes and of each hour files the totals as they were (`tm:<hour>`,
//! `th:<day>`), and a window is the live totals minus the snapshot at its start. Nothing is sent
//! per job. A shard tracks at most [`TASKS_MAX`] names; later ones count under [`OTHER_TASK`].
//! See docs/data-model.md, "Per-task metrics".

use std::collections::HashMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::jobs::Queue;
use crate::metrics::tasks::{decode_task, parse_counts, TaskCounts};
pub use crate::metrics::tasks::{OTHER_TASK, TASKS_MAX};

/// The longest window [`Queue::task_metrics`] reads (hourly snapshots are kept 15 days).
pub const TASK_METRICS_MAX_WINDOW: Duration = Duration::from_secs(14 * 86_400);

/// Windows up to this long read the 10-minute snapshots (kept 3 hours); longer ones the hourly.
const FINE_WINDOW: Duration = Duration::from_secs(2 * 3600);

/// One task's counts over a window ([`Queue::task_metrics`]), summed over the queue's shards.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskMetrics {
    /// The task's name; "" for jobs enqueued without one (a raw payload), [`OTHER_TASK`] for
    /// the names past the [`TASKS_MAX`] tracked.
    pub task: String,
    /// Jobs completed.
    pub completed: u64,
    /// Attempts that failed (retried or dead-lettered).
    pub failed: u64,
    /// Jobs dead-lettered.
    pub dead_lettered: u64,
    /// Handler runs (every attempt that ran its handler).
    pub runs: u64,
    /// Their run time, summed (ms).
    pub run_ms_sum: f64,
    /// Their mean run time (ms); `None` without runs.
    pub run_ms_avg: Option<f64>,
}

/// A series of snapshots: its key prefix's accessor, slot and key spans (ms).
struct Series {
    slot_ms: u64,
    key_ms: u64,
    fine: bool,
}

const TM: Series = Series {
    slot_ms: 600_000,
    key_ms: 3_600_000,
    fine: true,
};
const TH: Series = Series {
    slot_ms: 3_600_000,
    key_ms: 86_400_000,
    fine: false,
};

/// The running totals of a `tstat` hash's fields ("<kind>:<encoded task>" -> n), by encoded task.
fn totals_of(fields: Vec<(String, u64)>) -> HashMap<String, TaskCounts> {
    let mut out: HashMap<String, TaskCounts> = HashMap::new();
    for (f, v) in fields {
        let Some((kind, name)) = f.split_once(':') else {
            continue;
        };
        let c = out.entry(name.to_string()).or_default();
        match kind {
            "c" => c.completed += v,
            "f" => c.failed += v,
            "d" => c.dead_lettered += v,
            "n" => c.runs += v,
            "us" => c.run_us += v,
            _ => {}
        }
    }
    out
}

/// Of the snapshot slots `have`, the baseline of a window starting in slot `start`: the latest at
/// or before it, else the earliest after it.
fn baseline_slot(have: &[u64], start: u64) -> Option<u64> {
    have.iter()
        .copied()
        .filter(|&s| s <= start)
        .max()
        .or_else(|| have.iter().copied().filter(|&s| s > start).min())
}

impl Queue {
    /// Per-task counts and run times over the last `window` (at least a minute, at most 14
    /// days; `None`: since the queue's workers began counting), summed over the queue's shards,
    /// by task name, tasks with nothing in the window left out. A window of up to 2 hours is
    /// measured from the 10-minute snapshot at its start, a longer one from the hourly one, so
    /// it may reach back up to one slot further. Counted from the workers' periodic reports
    /// (every 15 s at most, and at a worker's end): what a worker did since its last report
    /// shows after its next one.
    pub async fn task_metrics(&self, window: Option<Duration>) -> Result<Vec<TaskMetrics>> {
        if let Some(w) = window {
            if w < Duration::from_secs(60) || w > TASK_METRICS_MAX_WINDOW {
                return Err(Error::invalid(format!(
                    "window must be at least 60 s and at most 14 days; got {w:?}"
                )));
            }
        }
        self.op("task_metrics", async {
            let mut conn = self.client.conn().await?;
            // The Redis clock, for a window only (the exporter reads the totals: one HGETALL).
            let now = match window {
                None => 0,
                Some(_) => {
                    let (s, us): (u64, u64) = redis::cmd("TIME")
                        .query_async(&mut conn)
                        .await
                        .map_err(|e| self.client.err(e))?;
                    s * 1000 + us / 1000
                }
            };
            let mut merged: HashMap<String, TaskCounts> = HashMap::new();
            for k in self.shards.iter() {
                let fields: Vec<(String, u64)> = redis::cmd("HGETALL")
                    .arg(k.tstat())
                    .query_async(&mut conn)
                    .await
                    .map_err(|e| self.client.err(e))?;
                let live = totals_of(fields);
                let base = match window {
                    None => HashMap::new(),
                    Some(w) => {
                        let series = if w <= FINE_WINDOW { TM } else { TH };
                        let prefix = if series.fine { k.tm() } else { k.th() };
                        let start = now.saturating_sub(w.as_millis() as u64);
                        // The keys from one key span before the start up to now.
                        let first_key = start.saturating_sub(series.key_ms) / series.key_ms;
                        let keys: Vec<u64> = (first_key..=now / series.key_ms).collect();
                        let mut pipe = redis::pipe();
                        for n in &keys {
                            pipe.cmd("HKEYS").arg(format!("{prefix}{n}"));
                        }
                        let got: Vec<Vec<u64>> = pipe
                            .query_async(&mut conn)
                            .await
                            .map_err(|e| self.client.err(e))?;
                        let per_key = series.key_ms / series.slot_ms;
                        let have: Vec<u64> = keys
                            .iter()
                            .zip(got)
                            .flat_map(|(n, fs)| fs.into_iter().map(move |f| n * per_key + f))
                            .collect();
                        match baseline_slot(&have, start / series.slot_ms) {
                            // No snapshot near the window: no report in it, nothing counted.
                            None => live.clone(),
                            Some(slot) => {
                                let v: Option<String> = redis::cmd("HGET")
                                    .arg(format!("{prefix}{}", slot / per_key))
                                    .arg(slot % per_key)
                                    .query_async(&mut conn)
                                    .await
                                    .map_err(|e| self.client.err(e))?;
                                parse_counts(v.as_deref().unwrap_or(""))
                            }
                        }
                    }
                };
                for (enc, c) in &live {
                    let d = match base.get(enc) {
                        Some(b) => c.minus(b),
                        None => *c,
                    };
                    if let Some(name) = decode_task(enc) {
                        merged.entry(name).or_default().add(&d);
                    }
                }
            }
            let mut out: Vec<TaskMetrics> = merged
                .into_iter()
                .filter(|(_, c)| window.is_none() || *c != TaskCounts::default())
                .map(|(task, c)| {
                    let run_ms_sum = c.run_us as f64 / 1000.0;
                    TaskMetrics {
                        task,
                        completed: c.completed,
                        failed: c.failed,
                        dead_lettered: c.dead_lettered,
                        runs: c.runs,
                        run_ms_sum,
                        run_ms_avg: (c.runs > 0).then(|| run_ms_sum / c.runs as f64),
                    }
                })
                .collect();
            // By name, "(other)" last.
            out.sort_by(|a, b| {
                (a.task == OTHER_TASK, &a.task).cmp(&(b.task == OTHER_TASK, &b.task))
            });
            Ok(out)
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_baseline_is_the_last_snapshot_at_the_start_else_the_first_after() {
        assert_eq!(baseline_slot(&[3, 5, 9], 6), Some(5));
        assert_eq!(baseline_slot(&[3, 5, 9], 5), Some(5));
        assert_eq!(baseline_slot(&[7, 9], 5), Some(7));
        assert_eq!(baseline_slot(&[], 5), None);
    }

    #[test]
    fn tstat_fields_read_back_by_task() {
        let t = totals_of(vec![
            ("c:a".into(), 3),
            ("us:a".into(), 1500),
            ("d:".into(), 1),
            ("x:a".into(), 9),
            ("nocolon".into(), 1),
        ]);
        assert_eq!(t["a"].completed, 3);
        assert_eq!(t["a"].run_us, 1500);
        assert_eq!(t[""].dead_lettered, 1);
        assert_eq!(t.len(), 2);
    }
}
