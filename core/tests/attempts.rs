//! A job's attempts and its log (issue 43, "Attempts and logs per job"): every attempt recorded
//! with its start, end, worker, outcome, error and trace; a lease that expired as a "lost"
//! attempt; a handler's log lines, stamped and capped; both deleted with the job. One test per
//! promise, against a real redis-server.

mod common;

use std::time::Duration;

use common::jobs::*;
use common::RedisServer;
use tideq::{EnqueueOptions, ErrorKind, Job, JobState, Queue, QueueOptions};

fn key(q: &Queue, kind: &str) -> String {
    format!("tideq:{{{}}}:{kind}", q.name())
}

fn hlen(server: &RedisServer, q: &Queue, kind: &str) -> u64 {
    redis::cmd("HLEN")
        .arg(key(q, kind))
        .query(&mut server.conn())
        .unwrap()
}

fn exists(server: &RedisServer, key: &str) -> bool {
    redis::cmd("EXISTS")
        .arg(key)
        .query::<u64>(&mut server.conn())
        .unwrap()
        == 1
}

/// From now on SLOWLOG records every call over 10 ms (the project's budget per script call).
fn log_slow_calls(server: &RedisServer) {
    let mut c = server.conn();
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("slowlog-log-slower-than")
        .arg(10_000)
        .query(&mut c)
        .unwrap();
    let _: () = redis::cmd("SLOWLOG").arg("RESET").query(&mut c).unwrap();
}

fn slow_calls(server: &RedisServer) -> u64 {
    redis::cmd("SLOWLOG")
        .arg("LEN")
        .query(&mut server.conn())
        .unwrap()
}

/// An error with a cause, as `anyhow` or `thiserror` make them.
#[derive(Debug)]
struct Outer(u32, std::io::Error);

impl std::fmt::Display for Outer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "boom {}", self.0)
    }
}

impl std::error::Error for Outer {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.1)
    }
}

fn retried(max: u32) -> EnqueueOptions {
    EnqueueOptions {
        max_attempts: Some(max),
        ..id("j")
    }
}

#[tokio::test]
async fn a_job_that_failed_twice_then_succeeded_shows_each_attempt_with_its_error_chain_and_logs() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    q.enqueue(b"x", retried(5)).await.unwrap();
    let w = q
        .work(drained(), |job: Job| async move {
            job.log(format!("starting attempt {}", job.attempt))
                .await
                .map_err(|e| e.to_string())?;
            if job.attempt < 3 {
                let cause = std::io::Error::other(format!("disk full {}", job.attempt));
                return Err(Outer(job.attempt, cause).into());
            }
            Ok::<(), tideq::HandlerError>(())
        })
        .unwrap();
    let stats = tokio::time::timeout(Duration::from_secs(20), w.join())
        .await
        .unwrap();
    assert_eq!((stats.completed, stats.failed), (1, 2));
    let info = q.get("j").await.unwrap().unwrap();
    assert_eq!(info.state, JobState::Completed);
    let h = &info.attempt_history;
    let outcomes: Vec<(u32, &str)> = h.iter().map(|a| (a.attempt, a.outcome.as_str())).collect();
    assert_eq!(
        outcomes,
        vec![(1, "failed"), (2, "failed"), (3, "completed")]
    );
    for a in h {
        let (s, e) = (a.started_at.unwrap(), a.ended_at.unwrap());
        assert!(s <= e, "{a:?}");
        assert_eq!(a.duration_ms, Some(e - s));
        assert!(a.worker.as_deref().is_some_and(|w| !w.is_empty()), "{a:?}");
    }
    assert!(h[1].started_at >= h[0].ended_at, "attempts in order");
    assert_eq!(h[0].error.as_deref(), Some("boom 1"));
    assert_eq!(h[1].trace.as_deref(), Some("boom 2: disk full 2"));
    assert_eq!((h[2].error.as_deref(), h[2].trace.as_deref()), (None, None));
    assert_eq!(info.started_at, h[2].started_at);
    assert_eq!(info.run_ms, h[2].duration_ms);
    assert_eq!(info.worker, h[2].worker);
    let lines: Vec<(u32, &str)> = info
        .logs
        .iter()
        .map(|l| (l.attempt, l.line.as_str()))
        .collect();
    assert_eq!(
        lines,
        vec![
            (1, "starting attempt 1"),
            (2, "starting attempt 2"),
            (3, "starting attempt 3")
        ]
    );
    assert!(info.logs.windows(2).all(|w| w[0].at_ms <= w[1].at_ms));
    assert_eq!(q.job_logs("j").await.unwrap(), info.logs);
}

#[tokio::test]
async fn a_job_done_on_its_first_attempt_writes_no_attempts_record_yet_shows_its_run() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    q.enqueue(b"x", id("plain")).await.unwrap();
    let w = q
        .work(drained(), |_job: Job| async { Ok::<(), String>(()) })
        .unwrap();
    w.join().await;
    assert!(!exists(&server, &key(&q, "attempts")));
    let info = q.get("plain").await.unwrap().unwrap();
    assert!(info.started_at.is_some() && info.run_ms.is_some());
    assert!(info.worker.is_some());
    assert_eq!(info.attempt_history.len(), 1);
    assert_eq!(info.attempt_history[0].outcome, "completed");
    assert_eq!(info.attempt_history[0].started_at, info.started_at);
    // A list reads the run from the meta too, without the history.
    let listed = q.jobs(JobState::Completed, 0, 10).await.unwrap();
    assert_eq!(listed[0].run_ms, info.run_ms);
    assert!(listed[0].attempt_history.is_empty());
}

#[tokio::test]
async fn a_lease_that_expired_shows_as_a_lost_attempt_then_the_completed_one() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    q.enqueue(b"x", retried(3)).await.unwrap();
    // Leased, then never settled: its holder is gone.
    let leased = q.lease_jobs(1, Duration::from_millis(100)).await.unwrap();
    assert_eq!(leased.len(), 1);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let w = q
        .work(drained(), |_job: Job| async { Ok::<(), String>(()) })
        .unwrap();
    w.join().await;
    let info = q.get("j").await.unwrap().unwrap();
    let h = &info.attempt_history;
    assert_eq!(h.len(), 2, "{h:?}");
    assert_eq!((h[0].attempt, h[0].outcome.as_str()), (1, "lost"));
    assert!(h[0].error.as_deref().unwrap().contains("lease expired"));
    assert!(h[0].ended_at.is_some());
    assert_eq!((h[1].attempt, h[1].outcome.as_str()), (2, "completed"));
    assert!(h[1].worker.is_some());
}

#[tokio::test]
async fn the_attempts_kept_are_the_first_3_and_the_last_20() {
    let server = RedisServer::start();
    let q = queue_with(
        &server.url,
        QueueOptions {
            backoff: tideq::Backoff::fixed(0),
            ..Default::default()
        },
    );
    q.enqueue(b"x", retried(30)).await.unwrap();
    let w = q
        .work(drained(), |job: Job| async move {
            Err::<(), _>(format!("fail {}", job.attempt))
        })
        .unwrap();
    tokio::time::timeout(Duration::from_secs(30), w.join())
        .await
        .unwrap();
    let info = q.get("j").await.unwrap().unwrap();
    assert_eq!(info.state, JobState::Dead);
    let n: Vec<u32> = info.attempt_history.iter().map(|a| a.attempt).collect();
    let want: Vec<u32> = (1..=3).chain(11..=30).collect();
    assert_eq!(n, want);
    assert_eq!(info.attempt_history[22].error.as_deref(), Some("fail 30"));
    assert_eq!(info.started_at, info.attempt_history[22].started_at);
}

#[tokio::test]
async fn an_attempts_error_and_trace_are_kept_within_8_kib() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    q.enqueue(b"x", retried(1)).await.unwrap();
    let w = q
        .work(drained(), |_job: Job| async move {
            let cause = std::io::Error::other("c".repeat(20_000));
            Err::<(), tideq::HandlerError>(Outer(1, cause).into())
        })
        .unwrap();
    w.join().await;
    let info = q.get("j").await.unwrap().unwrap();
    let a = &info.attempt_history[0];
    let kept = a.error.as_ref().unwrap().len() + a.trace.as_ref().unwrap().len();
    assert!((8 * 1024..=8 * 1024 + 8).contains(&kept), "{kept}");
    assert!(a.trace.as_ref().unwrap().starts_with("boom 1: ccc"));
}

#[tokio::test]
async fn a_log_keeps_its_newest_1000_lines_and_no_call_takes_over_10_ms() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    q.enqueue(b"x", id("chatty")).await.unwrap();
    log_slow_calls(&server);
    let job = q
        .lease_jobs(1, Duration::from_secs(60))
        .await
        .unwrap()
        .remove(0);
    for i in 0..1200 {
        job.log(format!("line {i}")).await.unwrap();
    }
    let logs = q.job_logs("chatty").await.unwrap();
    assert_eq!(logs.len(), 1000);
    assert_eq!(logs[0].line, "line 200");
    assert_eq!(logs[999].line, "line 1199");
    assert!(logs.iter().all(|l| l.attempt == 1));
    let info = q.get("chatty").await.unwrap().unwrap();
    assert_eq!(info.logs.len(), 1000);
    q.complete(&job).await.unwrap();
    assert_eq!(slow_calls(&server), 0, "a call over 10 ms");
}

#[tokio::test]
async fn a_log_keeps_its_newest_lines_within_64_kib() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    q.enqueue(b"x", id("big")).await.unwrap();
    let job = q
        .lease_jobs(1, Duration::from_secs(60))
        .await
        .unwrap()
        .remove(0);
    for i in 0..40 {
        job.log(format!("{i:02}{}", "x".repeat(4000)))
            .await
            .unwrap();
    }
    let logs = q.job_logs("big").await.unwrap();
    let bytes: usize = logs.iter().map(|l| l.line.len() + 20).sum();
    assert!(bytes <= 64 * 1024, "{bytes}");
    assert_eq!(logs.len(), 16);
    assert!(logs.last().unwrap().line.starts_with("39"));
    let kept: u64 = redis::cmd("HGET")
        .arg(key(&q, "logs"))
        .arg("big")
        .query(&mut server.conn())
        .unwrap();
    assert!(kept <= 64 * 1024);
}

#[tokio::test]
async fn a_log_line_over_4096_bytes_or_for_a_job_gone_or_a_lost_lease_is_refused() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    q.enqueue(b"x", id("a")).await.unwrap();
    let job = q
        .lease_jobs(1, Duration::from_millis(200))
        .await
        .unwrap()
        .remove(0);
    let e = job.log("y".repeat(4097)).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(e.message().contains("4096"), "{e}");
    job.log("y".repeat(4096)).await.unwrap();
    assert_eq!(q.job_logs("a").await.unwrap().len(), 1);
    // The lease expires and another delivery starts: the old holder may not log.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let again = q
        .lease_jobs(1, Duration::from_secs(60))
        .await
        .unwrap()
        .remove(0);
    assert_eq!(again.attempt, 2);
    let e = job.log("late").await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::LeaseLost);
    again.log("second").await.unwrap();
    let logs = q.job_logs("a").await.unwrap();
    assert_eq!(logs.len(), 2);
    assert_eq!((logs[1].attempt, logs[1].line.as_str()), (2, "second"));
    // Gone: cancelled while it runs, then its worker ends it.
    q.cancel("a").await.unwrap();
    q.fail(&again, "stopped").await.unwrap();
    let e = again.log("after").await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::JobNotFound);
    let e = q.job_logs("a").await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::JobNotFound);
    let e = q.job_logs("nobody").await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::JobNotFound);
}

/// A job that failed once and logged, left delayed for its retry.
async fn failed_once_with_a_log(q: &Queue, id_: &str) {
    q.enqueue(
        b"x",
        EnqueueOptions {
            max_attempts: Some(2),
            ..id(id_)
        },
    )
    .await
    .unwrap();
    let job = q
        .lease_jobs(1, Duration::from_secs(60))
        .await
        .unwrap()
        .remove(0);
    job.log("hello").await.unwrap();
    q.fail(&job, "boom").await.unwrap();
}

#[tokio::test]
async fn deleting_cancelling_purging_and_trimming_a_job_remove_its_attempts_and_log() {
    let server = RedisServer::start();
    let q = queue_with(
        &server.url,
        QueueOptions {
            backoff: tideq::Backoff::fixed(60_000),
            keep_completed: 1,
            ..Default::default()
        },
    );
    let gone = |id_: &str| {
        let attempts: bool = redis::cmd("HEXISTS")
            .arg(key(&q, "attempts"))
            .arg(id_)
            .query(&mut server.conn())
            .unwrap();
        let logs: bool = redis::cmd("HEXISTS")
            .arg(key(&q, "logs"))
            .arg(id_)
            .query(&mut server.conn())
            .unwrap();
        !attempts && !logs && !exists(&server, &key(&q, &format!("lg:{id_}")))
    };
    // Cancelled while waiting for its retry.
    failed_once_with_a_log(&q, "c").await;
    assert!(!gone("c"));
    q.cancel("c").await.unwrap();
    assert!(gone("c"), "cancel");
    // Dead, then deleted; dead, then purged.
    for id_ in ["d", "p"] {
        failed_once_with_a_log(&q, id_).await;
        q.promote(id_).await.unwrap();
        let job = q
            .lease_jobs(1, Duration::from_secs(60))
            .await
            .unwrap()
            .remove(0);
        job.log("again").await.unwrap();
        assert!(q.fail(&job, "boom").await.unwrap(), "dead");
    }
    q.delete("d").await.unwrap();
    assert!(gone("d"), "delete");
    assert!(!gone("p"));
    q.purge().await.unwrap();
    assert!(gone("p"), "purge");
    // Completed after a failure, then trimmed by keep_completed (1) as newer jobs complete.
    failed_once_with_a_log(&q, "t").await;
    q.promote("t").await.unwrap();
    let job = q
        .lease_jobs(1, Duration::from_secs(60))
        .await
        .unwrap()
        .remove(0);
    q.complete(&job).await.unwrap();
    assert!(!gone("t"));
    for i in 0..30 {
        q.enqueue(b"x", id(&format!("n{i}"))).await.unwrap();
    }
    let w = q
        .work(drained(), |_job: Job| async { Ok::<(), String>(()) })
        .unwrap();
    w.join().await;
    assert!(q.get("t").await.unwrap().is_none());
    assert!(gone("t"), "retention");
    assert_eq!(hlen(&server, &q, "attempts"), 0);
    assert_eq!(hlen(&server, &q, "logs"), 0);
}

#[tokio::test]
async fn a_long_attempt_is_recorded_as_running_by_its_first_renewal_then_as_completed() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    q.enqueue(b"x", id("long")).await.unwrap();
    let opts = tideq::WorkerOptions {
        // Renewed every 500 ms; long enough that a busy machine does not let it lapse.
        lease: Duration::from_millis(1500),
        ..drained()
    };
    let w = q
        .work(opts, |_job: Job| async move {
            tokio::time::sleep(Duration::from_millis(2500)).await;
            Ok::<(), String>(())
        })
        .unwrap();
    let mut running = None;
    for _ in 0..100 {
        let info = q.get("long").await.unwrap().unwrap();
        if info.attempt_history.iter().any(|a| a.outcome == "running") {
            running = Some(info);
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let info = running.expect("a running record within 2 s");
    assert_eq!(info.state, JobState::Active);
    let a = &info.attempt_history[0];
    assert_eq!((a.attempt, a.ended_at), (1, None));
    assert!(a.started_at.is_some() && a.worker.is_some());
    assert_eq!(info.started_at, a.started_at);
    w.join().await;
    let info = q.get("long").await.unwrap().unwrap();
    let h = &info.attempt_history;
    assert_eq!(h.len(), 1, "{h:?}");
    assert_eq!(h[0].outcome, "completed");
    assert_eq!(h[0].started_at, a.started_at);
    assert!(h[0].duration_ms.unwrap() >= 2400);
}
