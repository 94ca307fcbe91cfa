//! Queue control, pause and resume: a paused queue starts nothing while enqueues go on and its
//! resume wakes idle workers at once; a paused group waits while the others run.

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::control::*;
use common::jobs::*;
use common::RedisServer;
use tideq::{EnqueueOptions, Job, WorkerOptions};

#[tokio::test]
async fn pause_stops_starts_while_enqueues_go_on_and_resume_wakes_idle_workers_at_once() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let started = Arc::new(AtomicU64::new(0));
    let release = Arc::new(tokio::sync::Semaphore::new(0));
    let (s, r) = (started.clone(), release.clone());
    let worker = q
        .work(
            WorkerOptions {
                concurrency: 4,
                // Longer than the test: only a wake-up can start the jobs after the resume.
                poll_interval: Duration::from_secs(60),
                ..Default::default()
            },
            move |_job: Job| {
                let (s, r) = (s.clone(), r.clone());
                async move {
                    s.fetch_add(1, Ordering::SeqCst);
                    r.acquire().await.unwrap().forget();
                    Ok::<(), String>(())
                }
            },
        )
        .unwrap();
    q.enqueue(b"running", EnqueueOptions::default())
        .await
        .unwrap();
    assert!(
        wait_until(Duration::from_secs(10), || started.load(Ordering::SeqCst)
            == 1)
        .await
    );
    q.pause().await.unwrap();
    assert!(q.is_paused().await.unwrap());
    assert!(q.stats().await.unwrap().paused);
    for _ in 0..3 {
        q.enqueue(b"later", EnqueueOptions::default())
            .await
            .unwrap();
    }
    q.enqueue(b"later", group("g")).await.unwrap();
    q.enqueue(b"later", prio(3)).await.unwrap();
    // The running job finishes; nothing new starts.
    release.add_permits(1);
    assert!(
        wait_for(Duration::from_secs(10), || async {
            q.stats().await.unwrap().completed == 1
        })
        .await
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(started.load(Ordering::SeqCst), 1);
    let s = q.stats().await.unwrap();
    assert_eq!((s.ready, s.active), (5, 0));
    release.add_permits(100);
    let resumed = Instant::now();
    q.resume().await.unwrap();
    assert!(!q.is_paused().await.unwrap());
    assert!(
        wait_for(Duration::from_secs(10), || async {
            q.stats().await.unwrap().completed == 6
        })
        .await
    );
    assert!(
        resumed.elapsed() < Duration::from_secs(30),
        "woken, not polled"
    );
    worker.shutdown().await;
}

#[tokio::test]
async fn a_paused_group_waits_while_the_others_run() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    q.pause_group("held").await.unwrap();
    for g in ["held", "free", "held", "free"] {
        q.enqueue(g.as_bytes(), group(g)).await.unwrap();
    }
    assert_eq!(lease_all(&q).await, ["free", "free"]);
    let info = q.group("held").await.unwrap();
    assert!(info.paused);
    assert_eq!(info.ready, 2);
    q.resume_group("held").await.unwrap();
    assert!(!q.group("held").await.unwrap().paused);
    assert_eq!(lease_all(&q).await, ["held", "held"]);
}
