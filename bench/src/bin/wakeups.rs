//! Wake-ups and many groups: (1) how soon a new job reaches an idle worker when other workers of
//! the queue are busy (1, 3 and 10 workers, half of them busy; p50/p99 of enqueue-to-handler, one
//! job at a time), and (2) how fast consumers drain a capped queue of 100 000 one-item groups.
//! Starts a private redis-server unless TIDEQ_REDIS_URL is set.
//! `cargo run --release -p tideq-bench --bin wakeups -- [GROUPS]`

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tideq::{
    CappedOptions, CappedQueue, Client, ConsumerOptions, EnqueueOptions, Job, Queue, QueueOptions,
    WorkerOptions,
};
use tideq_testing::RedisServer;

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// Enqueue-to-start latency of jobs sent one at a time to `workers` workers (concurrency 1,
/// polling once a minute, so only wake-ups bring jobs in time), `busy` of them held by a job
/// that runs until the end.
async fn pickup(client: &Client, workers: usize, busy: usize, jobs: usize) -> (f64, f64, f64) {
    let name = format!("wake-{workers}-{}", std::process::id());
    let q = Queue::new(client, &name, QueueOptions::default()).unwrap();
    let release = Arc::new(tokio::sync::Notify::new());
    let started: Arc<Mutex<Vec<(String, Instant)>>> = Default::default();
    let mut handles = Vec::new();
    for _ in 0..workers {
        let (release, started) = (release.clone(), started.clone());
        let opts = WorkerOptions {
            concurrency: 1,
            poll_interval: Duration::from_secs(60),
            ..Default::default()
        };
        handles.push(
            q.work(opts, move |job: Job| {
                started
                    .lock()
                    .unwrap()
                    .push((job.id.clone(), Instant::now()));
                let release = release.clone();
                async move {
                    if job.payload == b"busy" {
                        release.notified().await;
                    }
                    Ok::<(), String>(())
                }
            })
            .unwrap(),
        );
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    for i in 0..busy {
        q.enqueue(
            b"busy",
            EnqueueOptions {
                id: Some(format!("busy{i}")),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    }
    while started.lock().unwrap().len() < busy {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let mut lat = Vec::new();
    for i in 0..jobs {
        tokio::time::sleep(Duration::from_millis(10)).await; // idle workers back in their wait
        let id = format!("j{i}");
        let sent = Instant::now();
        q.enqueue(
            b"x",
            EnqueueOptions {
                id: Some(id.clone()),
                ..Default::default()
            },
        )
        .await
        .unwrap();
        let deadline = Instant::now() + Duration::from_secs(70);
        let at = loop {
            let at = started
                .lock()
                .unwrap()
                .iter()
                .find(|(j, _)| *j == id)
                .map(|(_, t)| *t);
            if let Some(at) = at {
                break at;
            }
            assert!(Instant::now() < deadline, "job {id} never started");
            tokio::time::sleep(Duration::from_micros(200)).await;
        };
        lat.push(at.duration_since(sent).as_secs_f64() * 1000.0);
    }
    release.notify_waiters();
    for h in handles {
        h.shutdown().await;
    }
    lat.sort_by(f64::total_cmp);
    (
        percentile(&lat, 0.5),
        percentile(&lat, 0.99),
        *lat.last().unwrap(),
    )
}

/// Groups per second drained from `groups` one-item groups by `consumers` consumers.
async fn drain(client: &Client, groups: usize, consumers: usize, concurrency: usize) -> f64 {
    let name = format!("drain-{consumers}-{}", std::process::id());
    let opts = CappedOptions {
        capacity: 10,
        ttl: None,
        max_age: None,
        ..Default::default()
    };
    let q = CappedQueue::new(client, &name, opts).unwrap();
    for chunk in (0..groups).collect::<Vec<_>>().chunks(10_000) {
        let items: Vec<(String, &[u8])> =
            chunk.iter().map(|i| (format!("g{i}"), &b"x"[..])).collect();
        q.push_many(&items).await.unwrap();
    }
    let t0 = Instant::now();
    let mut handles = Vec::new();
    for _ in 0..consumers {
        let opts = ConsumerOptions {
            concurrency,
            stop_when_empty: true,
            ..Default::default()
        };
        handles.push(
            q.consume(opts, |_b| async { Ok::<(), String>(()) })
                .unwrap(),
        );
    }
    let mut items = 0;
    for h in handles {
        items += h.join().await.items;
    }
    let secs = t0.elapsed().as_secs_f64();
    assert_eq!(items as usize, groups, "every group drained once");
    groups as f64 / secs
}

#[tokio::main]
async fn main() {
    let groups: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(100_000);
    let redis = RedisServer::from_env_or_start();
    let client = Client::open(&redis.url).unwrap();
    println!("idle-worker pickup, one job at a time (enqueue -> handler start), ms:");
    for (workers, busy) in [(1, 0), (3, 1), (10, 5)] {
        let (p50, p99, max) = pickup(&client, workers, busy, 200).await;
        println!("  {workers:>2} workers, {busy} busy: p50 {p50:.2}  p99 {p99:.2}  max {max:.2}   (target p99 <= 5)");
    }
    println!("capped drain of {groups} one-item groups:");
    for (consumers, concurrency) in [(1, 64), (4, 64)] {
        let rate = drain(&client, groups, consumers, concurrency).await;
        println!("  {consumers} consumer(s) x concurrency {concurrency}: {rate:.0} groups/s   (target >= 100000)");
    }
}
