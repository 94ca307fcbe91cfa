//! The job queue's handle and its producer side: a [`Queue`] (one per queue name, sharded or
//! not), `enqueue` and `enqueue_many`. Delivery is at-least-once: a job is in exactly one state
//! (delayed, ready, active, dead or completed) and leaves Redis only when completed (or purged).
//! The rest of the queue's operations are in `admin.rs` (inspect and repair) and `lease.rs` (the
//! worker's lease protocol); their value types in `job.rs`.

use std::sync::Arc;
use std::time::Duration;

use redis::Value;

use crate::client::Client;
use crate::envelope::{Envelope, ENVELOPE_VERSION};
use crate::error::{Error, ErrorKind, Result};
use crate::job::{
    ms, new_job_id, now_ms, validate_job_id, validate_label, EnqueueOptions, Enqueued,
    QueueOptions, MAX_BATCH, MAX_PRIORITY,
};
use crate::keys::{shard_of, JobKeys};
use crate::scripts::{LuaScript, ENQUEUE_JOBS};

/// Most jobs per enqueue script call; all calls of one `enqueue_many` go in one pipeline.
const ENQUEUE_CHUNK: usize = 500;

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
}

impl Queue {
    /// Runs one public operation, naming the queue and the operation in the errors Redis gives
    /// (see [`crate::error::in_operation`]).
    pub(crate) fn op<'a, T: 'a>(
        &'a self,
        op: &'static str,
        f: impl std::future::Future<Output = Result<T>> + Send + 'a,
    ) -> impl std::future::Future<Output = Result<T>> + Send + 'a {
        crate::error::in_operation(&self.name, op, f)
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
            policy: opts.policy().into(),
            opts,
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
        if let Some(g) = &o.group {
            crate::keys::validate_name("group", g)?;
        }
        let env = Envelope {
            v: ENVELOPE_VERSION,
            id,
            payload: payload.to_vec(),
            created_at: now_ms(),
            max_attempts,
            backoff,
            timeout_ms: timeout.map(ms),
            task: o.task.clone(),
            format: o.format,
        };
        Ok((env, o.delay.map(ms).unwrap_or(0), o.run_at_ms.unwrap_or(0)))
    }

    /// An `EVALSHA` of `script` on `shard`, its keys in the order its contract header lists them.
    pub(crate) fn script_cmd(&self, shard: usize, script: &LuaScript) -> redis::Cmd {
        script.cmd(&self.shards[shard].for_script(script))
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
        if jobs.len() > MAX_BATCH {
            return Err(Error::invalid(format!(
                "enqueue_many takes at most {MAX_BATCH} jobs per call; got {}: send them in parts",
                jobs.len()
            )));
        }
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
            // A group lives on one shard (its order and limits hold there); other jobs by id.
            let shard = match &jobs[i].1.group {
                Some(g) => shard_of(g, self.shards.len()),
                None => self.shard_for(&env.id),
            };
            by_shard[shard].push(i);
        }
        let sends = by_shard
            .iter()
            .enumerate()
            .filter(|(_, idx)| !idx.is_empty())
            .map(|(shard, idx)| {
                let cmds: Vec<redis::Cmd> = idx
                    .chunks(ENQUEUE_CHUNK)
                    .map(|chunk| {
                        let mut cmd = self.script_cmd(shard, &ENQUEUE_JOBS);
                        let remember = self.opts.idempotency_window.is_some_and(|w| !w.is_zero());
                        cmd.arg(chunk.len()).arg(if remember { "1" } else { "0" });
                        for &i in chunk {
                            let (env, delay, run_at) = &prepared[i];
                            let o = &jobs[i].1;
                            let route = match (o.priority, &o.group) {
                                (None, None) => String::new(),
                                (p, g) => {
                                    format!("{}|{}", p.unwrap_or(0), g.as_deref().unwrap_or(""))
                                }
                            };
                            cmd.arg(&env.id)
                                .arg(env.encode())
                                .arg(env.max_attempts)
                                .arg(*delay)
                                .arg(*run_at)
                                .arg(if o.id.is_some() { "1" } else { "0" })
                                .arg(route);
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
        let results = self
            .op("enqueue", futures_util::future::try_join_all(sends))
            .await?;
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
}
