//! The fetch loop: up to two fetches in flight, each leasing a batch and carrying the waiting
//! acks, the idle wait, and the time-based upkeep a busy worker asks for.

use futures_util::stream::FuturesUnordered;
use futures_util::StreamExt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::background::{aborted, jittered, stopped, Failure, Outage, Signals};
use tokio::task::JoinSet;

use crate::error::{Error, Result};
use tokio_util::sync::CancellationToken;

use crate::job::Lease;
use crate::jobs::Queue;
use crate::lease::Fetched;
use crate::registry::Registration;
use crate::wait::Waiter;

use super::*;

/// What one fetch hands back to the loop: the slots it reserved (one per leased job) and the result.
pub(super) struct FetchDone {
    shard: usize,
    permits: Vec<OwnedSemaphorePermit>,
    result: Result<Fetched>,
}

/// What the fetches of one pass over the shards found. The worker waits only once the latest
/// fetch of *every* shard came back empty: counting empty replies in a row is not enough, since
/// with two fetches in flight the replies arrive out of step with the shards they were sent to
/// (a shard that just gave jobs could be followed by three empty replies from the other shards,
/// and a drained worker would stop with that shard still full).
pub(super) struct Pass {
    /// Per shard: `Some(wake_in)` when its latest fetch found nothing to lease.
    empty: Vec<Option<Option<u64>>>,
    empties: usize,
}

impl Pass {
    pub(super) fn new(shards: usize) -> Self {
        Pass {
            empty: vec![None; shards],
            empties: 0,
        }
    }

    /// Records one fetch's reply. Returns `Some(soonest wake_in)` once every shard is empty (the
    /// pass then starts over).
    pub(super) fn record(
        &mut self,
        shard: usize,
        leased: usize,
        wake_in: Option<u64>,
    ) -> Option<Option<u64>> {
        let slot = &mut self.empty[shard];
        if leased > 0 || wake_in == Some(0) {
            if slot.take().is_some() {
                self.empties -= 1;
            }
            return None;
        }
        if slot.replace(wake_in).is_none() {
            self.empties += 1;
        }
        if self.empties < self.empty.len() {
            return None;
        }
        let soonest = self.empty.iter().filter_map(|w| w.flatten()).min();
        self.empty.iter_mut().for_each(|w| *w = None);
        self.empties = 0;
        Some(soonest)
    }
}

pub(super) type FetchFuture = Pin<Box<dyn Future<Output = FetchDone> + Send>>;

/// How often a worker busy leasing asks its fetch for the upkeep that goes by time alone
/// (recovering expired leases, dropping stale cancel requests, deleting completed jobs past
/// `keep_for`). A fetch after one that leased nothing always does it; so does any other caller.
/// Skipping it on the calls between saves two to three Redis calls per fetch (a fetch per job at
/// concurrency 1) and delays none of it by more than this.
pub(crate) const UPKEEP_EVERY: Duration = Duration::from_millis(250);

/// When each shard's fetch last did its upkeep (see [`UPKEEP_EVERY`]).
pub(super) struct Upkeep(Vec<Option<tokio::time::Instant>>);

impl Upkeep {
    /// Whether a fetch of `shard` now does its upkeep: always unless the worker is `busy` (its
    /// last fetch leased jobs) and the shard's last upkeep is recent.
    pub(super) fn due(&mut self, shard: usize, busy: bool) -> bool {
        let now = tokio::time::Instant::now();
        let last = &mut self.0[shard];
        if busy && last.is_some_and(|t| now.duration_since(t) < UPKEEP_EVERY) {
            return false;
        }
        *last = Some(now);
        true
    }
}

/// One fetch: leases up to `permits.len()` jobs of `shard` and completes every waiting ack in the
/// same round trip (acks of other shards, on a sharded queue, go out beside it).
pub(super) fn start_fetch(
    queue: &Queue,
    acks: &Arc<AckQueue>,
    report: (String, String),
    shard: usize,
    permits: Vec<OwnedSemaphorePermit>,
    lease: Duration,
    upkeep: bool,
) -> FetchFuture {
    let queue = queue.clone();
    let acks = acks.clone();
    let (mine, others): (Vec<Lease>, Vec<Lease>) =
        acks.take().into_iter().partition(|l| l.shard == shard);
    // What the handlers took, and that this worker is alive, at most every 15 s.
    let (report, entry) = report;
    Box::pin(async move {
        let fetch = queue.fetch(
            shard,
            permits.len(),
            lease,
            &mine,
            (&report, &entry),
            upkeep,
        );
        let result = if others.is_empty() {
            fetch.await
        } else {
            let (fetched, completed) =
                futures_util::future::join(fetch, queue.complete_leases(&others)).await;
            acks.settle(others, completed.as_deref());
            fetched
        };
        match &result {
            Ok(f) => acks.settle(mine, Ok(&f.acked)),
            Err(e) => acks.settle(mine, Err(e)),
        };
        FetchDone {
            shard,
            permits,
            result,
        }
    })
}

pub(super) async fn run(
    queue: Queue,
    opts: WorkerOptions,
    handler: Handlers,
    counters: Arc<Counters>,
    metrics: Arc<crate::metrics::WorkerMetrics>,
    sig: Signals,
) {
    let Signals {
        stop: mut stop_rx,
        mut abort,
        done,
        failure,
    } = sig;
    // The queue's shard count, recorded (or checked against the record) before anything is
    // written; a worker made with another count stops at once (`shards.rs`).
    // Its failures count as fetch errors (nothing can be fetched meanwhile).
    let what = format!("the worker of queue {:?}", queue.name());
    let check = || async {
        let r = queue.check_shards(true).await;
        if r.is_err() {
            counters.fetch_errors.fetch_add(1, Ordering::Relaxed);
        }
        r
    };
    match crate::shards::check_at_start(what, &mut stop_rx, check).await {
        Ok(true) => {}
        Ok(false) => {
            let _ = done.send(true);
            return;
        }
        Err(e) => {
            stopped_on(&queue, &failure, e);
            let _ = done.send(true);
            return;
        }
    }
    let sem = Arc::new(Semaphore::new(opts.concurrency));
    // Two fetches may be in flight, each for up to half the slots: Redis serves one while this
    // process runs the other's jobs, so neither side waits for the other.
    let max_fetches = opts.concurrency.min(2);
    // A batch worker gathers leased jobs here until a batch is full or its wait is over.
    let batching = match &handler {
        Handlers::Batch(_, b) => Some(*b),
        _ => None,
    };
    let mut pending = Pending::default();
    let batch = if let Some(b) = batching {
        b.size
    } else if opts.batch_size == 0 {
        opts.concurrency
            .div_ceil(max_fetches)
            .min(crate::job::MAX_FETCH)
    } else {
        opts.batch_size
    };
    let in_flight: InFlight = Default::default();
    let acks = Arc::new(AckQueue::new(counters.clone()));
    let reg = Arc::new(Registration::new(
        &metrics.id,
        queue.name(),
        opts.concurrency,
        opts.runtime,
    ));
    let renewer = spawn_renewer(&queue, in_flight.clone(), opts.lease, reg.clone());
    let sched_wake = Arc::new(crate::schedule::SchedulerWake::default());
    let flows = FlowUpkeep::new(queue.shards.len());
    let scheduler = opts.schedules.then(|| {
        tokio::spawn(crate::schedule::drive_schedules(
            queue.clone(),
            opts.poll_interval,
            sched_wake.clone(),
            stop_rx.clone(),
        ))
    });
    let ctx = Arc::new(JobCtx {
        next_key: Default::default(),
        queue: queue.clone(),
        handler,
        counters: counters.clone(),
        in_flight: in_flight.clone(),
        acks: acks.clone(),
        metrics: metrics.clone(),
        shutting_down: AtomicBool::new(false),
    });
    let mut tasks: JoinSet<()> = JoinSet::new();
    let mut fetches: FuturesUnordered<FetchFuture> = FuturesUnordered::new();
    let wake_keys = queue.shards.iter().map(|k| k.wake()).collect();
    let mut waiter = Waiter::new(&queue.client, wake_keys);
    let mut backoff = Duration::from_millis(50);
    let mut outage = Outage::new(format!("the worker of queue {:?}", queue.name()));
    // Shards are served round-robin; the worker waits only after a pass found nothing anywhere.
    let shards = queue.shards.len();
    let mut next_shard = fastrand::usize(..shards);
    let mut pass = Pass::new(shards);
    let mut upkeep = Upkeep(vec![None; shards]);
    let mut soonest: Option<u64> = None;
    // A full pass found nothing: wait (once the fetches in flight are back) for a wake-up.
    let mut idle = false;
    // The last fetch leased jobs: only then is a second fetch sent before the first is back (an
    // idle worker's look-around stays one call).
    let mut busy = false;
    let mut failed = false;
    loop {
        while tasks.try_join_next().is_some() {}
        if let Some(b) = batching {
            pending.hand_over(&ctx, &mut tasks, b, false);
        }
        if failed && fetches.is_empty() {
            failed = false;
            tokio::select! {
                _ = stopped(&mut stop_rx) => break,
                _ = tokio::time::sleep(jittered(backoff)) => {}
            }
            backoff = (backoff * 2).min(Duration::from_secs(5));
            continue;
        }
        if idle && fetches.is_empty() {
            idle = false;
            let wake_in = soonest.take();
            if opts.stop_when_drained
                && wake_in.is_none()
                && tasks.is_empty()
                && acks.is_empty()
                && pending.jobs.is_empty()
            {
                break;
            }
            let mut wait = match wake_in {
                Some(ms) => Duration::from_millis(ms).min(opts.poll_interval),
                None => opts.poll_interval,
            };
            if let Some(d) = pending.deadline {
                wait = wait.min(d.saturating_duration_since(tokio::time::Instant::now()));
            }
            if wait.is_zero() {
                continue;
            }
            // A job ending wakes the loop too: its ack rides on the next fetch.
            let res = if opts.stop_when_drained && !tasks.is_empty() {
                // Draining: the last running job finishing may be what empties the queue, so
                // look again as soon as any job ends.
                tokio::select! {
                    _ = stopped(&mut stop_rx) => break,
                    _ = tasks.join_next() => Ok(()),
                    _ = acks.notify.notified() => Ok(()),
                    r = waiter.wait(wait) => r,
                }
            } else {
                tokio::select! {
                    _ = stopped(&mut stop_rx) => break,
                    _ = acks.notify.notified() => Ok(()),
                    r = waiter.wait(wait) => r,
                }
            };
            if let Err(e) = res {
                counters.fetch_errors.fetch_add(1, Ordering::Relaxed);
                if e.is_fatal() {
                    stopped_on(&queue, &failure, e);
                    break;
                }
                outage.failed(&e, backoff);
                failed = true;
            }
            continue;
        }
        let can_fetch =
            !idle && !failed && (fetches.is_empty() || (busy && fetches.len() < max_fetches));
        // With a fetch already out, the next waits until a whole batch of slots is free: sending
        // one per freed slot made many small fetches (25 jobs on average at concurrency 100),
        // each a round trip the jobs behind it waited for. Node's worker went from ~110k to
        // ~180k jobs/s with this alone. Nothing starves: once the fetch in flight is back, the
        // next goes out for whatever is free.
        let need = if fetches.is_empty() {
            1
        } else {
            batch.min(opts.concurrency)
        };
        let batch_due = pending.deadline;
        tokio::select! {
            biased;
            _ = stopped(&mut stop_rx) => break,
            // A partial batch's wait is over: handed over at the top of the loop.
            _ = tokio::time::sleep_until(batch_due.unwrap_or_else(tokio::time::Instant::now)),
                if batch_due.is_some() => {}
            Some(done) = fetches.next(), if !fetches.is_empty() => {
                let FetchDone {
                    shard,
                    mut permits,
                    result,
                } = done;
                match result {
                    Ok(f) => {
                        backoff = Duration::from_millis(50);
                        outage.recovered();
                        if f.lost > 0 {
                            log::warn!(
                                "tideq: queue {:?}: {} job record(s) were missing or unreadable \
                                 (evicted by Redis, or changed by hand); the missing ones were \
                                 removed and the unreadable ones dead-lettered (stats: lost, dead)",
                                queue.name(),
                                f.lost
                            );
                        }
                        let got = f.jobs.len();
                        if f.schedules {
                            sched_wake.schedules_seen();
                        }
                        if f.notices || f.held {
                            flows.kick(&queue, shard, f.held, f.now);
                        }
                        for job in f.jobs {
                            let permit = permits.pop().expect("one permit per leased job");
                            match batching {
                                Some(b) => pending.add(&ctx, job, permit, b),
                                None => ctx.spawn(&mut tasks, job, permit),
                            }
                        }
                        drop(permits);
                        busy = got > 0;
                        if let Some(wake_in) = pass.record(shard, got, f.wake_in) {
                            soonest = wake_in;
                            idle = true;
                        } else if got > 0 || f.wake_in == Some(0) {
                            idle = false;
                        }
                    }
                    Err(e) => {
                        drop(permits);
                        busy = false;
                        counters.fetch_errors.fetch_add(1, Ordering::Relaxed);
                        if e.is_fatal() {
                            stopped_on(&queue, &failure, e);
                            break;
                        }
                        outage.failed(&e, backoff);
                        failed = true;
                    }
                }
            }
            p = sem.clone().acquire_many_owned(need as u32), if can_fetch => {
                // One permit per job: the leased jobs take one each, unused ones drop.
                let mut reserved = p.expect("semaphore never closes");
                let mut permits: Vec<_> = (1..need).filter_map(|_| reserved.split(1)).collect();
                permits.push(reserved);
                while permits.len() < batch {
                    match sem.clone().try_acquire_owned() {
                        Ok(p) => permits.push(p),
                        Err(_) => break,
                    }
                }
                // Not raced against stop once started: leased jobs must reach a handler (or be
                // released).
                let shard = next_shard;
                next_shard = (next_shard + 1) % shards;
                let upkeep = upkeep.due(shard, busy);
                fetches.push(start_fetch(
                    &queue,
                    &acks,
                    next_report(&metrics, &reg, &in_flight),
                    shard,
                    permits,
                    opts.lease,
                    upkeep,
                ));
            }
        }
    }
    // Fetches already sent may lease jobs: those still run (or are released below).
    while let Some(done) = fetches.next().await {
        let FetchDone {
            mut permits,
            result,
            ..
        } = done;
        if let Ok(f) = result {
            for job in f.jobs {
                let permit = permits.pop().expect("one permit per leased job");
                match batching {
                    Some(b) => pending.add(&ctx, job, permit, b),
                    None => ctx.spawn(&mut tasks, job, permit),
                }
            }
        }
    }
    // Jobs gathered for a batch run now, in what batches they make.
    if let Some(b) = batching {
        pending.hand_over(&ctx, &mut tasks, b, true);
    }
    // Stopped fetching: running jobs get the grace period; their acks still go out.
    let drain = async {
        loop {
            while tasks.try_join_next().is_some() {}
            if !acks.flush(&queue).await {
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
            if tasks.is_empty() && acks.is_empty() {
                break;
            }
            tokio::select! {
                _ = tasks.join_next() => {}
                _ = acks.notify.notified() => {}
            }
        }
    };
    let drained = tokio::select! {
        r = tokio::time::timeout(opts.grace, drain) => Some(r.is_ok()),
        _ = aborted(&mut abort) => None,
    };
    if drained == Some(false) {
        // Past the grace period: ask the handlers still running to stop. A job is handed back
        // (released) only once its handler has returned, never while it may still run; until
        // then it keeps its slot and its lease (the renewer goes on).
        ctx.shutting_down.store(true, Ordering::SeqCst);
        let running: Vec<CancellationToken> = in_flight
            .lock()
            .unwrap()
            .values()
            .map(|r| r.cancel.clone())
            .collect();
        if !running.is_empty() {
            log::warn!(
                "tideq: {} job(s) still running after the grace period of {:?}; asked them to \
                 stop, and waiting for their handlers to return (each is then returned to the \
                 queue, or completed if it succeeded); stop again to leave them to their leases",
                running.len(),
                opts.grace
            );
        }
        for c in running {
            c.cancel();
        }
        let finished = tokio::select! {
            _ = async { while tasks.join_next().await.is_some() {} } => true,
            _ = aborted(&mut abort) => false,
        };
        if finished {
            // Acks that still cannot be sent are left to their leases: those jobs run again
            // (at-least-once).
            for attempt in 0..5 {
                if acks.flush(&queue).await {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(100 << attempt)).await;
            }
        }
    }
    if !tasks.is_empty() {
        // Aborted: the handlers still running are abandoned, and their jobs left to their
        // leases (they run again once a lease expires). Finished jobs' acks get one try.
        log::warn!(
            "tideq: stopped at once; {} running job(s) left to their leases",
            tasks.len()
        );
        tasks.abort_all();
        acks.flush(&queue).await;
    }
    drop(renewer);
    if let Some(s) = scheduler {
        s.abort();
    }
    // The run times measured since the last report (with a maintenance fetch, which leases
    // nothing), and the worker leaves the registry of every shard; best effort.
    let last = metrics.take_final();
    let gone = format!("{}|", metrics.id);
    for shard in 0..queue.shards.len() {
        let report = match (&last, shard) {
            (Some(r), 0) => r.as_str(),
            _ => gone.as_str(),
        };
        let _ = queue
            .fetch(shard, 0, opts.lease, &[], (report, "-"), shard == 0)
            .await;
    }
    let _ = done.send(true);
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

/// Logs and keeps the error a worker stops on (it cannot be fixed by retrying).
pub(super) fn stopped_on(queue: &Queue, failure: &Failure, e: Error) {
    log::error!(
        "tideq: the worker of queue {:?} stopped: {e}; running jobs get the grace period",
        queue.name()
    );
    failure.set(e);
}

#[cfg(test)]
mod tests {
    use super::Pass;

    #[test]
    pub(super) fn a_worker_goes_idle_only_once_every_shard_came_back_empty() {
        // Three shards, two fetches in flight: shard 1's reply (jobs) overtakes shard 0's, then
        // shards 0, 2 and 0 again come back empty. Shard 1 was not looked at again: not idle.
        let mut pass = Pass::new(3);
        assert_eq!(pass.record(1, 5, Some(0)), None);
        assert_eq!(pass.record(0, 0, None), None);
        assert_eq!(pass.record(2, 0, None), None);
        assert_eq!(pass.record(0, 0, None), None);
        // Shard 1 empty too: idle, waking for the soonest due job of any shard.
        assert_eq!(pass.record(1, 0, Some(700)), Some(Some(700)));
        // A new pass starts from scratch; a shard with jobs clears its own mark only.
        assert_eq!(pass.record(0, 0, Some(300)), None);
        assert_eq!(pass.record(1, 0, None), None);
        assert_eq!(pass.record(1, 2, Some(0)), None);
        assert_eq!(pass.record(2, 0, None), None);
        assert_eq!(pass.record(1, 0, None), Some(Some(300)));
        // "Look again now" counts as not empty.
        let mut one = Pass::new(1);
        assert_eq!(one.record(0, 0, Some(0)), None);
        assert_eq!(one.record(0, 0, None), Some(None));
    }
}
