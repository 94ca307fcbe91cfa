//! The job queue: delayed jobs, leases with per-delivery tokens, ack, retries with backoff, dead
//! letters, idempotent ids and cancel. Delivery is at-least-once: a job is in exactly one state
//! (delayed, ready, active, dead or completed) and leaves Redis only when completed (or purged).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use redis::Value;

use crate::client::Client;
use crate::envelope::{Backoff, Envelope, ENVELOPE_VERSION};
use crate::error::{Error, ErrorKind, Result};
use crate::keys::{shard_of, JobKeys};
use crate::scripts::{
    CANCEL_JOB, COMPLETE_JOBS, DEAD_LETTERS, ENQUEUE_JOBS, EXTEND_LEASE, FETCH_JOBS, SETTLE_JOB,
};

/// Most jobs per enqueue script call; all calls of one `enqueue_many` go in one pipeline.
const ENQUEUE_CHUNK: usize = 500;
/// Most delayed jobs promoted per fetch (bounded script time).
pub(crate) const PROMOTE_LIMIT: usize = 1000;
/// Most expired leases one fetch recovers.
const RECOVER_LIMIT: usize = 100;

/// Queue-wide defaults. Per-job options in [`EnqueueOptions`] override the first three.
#[derive(Debug, Clone, PartialEq)]
pub struct QueueOptions {
    /// Deliveries before a job is dead-lettered. Default 5.
    pub max_attempts: u32,
    /// Delay before retries. Default: exponential from 1 s, capped at 1 h, with jitter.
    pub backoff: Backoff,
    /// Longest run time of one attempt; past it the attempt fails and is retried. Default none.
    pub timeout: Option<Duration>,
    /// Completed jobs kept for `get` (newest N). 0 = delete on completion. Default 1000.
    pub keep_completed: usize,
    /// Completed jobs older than this are deleted. Default 1 day.
    pub keep_for: Option<Duration>,
    /// Longest error text stored with a failed job, in bytes. Default 4096.
    pub max_error_len: usize,
}

impl Default for QueueOptions {
    fn default() -> Self {
        QueueOptions {
            max_attempts: 5,
            backoff: Backoff::default(),
            timeout: None,
            keep_completed: 1000,
            keep_for: Some(Duration::from_secs(24 * 3600)),
            max_error_len: 4096,
        }
    }
}

/// Options of one enqueued job.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EnqueueOptions {
    /// Idempotency key: enqueuing an id that exists creates nothing. Default: a random id.
    pub id: Option<String>,
    /// Run no earlier than this long from now (Redis clock).
    pub delay: Option<Duration>,
    /// Run no earlier than this time (ms since the epoch). Exclusive with `delay`.
    pub run_at_ms: Option<u64>,
    pub max_attempts: Option<u32>,
    pub backoff: Option<Backoff>,
    pub timeout: Option<Duration>,
}

/// What `enqueue` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Enqueued {
    pub id: String,
    /// False when a job with this id already existed (nothing was written).
    pub created: bool,
}

/// Where a job is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobState {
    Delayed,
    Ready,
    Active,
    Dead,
    Completed,
}

impl JobState {
    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Delayed => "delayed",
            JobState::Ready => "ready",
            JobState::Active => "active",
            JobState::Dead => "dead",
            JobState::Completed => "completed",
        }
    }

    /// From the meta state letter; `q` (pending) is delayed while the job is in the delayed set,
    /// active while it is in the active set, else ready.
    fn from_code(c: &str, in_delayed: bool, in_active: bool) -> Option<Self> {
        Some(match c {
            "q" if in_delayed => JobState::Delayed,
            "q" if in_active => JobState::Active,
            "q" => JobState::Ready,
            "x" => JobState::Dead,
            "c" => JobState::Completed,
            _ => return None,
        })
    }
}

/// A job as `get` and `dead_letters` report it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobInfo {
    pub id: String,
    pub state: JobState,
    pub payload: Vec<u8>,
    /// Deliveries so far.
    pub attempts: u32,
    pub max_attempts: u32,
    pub last_error: Option<String>,
    /// Redis-clock ms.
    pub enqueued_at: u64,
    /// Delayed: due time; active: lease deadline; dead: time of death; completed: finish time.
    pub state_since_or_until: Option<u64>,
}

/// Counts per state plus lifetime counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JobStats {
    pub delayed: u64,
    pub ready: u64,
    pub active: u64,
    pub dead: u64,
    pub enqueued: u64,
    pub completed: u64,
    /// Jobs that exhausted their attempts (dead-lettered).
    pub failed: u64,
    /// Failed attempts scheduled for a retry.
    pub retried: u64,
    /// Expired leases recovered (worker died or stalled).
    pub recovered: u64,
    pub cancelled: u64,
}

/// A leased job, as the worker runtime hands it to a handler.
#[derive(Debug, Clone)]
pub struct Job {
    pub id: String,
    pub payload: Vec<u8>,
    /// 1 on first delivery.
    pub attempt: u32,
    pub max_attempts: u32,
    /// Redis-clock ms.
    pub enqueued_at: u64,
    pub queue: String,
    pub timeout: Option<Duration>,
    pub(crate) backoff: Backoff,
    pub(crate) token: String,
    pub(crate) shard: usize,
}

/// What settling a leased job needs (no payload): id, lease token, attempt, backoff.
#[derive(Debug, Clone)]
pub(crate) struct Lease {
    pub id: String,
    pub token: String,
    pub attempt: u32,
    pub backoff: Backoff,
    pub shard: usize,
}

/// One worker round trip's result (see [`Queue::fetch`]).
pub(crate) struct Fetched {
    pub jobs: Vec<Job>,
    /// Ms until something is due (Redis clock); `Some(0)` = look again now; `None` = nothing pending.
    pub wake_in: Option<u64>,
    /// Per ack sent along: true = completed, false = its lease was lost.
    pub acked: Vec<bool>,
}

impl Job {
    pub(crate) fn lease(&self) -> Lease {
        Lease {
            id: self.id.clone(),
            token: self.token.clone(),
            attempt: self.attempt,
            backoff: self.backoff,
            shard: self.shard,
        }
    }

    /// The payload as UTF-8 text.
    pub fn payload_str(&self) -> Result<&str> {
        std::str::from_utf8(&self.payload)
            .map_err(|e| Error::invalid(format!("payload is not UTF-8: {e}")))
    }
}

/// A handle on one job queue. Cheap to clone.
#[derive(Clone)]
pub struct Queue {
    pub(crate) client: Client,
    name: Arc<str>,
    /// One key set per shard (one shard unless built with [`Queue::sharded`]).
    pub(crate) shards: Arc<[JobKeys]>,
    opts: QueueOptions,
}

impl Queue {
    /// The same queue, reached through another client (the worker's lease renewer has its own).
    pub(crate) fn with_client(&self, client: Client) -> Queue {
        Queue {
            client,
            ..self.clone()
        }
    }
}

impl std::fmt::Debug for Queue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Queue")
            .field("name", &self.name)
            .field("shards", &self.shards.len())
            .field("opts", &self.opts)
            .finish()
    }
}

/// Checks a job id: 1–256 bytes, no control characters.
pub fn validate_job_id(id: &str) -> Result<()> {
    if id.is_empty() || id.len() > 256 {
        return Err(Error::invalid(format!(
            "job id must be 1 to 256 bytes, got {}",
            id.len()
        )));
    }
    if id.chars().any(char::is_control) {
        return Err(Error::invalid(format!(
            "job id {id:?} contains control characters"
        )));
    }
    Ok(())
}

fn new_job_id() -> String {
    format!("{:032x}", fastrand::u128(..))
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl Queue {
    pub fn new(client: &Client, name: &str, opts: QueueOptions) -> Result<Self> {
        Self::sharded(client, name, 1, opts)
    }

    /// A queue split in `shards` hash tags (seed 002's task_group:0..N), spread over the masters
    /// of a Redis Cluster. A job's shard is fixed by its id (so idempotency, `get` and `cancel`
    /// work), workers serve every shard, `stats` adds them up. Every producer and worker of a
    /// queue must use the same shard count; changing it remaps ids, so drain the queue first.
    pub fn sharded(client: &Client, name: &str, shards: usize, opts: QueueOptions) -> Result<Self> {
        let keys = JobKeys::shards(client.config().prefix(), name, shards)?;
        if opts.max_attempts == 0 {
            return Err(Error::invalid("max_attempts must be at least 1"));
        }
        opts.backoff.validate()?;
        if opts.timeout.is_some_and(|t| t.as_millis() == 0) {
            return Err(Error::invalid("timeout must be at least 1 ms"));
        }
        Ok(Queue {
            client: client.clone(),
            name: name.into(),
            shards: keys.into(),
            opts,
        })
    }

    /// How many shards this queue has.
    pub fn shard_count(&self) -> usize {
        self.shards.len()
    }

    fn shard_for(&self, id: &str) -> usize {
        shard_of(id, self.shards.len())
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn options(&self) -> &QueueOptions {
        &self.opts
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    fn envelope(&self, payload: &[u8], o: &EnqueueOptions) -> Result<(Envelope, u64, u64)> {
        let limit = self.client.config().max_payload();
        if payload.len() > limit {
            return Err(Error::new(
                ErrorKind::PayloadTooLarge,
                format!(
                    "payload is {} bytes; the limit is {limit} bytes",
                    payload.len()
                ),
            ));
        }
        let id = match &o.id {
            Some(id) => {
                validate_job_id(id)?;
                id.clone()
            }
            None => new_job_id(),
        };
        let max_attempts = o.max_attempts.unwrap_or(self.opts.max_attempts);
        if max_attempts == 0 {
            return Err(Error::invalid("max_attempts must be at least 1"));
        }
        let backoff = o.backoff.unwrap_or(self.opts.backoff);
        backoff.validate()?;
        if o.delay.is_some() && o.run_at_ms.is_some() {
            return Err(Error::invalid("give delay or run_at, not both"));
        }
        let timeout = o.timeout.or(self.opts.timeout);
        if timeout.is_some_and(|t| t.as_millis() == 0) {
            return Err(Error::invalid("timeout must be at least 1 ms"));
        }
        let env = Envelope {
            v: ENVELOPE_VERSION,
            id,
            payload: payload.to_vec(),
            created_at: now_ms(),
            max_attempts,
            backoff,
            timeout_ms: timeout.map(ms),
        };
        Ok((env, o.delay.map(ms).unwrap_or(0), o.run_at_ms.unwrap_or(0)))
    }

    fn enqueue_keys(&self, shard: usize) -> [String; 6] {
        let k = &self.shards[shard];
        [
            k.jobs(),
            k.meta(),
            k.ready(),
            k.delayed(),
            k.wake(),
            k.stats(),
        ]
    }

    /// Enqueues one job. With an `id` that already exists, nothing is written and
    /// `created` is false.
    pub async fn enqueue(
        &self,
        payload: impl AsRef<[u8]>,
        opts: EnqueueOptions,
    ) -> Result<Enqueued> {
        let mut v = self.enqueue_many(&[(payload, opts)]).await?;
        Ok(v.remove(0))
    }

    /// Enqueues many jobs in one round trip. All jobs are validated first: on bad input nothing
    /// is written.
    pub async fn enqueue_many<P: AsRef<[u8]>>(
        &self,
        jobs: &[(P, EnqueueOptions)],
    ) -> Result<Vec<Enqueued>> {
        let mut prepared = Vec::with_capacity(jobs.len());
        for (i, (payload, o)) in jobs.iter().enumerate() {
            let env = self.envelope(payload.as_ref(), o);
            prepared.push(env.map_err(|e| {
                if jobs.len() > 1 {
                    e.context(&format!("job {i}"))
                } else {
                    e
                }
            })?);
        }
        // Per shard, chunks of jobs in one pipeline; shards (other nodes) in parallel.
        let mut by_shard: Vec<Vec<usize>> = vec![Vec::new(); self.shards.len()];
        for (i, (env, _, _)) in prepared.iter().enumerate() {
            by_shard[self.shard_for(&env.id)].push(i);
        }
        let sends = by_shard
            .iter()
            .enumerate()
            .filter(|(_, idx)| !idx.is_empty())
            .map(|(shard, idx)| {
                let keys = self.enqueue_keys(shard);
                let cmds: Vec<redis::Cmd> = idx
                    .chunks(ENQUEUE_CHUNK)
                    .map(|chunk| {
                        let mut cmd = ENQUEUE_JOBS.cmd(&keys);
                        cmd.arg(chunk.len());
                        for &i in chunk {
                            let (env, delay, run_at) = &prepared[i];
                            cmd.arg(&env.id)
                                .arg(env.encode())
                                .arg(env.max_attempts)
                                .arg(*delay)
                                .arg(*run_at);
                        }
                        cmd
                    })
                    .collect();
                async move {
                    // With replica acks, the writes and their WAIT share a connection of their own.
                    let ack = self.client.config().replica_ack;
                    let mut conn = if ack.is_some() {
                        self.client.ack_conn().await?
                    } else {
                        self.client.conn().await?
                    };
                    let replies = match cmds.len() {
                        1 => vec![
                            self.client
                                .eval_on::<Value>(&mut conn, &cmds[0], &ENQUEUE_JOBS)
                                .await?,
                        ],
                        _ => self.client.pipeline_on(&mut conn, &cmds).await?,
                    };
                    if let Some((replicas, timeout)) = ack {
                        self.wait_for_replicas(&mut conn, shard, replicas, timeout)
                            .await?;
                    }
                    let mut flags = Vec::with_capacity(idx.len());
                    for reply in replies {
                        let f: Vec<i64> = redis::from_redis_value(reply)
                            .map_err(|e| self.client.err(e.into()))?;
                        flags.extend(f);
                    }
                    Ok::<_, Error>(idx.iter().copied().zip(flags).collect::<Vec<_>>())
                }
            });
        let sends: Vec<_> = sends.map(Box::pin).collect();
        let results = futures_util::future::try_join_all(sends).await?;
        let mut created = vec![false; prepared.len()];
        for (i, f) in results.into_iter().flatten() {
            created[i] = f == 1;
        }
        Ok(prepared
            .into_iter()
            .zip(created)
            .map(|((env, _, _), created)| Enqueued {
                id: env.id,
                created,
            })
            .collect())
    }

    /// Redis `WAIT` on the connection that carried the shard's writes (the keyed command routes
    /// it to the shard's primary on a cluster).
    async fn wait_for_replicas(
        &self,
        conn: &mut crate::client::Conn,
        shard: usize,
        replicas: usize,
        timeout: Duration,
    ) -> Result<()> {
        let (_, acked): (i64, i64) = redis::pipe()
            .exists(self.shards[shard].stats())
            .cmd("WAIT")
            .arg(replicas)
            .arg(ms(timeout))
            .query_async(conn)
            .await
            .map_err(|e| self.client.err(e))?;
        if (acked as usize) < replicas {
            return Err(Error::new(
                ErrorKind::NotReplicated,
                format!(
                    "the job(s) reached the primary but only {acked} of {replicas} replica(s) confirmed within {timeout:?}; \
                     enqueuing again with the same id is safe"
                ),
            ));
        }
        Ok(())
    }

    /// A job's state, attempts, last error and timestamps; `None` if unknown (or no longer
    /// retained).
    pub async fn get(&self, id: &str) -> Result<Option<JobInfo>> {
        validate_job_id(id)?;
        let mut found = self.get_many(self.shard_for(id), &[id.to_string()]).await?;
        Ok(found.pop().flatten())
    }

    async fn get_many(&self, shard: usize, ids: &[String]) -> Result<Vec<Option<JobInfo>>> {
        let k = &self.shards[shard];
        let mut pipe = redis::pipe();
        pipe.atomic();
        for id in ids {
            pipe.hget(k.jobs(), id)
                .hget(k.meta(), id)
                .hget(k.errors(), id);
            pipe.zscore(k.delayed(), id)
                .zscore(k.active(), id)
                .zscore(k.dead(), id);
        }
        let mut conn = self.client.conn().await?;
        let values: Vec<Value> = pipe
            .query_async(&mut conn)
            .await
            .map_err(|e| self.client.err(e))?;
        let mut out = Vec::new();
        for (id, v) in ids.iter().zip(values.chunks(6)) {
            let (env, meta, err): (Option<Vec<u8>>, Option<String>, Option<String>) =
                redis::from_redis_value(Value::Array(v[..3].to_vec()))
                    .map_err(|e| self.client.err(e.into()))?;
            let scores: Vec<Option<f64>> = redis::from_redis_value(Value::Array(v[3..].to_vec()))
                .map_err(|e| self.client.err(e.into()))?;
            let (Some(env), Some(meta)) = (env, meta) else {
                out.push(None);
                continue;
            };
            // "state|attempts|max|enqueued|x" (see lib_jobs.lua)
            let mut fields = meta.split('|');
            let code = fields.next().unwrap_or("");
            let mut attempts: u32 = fields.next().and_then(|a| a.parse().ok()).unwrap_or(0);
            let _max = fields.next();
            let enqueued_at = fields.next().and_then(|e| e.parse().ok()).unwrap_or(0);
            let x: Option<f64> = fields.next().and_then(|x| x.parse().ok());
            let Some(state) = JobState::from_code(code, scores[0].is_some(), scores[1].is_some())
            else {
                out.push(None);
                continue;
            };
            let env = Envelope::decode(&env)?;
            let when = match state {
                JobState::Delayed => scores[0],
                JobState::Active => {
                    attempts += 1; // the delivery under way
                    scores[1]
                }
                JobState::Dead => scores[2],
                JobState::Completed => {
                    attempts += 1; // the attempt that succeeded
                    x
                }
                JobState::Ready => None,
            };
            out.push(Some(JobInfo {
                id: id.clone(),
                state,
                payload: env.payload,
                attempts,
                max_attempts: env.max_attempts,
                last_error: err,
                enqueued_at,
                state_since_or_until: when.map(|s| s as u64),
            }));
        }
        Ok(out)
    }

    /// Removes a delayed or ready job. Active, dead or completed jobs are refused
    /// (`JOB_NOT_CANCELLABLE`); unknown ids give `JOB_NOT_FOUND`.
    pub async fn cancel(&self, id: &str) -> Result<()> {
        validate_job_id(id)?;
        let k = &self.shards[self.shard_for(id)];
        let keys = [
            k.ready(),
            k.delayed(),
            k.jobs(),
            k.meta(),
            k.errors(),
            k.stats(),
            k.active(),
        ];
        let mut cmd = CANCEL_JOB.cmd(&keys);
        cmd.arg(id);
        let res: String = self.client.eval(&cmd, &CANCEL_JOB).await?;
        match res.as_str() {
            "cancelled" => Ok(()),
            "missing" => Err(Error::new(
                ErrorKind::JobNotFound,
                format!("no job {id:?} in queue {:?}", self.name),
            )),
            state => Err(Error::new(
                ErrorKind::JobNotCancellable,
                format!("job {id:?} is {state}; only delayed or ready jobs can be cancelled"),
            )),
        }
    }

    /// Dead-lettered jobs, `limit` from `offset`: oldest death first within a shard, shard by shard.
    pub async fn dead_letters(&self, offset: usize, limit: usize) -> Result<Vec<JobInfo>> {
        let mut out = Vec::new();
        let mut skip = offset;
        for shard in 0..self.shards.len() {
            if out.len() >= limit {
                break;
            }
            let mut conn = self.client.conn().await?;
            let dead = self.shards[shard].dead();
            let count: usize = redis::cmd("ZCARD")
                .arg(&dead)
                .query_async(&mut conn)
                .await
                .map_err(|e| self.client.err(e))?;
            if skip >= count {
                skip -= count;
                continue;
            }
            let want = limit - out.len();
            let ids: Vec<String> = redis::cmd("ZRANGE")
                .arg(&dead)
                .arg(skip)
                .arg(skip + want - 1)
                .query_async(&mut conn)
                .await
                .map_err(|e| self.client.err(e))?;
            skip = 0;
            out.extend(self.get_many(shard, &ids).await?.into_iter().flatten());
        }
        Ok(out)
    }

    async fn dead_op(&self, op: &str, id: Option<&str>) -> Result<u64> {
        if let Some(id) = id {
            validate_job_id(id)?;
        }
        let mut total = 0;
        for shard in 0..self.shards.len() {
            if id.is_some_and(|id| self.shard_for(id) != shard) {
                continue;
            }
            total += self.dead_op_shard(shard, op, id).await?;
        }
        Ok(total)
    }

    async fn dead_op_shard(&self, shard: usize, op: &str, id: Option<&str>) -> Result<u64> {
        let k = &self.shards[shard];
        let keys = [
            k.dead(),
            k.ready(),
            k.jobs(),
            k.meta(),
            k.errors(),
            k.stats(),
            k.wake(),
        ];
        let mut total = 0;
        loop {
            let mut cmd = DEAD_LETTERS.cmd(&keys);
            cmd.arg(op).arg(id.unwrap_or("")).arg(1000);
            let n: u64 = self.client.eval(&cmd, &DEAD_LETTERS).await?;
            total += n;
            if id.is_some() || n < 1000 {
                return Ok(total);
            }
        }
    }

    /// Moves a dead job back to ready with its attempts reset. `JOB_NOT_FOUND` if it is not dead.
    pub async fn requeue(&self, id: &str) -> Result<()> {
        match self.dead_op("requeue", Some(id)).await? {
            0 => Err(Error::new(
                ErrorKind::JobNotFound,
                format!("no dead job {id:?}"),
            )),
            _ => Ok(()),
        }
    }

    /// Requeues every dead job; returns how many.
    pub async fn requeue_all(&self) -> Result<u64> {
        self.dead_op("requeue", None).await
    }

    /// Deletes every dead job; returns how many.
    pub async fn purge(&self) -> Result<u64> {
        self.dead_op("purge", None).await
    }

    /// Counts per state and lifetime counters, added up over the shards.
    pub async fn stats(&self) -> Result<JobStats> {
        let per_shard = self.shards.iter().map(|k| async move {
            let mut conn = self.client.conn().await?;
            let (delayed, ready, active, dead, c): (u64, u64, u64, u64, HashMap<String, u64>) =
                redis::pipe()
                    .zcard(k.delayed())
                    .llen(k.ready())
                    .zcount(k.active(), "-inf", "(+inf") // not the encoding anchor (lib_jobs.lua)
                    .zcard(k.dead())
                    .hgetall(k.stats())
                    .query_async(&mut conn)
                    .await
                    .map_err(|e| self.client.err(e))?;
            let get = |name: &str| c.get(name).copied().unwrap_or(0);
            Ok::<_, Error>(JobStats {
                delayed,
                ready,
                active,
                dead,
                enqueued: get("enqueued"),
                completed: get("completed"),
                failed: get("failed"),
                retried: get("retried"),
                recovered: get("recovered"),
                cancelled: get("cancelled"),
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
            total.failed += s.failed;
            total.retried += s.retried;
            total.recovered += s.recovered;
            total.cancelled += s.cancelled;
        }
        Ok(total)
    }

    // ---- worker side -------------------------------------------------------------------------

    fn settle_keys(&self, shard: usize) -> [String; 9] {
        let k = &self.shards[shard];
        [
            k.active(),
            k.ready(),
            k.delayed(),
            k.dead(),
            k.jobs(),
            k.meta(),
            k.errors(),
            k.stats(),
            k.wake(),
        ]
    }

    /// Completes `acks` (all on `shard`), recovers expired leases, promotes due jobs and leases
    /// up to `want` ready jobs, in one script call. Returns the jobs, how long until something is
    /// due (ms, Redis clock) if anything is, and per ack whether it was accepted (false = lease
    /// lost).
    pub(crate) async fn fetch(
        &self,
        shard: usize,
        want: usize,
        lease: Duration,
        acks: &[Lease],
    ) -> Result<Fetched> {
        let k = &self.shards[shard];
        let keys = [
            k.ready(),
            k.delayed(),
            k.active(),
            k.dead(),
            k.jobs(),
            k.meta(),
            k.errors(),
            k.stats(),
            k.done(),
        ];
        let mut cmd = FETCH_JOBS.cmd(&keys);
        cmd.arg(ms(lease))
            .arg(want)
            .arg(RECOVER_LIMIT)
            .arg(PROMOTE_LIMIT)
            .arg(self.opts.keep_completed)
            .arg(self.opts.keep_for.map(ms).unwrap_or(0));
        for l in acks {
            debug_assert_eq!(l.shard, shard, "acks ride on a fetch of their own shard");
            cmd.arg(&l.id).arg(&l.token);
        }
        let reply: Value = self.client.eval(&cmd, &FETCH_JOBS).await?;
        let bad = || Error::new(ErrorKind::Redis, "unexpected reply from fetch_jobs");
        type Leased = (String, Vec<u8>, u32, String, u64);
        let (leased, wake, acked): (Vec<Leased>, i64, Vec<i64>) =
            redis::from_redis_value(reply).map_err(|_| bad())?;
        if acked.len() != acks.len() {
            return Err(bad());
        }
        let acked = acked.into_iter().map(|r| r == 1).collect();
        let mut jobs = Vec::with_capacity(leased.len());
        for (id, env, attempt, token, enqueued_at) in leased {
            let env = match Envelope::decode(&env) {
                Ok(env) => env,
                Err(e) => {
                    // Unreadable: dead-letter it rather than loop on it.
                    log::error!("tideq: job {id:?} has an unreadable envelope: {e}");
                    let lease = Lease {
                        id: id.clone(),
                        token,
                        attempt,
                        backoff: Backoff::fixed(0),
                        shard,
                    };
                    let _ = self
                        .fail_lease(&lease, &format!("unreadable envelope: {e}"))
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
                queue: self.name.to_string(),
                timeout: env.timeout_ms.map(Duration::from_millis),
                backoff: env.backoff,
                token,
                shard,
            });
        }
        Ok(Fetched {
            jobs,
            wake_in: u64::try_from(wake).ok(),
            acked,
        })
    }

    fn lease_lost(&self, id: &str) -> Error {
        Error::new(
            ErrorKind::LeaseLost,
            format!("the lease on job {id:?} was lost (expired and redelivered)"),
        )
    }

    /// Marks a leased job done. `LEASE_LOST` if the lease expired and the job was redelivered.
    pub async fn complete(&self, job: &Job) -> Result<()> {
        match self.complete_leases(&[job.lease()]).await?[0] {
            true => Ok(()),
            false => Err(self.lease_lost(&job.id)),
        }
    }

    /// Completes many leased jobs in one script call (the worker batches its acks). Per job:
    /// true = completed, false = its lease was lost.
    pub(crate) async fn complete_leases(&self, leases: &[Lease]) -> Result<Vec<bool>> {
        let mut out = vec![false; leases.len()];
        for shard in 0..self.shards.len() {
            let idx: Vec<usize> = (0..leases.len())
                .filter(|&i| leases[i].shard == shard)
                .collect();
            if idx.is_empty() {
                continue;
            }
            let k = &self.shards[shard];
            let keys = [
                k.active(),
                k.done(),
                k.jobs(),
                k.meta(),
                k.errors(),
                k.stats(),
            ];
            let mut cmd = COMPLETE_JOBS.cmd(&keys);
            cmd.arg(self.opts.keep_completed)
                .arg(self.opts.keep_for.map(ms).unwrap_or(0));
            for &i in &idx {
                cmd.arg(&leases[i].id).arg(&leases[i].token);
            }
            let res: Vec<i64> = self.client.eval(&cmd, &COMPLETE_JOBS).await?;
            for (i, r) in idx.into_iter().zip(res) {
                out[i] = r == 1;
            }
        }
        Ok(out)
    }

    /// Fails a leased attempt: retried after the job's backoff, or dead-lettered after
    /// `max_attempts`. Returns true when dead-lettered.
    pub async fn fail(&self, job: &Job, error: &str) -> Result<bool> {
        self.fail_lease(&job.lease(), error).await
    }

    pub(crate) async fn fail_lease(&self, lease: &Lease, error: &str) -> Result<bool> {
        let delay = lease.backoff.delay_ms(lease.attempt);
        let mut text = error.to_string();
        if text.len() > self.opts.max_error_len {
            let mut cut = self.opts.max_error_len;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            text.truncate(cut);
            text.push('…');
        }
        let mut cmd = SETTLE_JOB.cmd(&self.settle_keys(lease.shard));
        cmd.arg("fail")
            .arg(&lease.id)
            .arg(&lease.token)
            .arg(text)
            .arg(delay);
        match self.client.eval::<i64>(&cmd, &SETTLE_JOB).await? {
            -1 => Err(self.lease_lost(&lease.id)),
            n => Ok(n == 2),
        }
    }

    /// Returns a leased job to the front of the ready list without counting the attempt
    /// (graceful shutdown).
    pub async fn release(&self, job: &Job) -> Result<()> {
        self.release_lease(&job.lease()).await
    }

    pub(crate) async fn release_lease(&self, lease: &Lease) -> Result<()> {
        let mut cmd = SETTLE_JOB.cmd(&self.settle_keys(lease.shard));
        cmd.arg("release").arg(&lease.id).arg(&lease.token);
        match self.client.eval::<i64>(&cmd, &SETTLE_JOB).await? {
            -1 => Err(self.lease_lost(&lease.id)),
            _ => Ok(()),
        }
    }

    /// Pushes the lease deadline to `lease` from now (Redis clock).
    pub async fn extend(&self, job: &Job, lease: Duration) -> Result<()> {
        self.extend_lease(&job.lease(), lease).await
    }

    /// Extends many leases, one pipeline per shard; per lease, false = lost.
    pub(crate) async fn extend_leases(
        &self,
        leases: &[Lease],
        lease: Duration,
    ) -> Result<Vec<bool>> {
        let mut out = vec![true; leases.len()];
        for shard in 0..self.shards.len() {
            let idx: Vec<usize> = (0..leases.len())
                .filter(|&i| leases[i].shard == shard)
                .collect();
            if idx.is_empty() {
                continue;
            }
            let k = &self.shards[shard];
            let cmds: Vec<redis::Cmd> = idx
                .iter()
                .map(|&i| {
                    let mut cmd = EXTEND_LEASE.cmd(&[k.active(), k.meta()]);
                    cmd.arg(&leases[i].id).arg(&leases[i].token).arg(ms(lease));
                    cmd
                })
                .collect();
            let replies = self.client.pipeline(&cmds).await?;
            for (i, v) in idx.into_iter().zip(replies) {
                out[i] = !matches!(v, Value::Int(-1));
            }
        }
        Ok(out)
    }

    pub(crate) async fn extend_lease(&self, l: &Lease, lease: Duration) -> Result<()> {
        let k = &self.shards[l.shard];
        let mut cmd = EXTEND_LEASE.cmd(&[k.active(), k.meta()]);
        cmd.arg(&l.id).arg(&l.token).arg(ms(lease));
        match self.client.eval::<i64>(&cmd, &EXTEND_LEASE).await? {
            -1 => Err(self.lease_lost(&l.id)),
            _ => Ok(()),
        }
    }
}
