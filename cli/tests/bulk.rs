//! Bulk actions on the command line (`retry`/`delete`/`cancel` of several ids, `search
//! --retry|--delete|--cancel`, `promote --all`, `clean`, `obliterate`) against a private
//! `redis-server`: what each does, checked through the core crate, and each refusal (exit code,
//! nothing written).

mod common;

use std::time::Duration;

use common::*;
use tideq::{EnqueueOptions, JobState, Queue};

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

fn state(rt: &tokio::runtime::Runtime, q: &Queue, id: &str) -> Option<JobState> {
    rt.block_on(q.get(id)).unwrap().map(|j| j.state)
}

/// Every key of the server and its content's size, to show nothing was written.
fn dump(url: &str) -> String {
    let keys = redis_cli(url, &["--scan"]);
    let mut keys: Vec<&str> = keys.lines().collect();
    keys.sort();
    keys.iter()
        .map(|k| format!("{k}={}", redis_cli(url, &["DEBUG", "DIGEST-VALUE", k])))
        .collect()
}

#[test]
fn retry_of_several_ids_requeues_the_dead_ones_and_exits_by_the_others() {
    let redis = Redis::start();
    let q = redis.queue("rq");
    let rt = rt();
    rt.block_on(async {
        dead_job(&q, "d1").await;
        dead_job(&q, "d2").await;
        dead_job(&q, "d3").await;
        dead_job(&q, "d4").await;
        q.enqueue(b"x", delayed("r1")).await.unwrap();
    });
    let out = ok(redis.tideq(&["retry", "rq", "d1", "d2"]));
    assert!(
        out.contains("requeued d1") && out.contains("requeued d2"),
        "{out}"
    );
    assert_eq!(state(&rt, &q, "d1"), Some(JobState::Ready));
    // A delayed one: exit 2; an unknown one: exit 3; the dead one is requeued either way.
    let out = redis.tideq(&["retry", "rq", "d3", "r1"]);
    assert!(
        stdout(&out).contains("skipped r1: it is delayed"),
        "{}",
        stdout(&out)
    );
    fails(out, 2);
    fails(redis.tideq(&["retry", "rq", "d4", "nope"]), 3);
    assert_eq!(state(&rt, &q, "d3"), Some(JobState::Ready));
    assert_eq!(state(&rt, &q, "d4"), Some(JobState::Ready));
    // The one-id form is as it was: an unknown id exits 3 with the usual message.
    let err = fails(redis.tideq(&["retry", "rq", "nope"]), 3);
    assert!(err.contains("no job \"nope\""), "{err}");
}

#[test]
fn delete_of_several_ids_asks_unless_yes_and_deletes_the_finished_ones() {
    let redis = Redis::start();
    let q = redis.queue("dq");
    let rt = rt();
    rt.block_on(async {
        dead_job(&q, "d1").await;
        dead_job(&q, "d2").await;
    });
    let before = dump(&redis.url);
    let err = fails(redis.tideq(&["delete", "dq", "d1", "d2"]), 2);
    assert!(err.contains("--yes"), "{err}");
    assert_eq!(dump(&redis.url), before);
    let out = ok(redis.tideq(&["delete", "dq", "d1", "d2", "--yes"]));
    assert!(
        out.contains("deleted d1") && out.contains("deleted d2"),
        "{out}"
    );
    assert_eq!(state(&rt, &q, "d1"), None);
}

#[test]
fn cancel_of_several_ids_cancels_the_pending_ones() {
    let redis = Redis::start();
    let q = redis.queue("cq");
    let rt = rt();
    rt.block_on(async {
        q.enqueue(b"x", with_id("r1")).await.unwrap();
        q.enqueue(b"x", delayed("l1")).await.unwrap();
    });
    ok(redis.tideq(&["cancel", "cq", "r1", "l1"]));
    assert_eq!(state(&rt, &q, "r1"), None);
    assert_eq!(state(&rt, &q, "l1"), None);
}

#[test]
fn more_than_1000_ids_exit_2_and_write_nothing() {
    let redis = Redis::start();
    let q = redis.queue("mq");
    let rt = rt();
    rt.block_on(dead_job(&q, "d0"));
    let before = dump(&redis.url);
    let ids: Vec<String> = (0..1001).map(|i| format!("d{i}")).collect();
    for cmd in ["retry", "delete", "cancel"] {
        let mut args = vec![cmd, "mq"];
        args.extend(ids.iter().map(String::as_str));
        args.push("--yes");
        if cmd != "delete" {
            args.pop();
        }
        let err = fails(redis.tideq(&args), 2);
        assert!(err.contains("1000"), "{err}");
    }
    assert_eq!(dump(&redis.url), before);
}

#[test]
fn an_unknown_queue_exits_3_and_writes_nothing() {
    let redis = Redis::start();
    let q = redis.queue("known");
    let rt = rt();
    rt.block_on(dead_job(&q, "d1"));
    let before = dump(&redis.url);
    for args in [
        vec!["retry", "knwn", "a", "b"],
        vec!["delete", "knwn", "a", "b", "--yes"],
        vec!["cancel", "knwn", "a", "b"],
        vec!["search", "knwn", "--retry", "--yes"],
        vec!["promote", "knwn", "--all", "--yes"],
        vec!["clean", "knwn", "dead", "--older-than", "1h", "--yes"],
        vec!["obliterate", "knwn", "--yes"],
    ] {
        let err = fails(redis.tideq(&args), 3);
        assert!(err.contains("known"), "{args:?}: {err}");
    }
    assert_eq!(dump(&redis.url), before);
}

#[test]
fn search_retry_requeues_every_dead_job_found_after_confirmation() {
    let redis = Redis::start();
    let q = redis.queue("sq");
    let rt = rt();
    rt.block_on(async {
        for i in 0..5 {
            dead_job(&q, &format!("order-{i}")).await;
        }
        dead_job(&q, "other").await;
    });
    let before = dump(&redis.url);
    let err = fails(
        redis.tideq(&["search", "sq", "--contains", "doomed", "--retry"]),
        2,
    );
    assert!(err.contains("--yes"), "{err}");
    assert_eq!(dump(&redis.url), before);
    // A state the action does not apply to: exit 2, nothing written.
    fails(
        redis.tideq(&["search", "sq", "--state", "ready", "--retry", "--yes"]),
        2,
    );
    assert_eq!(dump(&redis.url), before);
    let out = ok(redis.tideq(&["search", "sq", "--contains", "doomed", "--retry", "--yes"]));
    assert!(out.contains("requeued 6"), "{out}");
    let s = rt.block_on(q.stats()).unwrap();
    assert_eq!((s.dead, s.ready), (0, 6));
    // Then cancel them all.
    let out = ok(redis.tideq(&["search", "sq", "--cancel", "--yes"]));
    assert!(out.contains("cancelled 6"), "{out}");
}

#[test]
fn promote_all_runs_every_delayed_job_now() {
    let redis = Redis::start();
    let q = redis.queue("pq");
    let rt = rt();
    rt.block_on(async {
        for i in 0..3 {
            q.enqueue(b"x", delayed(&format!("l{i}"))).await.unwrap();
        }
    });
    fails(redis.tideq(&["promote", "pq", "--all"]), 2);
    fails(redis.tideq(&["promote", "pq", "--yes"]), 2);
    assert!(ok(redis.tideq(&["promote", "pq", "--all", "--yes"])).contains("promoted 3"));
    assert_eq!(rt.block_on(q.stats()).unwrap().ready, 3);
}

#[test]
fn clean_deletes_the_old_finished_jobs_and_a_bad_age_or_state_exits_2() {
    let redis = Redis::start();
    let q = redis.queue("clq");
    let rt = rt();
    rt.block_on(dead_job(&q, "d1"));
    let before = dump(&redis.url);
    for args in [
        vec!["clean", "clq", "dead", "--older-than", "1x", "--yes"],
        vec!["clean", "clq", "dead", "--older-than", "-1h", "--yes"],
        vec!["clean", "clq", "ready", "--older-than", "1h", "--yes"],
        vec!["clean", "clq", "dead", "--yes"],
    ] {
        fails(redis.tideq(&args), 2);
    }
    assert_eq!(dump(&redis.url), before);
    assert!(
        ok(redis.tideq(&["clean", "clq", "dead", "--older-than", "1h", "--yes"]))
            .contains("deleted 0")
    );
    assert!(
        ok(redis.tideq(&["clean", "clq", "dead", "--older-than", "0", "--yes"]))
            .contains("deleted 1")
    );
    assert_eq!(state(&rt, &q, "d1"), None);
}

#[test]
fn obliterate_refuses_without_yes_off_a_terminal_and_deletes_every_key_with_it() {
    let redis = Redis::start();
    let q = redis.queue("oq");
    let n = redis.queue("oq2");
    let rt = rt();
    rt.block_on(async {
        dead_job(&q, "d1").await;
        q.enqueue(b"x", delayed("l1")).await.unwrap();
        n.enqueue(b"x", with_id("keep")).await.unwrap();
    });
    let before = dump(&redis.url);
    let err = fails(redis.tideq(&["obliterate", "oq"]), 2);
    assert!(err.contains("--yes"), "{err}");
    assert_eq!(dump(&redis.url), before);
    let out = ok(redis.tideq(&["obliterate", "oq", "--yes"]));
    assert!(out.contains("obliterated"), "{out}");
    let left = redis_cli(&redis.url, &["--scan", "--pattern", "tideq:{oq}*"]);
    assert!(left.trim().is_empty(), "{left}");
    assert_eq!(state(&rt, &n, "keep"), Some(JobState::Ready));
    // Gone: the queue is unknown now.
    fails(redis.tideq(&["obliterate", "oq", "--yes"]), 3);
}

#[test]
fn obliterate_is_refused_while_a_worker_is_live_unless_forced() {
    let redis = Redis::start();
    let q = redis.queue("wq");
    let rt = rt();
    rt.block_on(q.enqueue(b"x", delayed("l1"))).unwrap();
    let w = {
        let _g = rt.enter();
        q.work(Default::default(), |_j: tideq::Job| async {
            Ok::<(), String>(())
        })
        .unwrap()
    };
    rt.block_on(async {
        for _ in 0..500 {
            if !q.workers().await.unwrap().is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    let err = fails(redis.tideq(&["obliterate", "wq", "--yes"]), 2);
    assert!(err.contains("live"), "{err}");
    assert_eq!(state(&rt, &q, "l1"), Some(JobState::Delayed));
    ok(redis.tideq(&["obliterate", "wq", "--force", "--yes"]));
    assert_eq!(state(&rt, &q, "l1"), None);
    w.stop();
    rt.block_on(w.join());
}

/// A POST with a JSON body, as the page's bulk bar sends it.
fn post_json(port: u16, path: &str, body: &str) -> (u16, serde_json::Value) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    let req = format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Tideq-Request: 1\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, serde_json::from_str(body).unwrap())
}

#[test]
fn the_dashboard_s_bulk_routes_act_and_a_read_only_dashboard_refuses_them_writing_nothing() {
    use common::dashboard::Dashboard;
    let redis = Redis::start();
    let q = redis.queue("dbq");
    let rt = rt();
    rt.block_on(async {
        for i in 0..3 {
            dead_job(&q, &format!("d{i}")).await;
        }
        q.enqueue(b"x", delayed("l1")).await.unwrap();
    });
    let url = redis.url.clone();
    let ro = Dashboard::start(&["--url", &url], &["--read-only"], &[]);
    let before = dump(&url);
    let (status, _) = post_json(ro.port, "/api/queues/dbq/bulk/retry", r#"{"ids":["d0"]}"#);
    assert_eq!(status, 403);
    for path in [
        "/api/queues/dbq/promote-all",
        "/api/queues/dbq/obliterate",
        "/api/queues/dbq/clean?state=dead&older_than=0",
        "/api/queues/dbq/bulk-found/retry",
    ] {
        ro.post(path).refused(403);
    }
    assert_eq!(dump(&url), before);
    drop(ro);
    let d = Dashboard::start(&["--url", &url], &[], &[]);
    let (status, got) = post_json(
        d.port,
        "/api/queues/dbq/bulk/retry",
        r#"{"ids":["d0","d1","l1","zz"]}"#,
    );
    assert_eq!(status, 200, "{got}");
    assert_eq!(got["done"], 2);
    let outcomes: Vec<&str> = got["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(outcomes, ["done", "done", "wrong_state", "unknown"]);
    assert_eq!(got["items"][2]["state"], "delayed");
    assert_eq!(state(&rt, &q, "d0"), Some(JobState::Ready));
    // Without the header, refused.
    let r = common::dashboard::http(d.port, "POST", "/api/queues/dbq/promote-all", &[]).unwrap();
    assert_eq!(r.status, 403);
    assert_eq!(d.post("/api/queues/dbq/promote-all").json()["promoted"], 1);
    assert_eq!(d.post("/api/queues/dbq/bulk-found/retry").json()["done"], 1);
    d.post("/api/queues/dbq/clean?state=dead&older_than=x")
        .refused(400);
    let many: Vec<String> = (0..1001).map(|i| format!("\"j{i}\"")).collect();
    let (status, _) = post_json(
        d.port,
        "/api/queues/dbq/bulk/delete",
        &format!("{{\"ids\":[{}]}}", many.join(",")),
    );
    assert_eq!(status, 400);
    assert!(
        d.post("/api/queues/dbq/obliterate").json()["keys"]
            .as_u64()
            .unwrap()
            > 0
    );
    assert_eq!(state(&rt, &q, "d0"), None);
}
