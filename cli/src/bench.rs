//! `tideq bench`: tideq against the configured Redis on a throwaway job queue. It measures the raw
//! round-trip ceiling first (PINGs, [`PING_PIPELINE`] in flight at a time, on the same
//! connection), then enqueues the jobs with `enqueue_many` and drains them with a worker whose
//! handler does nothing, so the jobs/s it prints can be read against what this Redis and this
//! link allow. Progress bars go to stderr, only when it is a terminal. Every step is a call of the
//! core's public API.

use std::hash::BuildHasher;
use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};
use serde_json::json;
use tideq::acl::{self, Role};
use tideq::{Client, EnqueueOptions, Job, Queue, QueueOptions, WorkerOptions};

use crate::exit::Failure;
use crate::render;

/// Jobs per `enqueue_many` call (the core sends them as a few script calls in one pipeline).
const ENQUEUE_CHUNK: usize = 1000;
/// PINGs sent together for the ceiling: a round of this many, then the next.
const PING_PIPELINE: usize = 50;
/// Every bench job's payload.
const PAYLOAD: &[u8] = br#"{"bench":true}"#;

/// What one run measured.
pub struct Report {
    queue: String,
    jobs: usize,
    concurrency: usize,
    ping_secs: f64,
    enqueue_secs: f64,
    process_secs: f64,
    /// Jobs the worker completed.
    completed: u64,
    /// Jobs still ready, delayed or active after the worker stopped (0 when drained).
    remaining: u64,
    /// Dead jobs purged at the end (0 unless a no-op handler failed).
    purged: u64,
    /// The key patterns the queue's counters stay under (no API deletes a queue).
    keys_left: Vec<String>,
}

fn per_sec(n: usize, secs: f64) -> f64 {
    n as f64 / secs.max(1e-9)
}

impl Report {
    fn redis_commands_per_sec(&self) -> f64 {
        per_sec(self.jobs, self.ping_secs)
    }

    fn enqueue_jobs_per_sec(&self) -> f64 {
        per_sec(self.jobs, self.enqueue_secs)
    }

    fn process_jobs_per_sec(&self) -> f64 {
        per_sec(self.jobs, self.process_secs)
    }

    pub fn render(&self, json: bool) -> String {
        let ceiling = self.redis_commands_per_sec();
        let (enqueue, process) = (self.enqueue_jobs_per_sec(), self.process_jobs_per_sec());
        let note = "tideq has no API that deletes a queue: the bench queue's counters stay in \
                    Redis under these keys";
        if json {
            return json!({
                "queue": self.queue,
                "jobs": self.jobs,
                "concurrency": self.concurrency,
                "redis_commands_per_sec": ceiling,
                "ping_pipeline": PING_PIPELINE,
                "enqueue_jobs_per_sec": enqueue,
                "process_jobs_per_sec": process,
                "enqueue_ratio": enqueue / ceiling,
                "process_ratio": process / ceiling,
                "enqueue_secs": self.enqueue_secs,
                "process_secs": self.process_secs,
                "completed": self.completed,
                "remaining": self.remaining,
                "purged": self.purged,
                "keys_left": self.keys_left,
                "note": note,
            })
            .to_string();
        }
        let drained = if self.remaining == 0 {
            format!("yes ({} completed)", self.completed)
        } else {
            format!("NO: {} completed, {} left", self.completed, self.remaining)
        };
        render::pairs(&[
            ("queue", self.queue.clone()),
            (
                "jobs",
                format!("{} (worker concurrency {})", self.jobs, self.concurrency),
            ),
            (
                "redis",
                format!("{ceiling:.0} commands/s (PING, {PING_PIPELINE} per pipeline)"),
            ),
            (
                "enqueue",
                format!(
                    "{enqueue:.0} jobs/s ({:.2} x the PING rate)",
                    enqueue / ceiling
                ),
            ),
            (
                "process",
                format!(
                    "{process:.0} jobs/s ({:.2} x the PING rate)",
                    process / ceiling
                ),
            ),
            ("drained", drained),
            (
                "keys left",
                format!("{} ({note})", self.keys_left.join(" ")),
            ),
        ])
    }
}

/// A progress bar of `len` jobs on stderr, hidden when stderr is not a terminal.
fn bar(len: usize, what: &str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::with_draw_target(Some(len as u64), ProgressDrawTarget::stderr());
    if let Ok(style) =
        ProgressStyle::with_template("{prefix:>7} [{bar:30}] {pos}/{len} jobs  {rate}  {elapsed}")
    {
        let rate = |s: &ProgressState, w: &mut dyn std::fmt::Write| {
            let _ = write!(w, "{:.0} jobs/s", s.per_sec());
        };
        pb.set_style(style.with_key("rate", rate).progress_chars("=> "));
    }
    pb.set_prefix(what.to_string());
    pb
}

/// Runs the bench: `jobs` jobs on a fresh queue `tideq-bench-<random>` split in `shards`, a
/// worker at `concurrency`.
pub async fn run(
    client: &Client,
    shards: usize,
    jobs: usize,
    concurrency: usize,
) -> Result<Report, Failure> {
    if jobs == 0 || concurrency == 0 {
        return Err(Failure::Usage(
            "--jobs and --concurrency must be at least 1".to_string(),
        ));
    }
    let random = std::collections::hash_map::RandomState::new().hash_one(std::process::id());
    let name = format!("tideq-bench-{:08x}", random as u32);
    // Completed jobs are deleted at once: the run leaves no job behind.
    let opts = QueueOptions {
        keep_completed: 0,
        ..Default::default()
    };
    let q = Queue::sharded(client, &name, shards, opts)?;

    // The ceiling: plain round trips on the same connection (the first PING opens it).
    client.ping().await?;
    let started = Instant::now();
    let mut left = jobs;
    while left > 0 {
        let n = left.min(PING_PIPELINE);
        let round: Vec<_> = (0..n).map(|_| client.ping()).collect();
        for r in futures_util::future::join_all(round).await {
            r?;
        }
        left -= n;
    }
    let ping_secs = started.elapsed().as_secs_f64();

    let pb = bar(jobs, "enqueue");
    let started = Instant::now();
    let mut sent = 0;
    while sent < jobs {
        let n = (jobs - sent).min(ENQUEUE_CHUNK);
        let chunk: Vec<(&[u8], EnqueueOptions)> = (0..n)
            .map(|_| (PAYLOAD, EnqueueOptions::default()))
            .collect();
        q.enqueue_many(&chunk).await?;
        sent += n;
        pb.set_position(sent as u64);
    }
    let enqueue_secs = started.elapsed().as_secs_f64();
    pb.finish_and_clear();

    let pb = bar(jobs, "process");
    let started = Instant::now();
    let worker = q.work(
        WorkerOptions {
            concurrency,
            stop_when_drained: true,
            schedules: false,
            ..Default::default()
        },
        |_job: Job| async { Ok::<(), String>(()) },
    )?;
    let join = worker.join();
    tokio::pin!(join);
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    let stats = loop {
        tokio::select! {
            stats = &mut join => break stats,
            _ = tick.tick() => pb.set_position(worker.stats().completed),
        }
    };
    let process_secs = started.elapsed().as_secs_f64();
    pb.finish_and_clear();
    if let Some(e) = worker.error() {
        return Err(e.into());
    }

    let after = q.stats().await?;
    let purged = if after.dead > 0 { q.purge().await? } else { 0 };
    // The queue's key patterns, as the core states them in its ACL rules.
    let rules = acl::rules(client.config().prefix(), &name, shards, Role::Admin)?;
    let keys_left = rules
        .split(' ')
        .filter_map(|r| r.strip_prefix('~'))
        .map(String::from)
        .collect();
    Ok(Report {
        queue: name,
        jobs,
        concurrency,
        ping_secs,
        enqueue_secs,
        process_secs,
        completed: stats.completed,
        remaining: after.ready + after.delayed + after.active,
        purged,
        keys_left,
    })
}
