//! One job's actions (`tideq cancel`, `run-now`, `retry`, `delete`) and `tideq search` against a
//! private `redis-server`: one test per promise of the command line, each checked through the
//! core crate.

mod common;

use std::collections::HashSet;
use std::time::Duration;

use common::*;
use serde_json::Value;
use tideq::{EnqueueOptions, JobState};

fn delayed(id: &str) -> EnqueueOptions {
    EnqueueOptions {
        delay: Some(Duration::from_secs(3600)),
        ..with_id(id)
    }
}

/// Exit code `code`, and stderr.
fn fails(out: std::process::Output, code: i32) -> String {
    assert_eq!(
        out.status.code(),
        Some(code),
        "stdout: {}\nstderr: {}",
        stdout(&out),
        stderr(&out)
    );
    stderr(&out)
}

#[test]
fn cancel_removes_a_pending_job_and_a_finished_one_exits_2() {
    let redis = Redis::start();
    let q = redis.queue("cq");
    let rt = rt();
    rt.block_on(async {
        q.enqueue(b"x", with_id("later")).await.unwrap();
        dead_job(&q, "dead").await;
    });
    assert!(ok(redis.tideq(&["cancel", "cq", "later"])).contains("cancelled later"));
    assert_eq!(rt.block_on(q.get("later")).unwrap(), None);
    let err = fails(redis.tideq(&["cancel", "cq", "dead"]), 2);
    assert!(
        err.contains("JOB_NOT_CANCELLABLE") && err.contains("dead"),
        "{err}"
    );
}

#[test]
fn run_now_makes_a_delayed_job_ready_and_a_ready_one_exits_2() {
    let redis = Redis::start();
    let q = redis.queue("rq");
    let rt = rt();
    rt.block_on(async {
        q.enqueue(b"x", delayed("later")).await.unwrap();
        q.enqueue(b"x", with_id("now")).await.unwrap();
    });
    ok(redis.tideq(&["run-now", "rq", "later"]));
    let info = rt.block_on(q.get("later")).unwrap().unwrap();
    assert_eq!(info.state, JobState::Ready);
    let err = fails(redis.tideq(&["run-now", "rq", "now"]), 2);
    assert!(
        err.contains("JOB_WRONG_STATE") && err.contains("is ready; only a delayed job"),
        "{err}"
    );
}

#[test]
fn retry_requeues_a_dead_job_and_a_job_not_dead_exits_2() {
    let redis = Redis::start();
    let q = redis.queue("tq");
    let rt = rt();
    rt.block_on(async {
        dead_job(&q, "dead").await;
        q.enqueue(b"x", with_id("ready")).await.unwrap();
    });
    assert!(ok(redis.tideq(&["retry", "tq", "dead"])).contains("requeued dead"));
    let info = rt.block_on(q.get("dead")).unwrap().unwrap();
    assert_eq!((info.state, info.attempts), (JobState::Ready, 0));
    let err = fails(redis.tideq(&["retry", "tq", "ready"]), 2);
    assert!(
        err.contains("is ready; only a dead job can be retried"),
        "{err}"
    );
}

#[test]
fn delete_refuses_without_yes_when_not_a_tty_and_deletes_a_finished_job_with_it() {
    let redis = Redis::start();
    let q = redis.queue("xq");
    let rt = rt();
    rt.block_on(async {
        dead_job(&q, "dead").await;
        q.enqueue(b"x", with_id("ready")).await.unwrap();
    });
    let err = fails(redis.tideq(&["delete", "xq", "dead"]), 2);
    assert!(err.contains("--yes"), "{err}");
    assert!(
        rt.block_on(q.get("dead")).unwrap().is_some(),
        "nothing deleted"
    );
    assert!(ok(redis.tideq(&["delete", "xq", "dead", "--yes"])).contains("deleted dead"));
    assert_eq!(rt.block_on(q.get("dead")).unwrap(), None);
    assert_eq!(rt.block_on(q.stats()).unwrap().dead, 0);
    let err = fails(redis.tideq(&["delete", "xq", "ready", "-y"]), 2);
    assert!(
        err.contains("JOB_WRONG_STATE") && err.contains("cancel it instead"),
        "{err}"
    );
    assert!(rt.block_on(q.get("ready")).unwrap().is_some());
}

#[test]
fn each_action_on_an_unknown_job_exits_3() {
    let redis = Redis::start();
    rt().block_on(redis.queue("uq").enqueue(b"x", with_id("other")))
        .unwrap();
    for action in ["cancel", "run-now", "retry"] {
        let err = fails(redis.tideq(&[action, "uq", "nope"]), 3);
        assert!(err.contains("no job \"nope\""), "{action}: {err}");
    }
    let err = fails(redis.tideq(&["delete", "uq", "nope", "--yes"]), 3);
    assert!(err.contains("no job \"nope\""), "{err}");
}

/// Every id `tideq search` finds with these flags, following the cursors; each page's size and
/// bound checked.
fn search_all(redis: &Redis, flags: &[&str], limit: usize) -> Vec<String> {
    let (mut found, mut cursor) = (Vec::new(), None::<String>);
    let limit = limit.to_string();
    loop {
        let mut args = vec!["search", "sq", "--json", "--limit", &limit];
        args.extend(flags);
        if let Some(c) = &cursor {
            args.extend(["--cursor", c.as_str()]);
        }
        let v = json(redis.tideq(&args));
        let jobs = v["jobs"].as_array().unwrap();
        assert!(jobs.len() <= limit.parse().unwrap(), "{v}");
        assert!(v["scanned"].as_u64().unwrap() <= 2000, "{v}");
        found.extend(jobs.iter().map(|j| j["id"].as_str().unwrap().to_string()));
        match &v["cursor"] {
            Value::Null => break,
            c => cursor = Some(c.as_str().unwrap().to_string()),
        }
    }
    let set: HashSet<&String> = found.iter().collect();
    assert_eq!(set.len(), found.len(), "a job was found twice: {found:?}");
    found.sort();
    found
}

#[test]
fn search_finds_jobs_by_task_or_group_page_by_page() {
    let redis = Redis::start();
    let q = redis.queue("sq");
    let rt = rt();
    rt.block_on(async {
        let jobs: Vec<(Vec<u8>, EnqueueOptions)> = (0..2500)
            .map(|i| {
                let o = EnqueueOptions {
                    task: Some(if i % 400 == 9 { "needle" } else { "hay" }.into()),
                    group: (i % 900 == 5).then(|| "gx".to_string()),
                    delay: (i % 2 == 1).then_some(Duration::from_secs(3600)),
                    ..with_id(&format!("j{i}"))
                };
                (b"{}".to_vec(), o)
            })
            .collect();
        q.enqueue_many(&jobs).await.unwrap();
    });
    let ids = |f: &dyn Fn(usize) -> bool| {
        let mut v: Vec<String> = (0..2500)
            .filter(|&i| f(i))
            .map(|i| format!("j{i}"))
            .collect();
        v.sort();
        v
    };
    assert_eq!(
        search_all(&redis, &["--task", "needle"], 2),
        ids(&|i| i % 400 == 9)
    );
    assert_eq!(
        search_all(&redis, &["--group", "gx"], 50),
        ids(&|i| i % 900 == 5)
    );
    assert_eq!(
        search_all(&redis, &["--task", "needle", "--state", "delayed"], 10),
        ids(&|i| i % 400 == 9 && i % 2 == 1)
    );
    // The text: the job table, what was looked at, and the cursor to go on with.
    let out = redis.tideq(&["search", "sq", "--task", "hay", "--limit", "3"]);
    assert!(next_cursor(&out).is_some(), "{}", stderr(&out));
    let text = ok(out);
    assert!(
        text.contains("ID") && text.contains("TASK") && text.contains("hay"),
        "{text}"
    );
    assert!(text.contains("3 found among"), "{text}");
    assert!(
        !text.contains("next page"),
        "the hint goes to stderr: {text}"
    );
    // By a substring of the payload; an empty text is bad input.
    let v = json(redis.tideq(&["search", "sq", "--contains", "{}", "--limit", "1", "--json"]));
    assert_eq!(v["jobs"].as_array().unwrap().len(), 1, "{v}");
    let v = json(redis.tideq(&["search", "sq", "--contains", "nowhere", "--json"]));
    assert!(v["jobs"].as_array().unwrap().is_empty(), "{v}");
    let out = redis.tideq(&["search", "sq", "--contains", ""]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

#[test]
fn search_with_a_bad_filter_cursor_or_limit_exits_2() {
    let redis = Redis::start();
    rt().block_on(redis.queue("bq").enqueue(b"x", with_id("a")))
        .unwrap();
    for flags in [
        &["--state", "sleeping"][..],
        &["--task", ""],
        &["--limit", "0"],
        &["--cursor", "garbage"],
    ] {
        let mut args = vec!["search", "bq"];
        args.extend(flags);
        let err = fails(redis.tideq(&args), 2);
        assert!(err.contains("INVALID_ARGUMENT"), "{flags:?}: {err}");
    }
}
