//! The worker side of the job queue: the lease protocol. One `fetch` call completes a batch of
//! acks, recovers expired leases, promotes due jobs and leases the next batch; `complete`,
//! `fail`, `release` and `extend` settle or renew one delivery, fenced by its lease token (a
//! stale holder gets `LEASE_LOST`). The worker runtime (`worker.rs`) drives these.

use std::time::Duration;

use redis::Value;

use crate::envelope::{Backoff, Envelope};
use crate::error::{Error, ErrorKind, Result};
use crate::job::{ms, Job, Lease};
use crate::jobs::Queue;
use crate::scripts::{COMPLETE_JOBS, FAIL_JOB, FETCH_JOBS, RELEASE_JOB, SET_PROGRESS, SNOOZE_JOB};
use crate::worker::BackOffScope;

/// Most delayed jobs promoted per fetch (bounded script time).
pub(crate) const PROMOTE_LIMIT: usize = 1000;
/// Most bytes of an attempt's error and trace kept in its record (docs/attempts-and-logs.md).
pub const MAX_ATTEMPT_ERROR: usize = 8 * 1024;
/// Most expired leases one fetch recovers.
const RECOVER_LIMIT: usize = 100;
/// Most fetch calls of one `lease_jobs` per shard while each passes groups without a job to
/// give (100 to 1,200 groups a call: a rotation of a million such groups).
const MAX_LOOKS: usize = 10_000;

/// One worker round trip's result (see [`Queue::fetch`]).
pub(crate) struct Fetched {
    pub jobs: Vec<Job>,
    /// Ms until something is due (Redis clock); `Some(0)` = look again now; `None` = nothing pending.
    pub wake_in: Option<u64>,
    /// Per ack sent along, what became of it.
    pub acked: Vec<Acked>,
    /// Job records found missing (removed) or unreadable (dead-lettered) on the way.
    pub lost: u64,
    /// The queue (shard) has schedules (someone must fire their slots).
    pub schedules: bool,
    /// Its outbox holds flow notices to relay to their parents ([`crate::workflow::relay`]).
    pub notices: bool,
    /// It holds flow jobs (their flow not sealed yet, see [`crate::workflow::settle_held`]).
    pub held: bool,
    /// The Redis time of the call (ms).
    pub now: u64,
    /// Some jobs leased were of groups that name a shared limiter (a fetch takes only a few
    /// of such a group's jobs: more may be ready).
    pub group_limited: bool,
}

/// `fetch_jobs.lua`'s reply: leased, wake_in, acks, lost, now, bits, the queue's limiter, and
/// the jobs whose group names a limiter (id, limiter, ...).
type FetchReply = (
    Vec<Value>,
    i64,
    Vec<i64>,
    u64,
    u64,
    i64,
    String,
    Vec<String>,
);

/// What became of one ack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Acked {
    Completed,
    /// The job was already completed: by this very delivery when the ack is a retry whose first
    /// reply was lost; otherwise by another worker after this one's lease expired.
    AlreadyCompleted,
    LeaseLost,
}

impl Acked {
    fn from_code(code: i64) -> Self {
        match code {
            1 => Acked::Completed,
            2 => Acked::AlreadyCompleted,
            _ => Acked::LeaseLost,
        }
    }
}

/// A leased job's delivery, read from its meta "state|attempts|max|enqueued ms|x" (docs/data-model.md):
/// the attempt under way (attempts + 1), its lease token "enqueued.x", and the enqueue time.
fn delivery(meta: &str) -> Option<(u32, String, u64)> {
    let [_state, attempts, _max, enqueued, x] = crate::scripts::encoding::meta_fields(meta)?;
    let attempt = attempts.parse::<u32>().ok()?.checked_add(1)?;
    let token = crate::scripts::encoding::lease_token(enqueued, x);
    Some((attempt, token, enqueued.parse().ok()?))
}

/// An ack's arguments (lua/lib/acks.lua, `complete_leases`): job id and lease token, or, with a
/// result, the token marked with a trailing "+" and the result after it. When the attempt's run
/// is kept (`keep`: the queue retains completed jobs; or the job failed before), the token goes
/// on with ";<start ms>~<worker id>" (docs/data-model.md, "Attempts and logs").
fn ack_args(cmd: &mut redis::Cmd, l: &Lease, keep: bool, q: &Queue) -> Result<()> {
    let result = l.result.as_deref().map(|r| q.seal_bytes(r)).transpose()?;
    // "!": a renewal recorded the attempt as under way, so its end goes in the record too.
    let recorded = if l.is_recorded() { "!" } else { "" };
    let run = (keep || l.attempt > 1 || !recorded.is_empty()) && l.started > 0;
    match (&result, run) {
        (None, false) => cmd.arg(&l.id).arg(&l.token),
        (None, true) => cmd
            .arg(&l.id)
            .arg(format!("{};{recorded}{}", l.token, l.run_arg())),
        (Some(r), false) => cmd.arg(&l.id).arg(format!("{}+", l.token)).arg(r.as_ref()),
        (Some(r), true) => cmd
            .arg(&l.id)
            .arg(format!("{};{recorded}{}+", l.token, l.run_arg()))
            .arg(r.as_ref()),
    };
    Ok(())
}

/// What became of a failed attempt (see `fail_job.lua`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Failed {
    Retried,
    DeadLettered,
    /// Its cancel had been requested: it ended cancelled.
    Cancelled,
}

impl Queue {
    /// Completes `acks` (all on `shard`), recovers expired leases, promotes due jobs and leases
    /// up to `want` ready jobs, in one script call. Returns the jobs, how long until something is
    /// due (ms, Redis clock) if anything is, and per ack whether it was accepted (false = lease
    /// lost). Without `upkeep`, the call skips what goes by time alone (expired leases, stale
    /// cancel requests, completed jobs past their age): a busy worker asks for it every
    /// [`UPKEEP_EVERY`](crate::worker), not on each of its calls. `(report, entry)`: a worker's
    /// report and its registry entry ("-": it stops), or ("", "") (fetch_jobs.lua, ARGV[6..7]).
    pub(crate) async fn fetch(
        &self,
        shard: usize,
        want: usize,
        lease: Duration,
        acks: &[Lease],
        (report, entry): (&str, &str),
        upkeep: bool,
    ) -> Result<Fetched> {
        // A queue naming a shared limiter: room taken first, the fetch bounded by it.
        let grant = match want {
            0 => None,
            _ => self.limit_take(want, lease).await?,
        };
        // The most to take from one group that names a limiter (see limiter/group.rs).
        let cap = match self.limit.group_cap() {
            0 => String::new(),
            n => format!("~{n}"),
        };
        let mut cmd = self.script_cmd(shard, &FETCH_JOBS);
        cmd.arg(ms(lease))
            .arg(match &grant {
                Some(g) => format!("{}{cap}|{}", g.granted, g.name),
                None => format!("{want}{cap}"),
            })
            .arg(if upkeep { RECOVER_LIMIT } else { 0 })
            .arg(PROMOTE_LIMIT)
            .arg(&*self.policy)
            .arg(report)
            .arg(entry);
        for l in acks {
            debug_assert_eq!(l.shard, shard, "acks ride on a fetch of their own shard");
            ack_args(&mut cmd, l, self.opts.keep_completed > 0, self)?;
        }
        let reply: Value = self.client.eval(&cmd, &FETCH_JOBS).await?;
        let bad = || Error::new(ErrorKind::Redis, "unexpected reply from fetch_jobs");
        let (leased, wake, acked, lost, started_at, sched, limiter, glim): FetchReply =
            redis::from_redis_value(reply).map_err(|_| bad())?;
        self.limiter_seen(&limiter);
        self.limit_ended(acks).await;
        if acked.len() != acks.len() || leased.len() % 3 != 0 {
            return Err(bad());
        }
        // Flat: id, envelope, meta per job (fetch_jobs.lua). Ids are read as bytes: one that is
        // not UTF-8 (written into Redis by something else than tideq) is dead-lettered below, and
        // the jobs leased with it run.
        let mut flat = leased.into_iter();
        let mut leased = Vec::with_capacity(flat.len() / 3);
        let mut unreadable_ids = Vec::new();
        while let (Some(id), Some(env), Some(meta)) = (flat.next(), flat.next(), flat.next()) {
            let id: Vec<u8> = redis::from_redis_value(id).map_err(|_| bad())?;
            let env: Vec<u8> = redis::from_redis_value(env).map_err(|_| bad())?;
            let meta: String = redis::from_redis_value(meta).map_err(|_| bad())?;
            let (attempt, token, enqueued_at) = delivery(&meta).ok_or_else(bad)?;
            match String::from_utf8(id) {
                Ok(id) => leased.push((id, env, attempt, token, enqueued_at)),
                Err(e) => unreadable_ids.push((e.into_bytes(), token)),
            }
        }
        for (id, token) in unreadable_ids {
            let shown = String::from_utf8_lossy(&id).into_owned();
            log::error!("tideq: job {shown:?} has an id that is not UTF-8: dead-lettered");
            let _ = self
                .bury_raw(shard, &id, &token, "unreadable job id: not UTF-8")
                .await;
        }
        let acked = acked.into_iter().map(Acked::from_code).collect();
        let mut jobs = Vec::with_capacity(leased.len());
        // Shared by this fetch's jobs (for `Job::progress`): one allocation per fetch.
        let owner = std::sync::Arc::new(self.clone());
        for (id, env, attempt, token, enqueued_at) in leased {
            let env = match Envelope::decode(&env).and_then(|mut env| {
                env.payload = self.open_bytes(std::mem::take(&mut env.payload))?;
                Ok(env)
            }) {
                Ok(env) => env,
                Err(e) => {
                    // Unreadable (or sealed with a key this queue lacks): dead-letter it rather
                    // than loop on it.
                    log::error!("tideq: job {id:?} has an unreadable envelope: {e}");
                    let lease = Lease {
                        id: id.clone(),
                        token,
                        attempt,
                        backoff: Backoff::fixed(0),
                        shard,
                        resent: false,
                        result: None,
                        started: started_at,
                        worker: None,
                        recorded: None,
                        task: None,
                        group_limit: None,
                    };
                    let _ = self
                        .fail_lease(&lease, &format!("unreadable envelope: {e}"), None, true)
                        .await;
                    continue;
                }
            };
            jobs.push(Job {
                id,
                payload: env.payload,
                attempt,
                max_attempts: env.max_attempts,
                enqueued_at,
                started_at,
                queue: self.name.to_string(),
                timeout: env.timeout_ms.map(Duration::from_millis),
                task: env.task,
                format: env.format,
                trace: env.trace,
                args_from: env.args_from,
                backoff: env.backoff,
                token,
                shard,
                cancel: Default::default(),
                owner: owner.clone(),
                cancel_requested: Default::default(),
                group_limit: None,
            });
        }
        // Jobs whose group names a shared limiter: those it has no room for go back.
        let group_limited = !glim.is_empty();
        let jobs = self.group_limits_hold(shard, jobs, glim, lease).await;
        let mut wake_in = u64::try_from(wake).ok();
        match &grant {
            Some(g) => {
                // The queue no longer names it: all of it goes back, and no job holds a slot.
                let took = if limiter.is_empty() {
                    &[][..]
                } else {
                    &jobs[..]
                };
                self.limit_settle(g, took, lease).await;
                if let Some(retry) = g.retry {
                    wake_in = Some(ms(retry));
                }
            }
            // A limiter this handle was not told of: nothing was leased; look again at once.
            None if want > 0 && !limiter.is_empty() => wake_in = Some(0),
            None => {}
        }
        Ok(Fetched {
            jobs,
            wake_in,
            acked,
            lost,
            schedules: sched & 1 != 0,
            notices: sched & 2 != 0,
            held: sched & 4 != 0,
            now: started_at,
            group_limited,
        })
    }

    fn lease_lost(&self, id: &str) -> Error {
        Error::new(
            ErrorKind::LeaseLost,
            format!("the lease on job {id:?} was lost (expired and redelivered)"),
        )
    }

    /// Leases up to `max` ready jobs for `lease` (due delayed jobs are promoted first), shard
    /// by shard: manual processing, without a worker. Settle each with [`complete`](Self::complete),
    /// [`fail`](Self::fail) or [`release`](Self::release), and renew a long one with
    /// [`extend`](Self::extend): nothing renews these leases by itself, and a job whose lease
    /// expires is delivered again. Empty when nothing is ready (a ready job behind many paused
    /// or full groups is still found: the look goes through the groups in short script calls).
    pub async fn lease_jobs(&self, max: usize, lease: Duration) -> Result<Vec<Job>> {
        self.op("lease_jobs", async {
            if max == 0 {
                return Err(Error::invalid("max must be at least 1"));
            }
            if max > crate::job::MAX_FETCH {
                return Err(Error::invalid(format!(
                    "max is {max}; one call leases at most {} jobs (call again for more)",
                    crate::job::MAX_FETCH
                )));
            }
            if lease < Duration::from_millis(1) {
                return Err(Error::invalid("lease must be at least 1 ms"));
            }
            let mut out = Vec::new();
            for shard in 0..self.shards.len() {
                // A call that leased nothing but says "look again now" passed a bounded part of
                // the group rotation (groups paused, at a limit or emptied), and took those out
                // of it: the groups behind may have jobs. So the look goes on, in calls of at
                // most a few hundred groups each, until the rotation gave a job or ended.
                for _ in 0..MAX_LOOKS {
                    if out.len() >= max {
                        break;
                    }
                    let fetched = self
                        .fetch(shard, max - out.len(), lease, &[], ("", ""), true)
                        .await?;
                    if fetched.notices {
                        crate::workflow::relay(&self.client, &self.shards[shard]).await?;
                    }
                    // Or it took jobs of groups that name a limiter, a few per group.
                    let again = (fetched.jobs.is_empty() && fetched.wake_in == Some(0))
                        || (fetched.group_limited && !fetched.jobs.is_empty());
                    out.extend(fetched.jobs);
                    if !again {
                        break;
                    }
                }
            }
            Ok(out)
        })
        .await
    }

    /// Marks a leased job done. `LEASE_LOST` if the lease expired and the job was redelivered.
    pub async fn complete(&self, job: &Job) -> Result<()> {
        self.op("complete", async { self.complete_one(job, None).await })
            .await
    }

    /// [`complete`](Self::complete), storing `result` with the job (as a handler's return value
    /// is: readable with `get` and `wait`). `PAYLOAD_TOO_LARGE` past the queue's
    /// `max_result_len` (nothing is written).
    pub async fn complete_with_result(&self, job: &Job, result: &[u8]) -> Result<()> {
        self.op("complete", async {
            self.check_result_len("result", result.len())?;
            self.complete_one(job, Some(result.to_vec())).await
        })
        .await
    }

    async fn complete_one(&self, job: &Job, result: Option<Vec<u8>>) -> Result<()> {
        let lease = Lease {
            result,
            ..job.lease()
        };
        match self.complete_leases(&[lease]).await?[0] {
            Acked::Completed => Ok(()),
            _ => Err(self.lease_lost(&job.id)),
        }
    }

    /// `PAYLOAD_TOO_LARGE` when a result or progress value of `len` bytes is over the queue's
    /// `max_result_len`.
    pub(crate) fn check_result_len(&self, what: &str, len: usize) -> Result<()> {
        let limit = self.opts.max_result_len;
        if len > limit {
            return Err(Error::new(
                ErrorKind::PayloadTooLarge,
                format!(
                    "the job's {what} is {len} bytes; the queue's max_result_len is {limit} \
                     bytes (that queue option, maxResultLen in Node, raises it)"
                ),
            ));
        }
        Ok(())
    }

    /// Stores a running job's progress, fenced by its lease (see [`Job::progress`]).
    pub(crate) async fn set_progress(&self, job: &Job, value: &[u8]) -> Result<()> {
        if crate::testing::active() && job.token.is_empty() {
            if let Some(mode) = crate::testing::current() {
                return mode.progress(self, &job.id, value);
            }
        }
        self.op("progress", async {
            self.check_result_len("progress", value.len())?;
            let mut cmd = self.script_cmd(job.shard, &SET_PROGRESS);
            cmd.arg(&job.id)
                .arg(&job.token)
                .arg(self.seal_bytes(value)?.as_ref());
            match self.client.eval::<i64>(&cmd, &SET_PROGRESS).await? {
                -1 => Err(self.lease_lost(&job.id)),
                _ => Ok(()),
            }
        })
        .await
    }

    /// Completes many leased jobs in one script call per shard (the worker batches its acks).
    pub(crate) async fn complete_leases(&self, leases: &[Lease]) -> Result<Vec<Acked>> {
        let mut out = vec![Acked::LeaseLost; leases.len()];
        for shard in 0..self.shards.len() {
            let idx: Vec<usize> = (0..leases.len())
                .filter(|&i| leases[i].shard == shard)
                .collect();
            if idx.is_empty() {
                continue;
            }
            let mut cmd = self.script_cmd(shard, &COMPLETE_JOBS);
            cmd.arg(&*self.policy);
            for &i in &idx {
                ack_args(&mut cmd, &leases[i], self.opts.keep_completed > 0, self)?;
            }
            let res: Vec<i64> = self.client.eval(&cmd, &COMPLETE_JOBS).await?;
            for (i, r) in idx.into_iter().zip(res) {
                out[i] = Acked::from_code(r);
            }
        }
        self.limit_ended(leases).await;
        Ok(out)
    }

    /// Fails a leased attempt: retried after the job's backoff, or dead-lettered after
    /// `max_attempts`. Returns true when dead-lettered. A job whose [`cancel`](Self::cancel) was
    /// requested ends cancelled instead (false).
    pub async fn fail(&self, job: &Job, error: &str) -> Result<bool> {
        self.op("fail", async {
            Ok(self.fail_lease(&job.lease(), error, None, false).await? == Failed::DeadLettered)
        })
        .await
    }

    /// [`fail`](Self::fail) for a lease; `dead_now` dead-letters the job whatever its attempts
    /// (an attempt that can never succeed). `trace` (the handler's traceback, stack or error
    /// chain) is kept with the attempt's record, the two within [`MAX_ATTEMPT_ERROR`] bytes.
    pub(crate) async fn fail_lease(
        &self,
        lease: &Lease,
        error: &str,
        trace: Option<&str>,
        dead_now: bool,
    ) -> Result<Failed> {
        let delay = lease.backoff.delay_ms(lease.attempt);
        let text = crate::error::capped_text(error, self.opts.max_error_len);
        let room = MAX_ATTEMPT_ERROR.saturating_sub(text.len());
        let trace = trace
            .filter(|t| !t.is_empty() && room > 0)
            .map(|t| crate::error::capped_text(t, room))
            .unwrap_or_default();
        let (text, trace) = (self.seal_str(&text)?, self.seal_str(&trace)?);
        let mut cmd = self.script_cmd(lease.shard, &FAIL_JOB);
        cmd.arg(&lease.id)
            .arg(&lease.token)
            .arg(text.as_ref())
            .arg(delay)
            .arg(&*self.policy)
            .arg(if dead_now { "1" } else { "0" })
            .arg(lease.run_arg())
            .arg(trace.as_ref());
        let code = self.client.eval::<i64>(&cmd, &FAIL_JOB).await?;
        self.limit_ended([lease]).await;
        match code {
            -1 => Err(self.lease_lost(&lease.id)),
            2 => Ok(Failed::DeadLettered),
            3 => Ok(Failed::Cancelled),
            _ => Ok(Failed::Retried),
        }
    }

    /// Dead-letters the delivery of a job whose id is raw bytes (not UTF-8: no [`Lease`] can
    /// hold it), with `why` as its error.
    async fn bury_raw(&self, shard: usize, id: &[u8], token: &str, why: &str) -> Result<()> {
        let mut cmd = self.script_cmd(shard, &FAIL_JOB);
        cmd.arg(id)
            .arg(token)
            .arg(why)
            .arg(0)
            .arg(&*self.policy)
            .arg("1");
        self.client.eval::<i64>(&cmd, &FAIL_JOB).await.map(|_| ())
    }

    /// Ends a leased attempt without counting it, to run the job again after `delay` (a
    /// handler's [`Snooze`](crate::Snooze) or [`BackOff`](crate::BackOff)): no error is recorded,
    /// and the job's attempts (so its retries' backoff) are as if this delivery never happened.
    /// A back-off also holds the queue (every shard of it) or the job's group for `delay`.
    /// Returns false when the job ended cancelled instead (its cancel was requested).
    pub(crate) async fn snooze_lease(
        &self,
        lease: &Lease,
        delay: Duration,
        scope: Option<BackOffScope>,
    ) -> Result<bool> {
        let delay_ms = ms(delay);
        let scope_arg = match scope {
            None => "",
            Some(BackOffScope::Queue) => "q",
            Some(BackOffScope::Group) => "g",
        };
        let mut cmd = self.script_cmd(lease.shard, &SNOOZE_JOB);
        cmd.arg(&lease.id)
            .arg(&lease.token)
            .arg(delay_ms)
            .arg(scope_arg);
        let code = self.client.eval::<i64>(&cmd, &SNOOZE_JOB).await?;
        self.limit_ended([lease]).await;
        if code == -1 {
            return Err(self.lease_lost(&lease.id));
        }
        // The queue's other shards back off too (the job's shard did in its script).
        if scope == Some(BackOffScope::Queue) {
            for shard in (0..self.shards.len()).filter(|&s| s != lease.shard) {
                let mut cmd = self.script_cmd(shard, &SNOOZE_JOB);
                cmd.arg("").arg("").arg(delay_ms).arg("q");
                // The job is settled already: a shard that missed the hold is only reported.
                if let Err(e) = self.client.eval::<i64>(&cmd, &SNOOZE_JOB).await {
                    log::warn!(
                        "tideq: shard {shard} of queue {:?} did not back off: {e}",
                        self.name()
                    );
                }
            }
        }
        Ok(code != 3)
    }

    /// Returns a leased job to the front of the ready list without counting the attempt
    /// (graceful shutdown). A job whose [`cancel`](Self::cancel) was requested ends cancelled
    /// instead.
    pub async fn release(&self, job: &Job) -> Result<()> {
        self.op("release", async {
            self.release_lease(&job.lease()).await.map(|_| ())
        })
        .await
    }

    /// [`release`](Self::release) for a lease: true when released, false when it ended cancelled.
    pub(crate) async fn release_lease(&self, lease: &Lease) -> Result<bool> {
        let mut cmd = self.script_cmd(lease.shard, &RELEASE_JOB);
        cmd.arg(&lease.id).arg(&lease.token);
        let code = self.client.eval::<i64>(&cmd, &RELEASE_JOB).await?;
        self.limit_ended([lease]).await;
        match code {
            -1 => Err(self.lease_lost(&lease.id)),
            n => Ok(n != 3),
        }
    }
}

mod extend;

#[cfg(test)]
mod tests {
    use super::delivery;

    #[test]
    fn a_leased_jobs_attempt_token_and_enqueue_time_come_from_its_meta() {
        assert_eq!(
            delivery("q|2|5|1764233000123|3"),
            Some((3, "1764233000123.3".to_string(), 1764233000123))
        );
    }

    #[test]
    fn a_meta_that_does_not_parse_is_refused() {
        for bad in [
            "",
            "q|x|5|1|0",
            "q|1|5|1",
            "q|1|5|t|0",
            "q|4294967295|5|1|0",
        ] {
            assert_eq!(delivery(bad), None, "{bad:?}");
        }
    }
}
