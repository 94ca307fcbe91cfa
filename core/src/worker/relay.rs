//! The worker's share of flows: relaying its queue's flow notices to their parents, and settling
//! the flow jobs held past their grace (see `crate::workflow`), off the fetch loop, one task per
//! shard at a time.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use crate::jobs::Queue;

/// How long after a failed settling of held flow jobs it is tried again (ms).
const RETRY_SETTLE_MS: u64 = 5_000;

/// Per shard: whether a relay task runs, and when the next held flow job's grace ends (Redis ms;
/// 0: look at the next fetch that reports held jobs).
pub(super) struct FlowUpkeep {
    busy: Vec<AtomicBool>,
    next_settle: Vec<AtomicU64>,
}

impl FlowUpkeep {
    pub(super) fn new(shards: usize) -> Arc<Self> {
        Arc::new(FlowUpkeep {
            busy: (0..shards).map(|_| AtomicBool::new(false)).collect(),
            next_settle: (0..shards).map(|_| AtomicU64::new(0)).collect(),
        })
    }

    /// A fetch of `shard` found notices to relay, or held flow jobs (`held`); `now`: its Redis
    /// time. Starts a task unless one runs for the shard. Held jobs are settled once the
    /// earliest one's grace is over (the fetch sleeps until then), all of them that are.
    pub(super) fn kick(self: &Arc<Self>, queue: &Queue, shard: usize, held: bool, now: u64) {
        if self.busy[shard].swap(true, Ordering::AcqRel) {
            return;
        }
        let settle = held && now >= self.next_settle[shard].load(Ordering::Relaxed);
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
                match crate::workflow::settle_held(&queue.client, keys, now).await {
                    // Nothing held any more: the next fetch that reports held jobs looks.
                    Ok((_, next)) => {
                        this.next_settle[shard].store(next.unwrap_or(0), Ordering::Relaxed)
                    }
                    Err(e) => {
                        this.next_settle[shard].store(now + RETRY_SETTLE_MS, Ordering::Relaxed);
                        log::warn!(
                            "tideq: queue {:?}: settling held flow jobs failed (retried in {} \
                             s): {e}",
                            queue.name(),
                            RETRY_SETTLE_MS / 1000
                        )
                    }
                }
            }
            this.busy[shard].store(false, Ordering::Release);
        });
    }
}
