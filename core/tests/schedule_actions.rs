//! An operator's actions on a schedule (issue 43, "Settings from the UI"): run now, pause and
//! resume, remove, and the listing of each schedule's last job and its outcome. One test per
//! promise, against a real redis-server.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::jobs::*;
use common::{unique, RedisServer};
use tideq::{Client, ErrorKind, Every, Job, JobState, Queue, QueueOptions, Worker, WorkerOptions};

type Seen = Arc<Mutex<Vec<String>>>;

fn new_queue(url: &str, opts: QueueOptions) -> Queue {
    Queue::new(&Client::open(url).unwrap(), &unique("sa"), opts).unwrap()
}

/// A worker that records the id of each job it runs; jobs with payload `fail` fail.
fn driver(q: &Queue, seen: &Seen) -> Worker {
    let seen = seen.clone();
    q.work(
        WorkerOptions {
            poll_interval: Duration::from_millis(100),
            ..Default::default()
        },
        move |job: Job| {
            let seen = seen.clone();
            async move {
                seen.lock().unwrap().push(job.id.clone());
                if &job.payload[..] == b"fail" {
                    return Err("failed on purpose".to_string());
                }
                Ok::<(), String>(())
            }
        },
    )
    .unwrap()
}

/// Every key and value of the server, to show that a refused call wrote nothing.
fn dump(server: &RedisServer) -> Vec<(String, Vec<u8>)> {
    let mut conn = server.conn();
    let mut keys: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut conn).unwrap();
    keys.sort();
    keys.into_iter()
        .map(|k| {
            let v: Vec<u8> = redis::cmd("DUMP").arg(&k).query(&mut conn).unwrap();
            (k, v)
        })
        .collect()
}

#[tokio::test]
async fn run_now_enqueues_one_job_and_leaves_the_next_slot_unchanged() {
    let server = RedisServer::start();
    let q = new_queue(&server.url, QueueOptions::default());
    let next = q
        .upsert_schedule(
            "hourly",
            Every::interval(Duration::from_secs(3600)),
            b"p",
            Default::default(),
        )
        .await
        .unwrap();
    // A double click: two calls in the same Redis second give the same job, enqueued once.
    let mut ids = Vec::new();
    loop {
        let a = q.run_schedule("hourly").await.unwrap();
        let b = q.run_schedule("hourly").await.unwrap();
        ids.push(a.clone());
        ids.push(b.clone());
        if a == b {
            break;
        }
        assert!(ids.len() < 8, "never two calls in one second: {ids:?}");
    }
    ids.dedup();
    let stats = q.stats().await.unwrap();
    assert_eq!(
        stats.ready as usize,
        ids.len(),
        "one job per distinct id: {ids:?}"
    );
    let id = ids.last().unwrap();
    assert!(id.starts_with("hourly@run-"), "{id}");
    let job = q.get(id).await.unwrap().expect("the job is there");
    assert_eq!(job.state, JobState::Ready);
    let listed = q.schedules().await.unwrap();
    assert_eq!(listed[0].next_run_ms, next, "run now moved the next slot");
    assert_eq!(listed[0].last_job_id.as_deref(), Some(id.as_str()));
    assert_eq!(listed[0].last_job_state.as_deref(), Some("ready"));
}

#[tokio::test]
async fn a_paused_schedule_does_not_fire_over_two_periods_and_fires_again_after_resume() {
    let server = RedisServer::start();
    let q = new_queue(&server.url, QueueOptions::default());
    q.upsert_schedule(
        "tick",
        Every::interval(Duration::from_secs(1)),
        b"t",
        Default::default(),
    )
    .await
    .unwrap();
    assert!(q.pause_schedule("tick").await.unwrap());
    assert!(!q.pause_schedule("tick").await.unwrap(), "paused already");
    let kept = q.schedules().await.unwrap()[0].clone();
    assert!(kept.paused);
    assert!(
        kept.next_run_ms.is_some(),
        "a paused schedule keeps its next slot"
    );
    // Declaring it again (every process at start) keeps it paused.
    q.upsert_schedule(
        "tick",
        Every::interval(Duration::from_secs(1)),
        b"t",
        Default::default(),
    )
    .await
    .unwrap();
    let seen: Seen = Arc::default();
    let w = driver(&q, &seen);
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert!(
        seen.lock().unwrap().is_empty(),
        "a paused schedule fired: {:?}",
        seen.lock().unwrap()
    );
    assert_eq!(q.stats().await.unwrap().completed, 0);
    assert!(q.schedules().await.unwrap()[0].paused);

    assert!(q.resume_schedule("tick").await.unwrap());
    assert!(!q.resume_schedule("tick").await.unwrap(), "running already");
    assert!(!q.schedules().await.unwrap()[0].paused);
    let fired = wait_until(Duration::from_secs(10), || seen.lock().unwrap().len() >= 2).await;
    assert!(fired, "a resumed schedule did not fire");
    // The slots passed while paused ran once at most (the latest of them), not one job each.
    let ids = seen.lock().unwrap().clone();
    let mut distinct = ids.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), ids.len(), "a slot ran twice: {ids:?}");
    w.stop();
    w.join().await;
}

#[tokio::test]
async fn the_listing_shows_the_last_jobs_outcome_completed_dead_then_gone() {
    let server = RedisServer::start();
    let q = new_queue(
        &server.url,
        QueueOptions {
            max_attempts: 1,
            keep_completed: 1,
            ..Default::default()
        },
    );
    let every = Every::interval(Duration::from_secs(3600));
    q.upsert_schedule("ok", every.clone(), b"ok", Default::default())
        .await
        .unwrap();
    q.upsert_schedule("bad", every.clone(), b"fail", Default::default())
        .await
        .unwrap();
    q.upsert_schedule("never", every, b"ok", Default::default())
        .await
        .unwrap();
    let ok = q.run_schedule("ok").await.unwrap();
    let bad = q.run_schedule("bad").await.unwrap();
    let seen: Seen = Arc::default();
    let w = driver(&q, &seen);
    let done = wait_for(Duration::from_secs(10), || async {
        let s = q.stats().await.unwrap();
        s.completed == 1 && s.dead == 1
    })
    .await;
    assert!(done);
    let listed = q.schedules().await.unwrap();
    let by = |n: &str| listed.iter().find(|s| s.name == n).unwrap().clone();
    assert_eq!(by("ok").last_job_id, Some(ok.clone()));
    assert_eq!(by("ok").last_job_state.as_deref(), Some("completed"));
    assert_eq!(by("bad").last_job_id, Some(bad));
    assert_eq!(by("bad").last_job_state.as_deref(), Some("dead"));
    assert_eq!(by("never").last_job_id, None);
    assert_eq!(by("never").last_job_state, None);
    // keep_completed 1: one more completed job pushes the first out of what is kept.
    q.enqueue(b"ok", Default::default()).await.unwrap();
    let pushed_out = wait_for(Duration::from_secs(10), || async {
        q.get(&ok).await.unwrap().is_none()
    })
    .await;
    assert!(pushed_out);
    let listed = q.schedules().await.unwrap();
    let s = listed.iter().find(|s| s.name == "ok").unwrap();
    assert_eq!(s.last_job_state.as_deref(), Some("gone"));
    w.stop();
    w.join().await;
}

#[tokio::test]
async fn a_fired_slot_becomes_the_schedules_last_job() {
    let server = RedisServer::start();
    let q = new_queue(&server.url, QueueOptions::default());
    q.upsert_schedule(
        "tick",
        Every::interval(Duration::from_secs(1)),
        b"t",
        Default::default(),
    )
    .await
    .unwrap();
    let seen: Seen = Arc::default();
    let w = driver(&q, &seen);
    assert!(wait_until(Duration::from_secs(10), || !seen.lock().unwrap().is_empty()).await);
    let first = seen.lock().unwrap()[0].clone();
    assert!(!first.contains("@run-"), "{first}");
    let listed = q.schedules().await.unwrap();
    let last = listed[0].last_job_id.clone().expect("a last job");
    assert!(last.starts_with("tick@"), "{last}");
    w.stop();
    w.join().await;
}

#[tokio::test]
async fn actions_on_an_unknown_schedule_are_refused_and_write_nothing() {
    let server = RedisServer::start();
    let q = new_queue(&server.url, QueueOptions::default());
    q.upsert_schedule(
        "real",
        Every::interval(Duration::from_secs(3600)),
        b"p",
        Default::default(),
    )
    .await
    .unwrap();
    let before = dump(&server);
    for (what, err) in [
        ("run", q.run_schedule("nosuch").await.err()),
        ("pause", q.pause_schedule("nosuch").await.err()),
        ("resume", q.resume_schedule("nosuch").await.err()),
        ("bad name", q.run_schedule("").await.err()),
    ] {
        let err = err.unwrap_or_else(|| panic!("{what}: accepted"));
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{what}: {err}");
        if what != "bad name" {
            assert!(
                err.message().contains("no schedule named \"nosuch\""),
                "{what}: {err}"
            );
        }
    }
    assert!(!q.remove_schedule("nosuch").await.unwrap());
    assert_eq!(dump(&server), before, "a refused action wrote to Redis");
}

#[tokio::test]
async fn a_removed_paused_schedule_leaves_no_pause_nor_last_job_behind() {
    let server = RedisServer::start();
    let q = new_queue(&server.url, QueueOptions::default());
    let every = Every::interval(Duration::from_secs(3600));
    q.upsert_schedule("s", every.clone(), b"p", Default::default())
        .await
        .unwrap();
    q.run_schedule("s").await.unwrap();
    q.pause_schedule("s").await.unwrap();
    assert!(q.remove_schedule("s").await.unwrap());
    let mut conn = server.conn();
    for key in ["spause", "slast", "snext", "sched"] {
        let k = format!("tideq:{{{}}}:{key}", q.name());
        let n: u64 = redis::cmd("EXISTS").arg(&k).query(&mut conn).unwrap();
        assert_eq!(n, 0, "{key} left behind");
    }
    // Created again, it starts running, with no last job.
    q.upsert_schedule("s", every, b"p", Default::default())
        .await
        .unwrap();
    let s = q.schedules().await.unwrap()[0].clone();
    assert!(!s.paused);
    assert_eq!(s.last_job_id, None);
}
