//! The lease renewer: its own thread, connection and small runtime, so no handler can starve
//! it; it also looks for the running jobs' cancel requests. And the worker's report and registry
//! entry, which fetches and renewals carry.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::oneshot;

use crate::client::Client;

use crate::job::Lease;
use crate::jobs::Queue;
use crate::registry::Registration;

use super::*;

/// Renews every running job's lease each `lease / 3` (at most 15 s), in one pipeline (which
/// says the worker is alive too), and looks for cancel requests of the running jobs every
/// [`CANCEL_CHECK`], from a thread of its own with its own connection and a small runtime. Nothing the handlers do can starve it: not a
/// Python handler holding the GIL, not a Node handler blocking the event loop, and not a Rust
/// handler blocking a thread of the worker's tokio runtime (tasks queued behind a blocked thread
/// wait for it, and a shared connection's driver task can be one of them).
/// Dropping the returned sender stops the thread.
pub(super) fn spawn_renewer(
    queue: &Queue,
    in_flight: InFlight,
    lease: Duration,
    reg: Arc<Registration>,
) -> oneshot::Sender<()> {
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    let queue = queue.clone();
    let spawned = std::thread::Builder::new()
        .name("tideq-renewer".into())
        .spawn(move || {
            let rt = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => {
                    log::error!("tideq: could not start the lease renewer: {e}");
                    return;
                }
            };
            rt.block_on(async move {
                // A client of its own: its connection is driven on this thread's runtime.
                let queue = match Client::new(queue.client.config().clone()) {
                    Ok(client) => queue.with_client(client),
                    Err(e) => {
                        log::error!("tideq: could not start the lease renewer: {e}");
                        return;
                    }
                };
                // Its calls fail rather than wait out a cluster failover: a shard that is down
                // must not hold up the renewal of the others' leases.
                tokio::select! {
                    _ = stop_rx => {}
                    _ = crate::client::without_failover_wait(renew(&queue, &in_flight, lease, &reg)) => {}
                }
            });
        });
    if let Err(e) = spawned {
        log::error!("tideq: could not start the lease renewer thread: {e}");
    }
    stop_tx
}

/// How often a worker running jobs looks for their cancel requests: one `SMISMEMBER` per shard,
/// so a request reaches the handler within a second (no call while no job runs).
pub(super) const CANCEL_CHECK: Duration = Duration::from_millis(500);

pub(super) async fn renew(
    queue: &Queue,
    in_flight: &InFlight,
    lease: Duration,
    reg: &Registration,
) {
    // At least every REPORT_EVERY too: each renewal says the worker is alive, and a worker with
    // a long lease must still be seen within ALIVE_FOR while it runs jobs.
    let every = (lease / 3).min(crate::metrics::REPORT_EVERY);
    let mut tick = tokio::time::interval(every.min(CANCEL_CHECK));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tick.tick().await;
    let mut next_renewal = tokio::time::Instant::now() + every;
    loop {
        tick.tick().await;
        let (keys, held): (Vec<u64>, Vec<Lease>) = in_flight
            .lock()
            .unwrap()
            .iter()
            .map(|(k, r)| (*k, r.lease.clone()))
            .unzip();
        if held.is_empty() {
            next_renewal = tokio::time::Instant::now() + every;
            continue;
        }
        // Each shard on its own and at once: one whose node is down holds up only its jobs.
        let shards = by_shard(keys, held);
        let looked = shards.iter().map(|(keys, held)| async move {
            match queue.cancel_requested(held).await {
                Ok(found) => {
                    let running = in_flight.lock().unwrap();
                    for (key, _) in keys.iter().zip(found).filter(|(_, f)| *f) {
                        if let Some(r) = running.get(key) {
                            if !r.cancel_requested.swap(true, Ordering::SeqCst) {
                                r.cancel.cancel();
                            }
                        }
                    }
                }
                Err(e) => log::warn!("tideq: could not look for cancel requests: {e}"),
            }
        });
        futures_util::future::join_all(looked).await;
        if tokio::time::Instant::now() < next_renewal {
            continue;
        }
        next_renewal = tokio::time::Instant::now() + every;
        // The renewal also says the worker is alive, and what it runs: a worker busy with long
        // jobs does not fetch (see Queue::workers).
        let entry = running_entry(reg, in_flight);
        let renewed = shards.iter().map(|(keys, held)| {
            let entry = &entry;
            async move {
                match queue
                    .extend_leases(held, lease, Some((&reg.id, entry)))
                    .await
                {
                    Ok(results) => {
                        // A job that ended while the call was on its way is no longer active
                        // (its ack went out with a fetch): refused, but nothing was lost. Only a
                        // job still running has really lost its lease.
                        let running = in_flight.lock().unwrap();
                        for ((l, key), ok) in held.iter().zip(keys).zip(results) {
                            if !ok && running.contains_key(key) {
                                log::warn!(
                                    "tideq: the lease on job {:?} was lost; its result will be \
                                     rejected",
                                    l.id
                                );
                            }
                        }
                    }
                    Err(e) => log::warn!("tideq: could not extend {} lease(s): {e}", held.len()),
                }
            }
        });
        futures_util::future::join_all(renewed).await;
    }
}

/// The running jobs' keys and leases, by shard.
fn by_shard(keys: Vec<u64>, held: Vec<Lease>) -> Vec<(Vec<u64>, Vec<Lease>)> {
    let mut out: std::collections::BTreeMap<usize, (Vec<u64>, Vec<Lease>)> = Default::default();
    for (k, l) in keys.into_iter().zip(held) {
        let e = out.entry(l.shard).or_default();
        e.0.push(k);
        e.1.push(l);
    }
    out.into_values().collect()
}

/// What the next fetch carries: what the handlers took and that this worker is alive, at most
/// every 15 s, and with it the worker's registry entry (who it is and what it runs, see
/// Queue::workers); ("", "") when no report is due.
pub(super) fn next_report(
    metrics: &crate::metrics::WorkerMetrics,
    reg: &Registration,
    in_flight: &InFlight,
) -> (String, String) {
    match metrics.take_report() {
        Some(report) => (report, running_entry(reg, in_flight)),
        None => Default::default(),
    }
}

/// The worker's registry entry with the jobs it holds now.
pub(super) fn running_entry(reg: &Registration, in_flight: &InFlight) -> String {
    let running = in_flight.lock().unwrap();
    reg.entry(running.values().map(|r| r.lease.id.as_str()))
}
