//! A group that names a shared limiter ([`Queue::set_group_limiter`]): every start of the
//! group's jobs takes from the limiter, whichever queue the group is in.
//!
//! A queue's groups and a limiter live in different hash slots, and a fetch cannot know which
//! groups it will take jobs from before it runs. So the fetch leases as it always does and names,
//! of the jobs it leased, those whose group names a limiter (`fetch_jobs.lua`, its reply's last
//! element). The worker then takes room for them from each limiter, in one call per limiter
//! (`limit_batch.lua` "hold": a concurrency limiter's holder per job, a window's starts, a
//! bucket's tokens, for the first ones it has room for), and gives back the others in one call
//! (`release_job.lua`, a give-back): each goes back to its place in its group, with neither an
//! attempt nor a delivery counted, and its group is held out of the rotation until the limiter
//! may have room, so workers do not spin on it. Handlers never see the jobs given back.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use crate::error::Result;
use crate::job::{ms, Job};
use crate::jobs::Queue;
use crate::keys::validate_name;
use crate::scripts::RELEASE_JOB;

/// How long a group whose limiter could not be read (undefined, or unreachable) is held.
const UNREADABLE_HOLD_MS: u64 = 1000;

impl Queue {
    /// Makes every start of `group`'s jobs take from the shared limiter `name` (defined with
    /// [`Limiter`](crate::Limiter)); `None` stops it. A concurrency limiter counts the group's
    /// jobs running (each holds a slot until it ends, or until its lease runs out should its
    /// worker die), a window the starts in its window, a bucket one token a start. Groups of
    /// several queues (or several groups) naming one limiter share it. A job over the limit is
    /// not run: it keeps its place in its group, no attempt is counted, and the group waits
    /// until the limiter may have room while the queue's other groups go on. `INVALID_ARGUMENT`,
    /// with nothing written, for a limiter never defined or a bad name.
    pub async fn set_group_limiter(&self, group: &str, name: Option<&str>) -> Result<()> {
        validate_name("group", group)?;
        let value = match name {
            Some(n) => self.defined_limiter(n).await?,
            None => String::new(),
        };
        self.set_control(
            "set_group_limiter",
            &format!("group:{group}"),
            &[("limiter", value)],
        )
        .await
    }

    /// After a fetch: takes room from their groups' limiters for the jobs `glim` names (pairs
    /// of job id, limiter name), and gives back those it got none for. Returns the jobs to run.
    pub(crate) async fn group_limits_hold(
        &self,
        shard: usize,
        mut jobs: Vec<Job>,
        glim: Vec<String>,
        lease: Duration,
    ) -> Vec<Job> {
        if glim.is_empty() {
            return jobs;
        }
        let named: HashMap<&str, &str> = glim
            .chunks_exact(2)
            .map(|p| (p[0].as_str(), p[1].as_str()))
            .collect();
        // Per limiter, in order of first appearance: its jobs, in the order they were leased.
        let mut by: Vec<(Arc<str>, Vec<usize>)> = Vec::new();
        for (i, j) in jobs.iter().enumerate() {
            let Some(&name) = named.get(j.id.as_str()) else {
                continue;
            };
            match by.iter_mut().find(|(n, _)| &**n == name) {
                Some((_, idx)) => idx.push(i),
                None => by.push((name.into(), vec![i])),
            }
        }
        let mut back = vec![false; jobs.len()];
        for (name, idx) in by {
            let mut args = vec!["hold".to_string(), ms(lease).to_string()];
            args.extend(
                idx.iter()
                    .map(|&i| self.holder(shard, &jobs[i].id, &jobs[i].token)),
            );
            let (kind, granted, retry) =
                match self.limit_call::<(String, usize, u64)>(&name, &args).await {
                    Ok((kind, ..)) if kind.is_empty() => {
                        log::warn!(
                            "tideq: queue {:?}: a group takes from limiter {name:?}, which is not \
                         defined: its jobs wait (define it, or set_group_limiter(group, None))",
                            self.name()
                        );
                        (kind, 0, UNREADABLE_HOLD_MS)
                    }
                    Ok(r) => r,
                    Err(e) => {
                        log::warn!(
                            "tideq: queue {:?}: limiter {name:?} not read, its groups' jobs go \
                         back: {e}",
                            self.name()
                        );
                        (String::new(), 0, UNREADABLE_HOLD_MS)
                    }
                };
            self.limit.group_room_seen(idx.len(), granted);
            let mut give: Vec<usize> = Vec::new();
            for (n, &i) in idx.iter().enumerate() {
                if n < granted {
                    if kind == "concurrent" {
                        jobs[i].group_limit = Some(name.clone());
                    }
                } else {
                    back[i] = true;
                    give.push(i);
                }
            }
            if !give.is_empty() {
                self.give_back(shard, &jobs, &give, retry.max(1)).await;
            }
        }
        let mut flags = back.into_iter();
        jobs.retain(|_| !flags.next().unwrap_or(false));
        jobs
    }

    /// Gives back leased jobs (of `shard`) that their group's limiter had no room for: each to
    /// its place in its group, nothing counted, the groups held for `hold_ms`. A failure is
    /// logged: the jobs are not run, and come back when their leases run out.
    async fn give_back(&self, shard: usize, jobs: &[Job], idx: &[usize], hold_ms: u64) {
        let mut cmd = self.script_cmd(shard, &RELEASE_JOB);
        let (first, rest) = idx.split_first().expect("some jobs to give back");
        cmd.arg(&jobs[*first].id)
            .arg(&jobs[*first].token)
            .arg(hold_ms);
        for &i in rest {
            cmd.arg(&jobs[i].id).arg(&jobs[i].token);
        }
        if let Err(e) = self.client.eval::<i64>(&cmd, &RELEASE_JOB).await {
            log::warn!(
                "tideq: queue {:?}: {} job(s) over their group's limiter not given back (they \
                 run again when their lease runs out): {e}",
                self.name(),
                idx.len()
            );
        }
    }
}
