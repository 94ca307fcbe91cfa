//! Waiting for a job's outcome: [`Queue::wait`]. The caller subscribes to its client's inbox
//! for the job's shard (`hub.rs`), then registers the client's hub as a waiter of the job and
//! reads its state in one script call (`wait_job.lua`), so a job that finished before the call is
//! answered at once and one that finishes later cannot slip between the look and the wait. The
//! script that finishes a waited-for job (an ack, a dead-lettering, a cancel) pushes one notice
//! with its outcome per waiting hub, so it returns as soon as the job ends, on the hub's one
//! connection however many wait. In case a notice was lost (a failover) a wait looks at its job
//! again after [`WAIT_POLL`], then at growing intervals up to [`WAIT_POLL_MAX`]. Jobs nobody waits
//! for pay one `EXISTS` per script call (see docs/data-model.md, "Waiters").

use std::time::Duration;

use crate::error::{Error, ErrorKind, Result};
use crate::job::{validate_job_id, JobOutcome};
use crate::jobs::Queue;
use crate::scripts::WAIT_JOB;

/// When a wait first looks at its job again (a notice may have been lost).
pub(crate) const WAIT_POLL: Duration = Duration::from_secs(2);
/// The longest interval between two such looks.
const WAIT_POLL_MAX: Duration = Duration::from_secs(30);
/// How long a wait that found its job gone still listens for its notice.
const NOTICE_GRACE: Duration = Duration::from_secs(2);

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

/// A registered wait that has not ended: dropped early (the caller gave up on the future), it
/// takes its registration off in the background.
struct Registered {
    queue: Queue,
    shard: usize,
    id: String,
    armed: bool,
    /// The runtime the wait ran on: a binding may drop a cancelled wait from another thread.
    runtime: tokio::runtime::Handle,
}

impl Drop for Registered {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let (q, shard, id) = (self.queue.clone(), self.shard, std::mem::take(&mut self.id));
        self.runtime.spawn(async move {
            let _ = q.look(shard, &id, "-1").await;
        });
    }
}

impl Queue {
    /// Waits until job `id` has finished and returns its outcome (with what its handler returned,
    /// if anything), also when it finished before the call (while it is retained:
    /// `keep_completed`, `keep_for`). A job that went to the dead letters gives `JOB_FAILED` with
    /// its last error, one that was cancelled `JOB_FAILED` too; no such job, `JOB_NOT_FOUND`; no
    /// outcome within `timeout` (`None`: no limit), `TIMEOUT`. Returns as soon as the job ends
    /// (it does not poll).
    pub async fn wait(&self, id: &str, timeout: Option<Duration>) -> Result<JobOutcome> {
        if crate::testing::active() {
            if let Some(mode) = crate::testing::current() {
                return mode.wait(self, id);
            }
        }
        self.op("wait", async {
            validate_job_id(id)?;
            let deadline = timeout.map(|t| tokio::time::Instant::now() + t);
            let hub = self.client.hub();
            // The job's shard (a grouped job lives on its group's), registering there; the wait
            // listens before it registers, so no notice can come first.
            for shard in self.shards_to_search(id) {
                let inbox = format!("{}{}", self.shards[shard].fin(), hub.id());
                let sub = hub.subscribe(&self.client, inbox, id);
                // Armed before the registration is sent: a wait dropped while it is on its way
                // still takes it off.
                let mut reg = Registered {
                    queue: self.clone(),
                    shard,
                    id: id.to_string(),
                    armed: true,
                    runtime: tokio::runtime::Handle::current(),
                };
                let seen = self.look(shard, id, "1").await;
                match seen {
                    Ok(Some(Look::Pending(enq))) => {
                        return self
                            .wait_registered(sub, reg, &enq, timeout, deadline)
                            .await;
                    }
                    // Finished or absent: nothing was registered.
                    Ok(Some(Look::Done(answer))) => {
                        reg.armed = false;
                        return answer;
                    }
                    Ok(None) => reg.armed = false,
                    Err(e) => return Err(e),
                }
            }
            Err(self.no_job(id))
        })
        .await
    }

    /// Waits for a notice about the job enqueued at `enq`, looking at the job now and then,
    /// until it is seen finished or `deadline`. Takes the registration off unless the job
    /// finished (its script did).
    async fn wait_registered(
        &self,
        mut sub: crate::hub::Subscription,
        mut reg: Registered,
        enq: &str,
        timeout: Option<Duration>,
        deadline: Option<tokio::time::Instant>,
    ) -> Result<JobOutcome> {
        let (shard, id) = (reg.shard, reg.id.clone());
        let mut poll = WAIT_POLL;
        let mut next_look = tokio::time::Instant::now() + poll;
        loop {
            let wake = match deadline {
                Some(d) => d.min(next_look),
                None => next_look,
            };
            tokio::select! {
                Some(notice) = sub.rx.recv() => {
                    if let Some(answer) = self.notice(&id, enq, &notice) {
                        // The job finished: its script took the registration off.
                        reg.armed = false;
                        return answer;
                    }
                    // A notice about an earlier job with this id: not ours.
                }
                _ = tokio::time::sleep_until(wake) => {
                    if deadline.is_some_and(|d| tokio::time::Instant::now() >= d) {
                        reg.armed = false;
                        return match self.look(shard, &id, "-1").await? {
                            Some(Look::Done(answer)) => answer,
                            Some(Look::Pending(_)) => Err(Error::new(
                                ErrorKind::Timeout,
                                format!(
                                    "job {id:?} of queue {:?} did not finish within {} ms",
                                    self.name,
                                    timeout.unwrap_or_default().as_millis()
                                ),
                            )),
                            None => Err(self.no_job(&id)),
                        };
                    }
                    // No notice for a while: look (a notice may have been lost).
                    match self.look(shard, &id, "0").await? {
                        Some(Look::Pending(_)) => {
                            poll = (poll * 2).min(WAIT_POLL_MAX);
                            next_look = tokio::time::Instant::now() + poll;
                        }
                        Some(Look::Done(answer)) => {
                            // Finished: its script took the registration off.
                            reg.armed = false;
                            return answer;
                        }
                        None => {
                            // Gone: finished and not retained, its notice maybe still on its
                            // way (a burst of them), or removed. Give the notice a moment.
                            let grace = tokio::time::sleep(NOTICE_GRACE);
                            tokio::pin!(grace);
                            loop {
                                tokio::select! {
                                    Some(notice) = sub.rx.recv() => {
                                        if let Some(answer) = self.notice(&id, enq, &notice) {
                                            reg.armed = false;
                                            return answer;
                                        }
                                    }
                                    _ = &mut grace => break,
                                }
                            }
                            reg.armed = false;
                            let _ = self.look(shard, &id, "-1").await;
                            return Err(self.no_job(&id));
                        }
                    }
                }
            }
        }
    }

    /// Runs `wait_job.lua` with `op` ("1" register, "-1" unregister, "0" look). `None` when the
    /// shard has no such job.
    async fn look(&self, shard: usize, id: &str, op: &str) -> Result<Option<Look>> {
        let mut cmd = self.script_cmd(shard, &WAIT_JOB);
        cmd.arg(id).arg(op).arg(self.client.hub().id());
        let (state, enq, result, error): Seen = self.client.eval(&cmd, &WAIT_JOB).await?;
        let Some(state) = state else {
            return Ok(None);
        };
        Ok(Some(match state.as_str() {
            "c" => Look::Done(match result.map(|r| self.open_bytes(r)).transpose() {
                Ok(result) => Ok(JobOutcome {
                    id: id.to_string(),
                    result,
                }),
                Err(e) => Err(e),
            }),
            "x" => Look::Done(Err(self.job_failed(id, error.as_deref()))),
            _ => Look::Pending(enq.unwrap_or_default()),
        }))
    }

    /// The answer a notice ("<enqueued>|<kind><data>", see docs/data-model.md) gives, if it is about
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
            b'r' => self.open_bytes(data.to_vec()).map(|r| JobOutcome {
                id: id.to_string(),
                result: Some(r),
            }),
            b'x' => Err(self.job_failed(id, Some(&String::from_utf8_lossy(data)))),
            _ => Err(Error::new(
                ErrorKind::JobFailed,
                format!("job {id:?} of queue {:?} was cancelled", self.name),
            )),
        })
    }

    pub(crate) fn job_failed(&self, id: &str, error: Option<&str>) -> Error {
        Error::new(
            ErrorKind::JobFailed,
            format!(
                "job {id:?} of queue {:?} went to the dead letters: {}",
                self.name,
                error
                    .map(|e| self.shown_text(e.to_string()))
                    .as_deref()
                    .unwrap_or("(no error recorded)")
            ),
        )
    }

    pub(crate) fn no_job(&self, id: &str) -> Error {
        Error::new(
            ErrorKind::JobNotFound,
            format!(
                "no job {id:?} in queue {:?} (or it is no longer retained)",
                self.name
            ),
        )
    }
}
