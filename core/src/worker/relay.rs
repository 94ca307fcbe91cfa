//! The worker's share of flows: relaying its queue's flow notices to their parents, and settling
//! the flow jobs held past their grace (see `crate::flows`), off the fetch loop, one task per
//! shard at a time.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use crate::jobs::Queue;

/// How often a shard's held flow jobs are looked at (ms, Redis clock).
const SETTLE_EVERY_MS: u64 = 5_000;

/// Per shard: whether a relay task runs, and when held jobs were last looked at.
pub(super) struct FlowUpkeep {
    busy: Vec<AtomicBool>,
    settled: Vec<AtomicU64>,
}

impl FlowUpkeep {
    pub(super) fn new(shards: usize) -> Arc<Self> {
        Arc::new(FlowUpkeep {
            busy: (0..shards).map(|_| AtomicBool::new(false)).collect(),
            settled: (0..shards).map(|_| AtomicU64::new(0)).collect(),
        })
    }

    /// A fetch of `shard` found notices to relay, or held flow jobs (`held`); `now`: its Redis
    /// time. Starts a task unless one runs for the shard.
    pub(super) fn kick(self: &Arc<Self>, queue: &Queue, shard: usize, held: bool, now: u64) {
        if self.busy[shard].swap(true, Ordering::AcqRel) {
            return;
        }
        let settle = held
            && now.saturating_sub(self.settled[shard].load(Ordering::Relaxed)) >= SETTLE_EVERY_MS;
        if settle {
            self.settled[shard].store(now, Ordering::Relaxed);
        }
        let (this, queue) = (self.clone(), queue.clone());
        tokio::spawn(async move {
            let keys = &queue.shards[shard];
            if let Err(e) = crate::workflow::relay(&queue.client, keys).await {
                log::warn!(
                    "tideq: queue {:?}: relaying flow notices failed (retried at the next \
                     fetch): {e}",
                    queue.name()
                );
            }
            if settle {
                if let Err(e) = crate::workflow::settle_held(&queue.client, keys, now).await {
                    log::warn!(
                        "tideq: queue {:?}: settling held flow jobs failed: {e}",
                        queue.name()
                    );
                }
            }
            this.busy[shard].store(false, Ordering::Release);
        });
    }
}
