//! Queue control, the limits: per-group concurrency (a group at its limit blocks no other, a
//! stalled job gives its slot back, a limit set while jobs run counts them), limits read back and
//! a group's own or the queue's default, and start rates (queue-wide and per group).

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::control::*;
use common::jobs::*;
use common::RedisServer;
use tideq::{EnqueueOptions, ErrorKind, GroupLimits, Job, Limits, Rate, WorkerOptions};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_at_its_limit_never_blocks_the_other_groups() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    q.set_limits(Limits {
        group_concurrency: Some(1),
        ..Default::default()
    })
    .await
    .unwrap();
    for i in 0..3 {
        q.enqueue(format!("slow-{i}").as_bytes(), group("slow"))
            .await
            .unwrap();
    }
    for i in 0..20 {
        q.enqueue(
            format!("fast-{i}").as_bytes(),
            group(&format!("f{}", i % 4)),
        )
        .await
        .unwrap();
    }
    let release = Arc::new(tokio::sync::Notify::new());
    let fast = Arc::new(AtomicU64::new(0));
    let (r, f) = (release.clone(), fast.clone());
    let worker = q
        .work(
            WorkerOptions {
                concurrency: 8,
                ..Default::default()
            },
            move |job: Job| {
                let (r, f) = (r.clone(), f.clone());
                async move {
                    if job.payload.starts_with(b"slow") {
                        r.notified().await;
                    } else {
                        f.fetch_add(1, Ordering::SeqCst);
                    }
                    Ok::<(), String>(())
                }
            },
        )
        .unwrap();
    // All fast jobs finish while the slow group's first job holds its only slot.
    assert!(
        wait_until(Duration::from_secs(20), || fast.load(Ordering::SeqCst)
            == 20)
        .await
    );
    let info = q.group("slow").await.unwrap();
    assert_eq!((info.active, info.ready, info.concurrency), (1, 2, Some(1)));
    for _ in 0..3 {
        release.notify_one();
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        wait_for(Duration::from_secs(20), || async {
            let s = q.stats().await.unwrap();
            if s.completed < 23 {
                release.notify_one();
            }
            s.completed == 23
        })
        .await
    );
    worker.shutdown().await;
    let info = q.group("slow").await.unwrap();
    assert_eq!((info.active, info.ready), (0, 0));
}

#[tokio::test]
async fn a_stalled_job_gives_its_group_slot_back_and_keeps_its_place() {
    // BullMQ Pro: a stalled job could leave its group's active count stuck, and the group
    // stopped. Here the expired lease frees the slot, and the job runs again before the jobs
    // enqueued after it.
    let server = RedisServer::start();
    let q = queue(&server.url);
    q.set_limits(Limits {
        group_concurrency: Some(1),
        ..Default::default()
    })
    .await
    .unwrap();
    for i in 0..3 {
        q.enqueue(format!("{i}").as_bytes(), group("g"))
            .await
            .unwrap();
    }
    let first = q.lease_jobs(10, Duration::from_millis(200)).await.unwrap();
    assert_eq!(first.len(), 1, "the group's limit is 1");
    assert_eq!(first[0].payload, b"0");
    assert!(q
        .lease_jobs(10, Duration::from_secs(30))
        .await
        .unwrap()
        .is_empty());
    assert_eq!(q.group("g").await.unwrap().active, 1);
    // The holder dies (never acks). Once the lease is over, the slot is back, and job 0 first.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let again = q.lease_jobs(10, Duration::from_secs(30)).await.unwrap();
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].payload, b"0");
    assert_eq!(again[0].attempt, 2);
    assert!(matches!(
        q.complete(&first[0]).await.unwrap_err().kind(),
        ErrorKind::LeaseLost
    ));
    q.complete(&again[0]).await.unwrap();
    assert_eq!(lease_all(&q).await, ["1", "2"]);
    let info = q.group("g").await.unwrap();
    assert_eq!((info.active, info.ready), (0, 0));
}

#[tokio::test]
async fn limits_are_read_back_and_a_group_uses_its_own_or_the_queue_default() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let limits = Limits {
        max_active: Some(7),
        rate: Some(Rate::new(100, Duration::from_secs(1))),
        group_concurrency: Some(2),
        group_rate: Some(Rate::new(5, Duration::from_millis(250))),
    };
    q.set_limits(limits).await.unwrap();
    assert_eq!(q.limits().await.unwrap(), limits);
    let own = GroupLimits {
        concurrency: Some(9),
        rate: None,
    };
    q.set_group_limits("vip", own).await.unwrap();
    let vip = q.group("vip").await.unwrap();
    assert_eq!(vip.concurrency, Some(9));
    assert_eq!(vip.rate, limits.group_rate);
    let other = q.group("other").await.unwrap();
    assert_eq!(
        (other.concurrency, other.rate),
        (Some(2), limits.group_rate)
    );
    q.set_limits(Limits::default()).await.unwrap();
    assert_eq!(q.limits().await.unwrap(), Limits::default());
    assert_eq!(q.group("other").await.unwrap().concurrency, None);
}

#[tokio::test]
async fn rate_limited_jobs_stay_ready_and_an_idle_worker_waits_exactly_for_the_window() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    q.set_limits(Limits {
        rate: Some(Rate::new(2, Duration::from_millis(400))),
        ..Default::default()
    })
    .await
    .unwrap();
    let jobs: Vec<_> = (0..6)
        .map(|_| (b"x".to_vec(), EnqueueOptions::default()))
        .collect();
    q.enqueue_many(&jobs).await.unwrap();
    let starts = Arc::new(Mutex::new(Vec::new()));
    let s = starts.clone();
    let worker = q
        .work(
            WorkerOptions {
                concurrency: 10,
                // Longer than the test: the worker must wake for the window by itself.
                poll_interval: Duration::from_secs(60),
                ..Default::default()
            },
            move |job: Job| {
                s.lock().unwrap().push(job.started_at);
                async { Ok::<(), String>(()) }
            },
        )
        .unwrap();
    assert!(
        wait_until(Duration::from_secs(20), || starts.lock().unwrap().len()
            >= 2)
        .await
    );
    // Limited jobs wait where they are: ready, not delayed.
    let s = q.stats().await.unwrap();
    assert_eq!((s.delayed, s.ready), (0, 4));
    assert!(
        wait_until(Duration::from_secs(20), || starts.lock().unwrap().len()
            == 6)
        .await
    );
    worker.shutdown().await;
    let mut t = starts.lock().unwrap().clone();
    t.sort();
    // Never three starts within 400 ms.
    for w in t.windows(3) {
        assert!(w[2] - w[0] >= 400, "{t:?}");
    }
}

#[tokio::test]
async fn a_group_rate_limits_that_group_only() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    q.set_group_limits(
        "slow",
        GroupLimits {
            rate: Some(Rate::new(1, Duration::from_secs(60))),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    for g in ["slow", "slow", "fast", "fast", "fast"] {
        q.enqueue(g.as_bytes(), group(g)).await.unwrap();
    }
    let mut got = lease_all(&q).await;
    got.sort();
    assert_eq!(got, ["fast", "fast", "fast", "slow"]);
    let info = q.group("slow").await.unwrap();
    assert_eq!(info.ready, 1);
}

#[tokio::test]
async fn a_limit_set_while_jobs_run_counts_the_jobs_already_running() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    for i in 0..4 {
        q.enqueue(format!("{i}").as_bytes(), group("g"))
            .await
            .unwrap();
    }
    let running = q.lease_jobs(2, Duration::from_secs(30)).await.unwrap();
    assert_eq!(running.len(), 2);
    assert_eq!(
        q.group("g").await.unwrap().active,
        2,
        "counted without a limit too"
    );
    q.set_group_limits(
        "g",
        GroupLimits {
            concurrency: Some(2),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(q.group("g").await.unwrap().active, 2);
    assert!(q
        .lease_jobs(10, Duration::from_secs(30))
        .await
        .unwrap()
        .is_empty());
    q.complete(&running[0]).await.unwrap();
    let next = q.lease_jobs(10, Duration::from_secs(30)).await.unwrap();
    assert_eq!(next.len(), 1);
    assert_eq!(next[0].payload, b"2");
    // Lifting the limit lets the rest start; setting one again counts afresh.
    q.set_group_limits("g", GroupLimits::default())
        .await
        .unwrap();
    let rest = q.lease_jobs(10, Duration::from_secs(30)).await.unwrap();
    assert_eq!(rest.len(), 1);
    q.set_limits(Limits {
        group_concurrency: Some(5),
        ..Default::default()
    })
    .await
    .unwrap();
    assert_eq!(q.group("g").await.unwrap().active, 3);
    for j in [&running[1], &next[0], &rest[0]] {
        q.complete(j).await.unwrap();
    }
    assert_eq!(q.group("g").await.unwrap().active, 0);
}
