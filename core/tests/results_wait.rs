//! `wait`: answers for jobs finished before the call and wakes at once for later ones, raises a
//! dead or cancelled job's end, times out leaving no waiter behind, and scales: 10,000 waits on
//! one connection, one notice for 1,500 waiters. One test per promise, against a real redis-server.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::jobs::*;
use common::results::*;
use common::RedisServer;
use tideq::{EnqueueOptions, ErrorKind, Job, JobState, Queue};

/// Waits until `n` waits of this process are registered for job `id` (the `waiters` field:
/// "<hub id>=<waits>", see docs/data-model.md).
async fn until_waiting(server: &RedisServer, q: &Queue, id: &str, n: u64) {
    let key = format!("tideq:{{{}}}:waiters", q.name());
    let count = || {
        let v: Option<String> = redis::cmd("HGET")
            .arg(&key)
            .arg(id)
            .query(&mut server.conn())
            .unwrap();
        v.map_or(0, |v| {
            v.split_whitespace()
                .filter_map(|e| e.split_once('=').and_then(|(_, n)| n.parse::<u64>().ok()))
                .sum()
        })
    };
    let ok = wait_until(Duration::from_secs(10), || count() == n).await;
    assert!(ok, "expected {n} waits for {id:?}, found {}", count());
}

#[tokio::test]
async fn wait_answers_for_a_job_that_finished_before_the_call() {
    let server = RedisServer::start();
    let q = queue_with(&server.url, opts(100));
    q.enqueue(b"", id("early")).await.unwrap();
    q.enqueue(b"", id("plain")).await.unwrap();
    drain(&q, |job: Job| async move {
        Ok::<_, String>((job.id == "early").then(|| b"42".to_vec()))
    })
    .await;
    let t = Instant::now();
    let out = q.wait("early", Some(Duration::from_secs(5))).await.unwrap();
    assert_eq!(out.result, Some(b"42".to_vec()));
    assert!(t.elapsed() < Duration::from_millis(500));
    assert_eq!(q.wait("plain", None).await.unwrap().result, None);
    // Nobody is left registered.
    assert_eq!(hlen(&server, &q, "waiters"), 0);
}

#[tokio::test]
async fn wait_returns_as_soon_as_a_later_job_finishes_not_at_a_poll_interval() {
    let server = RedisServer::start();
    let q = queue_with(&server.url, opts(100));
    q.enqueue(b"", id("later")).await.unwrap();
    // Two waiters on the same job: both are told.
    let waits: Vec<_> = (0..2)
        .map(|_| {
            let q = q.clone();
            tokio::spawn(async move {
                let out = q.wait("later", Some(Duration::from_secs(20))).await;
                (out, Instant::now())
            })
        })
        .collect();
    // Let the waiters block (well inside the 2 s poll interval).
    until_waiting(&server, &q, "later", 2).await;
    let finished = Arc::new(std::sync::Mutex::new(None));
    let f = finished.clone();
    drain(&q, move |_job: Job| {
        let f = f.clone();
        async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            *f.lock().unwrap() = Some(Instant::now());
            Ok::<_, String>(b"done".to_vec())
        }
    })
    .await;
    let finished = finished.lock().unwrap().unwrap();
    for w in waits {
        let (out, at) = w.await.unwrap();
        assert_eq!(out.unwrap().result, Some(b"done".to_vec()));
        let late = at.saturating_duration_since(finished);
        assert!(late < Duration::from_millis(500), "woke {late:?} after");
    }
    assert_eq!(hlen(&server, &q, "waiters"), 0);
}

#[tokio::test]
async fn wait_on_a_dead_lettered_job_raises_its_last_error() {
    let server = RedisServer::start();
    let q = queue_with(&server.url, opts(100));
    // Dead before the call.
    q.enqueue(b"", one_attempt("before")).await.unwrap();
    drain(&q, |_job: Job| async {
        Err::<(), String>("smtp refused".into())
    })
    .await;
    let e = q.wait("before", None).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::JobFailed);
    assert_eq!(e.code(), "JOB_FAILED");
    assert!(e.message().contains("smtp refused"), "{e}");
    // Dead while waiting.
    q.enqueue(b"", one_attempt("during")).await.unwrap();
    let waiting = {
        let q = q.clone();
        tokio::spawn(async move { q.wait("during", Some(Duration::from_secs(20))).await })
    };
    until_waiting(&server, &q, "during", 1).await;
    drain(&q, |_job: Job| async {
        Err::<(), String>("mailbox full".into())
    })
    .await;
    let e = waiting.await.unwrap().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::JobFailed);
    assert!(e.message().contains("mailbox full"), "{e}");
}

#[tokio::test]
async fn wait_on_a_cancelled_job_fails_and_on_an_unknown_one_is_not_found() {
    let server = RedisServer::start();
    let q = queue_with(&server.url, opts(100));
    q.enqueue(b"", id("doomed")).await.unwrap();
    let waiting = {
        let q = q.clone();
        tokio::spawn(async move { q.wait("doomed", Some(Duration::from_secs(20))).await })
    };
    until_waiting(&server, &q, "doomed", 1).await;
    q.cancel("doomed").await.unwrap();
    let e = waiting.await.unwrap().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::JobFailed);
    assert!(e.message().contains("cancelled"), "{e}");
    let e = q.wait("nobody", None).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::JobNotFound);
    assert_eq!(
        q.wait("bad\nid", None).await.unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
}

#[tokio::test]
async fn wait_times_out_with_timeout_and_leaves_no_waiter_behind() {
    let server = RedisServer::start();
    let q = queue_with(&server.url, opts(100));
    q.enqueue(b"", id("slow")).await.unwrap();
    let t = Instant::now();
    let e = q
        .wait("slow", Some(Duration::from_millis(300)))
        .await
        .unwrap_err();
    let took = t.elapsed();
    assert_eq!(e.kind(), ErrorKind::Timeout);
    assert_eq!(e.code(), "TIMEOUT");
    assert!(
        took >= Duration::from_millis(300) && took < Duration::from_millis(1500),
        "{took:?}"
    );
    let kinds: Vec<String> = keys_of(&server, &q).into_iter().map(|(k, _)| k).collect();
    assert!(!kinds.contains(&"waiters".to_string()), "{kinds:?}");
    // The job itself is untouched.
    assert_eq!(q.get("slow").await.unwrap().unwrap().state, JobState::Ready);
}

#[tokio::test]
async fn wait_gets_the_result_even_when_completed_jobs_are_not_retained() {
    let server = RedisServer::start();
    let q = queue_with(&server.url, opts(0));
    q.enqueue(b"", id("fleeting")).await.unwrap();
    let waiting = {
        let q = q.clone();
        tokio::spawn(async move { q.wait("fleeting", Some(Duration::from_secs(20))).await })
    };
    until_waiting(&server, &q, "fleeting", 1).await;
    drain(&q, |_job: Job| async {
        Ok::<_, String>(b"kept for the waiter".to_vec())
    })
    .await;
    let out = waiting.await.unwrap().unwrap();
    assert_eq!(out.result, Some(b"kept for the waiter".to_vec()));
    assert!(q.get("fleeting").await.unwrap().is_none());
}

#[tokio::test]
async fn a_waiter_giving_up_leaves_the_others_waiting_and_woken() {
    let server = RedisServer::start();
    let q = queue_with(&server.url, opts(100));
    q.enqueue(b"", id("shared")).await.unwrap();
    let patient = {
        let q = q.clone();
        tokio::spawn(async move { q.wait("shared", Some(Duration::from_secs(20))).await })
    };
    until_waiting(&server, &q, "shared", 1).await;
    let e = q
        .wait("shared", Some(Duration::from_millis(200)))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Timeout);
    // The patient one is still registered, and woken by the completion.
    assert_eq!(hlen(&server, &q, "waiters"), 1);
    let t = Instant::now();
    drain(&q, |_job: Job| async {
        Ok::<_, String>(b"at last".to_vec())
    })
    .await;
    let out = patient.await.unwrap().unwrap();
    assert_eq!(out.result, Some(b"at last".to_vec()));
    assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
    assert_eq!(hlen(&server, &q, "waiters"), 0);
}

/// Calls of one Redis command so far (`INFO commandstats`).
fn calls(server: &RedisServer, command: &str) -> u64 {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query(&mut server.conn())
        .unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("cmdstat_{command}:calls=")))
        .and_then(|v| v.split(',').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_concurrent_waits_share_one_connection_and_each_gets_its_jobs_result() {
    let server = RedisServer::start();
    let q = queue_with(&server.url, opts(0));
    let jobs: Vec<(Vec<u8>, EnqueueOptions)> = (0..10_000)
        .map(|i| (format!("r{i}").into_bytes(), id(&format!("w{i}"))))
        .collect();
    for part in jobs.chunks(5_000) {
        q.enqueue_many(part).await.unwrap();
    }
    let before = info_u64(&server, "connected_clients");
    let waits: Vec<_> = (0..10_000)
        .map(|i| {
            let q = q.clone();
            tokio::spawn(async move {
                q.wait(&format!("w{i}"), Some(Duration::from_secs(60)))
                    .await
            })
        })
        .collect();
    let registered = wait_until(Duration::from_secs(30), || {
        hlen(&server, &q, "waiters") == 10_000
    })
    .await;
    assert!(
        registered,
        "{} waits registered",
        hlen(&server, &q, "waiters")
    );
    let during = info_u64(&server, "connected_clients");
    assert!(
        during <= before + 3,
        "10,000 waits opened {} connections",
        during - before
    );
    drain(&q, |job: Job| async move {
        Ok::<_, String>(job.payload.to_vec())
    })
    .await;
    for (i, w) in waits.into_iter().enumerate() {
        let out = w.await.unwrap().unwrap();
        assert_eq!(out.result, Some(format!("r{i}").into_bytes()));
    }
    assert_eq!(hlen(&server, &q, "waiters"), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_with_1500_waiters_sends_one_notice_and_every_waiter_gets_it() {
    let server = RedisServer::start();
    let q = queue_with(&server.url, opts(100));
    q.enqueue(b"", id("alone")).await.unwrap();
    q.enqueue(b"", id("popular")).await.unwrap();
    let waits: Vec<_> = (0..1_500)
        .map(|_| {
            let q = q.clone();
            tokio::spawn(async move { q.wait("popular", Some(Duration::from_secs(60))).await })
        })
        .collect();
    until_waiting(&server, &q, "popular", 1_500).await;
    // The pushes a completion makes without waiters, then with 1,500 (one process): one more.
    let complete_one = || async {
        let job = q
            .lease_jobs(1, Duration::from_secs(30))
            .await
            .unwrap()
            .remove(0);
        let before = calls(&server, "rpush");
        q.complete_with_result(&job, b"big result").await.unwrap();
        calls(&server, "rpush") - before
    };
    let plain = complete_one().await;
    let waited = complete_one().await;
    assert_eq!(
        waited,
        plain + 1,
        "one notice per waiting process, not per wait"
    );
    for w in waits {
        assert_eq!(
            w.await.unwrap().unwrap().result,
            Some(b"big result".to_vec())
        );
    }
    assert_eq!(hlen(&server, &q, "waiters"), 0);
}

#[tokio::test]
async fn waits_that_time_out_or_are_dropped_take_their_registration_off() {
    let server = RedisServer::start();
    let q = queue_with(&server.url, opts(100));
    q.enqueue(b"", id("never")).await.unwrap();
    let timing_out: Vec<_> = (0..50)
        .map(|_| {
            let q = q.clone();
            tokio::spawn(async move { q.wait("never", Some(Duration::from_millis(200))).await })
        })
        .collect();
    let dropped: Vec<_> = (0..50)
        .map(|_| {
            let q = q.clone();
            tokio::spawn(async move { q.wait("never", None).await })
        })
        .collect();
    until_waiting(&server, &q, "never", 100).await;
    for w in dropped {
        w.abort();
    }
    for w in timing_out {
        assert_eq!(w.await.unwrap().unwrap_err().kind(), ErrorKind::Timeout);
    }
    let gone = wait_until(Duration::from_secs(10), || {
        hlen(&server, &q, "waiters") == 0
    })
    .await;
    let left: Option<String> = redis::cmd("HGET")
        .arg(format!("tideq:{{{}}}:waiters", q.name()))
        .arg("never")
        .query(&mut server.conn())
        .unwrap();
    assert!(gone, "waits left their registrations behind: {left:?}");
}
