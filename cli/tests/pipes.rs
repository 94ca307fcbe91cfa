//! The command line in a shell pipeline: a reader that stops early (`tideq jobs Q ready | head
//! -1`) ends the command at once, with status 0 and nothing on stderr, as `cat` or `grep` do;
//! never a panic ("failed printing to stdout: Broken pipe") and never a loop writing nowhere.
mod common;

use std::process::{Command, Stdio};

use common::*;

/// Runs `tideq --url <redis> args...` with its stdout's reader gone before anything is written;
/// returns the exit code and stderr.
fn with_reader_gone(redis: &Redis, args: &[&str]) -> (Option<i32>, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tideq"))
        .arg("--url")
        .arg(&redis.url)
        .args(args)
        .env_remove("TIDEQ_REDIS_URL")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_closed_pipe_ends_the_command_with_status_0_and_no_message() {
    let redis = Redis::start();
    let q = redis.queue("piped");
    rt().block_on(async {
        for i in 0..200 {
            q.enqueue(b"x", with_id(&format!("job-{i}"))).await.unwrap();
        }
    });
    for args in [
        &["jobs", "piped", "ready"][..],
        &["jobs", "piped", "ready", "--json"],
        &["job", "piped", "job-1"],
        &["stats", "piped"],
        &["queues"],
    ] {
        let (code, stderr) = with_reader_gone(&redis, args);
        assert_eq!(code, Some(0), "tideq {args:?}: {stderr}");
        assert_eq!(stderr, "", "tideq {args:?}");
    }
}

#[test]
fn a_closed_pipe_stops_the_commands_that_loop() {
    let redis = Redis::start();
    let q = redis.queue("looping");
    rt().block_on(async {
        q.set_events(Some(1000)).await.unwrap();
        q.enqueue(b"x", with_id("one")).await.unwrap();
    });
    // Without a reader these would run until Ctrl-C: --watch every second, events until 60 s idle.
    for args in [
        &["stats", "looping", "--watch", "1"][..],
        &["events", "looping", "--from-start", "--idle", "60"],
    ] {
        let (code, stderr) = with_reader_gone(&redis, args);
        assert_eq!(code, Some(0), "tideq {args:?}: {stderr}");
        assert_eq!(stderr, "", "tideq {args:?}");
    }
}
