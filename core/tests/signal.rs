//! SIGTERM stops a worker the Rust way (`run_until_signal`): no new jobs, running ones finish.
//! In its own test binary, since it signals its own process.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{unique, RedisServer};
use tideq::{Client, EnqueueOptions, Job, JobState, Queue, QueueOptions, WorkerOptions};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_shuts_a_worker_down_gracefully() {
    let server = RedisServer::start();
    let q = Queue::new(
        &Client::open(&server.url).unwrap(),
        &unique("sig"),
        QueueOptions::default(),
    )
    .unwrap();
    for i in 0..3 {
        q.enqueue(
            b"x",
            EnqueueOptions {
                id: Some(format!("s{i}")),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    }
    let started = Arc::new(AtomicUsize::new(0));
    let s2 = started.clone();
    let w = q
        .work(
            WorkerOptions {
                concurrency: 1,
                ..Default::default()
            },
            move |_job: Job| {
                s2.fetch_add(1, Ordering::SeqCst);
                async {
                    tokio::time::sleep(Duration::from_millis(400)).await;
                    Ok::<(), String>(())
                }
            },
        )
        .unwrap();
    let run = tokio::spawn(async move { w.run_until_signal().await });
    while started.load(Ordering::SeqCst) == 0 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(Duration::from_millis(50)).await; // the signal handler is installed by now
    let status = std::process::Command::new("kill")
        .arg("-TERM")
        .arg(std::process::id().to_string())
        .status()
        .unwrap();
    assert!(status.success());
    let stats = tokio::time::timeout(Duration::from_secs(5), run)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stats.completed, 1, "the running job finished");
    assert_eq!(
        started.load(Ordering::SeqCst),
        1,
        "no job started after SIGTERM"
    );
    assert_eq!(
        q.get("s0").await.unwrap().unwrap().state,
        JobState::Completed
    );
    assert_eq!(q.stats().await.unwrap().ready, 2);
}
