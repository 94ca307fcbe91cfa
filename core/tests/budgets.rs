//! Redis calls per job, counted, not timed: for each path a queue may take (plain, priorities,
//! groups, a rate limit, the event log on), a fixed workload of jobs enqueued, leased and
//! completed, and the calls Redis ran for it (INFO commandstats: the commands sent and those the
//! scripts ran). The counts are the same on any machine; a path that costs more calls than its
//! budget in BUDGETS fails. Timing stays in the benchmarks.

mod common;

use std::time::Duration;

use common::jobs::*;
use common::RedisServer;
use tideq::{EnqueueOptions, Job, Limits, Queue, Rate, WorkerOptions};

/// The most Redis calls per job each path may cost (script-internal calls included). For the
/// paths by name, the workload of `calls_per_job`: enqueued in batches of 100, leased 100 at a
/// time, completed one by one; for "worker c=1", a worker at concurrency 1 (one script call per
/// job: the ack of one and the lease of the next). A change that adds calls to a path raises its
/// count here first. Measured when set: plain 11.22, priorities 12.38, groups 17.37, rate limit
/// 11.27, events on 13.26, worker c=1 15.05 (each the same on every run, give or take 0.01).
/// The fetch asks which of its optional keys exist in two calls of three keys each: one call
/// naming all six took 100,000 Redis instructions, the two take 27,000.
const BUDGETS: &[(&str, f64)] = &[
    ("plain", 11.5),
    ("priorities", 12.5),
    ("groups", 17.5),
    ("rate limit", 11.5),
    ("events on", 13.5),
    ("worker c=1", 15.25),
];

const JOBS: usize = 1000;

fn budget(path: &str) -> f64 {
    BUDGETS
        .iter()
        .find(|(p, _)| *p == path)
        .map(|(_, b)| *b)
        .unwrap_or_else(|| panic!("no budget for {path}"))
}

/// Every call Redis counted since the last CONFIG RESETSTAT, but INFO and CONFIG themselves.
fn calls(server: &RedisServer) -> (u64, Vec<(String, u64)>) {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query(&mut server.conn())
        .unwrap();
    let mut total = 0;
    let mut each = Vec::new();
    for line in info.lines() {
        let Some((name, rest)) = line
            .strip_prefix("cmdstat_")
            .and_then(|l| l.split_once(':'))
        else {
            continue;
        };
        if name == "info" || name.starts_with("config") {
            continue;
        }
        let n: u64 = rest
            .split(',')
            .find_map(|kv| kv.strip_prefix("calls="))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        total += n;
        each.push((name.to_string(), n));
    }
    each.sort_by_key(|e| std::cmp::Reverse(e.1));
    (total, each)
}

/// The calls per job since the last CONFIG RESETSTAT, and the eight commands Redis ran most.
fn per_job(server: &RedisServer) -> (f64, String) {
    let (total, each) = calls(server);
    let top: Vec<String> = each
        .iter()
        .take(8)
        .map(|(n, c)| format!("{n} {:.2}", *c as f64 / JOBS as f64))
        .collect();
    (total as f64 / JOBS as f64, top.join(", "))
}

/// Enqueues, leases and completes `JOBS` jobs made by `opts`, after one job that loads the
/// scripts; the calls per job Redis ran for them.
async fn calls_per_job(
    server: &RedisServer,
    q: &Queue,
    opts: impl Fn(usize) -> EnqueueOptions,
) -> (f64, String) {
    let warm = q.enqueue(b"x", opts(JOBS)).await.unwrap();
    let got = q.lease_jobs(1, Duration::from_secs(60)).await.unwrap();
    assert_eq!(got[0].id, warm.id);
    q.complete(&got[0]).await.unwrap();
    let _: () = redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query(&mut server.conn())
        .unwrap();
    let all: Vec<(Vec<u8>, EnqueueOptions)> = (0..JOBS).map(|i| (b"x".to_vec(), opts(i))).collect();
    for part in all.chunks(100) {
        q.enqueue_many(part).await.unwrap();
    }
    let mut done = 0;
    while done < JOBS {
        let jobs = q.lease_jobs(100, Duration::from_secs(60)).await.unwrap();
        assert!(!jobs.is_empty(), "{done} of {JOBS} jobs ran");
        for job in &jobs {
            q.complete(job).await.unwrap();
        }
        done += jobs.len();
    }
    per_job(server)
}

async fn check(
    path: &str,
    setup: impl AsyncFnOnce(&Queue),
    opts: impl Fn(usize) -> EnqueueOptions,
) {
    let server = RedisServer::start();
    let q = queue(&server.url);
    setup(&q).await;
    let (per_job, top) = calls_per_job(&server, &q, opts).await;
    eprintln!("{path}: {per_job:.2} calls per job ({top})");
    assert!(
        per_job <= budget(path),
        "{path}: {per_job:.2} Redis calls per job, over its budget of {} ({top})",
        budget(path)
    );
}

/// A worker at concurrency 1 on `JOBS` plain jobs (enqueued in batches of 100): each of its
/// fetches carries the ack of the job before, so this is the whole life of a job as a worker
/// sees it, one script call per job. The calls per job Redis ran for it.
async fn worker_calls_per_job(server: &RedisServer, q: &Queue) -> (f64, String) {
    let all: Vec<(Vec<u8>, EnqueueOptions)> = (0..JOBS)
        .map(|_| (b"x".to_vec(), EnqueueOptions::default()))
        .collect();
    for part in all.chunks(100) {
        q.enqueue_many(part).await.unwrap();
    }
    let _: () = redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query(&mut server.conn())
        .unwrap();
    let w = q
        .work(
            WorkerOptions {
                concurrency: 1,
                ..drained()
            },
            |_j: Job| async { Ok::<(), String>(()) },
        )
        .unwrap();
    assert_eq!(w.join().await.completed, JOBS as u64);
    per_job(server)
}

#[tokio::test]
async fn a_worker_at_concurrency_1_stays_within_its_call_budget() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let (per_job, top) = worker_calls_per_job(&server, &q).await;
    eprintln!("worker c=1: {per_job:.2} calls per job ({top})");
    assert!(
        per_job <= budget("worker c=1"),
        "worker c=1: {per_job:.2} Redis calls per job, over its budget of {} ({top})",
        budget("worker c=1")
    );
}

#[tokio::test]
async fn the_plain_path_stays_within_its_call_budget() {
    check("plain", async |_| {}, |_| EnqueueOptions::default()).await;
}

#[tokio::test]
async fn the_priority_path_stays_within_its_call_budget() {
    check(
        "priorities",
        async |_| {},
        |i| EnqueueOptions {
            priority: Some(1 + (i % 5) as u32),
            ..Default::default()
        },
    )
    .await;
}

#[tokio::test]
async fn the_group_path_stays_within_its_call_budget() {
    check(
        "groups",
        async |_| {},
        |i| EnqueueOptions {
            group: Some(format!("g{}", i % 50)),
            ..Default::default()
        },
    )
    .await;
}

#[tokio::test]
async fn the_rate_limited_path_stays_within_its_call_budget() {
    check(
        "rate limit",
        async |q| {
            q.set_limits(Limits {
                rate: Some(Rate::new(1_000_000, Duration::from_secs(1))),
                ..Default::default()
            })
            .await
            .unwrap()
        },
        |_| EnqueueOptions::default(),
    )
    .await;
}

#[tokio::test]
async fn the_path_with_events_on_stays_within_its_call_budget() {
    check(
        "events on",
        async |q| q.set_events(Some(1000)).await.unwrap(),
        |_| EnqueueOptions::default(),
    )
    .await;
}

/// Redis keeps a small hash as one listpack (up to 512 fields on a server started without a
/// config file) and scans it for each field, so filling one with a run of hundreds of fields
/// cost time quadratic in the run: the ready-since entries of 1,000 delayed jobs promoted at once
/// took 10 million of the fetch's 35 million Redis instructions. A run of more than 128 fields
/// first makes the hash a hash table, and leaves nothing behind; a smaller run leaves a small
/// hash as it is.
#[tokio::test]
async fn a_run_of_hundreds_of_fields_never_fills_a_hash_by_scanning_it() {
    let server = RedisServer::start();
    let jobs = |n: usize| -> Vec<(Vec<u8>, EnqueueOptions)> {
        (0..n)
            .map(|i| (format!("{i}").into_bytes(), EnqueueOptions::default()))
            .collect()
    };
    let meta = |q: &Queue| format!("tideq:{{{}}}:meta", q.name());
    let encoding = |q: &Queue| -> String {
        redis::cmd("OBJECT")
            .arg("ENCODING")
            .arg(meta(q))
            .query(&mut server.conn())
            .unwrap()
    };
    let q = queue(&server.url);
    q.enqueue_many(&jobs(300)).await.unwrap();
    assert_eq!(encoding(&q), "hashtable");
    let (fields, marker): (u64, bool) = redis::pipe()
        .cmd("HLEN")
        .arg(meta(&q))
        .cmd("HEXISTS")
        .arg(meta(&q))
        .arg("")
        .query(&mut server.conn())
        .unwrap();
    assert_eq!((fields, marker), (300, false));
    let small = queue(&server.url);
    small.enqueue_many(&jobs(100)).await.unwrap();
    assert_eq!(encoding(&small), "listpack");
}
