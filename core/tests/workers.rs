//! The worker registry (`Queue::workers`): each live worker with its identity and running jobs,
//! kept up by its fetches and, while it runs long jobs, by its lease renewals; a stopped worker
//! leaves it, a dead one drops out of view and is forgotten. One test per promise, against a real
//! redis-server.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::jobs::*;
use common::RedisServer;
use tideq::{Job, Queue, WorkerOptions};

fn key(q: &Queue, kind: &str) -> String {
    format!("tideq:{{{}}}:{kind}", q.name())
}

/// A worker whose jobs run until `release` is set.
fn held_worker(q: &Queue, opts: WorkerOptions, release: &Arc<AtomicBool>) -> tideq::Worker {
    let release = release.clone();
    q.work(opts, move |_job: Job| {
        let release = release.clone();
        async move {
            while !release.load(Ordering::SeqCst) {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Ok::<(), String>(())
        }
    })
    .unwrap()
}

#[tokio::test]
async fn a_worker_is_listed_with_its_identity() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    assert_eq!(q.workers().await.unwrap(), vec![]);
    let before = redis_ms(&server);
    let w = q
        .work(
            WorkerOptions {
                concurrency: 3,
                poll_interval: Duration::from_millis(50),
                ..Default::default()
            },
            |_job: Job| async { Ok::<(), String>(()) },
        )
        .unwrap();
    assert!(
        wait_for(Duration::from_secs(5), || async {
            q.workers().await.unwrap().len() == 1
        })
        .await
    );
    let ws = q.workers().await.unwrap();
    let me = &ws[0];
    assert_eq!(me.queue, q.name());
    assert_eq!(me.pid, std::process::id());
    assert_eq!(me.runtime, "rust");
    assert_eq!(me.version, env!("CARGO_PKG_VERSION"));
    assert_eq!(me.concurrency, 3);
    assert_eq!((me.running, me.running_ids.len()), (0, 0));
    assert_eq!(me.id.len(), 16, "{me:?}");
    assert!(me.last_seen_at >= before && me.started_at > 0, "{me:?}");
    w.shutdown().await;
}

#[tokio::test]
async fn a_worker_holding_long_jobs_stays_listed_and_counted() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    q.enqueue(b"a", id("long-a")).await.unwrap();
    q.enqueue(b"b", id("long-b")).await.unwrap();
    let release = Arc::new(AtomicBool::new(false));
    // A 600 ms lease: renewed every 200 ms while both jobs run, and the worker never fetches
    // meanwhile with its 2 slots full.
    let w = held_worker(
        &q,
        WorkerOptions {
            concurrency: 2,
            lease: Duration::from_millis(600),
            ..Default::default()
        },
        &release,
    );
    assert!(
        wait_for(Duration::from_secs(5), || async {
            q.workers().await.unwrap().first().map(|w| w.running) == Some(2)
        })
        .await,
        "{:?}",
        q.workers().await.unwrap()
    );
    // Its fetch's report is forgotten (as after ALIVE_FOR without one): the renewals alone bring
    // it back, with its running jobs.
    let mut conn = server.conn();
    let _: () = redis::pipe()
        .del(key(&q, "workers"))
        .del(key(&q, "winfo"))
        .query(&mut conn)
        .unwrap();
    assert_eq!(q.workers().await.unwrap(), vec![]);
    let seen_after = redis_ms(&server);
    assert!(
        wait_for(Duration::from_secs(3), || async {
            q.workers().await.unwrap().len() == 1
        })
        .await
    );
    let ws = q.workers().await.unwrap();
    assert_eq!(ws[0].running, 2);
    assert_eq!(ws[0].running_ids, vec!["long-a", "long-b"]);
    assert!(ws[0].last_seen_at >= seen_after, "{ws:?}");
    // Seen again and again while it holds them, without a fetch.
    let first = ws[0].last_seen_at;
    assert!(
        wait_for(Duration::from_secs(3), || async {
            q.workers().await.unwrap()[0].last_seen_at > first
        })
        .await
    );
    let m = q.metrics().await.unwrap();
    assert_eq!((m.workers, m.busy_workers), (1, 1), "{m:?}");
    release.store(true, Ordering::SeqCst);
    w.shutdown().await;
}

#[tokio::test]
async fn a_stopped_worker_leaves_the_list() {
    let server = RedisServer::start();
    let q = tideq::Queue::sharded(
        &tideq::Client::open(&server.url).unwrap(),
        &common::unique("jq"),
        2,
        Default::default(),
    )
    .unwrap();
    // One job that keeps the worker (it stops once drained) long enough to be seen.
    q.enqueue(b"x", Default::default()).await.unwrap();
    let w = q
        .work(drained(), |_job: Job| async {
            tokio::time::sleep(Duration::from_millis(500)).await;
            Ok::<(), String>(())
        })
        .unwrap();
    assert!(
        wait_for(Duration::from_secs(5), || async {
            q.workers().await.unwrap().len() == 1
        })
        .await
    );
    w.join().await;
    assert_eq!(q.workers().await.unwrap(), vec![]);
    assert_eq!(q.metrics().await.unwrap().workers, 0);
}

#[tokio::test]
async fn a_worker_not_seen_for_45_s_is_not_listed_and_one_gone_10_min_is_forgotten() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let now = redis_ms(&server);
    let entry = r#"{"queue":"x","host":"h","pid":1,"runtime":"rust","version":"0","concurrency":1,"started":1,"running":0,"ids":[]}"#;
    let mut conn = server.conn();
    let _: () = redis::pipe()
        .zadd(key(&q, "workers"), "quiet", now - 46_000)
        .zadd(key(&q, "workers"), "gone", now - 601_000)
        .hset(key(&q, "winfo"), "quiet", entry)
        .hset(key(&q, "winfo"), "gone", entry)
        .query(&mut conn)
        .unwrap();
    assert_eq!(q.workers().await.unwrap(), vec![]);
    assert_eq!(q.metrics().await.unwrap().workers, 0);
    // A worker's first fetch forgets the one gone for 10 minutes, not the quiet one.
    let w = q
        .work(drained(), |_job: Job| async { Ok::<(), String>(()) })
        .unwrap();
    w.join().await;
    let left: Vec<String> = redis::cmd("ZRANGE")
        .arg(key(&q, "workers"))
        .arg(0)
        .arg(-1)
        .query(&mut conn)
        .unwrap();
    assert_eq!(left, vec!["quiet"]);
    let kept: Vec<String> = redis::cmd("HKEYS")
        .arg(key(&q, "winfo"))
        .query(&mut conn)
        .unwrap();
    assert_eq!(kept, vec!["quiet"]);
}
