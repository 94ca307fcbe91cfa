//! A job's attempts and its log (core `attempts.rs`): `Attempt` and `LogLine` (in `JobInfo`),
//! a handler's `job.log(line)`, and `queue.jobLogs(id)`.

use napi::bindgen_prelude::*;
use napi_derive::napi;

use crate::convert::string;
use crate::error::spawn;
use crate::job::Job;
use crate::jobs::{job_id, Queue};

/// One attempt of a job (`JobInfo.attemptHistory`).
#[napi(object, object_from_js = false, use_nullable = true)]
pub struct Attempt {
    /// The attempt's number (1 the first).
    pub attempt: u32,
    /// When it started: ms since the epoch, Redis clock; `null` when unknown (a lost attempt).
    pub started_at: Option<i64>,
    /// When it ended (ms since the epoch, Redis clock); a lost one: when its lease was found
    /// expired.
    pub ended_at: Option<i64>,
    /// How long it ran (ms); `null` when its start is unknown.
    pub duration_ms: Option<i64>,
    /// The worker that ran it (its id, as `workers()` lists it); `null` when unknown.
    pub worker: Option<String>,
    /// `'completed'`, `'failed'`, `'lost'` (its lease expired: its worker died or lost Redis), or
    /// `'running'` (the attempt under way, recorded by its first lease renewal).
    #[napi(ts_type = "'completed' | 'failed' | 'lost' | 'running'")]
    pub outcome: String,
    /// Its error (`Error: message`); `null` for a completed attempt.
    pub error: Option<String>,
    /// The thrown error's `stack`, when it had one; `null` otherwise.
    pub trace: Option<String>,
}

impl From<tideq::AttemptInfo> for Attempt {
    fn from(a: tideq::AttemptInfo) -> Self {
        Attempt {
            attempt: a.attempt,
            started_at: a.started_at.map(|t| t as i64),
            ended_at: a.ended_at.map(|t| t as i64),
            duration_ms: a.duration_ms.map(|t| t as i64),
            worker: a.worker,
            outcome: a.outcome,
            error: a.error,
            trace: a.trace,
        }
    }
}

/// One line of a job's log (`job.log`).
#[napi(object, object_from_js = false)]
pub struct LogLine {
    /// When it was logged: ms since the epoch, Redis clock.
    pub at_ms: i64,
    /// The attempt that logged it.
    pub attempt: u32,
    /// The line.
    pub line: String,
}

impl From<tideq::LogLine> for LogLine {
    fn from(l: tideq::LogLine) -> Self {
        LogLine {
            at_ms: l.at_ms as i64,
            attempt: l.attempt,
            line: l.line,
        }
    }
}

#[napi]
impl Job {
    /// Adds `line` (a string) to the job's log, stamped with the Redis time and this attempt
    /// (`get(id).logs` and `jobLogs(id)` read it; `tideq job` and the dashboard show it). A line
    /// holds at most 4096 bytes (else `INVALID_ARGUMENT`, nothing written); the log keeps the
    /// newest 1000 lines within 64 KiB and goes with the job. Rejects with `LEASE_LOST` when
    /// the job's lease was lost.
    #[napi(ts_args_type = "line: string", ts_return_type = "Promise<void>")]
    pub fn log<'env>(&self, env: &'env Env, line: Unknown) -> Result<PromiseRaw<'env, ()>> {
        let job = self.inner.clone();
        spawn(
            env,
            string("log line", &line).map(|line| async move { Ok(job.log(&line).await?) }),
        )
    }
}

#[napi]
impl Queue {
    /// The lines job `id`'s handlers logged (`job.log`), oldest first. Rejects with
    /// `JOB_NOT_FOUND` when there is no such job (or it is no longer retained).
    #[napi(ts_args_type = "id: string", ts_return_type = "Promise<LogLine[]>")]
    pub fn job_logs<'env>(
        &self,
        env: &'env Env,
        id: Unknown,
    ) -> Result<PromiseRaw<'env, Vec<LogLine>>> {
        let q = self.inner.clone();
        spawn(
            env,
            job_id(&id).map(|id| async move {
                Ok(q.job_logs(&id)
                    .await?
                    .into_iter()
                    .map(LogLine::from)
                    .collect())
            }),
        )
    }
}
