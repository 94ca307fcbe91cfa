//! Per-task metrics (issue 43: per-task counts and run times, the exporter's missing `task`
//! label): `tideq tasks` as a table and as JSON, an unknown queue (exit 3, nothing written), a bad
//! window (exit 2), the exporter's `task` series and the dashboard's route. Against a private
//! `redis-server`; a worker's last report goes out when it stops (drained), so nothing waits for a
//! periodic one.

mod common;

use common::dashboard::*;
use common::*;
use tideq::{EnqueueOptions, Job, Queue, WorkerOptions};

fn drained() -> WorkerOptions {
    WorkerOptions {
        stop_when_drained: true,
        poll_interval: std::time::Duration::from_millis(50),
        ..Default::default()
    }
}

fn task(name: &str) -> EnqueueOptions {
    EnqueueOptions {
        task: Some(name.to_string()),
        ..Default::default()
    }
}

/// "mail" completes 3 jobs, "bill \"quoted\"" dead-letters 1 (one attempt), a raw payload
/// completes 1; then the worker stops (its last report carries the counts).
fn ran(q: &Queue) {
    rt().block_on(async {
        for _ in 0..3 {
            q.enqueue(b"ok", task("mail")).await.unwrap();
        }
        let once = EnqueueOptions {
            max_attempts: Some(1),
            ..task("bill \"quoted\"")
        };
        q.enqueue(b"bad", once).await.unwrap();
        q.enqueue(b"ok", EnqueueOptions::default()).await.unwrap();
        q.work(drained(), |job: Job| async move {
            match job.payload.as_slice() {
                b"bad" => Err("bad job".to_string()),
                _ => Ok(()),
            }
        })
        .unwrap()
        .join()
        .await;
    });
}

fn dump(url: &str) -> String {
    let keys = redis_cli(url, &["--scan"]);
    let mut keys: Vec<&str> = keys.lines().collect();
    keys.sort();
    keys.iter()
        .map(|k| format!("{k}={}", redis_cli(url, &["DEBUG", "DIGEST-VALUE", k])))
        .collect()
}

#[test]
fn tasks_shows_each_tasks_counts_as_a_table_and_as_json() {
    let redis = Redis::start();
    let q = redis.queue("tq");
    ran(&q);
    let v = json(redis.tideq(&["tasks", "tq", "--json"]));
    let rows = v.as_array().expect("an array of tasks");
    let row = |t: &str| {
        rows.iter()
            .find(|r| r["task"] == t)
            .unwrap_or_else(|| panic!("no {t:?} in {v}"))
    };
    assert_eq!(rows.len(), 3, "{v}");
    assert_eq!(row("mail")["completed"], 3);
    assert_eq!(row("mail")["runs"], 3);
    assert!(row("mail")["run_ms_avg"].is_number());
    assert_eq!(row("bill \"quoted\"")["failed"], 1);
    assert_eq!(row("bill \"quoted\"")["dead_lettered"], 1);
    assert_eq!(row("")["completed"], 1);

    for window in ["1d", "14d"] {
        let v = json(redis.tideq(&["tasks", "tq", "--window", window, "--json"]));
        assert_eq!(v.as_array().unwrap().len(), 3, "{window}: {v}");
    }

    let text = ok(redis.tideq(&["tasks", "tq"]));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text}");
    assert!(lines[0].starts_with("TASK"), "{text}");
    assert!(text.contains("(none)"), "a job without a task: {text}");
    let mail: Vec<&str> = lines
        .iter()
        .find(|l| l.starts_with("mail"))
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!(&mail[1..5], ["3", "0", "0", "3"], "{text}");
}

#[test]
fn tasks_on_an_unknown_queue_exits_3_and_writes_nothing() {
    let redis = Redis::start();
    let q = redis.queue("known");
    ran(&q);
    let before = dump(&redis.url);
    for args in [vec!["tasks", "knwn"], vec!["tasks", "knwn", "--json"]] {
        let out = redis.tideq(&args);
        assert_eq!(out.status.code(), Some(3), "{args:?}: {}", stderr(&out));
        assert!(stdout(&out).is_empty(), "{args:?}");
    }
    assert_eq!(dump(&redis.url), before);
}

#[test]
fn a_bad_window_is_a_usage_error() {
    let redis = Redis::start();
    let q = redis.queue("w");
    ran(&q);
    for w in ["30s", "15d", "1w"] {
        let out = redis.tideq(&["tasks", "w", "--window", w]);
        assert_eq!(out.status.code(), Some(2), "{w}: {}", stderr(&out));
    }
}

#[test]
fn the_exporter_labels_per_task_series_with_the_task() {
    let redis = Redis::start();
    let q = redis.queue("ex");
    ran(&q);
    let e = Exporter::start(&["--url", &redis.url], &[]);
    let text = e.scrape_when(|t| t.contains("tideq_task_jobs_total"));
    let l = |task: &str, outcome: &str| {
        format!("tideq_task_jobs_total{{queue=\"ex\",task=\"{task}\",outcome=\"{outcome}\"}}")
    };
    assert_eq!(series(&text, &l("mail", "completed")), Some(3.0), "{text}");
    assert_eq!(
        series(&text, &l("(none)", "completed")),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        series(&text, &l("bill \\\"quoted\\\"", "dead_lettered")),
        Some(1.0),
        "a quote in a name is escaped: {text}"
    );
    assert_eq!(
        series(
            &text,
            "tideq_task_run_seconds_count{queue=\"ex\",task=\"mail\"}"
        ),
        Some(3.0),
        "{text}"
    );
    assert!(
        series(
            &text,
            "tideq_task_run_seconds_sum{queue=\"ex\",task=\"mail\"}"
        )
        .is_some(),
        "{text}"
    );
    // The text format 0.0.4 (this scrape asks for no other) names the counter by its samples.
    assert!(
        text.contains("# TYPE tideq_task_jobs_total counter"),
        "{text}"
    );
    assert!(
        text.contains("# TYPE tideq_task_run_seconds summary"),
        "{text}"
    );
    assert!(text.contains("tideq_exporter_refresh_ok 1"), "{text}");
}

#[test]
fn the_dashboard_serves_a_queues_tasks() {
    let redis = Redis::start();
    let q = redis.queue("dq");
    ran(&q);
    let d = Dashboard::start(&["--url", &redis.url], &[], &[]);
    let v = d.get("/api/queues/dq/tasks?window=86400").json();
    assert_eq!(v["window_secs"], 86400);
    let rows = v["tasks"].as_array().unwrap();
    assert_eq!(rows.len(), 3, "{v}");
    assert!(rows
        .iter()
        .any(|r| r["task"] == "mail" && r["completed"] == 3));
    assert_eq!(d.get("/api/queues/dq/tasks").json()["window_secs"], 3600);
    let why = d.get("/api/queues/dq/tasks?window=60").refused(400);
    assert!(why.contains("window"), "{why}");
    d.get("/api/queues/nosuch/tasks").refused(404);
    // The page's script has the table.
    let js = d.get("/app.js").body;
    assert!(
        js.contains("function renderTasks("),
        "tasks.js is in the page's script"
    );
}
