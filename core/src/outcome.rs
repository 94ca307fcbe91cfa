//! Waiting for a job's outcome: [`Queue::wait`]. The caller registers as a waiter of the job
//! and reads its state in one script call (`wait_job.lua`), so a job that finished before the
//! call is answered at once and one that finishes later cannot slip between the look and the
//! wait. The script that finishes a waited-for job (an ack, a dead-lettering, a cancel) pushes a
//! notice with its outcome onto the job's `fin:<id>` list, which the caller blocks on (`BLPOP`,
//! on a connection of its own), so it returns as soon as the job ends; it looks again at least
//! every [`WAIT_POLL`] in case a notice was lost (a failover). Jobs nobody waits for pay one
//! `EXISTS` per script call (see lib_jobs.lua, "Waiters").

use std::time::Duration;

use crate::error::{Error, ErrorKind, Result};
use crate::job::{validate_job_id, JobOutcome};
use crate::jobs::Queue;
use crate::scripts::WAIT_JOB;

/// The longest a waiter blocks before it looks at the job again.
pub(crate) const WAIT_POLL: Duration = Duration::from_secs(2);

/// A job as `wait_job.lua` sees it: state ("q", "c", "x"; `None`: no such job), enqueued ms,
/// result, last error.
type Seen = (
    Option<String>,
    Option<String>,
    Option<Vec<u8>>,
    Option<String>,
);

/// What a waiter learnt.
enum Look {
    /// The job is not finished: waiting goes on (for the job enqueued at this ms).
    Pending(String),
    /// The wait is over: this is its answer.
    Done(Result<JobOutcome>),
}

impl Queue {
    /// Waits until job `id` has finished and returns its outcome (with what its handler returned,
    /// if anything), also when it finished before the call (while it is retained:
    /// `keep_completed`, `keep_for`). A job that went to the dead letters gives `JOB_FAILED` with
    /// its last error, one that was cancelled `JOB_FAILED` too; no such job, `JOB_NOT_FOUND`; no
    /// outcome within `timeout` (`None`: no limit), `TIMEOUT`. Returns as soon as the job ends
    /// (it does not poll).
    pub async fn wait(&self, id: &str, timeout: Option<Duration>) -> Result<JobOutcome> {
        self.op("wait", async {
            validate_job_id(id)?;
            let deadline = timeout.map(|t| tokio::time::Instant::now() + t);
            // The job's shard (a grouped job lives on its group's), registering there.
            let mut found = None;
            for shard in self.shards_to_search(id) {
                match self.look(shard, id, "1").await? {
                    Some(Look::Done(answer)) => return answer,
                    Some(Look::Pending(enq)) => {
                        found = Some((shard, enq));
                        break;
                    }
                    None => {}
                }
            }
            let Some((shard, enq)) = found else {
                return Err(self.no_job(id));
            };
            self.wait_registered(shard, id, &enq, timeout, deadline)
                .await
        })
        .await
    }

    /// Blocks on the job's notice list until a notice for the job enqueued at `enq` arrives, the
    /// job is seen finished, or `deadline`. Takes the waiter off again unless a notice (whose
    /// sender already did) ended the wait.
    async fn wait_registered(
        &self,
        shard: usize,
        id: &str,
        enq: &str,
        timeout: Option<Duration>,
        deadline: Option<tokio::time::Instant>,
    ) -> Result<JobOutcome> {
        let key = format!("{}{id}", self.shards[shard].fin());
        let mut conn = match self.client.blocking_conn().await {
            Ok(conn) => conn,
            Err(e) => {
                let _ = self.look(shard, id, "-1").await;
                return Err(e);
            }
        };
        loop {
            let block = match deadline {
                Some(d) => {
                    let left = d.saturating_duration_since(tokio::time::Instant::now());
                    if left.is_zero() {
                        return match self.look(shard, id, "-1").await? {
                            Some(Look::Done(answer)) => answer,
                            Some(Look::Pending(_)) => Err(Error::new(
                                ErrorKind::Timeout,
                                format!(
                                    "job {id:?} of queue {:?} did not finish within {} ms",
                                    self.name,
                                    timeout.unwrap_or_default().as_millis()
                                ),
                            )),
                            None => Err(self.no_job(id)),
                        };
                    }
                    left.min(WAIT_POLL)
                }
                None => WAIT_POLL,
            };
            // Redis takes fractional seconds; 0 would mean forever.
            let secs = block.as_secs_f64().max(0.01);
            let got: Option<(String, Vec<u8>)> = match redis::cmd("BLPOP")
                .arg(&key)
                .arg(secs)
                .query_async(&mut conn)
                .await
            {
                Ok(got) => got,
                Err(e) => {
                    let _ = self.look(shard, id, "-1").await;
                    return Err(self.client.err(e));
                }
            };
            if let Some((_, notice)) = got {
                if let Some(answer) = self.notice(id, enq, &notice) {
                    return answer;
                }
                // A notice about an earlier job with this id: not ours.
                continue;
            }
            // No notice within the poll interval: look (a notice may have been lost).
            match self.look(shard, id, "0").await? {
                Some(Look::Pending(_)) => {}
                Some(Look::Done(answer)) => {
                    let _ = self.look(shard, id, "-1").await;
                    return answer;
                }
                None => {
                    let _ = self.look(shard, id, "-1").await;
                    return Err(self.no_job(id));
                }
            }
        }
    }

    /// Runs `wait_job.lua` with `op` ("1" register, "-1" unregister, "0" look). `None` when the
    /// shard has no such job.
    async fn look(&self, shard: usize, id: &str, op: &str) -> Result<Option<Look>> {
        let mut cmd = self.script_cmd(shard, &WAIT_JOB);
        cmd.arg(id).arg(op);
        let (state, enq, result, error): Seen = self.client.eval(&cmd, &WAIT_JOB).await?;
        let Some(state) = state else {
            return Ok(None);
        };
        Ok(Some(match state.as_str() {
            "c" => Look::Done(Ok(JobOutcome {
                id: id.to_string(),
                result,
            })),
            "x" => Look::Done(Err(self.job_failed(id, error.as_deref()))),
            _ => Look::Pending(enq.unwrap_or_default()),
        }))
    }

    /// The answer a notice ("<enqueued>|<kind><data>", see lib_jobs.lua) gives, if it is about
    /// the job enqueued at `enq`.
    fn notice(&self, id: &str, enq: &str, notice: &[u8]) -> Option<Result<JobOutcome>> {
        let bar = notice.iter().position(|&b| b == b'|')?;
        if &notice[..bar] != enq.as_bytes() {
            return None;
        }
        let (kind, data) = (notice.get(bar + 1)?, &notice[bar + 2..]);
        Some(match kind {
            b'c' => Ok(JobOutcome {
                id: id.to_string(),
                result: None,
            }),
            b'r' => Ok(JobOutcome {
                id: id.to_string(),
                result: Some(data.to_vec()),
            }),
            b'x' => Err(self.job_failed(id, Some(&String::from_utf8_lossy(data)))),
            _ => Err(Error::new(
                ErrorKind::JobFailed,
                format!("job {id:?} of queue {:?} was cancelled", self.name),
            )),
        })
    }

    fn job_failed(&self, id: &str, error: Option<&str>) -> Error {
        Error::new(
            ErrorKind::JobFailed,
            format!(
                "job {id:?} of queue {:?} went to the dead letters: {}",
                self.name,
                error.unwrap_or("(no error recorded)")
            ),
        )
    }

    fn no_job(&self, id: &str) -> Error {
        Error::new(
            ErrorKind::JobNotFound,
            format!(
                "no job {id:?} in queue {:?} (or it is no longer retained)",
                self.name
            ),
        )
    }
}
