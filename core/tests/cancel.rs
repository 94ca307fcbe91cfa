//! Cancelling jobs: a ready or delayed job is removed at once; an active one is asked to stop
//! (its worker fires the job's cancellation within a second) and ends cancelled when its handler
//! returns, never retried; a dead or completed job cannot be cancelled. One test per promise,
//! against a real redis-server.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::jobs::*;
use common::RedisServer;
use tideq::{EnqueueOptions, Job, JobHandler, JobState, WorkerOptions};

fn worker_opts(concurrency: usize) -> WorkerOptions {
    WorkerOptions {
        concurrency,
        poll_interval: Duration::from_millis(100),
        ..Default::default()
    }
}

#[tokio::test]
async fn cancel_of_an_active_job_fires_its_token_within_a_second_and_ends_it_cancelled_not_retried()
{
    let server = RedisServer::start();
    let q = queue(&server.url);
    q.enqueue(b"x", id("long")).await.unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    let seen: Arc<Mutex<Option<(Instant, bool)>>> = Default::default();
    let (c2, s2) = (calls.clone(), seen.clone());
    // Boxed, so the test sees the token fire (`Queue::work` drops a cancelled handler's future).
    let handler: JobHandler = Arc::new(move |job: Job| {
        c2.fetch_add(1, Ordering::SeqCst);
        let seen = s2.clone();
        Box::pin(async move {
            job.cancellation().cancelled().await;
            *seen.lock().unwrap() = Some((Instant::now(), job.cancel_requested()));
            Err("stopped as asked".into())
        })
    });
    let w = q.work_boxed(worker_opts(2), handler).unwrap();
    assert!(wait_until(Duration::from_secs(5), || calls.load(Ordering::SeqCst) == 1).await);
    let asked = Instant::now();
    q.cancel("long").await.unwrap();
    assert!(wait_until(Duration::from_secs(3), || seen.lock().unwrap().is_some()).await);
    let (at, requested) = seen.lock().unwrap().unwrap();
    assert!(
        requested,
        "job.cancel_requested() tells a cancel from a timeout or a shutdown"
    );
    let took = at - asked;
    // The renewer looks twice a second; the bound leaves room for a loaded test machine.
    assert!(
        took < Duration::from_secs(2),
        "the handler saw it after {took:?}"
    );
    assert!(
        wait_for(Duration::from_secs(5), || async {
            q.get("long").await.unwrap().is_none()
        })
        .await,
        "the job did not end"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    let s = q.stats().await.unwrap();
    assert_eq!(
        (
            s.cancelled,
            s.retried,
            s.dead_lettered,
            s.completed,
            s.active,
            s.ready
        ),
        (1, 0, 0, 0, 0, 0)
    );
    assert_eq!(calls.load(Ordering::SeqCst), 1, "a cancelled job ran again");
    let ws = w.shutdown().await;
    assert_eq!((ws.cancelled, ws.failed, ws.completed), (1, 0, 0));
}

#[tokio::test]
async fn a_handler_ignoring_the_signal_keeps_its_slot_until_it_returns_then_the_job_is_cancelled() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    q.enqueue(b"x", id("stubborn")).await.unwrap();
    q.enqueue(b"x", id("next")).await.unwrap();
    let log: Arc<Mutex<Vec<(String, &'static str)>>> = Default::default();
    let l2 = log.clone();
    // Boxed: the runtime never drops the future, so the handler really ignores the signal.
    let handler: JobHandler = Arc::new(move |job: Job| {
        let log = l2.clone();
        Box::pin(async move {
            let id = job.id.clone();
            log.lock().unwrap().push((id.clone(), "start"));
            if id == "stubborn" {
                tokio::time::sleep(Duration::from_millis(1500)).await;
            }
            log.lock().unwrap().push((id, "end"));
            Ok(None)
        })
    });
    let w = q.work_boxed(worker_opts(1), handler).unwrap();
    assert!(wait_until(Duration::from_secs(5), || !log.lock().unwrap().is_empty()).await);
    q.cancel("stubborn").await.unwrap();
    assert!(
        wait_until(Duration::from_secs(5), || log.lock().unwrap().len() == 4).await,
        "{:?}",
        log.lock().unwrap()
    );
    let entries: Vec<(String, &str)> = log
        .lock()
        .unwrap()
        .iter()
        .map(|(id, what)| (id.clone(), *what))
        .collect();
    // The only slot stayed with the stubborn job until its handler returned.
    assert_eq!(
        entries,
        [
            ("stubborn".to_string(), "start"),
            ("stubborn".to_string(), "end"),
            ("next".to_string(), "start"),
            ("next".to_string(), "end"),
        ]
    );
    let ws = w.shutdown().await;
    assert!(q.get("stubborn").await.unwrap().is_none());
    let s = q.stats().await.unwrap();
    assert_eq!(
        (s.cancelled, s.completed, s.retried, s.dead_lettered),
        (1, 1, 0, 0)
    );
    assert_eq!((ws.cancelled, ws.completed), (1, 1));
}

#[tokio::test]
async fn cancel_of_a_job_whose_worker_died_ends_it_cancelled_at_lease_expiry_not_redelivered() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    q.enqueue(b"x", id("orphan")).await.unwrap();
    // Leased by hand and never renewed: its "worker" died.
    let held = q.lease_jobs(1, Duration::from_millis(300)).await.unwrap();
    assert_eq!(held.len(), 1);
    q.cancel("orphan").await.unwrap();
    assert_eq!(
        q.get("orphan").await.unwrap().unwrap().state,
        JobState::Active,
        "an active job ends when its delivery does"
    );
    tokio::time::sleep(Duration::from_millis(450)).await;
    assert!(q
        .lease_jobs(5, Duration::from_secs(5))
        .await
        .unwrap()
        .is_empty());
    assert!(q.get("orphan").await.unwrap().is_none());
    let s = q.stats().await.unwrap();
    assert_eq!((s.cancelled, s.recovered, s.ready, s.active), (1, 0, 0, 0));
}

#[tokio::test]
async fn a_cancel_requested_attempt_that_fails_is_cancelled_and_one_that_completes_completes() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    q.enqueue(b"x", id("a")).await.unwrap();
    q.enqueue(b"x", id("b")).await.unwrap();
    let jobs = q.lease_jobs(2, Duration::from_secs(30)).await.unwrap();
    q.cancel("a").await.unwrap();
    q.cancel("b").await.unwrap();
    // Failing (the handler stopped as asked): cancelled, not retried nor dead-lettered.
    assert!(!q.fail(&jobs[0], "stopped").await.unwrap());
    assert!(q.get("a").await.unwrap().is_none());
    // Done before it heard of the request: the work happened, so the job completes.
    q.complete(&jobs[1]).await.unwrap();
    assert_eq!(
        q.get("b").await.unwrap().unwrap().state,
        JobState::Completed
    );
    let s = q.stats().await.unwrap();
    assert_eq!((s.cancelled, s.completed, s.retried, s.dead), (1, 1, 0, 0));
    // A cancel request does not outlive its delivery.
    let mut conn = server.conn();
    let keys: Vec<String> = redis::cmd("KEYS").arg("*:cancel").query(&mut conn).unwrap();
    q.lease_jobs(1, Duration::from_secs(1)).await.unwrap();
    let left: Vec<String> = redis::cmd("KEYS").arg("*:cancel").query(&mut conn).unwrap();
    assert!(left.is_empty(), "before {keys:?}, after {left:?}");
}

#[tokio::test]
async fn cancel_of_a_ready_or_delayed_job_removes_it_at_once() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    q.enqueue(b"r", id("ready")).await.unwrap();
    let later = EnqueueOptions {
        delay: Some(Duration::from_secs(60)),
        ..id("delayed")
    };
    q.enqueue(b"d", later).await.unwrap();
    q.cancel("ready").await.unwrap();
    q.cancel("delayed").await.unwrap();
    assert!(q.get("ready").await.unwrap().is_none());
    assert!(q.get("delayed").await.unwrap().is_none());
    let s = q.stats().await.unwrap();
    assert_eq!((s.ready, s.delayed, s.cancelled), (0, 0, 2));
    assert_eq!(q.cancel("ready").await.unwrap_err().code(), "JOB_NOT_FOUND");
}

/// Leases everything ready (in fetches of up to `max`), completing each; the payloads in order.
async fn lease_all(q: &tideq::Queue, max: usize) -> Vec<String> {
    let mut out = Vec::new();
    loop {
        let got = q.lease_jobs(max, Duration::from_secs(60)).await.unwrap();
        if got.is_empty() {
            return out;
        }
        for j in got {
            out.push(String::from_utf8(j.payload.to_vec()).unwrap());
            q.complete(&j).await.unwrap();
        }
    }
}

#[tokio::test]
async fn a_ready_job_cancelled_then_enqueued_again_with_its_id_runs_once_in_any_list() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let with = |i: &str, priority: Option<u32>, group: Option<&str>| EnqueueOptions {
        priority,
        group: group.map(str::to_string),
        ..id(i)
    };
    // Plain, prioritized; each cancelled, then enqueued again: plain, prioritized, grouped.
    for (i, p) in [("plain", None), ("prio", Some(3))] {
        q.enqueue(b"old", with(i, p, None)).await.unwrap();
    }
    q.enqueue(b"other", with("other", Some(3), None))
        .await
        .unwrap();
    q.cancel("plain").await.unwrap();
    q.cancel("prio").await.unwrap();
    assert_eq!(
        q.stats().await.unwrap().ready,
        1,
        "cancelled jobs still counted as ready"
    );
    let ids: Vec<String> = q
        .jobs(JobState::Ready, 0, 10)
        .await
        .unwrap()
        .into_iter()
        .map(|j| j.id)
        .collect();
    assert_eq!(ids, ["other"]);
    q.enqueue(b"plain-again", with("plain", None, None))
        .await
        .unwrap();
    q.enqueue(b"prio-again", with("prio", Some(3), None))
        .await
        .unwrap();
    assert_eq!(q.stats().await.unwrap().ready, 3);
    // One fetch pops a ghost and the job enqueued after it: the job runs, once.
    assert_eq!(
        lease_all(&q, 10).await,
        ["plain-again", "other", "prio-again"]
    );
    // The id moved to a group: its ghost in the ready list is dropped, the job runs from its group.
    q.enqueue(b"x", with("moved", None, None)).await.unwrap();
    q.cancel("moved").await.unwrap();
    q.enqueue(b"grouped", with("moved", None, Some("g")))
        .await
        .unwrap();
    assert_eq!(lease_all(&q, 1).await, ["grouped"]);
    let s = q.stats().await.unwrap();
    assert_eq!(
        (s.ready, s.active, s.completed, s.cancelled, s.lost),
        (0, 0, 4, 3, 0)
    );
}

#[tokio::test]
async fn dead_and_completed_jobs_are_still_not_cancellable() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    q.enqueue(b"x", id("done")).await.unwrap();
    let once = EnqueueOptions {
        max_attempts: Some(1),
        ..id("dead")
    };
    q.enqueue(b"x", once).await.unwrap();
    for job in q.lease_jobs(2, Duration::from_secs(30)).await.unwrap() {
        if job.id == "done" {
            q.complete(&job).await.unwrap();
        } else {
            assert!(q.fail(&job, "boom").await.unwrap());
        }
    }
    for (id, state) in [("done", "completed"), ("dead", "dead")] {
        let err = q.cancel(id).await.unwrap_err();
        assert_eq!(err.code(), "JOB_NOT_CANCELLABLE");
        assert!(err.message().contains(state), "{err}");
    }
}

#[tokio::test]
async fn a_wait_on_a_running_job_that_is_cancelled_ends_with_job_failed() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    q.enqueue(b"x", id("waited")).await.unwrap();
    let started = Arc::new(AtomicUsize::new(0));
    let s2 = started.clone();
    let handler: JobHandler = Arc::new(move |job: Job| {
        s2.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move {
            job.cancellation().cancelled().await;
            Ok(None)
        })
    });
    let w = q.work_boxed(worker_opts(1), handler).unwrap();
    assert!(
        wait_until(Duration::from_secs(5), || started.load(Ordering::SeqCst)
            == 1)
        .await
    );
    let waiter = {
        let q = q.clone();
        tokio::spawn(async move { q.wait("waited", Some(Duration::from_secs(20))).await })
    };
    // Cancel once the wait is registered (the queue's waiters hash holds the job).
    let waiters = format!("tideq:{{{}}}:waiters", q.name());
    assert!(
        wait_until(Duration::from_secs(5), || {
            let n: i64 = redis::cmd("HLEN")
                .arg(&waiters)
                .query(&mut server.conn())
                .unwrap();
            n == 1
        })
        .await
    );
    q.cancel("waited").await.unwrap();
    let err = waiter.await.unwrap().unwrap_err();
    assert_eq!(err.code(), "JOB_FAILED", "{err}");
    w.shutdown().await;
}
