//! A job's attempts and its log (docs/attempts-and-logs.md; docs/data-model.md, "Attempts and
//! logs"): every attempt's start, end, worker, outcome, error and trace, kept by the scripts
//! that end attempts (`fail_job.lua`, `fetch_jobs.lua` for a lost lease, `lib/acks.lua` for a
//! success after earlier attempts); the lines a handler logs ([`Job::log`], `log_job.lua`); and
//! their reading ([`Queue::job_logs`], and [`Queue::get`], which fills
//! [`JobInfo::attempt_history`] and [`JobInfo::logs`]).

use redis::Value;
use serde::{Deserialize, Serialize};

use crate::error::{Error, ErrorKind, Result};
use crate::job::{validate_job_id, Job, JobInfo, JobState};
use crate::jobs::Queue;
use crate::scripts::LOG_JOB;

/// Most bytes of one log line ([`Job::log`]).
pub const MAX_LOG_LINE: usize = 4096;
/// Most lines a job's log keeps (the oldest go first).
pub const MAX_LOG_LINES: usize = 1000;
/// Most bytes a job's log keeps (its lines with their stamps; the oldest go first).
pub const MAX_LOG_BYTES: usize = 64 * 1024;
/// Attempts kept per job: the first 3 and the last 20 (`lib/attempts.lua`).
pub const ATTEMPTS_KEPT: (usize, usize) = (3, 20);

/// One attempt of a job, as [`Queue::get`] reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttemptInfo {
    /// The attempt's number (1 the first).
    pub attempt: u32,
    /// When it started (Redis-clock ms), when known (a lost attempt's is not).
    pub started_at: Option<u64>,
    /// When it ended (Redis-clock ms): a lost one, when its lease was found expired.
    pub ended_at: Option<u64>,
    /// How long it ran (ms), when its start is known.
    pub duration_ms: Option<u64>,
    /// The worker that ran it (its id, as `workers` lists it), when known.
    pub worker: Option<String>,
    /// "completed", "failed", "lost" (its lease expired: its worker stopped or lost Redis), or
    /// "running" (the attempt under way, recorded by its first lease renewal).
    pub outcome: String,
    /// Its error (failed, lost).
    pub error: Option<String>,
    /// The handler's traceback, stack or error chain, when the error had one.
    pub trace: Option<String>,
}

/// One line of a job's log ([`Job::log`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogLine {
    /// When it was logged (Redis-clock ms).
    pub at_ms: u64,
    /// The attempt that logged it.
    pub attempt: u32,
    pub line: String,
}

/// A record as `lib/attempts.lua` stores it (JSON, written by cjson).
#[derive(Deserialize)]
struct Record {
    n: Option<f64>,
    s: Option<f64>,
    e: Option<f64>,
    w: Option<String>,
    o: Option<String>,
    err: Option<String>,
    tb: Option<String>,
}

/// A job's stored attempts (`attempts` hash value) -> its records; empty when unreadable.
pub(crate) fn parse_attempts(raw: &str) -> Vec<AttemptInfo> {
    let Ok(records) = serde_json::from_str::<Vec<Record>>(raw) else {
        return Vec::new();
    };
    records
        .into_iter()
        .map(|r| {
            let started_at = r.s.map(|s| s as u64);
            let ended_at = r.e.map(|e| e as u64);
            AttemptInfo {
                attempt: r.n.unwrap_or(0.0) as u32,
                started_at,
                ended_at,
                duration_ms: started_at.zip(ended_at).map(|(s, e)| e.saturating_sub(s)),
                worker: r.w.filter(|w| !w.is_empty()),
                outcome: r.o.unwrap_or_default(),
                error: r.err,
                trace: r.tb,
            }
        })
        .collect()
}

/// A log entry `"<ms>|<attempt>|<line>"` (`log_job.lua`).
fn parse_log_line(raw: &[u8]) -> Option<LogLine> {
    let raw = String::from_utf8_lossy(raw);
    let mut parts = raw.splitn(3, '|');
    Some(LogLine {
        at_ms: parts.next()?.parse().ok()?,
        attempt: parts.next()?.parse().ok()?,
        line: parts.next()?.to_string(),
    })
}

/// Refuses a log line over [`MAX_LOG_LINE`] bytes.
pub(crate) fn check_log_line(line: &str) -> Result<()> {
    if line.len() > MAX_LOG_LINE {
        return Err(Error::invalid(format!(
            "the log line is {} bytes; a line holds at most {MAX_LOG_LINE} bytes",
            line.len()
        )));
    }
    Ok(())
}

impl Queue {
    /// The lines job `id`'s handlers logged ([`Job::log`]), oldest first: each with when it
    /// was logged (Redis clock) and by which attempt. A log keeps the newest
    /// [`MAX_LOG_LINES`] lines within [`MAX_LOG_BYTES`], and goes with the job's data.
    /// `JOB_NOT_FOUND` when there is no such job (or it is no longer retained).
    pub async fn job_logs(&self, id: &str) -> Result<Vec<LogLine>> {
        if crate::testing::active() {
            if let Some(mode) = crate::testing::current() {
                return mode.logs(self, id);
            }
        }
        self.op("job_logs", async {
            validate_job_id(id)?;
            for shard in self.shards_to_search(id) {
                if let Some((_, logs)) = self.detail(shard, id).await? {
                    return Ok(logs);
                }
            }
            Err(Error::new(
                ErrorKind::JobNotFound,
                format!("no job {id:?} in queue {:?}", self.name),
            ))
        })
        .await
    }

    /// Job `id`'s attempts and log on `shard`; `None` when the shard has no such job.
    async fn detail(
        &self,
        shard: usize,
        id: &str,
    ) -> Result<Option<(Vec<AttemptInfo>, Vec<LogLine>)>> {
        let keys = &self.shards[shard];
        let mut exists = redis::cmd("HEXISTS");
        exists.arg(keys.meta()).arg(id);
        let mut attempts = redis::cmd("HGET");
        attempts.arg(keys.attempts()).arg(id);
        let mut log = redis::cmd("LRANGE");
        log.arg(format!("{}{id}", keys.lg())).arg(0).arg(-1);
        let replies = self.client.pipeline(&[exists, attempts, log]).await?;
        let bad = || {
            Error::new(
                ErrorKind::Redis,
                "unexpected reply reading a job's attempts",
            )
        };
        let [exists, attempts, log]: [Value; 3] = replies.try_into().map_err(|_| bad())?;
        if !redis::from_redis_value::<bool>(exists).map_err(|_| bad())? {
            return Ok(None);
        }
        let attempts: Option<String> = redis::from_redis_value(attempts).map_err(|_| bad())?;
        let log: Vec<Vec<u8>> = redis::from_redis_value(log).map_err(|_| bad())?;
        let mut history = attempts.as_deref().map(parse_attempts).unwrap_or_default();
        let mut lines: Vec<LogLine> = log.iter().filter_map(|l| parse_log_line(l)).collect();
        // Sealed texts opened (or shown as `encrypted (key <id>)` without the key).
        for a in &mut history {
            a.error = a.error.take().map(|t| self.shown_text(t));
            a.trace = a.trace.take().map(|t| self.shown_text(t));
        }
        for l in &mut lines {
            l.line = self.shown_text(std::mem::take(&mut l.line));
        }
        Ok(Some((history, lines)))
    }

    /// Fills `info` (read from `shard`) with its attempts and log, and its last attempt's start
    /// and run time where its meta did not give them.
    pub(crate) async fn fill_detail(&self, shard: usize, info: &mut JobInfo) -> Result<()> {
        let Some((mut history, logs)) = self.detail(shard, &info.id).await? else {
            return Ok(());
        };
        // An attempt recorded as under way ("running", by a lease renewal) that is not: its job
        // was handed back (a snooze, a shutdown) and its next attempt wrote no record yet.
        if info.state != JobState::Active {
            history.retain(|a| a.outcome != "running");
        }
        // A job that completed on its first attempt has its run in its meta only.
        if info.state == JobState::Completed
            && history.last().is_none_or(|a| a.attempt < info.attempts)
        {
            history.push(AttemptInfo {
                attempt: info.attempts,
                started_at: info.started_at,
                ended_at: info.state_since_or_until,
                duration_ms: info.run_ms,
                worker: info.worker.clone(),
                outcome: "completed".into(),
                error: None,
                trace: None,
            });
        }
        if info.started_at.is_none() {
            if let Some(last) = history.last() {
                info.started_at = last.started_at;
                info.run_ms = last.duration_ms;
                info.worker = last.worker.clone();
            }
        }
        info.attempt_history = history;
        info.logs = logs;
        Ok(())
    }

    /// Adds `line` to a running job's log, fenced by its lease (see [`Job::log`]).
    pub(crate) async fn log_line(&self, job: &Job, line: &str) -> Result<()> {
        if crate::testing::active() && job.token.is_empty() {
            if let Some(mode) = crate::testing::current() {
                return mode.log(self, job, line);
            }
        }
        self.op("log", async {
            check_log_line(line)?;
            let mut cmd = self.script_cmd(job.shard, &LOG_JOB);
            cmd.arg(&job.id)
                .arg(&job.token)
                .arg(job.attempt)
                .arg(self.seal_str(line)?.as_ref())
                .arg(MAX_LOG_LINES)
                .arg(MAX_LOG_BYTES);
            match self.client.eval::<i64>(&cmd, &LOG_JOB).await? {
                -1 => Err(Error::new(
                    ErrorKind::LeaseLost,
                    format!(
                        "the lease on job {:?} was lost (expired and redelivered)",
                        job.id
                    ),
                )),
                -2 => Err(Error::new(
                    ErrorKind::JobNotFound,
                    format!("no job {:?} in queue {:?}", job.id, self.name),
                )),
                _ => Ok(()),
            }
        })
        .await
    }
}

impl Job {
    /// Adds `line` to this job's log, stamped with Redis's time and this attempt's number
    /// (readable with [`Queue::job_logs`] and [`Queue::get`], shown by `tideq job` and the
    /// dashboard's job page). A line holds at most [`MAX_LOG_LINE`] bytes (`INVALID_ARGUMENT`
    /// past it, nothing written); the log keeps the newest [`MAX_LOG_LINES`] lines within
    /// [`MAX_LOG_BYTES`], and goes with the job's data. `LEASE_LOST` when the lease was lost;
    /// `JOB_NOT_FOUND` when the job is gone (deleted).
    pub async fn log(&self, line: impl AsRef<str>) -> Result<()> {
        self.owner.log_line(self, line.as_ref()).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_read_as_the_scripts_write_them() {
        let raw = r#"[{"n":1,"s":1000,"e":1500,"w":"ab","o":"failed","err":"boom","tb":"Traceback"},{"n":2,"e":3000,"o":"lost","err":"lease expired"}]"#;
        let a = parse_attempts(raw);
        assert_eq!(a.len(), 2);
        assert_eq!(a[0].duration_ms, Some(500));
        assert_eq!(a[0].worker.as_deref(), Some("ab"));
        assert_eq!(a[0].trace.as_deref(), Some("Traceback"));
        assert_eq!(
            (a[1].attempt, a[1].started_at, a[1].duration_ms),
            (2, None, None)
        );
        // cjson writes an empty table as an object.
        assert!(parse_attempts("{}").is_empty());
        assert_eq!(
            parse_log_line(b"17|2|a|b"),
            Some(LogLine {
                at_ms: 17,
                attempt: 2,
                line: "a|b".into()
            })
        );
    }
}
