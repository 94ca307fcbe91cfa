//! A job's attempts and logs in `tideq job` and the dashboard's job API (issue 43, "Attempts and
//! logs per job"), against a private `redis-server`.

mod common;

use std::time::Duration;

use common::dashboard::Dashboard;
use common::*;
use tideq::{
    Backoff, Client, EnqueueOptions, Job, Queue, QueueOptions, TracedError, WorkerOptions,
};

const TRACE: &str = "Traceback (most recent call last):\n  File \"app.py\", line 3, in send\n    raise ValueError(\"smtp down\")\nValueError: smtp down";

/// Job `id`: failed twice (with a traceback), then completed; each attempt logged a line.
async fn failed_twice_then_done(q: &Queue, id: &str) {
    let opts = EnqueueOptions {
        max_attempts: Some(5),
        ..with_id(id)
    };
    q.enqueue(b"x", opts).await.unwrap();
    let w = q
        .work(
            WorkerOptions {
                stop_when_drained: true,
                poll_interval: Duration::from_millis(50),
                ..Default::default()
            },
            |job: Job| async move {
                job.log(format!("sending, try {}", job.attempt))
                    .await
                    .map_err(|e| e.to_string())?;
                if job.attempt < 3 {
                    return Err(Box::new(TracedError {
                        message: "ValueError: smtp down".into(),
                        trace: TRACE.into(),
                    })
                    .into());
                }
                Ok::<(), tideq::HandlerError>(())
            },
        )
        .unwrap();
    let stats = w.join().await;
    assert_eq!((stats.completed, stats.failed), (1, 2));
}

/// Queue `name`, retrying at once.
fn fast_backoff(redis: &Redis, name: &str) -> Queue {
    let opts = QueueOptions {
        backoff: Backoff::fixed(10),
        ..Default::default()
    };
    Queue::new(&Client::open(&redis.url).unwrap(), name, opts).unwrap()
}

#[test]
fn tideq_job_shows_started_at_run_time_the_attempts_table_and_the_logs() {
    let redis = Redis::start();
    let q = fast_backoff(&redis, "mail");
    rt().block_on(failed_twice_then_done(&q, "j1"));
    let text = ok(redis.tideq(&["job", "mail", "j1"]));
    for want in [
        "started_at",
        "run_time",
        "attempts: 3",
        "OUTCOME",
        "ValueError: smtp down",
        "logs: 3",
        "#1  sending, try 1",
        "#3  sending, try 3",
    ] {
        assert!(text.contains(want), "{want:?} not in:\n{text}");
    }
    let rows: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("failed") || l.contains("completed"))
        .collect();
    assert!(rows.len() >= 3, "{text}");
    // The table shows the error's first line, not the traceback.
    assert!(!text.contains("File \"app.py\""), "{text}");
}

#[test]
fn tideq_job_json_holds_every_attempt_with_its_traceback_whole_and_the_logs() {
    let redis = Redis::start();
    let q = fast_backoff(&redis, "mail");
    rt().block_on(failed_twice_then_done(&q, "j1"));
    let v = json(redis.tideq(&["job", "mail", "j1", "--json"]));
    let h = v["attempt_history"].as_array().unwrap();
    assert_eq!(h.len(), 3);
    assert_eq!(h[0]["outcome"], "failed");
    assert_eq!(h[0]["trace"], TRACE);
    assert_eq!(h[2]["outcome"], "completed");
    assert!(h[2]["duration_ms"].is_u64() && h[2]["worker"].is_string());
    assert_eq!(v["started_at"], h[2]["started_at"]);
    assert!(v["run_ms"].is_u64());
    let logs = v["logs"].as_array().unwrap();
    assert_eq!(logs.len(), 3);
    assert_eq!(logs[1]["attempt"], 2);
    assert_eq!(logs[1]["line"], "sending, try 2");
}

#[test]
fn the_dashboards_job_api_gives_the_attempts_and_the_logs() {
    let redis = Redis::start();
    let q = fast_backoff(&redis, "mail");
    rt().block_on(failed_twice_then_done(&q, "j1"));
    let d = Dashboard::start(&["--url", &redis.url], &[], &[]);
    let v = d.get("/api/queues/mail/jobs/j1").json();
    assert_eq!(v["attempt_history"].as_array().unwrap().len(), 3, "{v}");
    assert_eq!(v["attempt_history"][1]["trace"], TRACE);
    assert_eq!(v["logs"][2]["line"], "sending, try 3");
    assert!(v["started_at"].is_u64());
}

#[test]
fn a_job_without_attempts_or_logs_shows_neither_section() {
    let redis = Redis::start();
    let q = redis.queue("mail");
    rt().block_on(q.enqueue(b"x", with_id("fresh"))).unwrap();
    let text = ok(redis.tideq(&["job", "mail", "fresh"]));
    assert!(
        !text.contains("attempts:") && !text.contains("logs:"),
        "{text}"
    );
    let v = json(redis.tideq(&["job", "mail", "fresh", "--json"]));
    assert_eq!(v["attempt_history"], serde_json::json!([]));
    assert_eq!(v["logs"], serde_json::json!([]));
    assert!(v["started_at"].is_null());
}
