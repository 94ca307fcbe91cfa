//! Damaged and missing job records (changed by hand, evicted, half restored) never cost healthy
//! jobs: every script checks a record before it writes, an unreadable record is dead-lettered
//! with an error saying so, a job whose envelope or state record is missing is removed and
//! counted, and operators can still list, inspect, requeue and purge whatever is left.

mod common;

use std::time::Duration;

use common::jobs::*;
use common::RedisServer;
use tideq::{Job, JobState, Queue, WorkerOptions};

fn key(q: &Queue, kind: &str) -> String {
    format!("tideq:{{{}}}:{kind}", q.name())
}

fn hset(server: &RedisServer, key: &str, field: &str, value: &[u8]) {
    redis::cmd("HSET")
        .arg(key)
        .arg(field)
        .arg(value)
        .query::<()>(&mut server.conn())
        .unwrap();
}

fn hdel(server: &RedisServer, key: &str, field: &str) {
    redis::cmd("HDEL")
        .arg(key)
        .arg(field)
        .query::<()>(&mut server.conn())
        .unwrap();
}

#[tokio::test]
async fn damaged_records_in_a_batch_never_cost_the_healthy_jobs() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    for i in 0..40 {
        q.enqueue(b"ok", id(&format!("h{i}"))).await.unwrap();
        if i % 10 == 5 {
            // One damaged job of each kind among the healthy ones.
            q.enqueue(b"bad", id(&format!("bad{i}"))).await.unwrap();
        }
    }
    hset(&server, &key(&q, "meta"), "bad5", b"q|x|5|0|0");
    hdel(&server, &key(&q, "meta"), "bad15");
    hdel(&server, &key(&q, "jobs"), "bad25");
    hset(&server, &key(&q, "jobs"), "bad35", b"\xc1 not an envelope");
    // A lease entry whose job record is damaged, and one whose job is gone, both expired.
    q.enqueue(b"bad", id("leased")).await.unwrap();
    redis::pipe()
        .cmd("LREM")
        .arg(key(&q, "ready"))
        .arg(0)
        .arg("leased")
        .cmd("ZADD")
        .arg(key(&q, "active"))
        .arg(1)
        .arg("leased")
        .arg(1)
        .arg("vanished")
        .query::<()>(&mut server.conn())
        .unwrap();
    hset(&server, &key(&q, "meta"), "leased", b"garbage");

    let opts = WorkerOptions {
        concurrency: 8,
        ..drained()
    };
    let stats = q
        .work(opts, |job: Job| async move {
            assert_eq!(job.payload, b"ok");
            Ok::<(), String>(())
        })
        .unwrap()
        .join()
        .await;
    assert_eq!(
        stats.completed, 40,
        "every healthy job completed: {stats:?}"
    );
    let s = q.stats().await.unwrap();
    assert_eq!((s.ready, s.active, s.delayed), (0, 0, 0), "{s:?}");
    assert_eq!(
        s.lost, 3,
        "missing meta, missing envelope, a lease with no job: {s:?}"
    );
    assert_eq!(s.dead, 3, "unreadable meta (twice) and envelope: {s:?}");
    for id in ["bad5", "bad35", "leased"] {
        let info = q.get(id).await.unwrap().unwrap();
        assert_eq!(info.state, JobState::Dead, "{id}");
        assert!(
            info.last_error
                .as_deref()
                .unwrap_or("")
                .contains("unreadable"),
            "{id}: {info:?}"
        );
    }
    for id in ["bad15", "bad25"] {
        assert!(
            q.get(id).await.unwrap().is_none(),
            "{id}: its leftovers are removed"
        );
    }
}

#[tokio::test]
async fn unreadable_jobs_can_still_be_listed_inspected_requeued_and_purged() {
    let server = RedisServer::start();
    let q = queue_with(
        &server.url,
        tideq::QueueOptions {
            max_attempts: 1,
            ..Default::default()
        },
    );
    q.enqueue(b"x", id("broken")).await.unwrap();
    q.enqueue(b"x", id("fine")).await.unwrap();
    hset(&server, &key(&q, "jobs"), "broken", b"\x92\x01\x02");
    let fail = |_job: Job| async { Err::<(), String>("boom".into()) };
    q.work(drained(), fail).unwrap().join().await;
    // Both dead; listing them works although one cannot be decoded.
    let dead = q.dead_letters(0, 10).await.unwrap();
    assert_eq!(dead.len(), 2, "{dead:?}");
    let broken = q.get("broken").await.unwrap().unwrap();
    assert!(
        broken.unreadable.as_deref().unwrap().contains("envelope"),
        "{broken:?}"
    );
    assert_eq!(
        broken.payload, b"\x92\x01\x02",
        "the raw bytes are there to look at"
    );
    assert!(q.get("fine").await.unwrap().unwrap().unreadable.is_none());
    // A damaged state record of a dead job: still listed, and requeued with one attempt.
    hset(&server, &key(&q, "meta"), "fine", b"not|a|record");
    assert_eq!(q.dead_letters(0, 10).await.unwrap().len(), 2);
    q.requeue("fine").await.unwrap();
    let info = q.get("fine").await.unwrap().unwrap();
    assert_eq!((info.state, info.max_attempts), (JobState::Ready, 1));
    assert_eq!(q.purge().await.unwrap(), 1);
    assert!(q.get("broken").await.unwrap().is_none());
}

#[tokio::test]
async fn settling_a_job_whose_record_was_damaged_meanwhile_is_refused_not_an_error() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    for i in 0..10 {
        q.enqueue(b"x", id(&format!("j{i}"))).await.unwrap();
    }
    let (url, meta) = (server.url.clone(), key(&q, "meta"));
    let opts = WorkerOptions {
        concurrency: 10,
        lease: Duration::from_millis(300),
        ..drained()
    };
    // j3's record is damaged while it runs: its ack, its failure and its lease renewal are all
    // refused (LEASE_LOST); every other ack of the same batch goes through.
    let stats = q
        .work(opts, move |job: Job| {
            let (url, meta) = (url.clone(), meta.clone());
            async move {
                if job.id == "j3" {
                    let mut c = redis::Client::open(url.as_str())
                        .unwrap()
                        .get_connection()
                        .unwrap();
                    redis::cmd("HSET")
                        .arg(&meta)
                        .arg("j3")
                        .arg("q|?")
                        .query::<()>(&mut c)
                        .unwrap();
                }
                Ok::<(), String>(())
            }
        })
        .unwrap()
        .join()
        .await;
    assert_eq!((stats.completed, stats.lease_lost), (9, 1), "{stats:?}");
}

/// Moves job `from`'s records (envelope, state record, place in the ready list) to the raw id
/// `to`, as something else than tideq might write them.
fn rename_job(server: &RedisServer, q: &Queue, from: &str, to: &[u8]) {
    let mut c = server.conn();
    for kind in ["jobs", "meta"] {
        let v: Vec<u8> = redis::cmd("HGET")
            .arg(key(q, kind))
            .arg(from)
            .query(&mut c)
            .unwrap();
        redis::pipe()
            .cmd("HDEL")
            .arg(key(q, kind))
            .arg(from)
            .cmd("HSET")
            .arg(key(q, kind))
            .arg(to)
            .arg(v)
            .query::<()>(&mut c)
            .unwrap();
    }
    redis::pipe()
        .cmd("LREM")
        .arg(key(q, "ready"))
        .arg(0)
        .arg(from)
        .cmd("LPUSH")
        .arg(key(q, "ready"))
        .arg(to)
        .query::<()>(&mut c)
        .unwrap();
}

// Issue 40, item 4: a fetch whose reply held an id that is not UTF-8 was rejected whole, and the
// good jobs leased with it were dead-lettered "lease expired" without running.
#[tokio::test]
async fn a_job_id_that_is_not_utf8_costs_none_of_the_jobs_leased_with_it() {
    let server = RedisServer::start();
    let q = queue_with(
        &server.url,
        tideq::QueueOptions {
            max_attempts: 1,
            ..Default::default()
        },
    );
    q.enqueue(b"bad", id("planted")).await.unwrap();
    for i in 0..40 {
        q.enqueue(b"ok", id(&format!("h{i}"))).await.unwrap();
    }
    // At the head of the ready list, so it is leased with the first batch.
    rename_job(&server, &q, "planted", b"bad\xff\xfe");
    let opts = WorkerOptions {
        concurrency: 5,
        lease: Duration::from_millis(500),
        ..drained()
    };
    let stats = q
        .work(opts, |job: Job| async move {
            assert_eq!(job.payload, b"ok");
            Ok::<(), String>(())
        })
        .unwrap()
        .join()
        .await;
    assert_eq!(stats.completed, 40, "{stats:?}");
    assert_eq!(stats.fetch_errors, 0, "{stats:?}");
    let s = q.stats().await.unwrap();
    assert_eq!(
        (s.ready, s.active, s.completed, s.dead),
        (0, 0, 40, 1),
        "{s:?}"
    );
    let error: Vec<u8> = redis::cmd("HGET")
        .arg(key(&q, "errors"))
        .arg(b"bad\xff\xfe".as_slice())
        .query(&mut server.conn())
        .unwrap();
    let error = String::from_utf8_lossy(&error);
    assert!(error.contains("not UTF-8"), "{error}");
    // Operators can still list it (its id shown with replacement characters), and purge it.
    let shown = String::from_utf8_lossy(b"bad\xff\xfe").into_owned();
    let dead = q.jobs(JobState::Dead, 0, 10).await.unwrap();
    assert_eq!(dead.len(), 1, "{dead:?}");
    assert_eq!(dead[0].id, shown);
    assert!(dead[0].last_error.as_deref().unwrap().contains("not UTF-8"));
    let page = q.jobs_page(JobState::Dead, None, 10).await.unwrap();
    assert_eq!(page.jobs.len(), 1);
    assert_eq!(q.dead_letters(0, 10).await.unwrap().len(), 1);
    assert_eq!(q.purge().await.unwrap(), 1);
    assert_eq!(q.stats().await.unwrap().dead, 0);
}

// Issue 40, item 5: a completion whose script failed half-way (the stats hash replaced by a
// string) took the job out of the active set first, leaving it in no state; the worker then
// retried the completion forever and could not stop.
#[tokio::test]
async fn a_key_of_another_kind_loses_no_job_and_stops_the_worker_naming_the_key() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    q.enqueue(b"x", id("j1")).await.unwrap();
    let stats_key = key(&q, "stats");
    let (url, k) = (server.url.clone(), stats_key.clone());
    let opts = WorkerOptions {
        lease: Duration::from_millis(500),
        poll_interval: Duration::from_millis(100),
        ..Default::default()
    };
    let w = q
        .work(opts, move |_job: Job| {
            let (url, k) = (url.clone(), k.clone());
            async move {
                // While the handler runs, something else writes a string where the stats are.
                let mut c = redis::Client::open(url).unwrap().get_connection().unwrap();
                redis::pipe()
                    .cmd("DEL")
                    .arg(&k)
                    .cmd("SET")
                    .arg(&k)
                    .arg("not a hash")
                    .query::<()>(&mut c)
                    .unwrap();
                Ok::<(), String>(())
            }
        })
        .unwrap();
    tokio::time::timeout(Duration::from_secs(20), w.join())
        .await
        .expect("the worker stops on an error retrying cannot fix");
    let err = w.error().expect("it says why it stopped");
    assert!(
        err.message().contains(&stats_key) && err.message().contains("string"),
        "{err}"
    );
    // The job was not lost: it is still leased, and runs again once its lease expired.
    let leased: Option<f64> = redis::cmd("ZSCORE")
        .arg(key(&q, "active"))
        .arg("j1")
        .query(&mut server.conn())
        .unwrap();
    assert!(leased.is_some(), "j1 left the active set");
    redis::cmd("DEL")
        .arg(&stats_key)
        .query::<()>(&mut server.conn())
        .unwrap();
    assert_eq!(common::drain_noop(&q).await, 1);
    assert_eq!(
        q.get("j1").await.unwrap().unwrap().state,
        JobState::Completed
    );
}
