//! The command line reads as a person expects: times in the local time zone (`--json` keeps ms),
//! a listing's time column fits its state (when a delayed job is due, when a dead one died), the
//! task name wherever a job is shown, and a notice with exit status 3 for a queue that does not
//! exist rather than a page of zeros.
mod common;

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::Duration;

use chrono::TimeZone;
use common::*;
use tideq::{CappedOptions, CappedQueue, Client, EnqueueOptions};

/// `ms` as the CLI prints it under `TZ=UTC`.
fn utc(ms: u64) -> String {
    chrono::Utc
        .timestamp_millis_opt(ms as i64)
        .unwrap()
        .format("%Y-%m-%d %H:%M:%S")
        .to_string()
}

/// `tideq --url <redis> args...` in the UTC time zone.
fn tideq_utc(redis: &Redis, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_tideq"))
        .arg("--url")
        .arg(&redis.url)
        .args(args)
        .env_remove("TIDEQ_REDIS_URL")
        .env("TZ", "UTC")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn delayed_jobs_list_when_they_are_due_in_local_time_and_json_keeps_ms() {
    let redis = Redis::start();
    let q = redis.queue("later");
    let due = rt().block_on(async {
        let opts = EnqueueOptions {
            id: Some("report".into()),
            delay: Some(Duration::from_secs(3600)),
            ..Default::default()
        };
        q.enqueue_task("build-report", &42, opts).await.unwrap();
        q.get("report")
            .await
            .unwrap()
            .unwrap()
            .state_since_or_until
            .unwrap()
    });
    let table = ok(tideq_utc(&redis, &["jobs", "later", "delayed"]));
    let header = table.lines().next().unwrap();
    assert!(header.contains("TASK") && header.contains("DUE"), "{table}");
    let row = table.lines().nth(1).unwrap();
    assert!(
        row.contains("build-report") && row.contains(&utc(due)),
        "{table}"
    );
    assert!(
        !table.contains(&due.to_string()),
        "no epoch ms in text: {table}"
    );

    let page = ok(tideq_utc(&redis, &["job", "later", "report"]));
    assert!(
        page.contains("task") && page.contains("build-report"),
        "{page}"
    );
    let due_line = page.lines().find(|l| l.starts_with("due_at")).unwrap();
    assert!(
        due_line.contains(&utc(due)) && due_line.contains("(in 59 min)"),
        "{page}"
    );

    let v = json(tideq_utc(&redis, &["jobs", "later", "delayed", "--json"]));
    assert_eq!(v["jobs"][0]["state_since_or_until"], due, "{v}");
    assert_eq!(v["jobs"][0]["task"], "build-report", "{v}");
}

#[test]
fn dead_letters_list_when_each_job_died() {
    let redis = Redis::start();
    let q = redis.queue("graveyard");
    let died = rt().block_on(async {
        dead_job(&q, "gone").await;
        q.get("gone")
            .await
            .unwrap()
            .unwrap()
            .state_since_or_until
            .unwrap()
    });
    let table = ok(tideq_utc(&redis, &["dead", "graveyard", "list"]));
    assert!(table.lines().next().unwrap().contains("DIED"), "{table}");
    assert!(
        table.contains(&utc(died)) && table.contains("boom"),
        "{table}"
    );
    let page = ok(tideq_utc(&redis, &["job", "graveyard", "gone"]));
    assert!(
        page.lines()
            .any(|l| l.starts_with("died_at") && l.contains(&utc(died))),
        "{page}"
    );
}

#[test]
fn a_queue_that_does_not_exist_is_a_notice_and_exit_status_3_not_zeros() {
    let redis = Redis::start();
    for args in [
        &["stats", "nosuchqueue"][..],
        &["stats", "nosuchqueue", "--json"],
        &["jobs", "nosuchqueue", "ready"],
        &["dead", "nosuchqueue", "list"],
    ] {
        let out = redis.tideq(args);
        assert_eq!(
            out.status.code(),
            Some(3),
            "tideq {args:?}: {}",
            stdout(&out)
        );
        assert_eq!(stdout(&out), "", "tideq {args:?}");
        assert!(
            stderr(&out).contains("no job queue \"nosuchqueue\" here"),
            "tideq {args:?}: {}",
            stderr(&out)
        );
    }
    // An existing queue with nothing in the listed state is an empty listing, exit 0.
    rt().block_on(async {
        redis
            .queue("real")
            .enqueue(b"x", with_id("a"))
            .await
            .unwrap();
    });
    assert_eq!(ok(redis.tideq(&["dead", "real", "list"])), "(no jobs)\n");
    // A sharded queue read without --shards, or a capped queue read as a job queue: says which.
    rt().block_on(async {
        let client = Client::open(&redis.url).unwrap();
        let sharded =
            tideq::Queue::sharded(&client, "wide", 4, tideq::QueueOptions::default()).unwrap();
        for i in 0..40 {
            sharded
                .enqueue(b"x", with_id(&format!("w{i}")))
                .await
                .unwrap();
        }
        let capped = CappedQueue::new(&client, "telemetry", CappedOptions::default()).unwrap();
        capped.push("g", b"x").await.unwrap();
    });
    // Its shard count is recorded: read without --shards, it is found.
    assert!(ok(redis.tideq(&["stats", "wide"])).contains("enqueued"));
    // A queue that recorded none (written by a tideq that did not): says which count to add.
    redis_cli(&redis.url, &["DEL", "tideq:{wide}:shards"]);
    let out = redis.tideq(&["stats", "wide"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(stderr(&out).contains("add --shards 4"), "{}", stderr(&out));
    assert!(ok(redis.tideq(&["stats", "wide", "--shards", "4"])).contains("enqueued"));
    let out = redis.tideq(&["stats", "telemetry"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(
        stderr(&out).contains("tideq capped telemetry stats"),
        "{}",
        stderr(&out)
    );
}

/// `tideq --url <redis> args...` with `vars` set (and no colour settings inherited).
fn tideq_with(redis: &Redis, vars: &[(&str, &str)], args: &[&str]) -> String {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tideq"));
    cmd.arg("--url").arg(&redis.url).args(args);
    cmd.env_remove("NO_COLOR").env_remove("CLICOLOR_FORCE");
    for (k, v) in vars {
        cmd.env(k, v);
    }
    ok(cmd.stdin(Stdio::null()).output().unwrap())
}

#[test]
fn states_are_coloured_on_a_terminal_only_and_never_with_no_color() {
    let redis = Redis::start();
    let q = redis.queue("painted");
    rt().block_on(dead_job(&q, "gone"));
    // Into a pipe (as here): plain text, so grep and scripts see no escape codes.
    let piped = tideq_with(&redis, &[], &["dead", "painted", "list"]);
    assert!(!piped.contains('\x1b'), "{piped:?}");
    // As on a terminal (CLICOLOR_FORCE stands in for one): the dead state in red, in the
    // listing and on the job's page; --json stays plain.
    let force = [("CLICOLOR_FORCE", "1")];
    let table = tideq_with(&redis, &force, &["dead", "painted", "list"]);
    assert!(table.contains("\x1b[31mdead\x1b[0m"), "{table:?}");
    let page = tideq_with(&redis, &force, &["job", "painted", "gone"]);
    assert!(page.contains("\x1b[31mdead\x1b[0m"), "{page:?}");
    let json = tideq_with(&redis, &force, &["job", "painted", "gone", "--json"]);
    assert!(!json.contains('\x1b'), "{json:?}");
    // NO_COLOR wins over everything.
    let no = tideq_with(
        &redis,
        &[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")],
        &["dead", "painted", "list"],
    );
    assert!(!no.contains('\x1b'), "{no:?}");
}

#[test]
fn stats_watch_into_a_pipe_writes_no_terminal_escape_codes() {
    let redis = Redis::start();
    rt().block_on(async {
        redis
            .queue("watched")
            .enqueue(b"x", with_id("a"))
            .await
            .unwrap();
    });
    let mut child = Command::new(env!("CARGO_BIN_EXE_tideq"))
        .args(["--url", &redis.url, "stats", "watched", "--watch", "0.05"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // Three refreshes' worth, then stop it.
    let mut out = child.stdout.take().unwrap();
    let mut text = Vec::new();
    let mut buf = [0u8; 4096];
    while text.windows(8).filter(|w| w == b"enqueued").count() < 3 {
        let n = out.read(&mut buf).unwrap();
        assert!(n > 0, "ended early: {}", String::from_utf8_lossy(&text));
        text.extend_from_slice(&buf[..n]);
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(!text.contains(&0x1b), "{}", String::from_utf8_lossy(&text));
}
