//! Job-queue benchmark, Rust side: `cargo run --release -p tideq-bench --bin jobs -- URL N`.
//! Prints ONE JSON line in the format of `bench/jobs/run.py` (which runs it beside the Python,
//! Node, BullMQ and arq scripts against one private redis-server):
//!
//! - `enqueue_seq`: N/4 `enqueue` calls, each awaited before the next (jobs/s).
//! - `enqueue_bulk`: N jobs in one `enqueue_many` call (pipelined chunks of 500; jobs/s).
//! - `work_c1|c10|c100`: N no-op jobs enqueued first, then a worker with that concurrency and
//!   `stop_when_drained`; jobs/s from the first handler call until `join()` returns (every ack done).
//! - `lateness_p50_ms|p99_ms` (and `lateness_min_ms`, the first pickup): "2 000 jobs due in the
//!   same second": job i gets `run_at_ms` = start + i × 1000 / 2000 (whole ms, rounded down; start
//!   ~2 s ahead) and carries that due ms in its payload (`{"due":<ms>,...}`); a worker at
//!   concurrency 100 whose handler reads the clock, then the due ms from `job.payload`:
//!   lateness = handler start − that job's due time (ms, this machine's clock).
//! - `burst_p50_ms|p99_ms`: the same with all 2 000 jobs due at one instant.
//! - `rss_mb`: VmRSS of this process (producer and worker) after the work runs;
//!   `worker_rss_mb`: the peak RSS of a process that only runs a worker at concurrency 100 over N
//!   jobs (enqueued by this one).
//! - `idle_cmds_per_s`: one idle worker (concurrency 10, default poll interval) alone on the
//!   server: CONFIG RESETSTAT, 5 s, then the calls in INFO commandstats except info/config, / 5
//!   (script-internal calls included); `idle_client_cmds_per_s`: the commands clients sent in
//!   that window, counted with MONITOR.
//! - `work_prio_c100`: as `work_c100` with random priorities 1..=10; `work_groups1k_c100`: N jobs
//!   over 1,000 groups (job i in group i % 1000); `work_groups100k_c100`: at least 100,000 jobs,
//!   one per group (the per-fetch cost with many groups).
//! - `rate1000_achieved` / `rate1000_max_window`: a queue rate limit of 1,000 starts/s, 4,000 jobs,
//!   concurrency 100: starts per second achieved, and the most starts in any 1-s window.
//! - `JOBS_BENCH_LIFECYCLE=1` (its own run, one line): `work_c100` with the queue's event log off
//!   and on (`set_events`), alternated three times each (events cost), and schedule precision:
//!   an idle worker fires a 100 ms interval schedule for 5 s; lateness = handler start (this
//!   machine's clock) − the slot in the job's id, p50/p99.
//! - `start_p50_ms|p99_ms`: enqueue to start: an idle worker at concurrency 10, 2,000 jobs enqueued
//!   one by one at 1,000/s, each carrying the ms it was enqueued at; start − that ms.
//! - `diag`: Redis and client CPU, Redis calls and scripts per job, over each work run.
//!   `JOBS_BENCH_EXTRA_C=300,1000` adds work runs at those concurrencies (diagnosis only).
//!
//! Payload: a ~50-byte JSON object; queue defaults (5 attempts, keep_completed 1000). Runs on
//! `tideq::runtime_builder()` (one runtime worker thread), as the bindings do.

mod diag;
mod lateness;
mod runs;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tideq::{Client, Queue, QueueOptions};

use lateness::{lateness, schedule_lateness, start_latency};
use runs::{
    enqueue_bulk, enqueue_seq, idle, rate_limited, work, work_events, work_flow, worker_only,
    worker_rss, Flow,
};

const PAYLOAD: &[u8] = br#"{"user_id":123456,"task":"send_welcome_email","n":1}"#;
const LATE_JOBS: usize = 2000;
const LATE_AHEAD_MS: f64 = 2000.0;
/// The main lateness run spreads the due times evenly over this window; the burst run uses 0.
const LATE_SPREAD_MS: u64 = 1000;

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
    status_mb("VmRSS:")
}

/// A field of /proc/self/status in MB (VmRSS: now, VmHWM: the peak).
fn status_mb(field: &str) -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map(|kb| (kb / 1024.0 * 10.0).round() / 10.0)
        .unwrap_or(f64::NAN)
}

// The runtime tideq recommends for worker processes (one worker thread; see runtime_builder).
fn main() -> tideq::Result<()> {
    tideq::runtime_builder()
        .build()
        .expect("tokio runtime")
        .block_on(bench_main())
}

async fn bench_main() -> tideq::Result<()> {
    let mut args = std::env::args().skip(1);
    let (Some(url), Some(n)) = (
        args.next(),
        args.next().and_then(|s| s.parse::<usize>().ok()),
    ) else {
        eprintln!("usage: jobs URL N");
        std::process::exit(2);
    };
    let client = Client::open(&url)?;
    let rest: Vec<String> = std::env::args().skip(3).collect();
    if let [mode, name] = rest.as_slice() {
        if mode == "worker" {
            return worker_only(&url, name, n).await;
        }
    }
    // Diagnosis only (not used by run.py): JOBS_BENCH_QUICK=1 runs bulk enqueue, c100 and
    // both lateness runs (spread over 1 s, then burst) and prints them on one line.
    // JOBS_BENCH_QUICK_C=10 uses that concurrency instead of 100.
    // JOBS_BENCH_FLOW=1: plain c100 beside the queue-control runs, one line each (diagnosis).
    if std::env::var("JOBS_BENCH_LIFECYCLE").is_ok() {
        let (mut off, mut on) = (Vec::new(), Vec::new());
        for _ in 0..3 {
            off.push(work_events(&client, &url, n, None).await?);
            on.push(work_events(&client, &url, n, Some(10_000)).await?);
        }
        let best = |v: &[f64]| v.iter().copied().fold(0.0, f64::max);
        let (p50, p99, fired) = schedule_lateness(&client).await?;
        println!(
            "c100 events off {off:?} (best {}) on {on:?} (best {}): on/off {:.0}%; schedule \
             lateness p50/p99 {p50}/{p99} ms over {fired} slots",
            best(&off),
            best(&on),
            100.0 * best(&on) / best(&off)
        );
        return Ok(());
    }
    if std::env::var("JOBS_BENCH_FLOW").is_ok() {
        let (c100, d100) = work(&client, &url, n, 100).await?;
        println!("plain c100 {c100} {d100}");
        let (prio, dprio) = work_flow(&client, &url, n, Flow::Priorities).await?;
        println!("prio c100 {prio} {dprio}");
        let (g1k, dg1k) = work_flow(&client, &url, n, Flow::Groups(1000)).await?;
        println!("groups1k c100 {g1k} {dg1k}");
        let (g100k, dg100k) = work_flow(&client, &url, n, Flow::Groups(100_000)).await?;
        println!("groups100k c100 {g100k} {dg100k}");
        let (achieved, most) = rate_limited(&client).await?;
        println!("rate 1000/s: achieved {achieved}/s, most in a 1-s window {most}");
        return Ok(());
    }
    // JOBS_BENCH_WORKONLY=1: N jobs enqueued, then one worker at concurrency 100 (diagnosis).
    if std::env::var("JOBS_BENCH_WORKONLY").is_ok() {
        let (c100, d100) = work(&client, &url, n, 100).await?;
        println!("c100 {c100} {d100}");
        return Ok(());
    }
    if std::env::var("JOBS_BENCH_QUICK").is_ok() {
        let c = std::env::var("JOBS_BENCH_QUICK_C")
            .ok()
            .and_then(|c| c.parse::<usize>().ok())
            .unwrap_or(100);
        let (_, bulk) = enqueue_bulk(&client, n).await?;
        let (c100, d100) = work(&client, &url, n, c).await?;
        let (p50, p99, pmin) = lateness(&client, LATE_SPREAD_MS).await?;
        let (b50, b99, bmin) = lateness(&client, 0).await?;
        let wrss = worker_rss(&client, &url, n).await?;
        println!(
            "worker RSS {wrss} MB; bulk {bulk} c{c} {c100} {d100} lateness (2000 due within 1 s) p50/p99/min \
             {p50}/{p99}/{pmin} ms, burst (2000 due at one instant) p50/p99/min {b50}/{b99}/{bmin} ms"
        );
        return Ok(());
    }
    let seq = enqueue_seq(&client, (n / 4).max(1)).await?;
    let (_, bulk) = enqueue_bulk(&client, n).await?;
    let (c1, d1) = work(&client, &url, n, 1).await?;
    let (c10, d10) = work(&client, &url, n, 10).await?;
    let (c100, d100) = work(&client, &url, n, 100).await?;
    let rss = rss_mb();
    let wrss = worker_rss(&client, &url, n).await?;
    // Extra concurrency levels for diagnosis (not in run.py's table): JOBS_BENCH_EXTRA_C=300,1000
    let mut extra = String::new();
    for c in std::env::var("JOBS_BENCH_EXTRA_C")
        .unwrap_or_default()
        .split(',')
        .filter_map(|c| c.trim().parse::<usize>().ok())
    {
        let (r, d) = work(&client, &url, n, c).await?;
        extra.push_str(&format!("\"work_c{c}\":{r},\"diag_c{c}\":{d},"));
    }
    let (prio, dprio) = work_flow(&client, &url, n, Flow::Priorities).await?;
    let (g1k, dg1k) = work_flow(&client, &url, n, Flow::Groups(1000)).await?;
    let (g100k, dg100k) = work_flow(&client, &url, n, Flow::Groups(100_000)).await?;
    let (rate_achieved, rate_max) = rate_limited(&client).await?;
    extra.push_str(&format!(
        "\"work_prio_c100\":{prio},\"work_groups1k_c100\":{g1k},\"work_groups100k_c100\":{g100k},\
         \"rate1000_achieved\":{rate_achieved},\"rate1000_max_window\":{rate_max},"
    ));
    let (p50, p99, pmin) = lateness(&client, LATE_SPREAD_MS).await?;
    let (b50, b99, _) = lateness(&client, 0).await?;
    let (s50, s99) = start_latency(&client).await?;
    let idle = idle(&client, &url).await?;
    println!(
        "{{\"runtime\":\"rust\",\"lib\":\"tideq\",{extra}\"enqueue_seq\":{seq},\"enqueue_bulk\":{bulk},\
         \"work_c1\":{c1},\"work_c10\":{c10},\"work_c100\":{c100},\"lateness_p50_ms\":{p50},\
         \"lateness_p99_ms\":{p99},\"lateness_min_ms\":{pmin},\"burst_p50_ms\":{b50},\
         \"burst_p99_ms\":{b99},\"start_p50_ms\":{s50},\"start_p99_ms\":{s99},\"rss_mb\":{rss},\"worker_rss_mb\":{wrss},\
         \"diag\":{{\"c1\":{d1},\"c10\":{d10},\"c100\":{d100},\"prio_c100\":{dprio},\
         \"groups1k_c100\":{dg1k},\"groups100k_c100\":{dg100k}}},{idle}}}"
    );
    Ok(())
}
