//! The job queue's operator calls: inspect a job (`get`), `cancel` one (removed, or asked to stop
//! when running), run a delayed one now (`promote`), delete a finished one, list, requeue and
//! purge dead letters, and `stats`. Listing a state's jobs (`jobs`, `jobs_page`) is in
//! `listing.rs`, the search by task or group (`find_jobs`) in `search.rs`.

use std::collections::HashMap;

use crate::envelope::Envelope;
use crate::error::{Error, ErrorKind, Result};
use crate::job::{validate_job_id, JobInfo, JobState, JobStats};
use crate::jobs::Queue;
use crate::scripts::{
    LuaScript, CANCEL_JOB, DELETE_JOB, GET_JOBS, PROMOTE_JOB, PURGE_DEAD, QUEUE_LATENCY,
    REQUEUE_DEAD,
};

impl Queue {
    /// A job's state, attempts, last error, timestamps, result and progress; `None` if unknown
    /// (or no longer retained).
    pub async fn get(&self, id: &str) -> Result<Option<JobInfo>> {
        if crate::testing::active() {
            if let Some(mode) = crate::testing::current() {
                return mode.get(self, id);
            }
        }
        self.op("get", async {
            validate_job_id(id)?;
            for shard in self.shards_to_search(id) {
                if let Some(mut info) = self
                    .get_many(shard, &[id.to_string()])
                    .await?
                    .pop()
                    .flatten()
                {
                    self.fill_detail(shard, &mut info).await?;
                    return Ok(Some(info));
                }
            }
            Ok(None)
        })
        .await
    }

    /// The shards that may hold job `id`: its own first, then (a grouped job lives on its
    /// group's shard) the others.
    pub(crate) fn shards_to_search(&self, id: &str) -> impl Iterator<Item = usize> {
        let own = self.shard_for(id);
        let n = self.shards.len();
        std::iter::once(own).chain((0..n).filter(move |&s| s != own))
    }

    /// The jobs of `ids` (as Redis holds them: an id listed that is not UTF-8 is read too, and
    /// shown with replacement characters).
    pub(crate) async fn get_many<T: AsRef<[u8]>>(
        &self,
        shard: usize,
        ids: &[T],
    ) -> Result<Vec<Option<JobInfo>>> {
        // At most 200 jobs a call: reading 1000 jobs' data in one script took over 10 ms.
        let mut out = Vec::with_capacity(ids.len());
        for part in ids.chunks(200) {
            let mut cmd = self.script_cmd(shard, &GET_JOBS);
            for id in part {
                cmd.arg(id.as_ref());
            }
            let rows: Vec<Vec<redis::Value>> = self.client.eval(&cmd, &GET_JOBS).await?;
            for (id, mut row) in part.iter().zip(rows) {
                // The 13th value, the job's cost, past what a tuple reads.
                let cost = row
                    .get(12)
                    .and_then(|v| redis::from_redis_value_ref::<Option<u32>>(v).ok())
                    .flatten()
                    .unwrap_or(1);
                row.truncate(12);
                let raw: Raw = redis::from_redis_value(redis::Value::Array(row)).map_err(|e| {
                    Error::new(ErrorKind::Redis, format!("unexpected get_jobs reply: {e}"))
                })?;
                let mut info = job_info(&String::from_utf8_lossy(id.as_ref()), raw);
                if let Some(info) = info.as_mut() {
                    info.cost = cost;
                    self.open_info(info);
                }
                out.push(info);
            }
        }
        Ok(out)
    }

    /// Cancels a job: a delayed or ready job is removed at once; an active one is asked to stop
    /// (its worker fires [`Job::cancellation`](crate::Job::cancellation) within a second) and
    /// ends cancelled when its handler returns, whatever it returns, never retried (or at its
    /// lease's expiry if its worker died); one that completes before its worker sees the request
    /// completes. Either way the job's data is deleted (`get` gives `None`) and stats count it as
    /// `cancelled`. Dead or completed jobs are refused (`JOB_NOT_CANCELLABLE`); unknown ids give
    /// `JOB_NOT_FOUND`.
    pub async fn cancel(&self, id: &str) -> Result<()> {
        self.op("cancel", self.cancel_one(id)).await
    }

    /// [`cancel`](Self::cancel) without the operation's wrapper (the bulk actions' step).
    pub(crate) async fn cancel_one(&self, id: &str) -> Result<()> {
        {
            validate_job_id(id)?;
            let mut res: (String, u64) = ("missing".into(), 0);
            let mut hit = 0;
            let token = crate::job::new_job_id();
            for shard in self.shards_to_search(id) {
                let mut cmd = self.script_cmd(shard, &CANCEL_JOB);
                cmd.arg(&token).arg(id);
                res = self.client.eval(&cmd, &CANCEL_JOB).await?;
                hit = shard;
                if res.0 != "missing" {
                    break;
                }
            }
            match res.0.as_str() {
                // A flow job's children go with it (their list left in fs:<token>.1); its
                // parent is told.
                "cancelled" => {
                    let keys = &self.shards[hit];
                    let list = (res.1 > 0).then(|| format!("{}{token}.1", keys.fs()));
                    crate::workflow::cancel_children(&self.client, keys, list).await
                }
                "requested" => Ok(()),
                "missing" => Err(Error::new(
                    ErrorKind::JobNotFound,
                    format!("no job {id:?} in queue {:?}", self.name),
                )),
                state => Err(Error::new(
                    ErrorKind::JobNotCancellable,
                    format!(
                        "job {id:?} is {state}; only delayed, ready or active jobs can be \
                         cancelled"
                    ),
                )),
            }
        }
    }

    /// Runs a delayed job now (one waiting for its due time, a retry's backoff or a snooze): it
    /// becomes ready at once, with its priority and group (their limits apply when it is
    /// fetched), and idle workers are woken. Any other state is refused (`JOB_WRONG_STATE`);
    /// unknown ids give `JOB_NOT_FOUND`.
    pub async fn promote(&self, id: &str) -> Result<()> {
        self.op("promote", async {
            match self.job_action(&PROMOTE_JOB, id).await?.as_str() {
                "promoted" => Ok(()),
                state => Err(self.wrong_state(id, state, "only a delayed job can be run now")),
            }
        })
        .await
    }

    /// Deletes a finished (dead or completed) job and everything kept for it (its data, result,
    /// its place in the dead letters or the completed jobs, its id in the idempotency memory),
    /// so `get` gives `None` and its id may be enqueued again. Lifetime counters are kept. A
    /// pending or running job is refused (`JOB_WRONG_STATE`: cancel it instead); unknown ids
    /// give `JOB_NOT_FOUND`.
    pub async fn delete(&self, id: &str) -> Result<()> {
        self.op("delete", async {
            match self.job_action(&DELETE_JOB, id).await?.as_str() {
                "deleted" => Ok(()),
                state => Err(self.wrong_state(id, state, "cancel it instead")),
            }
        })
        .await
    }

    /// Runs a one-job script (`ARGV[1]` the id) on the shards that may hold the job, until one
    /// knows it; its answer, or "missing".
    pub(crate) async fn job_action(&self, script: &LuaScript, id: &str) -> Result<String> {
        validate_job_id(id)?;
        let mut res = String::from("missing");
        for shard in self.shards_to_search(id) {
            let mut cmd = self.script_cmd(shard, script);
            cmd.arg(id);
            res = self.client.eval(&cmd, script).await?;
            if res != "missing" {
                break;
            }
        }
        Ok(res)
    }

    /// `JOB_NOT_FOUND` for "missing", else `JOB_WRONG_STATE` naming the state and what to do.
    fn wrong_state(&self, id: &str, state: &str, needs: &str) -> Error {
        match state {
            "missing" => Error::new(
                ErrorKind::JobNotFound,
                format!("no job {id:?} in queue {:?}", self.name),
            ),
            "waiting" => Error::new(
                ErrorKind::JobWrongState,
                format!("job {id:?} is a flow job waiting for its children; {needs}"),
            ),
            state => Error::new(
                ErrorKind::JobWrongState,
                format!("job {id:?} is {state}; {needs}"),
            ),
        }
    }

    /// Dead-lettered jobs, `limit` from `offset`: oldest death first within a shard, shard by shard.
    pub async fn dead_letters(&self, offset: usize, limit: usize) -> Result<Vec<JobInfo>> {
        self.op("dead_letters", self.list(JobState::Dead, offset, limit))
            .await
    }

    /// Requeues or purges dead jobs: `id`, or all of them (in calls of at most 1000).
    pub(crate) async fn dead_op(&self, script: &LuaScript, id: Option<&str>) -> Result<u64> {
        if let Some(id) = id {
            validate_job_id(id)?;
        }
        let mut total = 0;
        let shards: Vec<usize> = match id {
            Some(id) => self.shards_to_search(id).collect(),
            None => (0..self.shards.len()).collect(),
        };
        for shard in shards {
            loop {
                let mut cmd = self.script_cmd(shard, script);
                cmd.arg(id.unwrap_or("")).arg(1000);
                let n: u64 = self.client.eval(&cmd, script).await?;
                total += n;
                if id.is_some() || n < 1000 {
                    break;
                }
            }
            if id.is_some() && total > 0 {
                break;
            }
        }
        Ok(total)
    }

    /// Moves a dead job back to ready with its attempts reset. `JOB_NOT_FOUND` if it is not dead.
    pub async fn requeue(&self, id: &str) -> Result<()> {
        self.op("requeue", async {
            match self.dead_op(&REQUEUE_DEAD, Some(id)).await? {
                0 => Err(Error::new(
                    ErrorKind::JobNotFound,
                    format!("no dead job {id:?}"),
                )),
                _ => Ok(()),
            }
        })
        .await
    }

    /// Requeues every dead job; returns how many.
    pub async fn requeue_all(&self) -> Result<u64> {
        self.op("requeue_all", async {
            self.dead_op(&REQUEUE_DEAD, None).await
        })
        .await
    }

    /// Deletes every dead job; returns how many.
    pub async fn purge(&self) -> Result<u64> {
        self.op("purge", async { self.dead_op(&PURGE_DEAD, None).await })
            .await
    }

    /// Counts per state and lifetime counters, added up over the shards, and the queue's
    /// [`latency`](JobStats::latency) (the longest over the shards).
    pub async fn stats(&self) -> Result<JobStats> {
        self.op("stats", self.read_stats(true)).await
    }

    /// Not part of the stable API (hidden from the docs): [`stats`](Self::stats) without the
    /// latency (left zero), one call less per shard, for the dashboard's refresh loop, which
    /// reads every queue every few seconds and the latency only for a queue's page.
    #[doc(hidden)]
    pub async fn stats_counts(&self) -> Result<JobStats> {
        self.op("stats", self.read_stats(false)).await
    }

    async fn read_stats(&self, with_latency: bool) -> Result<JobStats> {
        {
            let per_shard = self.shards.iter().enumerate().map(|(i, k)| async move {
                let latency = async {
                    if !with_latency {
                        return Ok(0);
                    }
                    let (ms, _now): (u64, u64) = self
                        .client
                        .eval(&self.script_cmd(i, &QUEUE_LATENCY), &QUEUE_LATENCY)
                        .await?;
                    Ok::<_, Error>(ms)
                };
                let mut conn = self.client.conn().await?;
                #[allow(clippy::type_complexity)]
                let (delayed, plain, active, dead, kept, waiting, c, (paused, ghosts)): (
                    u64,
                    u64,
                    u64,
                    u64,
                    u64,
                    u64,
                    HashMap<String, i64>,
                    (Option<String>, Option<u64>),
                ) = redis::pipe()
                    .zcard(k.delayed())
                    .llen(k.ready())
                    .zcount(k.active(), "-inf", "(+inf") // not the encoding anchor (docs/data-model.md)
                    .zcard(k.dead())
                    .llen(k.done())
                    .hlen(k.fwait())
                    .hgetall(k.stats())
                    .hmget(k.cfg(), &["paused", "ghosts"])
                    .query_async(&mut conn)
                    .await
                    .map_err(|e| self.client.err(e))?;
                let latency_ms = latency.await?;
                let get = |name: &str| c.get(name).copied().unwrap_or(0).max(0) as u64;
                Ok::<_, Error>(JobStats {
                    delayed,
                    // Plain ready jobs (the ready list but the entries of cancelled jobs
                    // left in it, see docs/data-model.md), prioritized ones, and the groups'.
                    ready: plain.saturating_sub(ghosts.unwrap_or(0))
                        + get("pready")
                        + get("gready"),
                    active,
                    dead,
                    completed_kept: kept,
                    waiting,
                    enqueued: get("enqueued"),
                    completed: get("completed"),
                    dead_lettered: get("failed"),
                    retried: get("retried"),
                    recovered: get("recovered"),
                    cancelled: get("cancelled"),
                    snoozed: get("snoozed"),
                    expired: get("expired"),
                    dead_trimmed: get("dead_trimmed"),
                    lost: get("lost"),
                    paused: paused.as_deref() == Some("1"),
                    latency: std::time::Duration::from_millis(latency_ms),
                })
            });
            let mut total = JobStats::default();
            let per_shard: Vec<_> = per_shard.map(Box::pin).collect();
            for s in futures_util::future::try_join_all(per_shard).await? {
                total.delayed += s.delayed;
                total.ready += s.ready;
                total.active += s.active;
                total.dead += s.dead;
                total.enqueued += s.enqueued;
                total.completed += s.completed;
                total.completed_kept += s.completed_kept;
                total.waiting += s.waiting;
                total.dead_lettered += s.dead_lettered;
                total.retried += s.retried;
                total.recovered += s.recovered;
                total.cancelled += s.cancelled;
                total.snoozed += s.snoozed;
                total.expired += s.expired;
                total.dead_trimmed += s.dead_trimmed;
                total.lost += s.lost;
                total.paused |= s.paused;
                total.latency = total.latency.max(s.latency);
            }
            Ok(total)
        }
    }
}

/// A job as `get` reports it, from what `get_jobs.lua` read: envelope, meta, last error, and its
/// scores in the delayed, active and dead sets. `None` when there is no such job. A record that
/// cannot be read is still reported, with `unreadable` saying why, so an operator can see and
/// requeue or purge it.
/// One job as `get_jobs.lua` returns it: envelope, meta, last error, its scores in the delayed,
/// active and dead sets, its route ("priority|sequence|group"), result and progress.
type Raw = (
    Option<Vec<u8>>,
    Option<String>,
    Option<String>,
    Option<f64>,
    Option<f64>,
    Option<f64>,
    Option<String>,
    Option<Vec<u8>>,
    Option<Vec<u8>>,
    Option<u64>,
    Option<String>,
    Option<f64>,
);

fn job_info(
    id: &str,
    (env, meta, err, delayed, active, dead, route, result, progress, pending, parent, held): Raw,
) -> Option<JobInfo> {
    let (priority, group) = route
        .as_deref()
        .and_then(crate::scripts::encoding::parse_route)
        .unwrap_or((None, None));
    let (env, meta) = (env?, meta?);
    // "state|attempts|max|enqueued|x" (docs/data-model.md, "Job meta")
    let fields = crate::scripts::encoding::meta_fields(&meta);
    let num = |i: usize| fields.and_then(|f| f[i].parse::<u64>().ok());
    let parsed = (|| {
        let fields = fields?;
        let mut state = JobState::from_code(fields[0], delayed.is_some(), active.is_some())?;
        if state == JobState::Ready && (pending.is_some() || held.is_some()) {
            state = JobState::Waiting;
        }
        Some((state, num(1)?, num(3)?, num(4)?))
    })();
    let mut unreadable = None;
    let (state, mut attempts, enqueued_at, x) = match parsed {
        Some((state, a, e, x)) => (state, u32::try_from(a).unwrap_or(u32::MAX), e, Some(x)),
        None => {
            unreadable = Some(format!("unreadable job record (meta {meta:?})"));
            let state = if dead.is_some() {
                JobState::Dead
            } else if active.is_some() {
                JobState::Active
            } else if delayed.is_some() {
                JobState::Delayed
            } else {
                JobState::Ready
            };
            (state, 0, 0, None)
        }
    };
    // A completed job's last run: "|<start>|<worker>" after its meta (lib/acks.lua).
    let run = (state == JobState::Completed)
        .then(|| crate::scripts::encoding::meta_run(&meta))
        .flatten();
    let (payload, max_attempts, task) = match Envelope::decode(&env) {
        Ok(e) => (e.payload, e.max_attempts, e.task),
        Err(e) => {
            unreadable.get_or_insert_with(|| format!("unreadable envelope: {}", e.message()));
            (env, 0, None)
        }
    };
    let when = match state {
        JobState::Delayed => delayed,
        JobState::Active => {
            attempts += 1; // the delivery under way
            active
        }
        JobState::Dead => dead,
        JobState::Completed => {
            attempts += 1; // the attempt that succeeded
            x.map(|x| x as f64)
        }
        JobState::Ready | JobState::Waiting => None,
    };
    Some(JobInfo {
        id: id.to_string(),
        state,
        payload,
        task,
        attempts,
        max_attempts,
        last_error: err,
        enqueued_at,
        state_since_or_until: when.map(|s| s as u64),
        unreadable,
        priority,
        group,
        cost: 1,
        result,
        progress,
        parent: parent.as_deref().and_then(crate::workflow::parent_of),
        parents: parent
            .as_deref()
            .map(crate::workflow::parents_of)
            .unwrap_or_default(),
        children_pending: pending,
        started_at: run.map(|r| r.0),
        run_ms: run.zip(x).map(|(r, x)| x.saturating_sub(r.0)),
        worker: run.map(|r| r.1.to_string()).filter(|w| !w.is_empty()),
        attempt_history: Vec::new(),
        logs: Vec::new(),
    })
}
