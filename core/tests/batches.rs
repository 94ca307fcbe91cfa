//! Batch handlers: a worker hands its handler up to `size` leased jobs at once, waiting at most
//! `wait` for a batch to fill. Each job keeps its own lease; the handler completes them all, fails
//! some (the rest complete) or fails them all.

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::jobs::*;
use common::RedisServer;
use tideq::{BatchError, BatchOptions, EnqueueOptions, ErrorKind, Job, JobState, WorkerOptions};

fn batch(size: usize, wait_ms: u64) -> BatchOptions {
    BatchOptions {
        size,
        wait: Duration::from_millis(wait_ms),
    }
}

fn plain(n: usize) -> Vec<(Vec<u8>, EnqueueOptions)> {
    (0..n)
        .map(|i| (format!("{i}").into_bytes(), EnqueueOptions::default()))
        .collect()
}

#[tokio::test]
async fn a_batch_handler_gets_up_to_size_jobs_and_its_ok_completes_them_all() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    q.enqueue_many(&plain(25)).await.unwrap();
    let sizes = Arc::new(Mutex::new(Vec::new()));
    let s = sizes.clone();
    let worker = q
        .work_batches(drained(), batch(10, 0), move |jobs: Vec<Job>| {
            s.lock().unwrap().push(jobs.len());
            async { Ok(()) }
        })
        .unwrap();
    let stats = worker.join().await;
    assert_eq!(stats.completed, 25);
    let sizes = sizes.lock().unwrap().clone();
    assert_eq!(sizes.iter().sum::<usize>(), 25);
    assert!(sizes.iter().all(|n| *n <= 10), "{sizes:?}");
    assert_eq!(q.stats().await.unwrap().completed, 25);
}

#[tokio::test]
async fn a_batch_can_fail_some_of_its_jobs_and_the_rest_complete() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    q.enqueue_many(&plain(10)).await.unwrap();
    let worker = q
        .work_batches(drained(), batch(10, 0), move |jobs: Vec<Job>| {
            // Odd payloads fail their first attempt.
            let failed: Vec<(String, &str)> = jobs
                .iter()
                .filter(|j| j.attempt == 1 && j.payload[0] % 2 == 1)
                .map(|j| (j.id.clone(), "odd"))
                .collect();
            async move {
                if failed.is_empty() {
                    Ok(())
                } else {
                    Err(BatchError::jobs(failed))
                }
            }
        })
        .unwrap();
    let stats = worker.join().await;
    assert_eq!((stats.completed, stats.failed), (10, 5));
    let s = q.stats().await.unwrap();
    assert_eq!((s.completed, s.retried, s.dead), (10, 5, 0));
}

#[tokio::test]
async fn a_batch_that_errs_panics_or_times_out_fails_every_job() {
    let server = RedisServer::start();
    let q = queue_with(
        &server.url,
        tideq::QueueOptions {
            max_attempts: 1,
            ..Default::default()
        },
    );
    q.enqueue_many(&plain(3)).await.unwrap();
    let slow = EnqueueOptions {
        id: Some("slow".into()),
        timeout: Some(Duration::from_millis(100)),
        ..Default::default()
    };
    let calls = Arc::new(AtomicU64::new(0));
    let c = calls.clone();
    let worker = q
        .work_batches(drained(), batch(3, 0), move |jobs: Vec<Job>| {
            let n = c.fetch_add(1, Ordering::SeqCst);
            async move {
                match n {
                    0 => Err(BatchError::all("the bulk API said no")),
                    1 => panic!("boom"),
                    _ => {
                        tokio::time::sleep(Duration::from_secs(30)).await;
                        drop(jobs);
                        Ok(())
                    }
                }
            }
        })
        .unwrap();
    let stats = worker.join().await;
    assert_eq!(stats.failed, 3);
    let dead = q.dead_letters(0, 10).await.unwrap();
    assert!(dead
        .iter()
        .all(|d| d.last_error.as_deref() == Some("the bulk API said no")));
    q.enqueue(b"p", EnqueueOptions::default()).await.unwrap();
    let stats = q
        .work_batches(drained(), batch(3, 0), {
            let c = calls.clone();
            move |_jobs: Vec<Job>| {
                let n = c.fetch_add(1, Ordering::SeqCst);
                async move {
                    if n == 1 {
                        panic!("boom")
                    }
                    Ok(())
                }
            }
        })
        .unwrap()
        .join()
        .await;
    assert_eq!(stats.failed, 1);
    q.enqueue(b"s", slow).await.unwrap();
    let worker = q
        .work_batches(drained(), batch(3, 0), move |_jobs: Vec<Job>| async move {
            tokio::time::sleep(Duration::from_secs(30)).await;
            Ok(())
        })
        .unwrap();
    assert_eq!(worker.join().await.failed, 1);
    let slow = q.get("slow").await.unwrap().unwrap();
    assert_eq!(slow.state, JobState::Dead);
    assert_eq!(slow.last_error.as_deref(), Some("timed out after 100 ms"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partial_batch_waits_for_more_jobs_at_most_the_wait() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let sizes = Arc::new(Mutex::new(Vec::new()));
    let s = sizes.clone();
    let worker = q
        .work_batches(
            WorkerOptions {
                concurrency: 20,
                ..Default::default()
            },
            batch(20, 1500),
            move |jobs: Vec<Job>| {
                s.lock().unwrap().push(jobs.len());
                async { Ok(()) }
            },
        )
        .unwrap();
    q.enqueue_many(&plain(3)).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(sizes.lock().unwrap().is_empty(), "waiting to fill");
    q.enqueue_many(&plain(4)).await.unwrap();
    assert!(
        wait_until(Duration::from_secs(20), || !sizes
            .lock()
            .unwrap()
            .is_empty())
        .await
    );
    // One batch of both enqueues, handed over when the wait was over (not full).
    assert_eq!(*sizes.lock().unwrap(), vec![7]);
    // A full batch goes at once.
    q.enqueue_many(&plain(20)).await.unwrap();
    assert!(wait_until(Duration::from_secs(20), || sizes.lock().unwrap().len() == 2).await);
    assert_eq!(sizes.lock().unwrap()[1], 20);
    worker.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_job_of_a_batch_keeps_its_lease_while_it_waits_and_while_it_runs() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    q.enqueue_many(&plain(2)).await.unwrap();
    let worker = q
        .work_batches(
            WorkerOptions {
                concurrency: 4,
                lease: Duration::from_millis(300),
                stop_when_drained: true,
                poll_interval: Duration::from_millis(100),
                ..Default::default()
            },
            batch(4, 1000),
            move |_jobs: Vec<Job>| async {
                tokio::time::sleep(Duration::from_millis(1000)).await;
                Ok(())
            },
        )
        .unwrap();
    let stats = worker.join().await;
    assert_eq!((stats.completed, stats.lease_lost), (2, 0));
    assert_eq!(q.stats().await.unwrap().recovered, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_still_running_at_the_end_of_the_grace_goes_back_to_the_queue_without_an_attempt() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    q.enqueue_many(&plain(3)).await.unwrap();
    let started = Arc::new(AtomicU64::new(0));
    let s = started.clone();
    let worker = q
        .work_batches_boxed(
            WorkerOptions {
                concurrency: 3,
                grace: Duration::from_millis(200),
                ..Default::default()
            },
            batch(3, 0),
            Arc::new(move |jobs: Vec<Job>| {
                s.fetch_add(jobs.len() as u64, Ordering::SeqCst);
                let cancel = jobs[0].cancellation().clone();
                Box::pin(async move {
                    cancel.cancelled().await;
                    Err(BatchError::all("stopped"))
                })
            }),
        )
        .unwrap();
    assert!(
        wait_until(Duration::from_secs(10), || started.load(Ordering::SeqCst)
            == 3)
        .await
    );
    let stats = worker.shutdown().await;
    assert_eq!((stats.released, stats.failed), (3, 0));
    let s = q.stats().await.unwrap();
    assert_eq!((s.ready, s.retried), (3, 0));
    let dead = q.dead_letters(0, 10).await.unwrap();
    assert!(dead.is_empty(), "nothing dead: {dead:?}");
}

#[tokio::test]
async fn a_batch_size_of_zero_or_above_the_concurrency_is_refused() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    for (size, concurrency) in [(0, 10), (11, 10)] {
        let e = q
            .work_batches(
                WorkerOptions {
                    concurrency,
                    ..Default::default()
                },
                batch(size, 0),
                |_jobs: Vec<Job>| async { Ok(()) },
            )
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    }
}
