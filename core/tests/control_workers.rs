//! Queue control observed from inside the handlers, across concurrent workers and worker processes:
//! a group's concurrency and the queue's running cap and start rate are never exceeded, and a
//! worker killed mid-job gives its group's slots back within the lease.

mod common;

use std::collections::HashMap;
use std::process::{Child, Command};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::control::*;
use common::jobs::*;
use common::{unique, RedisServer};
use tideq::{
    Client, EnqueueOptions, GroupLimits, Job, Limits, Queue, QueueOptions, Rate, WorkerOptions,
};

/// Records, in Redis, how many jobs of each group run at once: `HINCRBY` on start and end, and
/// the highest count seen per group. Works across processes.
async fn observe(conn: &mut redis::aio::MultiplexedConnection, key: &str, g: &str) -> i64 {
    let now: i64 = redis::cmd("HINCRBY")
        .arg(format!("{key}:running"))
        .arg(g)
        .arg(1)
        .query_async(conn)
        .await
        .unwrap();
    let _: () = redis::cmd("EVAL")
        .arg("if tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or 0) < tonumber(ARGV[2]) then redis.call('HSET', KEYS[1], ARGV[1], ARGV[2]) end")
        .arg(1)
        .arg(format!("{key}:max"))
        .arg(g)
        .arg(now)
        .query_async(conn)
        .await
        .unwrap();
    now
}

async fn observed_end(conn: &mut redis::aio::MultiplexedConnection, key: &str, g: &str) {
    let _: i64 = redis::cmd("HINCRBY")
        .arg(format!("{key}:running"))
        .arg(g)
        .arg(-1)
        .query_async(conn)
        .await
        .unwrap();
}

#[tokio::test]
async fn concurrency_1_never_runs_two_jobs_of_a_group_at_once() {
    // BullMQ Pro's groups have been seen running two jobs of a group with concurrency 1.
    let server = RedisServer::start();
    let q = queue(&server.url);
    q.set_group_limits(
        "serial",
        GroupLimits {
            concurrency: Some(1),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let jobs: Vec<_> = (0..40)
        .map(|i| (format!("{i}").into_bytes(), group("serial")))
        .collect();
    q.enqueue_many(&jobs).await.unwrap();
    let client = redis::Client::open(server.url.as_str()).unwrap();
    let key = unique("obs");
    let order = Arc::new(Mutex::new(Vec::new()));
    let (k, o) = (key.clone(), order.clone());
    let worker = q
        .work(
            WorkerOptions {
                concurrency: 20,
                stop_when_drained: true,
                poll_interval: Duration::from_millis(100),
                ..Default::default()
            },
            move |job: Job| {
                let (client, k, o) = (client.clone(), k.clone(), o.clone());
                async move {
                    let mut c = client.get_multiplexed_async_connection().await.unwrap();
                    observe(&mut c, &k, "serial").await;
                    o.lock()
                        .unwrap()
                        .push(String::from_utf8(job.payload).unwrap());
                    tokio::time::sleep(Duration::from_millis(2)).await;
                    observed_end(&mut c, &k, "serial").await;
                    Ok::<(), String>(())
                }
            },
        )
        .unwrap();
    let stats = worker.join().await;
    assert_eq!(stats.completed, 40);
    let max: i64 = redis::cmd("HGET")
        .arg(format!("{key}:max"))
        .arg("serial")
        .query(&mut server.conn())
        .unwrap();
    assert_eq!(max, 1);
    // And in order.
    let expect: Vec<String> = (0..40).map(|i| i.to_string()).collect();
    assert_eq!(*order.lock().unwrap(), expect);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_active_caps_the_running_jobs_across_workers() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    q.set_limits(Limits {
        max_active: Some(3),
        ..Default::default()
    })
    .await
    .unwrap();
    let jobs: Vec<_> = (0..30)
        .map(|_| (b"x".to_vec(), EnqueueOptions::default()))
        .collect();
    q.enqueue_many(&jobs).await.unwrap();
    let client = redis::Client::open(server.url.as_str()).unwrap();
    let key = unique("obs");
    let mut workers = Vec::new();
    for _ in 0..2 {
        let (client, k) = (client.clone(), key.clone());
        let w = queue_named(&server.url, q.name())
            .work(
                WorkerOptions {
                    concurrency: 10,
                    ..Default::default()
                },
                move |_job: Job| {
                    let (client, k) = (client.clone(), k.clone());
                    async move {
                        let mut c = client.get_multiplexed_async_connection().await.unwrap();
                        observe(&mut c, &k, "all").await;
                        tokio::time::sleep(Duration::from_millis(20)).await;
                        observed_end(&mut c, &k, "all").await;
                        Ok::<(), String>(())
                    }
                },
            )
            .unwrap();
        workers.push(w);
    }
    assert!(
        wait_for(Duration::from_secs(30), || async {
            q.stats().await.unwrap().completed == 30
        })
        .await
    );
    for w in &workers {
        w.shutdown().await;
    }
    let max: i64 = redis::cmd("HGET")
        .arg(format!("{key}:max"))
        .arg("all")
        .query(&mut server.conn())
        .unwrap();
    assert!(max <= 3, "{max} jobs ran at once");
}

fn queue_named(url: &str, name: &str) -> Queue {
    Queue::new(
        &Client::open(url).unwrap(),
        name,
        QueueOptions {
            backoff: tideq::Backoff::fixed(50),
            ..Default::default()
        },
    )
    .unwrap()
}

// ---- worker processes ----------------------------------------------------------------------

/// Runs as a worker process when started by [`spawn_worker`] (this test binary, re-executed with
/// `TIDEQ_FLOW_CHILD` set); a no-op in a normal test run. The handler records what it sees in
/// Redis: per group, jobs running now and the most seen at once; start times of every job.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn control_worker_process() {
    let Ok(spec) = std::env::var("TIDEQ_FLOW_CHILD") else {
        return;
    };
    let (url, name, key, lease_ms, hang) = {
        let p: Vec<&str> = spec.split(' ').collect();
        (
            p[0].to_string(),
            p[1].to_string(),
            p[2].to_string(),
            p[3].parse::<u64>().unwrap(),
            p[4] == "hang",
        )
    };
    let q = queue_named(&url, &name);
    let client = redis::Client::open(url.as_str()).unwrap();
    let k = key.clone();
    let worker = q
        .work(
            WorkerOptions {
                concurrency: 30,
                lease: Duration::from_millis(lease_ms),
                ..Default::default()
            },
            move |job: Job| {
                let (client, k) = (client.clone(), k.clone());
                async move {
                    let mut c = client.get_multiplexed_async_connection().await.unwrap();
                    let g = String::from_utf8(job.payload.clone()).unwrap();
                    observe(&mut c, &k, &g).await;
                    let _: () = redis::cmd("RPUSH")
                        .arg(format!("{k}:starts"))
                        .arg(job.started_at)
                        .query_async(&mut c)
                        .await
                        .unwrap();
                    if hang {
                        std::future::pending::<()>().await;
                    }
                    tokio::time::sleep(Duration::from_millis(3 + fastrand_ms())).await;
                    observed_end(&mut c, &k, &g).await;
                    Ok::<(), String>(())
                }
            },
        )
        .unwrap();
    worker.run_until_signal().await;
}

fn fastrand_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos() as u64
        % 7
}

struct WorkerProcess(Child);

impl Drop for WorkerProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn spawn_worker(url: &str, queue: &str, key: &str, lease_ms: u64, hang: bool) -> WorkerProcess {
    let exe = std::env::current_exe().unwrap();
    let spec = format!(
        "{url} {queue} {key} {lease_ms} {}",
        if hang { "hang" } else { "run" }
    );
    WorkerProcess(
        Command::new(exe)
            .args([
                "--exact",
                "control_worker_process",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("TIDEQ_FLOW_CHILD", spec)
            .spawn()
            .unwrap(),
    )
}

fn max_seen(server: &RedisServer, key: &str) -> HashMap<String, i64> {
    redis::cmd("HGETALL")
        .arg(format!("{key}:max"))
        .query(&mut server.conn())
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_group_concurrency_is_never_exceeded_across_three_worker_processes() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let key = unique("obs");
    q.set_limits(Limits {
        group_concurrency: Some(3),
        ..Default::default()
    })
    .await
    .unwrap();
    q.set_group_limits(
        "g0",
        GroupLimits {
            concurrency: Some(1),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let jobs: Vec<_> = (0..600)
        .map(|i| {
            let g = format!("g{}", i % 8);
            (g.clone().into_bytes(), group(&g))
        })
        .collect();
    q.enqueue_many(&jobs).await.unwrap();
    let _workers: Vec<_> = (0..3)
        .map(|_| spawn_worker(&server.url, q.name(), &key, 30_000, false))
        .collect();
    assert!(
        wait_for(Duration::from_secs(120), || async {
            q.stats().await.unwrap().completed == 600
        })
        .await,
        "{:?}",
        q.stats().await.unwrap()
    );
    let max = max_seen(&server, &key);
    assert_eq!(max.len(), 8);
    for (g, m) in &max {
        let limit = if g == "g0" { 1 } else { 3 };
        assert!(
            *m <= limit,
            "group {g}: {m} jobs ran at once (limit {limit})"
        );
    }
    // The limits were reached, not just respected by a slow run.
    assert!(max.values().filter(|m| **m == 3).count() >= 4, "{max:?}");
    for g in 0..8 {
        let info = q.group(&format!("g{g}")).await.unwrap();
        assert_eq!((info.active, info.ready), (0, 0));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_holding_a_groups_jobs_gives_the_slots_back_within_the_lease() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let key = unique("obs");
    q.set_limits(Limits {
        group_concurrency: Some(2),
        ..Default::default()
    })
    .await
    .unwrap();
    let jobs: Vec<_> = (0..6).map(|_| (b"t".to_vec(), group("t"))).collect();
    q.enqueue_many(&jobs).await.unwrap();
    let mut hung = spawn_worker(&server.url, q.name(), &key, 1_000, true);
    assert!(
        wait_for(Duration::from_secs(30), || async {
            q.group("t").await.unwrap().active == 2
        })
        .await
    );
    hung.0.kill().unwrap(); // SIGKILL
    hung.0.wait().unwrap();
    let killed = Instant::now();
    assert_eq!(
        q.group("t").await.unwrap().active,
        2,
        "held until the leases end"
    );
    let done = Arc::new(AtomicU64::new(0));
    let d = done.clone();
    let worker = q
        .work(drained(), move |_job: Job| {
            d.fetch_add(1, Ordering::SeqCst);
            async { Ok::<(), String>(()) }
        })
        .unwrap();
    let stats = worker.join().await;
    assert_eq!(stats.completed, 6);
    assert!(killed.elapsed() < Duration::from_secs(30));
    let info = q.group("t").await.unwrap();
    assert_eq!((info.active, info.ready), (0, 0));
    assert_eq!(q.stats().await.unwrap().recovered, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_of_500_per_second_holds_across_three_worker_processes() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let key = unique("obs");
    q.set_limits(Limits {
        rate: Some(Rate::new(500, Duration::from_secs(1))),
        ..Default::default()
    })
    .await
    .unwrap();
    let jobs: Vec<_> = (0..5_000)
        .map(|_| (b"all".to_vec(), EnqueueOptions::default()))
        .collect();
    q.enqueue_many(&jobs).await.unwrap();
    let workers: Vec<_> = (0..3)
        .map(|_| spawn_worker(&server.url, q.name(), &key, 30_000, false))
        .collect();
    // Six seconds from the first start, then stop starting.
    let mut conn = server.conn();
    let first = loop {
        let s: Vec<u64> = redis::cmd("LRANGE")
            .arg(format!("{key}:starts"))
            .arg(0)
            .arg(0)
            .query(&mut conn)
            .unwrap();
        if let Some(t) = s.first() {
            break *t;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    while redis_ms(&server) < first + 6_500 {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    q.pause().await.unwrap();
    drop(workers);
    let mut starts: Vec<u64> = redis::cmd("LRANGE")
        .arg(format!("{key}:starts"))
        .arg(0)
        .arg(-1)
        .query(&mut conn)
        .unwrap();
    starts.sort();
    let in_six: Vec<u64> = starts
        .iter()
        .copied()
        .filter(|t| *t < first + 6_000)
        .collect();
    let n = in_six.len() as f64;
    assert!(
        (n - 3000.0).abs() <= 90.0,
        "{n} starts in 6 s at 500/s (expected 3,000 ± 3%)"
    );
    // No one-second window (sliding, on the Redis clock) holds more than 500 starts.
    for (i, t) in starts.iter().enumerate() {
        let j = starts.partition_point(|s| *s < t + 1000);
        assert!(j - i <= 500, "{} starts in the second from {t}", j - i);
    }
}
