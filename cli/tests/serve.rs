//! The `tideq` binary's long-running commands against a private `redis-server`: `tideq bench`
//! and `tideq exporter` (its scrape checked through the core crate), and their usage errors.

mod common;

use std::net::TcpListener;
use std::time::Duration;

use common::*;
use tideq::{Client, EnqueueOptions};

#[test]
fn bench_reports_positive_rates_and_drains_its_queue() {
    let redis = Redis::start();
    let v = json(redis.tideq(&["bench", "--jobs", "1500", "--concurrency", "20", "--json"]));
    for field in [
        "redis_commands_per_sec",
        "enqueue_jobs_per_sec",
        "process_jobs_per_sec",
        "enqueue_ratio",
        "process_ratio",
    ] {
        let n = v[field].as_f64().unwrap_or(0.0);
        assert!(n > 0.0 && n.is_finite(), "{field}: {v}");
    }
    assert_eq!(
        (v["jobs"].as_u64(), v["concurrency"].as_u64()),
        (Some(1500), Some(20))
    );
    assert_eq!(
        (v["completed"].as_u64(), v["remaining"].as_u64()),
        (Some(1500), Some(0)),
        "{v}"
    );
    let name = v["queue"].as_str().unwrap();
    assert!(name.starts_with("tideq-bench-"), "{name}");
    assert_eq!(
        v["keys_left"],
        serde_json::json!([format!("tideq:{{{name}}}:*")])
    );
    // Drained, as the core sees it.
    let stats = rt().block_on(redis.queue(name).stats()).unwrap();
    assert_eq!(
        (stats.ready, stats.delayed, stats.active, stats.dead),
        (0, 0, 0, 0),
        "{stats:?}"
    );
    assert_eq!(stats.completed, 1500);
    // No progress bar when stderr is not a terminal.
    let out = redis.tideq(&["bench", "--jobs", "10"]);
    let text = ok(out.clone());
    assert!(stderr(&out).is_empty(), "{}", stderr(&out));
    assert!(
        text.contains("jobs/s") && text.contains("commands/s"),
        "{text}"
    );
    let bad = redis.tideq(&["bench", "--jobs", "0"]);
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn the_exporter_serves_each_queues_counts_equal_to_its_stats() {
    let redis = Redis::start();
    let q = redis.queue("exported");
    let rt = rt();
    rt.block_on(async {
        for i in 0..5 {
            q.enqueue(format!("{i}"), Default::default()).await.unwrap();
        }
        let opts = tideq::WorkerOptions {
            stop_when_drained: true,
            ..Default::default()
        };
        q.work(opts, |_job: tideq::Job| async { Ok::<(), String>(()) })
            .unwrap()
            .join()
            .await;
        q.enqueue(b"waiting", Default::default()).await.unwrap();
        let later = EnqueueOptions {
            delay: Some(Duration::from_secs(60)),
            ..Default::default()
        };
        q.enqueue(b"later", later).await.unwrap();
        // Two flow parents wait for their children (no worker runs them).
        for _ in 0..2 {
            let flow = tideq::FlowJob::new(b"parent").child(tideq::FlowJob::new(b"kid"));
            q.enqueue_flow(flow).await.unwrap();
        }
        let capped = tideq::CappedQueue::new(
            &Client::open(&redis.url).unwrap(),
            "ticks",
            tideq::CappedOptions::default(),
        )
        .unwrap();
        capped.push("g", b"1").await.unwrap();
    });
    let text = Exporter::start(&["--url", &redis.url], &[]).scrape_when(|_| true);
    let stats = rt.block_on(q.stats()).unwrap();
    let q_state = |s: &str| {
        series(
            &text,
            &format!("tideq_jobs{{queue=\"exported\",state=\"{s}\"}}"),
        )
    };
    assert_eq!(q_state("ready"), Some(stats.ready as f64), "{text}");
    assert_eq!(q_state("delayed"), Some(stats.delayed as f64), "{text}");
    assert_eq!(q_state("waiting"), Some(2.0), "{text}");
    assert_eq!(
        series(&text, "tideq_jobs_completed_total{queue=\"exported\"}"),
        Some(stats.completed as f64)
    );
    assert_eq!(
        series(&text, "tideq_jobs_enqueued_total{queue=\"exported\"}"),
        Some(stats.enqueued as f64)
    );
    // Every lifetime counter `stats` has, `lost` included (it was missing).
    assert_eq!(
        series(&text, "tideq_jobs_lost_total{queue=\"exported\"}"),
        Some(stats.lost as f64),
        "{text}"
    );
    // Run times get buckets up to an hour (they stopped at 10 s).
    assert!(
        text.contains("tideq_job_run_seconds_bucket{le=\"3600.0\",queue=\"exported\"}")
            || text.contains("tideq_job_run_seconds_bucket{queue=\"exported\",le=\"3600.0\"}"),
        "{text}"
    );
    // The worker reported its run times when it stopped.
    assert_eq!(
        series(&text, "tideq_job_run_seconds_count{queue=\"exported\"}"),
        Some(5.0),
        "{text}"
    );
    assert_eq!(
        series(&text, "tideq_capped_pushed_total{queue=\"ticks\"}"),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        series(&text, "tideq_exporter_refresh_ok"),
        Some(1.0),
        "{text}"
    );
    // The queue's latency, in seconds: the one ready job has waited since its enqueue, so the
    // gauge is above 0 and at most what stats tells after the scrape.
    let latency = series(&text, "tideq_queue_latency_seconds{queue=\"exported\"}")
        .unwrap_or_else(|| panic!("no latency gauge: {text}"));
    assert!(latency > 0.0, "{text}");
    assert!(
        latency <= stats.latency.as_secs_f64(),
        "{latency} > {stats:?}"
    );
    assert!(
        text.contains("# TYPE tideq_queue_latency_seconds gauge\n"),
        "{text}"
    );
}

#[test]
fn bad_exporter_and_events_arguments_are_usage_errors() {
    let redis = Redis::start();
    let out = redis.tideq(&["exporter", "--refresh", "0"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--refresh"), "{}", stderr(&out));
    let out = redis.tideq(&["events", "q", "--idle", "-1"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    // A port already taken: the exporter says so and exits.
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let out = redis.tideq(&["exporter", "--listen", &addr]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("cannot listen"), "{}", stderr(&out));
}

/// `exporter --queue emials` and `dashboard --queue emials` served zeros (with
/// `tideq_exporter_refresh_ok 1`): a typo'd queue now exits 3 before anything is served.
#[test]
fn an_exporter_or_dashboard_of_a_typoed_queue_exits_3_before_serving() {
    let redis = Redis::start();
    rt().block_on(
        redis
            .queue("emails")
            .enqueue(b"x", tideq::EnqueueOptions::default()),
    )
    .unwrap();
    for cmd in ["exporter", "dashboard"] {
        let out = redis.tideq(&[cmd, "--listen", "127.0.0.1:0", "--queue", "emials"]);
        assert_eq!(out.status.code(), Some(3), "{cmd}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("did you mean \"emails\"?"),
            "{cmd}: {}",
            stderr(&out)
        );
    }
}
