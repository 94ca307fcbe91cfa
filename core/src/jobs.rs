//! The job queue's handle and its producer side: a [`Queue`] (one per queue name, sharded or
//! not), `enqueue` and `enqueue_many`. Delivery is at-least-once: a job is in exactly one state
//! (delayed, ready, active, dead or completed) and leaves Redis only when completed (or purged).
//! The rest of the queue's operations are in `admin.rs` (inspect and repair) and `lease.rs` (the
//! worker's lease protocol); their value types in `job.rs`.

use std::sync::Arc;
use std::time::Duration;

use redis::Value;

use crate::client::Client;
use crate::envelope::{Envelope, TraceContext, ENVELOPE_VERSION};
use crate::error::{Error, ErrorKind, Result};
use crate::job::{
    check_time, ms, new_job_id, now_ms, validate_label, validate_new_job_id, EnqueueOptions,
    Enqueued, QueueOptions, MAX_BATCH, MAX_COST, MAX_PRIORITY,
};
use crate::keys::{shard_of, JobKeys};
use crate::scripts::{LuaScript, ENQUEUE_JOBS};
use crate::shards::ShardCheck;

mod debounce;

/// Most jobs per enqueue script call; all calls of one `enqueue_many` go in one pipeline.
const ENQUEUE_CHUNK: usize = 500;

/// What the enqueue script did with one job (see `enqueue_jobs.lua`'s contract).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Reply {
    Created,
    /// The id existed (or was remembered): nothing written.
    Exists,
    /// The job's dedup or debounce key names this job: nothing created (a debounce replaced it).
    Named(String),
    /// Debounce: the key names another job than expected.
    Retry,
    /// Debounce: the expected job has started; send a new id.
    Fresh,
    /// A schedule's guard failed: nothing written.
    Stale,
}

/// A handle on one job queue. Cheap to clone.
#[derive(Clone)]
pub struct Queue {
    pub(crate) client: Client,
    pub(crate) name: Arc<str>,
    /// One key set per shard (one shard unless built with [`Queue::sharded`]).
    pub(crate) shards: Arc<[JobKeys]>,
    pub(crate) opts: QueueOptions,
    /// `opts`' retention settings as the scripts take them (see `QueueOptions::policy`).
    pub(crate) policy: Arc<str>,
    /// The shard count checked against the one recorded in Redis (`shards.rs`).
    pub(crate) recorded: Arc<ShardCheck>,
    /// The queue's shared limiter, as its fetches found it (`limiter/queue.rs`).
    pub(crate) limit: Arc<crate::limiter::LimitCache>,
}

/// The operations that create the queue record its shard count when none is yet (`shards.rs`):
/// `enqueue` and `enqueue_flow` right before their first write, once their input is checked (so
/// bad input writes nothing), `upsert_schedule` (checked before it starts) at its start. Every
/// other operation only checks it. The worker records it as it starts.
const RECORDED_BY_THE_OP: [&str; 2] = ["enqueue", "enqueue_flow"];

impl Queue {
    /// Runs one public operation, naming the queue and the operation in the errors Redis gives
    /// (see [`crate::error::in_operation`]).
    ///
    /// Checks (or records) the queue's shard count first, once per handle (`shards.rs`).
    pub(crate) fn op<'a, T: 'a>(
        &'a self,
        op: &'static str,
        f: impl std::future::Future<Output = Result<T>> + Send + 'a,
    ) -> impl std::future::Future<Output = Result<T>> + Send + 'a {
        let f = async move {
            // A test mode answers enqueue, get, wait and a job's progress itself, before any
            // call gets here; it refuses the rest, connecting to nothing.
            if crate::testing::active() {
                return Err(crate::testing::refused(op));
            }
            if !RECORDED_BY_THE_OP.contains(&op) {
                self.check_shards(op == "upsert_schedule").await?;
            }
            f.await
        };
        crate::error::in_operation(&self.name, op, f)
    }

    /// Checks this handle's shard count against the one recorded in Redis, recording it when
    /// `write` and none is (`shards.rs`); a different count is `INVALID_ARGUMENT`.
    pub(crate) async fn check_shards(&self, write: bool) -> Result<()> {
        self.recorded
            .ensure(
                &self.client,
                crate::discover::QueueKind::Jobs,
                &self.name,
                self.shards.len(),
                write,
            )
            .await
    }

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

impl Queue {
    pub fn new(client: &Client, name: &str, opts: QueueOptions) -> Result<Self> {
        Self::sharded(client, name, 1, opts)
    }

    /// A queue split in `shards` hash tags (`{<queue>#<i>.<salt>}`, one slot range each), spread over the masters
    /// of a Redis Cluster. A job's shard is fixed by its id (so idempotency, `get` and `cancel`
    /// work), workers serve every shard, `stats` adds them up. Every handle of a queue must use
    /// the same shard count: the first producer or worker records it in Redis, and a handle made
    /// with another count is refused (`INVALID_ARGUMENT`) at its first operation. Changing it
    /// remaps ids: drain the queue first, then delete the record (docs/cluster.md).
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
            policy: opts.policy().into(),
            opts,
            recorded: Default::default(),
            limit: crate::limiter::LimitCache::shared(),
        })
    }

    /// How many shards this queue has.
    pub fn shard_count(&self) -> usize {
        self.shards.len()
    }

    pub(crate) fn shard_for(&self, id: &str) -> usize {
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

    /// The job's envelope, delay and run-at time, after checking every option. `id`: the id the
    /// job gets when the caller gave none (a debounce replacing a waiting job sends that job's).
    /// `ambient`: the trace context the job carries when its options give none
    /// ([`crate::otel::ambient`], looked up once per call).
    pub(crate) fn envelope(
        &self,
        payload: &[u8],
        o: &EnqueueOptions,
        id: Option<&str>,
        ambient: Option<&TraceContext>,
    ) -> Result<(Envelope, u64, u64)> {
        self.client
            .config()
            .check_payload("payload", payload.len())?;
        let id = match (&o.id, id) {
            (Some(id), _) => {
                validate_new_job_id(id)?;
                id.clone()
            }
            (None, Some(id)) => id.to_string(),
            (None, None) => new_job_id(),
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
        check_time("run_at", o.run_at_ms)?;
        check_time("expires_at", o.expires_at_ms)?;
        check_time("delay", o.delay.map(ms))?;
        check_time("expires_after", o.expires_after.map(ms))?;
        let timeout = o.timeout.or(self.opts.timeout);
        if timeout.is_some_and(|t| t.as_millis() == 0) {
            return Err(Error::invalid("timeout must be at least 1 ms"));
        }
        if let Some(task) = &o.task {
            validate_label("task name", task)?;
        }
        if let Some(p) = o.priority {
            if p == 0 || p > MAX_PRIORITY {
                return Err(Error::invalid(format!(
                    "priority must be 1 (first) to {MAX_PRIORITY} (last), got {p}"
                )));
            }
        }
        if let Some(c) = o.cost {
            if c == 0 || c > MAX_COST {
                return Err(Error::invalid(format!(
                    "cost must be 1 to {MAX_COST} tokens, got {c}"
                )));
            }
        }
        if let Some(g) = &o.group {
            crate::keys::validate_name("group", g)?;
            if self.shards.len() > 1 {
                refuse_sharded_group_key(o)?;
            }
        }
        let mut delay = o.delay.map(ms).unwrap_or(0);
        if let Some(t) = &o.trace {
            crate::envelope::validate_trace_context(t)?;
        }
        if o.expires_after.is_some() && o.expires_at_ms.is_some() {
            return Err(Error::invalid("give expires_after or expires_at, not both"));
        }
        if o.expires_after.is_some_and(|t| t.as_millis() == 0) {
            return Err(Error::invalid("expires_after must be at least 1 ms"));
        }
        if let Some(d) = &o.dedup {
            validate_label("dedup key", &d.key)?;
            if d.ttl.is_some_and(|t| t.as_millis() == 0) {
                return Err(Error::invalid("dedup ttl must be at least 1 ms"));
            }
            if o.debounce.is_some() {
                return Err(Error::invalid("give dedup or debounce, not both"));
            }
        }
        if let Some(d) = &o.debounce {
            validate_label("debounce key", &d.key)?;
            if d.delay.as_millis() == 0 {
                return Err(Error::invalid("debounce delay must be at least 1 ms"));
            }
            if o.delay.is_some() || o.run_at_ms.is_some() {
                return Err(Error::invalid(
                    "debounce sets the job's delay: give no delay or run_at with it",
                ));
            }
            if o.id.is_some() {
                return Err(Error::invalid(
                    "debounce picks the job's id: give no id with it",
                ));
            }
            delay = ms(d.delay);
        }
        let env = Envelope {
            v: ENVELOPE_VERSION,
            id,
            payload: self.seal_bytes(payload)?.into_owned(),
            created_at: now_ms(),
            max_attempts,
            backoff,
            timeout_ms: timeout.map(ms),
            task: o.task.clone(),
            format: o.format,
            trace: o.trace.clone().or_else(|| ambient.cloned()),
            args_from: None,
        };
        Ok((env, delay, o.run_at_ms.unwrap_or(0)))
    }

    /// An `EVALSHA` of `script` on `shard`, its keys in the order its contract header lists them.
    pub(crate) fn script_cmd(&self, shard: usize, script: &LuaScript) -> redis::Cmd {
        script.cmd(&self.shards[shard].for_script(script))
    }

    /// The shard a job goes to: its group's (a group's order and limits hold on one shard), else
    /// its dedup or debounce key's (the key is looked up there), else its id's.
    pub(crate) fn shard_for_job(&self, id: &str, o: &EnqueueOptions) -> usize {
        let n = self.shards.len();
        if let Some(g) = &o.group {
            shard_of(g, n)
        } else if let Some(d) = &o.dedup {
            shard_of(&d.key, n)
        } else if let Some(d) = &o.debounce {
            shard_of(&d.key, n)
        } else {
            shard_of(id, n)
        }
    }

    /// Enqueues one job. With an `id` that already exists, nothing is written and
    /// `created` is false; with a dedup key that names a job, nothing is written and `id` is
    /// that job's.
    pub async fn enqueue(
        &self,
        payload: impl AsRef<[u8]>,
        opts: EnqueueOptions,
    ) -> Result<Enqueued> {
        if opts.debounce.is_some() && !crate::testing::active() {
            return self
                .op(
                    "enqueue",
                    Box::pin(self.enqueue_debounced(payload.as_ref(), &opts)),
                )
                .await;
        }
        let mut v = self.enqueue_many(&[(payload, opts)]).await?;
        Ok(v.remove(0))
    }

    /// Enqueues many jobs in one round trip. All jobs are validated first: on bad input nothing
    /// is written.
    pub async fn enqueue_many<P: AsRef<[u8]>>(
        &self,
        jobs: &[(P, EnqueueOptions)],
    ) -> Result<Vec<Enqueued>> {
        if jobs.len() > MAX_BATCH {
            return Err(Error::invalid(format!(
                "enqueue_many takes at most {MAX_BATCH} jobs per call; got {}: send them in parts",
                jobs.len()
            )));
        }
        let ambient = crate::otel::ambient(jobs.iter().map(|(_, o)| o));
        let mut prepared = Vec::with_capacity(jobs.len());
        for (i, (payload, o)) in jobs.iter().enumerate() {
            let env = if o.debounce.is_some() && jobs.len() > 1 {
                Err(Error::invalid(
                    "debounce applies to enqueue (one job at a time), not enqueue_many",
                ))
            } else {
                self.envelope(payload.as_ref(), o, None, ambient.as_ref())
            };
            prepared.push(env.map_err(|e| {
                if jobs.len() > 1 {
                    e.context(&format!("job {i}"))
                } else {
                    e
                }
            })?);
        }
        if crate::testing::active() {
            if let Some(mode) = crate::testing::current() {
                let opts: Vec<&EnqueueOptions> = jobs.iter().map(|(_, o)| o).collect();
                // A test mode keeps its records in memory, never in Redis: in clear, so its
                // assertions read the arguments as given.
                if self.opts.encryption.is_some() {
                    for (env, _, _) in prepared.iter_mut() {
                        env.payload = self.open_bytes(std::mem::take(&mut env.payload))?;
                    }
                }
                return mode.enqueue(self, &opts, prepared).await;
            }
        }
        if jobs.len() == 1 && jobs[0].1.debounce.is_some() {
            let e = self.enqueue_debounced(jobs[0].0.as_ref(), &jobs[0].1);
            return Ok(vec![self.op("enqueue", Box::pin(e)).await?]);
        }
        let opts: Vec<&EnqueueOptions> = jobs.iter().map(|(_, o)| o).collect();
        let replies = self
            .op("enqueue", Box::pin(self.send_all(&opts, &prepared, "")))
            .await?;
        Ok(prepared
            .into_iter()
            .zip(replies)
            .map(|((env, _, _), reply)| match reply {
                Reply::Named(id) => Enqueued { id, created: false },
                r => Enqueued {
                    id: env.id,
                    created: r == Reply::Created,
                },
            })
            .collect())
    }

    /// Sends prepared jobs, each to its shard (shards in parallel, each shard's chunks in one
    /// pipeline); the script's reply per job, in order. `guard`: a schedule's (see
    /// `schedule.rs`).
    pub(crate) async fn send_all(
        &self,
        jobs: &[&EnqueueOptions],
        prepared: &[(Envelope, u64, u64)],
        guard: &str,
    ) -> Result<Vec<Reply>> {
        self.check_shards(true).await?;
        let mut by_shard: Vec<Vec<usize>> = vec![Vec::new(); self.shards.len()];
        for (i, (env, _, _)) in prepared.iter().enumerate() {
            by_shard[self.shard_for_job(&env.id, jobs[i])].push(i);
        }
        let sends = by_shard
            .iter()
            .enumerate()
            .filter(|(_, idx)| !idx.is_empty())
            .map(|(shard, idx)| Box::pin(self.send(shard, jobs, prepared, idx, guard, "")));
        let results = futures_util::future::try_join_all(sends).await?;
        let mut out = vec![Reply::Exists; prepared.len()];
        for (i, r) in results.into_iter().flatten() {
            out[i] = r;
        }
        Ok(out)
    }

    /// Sends the jobs `idx` of `prepared` to `shard`: chunks of them in one pipeline.
    pub(crate) async fn send(
        &self,
        shard: usize,
        jobs: &[&EnqueueOptions],
        prepared: &[(Envelope, u64, u64)],
        idx: &[usize],
        guard: &str,
        expect: &str,
    ) -> Result<Vec<(usize, Reply)>> {
        let remember = self.opts.idempotency_window.is_some_and(|w| !w.is_zero());
        let cmds: Vec<redis::Cmd> = idx
            .chunks(ENQUEUE_CHUNK)
            .map(|chunk| {
                // Plain jobs (most bulk enqueues) leave out the six values that would all be
                // defaults: each value costs Redis work (see enqueue_jobs.lua).
                let full = chunk.iter().any(|&i| !is_plain(jobs[i], &prepared[i]));
                let mut cmd = self.script_cmd(shard, &ENQUEUE_JOBS);
                cmd.arg(chunk.len())
                    .arg(if remember { "1" } else { "0" })
                    .arg(guard)
                    .arg(if full { 10 } else { 4 });
                for &i in chunk {
                    let (env, delay, run_at) = &prepared[i];
                    let o = jobs[i];
                    cmd.arg(&env.id)
                        .arg(env.encode())
                        .arg(env.max_attempts)
                        .arg(if o.id.is_some() { "1" } else { "0" });
                    if !full {
                        continue;
                    }
                    let route = crate::scripts::encoding::route_arg(o.priority, o.group.as_deref());
                    let dedup = match (&o.dedup, &o.debounce) {
                        (Some(d), _) => format!("d|{}|{}", d.ttl.map(ms).unwrap_or(0), d.key),
                        (None, Some(d)) => format!("b|{}|{expect}{}", expect.len(), d.key),
                        (None, None) => String::new(),
                    };
                    cmd.arg(*delay)
                        .arg(*run_at)
                        .arg(route)
                        .arg(dedup)
                        .arg(crate::scripts::encoding::expiry_arg(
                            o.expires_after.map(ms),
                            o.expires_at_ms,
                        ))
                        .arg(cost_arg(o.cost));
                }
                cmd
            })
            .collect();
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
        let mut out = Vec::with_capacity(idx.len());
        for reply in replies {
            let items: Vec<Value> =
                redis::from_redis_value(reply).map_err(|e| self.client.err(e.into()))?;
            for v in items {
                out.push(match v {
                    Value::Int(1) => Reply::Created,
                    Value::Int(-1) => Reply::Retry,
                    Value::Int(-2) => Reply::Fresh,
                    Value::Int(-3) => Reply::Stale,
                    Value::Int(_) => Reply::Exists,
                    v => Reply::Named(
                        redis::from_redis_value(v).map_err(|e| self.client.err(e.into()))?,
                    ),
                });
            }
        }
        Ok(idx.iter().copied().zip(out).collect())
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
}

/// A job ready at once with no route, dedup or debounce key, deadline or cost: the enqueue
/// script's short form takes it (`enqueue_jobs.lua`, ARGV[4]).
fn is_plain(o: &EnqueueOptions, (_, delay, run_at): &(Envelope, u64, u64)) -> bool {
    *delay == 0
        && *run_at == 0
        && o.priority.is_none()
        && o.group.is_none()
        && o.dedup.is_none()
        && o.debounce.is_none()
        && o.expires_after.is_none()
        && o.expires_at_ms.is_none()
        && !matches!(o.cost, Some(c) if c != 1)
}

/// On a sharded queue a grouped job lives on its group's shard, where an id or a dedup or
/// debounce key given with it could be checked only: the same id with another group would make a
/// second job. Refused rather than unique per shard.
fn refuse_sharded_group_key(o: &EnqueueOptions) -> Result<()> {
    let what = if o.id.is_some() {
        "an id"
    } else if o.dedup.is_some() {
        "a dedup key"
    } else if o.debounce.is_some() {
        "a debounce key"
    } else {
        return Ok(());
    };
    Err(Error::invalid(format!(
        "a job with a group on a sharded queue cannot take {what}: the group picks the job's \
         shard, so {what} would be unique on that shard only; leave out the group or {what}, or \
         use a queue of one shard"
    )))
}

/// A job's cost as the enqueue scripts take it: "" for 1 (nothing stored), else the number.
pub(crate) fn cost_arg(cost: Option<u32>) -> String {
    match cost {
        Some(c) if c != 1 => c.to_string(),
        _ => String::new(),
    }
}
