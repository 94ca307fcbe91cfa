//! An operator's actions on one schedule: run it now, pause and resume it (removing it is
//! `remove_schedule`). Each finds the schedule on whichever shard holds it; an unknown name is
//! refused with nothing written.

use super::{Reply, Stored};
use crate::error::{Error, Result};
use crate::job::{validate_label, EnqueueOptions};
use crate::jobs::Queue;
use crate::scripts::{GET_SCHEDULE, PAUSE_SCHEDULE};

impl Queue {
    /// The error for a schedule name the queue does not have.
    fn no_schedule(&self, name: &str) -> Error {
        Error::invalid(format!(
            "queue {:?} has no schedule named {name:?}",
            self.name()
        ))
    }

    /// Enqueues one job of the schedule `name` now, as its next slot would (same payload and
    /// options), without moving its slots: the next one still fires when due. The job's id is
    /// `<name>@run-<ms>`, the current second of the Redis clock, so a second call within that
    /// second (a double click) enqueues nothing more and returns the same id. Works on a paused
    /// schedule too. Returns the job's id; an unknown name is `INVALID_ARGUMENT`, nothing written.
    pub async fn run_schedule(&self, name: &str) -> Result<String> {
        validate_label("schedule name", name)?;
        self.op("run_schedule", async {
            for shard in 0..self.shards.len() {
                let mut cmd = self.script_cmd(shard, &GET_SCHEDULE);
                cmd.arg(name);
                let (now, stored): (u64, Vec<u8>) = self.client.eval(&cmd, &GET_SCHEDULE).await?;
                if stored.is_empty() {
                    continue;
                }
                let (version, spec) = Stored::decode(&stored)?;
                let id = format!("{name}@run-{}", now / 1000 * 1000);
                let opts = EnqueueOptions {
                    id: Some(id.clone()),
                    ..spec.options()
                };
                let payload = self.open_bytes(spec.payload)?;
                let prepared = vec![self.envelope(&payload, &opts, None, None)?];
                // Written only while the schedule is at this version; its slots stay as they are.
                let guard = format!("{version}|||{name}");
                let reply = self
                    .send(shard, &[&opts], &prepared, &[0], &guard, "")
                    .await?;
                if reply.first().map(|r| &r.1) == Some(&Reply::Stale) {
                    return Err(Error::invalid(format!(
                        "schedule {name:?} was changed or removed while it was run: nothing \
                         enqueued; run it again"
                    )));
                }
                return Ok(id);
            }
            Err(self.no_schedule(name))
        })
        .await
    }

    /// Pauses the schedule `name`: it keeps its definition and next slot and does not fire until
    /// [`resume_schedule`](Self::resume_schedule). Declaring it again (`upsert_schedule`) keeps
    /// it paused. Returns false if it was paused already; an unknown name is `INVALID_ARGUMENT`,
    /// nothing written.
    pub async fn pause_schedule(&self, name: &str) -> Result<bool> {
        self.set_schedule_paused("pause_schedule", name, true).await
    }

    /// Resumes the paused schedule `name`: its kept next slot is due again. Slots it passed while
    /// paused are not all run: as after an outage, the latest of them fires once at resume, then
    /// the schedule goes on from its next slot. Returns false if it was not paused; an unknown
    /// name is `INVALID_ARGUMENT`, nothing written.
    pub async fn resume_schedule(&self, name: &str) -> Result<bool> {
        self.set_schedule_paused("resume_schedule", name, false)
            .await
    }

    async fn set_schedule_paused(&self, op: &'static str, name: &str, pause: bool) -> Result<bool> {
        validate_label("schedule name", name)?;
        self.op(op, async {
            for shard in 0..self.shards.len() {
                let mut cmd = self.script_cmd(shard, &PAUSE_SCHEDULE);
                cmd.arg(name).arg(if pause { "1" } else { "0" });
                let n: i64 = self.client.eval(&cmd, &PAUSE_SCHEDULE).await?;
                if n >= 0 {
                    return Ok(n == 1);
                }
            }
            Err(self.no_schedule(name))
        })
        .await
    }
}
