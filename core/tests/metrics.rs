//! Metrics: a queue's metrics add up its stats and every worker's reports (run times, workers
//! alive) and the promotion lateness the fetch script files; a worker's own metrics are
//! Prometheus text. One test per promise, against a real redis-server.

mod common;

use std::time::Duration;

use common::jobs::*;
use common::RedisServer;
use tideq::{EnqueueOptions, Job, WorkerOptions};

#[tokio::test]
async fn a_queues_metrics_count_every_workers_run_times_and_match_its_stats() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let jobs: Vec<(&[u8], EnqueueOptions)> =
        (0..40).map(|_| (&b"x"[..], Default::default())).collect();
    q.enqueue_many(&jobs).await.unwrap();
    let handler = |_job: Job| async {
        tokio::time::sleep(Duration::from_millis(3)).await;
        Ok::<(), String>(())
    };
    // Two workers (two reports), each with its own metrics.
    let (a, b) = (
        q.work(drained(), handler).unwrap(),
        q.work(drained(), handler).unwrap(),
    );
    let (sa, sb) = (a.join().await, b.join().await);
    assert_eq!(sa.completed + sb.completed, 40);
    let m = q.metrics().await.unwrap();
    assert_eq!(m.stats, q.stats().await.unwrap());
    assert_eq!(m.run_time.count, 40, "{m:?}");
    assert_eq!(m.run_time.counts.iter().sum::<u64>(), 40);
    // Each run slept 3 ms: none in the buckets up to 2.5 ms.
    assert_eq!(m.run_time.counts[0] + m.run_time.counts[1], 0, "{m:?}");
    assert!(m.run_time.sum_ms >= 40.0 * 3.0, "{m:?}");
    // Both stopped: they left the worker registry.
    assert_eq!(m.workers, 0);
    let own = a.metrics();
    assert!(
        own.contains(&format!(
            "tideq_worker_jobs_completed_total{{queue=\"{}\"}} {}",
            q.name(),
            sa.completed
        )),
        "{own}"
    );
    assert!(own.contains("tideq_worker_job_run_seconds_count"), "{own}");
}

#[tokio::test]
async fn promotion_lateness_is_filed_for_each_delayed_job_made_ready() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    for _ in 0..5 {
        let opts = EnqueueOptions {
            delay: Some(Duration::from_millis(30)),
            ..Default::default()
        };
        q.enqueue(b"x", opts).await.unwrap();
    }
    q.enqueue(b"now", Default::default()).await.unwrap();
    let w = q
        .work(drained(), |_job: Job| async { Ok::<(), String>(()) })
        .unwrap();
    w.join().await;
    let m = q.metrics().await.unwrap();
    assert_eq!(m.promotion_lateness.count, 5, "{m:?}");
    assert_eq!(m.promotion_lateness.counts.iter().sum::<u64>(), 5);
}

#[tokio::test]
async fn a_running_idle_worker_counts_as_alive() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    assert_eq!(q.metrics().await.unwrap().workers, 0);
    let w = q
        .work(
            WorkerOptions {
                poll_interval: Duration::from_millis(50),
                ..Default::default()
            },
            |_job: Job| async { Ok::<(), String>(()) },
        )
        .unwrap();
    assert!(
        wait_for(Duration::from_secs(5), || async {
            q.metrics().await.unwrap().workers == 1
        })
        .await
    );
    w.shutdown().await;
}

#[tokio::test]
async fn a_batch_worker_records_each_jobs_run_time() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let jobs: Vec<(&[u8], EnqueueOptions)> =
        (0..6).map(|_| (&b"x"[..], Default::default())).collect();
    q.enqueue_many(&jobs).await.unwrap();
    let w = q
        .work_batches(
            drained(),
            tideq::BatchOptions {
                size: 3,
                ..Default::default()
            },
            |_jobs: Vec<Job>| async { Ok::<(), tideq::BatchError>(()) },
        )
        .unwrap();
    w.join().await;
    assert!(
        w.metrics().contains(&format!(
            "tideq_worker_job_run_seconds_count{{queue=\"{}\"}} 6",
            q.name()
        )),
        "{}",
        w.metrics()
    );
    assert_eq!(q.metrics().await.unwrap().run_time.count, 6);
}
