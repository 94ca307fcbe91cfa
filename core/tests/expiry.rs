//! Expiry before start: a job given a deadline (`expires_after` from its due time, or
//! `expires_at_ms`) that no worker started by then is not run: it is dead-lettered with an error
//! that says so, counted as expired, reported as an event, and its waiters are told. One test per
//! promise, against a real redis-server; the one named after asynq #751 rules out its failure.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::control::group;
use common::jobs::*;
use common::RedisServer;
use tideq::{
    Backoff, EnqueueOptions, ErrorKind, EventKind, EventsOptions, GroupLimits, Job, JobState,
    QueueOptions,
};

fn expiring(id: &str, after_ms: u64) -> EnqueueOptions {
    EnqueueOptions {
        id: Some(id.into()),
        expires_after: Some(Duration::from_millis(after_ms)),
        ..Default::default()
    }
}

#[tokio::test]
async fn a_job_not_started_by_its_deadline_is_not_run_and_is_counted_and_reported() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    q.set_events(Some(100)).await.unwrap();
    q.enqueue(b"x", expiring("late", 50)).await.unwrap();
    q.enqueue(b"y", id("plain")).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let ran = Arc::new(AtomicUsize::new(0));
    let r2 = ran.clone();
    let stats = q
        .work(drained(), move |_job: Job| {
            r2.fetch_add(1, Ordering::SeqCst);
            async { Ok::<(), String>(()) }
        })
        .unwrap()
        .join()
        .await;
    assert_eq!((ran.load(Ordering::SeqCst), stats.completed), (1, 1));
    let info = q.get("late").await.unwrap().unwrap();
    assert_eq!((info.state, info.attempts), (JobState::Dead, 0));
    let error = info.last_error.unwrap();
    assert!(
        error.starts_with("expired: not started by its deadline ("),
        "{error}"
    );
    let s = q.stats().await.unwrap();
    assert_eq!(
        (s.expired, s.dead_lettered, s.dead, s.completed),
        (1, 0, 1, 1)
    );
    let mut ev = q
        .events(EventsOptions {
            from_start: true,
            ..Default::default()
        })
        .await
        .unwrap();
    let mut kinds = Vec::new();
    while let Some(e) = ev.next(Some(Duration::from_millis(300))).await.unwrap() {
        if e.job_id == "late" {
            kinds.push(e.kind);
        }
    }
    assert_eq!(kinds, vec![EventKind::Enqueued, EventKind::Expired]);
}

#[tokio::test]
async fn an_expired_job_is_not_retried_in_a_loop_and_its_waiter_is_told() {
    // asynq #751: a task past its deadline was retried again and again, its handler never told.
    // Here a failing job with attempts to spare runs only while its deadline allows, then ends
    // dead as expired, and a caller waiting for it gets the failure.
    let server = RedisServer::start();
    let q = queue_with(
        &server.url,
        QueueOptions {
            backoff: Backoff::fixed(200),
            ..Default::default()
        },
    );
    q.enqueue(
        b"x",
        EnqueueOptions {
            max_attempts: Some(1000),
            ..expiring("flaky", 500)
        },
    )
    .await
    .unwrap();
    let waiter = {
        let q = q.clone();
        tokio::spawn(async move { q.wait("flaky", Some(Duration::from_secs(20))).await })
    };
    let runs = Arc::new(AtomicUsize::new(0));
    let r2 = runs.clone();
    let stats = tokio::time::timeout(
        Duration::from_secs(20),
        q.work(drained(), move |_job: Job| {
            r2.fetch_add(1, Ordering::SeqCst);
            async { Err::<(), String>("upstream down".into()) }
        })
        .unwrap()
        .join(),
    )
    .await
    .unwrap();
    let n = runs.load(Ordering::SeqCst);
    assert!(
        (1..=4).contains(&n),
        "ran {n} times within a 500 ms deadline"
    );
    assert_eq!(stats.failed as usize, n);
    let e = waiter.await.unwrap().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::JobFailed);
    assert!(
        e.to_string()
            .contains("expired: not started by its deadline"),
        "{e}"
    );
    let s = q.stats().await.unwrap();
    assert_eq!(
        (s.expired, s.retried as usize, s.ready, s.delayed),
        (1, n, 0, 0)
    );
}

#[tokio::test]
async fn the_deadline_counts_from_the_due_time_of_a_delayed_job() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    q.enqueue(
        b"x",
        EnqueueOptions {
            delay: Some(Duration::from_millis(1500)),
            ..expiring("delayed", 3000)
        },
    )
    .await
    .unwrap();
    q.enqueue(
        b"x",
        EnqueueOptions {
            delay: Some(Duration::from_millis(1500)),
            expires_at_ms: Some(redis_ms(&server) + 500),
            ..id("too-late")
        },
    )
    .await
    .unwrap();
    let stats = q
        .work(drained(), |_job: Job| async { Ok::<(), String>(()) })
        .unwrap()
        .join()
        .await;
    assert_eq!(stats.completed, 1);
    assert_eq!(
        q.get("delayed").await.unwrap().unwrap().state,
        JobState::Completed
    );
    assert_eq!(
        q.get("too-late").await.unwrap().unwrap().state,
        JobState::Dead
    );
    assert_eq!(q.stats().await.unwrap().expired, 1);
}

#[tokio::test]
async fn an_expired_grouped_job_frees_its_group_and_leaves_no_deadline_behind() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let one = GroupLimits {
        concurrency: Some(1),
        rate: None,
    };
    q.set_group_limits("t", one).await.unwrap();
    q.enqueue(
        b"",
        EnqueueOptions {
            expires_at_ms: Some(1),
            ..EnqueueOptions {
                id: Some("old".into()),
                ..group("t")
            }
        },
    )
    .await
    .unwrap();
    q.enqueue(
        b"",
        EnqueueOptions {
            id: Some("new".into()),
            ..group("t")
        },
    )
    .await
    .unwrap();
    let stats = q
        .work(drained(), |_job: Job| async { Ok::<(), String>(()) })
        .unwrap()
        .join()
        .await;
    assert_eq!(stats.completed, 1);
    let g = q.group("t").await.unwrap();
    assert_eq!((g.ready, g.active), (0, 0));
    let left: u64 = redis::cmd("ZCARD")
        .arg(format!("tideq:{{{}}}:expires", q.name()))
        .query(&mut server.conn())
        .unwrap();
    assert_eq!(left, 0, "finished jobs forget their deadlines");
}

#[tokio::test]
async fn bad_expiry_options_are_refused_and_nothing_is_written() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let both = EnqueueOptions {
        expires_at_ms: Some(1),
        ..expiring("a", 10)
    };
    let e = q.enqueue(b"x", both).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert_eq!(e.message(), "give expires_after or expires_at, not both");
    let e = q.enqueue(b"x", expiring("b", 0)).await.unwrap_err();
    assert_eq!(e.message(), "expires_after must be at least 1 ms");
    assert_eq!(q.stats().await.unwrap().enqueued, 0);
}
