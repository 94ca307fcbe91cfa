//! The fetch loop: up to two fetches in flight, each leasing a batch and carrying the waiting
//! acks, the idle wait, and the time-based upkeep a busy worker asks for. Each shard of a sharded
//! queue is fetched, backs off and carries its acks on its own (see `shards.rs`): a shard whose
//! node is down holds up only itself.

use futures_util::stream::FuturesUnordered;
use futures_util::StreamExt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

use crate::background::{aborted, stopped, Failure, Signals};
use tokio::task::JoinSet;

use crate::error::{Error, Result};
use tokio_util::sync::CancellationToken;

use crate::job::Lease;
use crate::jobs::Queue;
use crate::lease::Fetched;
use crate::registry::Registration;
use crate::wait::Waiter;

use super::shards::{Pass, Shards, Upkeep};
use super::*;

/// What one fetch hands back to the loop: the slots it reserved (one per leased job) and the result.
pub(super) struct FetchDone {
    shard: usize,
    /// How many jobs it asked for.
    asked: u64,
    permits: Vec<OwnedSemaphorePermit>,
    result: Result<Fetched>,
}

pub(super) type FetchFuture = Pin<Box<dyn Future<Output = FetchDone> + Send>>;

/// Acks of other shards sent beside a fetch (see [`start_fetch`]).
pub(super) type AckFuture = Pin<Box<dyn Future<Output = ()> + Send>>;

/// One fetch: leases up to `permits.len()` jobs of `shard` and completes every waiting ack of
/// that shard in the same round trip. Acks of the other shards that `ride` allows go out beside
/// it, on their own (the second future): a shard that turns out to be down then holds up only
/// its own acks, not this fetch. The acks of shards `ride` refuses wait for their own fetch.
#[allow(clippy::too_many_arguments)]
pub(super) fn start_fetch(
    queue: &Queue,
    acks: &Arc<AckQueue>,
    report: (String, String),
    shard: usize,
    permits: Vec<OwnedSemaphorePermit>,
    lease: Duration,
    upkeep: bool,
    ride: impl Fn(usize) -> bool,
) -> (FetchFuture, Option<AckFuture>) {
    let (mine, others): (Vec<Lease>, Vec<Lease>) = acks
        .take_where(|l| l.shard == shard || ride(l.shard))
        .into_iter()
        .partition(|l| l.shard == shard);
    let beside = (!others.is_empty()).then(|| {
        let acks = acks.clone();
        let queue = queue.clone();
        Box::pin(async move {
            let mut by_shard: std::collections::BTreeMap<usize, Vec<Lease>> = Default::default();
            for l in others {
                by_shard.entry(l.shard).or_default().push(l);
            }
            let sent = by_shard.into_values().map(|leases| async {
                let completed = queue.complete_leases(&leases).await;
                acks.settle(leases, completed.as_deref());
            });
            futures_util::future::join_all(sent).await;
        }) as AckFuture
    });
    let queue = queue.clone();
    let acks = acks.clone();
    // What the handlers took, and that this worker is alive, at most every 15 s.
    let (report, entry) = report;
    let asked = permits.len() as u64;
    let fetch = Box::pin(async move {
        let result = queue
            .fetch(
                shard,
                permits.len(),
                lease,
                &mine,
                (&report, &entry),
                upkeep,
            )
            .await;
        match &result {
            Ok(f) => acks.settle(mine, Ok(&f.acked)),
            Err(e) => acks.settle(mine, Err(e)),
        };
        FetchDone {
            shard,
            asked,
            permits,
            result,
        }
    });
    (fetch, beside)
}

pub(super) async fn run(
    queue: Queue,
    opts: WorkerOptions,
    handler: Handlers,
    counters: Arc<Counters>,
    metrics: Arc<crate::metrics::WorkerMetrics>,
    sig: Signals,
) {
    crate::client::without_failover_wait(run_loop(queue, opts, handler, counters, metrics, sig))
        .await
}

async fn run_loop(
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
        tokio::spawn(crate::client::without_failover_wait(
            crate::schedule::drive_schedules(
                queue.clone(),
                opts.poll_interval,
                sched_wake.clone(),
                stop_rx.clone(),
            ),
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
        worker: Arc::from(metrics.id.as_str()),
    });
    let mut tasks: JoinSet<()> = JoinSet::new();
    let mut fetches: FuturesUnordered<FetchFuture> = FuturesUnordered::new();
    // Acks sent beside a fetch (other shards' acks): polled here, awaited before the worker ends.
    let mut beside: FuturesUnordered<AckFuture> = FuturesUnordered::new();
    let wake_keys = queue.shards.iter().map(|k| k.wake()).collect();
    let mut waiter = Waiter::new(&queue.client, wake_keys);
    // Shards are served round-robin, each backing off on its own after a failure; the worker
    // waits only after a pass found nothing anywhere it could look.
    let n = queue.shards.len();
    let mut shards = Shards::new(queue.name(), n, max_fetches);
    let mut pass = Pass::new(n);
    let mut upkeep = Upkeep(vec![None; n]);
    let mut soonest: Option<u64> = None;
    // `max_jobs` and readiness.
    let budget = Budget::new(opts.max_jobs, counters.clone(), n);
    // A full pass found nothing: wait (once the fetches in flight are back) for a wake-up.
    let mut idle = false;
    // The last fetch leased jobs: only then is a second fetch sent before the first is back (an
    // idle worker's look-around stays one call).
    let mut busy = false;
    // What a fetch's reply does to the loop's state; `false` when the worker must stop.
    let mut on_reply = |done: FetchDone,
                        shards: &mut Shards,
                        tasks: &mut JoinSet<()>,
                        pending: &mut Pending,
                        idle: &mut bool,
                        busy: &mut bool,
                        soonest: &mut Option<u64>|
     -> bool {
        let FetchDone {
            shard,
            asked: n_asked,
            mut permits,
            result,
        } = done;
        budget.returned(n_asked);
        shards.returned(shard);
        let now = Instant::now();
        match result {
            Ok(f) => {
                shards.worked(shard);
                budget.took(f.jobs.len());
                budget.fetched(shard, true);
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
                        None => ctx.spawn(tasks, job, permit),
                    }
                }
                drop(permits);
                *busy = got > 0;
                if let Some(wake_in) =
                    pass.record(shard, got, f.wake_in, |i| shards.unavailable(i, now))
                {
                    *soonest = wake_in;
                    *idle = true;
                } else if got > 0 || f.wake_in == Some(0) {
                    *idle = false;
                }
                true
            }
            Err(e) => {
                drop(permits);
                *busy = false;
                counters.fetch_errors.fetch_add(1, Ordering::Relaxed);
                budget.fetched(shard, false);
                if e.is_fatal() {
                    stopped_on(&queue, &failure, e);
                    return false;
                }
                // This shard backs off; the others go on. Once they are empty, the worker
                // waits, waking for this shard's retry at the latest.
                let wait = shards.failed(shard, &e, now);
                let wait_ms = Some(wait.as_millis() as u64 + 1);
                if let Some(wake_in) =
                    pass.record(shard, 0, wait_ms, |i| shards.unavailable(i, now))
                {
                    *soonest = wake_in;
                    *idle = true;
                }
                true
            }
        }
    };
    // Stopped leasing by itself (its `max_jobs` reached): the jobs it holds finish without the
    // grace, unless a stop comes meanwhile.
    let mut by_itself = false;
    loop {
        while tasks.try_join_next().is_some() {}
        if let Some(b) = batching {
            pending.hand_over(&ctx, &mut tasks, b, false);
        }
        // What `max_jobs` still allows, beyond the jobs taken and those asked for.
        if budget.exhausted() && fetches.is_empty() {
            by_itself = true;
            break;
        }
        let left = budget.left();
        let now = Instant::now();
        let counted = shards.counted(now);
        if idle && counted == 0 {
            idle = false;
            let wake_in = soonest.take();
            if opts.stop_when_drained
                && wake_in.is_none()
                && fetches.is_empty()
                && beside.is_empty()
                && !shards.any_unsettled(now)
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
                wait = wait.min(d.saturating_duration_since(now));
            }
            if let Some(r) = shards.next_retry(now) {
                wait = wait.min(r.saturating_duration_since(now));
            }
            if wait.is_zero() {
                continue;
            }
            // A job ending wakes the loop too: its ack rides on the next fetch. So does the
            // reply of a stuck fetch (a shard that came back).
            let draining = opts.stop_when_drained && !tasks.is_empty();
            tokio::select! {
                _ = stopped(&mut stop_rx) => break,
                // Draining: the last running job finishing may be what empties the queue, so
                // look again as soon as any job ends.
                _ = tasks.join_next(), if draining => {}
                _ = acks.notify.notified() => {}
                r = waiter.wait(wait) => {
                    if let Err(e) = r {
                        if e.is_fatal() {
                            stopped_on(&queue, &failure, e);
                            break;
                        }
                    }
                }
                Some(done) = fetches.next(), if !fetches.is_empty() => {
                    if !on_reply(done, &mut shards, &mut tasks, &mut pending, &mut idle,
                                 &mut busy, &mut soonest) {
                        break;
                    }
                }
                Some(()) = beside.next(), if !beside.is_empty() => {}
            }
            continue;
        }
        let can_fetch = left > 0
            && !idle
            && shards.any_open(now)
            && (counted == 0 || (busy && counted < max_fetches));
        // With a fetch already out, the next waits until a whole batch of slots is free: sending
        // one per freed slot made many small fetches (25 jobs on average at concurrency 100),
        // each a round trip the jobs behind it waited for. Node's worker went from ~110k to
        // ~180k jobs/s with this alone. Nothing starves: once the fetch in flight is back, the
        // next goes out for whatever is free.
        let left = usize::try_from(left).unwrap_or(usize::MAX);
        let need = if counted == 0 {
            1
        } else {
            batch.min(opts.concurrency).min(left)
        };
        let batch_due = pending.deadline;
        // Nothing to send now: look again when a shard's back-off ends or a fetch gets stuck.
        let wake_at = if can_fetch {
            None
        } else {
            [shards.next_retry(now), shards.next_stuck(now)]
                .into_iter()
                .flatten()
                .min()
        };
        tokio::select! {
            biased;
            _ = stopped(&mut stop_rx) => break,
            // A partial batch's wait is over: handed over at the top of the loop.
            _ = tokio::time::sleep_until(batch_due.unwrap_or(now)), if batch_due.is_some() => {}
            _ = tokio::time::sleep_until(wake_at.unwrap_or(now)), if wake_at.is_some() => {}
            Some(done) = fetches.next(), if !fetches.is_empty() => {
                if !on_reply(done, &mut shards, &mut tasks, &mut pending, &mut idle, &mut busy,
                             &mut soonest) {
                    break;
                }
            }
            Some(()) = beside.next(), if !beside.is_empty() => {}
            p = sem.clone().acquire_many_owned(need as u32), if can_fetch => {
                // One permit per job: the leased jobs take one each, unused ones drop.
                let mut reserved = p.expect("semaphore never closes");
                let mut permits: Vec<_> = (1..need).filter_map(|_| reserved.split(1)).collect();
                permits.push(reserved);
                while permits.len() < batch.min(left) {
                    match sem.clone().try_acquire_owned() {
                        Ok(p) => permits.push(p),
                        Err(_) => break,
                    }
                }
                // Not raced against stop once started: leased jobs must reach a handler (or be
                // released).
                let now = Instant::now();
                let Some(shard) = shards.send(now) else {
                    continue;
                };
                budget.ask(permits.len() as u64);
                let upkeep = upkeep.due(shard, busy);
                let (fetch, acks_beside) = start_fetch(
                    &queue,
                    &acks,
                    next_report(&metrics, &reg, &in_flight),
                    shard,
                    permits,
                    opts.lease,
                    upkeep,
                    |i| shards.healthy(i, now),
                );
                fetches.push(fetch);
                beside.extend(acks_beside);
            }
        }
    }
    budget.stopped();
    // Acks already on their way arrive (or go back to the queue for the drain below).
    while beside.next().await.is_some() {}
    // Fetches already sent may lease jobs: those still run (or are released below).
    while let Some(done) = fetches.next().await {
        let FetchDone {
            mut permits,
            result,
            ..
        } = done;
        if let Ok(f) = result {
            budget.took(f.jobs.len());
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
    let drained = {
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
        tokio::pin!(drain);
        let finish = async {
            if by_itself {
                tokio::select! {
                    _ = &mut drain => return true,
                    _ = stopped(&mut stop_rx) => {}
                }
            }
            tokio::time::timeout(opts.grace, &mut drain).await.is_ok()
        };
        tokio::select! {
            r = finish => Some(r),
            _ = aborted(&mut abort) => None,
        }
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

/// Logs and keeps the error a worker stops on (it cannot be fixed by retrying).
pub(super) fn stopped_on(queue: &Queue, failure: &Failure, e: Error) {
    log::error!(
        "tideq: the worker of queue {:?} stopped: {e}; running jobs get the grace period",
        queue.name()
    );
    failure.set(e);
}
