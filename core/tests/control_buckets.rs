//! Queue control, token-bucket rates (`Rate::bucket`): a queue's or a group's bucket lets its burst
//! start at once and no more, refills at its rate, is split between a sharded queue's shards so
//! it holds across them, reads back as set, and a bad one is refused with nothing written.
//! Against a real redis-server.

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::control::*;
use common::jobs::*;
use common::RedisServer;
use tideq::{
    Client, ErrorKind, GroupLimits, Job, Limits, Queue, QueueOptions, Rate, WorkerOptions,
};

const LEASE: Duration = Duration::from_secs(30);

async fn leased(q: &Queue, n: usize) -> usize {
    q.lease_jobs(n, LEASE).await.unwrap().len()
}

#[tokio::test]
async fn a_queue_bucket_starts_its_burst_at_once_then_no_more_until_it_refills() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    // One start a minute: nothing refills within the test.
    q.set_limits(Limits {
        rate: Some(Rate::bucket(1, Duration::from_secs(60), 20)),
        ..Default::default()
    })
    .await
    .unwrap();
    for i in 0..50 {
        q.enqueue(format!("j{i}").as_bytes(), Default::default())
            .await
            .unwrap();
    }
    assert_eq!(leased(&q, 100).await, 20, "a new bucket is full");
    assert_eq!(leased(&q, 100).await, 0, "an empty bucket starts nothing");
    assert_eq!(q.stats().await.unwrap().ready, 30, "the rest stay ready");
}

#[tokio::test]
async fn a_queue_bucket_refills_at_its_rate_and_never_holds_more_than_its_burst() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    // 10 a second (one every 100 ms), at most 5 at once.
    q.set_limits(Limits {
        rate: Some(Rate::bucket(10, Duration::from_secs(1), 5)),
        ..Default::default()
    })
    .await
    .unwrap();
    for i in 0..100 {
        q.enqueue(format!("j{i}").as_bytes(), Default::default())
            .await
            .unwrap();
    }
    assert_eq!(leased(&q, 100).await, 5);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let refilled = leased(&q, 100).await;
    assert!((3..=5).contains(&refilled), "{refilled} after 300 ms");
    // Idle far longer than it takes to fill: still only the burst.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(
        leased(&q, 100).await,
        5,
        "a full bucket holds its burst, no more"
    );
}

#[tokio::test]
async fn a_group_bucket_limits_that_group_only() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    q.set_group_limits(
        "metered",
        GroupLimits {
            rate: Some(Rate::bucket(1, Duration::from_secs(60), 3)),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    for _ in 0..10 {
        q.enqueue(b"metered", group("metered")).await.unwrap();
        q.enqueue(b"free", group("free")).await.unwrap();
    }
    let mut got = lease_all(&q).await;
    got.sort();
    let metered = got.iter().filter(|p| *p == "metered").count();
    assert_eq!((metered, got.len()), (3, 13), "{got:?}");
    let info = q.group("metered").await.unwrap();
    assert_eq!(info.ready, 7);
    assert_eq!(info.rate, Some(Rate::bucket(1, Duration::from_secs(60), 3)));
}

#[tokio::test]
async fn a_default_group_bucket_gives_each_group_its_own_burst() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    q.set_limits(Limits {
        group_rate: Some(Rate::bucket(1, Duration::from_secs(60), 2)),
        ..Default::default()
    })
    .await
    .unwrap();
    for g in ["a", "b", "c"] {
        for _ in 0..5 {
            q.enqueue(g.as_bytes(), group(g)).await.unwrap();
        }
    }
    let mut got = lease_all(&q).await;
    got.sort();
    assert_eq!(got, ["a", "a", "b", "b", "c", "c"]);
}

#[tokio::test]
async fn a_sharded_queue_bucket_holds_across_its_shards_and_reads_back_whole() {
    let server = RedisServer::start();
    let client = Client::open(&server.url).unwrap();
    let q = Queue::sharded(
        &client,
        &common::unique("bucket"),
        2,
        QueueOptions::default(),
    )
    .unwrap();
    let rate = Rate::bucket(2, Duration::from_secs(60), 6);
    q.set_limits(Limits {
        rate: Some(rate),
        ..Default::default()
    })
    .await
    .unwrap();
    assert_eq!(q.limits().await.unwrap().rate, Some(rate));
    for i in 0..40 {
        q.enqueue(format!("j{i}").as_bytes(), Default::default())
            .await
            .unwrap();
    }
    let mut total = 0;
    for _ in 0..4 {
        total += leased(&q, 100).await;
    }
    assert_eq!(total, 6, "3 per shard, 6 in all");
    let e = q
        .set_limits(Limits {
            rate: Some(Rate::bucket(2, Duration::from_secs(60), 1)),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    assert!(e.to_string().contains("burst"), "{e}");
    assert_eq!(
        q.limits().await.unwrap().rate,
        Some(rate),
        "nothing written"
    );
}

#[tokio::test]
async fn a_bucket_reads_back_as_set_and_a_zero_burst_is_refused_with_nothing_written() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let limits = Limits {
        rate: Some(Rate::bucket(100, Duration::from_secs(1), 500)),
        group_rate: Some(Rate::bucket(5, Duration::from_millis(250), 1)),
        ..Default::default()
    };
    q.set_limits(limits).await.unwrap();
    assert_eq!(q.limits().await.unwrap(), limits);
    let e = q
        .set_limits(Limits {
            rate: Some(Rate::bucket(100, Duration::from_secs(1), 0)),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(e.to_string().contains("burst"), "{e}");
    let e = q
        .set_group_limits(
            "g",
            GroupLimits {
                rate: Some(Rate::bucket(1, Duration::from_secs(1), 0)),
                ..Default::default()
            },
        )
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert_eq!(q.limits().await.unwrap(), limits, "nothing written");
    assert_eq!(q.group("g").await.unwrap().rate, limits.group_rate);
}

/// Workers at a high concurrency, 10 s: the queue starts its burst, then its refill rate, within
/// 5% (the bucket never gives more; a stall of the machine shorter than the burst's worth of
/// refill is made up after it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queue_bucket_starts_its_burst_then_its_refill_rate_within_5_percent_over_10_s() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let (refill, burst, secs) = (50u32, 100u32, 10u64);
    q.set_limits(Limits {
        rate: Some(Rate::bucket(refill, Duration::from_secs(1), burst)),
        ..Default::default()
    })
    .await
    .unwrap();
    let jobs: Vec<(Vec<u8>, _)> = (0..2000)
        .map(|i| (format!("j{i}").into_bytes(), Default::default()))
        .collect();
    for chunk in jobs.chunks(1000) {
        q.enqueue_many(chunk).await.unwrap();
    }
    let starts = Arc::new(Mutex::new(Vec::new()));
    let s = starts.clone();
    let t0 = Instant::now();
    let worker = q
        .work(
            WorkerOptions {
                concurrency: 50,
                ..Default::default()
            },
            move |_job: Job| {
                let s = s.clone();
                async move {
                    s.lock().unwrap().push(t0.elapsed());
                    Ok::<(), String>(())
                }
            },
        )
        .unwrap();
    tokio::time::sleep(Duration::from_secs(secs)).await;
    worker.shutdown().await;
    let starts = starts.lock().unwrap().clone();
    let within = starts
        .iter()
        .filter(|t| **t <= Duration::from_secs(secs))
        .count() as f64;
    let expected = f64::from(burst) + f64::from(refill) * secs as f64;
    eprintln!("queue bucket: {within} starts in {secs} s, expected {expected}");
    assert!(
        (within - expected).abs() <= expected * 0.05,
        "{within} starts in {secs} s, expected {expected} ± 5%"
    );
}
