//! The timed runs: enqueue (one by one, in bulk), work at a concurrency (plain, prioritized,
//! grouped, rate-limited, with the event log on or off), the worker process's peak RSS, and one
//! idle worker's command rate.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use tideq::{Client, EnqueueOptions, Job, Queue, QueueOptions, WorkerOptions};

use crate::{diag, fresh, rate, status_mb, PAYLOAD};

/// `worker_rss_mb`: the peak RSS (VmHWM) of a process that only runs a worker at concurrency 100
/// over N jobs enqueued by this one (this binary again, as `jobs URL N worker QUEUE`), so the
/// producer's buffers are not counted.
pub async fn worker_rss(client: &Client, url: &str, n: usize) -> tideq::Result<f64> {
    let (q, _) = enqueue_bulk(client, n).await?;
    let exe = std::env::current_exe().expect("own path");
    let out = tokio::task::spawn_blocking({
        let (url, name) = (url.to_string(), q.name().to_string());
        move || {
            std::process::Command::new(exe)
                .args([url, n.to_string(), "worker".into(), name])
                .output()
                .expect("worker process")
        }
    })
    .await
    .expect("worker process");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .expect("worker RSS"))
}

/// The worker process of `worker_rss`: drains queue `name` at concurrency 100, prints its peak RSS.
pub async fn worker_only(url: &str, name: &str, n: usize) -> tideq::Result<()> {
    let q = Queue::new(&Client::open(url)?, name, QueueOptions::default())?;
    // JOBS_BENCH_WORKER_C: the worker's concurrency (100 unless set; diagnosis).
    let concurrency = std::env::var("JOBS_BENCH_WORKER_C")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(100);
    let w = q.work(
        WorkerOptions {
            concurrency,
            stop_when_drained: true,
            ..Default::default()
        },
        |_job: Job| async { Ok::<(), String>(()) },
    )?;
    let stats = w.join().await;
    assert_eq!(stats.completed as usize, n, "worker stats {stats:?}");
    println!("{}", status_mb("VmHWM:"));
    Ok(())
}

pub async fn enqueue_seq(client: &Client, n: usize) -> tideq::Result<f64> {
    let q = fresh(client, "seq")?;
    let t = Instant::now();
    for _ in 0..n {
        q.enqueue(PAYLOAD, EnqueueOptions::default()).await?;
    }
    Ok(rate(n, t.elapsed()))
}

pub async fn enqueue_bulk(client: &Client, n: usize) -> tideq::Result<(Queue, f64)> {
    let q = fresh(client, "bulk")?;
    let jobs: Vec<(&[u8], EnqueueOptions)> = (0..n)
        .map(|_| (PAYLOAD, EnqueueOptions::default()))
        .collect();
    let t = Instant::now();
    let done = q.enqueue_many(&jobs).await?;
    let r = rate(n, t.elapsed());
    assert_eq!(done.len(), n);
    Ok((q, r))
}

pub async fn work(
    client: &Client,
    url: &str,
    n: usize,
    concurrency: usize,
) -> tideq::Result<(f64, String)> {
    let (q, _) = enqueue_bulk(client, n).await?;
    drain(&q, url, n, concurrency).await
}

/// How the queue-control runs enqueue their N jobs.
#[derive(Clone, Copy)]
pub enum Flow {
    /// Random priorities 1..=10.
    Priorities,
    /// Job i in group i % groups.
    Groups(usize),
}

/// `work` for prioritized or grouped jobs (concurrency 100); the run with 100,000 groups
/// enqueues (and drains) at least 100,000 jobs, one per group.
pub async fn work_flow(
    client: &Client,
    url: &str,
    n: usize,
    flow: Flow,
) -> tideq::Result<(f64, String)> {
    let q = fresh(client, "flow")?;
    let n = match flow {
        Flow::Groups(g) => n.max(g),
        Flow::Priorities => n,
    };
    let jobs: Vec<(&[u8], EnqueueOptions)> = (0..n)
        .map(|i| {
            let opts = match flow {
                Flow::Priorities => EnqueueOptions {
                    priority: Some(fastrand::u32(1..=10)),
                    ..Default::default()
                },
                Flow::Groups(g) => EnqueueOptions {
                    group: Some(format!("tenant-{}", i % g)),
                    ..Default::default()
                },
            };
            (PAYLOAD, opts)
        })
        .collect();
    for chunk in jobs.chunks(20_000) {
        q.enqueue_many(chunk).await?;
    }
    drain(&q, url, n, 100).await
}

/// A queue-wide start rate of 1,000/s over 4,000 jobs at concurrency 100: the starts per second
/// achieved (from the first start to the last) and the most starts in any one-second window
/// (Redis clock, `Job::started_at`).
pub async fn rate_limited(client: &Client) -> tideq::Result<(f64, u64)> {
    const JOBS: usize = 4000;
    let q = fresh(client, "rate")?;
    q.set_limits(tideq::Limits {
        rate: Some(tideq::Rate::new(1000, Duration::from_secs(1))),
        ..Default::default()
    })
    .await?;
    let jobs: Vec<(&[u8], EnqueueOptions)> = (0..JOBS)
        .map(|_| (PAYLOAD, EnqueueOptions::default()))
        .collect();
    q.enqueue_many(&jobs).await?;
    let starts = Arc::new(Mutex::new(Vec::with_capacity(JOBS)));
    let s = starts.clone();
    let w = q.work(
        WorkerOptions {
            concurrency: 100,
            stop_when_drained: true,
            ..Default::default()
        },
        move |job: Job| {
            s.lock().unwrap().push(job.started_at);
            async { Ok::<(), String>(()) }
        },
    )?;
    w.join().await;
    let mut t = starts.lock().unwrap().clone();
    t.sort();
    Ok(rate_summary(&t))
}

/// Starts per second from the first to the last start (the last window counted whole), and the
/// most starts in any one-second window.
pub fn rate_summary(t: &[u64]) -> (f64, u64) {
    let span = (t[t.len() - 1] - t[0]) as f64 / 1000.0;
    let achieved = (t.len() as f64 / (span.ceil().max(1.0))).round();
    let most = (0..t.len())
        .map(|i| (t.partition_point(|x| *x < t[i] + 1000) - i) as u64)
        .max()
        .unwrap_or(0);
    (achieved, most)
}

pub async fn drain(
    q: &Queue,
    url: &str,
    n: usize,
    concurrency: usize,
) -> tideq::Result<(f64, String)> {
    let first: Arc<OnceLock<Instant>> = Arc::new(OnceLock::new());
    let f = first.clone();
    let phase = tokio::task::block_in_place(|| diag::Phase::begin(url));
    let w = q.work(
        WorkerOptions {
            concurrency,
            stop_when_drained: true,
            ..Default::default()
        },
        move |_job: Job| {
            f.get_or_init(Instant::now);
            async { Ok::<(), String>(()) }
        },
    )?;
    let stats = w.join().await;
    let end = Instant::now();
    let diag = tokio::task::block_in_place(|| phase.end(n));
    assert_eq!(stats.completed as usize, n, "worker stats {stats:?}");
    Ok((rate(n, end - *first.get().expect("no job ran")), diag))
}

pub async fn idle(client: &Client, url: &str) -> tideq::Result<String> {
    let q = fresh(client, "idle")?;
    let w = q.work(
        WorkerOptions {
            concurrency: 10,
            ..Default::default()
        },
        |_job: Job| async { Ok::<(), String>(()) },
    )?;
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let url = url.to_string();
    // 5 s as the issue asks; JOBS_BENCH_IDLE_S (bench/jobs/run.py --idle-seconds) changes it.
    let secs = std::env::var("JOBS_BENCH_IDLE_S")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .unwrap_or(5.0);
    let res = tokio::task::spawn_blocking(move || {
        diag::measure_idle(&url, Duration::from_secs_f64(secs))
    })
    .await
    .expect("idle measurement");
    w.shutdown().await;
    Ok(res)
}

/// `work` at concurrency 100 with the queue's event log on (`events` = its length) or off.
pub async fn work_events(
    client: &Client,
    url: &str,
    n: usize,
    events: Option<usize>,
) -> tideq::Result<f64> {
    let q = fresh(client, "ev")?;
    q.set_events(events).await?;
    let jobs: Vec<(&[u8], EnqueueOptions)> = (0..n)
        .map(|_| (PAYLOAD, EnqueueOptions::default()))
        .collect();
    q.enqueue_many(&jobs).await?;
    Ok(drain(&q, url, n, 100).await?.0)
}
