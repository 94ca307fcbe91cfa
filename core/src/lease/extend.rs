//! A lease kept alive: renewals (one job, or a worker's batch with its liveness and the
//! attempts' records) and the cancel requests a worker's renewer looks for alongside.

use std::time::Duration;

use redis::Value;

use crate::error::Result;
use crate::job::{ms, Job, Lease};
use crate::jobs::Queue;
use crate::scripts::EXTEND_LEASE;

impl Queue {
    /// Which of `leases` have a cancel request (`cancel` of an active job), one `SMISMEMBER` per
    /// shard: what a worker's renewer asks twice a second while it runs jobs.
    pub(crate) async fn cancel_requested(&self, leases: &[Lease]) -> Result<Vec<bool>> {
        let mut out = vec![false; leases.len()];
        let mut conn = None;
        for (shard, keys) in self.shards.iter().enumerate() {
            let idx: Vec<usize> = (0..leases.len())
                .filter(|&i| leases[i].shard == shard)
                .collect();
            if idx.is_empty() {
                continue;
            }
            if conn.is_none() {
                conn = Some(self.client.conn().await?);
            }
            let mut cmd = redis::cmd("SMISMEMBER");
            cmd.arg(keys.cancel());
            for &i in &idx {
                cmd.arg(&leases[i].id);
            }
            let found: Vec<i64> = cmd
                .query_async(conn.as_mut().expect("connected above"))
                .await
                .map_err(|e| self.client.err(e))?;
            for (i, f) in idx.into_iter().zip(found) {
                out[i] = f == 1;
            }
        }
        Ok(out)
    }

    /// Pushes the lease deadline to `lease` from now (Redis clock).
    pub async fn extend(&self, job: &Job, lease: Duration) -> Result<()> {
        // A job a test mode runs has no lease to extend.
        if crate::testing::active() && job.token.is_empty() {
            return Ok(());
        }
        self.op("extend", async {
            self.extend_lease(&job.lease(), lease).await
        })
        .await
    }

    /// Extends many leases, one pipeline per shard; per lease, false = lost. With `seen` (a
    /// worker's id and its registry entry), the first call of each shard says the worker is
    /// alive (`extend_lease.lua`; see [`Queue::workers`]). A worker's lease whose attempt is not
    /// recorded yet is recorded as under way (its start and worker, kept should the worker die),
    /// and marked [`Lease::recorded`].
    pub(crate) async fn extend_leases(
        &self,
        leases: &[Lease],
        lease: Duration,
        seen: Option<(&str, &str)>,
    ) -> Result<Vec<bool>> {
        let mut out = vec![true; leases.len()];
        for shard in 0..self.shards.len() {
            let idx: Vec<usize> = (0..leases.len())
                .filter(|&i| leases[i].shard == shard)
                .collect();
            if idx.is_empty() {
                continue;
            }
            let cmds: Vec<redis::Cmd> = idx
                .iter()
                .enumerate()
                .map(|(n, &i)| {
                    let l = &leases[i];
                    let mut cmd = self.script_cmd(shard, &EXTEND_LEASE);
                    cmd.arg(&l.id).arg(&l.token).arg(ms(lease));
                    let record = l.recorded.is_some() && !l.is_recorded() && l.started > 0;
                    match (n, seen) {
                        (0, Some((id, entry))) => cmd.arg(id).arg(entry),
                        _ if record => cmd.arg("").arg(""),
                        _ => &mut cmd,
                    };
                    if record {
                        cmd.arg(l.run_arg());
                    }
                    cmd
                })
                .collect();
            let replies = self.client.pipeline(&cmds).await?;
            for (i, v) in idx.into_iter().zip(replies) {
                out[i] = !matches!(v, Value::Int(-1));
                if let (true, Some(r)) = (out[i], &leases[i].recorded) {
                    r.store(true, std::sync::atomic::Ordering::Relaxed);
                }
            }
        }
        let kept = leases.iter().zip(&out).filter(|(_, ok)| **ok);
        self.limit_renewed(kept.map(|(l, _)| l), lease).await;
        Ok(out)
    }

    pub(crate) async fn extend_lease(&self, l: &Lease, lease: Duration) -> Result<()> {
        let mut cmd = self.script_cmd(l.shard, &EXTEND_LEASE);
        cmd.arg(&l.id).arg(&l.token).arg(ms(lease));
        match self.client.eval::<i64>(&cmd, &EXTEND_LEASE).await? {
            -1 => Err(self.lease_lost(&l.id)),
            _ => {
                self.limit_renewed([l], lease).await;
                Ok(())
            }
        }
    }
}
