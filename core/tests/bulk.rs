//! Bulk actions (by ids, by a search, queue-wide), against a real redis-server: what each does,
//! its refusals (nothing written), and their cost at 100,000 jobs (SLOWLOG). Obliterate:
//! `obliterate.rs`.

mod common;

use std::time::Duration;

use common::finished::*;
use common::jobs::*;
use common::{scale, unique, RedisServer};
use tideq::{
    BulkAction, BulkOutcome, Client, EnqueueOptions, Job, JobFilter, JobState, Queue, QueueOptions,
    WorkerOptions, MAX_BULK_IDS,
};

fn ids(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| s.to_string()).collect()
}

/// `n` jobs with payload `<tag>-<i>` run by a worker that fails them all (one attempt each):
/// they end dead.
async fn dead_many(q: &Queue, tag: &str, n: usize) {
    let jobs: Vec<(Vec<u8>, EnqueueOptions)> = (0..n)
        .map(|i| {
            (
                format!("{tag}-{i}").into_bytes(),
                EnqueueOptions {
                    max_attempts: Some(1),
                    ..Default::default()
                },
            )
        })
        .collect();
    for part in jobs.chunks(10_000) {
        q.enqueue_many(part).await.unwrap();
    }
    let w = q
        .work(
            WorkerOptions {
                concurrency: 64,
                ..drained()
            },
            |_j: Job| async { Err::<(), String>("no".into()) },
        )
        .unwrap();
    w.join().await;
}

#[tokio::test]
async fn retry_jobs_requeues_the_dead_ids_and_reports_each_other_id_as_wrong_state_or_unknown() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    kill(&q, &["d1", "d2"]).await;
    finish(&q, &["c1"]).await;
    q.enqueue(b"x", id("r1")).await.unwrap();
    let got = q
        .retry_jobs(&ids(&["d1", "c1", "nope", "d2", "r1"]))
        .await
        .unwrap();
    let outcomes: Vec<(&str, BulkOutcome, Option<JobState>)> = got
        .iter()
        .map(|i| (i.id.as_str(), i.outcome, i.state))
        .collect();
    assert_eq!(
        outcomes,
        [
            ("d1", BulkOutcome::Done, None),
            ("c1", BulkOutcome::WrongState, Some(JobState::Completed)),
            ("nope", BulkOutcome::Unknown, None),
            ("d2", BulkOutcome::Done, None),
            ("r1", BulkOutcome::WrongState, Some(JobState::Ready)),
        ]
    );
    let d1 = q.get("d1").await.unwrap().unwrap();
    assert_eq!((d1.state, d1.attempts), (JobState::Ready, 0));
    assert_eq!(q.stats().await.unwrap().dead, 0);
}

#[tokio::test]
async fn delete_jobs_deletes_finished_ids_and_leaves_pending_ones() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    kill(&q, &["d1"]).await;
    finish(&q, &["c1"]).await;
    q.enqueue(b"x", later("l1")).await.unwrap();
    let got = q
        .delete_jobs(&ids(&["d1", "c1", "l1", "gone"]))
        .await
        .unwrap();
    let outcomes: Vec<BulkOutcome> = got.iter().map(|i| i.outcome).collect();
    use BulkOutcome::*;
    assert_eq!(outcomes, [Done, Done, WrongState, Unknown]);
    assert_eq!(got[2].state, Some(JobState::Delayed));
    assert_eq!(state(&q, "d1").await, None);
    assert_eq!(state(&q, "c1").await, None);
    assert_eq!(state(&q, "l1").await, Some(JobState::Delayed));
}

#[tokio::test]
async fn cancel_jobs_cancels_pending_ids_and_reports_finished_ones() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    finish(&q, &["c1"]).await;
    q.enqueue(b"x", id("r1")).await.unwrap();
    q.enqueue(b"x", later("l1")).await.unwrap();
    let got = q.cancel_jobs(&ids(&["r1", "l1", "c1", "x"])).await.unwrap();
    let outcomes: Vec<BulkOutcome> = got.iter().map(|i| i.outcome).collect();
    use BulkOutcome::*;
    assert_eq!(outcomes, [Done, Done, WrongState, Unknown]);
    let s = q.stats().await.unwrap();
    assert_eq!((s.ready, s.delayed, s.cancelled), (0, 0, 2));
}

#[tokio::test]
async fn more_than_1000_ids_or_an_invalid_id_is_refused_and_writes_nothing() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    kill(&q, &["d1"]).await;
    let before = snapshot(&server);
    let mut many: Vec<String> = (0..MAX_BULK_IDS).map(|i| format!("j{i}")).collect();
    many.push("d1".into());
    for call in [
        q.retry_jobs(&many).await,
        q.delete_jobs(&many).await,
        q.cancel_jobs(&many).await,
        q.retry_jobs(&ids(&["d1", ""])).await,
    ] {
        let err = call.unwrap_err();
        assert_eq!(err.code(), "INVALID_ARGUMENT", "{err}");
    }
    assert_eq!(snapshot(&server), before);
    assert_eq!(state(&q, "d1").await, Some(JobState::Dead));
}

#[tokio::test]
async fn a_search_action_on_a_state_it_does_not_apply_to_is_refused_and_writes_nothing() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    kill(&q, &["d1"]).await;
    q.enqueue(b"x", id("r1")).await.unwrap();
    let before = snapshot(&server);
    for (action, state) in [
        (BulkAction::Retry, JobState::Ready),
        (BulkAction::Delete, JobState::Ready),
        (BulkAction::Cancel, JobState::Dead),
    ] {
        let filter = JobFilter {
            state: Some(state),
            ..Default::default()
        };
        let err = q.bulk_found(action, &filter, None).await.unwrap_err();
        assert_eq!(err.code(), "INVALID_ARGUMENT", "{err}");
    }
    let err = q
        .bulk_found(BulkAction::Retry, &JobFilter::default(), Some("bogus"))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "INVALID_ARGUMENT", "{err}");
    assert_eq!(snapshot(&server), before);
}

#[tokio::test]
async fn retry_found_retries_every_dead_job_the_search_finds_a_page_at_a_time() {
    let server = RedisServer::start();
    let q = queue_with(
        &server.url,
        QueueOptions {
            keep_dead: None,
            ..Default::default()
        },
    );
    dead_many(&q, "order", 2500).await;
    dead_many(&q, "other", 500).await;
    assert_eq!(q.stats().await.unwrap().dead, 3000);
    // By hand, page by page: each call does one page and gives the cursor on.
    let filter = JobFilter {
        contains: Some("order-1".into()),
        ..Default::default()
    };
    let (mut cursor, mut done, mut calls) = (None::<String>, 0, 0);
    loop {
        let page = q
            .bulk_found(BulkAction::Retry, &filter, cursor.as_deref())
            .await
            .unwrap();
        done += page.done;
        calls += 1;
        match page.cursor {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    // order-1, order-10..19, order-100..199, order-1000..1999
    assert_eq!(done, 1 + 10 + 100 + 1000);
    assert!(calls >= 2, "{calls} calls");
    // The convenience call: the rest of the orders.
    let all = JobFilter {
        contains: Some("order-".into()),
        ..Default::default()
    };
    let counts = q.retry_found(&all).await.unwrap();
    assert_eq!(counts.done, 2500 - 1111);
    let s = q.stats().await.unwrap();
    assert_eq!((s.dead, s.ready), (500, 2500));
}

#[tokio::test]
async fn delete_found_deletes_every_completed_job_past_the_first_page() {
    let server = RedisServer::start();
    let q = queue_with(
        &server.url,
        QueueOptions {
            keep_completed: 10_000,
            ..Default::default()
        },
    );
    let jobs: Vec<(Vec<u8>, EnqueueOptions)> = (0..2500)
        .map(|i| (format!("p-{i}").into_bytes(), EnqueueOptions::default()))
        .collect();
    q.enqueue_many(&jobs).await.unwrap();
    assert_eq!(drain_noop_keep(&q).await, 2500);
    let counts = q
        .delete_found(&JobFilter {
            state: Some(JobState::Completed),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(counts.done, 2500);
    assert!(q.jobs(JobState::Completed, 0, 10).await.unwrap().is_empty());
}

async fn drain_noop_keep(q: &Queue) -> u64 {
    common::drain_noop(q).await
}

#[tokio::test]
async fn promote_all_runs_every_delayed_job_of_every_shard_now() {
    let server = RedisServer::start();
    let q = Queue::sharded(
        &Client::open(&server.url).unwrap(),
        &unique("jq"),
        3,
        Default::default(),
    )
    .unwrap();
    let jobs: Vec<(Vec<u8>, EnqueueOptions)> = (0..1500)
        .map(|i| {
            (
                format!("{i}").into_bytes(),
                EnqueueOptions {
                    delay: Some(Duration::from_secs(3600)),
                    ..Default::default()
                },
            )
        })
        .collect();
    q.enqueue_many(&jobs).await.unwrap();
    assert_eq!(q.promote_all().await.unwrap(), 1500);
    let s = q.stats().await.unwrap();
    assert_eq!((s.delayed, s.ready), (0, 1500));
}

#[tokio::test]
async fn clean_deletes_only_the_jobs_that_finished_before_the_time_given() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    kill(&q, &["d-old"]).await;
    finish(&q, &["c-old"]).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    kill(&q, &["d-new"]).await;
    finish(&q, &["c-new"]).await;
    let hour = Duration::from_secs(3600);
    assert_eq!(q.clean(JobState::Completed, hour).await.unwrap(), 0);
    let sec = Duration::from_secs(1);
    assert_eq!(q.clean(JobState::Completed, sec).await.unwrap(), 1);
    assert_eq!(q.clean(JobState::Dead, sec).await.unwrap(), 1);
    assert_eq!(state(&q, "c-old").await, None);
    assert_eq!(state(&q, "d-old").await, None);
    assert_eq!(state(&q, "c-new").await, Some(JobState::Completed));
    assert_eq!(state(&q, "d-new").await, Some(JobState::Dead));
    assert_eq!(q.clean(JobState::Dead, Duration::ZERO).await.unwrap(), 1);
    // A job's cost is forgotten with it.
    let costly = EnqueueOptions {
        cost: Some(3),
        ..id("costly")
    };
    q.enqueue(b"x", costly).await.unwrap();
    let job = q.lease_jobs(1, LONG).await.unwrap().remove(0);
    q.complete(&job).await.unwrap();
    assert_eq!(
        q.clean(JobState::Completed, Duration::ZERO).await.unwrap(),
        2
    );
    let costs: u64 = redis::cmd("HLEN")
        .arg(format!("tideq:{{{}}}:cost", q.name()))
        .query(&mut server.conn())
        .unwrap();
    assert_eq!(costs, 0);
    // As `delete` does: the ids are forgotten, so they may be enqueued again.
    for gone in ["c-old", "d-old"] {
        assert!(
            q.enqueue(b"again", id(gone)).await.unwrap().created,
            "{gone}"
        );
    }
}

#[tokio::test]
async fn clean_of_a_pending_state_or_a_page_over_1000_is_refused_and_writes_nothing() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    finish(&q, &["c1"]).await;
    let before = snapshot(&server);
    for state in [JobState::Ready, JobState::Delayed, JobState::Active] {
        let err = q.clean(state, Duration::ZERO).await.unwrap_err();
        assert_eq!(err.code(), "INVALID_ARGUMENT", "{err}");
    }
    let err = q
        .clean_page(JobState::Completed, Duration::ZERO, 1001)
        .await
        .unwrap_err();
    assert_eq!(err.code(), "INVALID_ARGUMENT", "{err}");
    assert_eq!(snapshot(&server), before);
}

/// At scale: cleaning 100,000 completed jobs is done in calls of bounded size, 250 jobs each
/// (none over 10 ms, but for the machine stalls `stalls_allowed` grants).
#[tokio::test]
async fn clean_of_100000_completed_jobs_has_no_call_over_10ms() {
    let _one = scale::one_at_a_time().await;
    let server = scale::server();
    let q = queue_with(
        &server.url,
        QueueOptions {
            keep_completed: 200_000,
            ..Default::default()
        },
    );
    let jobs: Vec<(Vec<u8>, EnqueueOptions)> = (0..100_000)
        .map(|i| (format!("{i}").into_bytes(), EnqueueOptions::default()))
        .collect();
    for part in jobs.chunks(10_000) {
        q.enqueue_many(part).await.unwrap();
    }
    let w = q
        .work(
            WorkerOptions {
                concurrency: 64,
                ..drained()
            },
            |_j: Job| async { Ok::<(), String>(()) },
        )
        .unwrap();
    assert_eq!(w.join().await.completed, 100_000);
    scale::slowlog_from_now(&server, 10_000);
    let before = scale::script_calls(&server);
    assert_eq!(
        q.clean_page(JobState::Completed, Duration::ZERO, 1000)
            .await
            .unwrap(),
        1000
    );
    assert_eq!(
        q.clean(JobState::Completed, Duration::ZERO).await.unwrap(),
        99_000
    );
    let calls = scale::script_calls(&server) - before;
    // Calls of 250 jobs (each page's TIME and reads are not scripts): 400, not one per job.
    assert!(calls <= 450, "{calls} script calls to clean 100,000 jobs");
    let slow: Vec<String> = scale::slow_calls(&server, 10_000)
        .into_iter()
        .filter(|c| c.contains("EVALSHA"))
        .collect();
    assert!(
        slow.len() <= scale::stalls_allowed(calls),
        "{} of {calls} script calls over 10 ms: {slow:#?}",
        slow.len()
    );
    assert!(q.jobs(JobState::Completed, 0, 10).await.unwrap().is_empty());
}

#[tokio::test]
async fn cancel_found_cancels_every_ready_job_of_a_queue_of_many_pages_plain_prioritized_and_grouped(
) {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let jobs: Vec<(Vec<u8>, EnqueueOptions)> = (0..3000)
        .map(|i| {
            let o = match i % 3 {
                0 => EnqueueOptions::default(),
                1 => EnqueueOptions {
                    priority: Some(1 + (i % 5) as u32),
                    ..Default::default()
                },
                _ => EnqueueOptions {
                    group: Some(format!("g{}", i % 7)),
                    ..Default::default()
                },
            };
            (format!("{i}").into_bytes(), o)
        })
        .collect();
    q.enqueue_many(&jobs).await.unwrap();
    q.enqueue(b"x", later("l1")).await.unwrap();
    let counts = q
        .cancel_found(&JobFilter {
            state: Some(JobState::Ready),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(counts.done, 3000);
    let s = q.stats().await.unwrap();
    assert_eq!((s.ready, s.delayed, s.cancelled), (0, 1, 3000));
    // A search by text over every state: only what it finds.
    assert_eq!(q.cancel_found(&JobFilter::default()).await.unwrap().done, 1);
}
