//! Acks waiting to be sent: they ride on the next fetch.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

use crate::error::Error;

use crate::job::Lease;
use crate::jobs::Queue;
use crate::lease::Acked;

use super::*;

/// Acks waiting to be sent. The fetch loop takes them along on its next fetch (one script call
/// completes a batch and leases the next); when it has nothing to fetch it sends them on their
/// own. Their results only feed the worker's counters, so a job's task ends with its handler.
pub(super) struct AckQueue {
    pub(super) items: Mutex<Vec<Lease>>,
    pub(super) notify: Notify,
    pub(super) counters: Arc<Counters>,
}

impl AckQueue {
    pub(super) fn new(counters: Arc<Counters>) -> Self {
        AckQueue {
            items: Mutex::new(Vec::new()),
            notify: Notify::new(),
            counters,
        }
    }

    pub(super) fn push(&self, lease: Lease) {
        self.items.lock().unwrap().push(lease);
        self.notify.notify_one();
    }

    pub(super) fn is_empty(&self) -> bool {
        self.items.lock().unwrap().is_empty()
    }

    pub(super) fn take(&self) -> Vec<Lease> {
        std::mem::take(&mut *self.items.lock().unwrap())
    }

    /// The waiting acks `keep` takes; the others go on waiting.
    pub(super) fn take_where(&self, keep: impl Fn(&Lease) -> bool) -> Vec<Lease> {
        let mut items = self.items.lock().unwrap();
        let (taken, left) = std::mem::take(&mut *items).into_iter().partition(keep);
        *items = left;
        taken
    }

    /// Counts what came back; acks that could not be sent wait for the next call.
    pub(super) fn settle(
        &self,
        leases: Vec<Lease>,
        results: std::result::Result<&[Acked], &Error>,
    ) -> bool {
        match results {
            Ok(results) => {
                for (lease, &acked) in leases.iter().zip(results) {
                    match acked {
                        Acked::Completed => {
                            self.counters.completed.fetch_add(1, Ordering::Relaxed);
                        }
                        // A resent ack whose first reply was lost: that first one completed it.
                        Acked::AlreadyCompleted if lease.resent => {
                            self.counters.completed.fetch_add(1, Ordering::Relaxed);
                        }
                        _ => {
                            self.counters.lease_lost.fetch_add(1, Ordering::Relaxed);
                            log::warn!(
                                "tideq: the lease on job {:?} was lost (expired and redelivered); \
                                 its completion was refused",
                                lease.id
                            );
                        }
                    }
                }
                true
            }
            Err(e) if e.is_fatal() => {
                // Retrying cannot help: the jobs are left to their leases (and run again).
                if !leases.is_empty() {
                    log::error!(
                        "tideq: could not complete {} job(s), left to their leases: {e}",
                        leases.len()
                    );
                }
                true
            }
            Err(e) => {
                if !leases.is_empty() {
                    log::warn!(
                        "tideq: could not complete {} job(s), will retry: {e}",
                        leases.len()
                    );
                }
                let mut items = self.items.lock().unwrap();
                items.extend(leases.into_iter().map(|l| Lease { resent: true, ..l }));
                false
            }
        }
    }

    /// Sends every waiting ack (complete_jobs, one call per shard, the shards at once and each
    /// on its own: a shard that is down keeps only its own acks waiting). False if some failed
    /// (those wait for the next try).
    pub(super) async fn flush(&self, queue: &Queue) -> bool {
        let leases = self.take();
        if leases.is_empty() {
            return true;
        }
        let mut by_shard: std::collections::BTreeMap<usize, Vec<Lease>> = Default::default();
        for l in leases {
            by_shard.entry(l.shard).or_default().push(l);
        }
        let sent = by_shard.into_values().map(|leases| async move {
            let results = queue.complete_leases(&leases).await;
            self.settle(leases, results.as_deref())
        });
        futures_util::future::join_all(sent)
            .await
            .into_iter()
            .all(|ok| ok)
    }
}
