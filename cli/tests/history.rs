//! `tideq history`: the queue's history kept in Redis, after a worker ran jobs, as a table and
//! as JSON; a bad window or step is a usage error (exit 2). Against a private `redis-server`.

mod common;

use common::*;
use tideq::{EnqueueOptions, Job, WorkerOptions};

fn drained() -> WorkerOptions {
    WorkerOptions {
        stop_when_drained: true,
        poll_interval: std::time::Duration::from_millis(50),
        ..Default::default()
    }
}

#[test]
fn history_shows_what_a_worker_ran() {
    let redis = Redis::start();
    let q = redis.queue("hist");
    rt().block_on(async {
        // A worker's first report leaves the baseline snapshot; then jobs, one of them dead.
        let run = || async {
            q.work(drained(), |job: Job| async move {
                match job.payload.as_slice() {
                    b"bad" => Err("bad job".to_string()),
                    _ => Ok(()),
                }
            })
            .unwrap()
            .join()
            .await
        };
        run().await;
        for _ in 0..4 {
            q.enqueue(b"ok", EnqueueOptions::default()).await.unwrap();
        }
        let once = EnqueueOptions {
            max_attempts: Some(1),
            ..Default::default()
        };
        q.enqueue(b"bad", once).await.unwrap();
        run().await;
    });
    let v = json(redis.tideq(&["history", "hist", "--json"]));
    let points = v.as_array().expect("an array of points");
    assert_eq!(points.len(), 60);
    let sum = |f: &str| points.iter().map(|p| p[f].as_u64().unwrap()).sum::<u64>();
    assert_eq!(
        (
            sum("enqueued"),
            sum("completed"),
            sum("dead_lettered"),
            sum("failed")
        ),
        (5, 4, 1, 1)
    );
    assert!(points
        .iter()
        .all(|p| p["at_ms"].as_u64().unwrap() % 60_000 == 0));

    let v = json(redis.tideq(&[
        "history", "hist", "--window", "2h", "--step", "30m", "--json",
    ]));
    assert_eq!(v.as_array().unwrap().len(), 4);

    // The table: a header and one row per step. Two hours by the hour: the jobs are in one of the
    // two rows (the second, unless an hour began between the run and the command).
    let text = ok(redis.tideq(&["history", "hist", "--window", "2h", "--step", "1h"]));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    let header: Vec<&str> = lines[0].split_whitespace().collect();
    assert_eq!(
        header,
        [
            "TIME",
            "ENQUEUED",
            "COMPLETED",
            "RETRIED",
            "DEAD",
            "FAILED",
            "CANCELLED",
            "LATENESS"
        ]
    );
    // Date and time (local, to the minute), then the counts, added up over the two rows.
    let mut totals = [0u64; 6];
    for line in &lines[1..] {
        let row: Vec<&str> = line.split_whitespace().collect();
        for (t, cell) in totals.iter_mut().zip(&row[2..8]) {
            *t += cell
                .parse::<u64>()
                .unwrap_or_else(|_| panic!("{cell:?} in {text}"));
        }
    }
    assert_eq!(totals, [5, 4, 0, 1, 1, 0], "{text}");
}

#[test]
fn a_bad_window_or_step_is_a_usage_error() {
    let redis = Redis::start();
    for args in [
        ["--window", "1h", "--step", "30s"],
        ["--window", "1m", "--step", "1h"],
        ["--window", "15d", "--step", "1m"],
        ["--window", "1w", "--step", "1m"],
    ] {
        let out = redis.tideq(&[&["history", "q"][..], &args[..]].concat());
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
    }
}
