//! A queue that names a shared limiter ([`Queue::set_limiter`]): every start of its jobs takes
//! from the limiter, across its shards, its workers and the other queues that name it.
//!
//! A queue's jobs and a limiter live in different hash slots (on a Redis Cluster, on different
//! nodes), so no one script can do both. Each fetch is therefore wrapped (`limit_batch.lua`):
//! take room for up to the jobs wanted, fetch at most that many (the fetch script refuses to
//! lease for a queue whose limiter the caller did not take from), then settle: a concurrency
//! limiter's reserved slots become one holder per job leased, `"<queue shard base><id>.<lease
//! token>"`, renewed with the job's lease and given back when it ends (or when its lease runs
//! out, should its worker die); room taken but not used goes back. A queue without a limiter pays
//! one more field in the fetch's settings read, and nothing else.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::error::{Error, ErrorKind, Result};
use crate::job::{ms, Job, Lease};
use crate::jobs::Queue;
use crate::keys::{validate_name, LimiterKeys};
use crate::scripts::LIMIT_BATCH;

/// What a queue handle knows of its queue's limiter, from the fetches' replies; and the most
/// jobs a fetch should take from one group that names a limiter (0: no cap), learnt from the
/// room its limiters had (see `limiter/group.rs`).
#[derive(Debug, Default)]
pub(crate) struct LimitCache(Mutex<Option<Known>>, AtomicUsize);

#[derive(Debug, Clone)]
struct Known {
    name: Arc<str>,
    /// A concurrency limiter (its holders are given back when their jobs end); learnt from the
    /// first take.
    concurrent: bool,
}

/// Room taken from a limiter for one fetch.
pub(crate) struct Grant {
    pub name: Arc<str>,
    prefix: String,
    pub granted: usize,
    concurrent: bool,
    /// When nothing was granted: how long until the limiter may have room.
    pub retry: Option<Duration>,
}

impl Queue {
    /// Makes every start of this queue's jobs take from the shared limiter `name` (defined with
    /// [`Limiter`](crate::Limiter)), on every shard; `None` stops it. A concurrency limiter counts
    /// the jobs running (each holds a slot until it ends, or until its lease runs out should its
    /// worker die), a window the starts in its window, a bucket one token a start. Jobs over the
    /// limit stay ready in their place, and an idle worker looks again when the limiter may have
    /// room. Several queues naming one limiter share it. `INVALID_ARGUMENT`, with nothing
    /// written, for a limiter never defined or a bad name.
    pub async fn set_limiter(&self, name: Option<&str>) -> Result<()> {
        let value = match name {
            Some(n) => self.defined_limiter(n).await?,
            None => String::new(),
        };
        self.set_control("set_limiter", "queue", &[("limiter", value)])
            .await?;
        *self.limit.0.lock().unwrap() = name.map(|n| Known {
            name: n.into(),
            concurrent: false,
        });
        Ok(())
    }

    /// `name`, when a limiter of that name is defined; else `INVALID_ARGUMENT` (nothing written).
    pub(crate) async fn defined_limiter(&self, name: &str) -> Result<String> {
        let keys = LimiterKeys::new(self.client.config().prefix(), name)?;
        let mut conn = self.client.conn().await?;
        let kind: Option<String> = redis::cmd("HGET")
            .arg(keys.lim())
            .arg("kind")
            .query_async(&mut conn)
            .await
            .map_err(|e| self.client.err(e))?;
        if kind.is_none() {
            return Err(Error::invalid(format!(
                "no limiter named {name:?}: define it first (concurrent, window or bucket)"
            )));
        }
        Ok(name.to_string())
    }

    /// The shared limiter this queue's starts take from, if any ([`set_limiter`](Self::set_limiter)).
    pub async fn limiter_name(&self) -> Result<Option<String>> {
        self.op("limiter_name", async {
            let mut conn = self.client.conn().await?;
            let name: Option<String> = redis::cmd("HGET")
                .arg(self.shards[0].cfg())
                .arg("limiter")
                .query_async(&mut conn)
                .await
                .map_err(|e| self.client.err(e))?;
            Ok(name)
        })
        .await
    }

    /// The limiter a fetch's reply named ("" none): remembered for the next fetches.
    pub(crate) fn limiter_seen(&self, name: &str) {
        let mut known = self.limit.0.lock().unwrap();
        match (&*known, name) {
            (None, "") => {}
            (Some(k), n) if &*k.name == n => {}
            (_, "") => *known = None,
            (_, n) => {
                *known = Some(Known {
                    name: n.into(),
                    concurrent: false,
                })
            }
        }
    }

    /// Takes room for up to `want` starts from the queue's limiter, if it has one (as far as this
    /// handle knows: a fetch that finds one it was not told of leases nothing and names it).
    pub(crate) async fn limit_take(&self, want: usize, lease: Duration) -> Result<Option<Grant>> {
        let Some(known) = self.limit.0.lock().unwrap().clone() else {
            return Ok(None);
        };
        let prefix = format!("r{:016x}:", fastrand::u64(..));
        let args = [
            "take".to_string(),
            want.to_string(),
            ms(lease).to_string(),
            prefix.clone(),
        ];
        let (kind, granted, retry): (String, usize, u64) =
            self.limit_call(&known.name, &args).await?;
        if kind.is_empty() {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "queue {:?} takes from limiter {:?}, which is not defined: define it, or \
                     set_limiter(None)",
                    self.name(),
                    &*known.name
                ),
            ));
        }
        let concurrent = kind == "concurrent";
        if let Some(k) = self.limit.0.lock().unwrap().as_mut() {
            if k.name == known.name {
                k.concurrent = concurrent;
            }
        }
        Ok(Some(Grant {
            name: known.name,
            prefix,
            granted,
            concurrent,
            retry: (granted == 0).then(|| Duration::from_millis(retry.max(1))),
        }))
    }

    /// After the fetch a grant was for: a concurrency limiter's holders for the jobs leased, and
    /// what was not used given back. A failure is logged: the jobs run, and the reserved room
    /// comes back when its lease runs out.
    pub(crate) async fn limit_settle(&self, grant: &Grant, jobs: &[Job], lease: Duration) {
        if grant.granted == 0 || (!grant.concurrent && jobs.len() >= grant.granted) {
            return;
        }
        let mut args = vec![
            "settle".to_string(),
            grant.prefix.clone(),
            grant.granted.to_string(),
            jobs.len().to_string(),
            ms(lease).to_string(),
        ];
        if grant.concurrent {
            args.extend(jobs.iter().map(|j| self.holder(j.shard, &j.id, &j.token)));
        }
        if let Err(e) = self.limit_call::<i64>(&grant.name, &args).await {
            log::warn!(
                "tideq: queue {:?}: limiter {:?} not settled (its room comes back with the \
                 lease): {e}",
                self.name(),
                &*grant.name
            );
        }
    }

    /// Gives back the slots of jobs that ended (a concurrency limiter only; else nothing).
    pub(crate) async fn limit_ended<'a>(&self, leases: impl IntoIterator<Item = &'a Lease>) {
        self.limit_holders("release", None, leases).await
    }

    /// Renews the slots of jobs whose leases were renewed for `lease`.
    pub(crate) async fn limit_renewed<'a>(
        &self,
        leases: impl IntoIterator<Item = &'a Lease>,
        lease: Duration,
    ) {
        self.limit_holders("extend", Some(lease), leases).await
    }

    /// `op` on the holders of `leases`: the queue's concurrency limiter's, and each group
    /// limiter's (one call per limiter).
    async fn limit_holders<'a>(
        &self,
        op: &str,
        lease: Option<Duration>,
        leases: impl IntoIterator<Item = &'a Lease>,
    ) {
        let queue = match &*self.limit.0.lock().unwrap() {
            Some(k) if k.concurrent => Some(k.name.clone()),
            _ => None,
        };
        let mut calls: Vec<(Arc<str>, Vec<String>)> = Vec::new();
        let mut add =
            |name: &Arc<str>, holder: String| match calls.iter_mut().find(|(n, _)| n == name) {
                Some((_, hs)) => hs.push(holder),
                None => calls.push((name.clone(), vec![holder])),
            };
        for l in leases {
            if queue.is_none() && l.group_limit.is_none() {
                continue;
            }
            let holder = self.holder(l.shard, &l.id, &l.token);
            // A group naming the queue's own limiter shares its holder.
            if let Some(g) = l
                .group_limit
                .as_ref()
                .filter(|g| Some(*g) != queue.as_ref())
            {
                add(g, holder.clone());
            }
            if let Some(q) = &queue {
                add(q, holder);
            }
        }
        for (name, holders) in calls {
            let mut args = vec![op.to_string()];
            args.extend(lease.map(|l| ms(l).to_string()));
            args.extend(holders);
            if let Err(e) = self.limit_call::<i64>(&name, &args).await {
                log::warn!(
                    "tideq: queue {:?}: limiter {name:?}: {op} failed (slots come back when their \
                     lease runs out): {e}",
                    self.name()
                );
            }
        }
    }

    /// A job delivery's holder token: unique to the queue shard, the job and the delivery.
    pub(super) fn holder(&self, shard: usize, id: &str, token: &str) -> String {
        format!("{}{id}.{token}", self.shards[shard].base())
    }

    pub(super) async fn limit_call<T: redis::FromRedisValue>(
        &self,
        name: &str,
        args: &[String],
    ) -> Result<T> {
        validate_name("limiter", name)?;
        let keys = LimiterKeys::new(self.client.config().prefix(), name)?;
        let mut cmd = LIMIT_BATCH.cmd(&keys.for_script(&LIMIT_BATCH));
        cmd.arg(args);
        self.client
            .eval(&cmd, &LIMIT_BATCH)
            .await
            .map_err(|e| e.context(&format!("limiter {name:?}")))
    }
}

impl LimitCache {
    pub(crate) fn shared() -> Arc<Self> {
        Arc::default()
    }

    /// The most jobs a fetch takes from one group that names a limiter (0: no cap).
    pub(crate) fn group_cap(&self) -> usize {
        self.1.load(Ordering::Relaxed)
    }

    /// A limiter had room for `granted` of `asked` jobs of its groups: a fetch takes at most
    /// that many (at least 1) from such a group next time; when it had room for all, the cap
    /// doubles (and goes past the most a fetch leases).
    pub(crate) fn group_room_seen(&self, asked: usize, granted: usize) {
        let cap = self.group_cap();
        let next = if granted < asked {
            granted.max(1)
        } else if cap == 0 || asked < cap {
            cap
        } else if cap * 2 >= crate::job::MAX_FETCH {
            0
        } else {
            cap * 2
        };
        self.1.store(next, Ordering::Relaxed);
    }
}
