//! The lease protocol's retention and upkeep: dead letters bounded by count and age, completed
//! jobs by keep_completed and keep_for (trimmed in steps), and a busy worker that keeps recovering
//! expired leases and deleting expired jobs while it works. Against a real redis-server.

mod common;

use std::time::Duration;

use common::jobs::*;
use common::RedisServer;
use tideq::{EnqueueOptions, Job, JobState, Queue, QueueOptions, WorkerOptions};

#[tokio::test]
async fn dead_letters_are_bounded_by_count_and_age_and_the_trimmed_are_counted() {
    let server = RedisServer::start();
    let q = queue_with(
        &server.url,
        QueueOptions {
            max_attempts: 1,
            keep_dead: Some(3),
            keep_dead_for: Some(Duration::from_millis(400)),
            ..Default::default()
        },
    );
    for i in 0..5 {
        q.enqueue(b"x", id(&format!("d{i}"))).await.unwrap();
    }
    let fail = |_job: Job| async { Err::<(), String>("boom".into()) };
    q.work(
        WorkerOptions {
            concurrency: 1,
            ..drained()
        },
        fail,
    )
    .unwrap()
    .join()
    .await;
    let s = q.stats().await.unwrap();
    assert_eq!(
        (s.dead, s.dead_trimmed, s.dead_lettered),
        (3, 2, 5),
        "{s:?}"
    );
    assert!(
        q.get("d0").await.unwrap().is_none(),
        "a trimmed dead job's data is deleted"
    );
    assert!(q.get("d4").await.unwrap().is_some());
    // Older than keep_dead_for: gone at the next death.
    tokio::time::sleep(Duration::from_millis(500)).await;
    q.enqueue(b"x", id("late")).await.unwrap();
    q.work(drained(), fail).unwrap().join().await;
    let s = q.stats().await.unwrap();
    assert_eq!((s.dead, s.dead_trimmed), (1, 5), "{s:?}");
    let dead = q.dead_letters(0, 10).await.unwrap();
    assert_eq!(
        dead.iter().map(|j| j.id.as_str()).collect::<Vec<_>>(),
        ["late"]
    );
}

/// Many jobs dead within one millisecond (failed at once), with ids that do not sort in the
/// order they died: the bound still trims the oldest, read from the event log's order.
#[tokio::test]
async fn jobs_dead_within_one_millisecond_are_trimmed_oldest_first_not_by_id() {
    let server = RedisServer::start();
    let q = queue_with(
        &server.url,
        QueueOptions {
            max_attempts: 1,
            keep_dead: Some(5),
            ..Default::default()
        },
    );
    q.set_events(Some(10_000)).await.unwrap();
    for i in 0..200 {
        q.enqueue(b"x", id(&format!("j{:03}", (i * 7919) % 1000)))
            .await
            .unwrap();
    }
    let jobs = q.lease_jobs(200, Duration::from_secs(30)).await.unwrap();
    futures_util::future::join_all(jobs.iter().map(|j| q.fail(j, "boom"))).await;
    let mut log = q
        .events(tideq::EventsOptions {
            from_start: true,
            ..Default::default()
        })
        .await
        .unwrap();
    let mut died = Vec::new();
    while died.len() < 200 {
        let e = log
            .next(Some(Duration::from_secs(5)))
            .await
            .unwrap()
            .unwrap();
        if e.kind.as_str() == "dead" {
            died.push(e.job_id);
        }
    }
    let dead: Vec<String> = q
        .dead_letters(0, 10)
        .await
        .unwrap()
        .into_iter()
        .map(|j| j.id)
        .collect();
    assert_eq!(dead, died[195..], "the newest 5, oldest first");
}

#[tokio::test]
async fn completed_jobs_are_deleted_at_once_with_keep_completed_zero_and_after_keep_for() {
    let server = RedisServer::start();
    let none = queue_with(
        &server.url,
        QueueOptions {
            keep_completed: 0,
            ..Default::default()
        },
    );
    none.enqueue(b"x", id("gone")).await.unwrap();
    common::drain_noop(&none).await;
    assert!(none.get("gone").await.unwrap().is_none());
    assert_eq!(none.stats().await.unwrap().completed, 1);

    let aged = queue_with(
        &server.url,
        QueueOptions {
            keep_for: Some(Duration::from_millis(300)),
            ..Default::default()
        },
    );
    aged.enqueue(b"x", id("old")).await.unwrap();
    common::drain_noop(&aged).await;
    assert_eq!(
        aged.get("old").await.unwrap().unwrap().state,
        JobState::Completed
    );
    tokio::time::sleep(Duration::from_millis(400)).await;
    aged.enqueue(b"x", id("new")).await.unwrap();
    common::drain_noop(&aged).await;
    assert!(
        aged.get("old").await.unwrap().is_none(),
        "older than keep_for: trimmed"
    );
    assert!(aged.get("new").await.unwrap().is_some());
}

/// Enqueues "first", then `n` jobs, and starts a worker at concurrency 1 whose handler takes
/// 2 ms: busy for about 2 s at n = 1000.
async fn busy_worker(q: &Queue, n: usize) -> tideq::Worker {
    q.enqueue(b"x", id("first")).await.unwrap();
    let rest: Vec<(&[u8], EnqueueOptions)> = (0..n)
        .map(|_| (&b"x"[..], EnqueueOptions::default()))
        .collect();
    q.enqueue_many(&rest).await.unwrap();
    q.work(
        WorkerOptions {
            concurrency: 1,
            ..drained()
        },
        |_job: Job| async {
            tokio::time::sleep(Duration::from_millis(2)).await;
            Ok::<(), String>(())
        },
    )
    .unwrap()
}

#[tokio::test]
async fn a_busy_worker_recovers_an_expired_lease_while_it_keeps_working() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    q.enqueue(b"x", id("orphan")).await.unwrap();
    // Leased and never settled: its holder is gone.
    let held = q.lease_jobs(1, Duration::from_millis(300)).await.unwrap();
    assert_eq!(held[0].id, "orphan");
    let w = busy_worker(&q, 1000).await;
    let recovered_while_busy = wait_for(Duration::from_secs(20), || async {
        let s = q.stats().await.unwrap();
        assert!(
            s.recovered == 0 || s.ready > 0,
            "recovered only once drained: {s:?}"
        );
        s.recovered == 1
    })
    .await;
    assert!(recovered_while_busy);
    assert_eq!(w.join().await.completed, 1002);
}

#[tokio::test]
async fn completed_jobs_past_keep_for_are_deleted_while_a_worker_stays_busy() {
    let server = RedisServer::start();
    let q = queue_with(
        &server.url,
        QueueOptions {
            keep_for: Some(Duration::from_millis(300)),
            ..Default::default()
        },
    );
    let w = busy_worker(&q, 1000).await;
    let deleted_while_busy = wait_for(Duration::from_secs(20), || async {
        let gone = q.get("first").await.unwrap().is_none();
        let s = q.stats().await.unwrap();
        assert!(!gone || s.completed > 0, "never completed");
        assert!(!gone || s.ready > 0, "deleted only once drained: {s:?}");
        gone
    })
    .await;
    assert!(deleted_while_busy);
    assert_eq!(w.join().await.completed, 1001);
}

#[tokio::test]
async fn completed_jobs_never_exceed_keep_completed_and_are_trimmed_in_steps() {
    let server = RedisServer::start();
    let q = queue_with(
        &server.url,
        QueueOptions {
            keep_completed: 300,
            ..Default::default()
        },
    );
    let all: Vec<(&[u8], EnqueueOptions)> = (0..1000)
        .map(|_| (&b"x"[..], EnqueueOptions::default()))
        .collect();
    q.enqueue_many(&all).await.unwrap();
    let done_key = format!("tideq:{{{}}}:done", q.name());
    let mut lens = std::collections::BTreeSet::new();
    for _ in 0..1000 {
        let job = q.lease_jobs(1, Duration::from_secs(60)).await.unwrap();
        q.complete(&job[0]).await.unwrap();
        let len: u64 = redis::cmd("LLEN")
            .arg(&done_key)
            .query(&mut server.conn())
            .unwrap();
        assert!(len <= 300, "{len} completed jobs kept, over keep_completed");
        lens.insert(len);
    }
    // Once full, the oldest go 5% at a time: the count stays within 285..=300 (every length
    // from 1 to 284 was seen once, while filling up).
    assert_eq!(
        lens.range(285..).copied().collect::<Vec<_>>(),
        (285..=300).collect::<Vec<u64>>()
    );
    assert_eq!(lens.range(..285).count(), 284);
    let stored: u64 = redis::cmd("HLEN")
        .arg(format!("tideq:{{{}}}:jobs", q.name()))
        .query(&mut server.conn())
        .unwrap();
    assert!((285..=300).contains(&stored), "{stored} jobs' data kept");
}
