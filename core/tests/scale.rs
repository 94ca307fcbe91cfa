//! Flow control at the sizes users run it: many groups, large concurrency, big fetches. Each test
//! is named after the failure it rules out (jobs stranded by one large fetch, settings that
//! half-apply and wipe the running counts), and reads SLOWLOG where a call's cost is the promise.

mod common;

use std::time::Duration;

use common::jobs::*;
use common::RedisServer;
use tideq::{EnqueueOptions, ErrorKind, GroupLimits, JobState, Limits, WorkerOptions, MAX_FETCH};

/// `groups` groups with `per` jobs each, enqueued in parts of 10,000.
async fn fill(q: &tideq::Queue, groups: usize, per: usize) {
    let mut all = Vec::new();
    for g in 0..groups {
        for j in 0..per {
            all.push((
                format!("{g}.{j}").into_bytes(),
                EnqueueOptions {
                    group: Some(format!("tenant-{g}")),
                    ..Default::default()
                },
            ));
        }
    }
    for part in all.chunks(10_000) {
        q.enqueue_many(part).await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_with_concurrency_20000_over_9000_groups_strands_no_job() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    fill(&q, 9_000, 2).await;
    let w = q
        .work(
            WorkerOptions {
                concurrency: 20_000,
                ..drained()
            },
            |_job| async { Ok::<(), String>(()) },
        )
        .unwrap();
    let stats = tokio::time::timeout(Duration::from_secs(120), w.join())
        .await
        .expect("the worker did not drain the queue: jobs were stranded");
    assert_eq!(stats.completed, 18_000);
    assert_eq!(stats.fetch_errors, 0);
    let s = q.stats().await.unwrap();
    assert_eq!((s.ready, s.active, s.completed, s.lost), (0, 0, 18_000, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_of_more_than_one_fetch_holds_is_refused_and_takes_nothing() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    fill(&q, 10, 1).await;
    let err = q
        .lease_jobs(MAX_FETCH + 1, Duration::from_secs(30))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert!(err.message().contains("at most 1000"), "{err}");
    assert_eq!(q.stats().await.unwrap().ready, 10);
    let batch = WorkerOptions {
        batch_size: MAX_FETCH + 1,
        ..drained()
    };
    let err = q
        .work(batch, |_j| async { Ok::<(), String>(()) })
        .unwrap_err();
    assert!(err.message().contains("batch_size is 1001"), "{err}");
    let err = q
        .work_batches(
            WorkerOptions {
                concurrency: 5_000,
                ..drained()
            },
            tideq::BatchOptions {
                size: MAX_FETCH + 1,
                ..Default::default()
            },
            |_jobs| async { Ok::<(), tideq::BatchError>(()) },
        )
        .unwrap_err();
    assert!(err.message().contains("at most 1000"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fetches_over_9000_groups_each_lease_their_jobs_and_strand_none() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    fill(&q, 9_000, 2).await;
    let mut leased = 0;
    loop {
        let jobs = q
            .lease_jobs(MAX_FETCH, Duration::from_secs(60))
            .await
            .unwrap();
        if jobs.is_empty() {
            break;
        }
        leased += jobs.len();
    }
    assert_eq!(leased, 18_000);
    let s = q.stats().await.unwrap();
    assert_eq!((s.ready, s.active), (0, 18_000));
    assert_eq!(q.jobs(JobState::Ready, 0, 10).await.unwrap().len(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flow_settings_with_9000_groups_running_apply_whole_and_keep_the_running_counts() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    fill(&q, 9_000, 3).await;
    q.set_limits(Limits {
        group_concurrency: Some(1),
        ..Default::default()
    })
    .await
    .unwrap();
    // One job of each group running: every group is at its limit.
    let mut running = Vec::new();
    loop {
        let jobs = q
            .lease_jobs(MAX_FETCH, Duration::from_secs(120))
            .await
            .unwrap();
        if jobs.is_empty() {
            break;
        }
        running.extend(jobs);
    }
    assert_eq!(running.len(), 9_000);
    // Each setting, applied while 9,000 groups run jobs, succeeds whole.
    q.pause().await.unwrap();
    q.resume().await.unwrap();
    q.pause_group("tenant-7").await.unwrap();
    q.resume_group("tenant-7").await.unwrap();
    q.set_group_limits(
        "tenant-8",
        GroupLimits {
            concurrency: Some(1),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    q.set_limits(Limits {
        group_concurrency: Some(1),
        ..Default::default()
    })
    .await
    .unwrap();
    // The running counts survived: a group at its limit of 1 still starts nothing.
    for g in ["tenant-0", "tenant-7", "tenant-8", "tenant-8999"] {
        assert_eq!(q.group(g).await.unwrap().active, 1, "{g}");
    }
    assert!(q
        .lease_jobs(MAX_FETCH, Duration::from_secs(30))
        .await
        .unwrap()
        .is_empty());
}
