//! Job-queue benchmark, Rust side: `cargo run --release -p tideq --example jobs_bench -- URL N`.
//! Prints ONE JSON line in the format of `bench/jobs/run.py` (which runs it beside the Python,
//! Node, BullMQ and arq scripts against one private redis-server):
//!
//! - `enqueue_seq`: N/4 `enqueue` calls, each awaited before the next (jobs/s).
//! - `enqueue_bulk`: N jobs in one `enqueue_many` call (pipelined chunks of 500; jobs/s).
//! - `work_c1|c10|c100`: N no-op jobs enqueued first, then a worker with that concurrency and
//!   `stop_when_drained`; jobs/s from the first handler call until `join()` returns (every ack done).
//! - `lateness_p50_ms|p99_ms` (and `lateness_min_ms`, the first pickup): 2 000 jobs with one
//!   `run_at` ~2 s ahead, a worker at concurrency 100; lateness = handler start − due time (ms).
//! - `rss_mb`: VmRSS of this process (producer and worker) after the work runs.
//! - `idle_cmds_per_s`: one idle worker (concurrency 10, default poll interval) alone on the
//!   server: CONFIG RESETSTAT, 5 s, then the calls in INFO commandstats except info/config, / 5.
//!
//! Payload: a ~50-byte JSON object; queue defaults (5 attempts, keep_completed 1000).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tideq::{Client, EnqueueOptions, Job, Queue, QueueOptions, WorkerOptions};

const PAYLOAD: &[u8] = br#"{"user_id":123456,"task":"send_welcome_email","n":1}"#;
const LATE_JOBS: usize = 2000;

fn now_ms_f() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
        * 1000.0
}

fn fresh(client: &Client, what: &str) -> tideq::Result<Queue> {
    let name = format!("jb-rs-{what}-{}-{}", std::process::id(), fastrand::u32(..));
    Queue::new(client, &name, QueueOptions::default())
}

fn rate(n: usize, d: Duration) -> f64 {
    (n as f64 / d.as_secs_f64()).round()
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map(|kb| (kb / 1024.0 * 10.0).round() / 10.0)
        .unwrap_or(f64::NAN)
}

async fn enqueue_seq(client: &Client, n: usize) -> tideq::Result<f64> {
    let q = fresh(client, "seq")?;
    let t = Instant::now();
    for _ in 0..n {
        q.enqueue(PAYLOAD, EnqueueOptions::default()).await?;
    }
    Ok(rate(n, t.elapsed()))
}

async fn enqueue_bulk(client: &Client, n: usize) -> tideq::Result<(Queue, f64)> {
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

async fn work(client: &Client, n: usize, concurrency: usize) -> tideq::Result<f64> {
    let (q, _) = enqueue_bulk(client, n).await?;
    let first: Arc<OnceLock<Instant>> = Arc::new(OnceLock::new());
    let f = first.clone();
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
    assert_eq!(stats.completed as usize, n, "worker stats {stats:?}");
    Ok(rate(n, end - *first.get().expect("no job ran")))
}

async fn lateness(client: &Client) -> tideq::Result<(f64, f64, f64)> {
    let q = fresh(client, "late")?;
    let due = (now_ms_f() + 2000.0).round();
    let opts = EnqueueOptions {
        run_at_ms: Some(due as u64),
        ..Default::default()
    };
    let jobs: Vec<(&[u8], EnqueueOptions)> =
        (0..LATE_JOBS).map(|_| (PAYLOAD, opts.clone())).collect();
    q.enqueue_many(&jobs).await?;
    let late: Arc<Mutex<Vec<f64>>> = Arc::new(Mutex::new(Vec::with_capacity(LATE_JOBS)));
    let l = late.clone();
    let w = q.work(
        WorkerOptions {
            concurrency: 100,
            stop_when_drained: true,
            ..Default::default()
        },
        move |_job: Job| {
            l.lock().unwrap().push(now_ms_f() - due);
            async { Ok::<(), String>(()) }
        },
    )?;
    w.join().await;
    let mut v = late.lock().unwrap().clone();
    assert_eq!(v.len(), LATE_JOBS);
    v.sort_by(f64::total_cmp);
    let r = |x: f64| (x * 100.0).round() / 100.0;
    Ok((r(percentile(&v, 50.0)), r(percentile(&v, 99.0)), r(v[0])))
}

async fn idle(client: &Client, url: &str) -> tideq::Result<f64> {
    let q = fresh(client, "idle")?;
    let w = q.work(
        WorkerOptions {
            concurrency: 10,
            ..Default::default()
        },
        |_job: Job| async { Ok::<(), String>(()) },
    )?;
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let mut m = redis::Client::open(url)
        .expect("url")
        .get_multiplexed_async_connection()
        .await
        .expect("measuring connection");
    let _: () = redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query_async(&mut m)
        .await
        .expect("CONFIG RESETSTAT");
    tokio::time::sleep(Duration::from_secs(5)).await;
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(&mut m)
        .await
        .expect("INFO");
    w.shutdown().await;
    Ok(idle_calls(&info) as f64 / 5.0)
}

/// Sums `calls=` over `cmdstat_*` lines, except the measuring connection's info/config.
fn idle_calls(info: &str) -> u64 {
    let mut per: HashMap<&str, u64> = HashMap::new();
    for line in info.lines() {
        let Some(rest) = line.strip_prefix("cmdstat_") else {
            continue;
        };
        let Some((name, fields)) = rest.split_once(':') else {
            continue;
        };
        if name == "info" || name == "config" {
            continue;
        }
        let calls = fields
            .split(',')
            .find_map(|f| f.strip_prefix("calls="))
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        per.insert(name, calls);
    }
    if !per.is_empty() {
        eprintln!("rust idle commands in 5 s: {per:?}");
    }
    per.values().sum()
}

#[tokio::main]
async fn main() -> tideq::Result<()> {
    let mut args = std::env::args().skip(1);
    let (Some(url), Some(n)) = (
        args.next(),
        args.next().and_then(|s| s.parse::<usize>().ok()),
    ) else {
        eprintln!("usage: jobs_bench URL N");
        std::process::exit(2);
    };
    let client = Client::open(&url)?;
    let seq = enqueue_seq(&client, (n / 4).max(1)).await?;
    let (_, bulk) = enqueue_bulk(&client, n).await?;
    let c1 = work(&client, n, 1).await?;
    let c10 = work(&client, n, 10).await?;
    let c100 = work(&client, n, 100).await?;
    let rss = rss_mb();
    let (p50, p99, pmin) = lateness(&client).await?;
    let idle = idle(&client, &url).await?;
    println!(
        "{{\"runtime\":\"rust\",\"lib\":\"tideq\",\"enqueue_seq\":{seq},\"enqueue_bulk\":{bulk},\
         \"work_c1\":{c1},\"work_c10\":{c10},\"work_c100\":{c100},\"lateness_p50_ms\":{p50},\
         \"lateness_p99_ms\":{p99},\"lateness_min_ms\":{pmin},\"idle_cmds_per_s\":{idle},\
         \"rss_mb\":{rss}}}"
    );
    Ok(())
}
