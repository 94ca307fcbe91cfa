//! `serve`: the `main` of a worker process. It runs a set of started workers until SIGINT or
//! SIGTERM (or until every one stopped by itself), with an optional health endpoint, a total
//! job limit for recycling, and the status lines a supervisor (`tideq worker`) reads.

use std::borrow::Borrow;
use std::net::SocketAddr;
use std::time::Duration;

use tokio::time::Instant;

use crate::error::{Error, Result};
use crate::worker::{Worker, WorkerStats};

#[cfg(feature = "health")]
mod health;
mod status;

/// The environment variable naming the file descriptor a supervisor reads status lines from.
pub const SUPERVISOR_FD_ENV: &str = "TIDEQ_SUPERVISOR_FD";

/// How often the supervisor hears from a serving process at the least.
const STATUS_EVERY: Duration = Duration::from_millis(400);

/// How often `serve` looks at its workers (readiness, jobs taken, stopped).
const TICK: Duration = Duration::from_millis(50);

/// What [`serve`] does besides running the workers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServeOptions {
    /// Serve `GET /livez` (200 while serving) and `GET /readyz` (200 while every worker
    /// [is ready](Worker::is_ready), else 503) on this address, for liveness and readiness
    /// probes. Needs the crate feature `health` (on by default). Default `None`.
    pub health: Option<SocketAddr>,
    /// Most jobs the process leases over all its workers: once they have leased that many
    /// together, every worker stops gracefully and `serve` returns (a supervisor then starts a
    /// fresh process). Each worker may lease up to its own batch more before it sees it; for
    /// an exact limit, give each worker [`WorkerOptions::max_jobs`](crate::WorkerOptions::max_jobs).
    /// Default `None`.
    pub max_jobs: Option<u64>,
    /// The file descriptor to write status lines to; `None` (the default) reads it from the
    /// `TIDEQ_SUPERVISOR_FD` environment variable, which a supervisor sets. Without either,
    /// no status lines.
    #[doc(hidden)]
    pub status_fd: Option<i32>,
}

/// Runs `workers` (already started, e.g. one per queue by [`Queue::work`](crate::Queue::work)
/// or [`Queue::work_tasks`](crate::Queue::work_tasks)) until the process is asked to stop, then
/// returns their stats, in order.
///
/// - SIGINT (Ctrl-C) or SIGTERM: every worker stops leasing and its running jobs get its
///   [grace](crate::WorkerOptions::grace); a second signal meanwhile aborts them all (their
///   jobs go back to the queue by their leases, never lost).
/// - `serve` also returns once every worker has stopped by itself (its
///   [`max_jobs`](crate::WorkerOptions::max_jobs) reached, `stop_when_drained`, or a fatal
///   error), or once the workers together leased [`ServeOptions::max_jobs`].
/// - With [`ServeOptions::health`], `/livez` and `/readyz` are served meanwhile.
/// - Under a supervisor (`TIDEQ_SUPERVISOR_FD` set), it writes status lines to that file
///   descriptor: `ready 1 jobs <n>` / `ready 0 jobs <n>` at start, on each change and at least
///   every 500 ms, and `recycling jobs <n>` once a job limit is reached. If the supervisor is
///   gone (a write fails), the workers stop gracefully, as on SIGTERM.
///
/// Errors: no workers, a health address that cannot be bound, a bad `TIDEQ_SUPERVISOR_FD`
/// (INVALID_ARGUMENT, before anything runs), and, after every worker stopped, the fatal error
/// one stopped on ([`Worker::error`]), if any.
///
/// Accepts owned workers or shared ones (`Arc<Worker>`).
///
/// ```no_run
/// # async fn f(emails: tideq::Queue, reports: tideq::Queue) -> tideq::Result<()> {
/// use tideq::{ServeOptions, WorkerOptions};
/// let a = emails.work(WorkerOptions::default(), |_job| async { Ok::<_, String>(()) })?;
/// let b = reports.work(
///     WorkerOptions { concurrency: 2, ..Default::default() },
///     |_job| async { Ok::<_, String>(()) },
/// )?;
/// let stats = tideq::serve(
///     vec![a, b],
///     ServeOptions { health: Some("127.0.0.1:8080".parse().unwrap()), ..Default::default() },
/// )
/// .await?;
/// # Ok(()) }
/// ```
pub async fn serve<W>(workers: Vec<W>, opts: ServeOptions) -> Result<Vec<WorkerStats>>
where
    W: Borrow<Worker> + Send + Sync,
{
    if workers.is_empty() {
        return Err(Error::invalid("serve needs at least one worker"));
    }
    if opts.max_jobs == Some(0) {
        return Err(Error::invalid("max_jobs must be at least 1"));
    }
    let mut status = status::Status::open(opts.status_fd)?;
    let ws: Vec<&Worker> = workers.iter().map(|w| w.borrow()).collect();
    let ready_now = || ws.iter().all(|w| w.is_ready());
    let taken = || ws.iter().map(|w| w.jobs_taken()).sum::<u64>();
    #[cfg(feature = "health")]
    let health = match opts.health {
        Some(addr) => Some(health::Health::start(addr).await?),
        None => None,
    };
    #[cfg(not(feature = "health"))]
    if opts.health.is_some() {
        return Err(Error::invalid(
            "the health endpoint needs tideq's `health` feature",
        ));
    }
    let mut signals = crate::signal::Terminations::new();
    // 0: serving; 1: stopping gracefully; 2: aborted.
    let mut stopping = 0u8;
    let mut recycling = false;
    let mut last_ready: Option<bool> = None;
    let mut last_line = Instant::now();
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let n = taken();
        let reached = ws.iter().any(|w| w.exhausted()) || opts.max_jobs.is_some_and(|m| n >= m);
        let mut write_failed = false;
        if reached && !recycling && stopping == 0 {
            recycling = true;
            write_failed |= !status.line(&format!("recycling jobs {n}\n"));
            if opts.max_jobs.is_some_and(|m| n >= m) {
                stopping = 1;
                ws.iter().for_each(|w| w.stop());
            }
        }
        let ready = stopping == 0 && !recycling && ready_now();
        #[cfg(feature = "health")]
        if let Some(h) = &health {
            h.set_ready(ready);
        }
        if last_ready != Some(ready) || last_line.elapsed() >= STATUS_EVERY {
            write_failed |= !status.line(&format!("ready {} jobs {n}\n", ready as u8));
            last_ready = Some(ready);
            last_line = Instant::now();
        }
        if write_failed && stopping == 0 {
            log::warn!("tideq: the supervisor is gone (its status pipe closed); stopping");
            stopping = 1;
            ws.iter().for_each(|w| w.stop());
        }
        if stopping == 0 && ws.iter().any(|w| w.error().is_some()) {
            // A worker stopped on an error retrying cannot fix: the process cannot do its
            // work, so the others stop too (and serve returns the error).
            stopping = 1;
            ws.iter().for_each(|w| w.stop());
        }
        if ws.iter().all(|w| !w.is_running()) {
            break;
        }
        tokio::select! {
            _ = tick.tick() => {}
            _ = signals.next() => {
                stopping += 1;
                if stopping == 1 {
                    log::info!("tideq: stopping: running jobs get their grace (stop again to abort)");
                    ws.iter().for_each(|w| w.stop());
                } else {
                    log::warn!("tideq: stopping at once; running jobs are left to their leases");
                    ws.iter().for_each(|w| w.abort());
                }
            }
        }
    }
    let mut stats = Vec::with_capacity(ws.len());
    for w in &ws {
        stats.push(w.join().await);
    }
    if stopping == 0 {
        // Every worker stopped by itself: a last line tells the supervisor.
        status.line(&format!("ready 0 jobs {}\n", taken()));
    }
    #[cfg(feature = "health")]
    if let Some(h) = health {
        h.stop().await;
    }
    match ws.iter().find_map(|w| w.error()) {
        Some(e) => Err(e),
        None => Ok(stats),
    }
}
