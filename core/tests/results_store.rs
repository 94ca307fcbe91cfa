//! Results and progress: what a handler returns and reports is stored with its job, read by
//! `get`, deleted with the job, size-capped, refused once the lease is lost. One test per promise,
//! against a real redis-server.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::jobs::*;
use common::results::*;
use common::RedisServer;
use tideq::{EnqueueOptions, ErrorKind, Job, JobState, QueueOptions, WorkerOptions};
use tokio::sync::Notify;

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
