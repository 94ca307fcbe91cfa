//! The lease protocol's attempts: counted at delivery, retried by Redis time after their backoff,
//! dead-lettered after exactly max_attempts; a lease renewed while a handler runs; timeouts that
//! cancel the job, fail the attempt and keep the slot. One test per promise, against a real
//! redis-server.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::jobs::*;
use common::RedisServer;
use tideq::{Backoff, EnqueueOptions, Job, JobState, QueueOptions, WorkerOptions};

#[tokio::test]
async fn a_handled_job_is_completed_and_retention_is_bounded() {
    let server = RedisServer::start();
    let q = queue_with(
        &server.url,
        QueueOptions {
            keep_completed: 5,
            ..Default::default()
        },
    );
    for i in 0..20 {
        q.enqueue(format!("{i}"), id(&format!("job{i}")))
            .await
            .unwrap();
    }
    let w = q
        .work(drained(), |_job: Job| async { Ok::<(), String>(()) })
        .unwrap();
    let stats = w.join().await;
    assert_eq!(stats.completed, 20);
    let s = q.stats().await.unwrap();
    assert_eq!((s.completed, s.ready, s.active), (20, 0, 0));
    let mut kept = 0;
    for i in 0..20 {
        if let Some(info) = q.get(&format!("job{i}")).await.unwrap() {
            assert_eq!(info.state, JobState::Completed);
            kept += 1;
        }
    }
    assert_eq!(kept, 5, "only the newest 5 completed jobs are retained");
    let stored: u64 = redis::cmd("HLEN")
        .arg(format!("tideq:{{{}}}:jobs", q.name()))
        .query(&mut server.conn())
        .unwrap();
    assert_eq!(stored, 5);
}

#[tokio::test]
async fn a_failing_job_is_retried_then_dead_lettered_after_exactly_max_attempts() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let opts = EnqueueOptions {
        max_attempts: Some(3),
        ..id("flaky")
    };
    q.enqueue(b"x", opts).await.unwrap();
    // Recorded, and checked after the run: a failed assertion inside a handler would only fail
    // the attempt.
    let seen: Arc<Mutex<Vec<u32>>> = Default::default();
    let s2 = seen.clone();
    let w = q
        .work(drained(), move |job: Job| {
            s2.lock().unwrap().push(job.attempt);
            let n = job.attempt;
            async move { Err::<(), _>(format!("boom {n}")) }
        })
        .unwrap();
    let stats = tokio::time::timeout(Duration::from_secs(10), w.join())
        .await
        .unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        vec![1, 2, 3],
        "attempts are numbered from 1"
    );
    assert_eq!(stats.failed, 3);
    let info = q.get("flaky").await.unwrap().unwrap();
    assert_eq!(info.state, JobState::Dead);
    assert_eq!(info.attempts, 3);
    assert_eq!(info.last_error.as_deref(), Some("boom 3"));
    let s = q.stats().await.unwrap();
    assert_eq!((s.dead, s.dead_lettered, s.retried), (1, 1, 2));
}

#[tokio::test]
async fn retries_never_start_before_their_backoff_by_redis_time() {
    let server = RedisServer::start();
    let q = queue_with(
        &server.url,
        QueueOptions {
            backoff: Backoff::fixed(300),
            ..Default::default()
        },
    );
    q.enqueue(
        b"x",
        EnqueueOptions {
            max_attempts: Some(3),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let times = Arc::new(Mutex::new(Vec::new()));
    let (t2, url) = (times.clone(), server.url.clone());
    let w = q
        .work(drained(), move |_job: Job| {
            let mut c = redis::Client::open(url.as_str())
                .unwrap()
                .get_connection()
                .unwrap();
            let (s, us): (u64, u64) = redis::cmd("TIME").query(&mut c).unwrap();
            t2.lock().unwrap().push(s * 1000 + us / 1000);
            async { Err::<(), _>("fail") }
        })
        .unwrap();
    tokio::time::timeout(Duration::from_secs(10), w.join())
        .await
        .unwrap();
    let t = times.lock().unwrap();
    assert_eq!(t.len(), 3);
    for pair in t.windows(2) {
        assert!(
            pair[1] - pair[0] >= 300,
            "retry after {} ms < 300 ms backoff",
            pair[1] - pair[0]
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handler_running_three_leases_long_keeps_its_lease() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    q.enqueue(b"async", id("long-async")).await.unwrap();
    q.enqueue(b"blocking", id("long-blocking")).await.unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    let c2 = calls.clone();
    let opts = WorkerOptions {
        lease: Duration::from_millis(300),
        concurrency: 2,
        ..drained()
    };
    let w = q
        .work(opts, move |job: Job| {
            c2.fetch_add(1, Ordering::SeqCst);
            async move {
                if job.payload == b"blocking" {
                    // Blocks this runtime thread: renewal runs on another task/thread.
                    std::thread::sleep(Duration::from_millis(900));
                } else {
                    tokio::time::sleep(Duration::from_millis(900)).await;
                }
                Ok::<(), String>(())
            }
        })
        .unwrap();
    let stats = tokio::time::timeout(Duration::from_secs(10), w.join())
        .await
        .unwrap();
    assert_eq!(
        calls.load(Ordering::SeqCst),
        2,
        "a long job was redelivered"
    );
    assert_eq!((stats.completed, stats.lease_lost), (2, 0));
    assert_eq!(q.stats().await.unwrap().recovered, 0);
}

#[tokio::test]
async fn a_handler_exceeding_its_timeout_loses_the_attempt_and_is_retried() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let opts = EnqueueOptions {
        timeout: Some(Duration::from_millis(200)),
        max_attempts: Some(2),
        ..id("stuck")
    };
    q.enqueue(b"x", opts).await.unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    let c2 = calls.clone();
    let w = q
        .work(drained(), move |_job: Job| {
            let n = c2.fetch_add(1, Ordering::SeqCst);
            async move {
                if n == 0 {
                    tokio::time::sleep(Duration::from_secs(3600)).await;
                }
                Ok::<(), String>(())
            }
        })
        .unwrap();
    let stats = tokio::time::timeout(Duration::from_secs(10), w.join())
        .await
        .unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert_eq!((stats.failed, stats.completed), (1, 1));
    let info = q.get("stuck").await.unwrap().unwrap();
    assert_eq!(info.state, JobState::Completed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handler_overrunning_its_timeout_keeps_its_slot_so_attempts_never_overlap() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let opts = EnqueueOptions {
        timeout: Some(Duration::from_millis(200)),
        max_attempts: Some(2),
        ..Default::default()
    };
    for i in 0..2 {
        q.enqueue(
            b"x",
            EnqueueOptions {
                id: Some(format!("slow{i}")),
                ..opts.clone()
            },
        )
        .await
        .unwrap();
    }
    // A handler on another thread that cannot be interrupted and ignores its stop signal (as a
    // plain Python function would): 600 ms, three times its timeout.
    let running = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    type Runs = Vec<(String, u32, Instant, Instant)>;
    let runs: Arc<Mutex<Runs>> = Default::default();
    let (r2, m2, l2) = (running.clone(), most.clone(), runs.clone());
    let handler: tideq::JobHandler = Arc::new(move |job: Job| {
        let (running, most, runs) = (r2.clone(), m2.clone(), l2.clone());
        Box::pin(async move {
            tokio::task::spawn_blocking(move || {
                let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                let start = Instant::now();
                std::thread::sleep(Duration::from_millis(600));
                running.fetch_sub(1, Ordering::SeqCst);
                runs.lock()
                    .unwrap()
                    .push((job.id.clone(), job.attempt, start, Instant::now()));
            })
            .await
            .unwrap();
            Ok(None)
        })
    });
    let w = q
        .work_boxed(
            WorkerOptions {
                concurrency: 1,
                ..drained()
            },
            handler,
        )
        .unwrap();
    let stats = tokio::time::timeout(Duration::from_secs(20), w.join())
        .await
        .unwrap();
    assert_eq!(most.load(Ordering::SeqCst), 1, "concurrency 1 was exceeded");
    assert_eq!(stats.failed, 4, "every attempt timed out: {stats:?}");
    let runs = runs.lock().unwrap().clone();
    for id in ["slow0", "slow1"] {
        let mine: Vec<_> = runs.iter().filter(|r| r.0 == id).collect();
        assert_eq!(mine.len(), 2, "{runs:?}");
        assert!(
            mine[1].2 >= mine[0].3,
            "attempt 2 of {id} started before attempt 1 ended"
        );
    }
    let info = q.get("slow0").await.unwrap().unwrap();
    assert_eq!(info.state, JobState::Dead);
    assert!(info.last_error.unwrap().contains("timed out"));
}

#[tokio::test]
async fn a_timeout_fires_the_jobs_cancellation_before_the_attempt_fails() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let opts = EnqueueOptions {
        timeout: Some(Duration::from_millis(100)),
        max_attempts: Some(1),
        ..id("cooperative")
    };
    q.enqueue(b"x", opts).await.unwrap();
    let saw = Arc::new(AtomicUsize::new(0));
    let s2 = saw.clone();
    let handler: tideq::JobHandler = Arc::new(move |job: Job| {
        let saw = s2.clone();
        Box::pin(async move {
            job.cancellation().cancelled().await;
            saw.fetch_add(1, Ordering::SeqCst);
            Err("stopped as asked".into())
        })
    });
    let w = q.work_boxed(drained(), handler).unwrap();
    tokio::time::timeout(Duration::from_secs(10), w.join())
        .await
        .unwrap();
    assert_eq!(saw.load(Ordering::SeqCst), 1);
    let info = q.get("cooperative").await.unwrap().unwrap();
    assert_eq!(info.state, JobState::Dead);
    assert!(info.last_error.unwrap().contains("timed out after"));
}
