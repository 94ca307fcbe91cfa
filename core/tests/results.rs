//! Results, progress and `wait`: what a handler returns and reports is stored with its job, read
//! by `get`, deleted with the job, size-capped; `wait` answers for jobs finished before the call
//! and wakes at once for later ones. One test per promise, against a real redis-server.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::jobs::*;
use common::RedisServer;
use tideq::{
    Backoff, EnqueueOptions, ErrorKind, Job, JobState, Queue, QueueOptions, WorkerOptions,
};
use tokio::sync::Notify;

fn opts(keep_completed: usize) -> QueueOptions {
    QueueOptions {
        backoff: Backoff::fixed(10),
        keep_completed,
        ..Default::default()
    }
}

fn one_attempt(s: &str) -> EnqueueOptions {
    EnqueueOptions {
        max_attempts: Some(1),
        ..id(s)
    }
}

/// Runs every job of `q` with `handler` until the queue is drained.
async fn drain<F, Fut, R>(q: &Queue, handler: F)
where
    F: Fn(Job) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<R, String>> + Send + 'static,
    R: tideq::IntoJobResult + 'static,
{
    let w = q.work(drained(), handler).unwrap();
    tokio::time::timeout(Duration::from_secs(20), w.join())
        .await
        .unwrap();
}

/// Every key of the queue's hash tag, with the field count of the hashes among them.
fn keys_of(server: &RedisServer, q: &Queue) -> Vec<(String, i64)> {
    let mut c = server.conn();
    let mut keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("*{{{}}}*", q.name()))
        .query(&mut c)
        .unwrap();
    keys.sort();
    keys.into_iter()
        .map(|k| {
            let kind: String = redis::cmd("TYPE").arg(&k).query(&mut c).unwrap();
            let n: i64 = match kind.as_str() {
                "hash" => redis::cmd("HLEN").arg(&k).query(&mut c).unwrap(),
                _ => -1,
            };
            (k.rsplit(':').next().unwrap().to_string(), n)
        })
        .collect()
}

/// Waits until `n` waits of this process are registered for job `id` (the `waiters` field:
/// "<hub id>=<waits>", see lib_jobs.lua).
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

fn hlen(server: &RedisServer, q: &Queue, kind: &str) -> i64 {
    keys_of(server, q)
        .into_iter()
        .find(|(k, _)| k == kind)
        .map_or(0, |(_, n)| n)
}

#[tokio::test]
async fn a_handlers_result_is_stored_with_the_job_and_read_by_get() {
    let server = RedisServer::start();
    let q = queue_with(&server.url, opts(100));
    for name in ["bytes", "text", "json", "none"] {
        q.enqueue(name.as_bytes(), id(name)).await.unwrap();
    }
    drain(&q, |job: Job| async move {
        Ok::<_, String>(match job.payload_str().unwrap() {
            "bytes" => Some(vec![0u8, 255, 1]),
            "text" => Some("done".to_string().into_bytes()),
            "json" => Some(serde_json::to_vec(&serde_json::json!({"sent": 3})).unwrap()),
            _ => None,
        })
    })
    .await;
    let get = |id: &'static str| {
        let q = q.clone();
        async move { q.get(id).await.unwrap().unwrap() }
    };
    assert_eq!(get("bytes").await.state, JobState::Completed);
    assert_eq!(get("bytes").await.result, Some(vec![0, 255, 1]));
    assert_eq!(get("text").await.result, Some(b"done".to_vec()));
    assert_eq!(get("json").await.result, Some(br#"{"sent":3}"#.to_vec()));
    assert_eq!(get("none").await.result, None);
    // Only jobs that returned something have a field.
    assert_eq!(hlen(&server, &q, "results"), 3);
}

#[tokio::test]
async fn handlers_returning_unit_text_or_json_keep_compiling_and_store_what_they_return() {
    let server = RedisServer::start();
    let q = queue_with(&server.url, opts(100));
    q.enqueue(b"", id("unit")).await.unwrap();
    drain(&q, |_job: Job| async { Ok::<(), String>(()) }).await;
    q.enqueue(b"", id("string")).await.unwrap();
    drain(&q, |_job: Job| async {
        Ok::<_, String>("text".to_string())
    })
    .await;
    q.enqueue(b"", id("value")).await.unwrap();
    drain(&q, |_job: Job| async {
        Ok::<_, String>(serde_json::json!([1, "two"]))
    })
    .await;
    let result = |id: &'static str| {
        let q = q.clone();
        async move { q.get(id).await.unwrap().unwrap().result }
    };
    assert_eq!(result("unit").await, None);
    assert_eq!(result("string").await, Some(b"text".to_vec()));
    assert_eq!(result("value").await, Some(br#"[1,"two"]"#.to_vec()));
}

#[tokio::test]
async fn progress_is_visible_by_get_while_the_job_runs_and_kept_after() {
    let server = RedisServer::start();
    let q = queue_with(&server.url, opts(100));
    q.enqueue(b"", id("p")).await.unwrap();
    let (reported, finish) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
    let (r, f) = (reported.clone(), finish.clone());
    let w = q
        .work(drained(), move |job: Job| {
            let (r, f) = (r.clone(), f.clone());
            async move {
                job.progress(b"{\"pct\":50}")
                    .await
                    .map_err(|e| e.to_string())?;
                r.notify_one();
                f.notified().await;
                Ok::<(), String>(())
            }
        })
        .unwrap();
    tokio::time::timeout(Duration::from_secs(10), reported.notified())
        .await
        .unwrap();
    let info = q.get("p").await.unwrap().unwrap();
    assert_eq!(info.state, JobState::Active);
    assert_eq!(info.progress, Some(br#"{"pct":50}"#.to_vec()));
    finish.notify_one();
    tokio::time::timeout(Duration::from_secs(10), w.join())
        .await
        .unwrap();
    let info = q.get("p").await.unwrap().unwrap();
    assert_eq!(info.state, JobState::Completed);
    assert_eq!(info.progress, Some(br#"{"pct":50}"#.to_vec()));
}

#[tokio::test]
async fn results_and_progress_go_when_retention_trims_their_jobs_leaving_no_stale_keys() {
    let server = RedisServer::start();
    // Retained: the newest 2 of 6.
    let q = queue_with(&server.url, opts(2));
    for i in 0..6 {
        q.enqueue(b"", id(&format!("j{i}"))).await.unwrap();
    }
    drain(&q, |job: Job| async move {
        job.progress(b"half").await.map_err(|e| e.to_string())?;
        Ok::<_, String>(job.id.clone().into_bytes())
    })
    .await;
    assert_eq!(hlen(&server, &q, "results"), 2);
    assert_eq!(hlen(&server, &q, "progress"), 2);
    assert_eq!(hlen(&server, &q, "jobs"), 2);
    // Deleted at once on completion: nothing at all stays.
    let q0 = queue_with(&server.url, opts(0));
    for i in 0..3 {
        q0.enqueue(b"", id(&format!("k{i}"))).await.unwrap();
    }
    drain(&q0, |job: Job| async move {
        job.progress(b"half").await.map_err(|e| e.to_string())?;
        Ok::<_, String>(b"r".to_vec())
    })
    .await;
    let kinds: Vec<String> = keys_of(&server, &q0).into_iter().map(|(k, _)| k).collect();
    for gone in ["results", "progress", "jobs", "meta", "waiters"] {
        assert!(!kinds.contains(&gone.to_string()), "{gone} left: {kinds:?}");
    }
    assert!(!kinds.iter().any(|k| k.starts_with("fin")), "{kinds:?}");
}

#[tokio::test]
async fn purge_deletes_a_dead_jobs_progress_and_cancel_a_ready_ones() {
    let server = RedisServer::start();
    let q = queue_with(&server.url, opts(100));
    q.enqueue(b"", one_attempt("dies")).await.unwrap();
    drain(&q, |job: Job| async move {
        job.progress(b"almost").await.map_err(|e| e.to_string())?;
        Err::<(), String>("boom".into())
    })
    .await;
    let dead = q.get("dies").await.unwrap().unwrap();
    assert_eq!(dead.state, JobState::Dead);
    assert_eq!(dead.progress, Some(b"almost".to_vec()));
    assert_eq!(q.purge().await.unwrap(), 1);
    assert_eq!(hlen(&server, &q, "progress"), 0);
    // A retried job's progress from its earlier attempt goes when it is cancelled.
    q.enqueue(
        b"",
        EnqueueOptions {
            max_attempts: Some(2),
            ..id("retried")
        },
    )
    .await
    .unwrap();
    let jobs = q.lease_jobs(1, Duration::from_secs(30)).await.unwrap();
    jobs[0].progress(b"one").await.unwrap();
    q.fail(&jobs[0], "again").await.unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(hlen(&server, &q, "progress"), 1);
    q.cancel("retried").await.unwrap();
    assert_eq!(hlen(&server, &q, "progress"), 0);
}

#[tokio::test]
async fn a_result_over_max_result_len_fails_the_attempt_and_progress_over_it_is_refused() {
    let server = RedisServer::start();
    let q = queue_with(
        &server.url,
        QueueOptions {
            max_result_len: 16,
            ..opts(100)
        },
    );
    q.enqueue(b"", one_attempt("big")).await.unwrap();
    let refused = Arc::new(std::sync::Mutex::new(None));
    let r = refused.clone();
    drain(&q, move |job: Job| {
        let r = r.clone();
        async move {
            *r.lock().unwrap() = Some(job.progress(vec![b'p'; 17]).await.unwrap_err().kind());
            job.progress(vec![b'p'; 16])
                .await
                .map_err(|e| e.to_string())?;
            Ok::<_, String>(vec![b'r'; 17])
        }
    })
    .await;
    assert_eq!(*refused.lock().unwrap(), Some(ErrorKind::PayloadTooLarge));
    let info = q.get("big").await.unwrap().unwrap();
    assert_eq!(info.state, JobState::Dead);
    assert_eq!(info.result, None);
    let error = info.last_error.unwrap();
    assert!(
        error.contains("17 bytes") && error.contains("max_result_len is 16"),
        "{error}"
    );
    // At the cap exactly: stored.
    q.enqueue(b"", id("fits")).await.unwrap();
    drain(&q, |_job: Job| async { Ok::<_, String>(vec![b'r'; 16]) }).await;
    assert_eq!(
        q.get("fits").await.unwrap().unwrap().result,
        Some(vec![b'r'; 16])
    );
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
async fn progress_after_the_lease_was_lost_is_lease_lost() {
    let server = RedisServer::start();
    let q = queue_with(&server.url, opts(100));
    q.enqueue(b"", id("stale")).await.unwrap();
    let first = q.lease_jobs(1, Duration::from_millis(50)).await.unwrap();
    first[0].progress(b"mine").await.unwrap();
    tokio::time::sleep(Duration::from_millis(120)).await;
    // Recovered and leased again: the first holder's token is stale.
    let second = q.lease_jobs(1, Duration::from_secs(30)).await.unwrap();
    assert_eq!(second[0].id, "stale");
    let e = first[0].progress(b"late").await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::LeaseLost);
    second[0].progress(b"current").await.unwrap();
    q.complete_with_result(&second[0], b"ok").await.unwrap();
    let info = q.get("stale").await.unwrap().unwrap();
    assert_eq!(info.progress, Some(b"current".to_vec()));
    assert_eq!(info.result, Some(b"ok".to_vec()));
    assert_eq!(
        q.wait("stale", None).await.unwrap().result,
        Some(b"ok".to_vec())
    );
}

#[tokio::test]
async fn task_handlers_results_are_stored_too() {
    let server = RedisServer::start();
    let q = queue_with(&server.url, opts(100));
    q.enqueue_task("add", &(2, 3), id("sum")).await.unwrap();
    let tasks = tideq::Tasks::new().task("add", |(a, b): (i64, i64), _job: Job| async move {
        Ok::<_, String>(serde_json::json!(a + b))
    });
    let w = q
        .work_tasks(
            WorkerOptions {
                stop_when_drained: true,
                ..drained()
            },
            tasks,
        )
        .unwrap();
    tokio::time::timeout(Duration::from_secs(20), w.join())
        .await
        .unwrap();
    assert_eq!(
        q.wait("sum", None).await.unwrap().result,
        Some(b"5".to_vec())
    );
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
