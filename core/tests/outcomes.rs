//! What a handler may ask for besides success and failure: snooze (run again later without using
//! an attempt), back off (hold the queue or the job's group), don't retry (dead-letter at once).
//! One test per promise, against a real redis-server; those named after a peer's failure rule it
//! out.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::control::group;
use common::jobs::*;
use common::{unique, RedisServer};
use tideq::{
    BackOff, Backoff, Client, DontRetry, EnqueueOptions, EventKind, EventsOptions, Job, Queue,
    QueueOptions, Snooze, WorkerOptions,
};

/// Every event of the queue's log so far, as (kind, job id, data).
async fn events(q: &Queue) -> Vec<(EventKind, String, String)> {
    let mut ev = q
        .events(EventsOptions {
            from_start: true,
            ..Default::default()
        })
        .await
        .unwrap();
    let mut out = Vec::new();
    while let Some(e) = ev.next(Some(Duration::from_millis(300))).await.unwrap() {
        let data = String::from_utf8_lossy(e.data.as_deref().unwrap_or_default()).into_owned();
        out.push((e.kind, e.job_id, data));
    }
    out
}

#[tokio::test]
async fn snoozing_does_not_use_an_attempt_nor_raise_max_attempts() {
    // River #378: each snooze used an attempt, so a job snoozed often died early; Oban #476
    // raised max_attempts instead. Here a job with 2 attempts snoozes 3 times, then fails twice:
    // it runs 5 times, sees attempts 1,1,1,1,2 of 2, and dies after its second failure.
    let server = RedisServer::start();
    let q = queue(&server.url);
    q.enqueue(
        b"x",
        EnqueueOptions {
            max_attempts: Some(2),
            ..id("snoozy")
        },
    )
    .await
    .unwrap();
    let seen: Arc<Mutex<Vec<(u32, u32)>>> = Default::default();
    let s2 = seen.clone();
    let w = q
        .work(drained(), move |job: Job| {
            let mut seen = s2.lock().unwrap();
            seen.push((job.attempt, job.max_attempts));
            let runs = seen.len();
            async move {
                if runs <= 3 {
                    Err::<(), tideq::HandlerError>(Snooze::new(Duration::from_millis(20)).into())
                } else {
                    Err("boom".into())
                }
            }
        })
        .unwrap();
    let stats = tokio::time::timeout(Duration::from_secs(20), w.join())
        .await
        .unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        vec![(1, 2), (1, 2), (1, 2), (1, 2), (2, 2)]
    );
    assert_eq!((stats.snoozed, stats.failed), (3, 2));
    let s = q.stats().await.unwrap();
    assert_eq!((s.snoozed, s.retried, s.dead_lettered), (3, 1, 1));
    let info = q.get("snoozy").await.unwrap().unwrap();
    assert_eq!(info.attempts, 2);
    assert_eq!(info.last_error.as_deref(), Some("boom"));
}

#[tokio::test]
async fn a_failure_after_snoozes_is_retried_with_the_backoff_of_its_attempt() {
    // Oban #476: compensating snoozes by raising max_attempts made the backoff of later
    // failures grow as if the snoozes had failed. The retry after a first failure waits the
    // first attempt's backoff, however often the job snoozed before.
    let server = RedisServer::start();
    let q = queue_with(
        &server.url,
        QueueOptions {
            backoff: no_jitter(),
            ..Default::default()
        },
    );
    q.set_events(Some(1000)).await.unwrap();
    q.enqueue(
        b"x",
        EnqueueOptions {
            max_attempts: Some(2),
            ..id("j")
        },
    )
    .await
    .unwrap();
    let runs = Arc::new(Mutex::new(0));
    let r2 = runs.clone();
    let w = q
        .work(drained(), move |_job: Job| {
            let mut n = r2.lock().unwrap();
            *n += 1;
            let n = *n;
            async move {
                match n {
                    1..=4 => Err::<(), tideq::HandlerError>(Snooze::new(Duration::ZERO).into()),
                    5 => Err("first failure".into()),
                    _ => Ok(()),
                }
            }
        })
        .unwrap();
    tokio::time::timeout(Duration::from_secs(20), w.join())
        .await
        .unwrap();
    let retried: Vec<String> = events(&q)
        .await
        .into_iter()
        .filter(|e| e.0 == EventKind::Retried)
        .map(|e| e.2)
        .collect();
    assert_eq!(retried, vec![no_jitter().delay_ms(1).to_string()]);
    assert_eq!(
        no_jitter().delay_ms(1),
        100,
        "the first attempt's delay, not the fifth's"
    );
}

/// Exponential from 100 ms, without jitter, so a retry's delay tells which attempt it followed.
fn no_jitter() -> Backoff {
    Backoff {
        jitter: false,
        ..Backoff::exponential(100, 60_000)
    }
}

#[tokio::test]
async fn a_zero_delay_snooze_runs_again_at_once_and_is_reported_as_snoozed_not_failed() {
    // River PR #974/#1037: a snooze of zero was reported as a failure.
    let server = RedisServer::start();
    let q = queue(&server.url);
    q.set_events(Some(1000)).await.unwrap();
    q.enqueue(b"x", id("z")).await.unwrap();
    let runs = Arc::new(Mutex::new(0));
    let r2 = runs.clone();
    let w = q
        .work(drained(), move |_job: Job| {
            let mut n = r2.lock().unwrap();
            *n += 1;
            let first = *n == 1;
            async move {
                if first {
                    Err::<(), tideq::HandlerError>(Snooze::new(Duration::ZERO).into())
                } else {
                    Ok(())
                }
            }
        })
        .unwrap();
    let stats = tokio::time::timeout(Duration::from_secs(10), w.join())
        .await
        .unwrap();
    assert_eq!(*runs.lock().unwrap(), 2);
    assert_eq!((stats.snoozed, stats.failed, stats.completed), (1, 0, 1));
    let s = q.stats().await.unwrap();
    assert_eq!((s.snoozed, s.retried, s.dead_lettered), (1, 0, 0));
    let kinds: Vec<(EventKind, String)> =
        events(&q).await.into_iter().map(|e| (e.0, e.2)).collect();
    assert_eq!(
        kinds,
        vec![
            (EventKind::Enqueued, String::new()),
            (EventKind::Active, "1".into()),
            (EventKind::Snoozed, "0".into()),
            (EventKind::Active, "1".into()),
            (EventKind::Completed, String::new()),
        ]
    );
    assert_eq!(q.get("z").await.unwrap().unwrap().last_error, None);
}

#[tokio::test]
async fn a_snoozed_job_waits_its_delay_by_the_redis_clock() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    q.enqueue(b"x", id("later")).await.unwrap();
    let starts: Arc<Mutex<Vec<u64>>> = Default::default();
    let s2 = starts.clone();
    let w = q
        .work(drained(), move |job: Job| {
            let mut s = s2.lock().unwrap();
            s.push(job.started_at);
            let first = s.len() == 1;
            async move {
                if first {
                    Err::<(), tideq::HandlerError>(Snooze::new(Duration::from_millis(400)).into())
                } else {
                    Ok(())
                }
            }
        })
        .unwrap();
    tokio::time::timeout(Duration::from_secs(10), w.join())
        .await
        .unwrap();
    let s = starts.lock().unwrap().clone();
    assert_eq!(s.len(), 2);
    assert!(s[1] >= s[0] + 400, "ran again {} ms after", s[1] - s[0]);
}

#[tokio::test]
async fn dont_retry_dead_letters_at_once_with_its_error() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    q.enqueue(
        b"x",
        EnqueueOptions {
            max_attempts: Some(5),
            ..id("hopeless")
        },
    )
    .await
    .unwrap();
    let w = q
        .work(drained(), |_job: Job| async {
            Err::<(), tideq::HandlerError>(DontRetry::new("card declined").into())
        })
        .unwrap();
    let stats = tokio::time::timeout(Duration::from_secs(10), w.join())
        .await
        .unwrap();
    assert_eq!(stats.failed, 1);
    let info = q.get("hopeless").await.unwrap().unwrap();
    assert_eq!(info.state, tideq::JobState::Dead);
    assert_eq!(
        (info.attempts, info.last_error.as_deref()),
        (1, Some("card declined"))
    );
    assert_eq!(q.stats().await.unwrap().retried, 0);
}

#[tokio::test]
async fn backing_off_a_group_holds_that_group_while_the_others_go_on() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    q.enqueue(
        b"first",
        EnqueueOptions {
            id: Some("a1".into()),
            ..group("a")
        },
    )
    .await
    .unwrap();
    q.enqueue(
        b"",
        EnqueueOptions {
            id: Some("a2".into()),
            ..group("a")
        },
    )
    .await
    .unwrap();
    for i in 0..6 {
        q.enqueue(
            b"",
            EnqueueOptions {
                id: Some(format!("b{i}")),
                ..group("b")
            },
        )
        .await
        .unwrap();
    }
    // (job id, started at) per run, in order.
    let runs: Arc<Mutex<Vec<(String, u64)>>> = Default::default();
    let r2 = runs.clone();
    let w = q
        .work(
            // One at a time, so a2 cannot start while a1 runs (before the hold).
            WorkerOptions {
                concurrency: 1,
                ..drained()
            },
            move |job: Job| {
                let mut runs = r2.lock().unwrap();
                let first = job.id == "a1" && !runs.iter().any(|r| r.0 == "a1");
                runs.push((job.id.clone(), job.started_at));
                async move {
                    if first {
                        Err::<(), tideq::HandlerError>(
                            BackOff::group(Duration::from_millis(1000)).into(),
                        )
                    } else {
                        Ok(())
                    }
                }
            },
        )
        .unwrap();
    let stats = tokio::time::timeout(Duration::from_secs(20), w.join())
        .await
        .unwrap();
    assert_eq!((stats.snoozed, stats.completed, stats.failed), (1, 8, 0));
    let runs = runs.lock().unwrap().clone();
    let held_from = runs.iter().find(|r| r.0 == "a1").unwrap().1;
    let a_after: Vec<&(String, u64)> = runs
        .iter()
        .filter(|r| r.0.starts_with('a'))
        .skip(1)
        .collect();
    assert_eq!(
        a_after.iter().map(|r| r.0.as_str()).collect::<Vec<_>>(),
        vec!["a1", "a2"],
        "the backed-off job runs again first in its group: {runs:?}"
    );
    assert!(a_after.iter().all(|r| r.1 >= held_from + 1000), "{runs:?}");
    let last_b = runs
        .iter()
        .filter(|r| r.0.starts_with('b'))
        .map(|r| r.1)
        .max()
        .unwrap();
    assert!(last_b < a_after[0].1, "group b went on meanwhile: {runs:?}");
    let a1 = q.get("a1").await.unwrap();
    assert!(
        a1.as_ref().is_none_or(|i| i.attempts == 1),
        "the back-off used no attempt: {a1:?}"
    );
}

#[tokio::test]
async fn backing_off_the_queue_holds_every_shard_of_it() {
    let server = RedisServer::start();
    let client = Client::open(&server.url).unwrap();
    let q = Queue::sharded(&client, &unique("backoff"), 3, QueueOptions::default()).unwrap();
    q.enqueue(b"", id("first")).await.unwrap();
    // The worker takes "first" alone (concurrency 1) before the rest exist.
    let runs: Arc<Mutex<Vec<(String, u64)>>> = Default::default();
    let r2 = runs.clone();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let tx = Arc::new(Mutex::new(Some(tx)));
    let w = q
        .work(
            WorkerOptions {
                concurrency: 1,
                ..drained()
            },
            move |job: Job| {
                let mut runs = r2.lock().unwrap();
                let first = job.id == "first" && runs.is_empty();
                runs.push((job.id.clone(), job.started_at));
                let tx = tx.clone();
                async move {
                    if first {
                        // The others are enqueued (on every shard) while this one runs.
                        let _ = tx.lock().unwrap().take().unwrap().send(());
                        tokio::time::sleep(Duration::from_millis(300)).await;
                        Err::<(), tideq::HandlerError>(
                            BackOff::queue(Duration::from_millis(800)).into(),
                        )
                    } else {
                        Ok(())
                    }
                }
            },
        )
        .unwrap();
    rx.await.unwrap();
    for i in 0..12 {
        q.enqueue(b"", id(&format!("j{i}"))).await.unwrap();
    }
    let stats = tokio::time::timeout(Duration::from_secs(20), w.join())
        .await
        .unwrap();
    assert_eq!((stats.snoozed, stats.completed), (1, 13));
    let runs = runs.lock().unwrap().clone();
    let first = runs[0].1;
    assert!(
        runs[1..].iter().all(|r| r.1 >= first + 300 + 800),
        "a job started during the hold: {runs:?}"
    );
}
