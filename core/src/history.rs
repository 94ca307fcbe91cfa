//! The queue's history ([`Queue::history`]): what it did minute by minute over the last 14 days,
//! kept in Redis so every reader (the dashboard, `tideq history`, any runtime) sees the same.
//!
//! Written by calls the workers make anyway: a fetch carrying a worker's report (its first fetch,
//! then at most every [`REPORT_EVERY`](crate::metrics::REPORT_EVERY), idle or busy) files the
//! queue shard's totals (enqueued, completed, retried, dead-lettered, cancelled, promotion
//! lateness) under the minute, if no report did yet in that minute (`lib/history.lua`): one
//! `HEXISTS` per report, four more commands once a minute. Nothing is written per job, and a
//! fetch without a report does nothing more. Reading takes the differences of consecutive
//! snapshots. History is recorded while at least one worker runs: with none, what happened
//! meanwhile (enqueues, say) lands spread over the minutes between the last snapshot and the
//! next worker's first report. See docs/data-model.md, "History".

use serde::{Deserialize, Serialize};
use std::time::Duration;

use crate::error::{Error, Result};
use crate::jobs::Queue;
use crate::scripts::encoding::{parse_history_snapshot, HistorySnapshot};

/// The longest window [`Queue::history`] reads (the day hashes expire after 15 days).
pub const HISTORY_MAX_WINDOW: Duration = Duration::from_secs(14 * 86_400);

/// The most points one [`Queue::history`] call returns (14 days by the minute).
pub const HISTORY_MAX_POINTS: u64 = 20_160;

const MINUTE_MS: u64 = 60_000;
const DAY_MINUTES: u64 = 1_440;
/// Days a day's hash is kept after its last write (`lib/history.lua`: `HISTORY_TTL_MS`).
const KEPT_DAYS: u64 = 15;

/// What a queue did in one step of its history ([`Queue::history`]), summed over its shards.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct HistoryPoint {
    /// The start of the step (ms since the epoch, UTC, the Redis clock).
    pub at_ms: u64,
    /// Jobs enqueued.
    pub enqueued: u64,
    /// Jobs completed.
    pub completed: u64,
    /// Failed attempts that were retried.
    pub retried: u64,
    /// Jobs dead-lettered (out of attempts, or not started by their deadline).
    pub dead_lettered: u64,
    /// Attempts that failed: `retried + dead_lettered`.
    pub failed: u64,
    /// Jobs cancelled.
    pub cancelled: u64,
    /// The mean lateness (ms) of the delayed jobs and retries promoted in the step; `None` when
    /// none was.
    pub lateness_ms: Option<f64>,
}

/// A checked window and step: (step in minutes, number of points).
pub(crate) fn history_span(window: Duration, step: Duration) -> Result<(u64, u64)> {
    let minute = Duration::from_secs(60);
    if step < minute || !step.as_nanos().is_multiple_of(minute.as_nanos()) {
        return Err(Error::invalid(format!(
            "step must be a whole number of minutes (at least 60 s); got {step:?}"
        )));
    }
    if window < step || window > HISTORY_MAX_WINDOW {
        return Err(Error::invalid(format!(
            "window must be at least the step ({step:?}) and at most 14 days; got {window:?}"
        )));
    }
    let points = window.as_nanos().div_ceil(step.as_nanos()) as u64;
    if points > HISTORY_MAX_POINTS {
        return Err(Error::invalid(format!(
            "window / step gives {points} points; the most is {HISTORY_MAX_POINTS}"
        )));
    }
    Ok((step.as_secs() / 60, points))
}

/// Adds `d` (a difference of counters) spread evenly over the minutes `from..to` (the remainder
/// one each to the earliest ones) into `minutes`, whose first entry is minute `first`; minutes
/// outside it are dropped.
fn spread(minutes: &mut [[u64; 7]], first: u64, from: u64, to: u64, d: [u64; 7]) {
    let span = to.saturating_sub(from).max(1);
    let lo = from.max(first);
    let hi = to.max(from + 1).min(first + minutes.len() as u64);
    for m in lo..hi {
        let i = m - from;
        let slot = &mut minutes[(m - first) as usize];
        for f in 0..7 {
            slot[f] += d[f] / span + u64::from(i < d[f] % span);
        }
    }
}

/// The per-minute counts of one shard from its snapshots (minute, totals; in order), the last
/// being its live counters at minute `now`: consecutive snapshots' differences (a negative one,
/// counters reset, counts as 0) spread over the minutes from the first up to the second (the live
/// counters' up to and including `now`).
pub(crate) fn shard_minutes(
    snaps: &[(u64, HistorySnapshot)],
    live: HistorySnapshot,
    now: u64,
    minutes: &mut [[u64; 7]],
    first: u64,
) {
    let mut prev: Option<(u64, [u64; 7])> = None;
    let tail = (now, live, now + 1);
    let all = snaps.iter().map(|&(m, s)| (m, s, m)).chain([tail]);
    for (m, s, to) in all {
        let f = s.fields();
        if let Some((pm, pf)) = prev {
            let mut d = [0; 7];
            for k in 0..7 {
                d[k] = f[k].saturating_sub(pf[k]);
            }
            spread(minutes, first, pm, to, d);
        }
        prev = Some((m, f));
    }
}

/// Sums minutes into points of `step` minutes, the first starting at minute `first`.
pub(crate) fn points(minutes: &[[u64; 7]], first: u64, step: u64) -> Vec<HistoryPoint> {
    minutes
        .chunks(step as usize)
        .enumerate()
        .map(|(i, chunk)| {
            let mut t = [0u64; 7];
            for m in chunk {
                for k in 0..7 {
                    t[k] += m[k];
                }
            }
            let s = HistorySnapshot::from_fields(t);
            HistoryPoint {
                at_ms: (first + i as u64 * step) * MINUTE_MS,
                enqueued: s.enqueued,
                completed: s.completed,
                retried: s.retried,
                dead_lettered: s.dead_lettered,
                failed: s.retried + s.dead_lettered,
                cancelled: s.cancelled,
                lateness_ms: (s.lt_count > 0).then(|| s.lt_sum_ms as f64 / s.lt_count as f64),
            }
        })
        .collect()
}

impl Queue {
    /// The queue's history: what it did in each `step` (a whole number of minutes) of the last
    /// `window` (at most 14 days), oldest first, summed over its shards, from the snapshots its
    /// workers' reports leave in Redis once a minute. Steps are aligned on multiples of `step`
    /// since the epoch (UTC), the last one the step under way (counted up to now, from the live
    /// counters); the first may start up to a step before `window` ago. Gaps without any worker
    /// are spread evenly over their minutes; before the first snapshot there is nothing (zeros).
    pub async fn history(&self, window: Duration, step: Duration) -> Result<Vec<HistoryPoint>> {
        let (step_min, n_points) = history_span(window, step)?;
        self.op("history", async {
            let mut conn = self.client.conn().await?;
            let (s, us): (u64, u64) = redis::cmd("TIME")
                .query_async(&mut conn)
                .await
                .map_err(|e| self.client.err(e))?;
            let now = (s * 1000 + us / 1000) / MINUTE_MS;
            let last_start = now / step_min * step_min;
            let first = last_start.saturating_sub((n_points - 1) * step_min);
            // The snapshot before the window too: up to a day before it, within the days kept.
            let from = first
                .saturating_sub(DAY_MINUTES)
                .max(now.saturating_sub(KEPT_DAYS * DAY_MINUTES - 1))
                .min(first);
            let days: Vec<(u64, Vec<u64>)> = (from / DAY_MINUTES..=now / DAY_MINUTES)
                .map(|day| {
                    let lo = from.max(day * DAY_MINUTES);
                    let hi = now.min(day * DAY_MINUTES + DAY_MINUTES - 1);
                    (day, (lo..=hi).collect())
                })
                .collect();
            let mut minutes = vec![[0u64; 7]; (now - first + 1) as usize];
            for k in self.shards.iter() {
                let mut pipe = redis::pipe();
                for (day, mins) in &days {
                    let fields: Vec<u64> = mins.iter().map(|m| m - day * DAY_MINUTES).collect();
                    pipe.cmd("HMGET")
                        .arg(format!("{}{day}", k.hist()))
                        .arg(fields);
                }
                pipe.cmd("HMGET").arg(k.stats()).arg(&[
                    "enqueued",
                    "completed",
                    "retried",
                    "failed",
                    "cancelled",
                ]);
                pipe.cmd("HMGET")
                    .arg(k.metrics())
                    .arg(&["lt:count", "lt:sum_ms"]);
                let replies: Vec<Vec<Option<String>>> = pipe
                    .query_async(&mut conn)
                    .await
                    .map_err(|e| self.client.err(e))?;
                let mut snaps = Vec::new();
                for ((_, mins), got) in days.iter().zip(&replies) {
                    for (m, v) in mins.iter().zip(got) {
                        if let Some(s) = v.as_deref().and_then(parse_history_snapshot) {
                            snaps.push((*m, s));
                        }
                    }
                }
                let n = days.len();
                let num = |v: &Option<String>| {
                    v.as_deref()
                        .and_then(|s| s.parse::<i64>().ok())
                        .unwrap_or(0)
                        .max(0) as u64
                };
                let (st, mt) = (&replies[n], &replies[n + 1]);
                let mut live = [0u64; 7];
                for (i, v) in st.iter().chain(mt).enumerate().take(7) {
                    live[i] = num(v);
                }
                shard_minutes(
                    &snaps,
                    HistorySnapshot::from_fields(live),
                    now,
                    &mut minutes,
                    first,
                );
            }
            Ok(points(&minutes, first, step_min))
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(n: u64) -> HistorySnapshot {
        HistorySnapshot::from_fields([n, 0, 0, 0, 0, 0, 0])
    }

    #[test]
    fn a_window_and_step_are_checked() {
        let m = Duration::from_secs(60);
        assert_eq!(history_span(m * 60, m).unwrap(), (1, 60));
        assert_eq!(history_span(m * 90, m * 60).unwrap(), (60, 2));
        assert_eq!(
            history_span(HISTORY_MAX_WINDOW, m).unwrap(),
            (1, HISTORY_MAX_POINTS)
        );
        assert!(history_span(m * 60, Duration::from_secs(30)).is_err());
        assert!(history_span(m * 60, Duration::from_secs(90)).is_err());
        assert!(history_span(m, m * 2).is_err());
        assert!(history_span(HISTORY_MAX_WINDOW + m, m).is_err());
    }

    #[test]
    fn differences_are_spread_over_a_gap_and_end_at_the_live_counters() {
        // Snapshots at minutes 10 (5), 11 (8), 14 (20); live 21 at minute 15.
        let mut minutes = vec![[0u64; 7]; 6];
        let snaps = [(10, snap(5)), (11, snap(8)), (14, snap(20))];
        shard_minutes(&snaps, snap(21), 15, &mut minutes, 10);
        let got: Vec<u64> = minutes.iter().map(|m| m[0]).collect();
        // 3 in minute 10; 12 over 11..14 (4 each); 1 over 14..=15 (the first gets it).
        assert_eq!(got, [3, 4, 4, 4, 1, 0]);
        assert_eq!(got.iter().sum::<u64>(), 16);
    }

    #[test]
    fn a_reset_counts_as_zero_and_minutes_before_the_window_are_dropped() {
        let mut minutes = vec![[0u64; 7]; 3];
        let snaps = [(5, snap(100)), (8, snap(0)), (9, snap(4))];
        shard_minutes(&snaps, snap(4), 10, &mut minutes, 8);
        let got: Vec<u64> = minutes.iter().map(|m| m[0]).collect();
        assert_eq!(got, [4, 0, 0]);
    }

    #[test]
    fn minutes_sum_into_steps_with_the_mean_lateness() {
        let mut minutes = vec![[0u64; 7]; 4];
        minutes[0] = [1, 2, 1, 1, 0, 2, 30];
        minutes[1] = [1, 0, 0, 0, 1, 0, 0];
        minutes[3] = [0, 0, 0, 0, 0, 1, 10];
        let p = points(&minutes, 100, 2);
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].at_ms, 100 * MINUTE_MS);
        assert_eq!((p[0].enqueued, p[0].failed, p[0].cancelled), (2, 2, 1));
        assert_eq!(p[0].lateness_ms, Some(15.0));
        assert_eq!(p[1].at_ms, 102 * MINUTE_MS);
        assert_eq!(p[1].lateness_ms, Some(10.0));
    }
}
