//! Per-task metrics (`Queue::task_metrics`, issue 43 "Queue health at a glance": per-task counts
//! and run times; defect 11's missing per-task label): counted by each worker in memory and sent
//! with the reports it sends anyway, so the ack and fail paths make no extra call. One test per
//! promise, against a real redis-server. A worker's last report goes out when it shuts down, so
//! the tests stop the worker instead of waiting for a periodic report.

mod common;

use std::collections::HashMap;
use std::time::Duration;

use common::jobs::*;
use common::{scale, RedisServer};
use tideq::task_metrics::{OTHER_TASK, TASKS_MAX};
use tideq::{
    Backoff, EnqueueOptions, ErrorKind, Job, Queue, QueueOptions, TaskMetrics, WorkerOptions,
};

const HOUR: Duration = Duration::from_secs(3600);
const DAY: Duration = Duration::from_secs(86_400);

fn task(name: &str) -> EnqueueOptions {
    EnqueueOptions {
        task: Some(name.to_string()),
        ..Default::default()
    }
}

fn fast() -> WorkerOptions {
    WorkerOptions {
        poll_interval: Duration::from_millis(50),
        concurrency: 8,
        ..Default::default()
    }
}

/// Runs a worker whose handler fails a job whose payload is "fail", and a job whose payload is
/// "once" on its first attempt, until the queue has `completed` completed and `dead` dead jobs;
/// then shuts it down (its last report goes out).
async fn run_until(q: &Queue, completed: u64, dead: u64) {
    let w = q
        .work(fast(), |job: Job| async move {
            match job.payload_str().ok() {
                Some("fail") => Err("always".to_string()),
                Some("once") if job.attempt == 1 => Err("once".to_string()),
                _ => Ok(()),
            }
        })
        .unwrap();
    let done = wait_for(Duration::from_secs(20), || async {
        let s = q.stats().await.unwrap();
        s.completed == completed && s.dead_lettered == dead
    })
    .await;
    w.shutdown().await;
    assert!(done, "{:?}", q.stats().await.unwrap());
}

fn by_task(m: &[TaskMetrics]) -> HashMap<&str, &TaskMetrics> {
    m.iter().map(|t| (t.task.as_str(), t)).collect()
}

#[tokio::test]
async fn three_tasks_count_their_completions_failures_and_dead_letters_exactly() {
    let server = RedisServer::start();
    let q = queue_with(
        &server.url,
        QueueOptions {
            backoff: Backoff::fixed(10),
            max_attempts: 2,
            ..Default::default()
        },
    );
    // "mail": 5 complete; "resize:img|x" (separators in the name): 3 fail once then complete;
    // "bill": 2 fail twice and are dead-lettered; one raw payload completes (task "").
    for _ in 0..5 {
        q.enqueue("ok", task("mail")).await.unwrap();
    }
    for _ in 0..3 {
        q.enqueue("once", task("resize:img|x")).await.unwrap();
    }
    for _ in 0..2 {
        q.enqueue("fail", task("bill")).await.unwrap();
    }
    q.enqueue("ok", EnqueueOptions::default()).await.unwrap();
    run_until(&q, 9, 2).await;
    for window in [None, Some(HOUR), Some(DAY), Some(14 * DAY)] {
        let m = q.task_metrics(window).await.unwrap();
        let t = by_task(&m);
        assert_eq!(m.len(), 4, "{window:?}: {m:?}");
        let counts = |n: &str| {
            let x = t[n];
            (x.completed, x.failed, x.dead_lettered, x.runs)
        };
        assert_eq!(counts("mail"), (5, 0, 0, 5), "{window:?}");
        assert_eq!(counts("resize:img|x"), (3, 3, 0, 6), "{window:?}");
        assert_eq!(counts("bill"), (0, 4, 2, 4), "{window:?}");
        assert_eq!(counts(""), (1, 0, 0, 1), "{window:?}");
        for x in &m {
            assert!(x.run_ms_sum >= 0.0);
            assert_eq!(x.run_ms_avg, Some(x.run_ms_sum / x.runs as f64));
        }
    }
}

#[tokio::test]
async fn a_hundred_and_fifty_task_names_keep_a_hundred_and_count_the_rest_as_other() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    for i in 0..150 {
        for _ in 0..2 {
            q.enqueue("ok", task(&format!("t{i}"))).await.unwrap();
        }
    }
    run_until(&q, 300, 0).await;
    let m = q.task_metrics(None).await.unwrap();
    assert_eq!(m.len(), TASKS_MAX + 1, "{m:?}");
    assert_eq!(m.last().unwrap().task, OTHER_TASK, "(other) comes last");
    let total: u64 = m.iter().map(|t| t.completed).sum();
    let runs: u64 = m.iter().map(|t| t.runs).sum();
    assert_eq!((total, runs), (300, 300), "every job counted once");
    let other = by_task(&m)[OTHER_TASK];
    assert_eq!(other.completed, 100, "50 names past the cap, 2 jobs each");
    for t in m.iter().filter(|t| t.task != OTHER_TASK) {
        assert_eq!(t.completed, 2, "{t:?}");
    }
    // The names tracked stay tracked; a new name still goes to "(other)".
    q.enqueue("ok", task("t-late")).await.unwrap();
    run_until(&q, 301, 0).await;
    let m = q.task_metrics(None).await.unwrap();
    assert_eq!(m.len(), TASKS_MAX + 1);
    assert_eq!(by_task(&m)[OTHER_TASK].completed, 101);
}

#[tokio::test]
async fn a_report_of_many_tasks_costs_no_call_over_10_ms() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    for i in 0..150 {
        q.enqueue("ok", task(&format!("first-{i:03}-{}", "x".repeat(40))))
            .await
            .unwrap();
    }
    run_until(&q, 150, 0).await;
    // The next report files 150 names (50 new ones to "(other)") and, its snapshots removed,
    // writes both snapshots of 101 tasks' totals: the most a report does.
    for i in 0..150 {
        q.enqueue("ok", task(&format!("second-{i:03}-{}", "y".repeat(40))))
            .await
            .unwrap();
    }
    let mut c = server.conn();
    let keys: Vec<String> = redis::cmd("KEYS").arg("*:t[mh]:*").query(&mut c).unwrap();
    assert_eq!(keys.len(), 2, "{keys:?}");
    let _: () = redis::cmd("DEL").arg(&keys).query(&mut c).unwrap();
    scale::slowlog_from_now(&server, 200);
    run_until(&q, 300, 0).await;
    let calls = scale::slow_calls(&server, 200);
    let took = |c: &String| c.split(' ').next().unwrap().parse::<u64>().unwrap();
    let longest = calls.iter().map(took).max().unwrap_or(0);
    println!(
        "{} calls over 0.2 ms, the longest {longest} µs",
        calls.len()
    );
    let slow: Vec<_> = calls.iter().filter(|c| took(c) > 10_000).collect();
    assert!(slow.is_empty(), "calls over 10 ms: {slow:?}");
    // The snapshot that report wrote holds the first 150: the hour counts from it.
    let m = q.task_metrics(Some(HOUR)).await.unwrap();
    assert_eq!(m.iter().map(|t| t.completed).sum::<u64>(), 150);
    let m = q.task_metrics(None).await.unwrap();
    assert_eq!(m.iter().map(|t| t.completed).sum::<u64>(), 300);
    let keys: Vec<String> = redis::cmd("KEYS").arg("*:t[mh]:*").query(&mut c).unwrap();
    assert_eq!(keys.len(), 2, "the snapshots are written again: {keys:?}");
}

#[tokio::test]
async fn a_window_counts_from_the_snapshot_at_its_start() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    for _ in 0..3 {
        q.enqueue("ok", task("a")).await.unwrap();
    }
    run_until(&q, 3, 0).await;
    // Hourly snapshots written as the reports write them: 10 days ago "a" had none completed,
    // 30 hours ago 1. The 14-day window has no snapshot at its start and counts from the first
    // after it (3); the day's counts from the one 30 hours ago (2).
    let now = redis_ms(&server);
    let mut c = server.conn();
    let th: Vec<String> = redis::cmd("KEYS").arg("*:th:*").query(&mut c).unwrap();
    assert_eq!(th.len(), 1, "{th:?}");
    let prefix = th[0].rsplit_once(':').unwrap().0.to_string();
    for (ago_h, v) in [(240, "a:0:0:0:0:0"), (30, "a:1:0:0:1:0")] {
        let at = now - ago_h * 3_600_000;
        let _: () = redis::cmd("HSET")
            .arg(format!("{prefix}:{}", at / 86_400_000))
            .arg((at % 86_400_000) / 3_600_000)
            .arg(v)
            .query(&mut c)
            .unwrap();
    }
    let completed = |m: Vec<TaskMetrics>| by_task(&m)["a"].completed;
    assert_eq!(completed(q.task_metrics(Some(14 * DAY)).await.unwrap()), 3);
    assert_eq!(completed(q.task_metrics(Some(DAY)).await.unwrap()), 2);
    assert_eq!(completed(q.task_metrics(Some(HOUR)).await.unwrap()), 3);
    assert_eq!(completed(q.task_metrics(None).await.unwrap()), 3);
}

#[tokio::test]
async fn a_bad_window_is_refused() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    for w in [Duration::from_secs(59), 15 * DAY] {
        let e = q.task_metrics(Some(w)).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{w:?}");
    }
    assert!(q.task_metrics(None).await.unwrap().is_empty());
}

#[tokio::test]
async fn obliterate_removes_the_per_task_keys() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    q.enqueue("ok", task("a")).await.unwrap();
    run_until(&q, 1, 0).await;
    let mut c = server.conn();
    let before: Vec<String> = redis::cmd("KEYS").arg("*:t*").query(&mut c).unwrap();
    assert!(before.len() >= 4, "tasks, tstat, tm, th: {before:?}");
    q.obliterate(true).await.unwrap();
    let after: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut c).unwrap();
    assert!(after.is_empty(), "{after:?}");
}

/// A sharded queue's workers report to one shard at a time: the counts are summed over the
/// shards by task name, in every window.
#[tokio::test]
async fn a_sharded_queues_counts_are_summed_over_its_shards() {
    let server = RedisServer::start();
    let client = tideq::Client::open(&server.url).unwrap();
    let q = Queue::sharded(&client, &common::unique("tsh"), 4, Default::default()).unwrap();
    for i in 0..60 {
        let name = if i % 3 == 0 { "a" } else { "b" };
        q.enqueue("ok", task(name)).await.unwrap();
    }
    run_until(&q, 60, 0).await;
    for window in [None, Some(HOUR), Some(14 * DAY)] {
        let m = q.task_metrics(window).await.unwrap();
        let t = by_task(&m);
        assert_eq!((t["a"].completed, t["b"].completed), (20, 40), "{window:?}");
        assert_eq!((t["a"].runs, t["b"].runs), (20, 40), "{window:?}");
    }
}
