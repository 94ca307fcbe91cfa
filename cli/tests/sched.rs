//! Schedules' actions and settings from the command line and the dashboard (issue 43, "Settings
//! from the UI"): `tideq schedules QUEUE run|pause|resume|remove NAME`, the listing's pause and
//! last outcome, and the dashboard's POSTs for schedules, limits, group limits and group pause,
//! against a private `redis-server`. Each error path writes nothing.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use common::dashboard::*;
use common::*;
use serde_json::{json, Value};
use tideq::{EnqueueOptions, Every, GroupLimits, Limits, Rate};

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

/// Every key and value of the server, to show that a refused call wrote nothing.
fn dump(url: &str) -> Vec<(String, String)> {
    let list = redis_cli(url, &["--no-raw", "KEYS", "*"]);
    let mut keys: Vec<String> = redis_cli(url, &["KEYS", "*"])
        .lines()
        .filter(|k| !k.is_empty())
        .map(str::to_string)
        .collect();
    keys.sort();
    assert!(!keys.is_empty(), "{list}");
    keys.into_iter()
        .map(|k| {
            let v = redis_cli(url, &["--no-raw", "DUMP", &k]);
            (k, v)
        })
        .collect()
}

/// A POST with a JSON body, as the page sends it; (status, body as JSON).
fn post_json(d: &Dashboard, path: &str, body: &str) -> (u16, Value) {
    let mut s = TcpStream::connect(("127.0.0.1", d.port)).unwrap();
    let req = format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{p}\r\nX-Tideq-Request: 1\r\nOrigin: \
         http://127.0.0.1:{p}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len(),
        p = d.port
    );
    s.write_all(req.as_bytes()).unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, serde_json::from_str(body).unwrap_or(Value::Null))
}

fn hourly(rt: &tokio::runtime::Runtime, q: &tideq::Queue, name: &str) -> Option<u64> {
    rt.block_on(q.upsert_schedule(
        name,
        Every::interval(Duration::from_secs(3600)),
        b"{}",
        EnqueueOptions {
            task: Some("report".into()),
            ..Default::default()
        },
    ))
    .unwrap()
}

#[test]
fn schedules_run_enqueues_a_job_and_leaves_the_next_run_unchanged() {
    let redis = Redis::start();
    let q = redis.queue("sq");
    let rt = rt();
    let next = hourly(&rt, &q, "daily");
    let out = ok(redis.tideq(&["schedules", "sq", "run", "daily"]));
    assert!(out.contains("ran schedule \"daily\""), "{out}");
    let id = out.rsplit("job ").next().unwrap().trim().to_string();
    assert!(rt.block_on(q.get(&id)).unwrap().is_some(), "{out}");
    let v = json(redis.tideq(&["schedules", "sq", "--json"]));
    assert_eq!(v[0]["next_run_ms"].as_u64(), next);
    assert_eq!(v[0]["last_job_id"], id.as_str());
    assert_eq!(v[0]["last_job_state"], "ready");
    assert_eq!(v[0]["paused"], false);
    let text = ok(redis.tideq(&["schedules", "sq"]));
    assert!(
        text.contains("LAST JOB") && text.contains(&id) && text.contains("ready"),
        "{text}"
    );
    let j = json(redis.tideq(&["schedules", "sq", "run", "daily", "--json"]));
    assert_eq!(j["done"], "ran");
    assert!(j["job"].as_str().unwrap().starts_with("daily@run-"), "{j}");
}

#[test]
fn schedules_pause_and_resume_show_in_the_listing() {
    let redis = Redis::start();
    let q = redis.queue("pq");
    let rt = rt();
    let next = hourly(&rt, &q, "daily");
    assert!(ok(redis.tideq(&["schedules", "pq", "pause", "daily"])).contains("paused schedule"));
    let v = json(redis.tideq(&["schedules", "pq", "--json"]));
    assert_eq!(v[0]["paused"], true);
    assert_eq!(v[0]["next_run_ms"].as_u64(), next, "the next run is kept");
    assert!(ok(redis.tideq(&["schedules", "pq"])).contains("paused (next"));
    assert!(ok(redis.tideq(&["schedules", "pq", "pause", "daily"])).contains("was paused already"));
    assert!(ok(redis.tideq(&["schedules", "pq", "resume", "daily"])).contains("resumed schedule"));
    assert_eq!(
        json(redis.tideq(&["schedules", "pq", "--json"]))[0]["paused"],
        false
    );
    assert!(ok(redis.tideq(&["schedules", "pq", "remove", "daily"])).contains("removed schedule"));
    assert!(ok(redis.tideq(&["schedules", "pq"])).contains("(no schedules)"));
}

#[test]
fn schedule_actions_on_an_unknown_name_exit_3_and_write_nothing() {
    let redis = Redis::start();
    let q = redis.queue("uq");
    let rt = rt();
    hourly(&rt, &q, "daily");
    let before = dump(&redis.url);
    for action in ["run", "pause", "resume", "remove"] {
        let err = fails(redis.tideq(&["schedules", "uq", action, "nosuch"]), 3);
        assert!(
            err.contains("no schedule named \"nosuch\""),
            "{action}: {err}"
        );
    }
    assert_eq!(dump(&redis.url), before, "a refused action wrote to Redis");
    // An unknown queue is still "no job queue".
    fails(redis.tideq(&["schedules", "nosuchq", "run", "daily"]), 3);
}

#[test]
fn the_dashboard_runs_pauses_resumes_and_removes_a_schedule() {
    let redis = Redis::start();
    let q = redis.queue("dq");
    let rt = rt();
    let next = hourly(&rt, &q, "daily");
    let d = Dashboard::start(&["--url", &redis.url], &[], &[]);
    let r = d.post("/api/queues/dq/schedules/daily/run");
    assert_eq!(r.status, 200, "{}", r.body);
    let id = r.json()["job"].as_str().unwrap().to_string();
    assert!(rt.block_on(q.get(&id)).unwrap().is_some());
    let view = d.get("/api/queues/dq").json();
    assert_eq!(view["schedules"][0]["last_job_id"], id.as_str());
    assert_eq!(view["schedules"][0]["next_run_ms"].as_u64(), next);
    assert_eq!(d.post("/api/queues/dq/schedules/daily/pause").status, 200);
    assert!(rt.block_on(q.schedules()).unwrap()[0].paused);
    assert_eq!(
        d.get("/api/queues/dq").json()["schedules"][0]["paused"],
        true
    );
    assert_eq!(d.post("/api/queues/dq/schedules/daily/resume").status, 200);
    assert!(!rt.block_on(q.schedules()).unwrap()[0].paused);
    let before = dump(&redis.url);
    for action in ["run", "pause", "resume", "remove"] {
        let e = d
            .post(&format!("/api/queues/dq/schedules/nosuch/{action}"))
            .refused(404);
        assert!(e.contains("no schedule named"), "{e}");
    }
    assert!(d
        .post("/api/queues/dq/schedules/daily/explode")
        .refused(404)
        .contains("run, pause"));
    assert_eq!(dump(&redis.url), before, "a refused action wrote to Redis");
    assert_eq!(d.post("/api/queues/dq/schedules/daily/remove").status, 200);
    assert!(rt.block_on(q.schedules()).unwrap().is_empty());
}

#[test]
fn a_limit_edited_in_the_dashboard_is_what_tideq_limits_shows() {
    let redis = Redis::start();
    let q = redis.queue("lq");
    let rt = rt();
    rt.block_on(q.enqueue(b"x", EnqueueOptions::default()))
        .unwrap();
    let d = Dashboard::start(&["--url", &redis.url], &[], &[]);
    let (status, v) = post_json(
        &d,
        "/api/queues/lq/limits",
        r#"{"max_active": 7, "rate": {"max": 30, "per_ms": 60000}, "group_concurrency": 2}"#,
    );
    assert_eq!(status, 200, "{v}");
    let shown = json(redis.tideq(&["limits", "lq", "--json"]));
    assert_eq!(shown["max_active"], 7);
    assert_eq!(shown["rate"], json!({"max": 30, "per_ms": 60000}));
    assert_eq!(shown["group_concurrency"], 2);
    assert_eq!(shown["group_rate"], Value::Null);
    assert_eq!(v["limits"], shown);
    // A token bucket: its burst is shown beside its rate.
    let (status, v) = post_json(
        &d,
        "/api/queues/lq/limits",
        r#"{"rate": {"max": 10, "per_ms": 1000, "burst": 50}}"#,
    );
    assert_eq!(status, 200, "{v}");
    let shown = json(redis.tideq(&["limits", "lq", "--json"]));
    assert_eq!(
        shown["rate"],
        json!({"max": 10, "per_ms": 1000, "burst": 50})
    );
    let text = ok(redis.tideq(&["limits", "lq"]));
    assert!(text.contains("10 per 1000 ms, burst 50"), "{text}");
    // Cleared: null removes a limit.
    let (status, _) = post_json(&d, "/api/queues/lq/limits", r#"{"max_active": null}"#);
    assert_eq!(status, 200);
    assert_eq!(rt.block_on(q.limits()).unwrap(), Limits::default());
}

#[test]
fn a_queue_naming_a_shared_limiter_shows_it_in_tideq_limits_and_the_dashboard() {
    let redis = Redis::start();
    let q = redis.queue("sq");
    let rt = rt();
    rt.block_on(async {
        q.client()
            .limiter()
            .concurrent("stripe", 5, Duration::from_secs(30))
            .await
            .unwrap();
        q.enqueue(b"x", EnqueueOptions::default()).await.unwrap();
    });
    let text = ok(redis.tideq(&["limits", "sq"]));
    assert!(
        text.lines()
            .any(|l| l.starts_with("limiter") && l.ends_with('-')),
        "{text}"
    );
    rt.block_on(q.set_limiter(Some("stripe"))).unwrap();
    let text = ok(redis.tideq(&["limits", "sq"]));
    assert!(
        text.lines()
            .any(|l| l.starts_with("limiter") && l.ends_with("stripe")),
        "{text}"
    );
    assert_eq!(
        json(redis.tideq(&["limits", "sq", "--json"]))["limiter"],
        "stripe"
    );
    let d = Dashboard::start(&["--url", &redis.url], &[], &[]);
    assert_eq!(
        d.get("/api/queues/sq").json()["limits"]["limiter"],
        "stripe"
    );
    // Editing the queue's limits leaves its limiter, and the answer shows it.
    let (status, v) = post_json(&d, "/api/queues/sq/limits", r#"{"max_active": 3}"#);
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["limits"]["limiter"], "stripe");
    rt.block_on(q.set_limiter(None)).unwrap();
    assert_eq!(
        d.get("/api/queues/sq").json()["limits"]["limiter"],
        Value::Null
    );
}

#[test]
fn bad_limits_from_the_dashboard_are_refused_and_write_nothing() {
    let redis = Redis::start();
    let q = redis.queue("bq");
    let rt = rt();
    rt.block_on(async {
        q.enqueue(
            b"x",
            EnqueueOptions {
                group: Some("acme".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap();
        q.set_limits(Limits {
            max_active: Some(3),
            ..Default::default()
        })
        .await
        .unwrap();
    });
    let d = Dashboard::start(&["--url", &redis.url], &[], &[]);
    let before = dump(&redis.url);
    for (path, body, says) in [
        (
            "/api/queues/bq/limits",
            r#"{"max_active": 0}"#,
            "max_active must be a whole number",
        ),
        (
            "/api/queues/bq/limits",
            r#"{"max_active": -2}"#,
            "max_active must be",
        ),
        (
            "/api/queues/bq/limits",
            r#"{"max_active": 1.5}"#,
            "max_active must be",
        ),
        (
            "/api/queues/bq/limits",
            r#"{"max_active": "5"}"#,
            "max_active must be",
        ),
        (
            "/api/queues/bq/limits",
            r#"{"max_active": 4294967296}"#,
            "max_active must be",
        ),
        (
            "/api/queues/bq/limits",
            r#"{"rate": {"max": 5}}"#,
            "rate.per_ms must be",
        ),
        ("/api/queues/bq/limits", r#"{"rate": 5}"#, "rate must be"),
        (
            "/api/queues/bq/limits",
            r#"{"rate": {"max": 5, "per_ms": 1, "x": 1}}"#,
            "unknown field rate.x",
        ),
        (
            "/api/queues/bq/limits",
            r#"{"rate": {"max": 5, "per_ms": 1, "burst": 0}}"#,
            "rate.burst must be a whole number",
        ),
        (
            "/api/queues/bq/limits",
            r#"{"max_actve": 5}"#,
            "unknown field \"max_actve\"",
        ),
        ("/api/queues/bq/limits", "not json", "not JSON"),
        ("/api/queues/bq/limits", "[1]", "JSON object"),
        (
            "/api/queues/bq/groups/acme/limits",
            r#"{"concurrency": 0}"#,
            "concurrency must be",
        ),
        (
            "/api/queues/bq/groups/acme/limits",
            r#"{"rate": {"max": 0, "per_ms": 10}}"#,
            "rate.max must be",
        ),
    ] {
        let (status, v) = post_json(&d, path, body);
        assert_eq!(status, 400, "{body}: {v}");
        let e = v["error"].as_str().unwrap();
        assert!(e.contains(says), "{body}: {e}");
    }
    let e = d.post("/api/queues/bq/groups/acme/explode").refused(404);
    assert!(e.contains("pause, resume"), "{e}");
    assert_eq!(dump(&redis.url), before, "a refused change wrote to Redis");
}

#[test]
fn group_limits_and_group_pause_from_the_dashboard_land_in_redis() {
    let redis = Redis::start();
    let q = redis.queue("gq");
    let rt = rt();
    rt.block_on(q.enqueue(
        b"x",
        EnqueueOptions {
            group: Some("acme".into()),
            ..Default::default()
        },
    ))
    .unwrap();
    let d = Dashboard::start(&["--url", &redis.url], &[], &[]);
    let (status, v) = post_json(
        &d,
        "/api/queues/gq/groups/acme/limits",
        r#"{"concurrency": 3, "rate": {"max": 10, "per_ms": 1000}}"#,
    );
    assert_eq!(status, 200, "{v}");
    let g = rt.block_on(q.group("acme")).unwrap();
    assert_eq!(g.concurrency, Some(3));
    assert_eq!(g.rate, Some(Rate::new(10, Duration::from_secs(1))));
    assert_eq!(v["group"]["concurrency"], 3);
    let shown = json(redis.tideq(&["group", "gq", "acme", "--json"]));
    assert_eq!(shown["concurrency"], 3);
    assert_eq!(d.post("/api/queues/gq/groups/acme/pause").status, 200);
    assert!(rt.block_on(q.group("acme")).unwrap().paused);
    assert_eq!(d.post("/api/queues/gq/groups/acme/resume").status, 200);
    assert!(!rt.block_on(q.group("acme")).unwrap().paused);
    rt.block_on(q.set_group_limits("acme", GroupLimits::default()))
        .unwrap();
}

#[test]
fn a_read_only_dashboard_refuses_every_settings_change() {
    let redis = Redis::start();
    let q = redis.queue("rq");
    let rt = rt();
    hourly(&rt, &q, "daily");
    rt.block_on(q.enqueue(
        b"x",
        EnqueueOptions {
            group: Some("acme".into()),
            ..Default::default()
        },
    ))
    .unwrap();
    let d = Dashboard::start(&["--url", &redis.url], &["--read-only"], &[]);
    let before = dump(&redis.url);
    for path in [
        "/api/queues/rq/schedules/daily/run",
        "/api/queues/rq/schedules/daily/pause",
        "/api/queues/rq/schedules/daily/remove",
        "/api/queues/rq/groups/acme/pause",
    ] {
        assert!(d.post(path).refused(403).contains("read-only"), "{path}");
    }
    for path in ["/api/queues/rq/limits", "/api/queues/rq/groups/acme/limits"] {
        let (status, _) = post_json(&d, path, r#"{"max_active": 5}"#);
        assert_eq!(status, 403, "{path}");
    }
    // Without the header a page could not send cross-site, a change is refused too.
    let d2 = Dashboard::start(&["--url", &redis.url], &[], &[]);
    let r = http(d2.port, "POST", "/api/queues/rq/schedules/daily/run", &[]).unwrap();
    assert_eq!(r.status, 403, "{}", r.body);
    assert_eq!(dump(&redis.url), before, "a refused change wrote to Redis");
}
