//! The job queue's operator calls: inspect a job (`get`), `cancel` one that has not started,
//! list, requeue and purge dead letters, and `stats`.

use std::collections::HashMap;

use redis::Value;

use crate::envelope::Envelope;
use crate::error::{Error, ErrorKind, Result};
use crate::job::{validate_job_id, JobInfo, JobState, JobStats};
use crate::jobs::Queue;
use crate::scripts::{LuaScript, CANCEL_JOB, PURGE_DEAD, REQUEUE_DEAD};

impl Queue {
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
        let mut cmd = self.script_cmd(self.shard_for(id), &CANCEL_JOB);
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

    /// Requeues or purges dead jobs: `id`, or all of them (in calls of at most 1000).
    async fn dead_op(&self, script: &LuaScript, id: Option<&str>) -> Result<u64> {
        if let Some(id) = id {
            validate_job_id(id)?;
        }
        let mut total = 0;
        for shard in 0..self.shards.len() {
            if id.is_some_and(|id| self.shard_for(id) != shard) {
                continue;
            }
            loop {
                let mut cmd = self.script_cmd(shard, script);
                cmd.arg(id.unwrap_or("")).arg(1000);
                let n: u64 = self.client.eval(&cmd, script).await?;
                total += n;
                if id.is_some() || n < 1000 {
                    break;
                }
            }
        }
        Ok(total)
    }

    /// Moves a dead job back to ready with its attempts reset. `JOB_NOT_FOUND` if it is not dead.
    pub async fn requeue(&self, id: &str) -> Result<()> {
        match self.dead_op(&REQUEUE_DEAD, Some(id)).await? {
            0 => Err(Error::new(
                ErrorKind::JobNotFound,
                format!("no dead job {id:?}"),
            )),
            _ => Ok(()),
        }
    }

    /// Requeues every dead job; returns how many.
    pub async fn requeue_all(&self) -> Result<u64> {
        self.dead_op(&REQUEUE_DEAD, None).await
    }

    /// Deletes every dead job; returns how many.
    pub async fn purge(&self) -> Result<u64> {
        self.dead_op(&PURGE_DEAD, None).await
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
}
