//! `tideq events`: the event log printed, a named reader resuming, large results left out, and a
//! queue without an event log refused; against a private `redis-server`.

mod common;

use common::*;
use serde_json::Value;
use tideq::{Client, EnqueueOptions};

#[test]
fn events_prints_the_logged_events_and_a_named_reader_resumes() {
    let redis = Redis::start();
    let q = redis.queue("ev");
    let rt = rt();
    rt.block_on(async {
        q.set_events(Some(1000)).await.unwrap();
        q.enqueue(b"{\"n\":1}", with_id("a")).await.unwrap();
        q.enqueue(b"{\"n\":2}", with_id("b")).await.unwrap();
    });
    let args = [
        "events",
        "ev",
        "--from-start",
        "--name",
        "cli",
        "--idle",
        "0.3",
        "--json",
    ];
    let out = ok(redis.tideq(&args));
    let lines: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert_eq!(
        (lines[0]["kind"].as_str(), lines[0]["job_id"].as_str()),
        (Some("enqueued"), Some("a"))
    );
    assert_eq!(lines[1]["job_id"], "b");
    rt.block_on(q.enqueue(b"3", with_id("c"))).unwrap();
    // The same name again: only what came after.
    let out = ok(redis.tideq(&args));
    assert_eq!(out.lines().count(), 1, "{out}");
    assert!(out.contains("\"c\""), "{out}");
}

#[test]
fn events_says_how_large_a_result_left_out_of_the_log_was() {
    let redis = Redis::start();
    let q = tideq::Queue::new(
        &Client::open(&redis.url).unwrap(),
        "big",
        tideq::QueueOptions {
            keep_completed: 0,
            ..Default::default()
        },
    )
    .unwrap();
    rt().block_on(async {
        q.set_events(Some(100)).await.unwrap();
        q.enqueue(b"x", with_id("a")).await.unwrap();
        let w = q
            .work(
                tideq::WorkerOptions {
                    stop_when_drained: true,
                    ..Default::default()
                },
                |_job: tideq::Job| async move { Ok::<_, String>(vec![b'r'; 2000]) },
            )
            .unwrap();
        w.join().await;
    });
    let out = ok(redis.tideq(&["events", "big", "--from-start", "--idle", "0.3"]));
    let done = out
        .lines()
        .find(|l| l.contains("completed"))
        .unwrap_or_default();
    assert!(
        done.ends_with("a (2000 bytes, not kept in the log)"),
        "{out}"
    );
    let out = ok(redis.tideq(&["events", "big", "--from-start", "--idle", "0.3", "--json"]));
    let done: Value = out
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|v| v["kind"] == "completed")
        .unwrap();
    assert_eq!(
        (done["data"].clone(), done["data_omitted_bytes"].clone()),
        (Value::Null, 2000.into())
    );
}

/// `tideq events QUEUE` on a queue whose events are off printed nothing and waited forever.
#[test]
fn events_of_a_queue_whose_event_log_is_off_exit_2_at_once_saying_so() {
    let redis = Redis::start();
    let q = redis.queue("quiet");
    rt().block_on(q.enqueue(b"x", EnqueueOptions::default()))
        .unwrap();
    let out = redis.tideq(&["events", "quiet"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("event log"), "{}", stderr(&out));
    rt().block_on(q.set_events(Some(100))).unwrap();
    ok(redis.tideq(&["events", "quiet", "--idle", "0.2"]));
}
