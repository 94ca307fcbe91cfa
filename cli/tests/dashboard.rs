//! `tideq dashboard` against private `redis-server`s (and a local Redis Cluster): its API agrees
//! with the core, its changes land in Redis, its guards refuse what they must, and its refresh
//! loop's Redis cost is measured with `INFO commandstats`. The dashboard process, HTTP (spoken by
//! hand) and INFO are read through common/dashboard.rs.

mod common;

use std::time::Duration;

use common::dashboard::*;
use common::*;
use serde_json::{json, Value};
use tideq::{FlowJob, JobState, Queue, QueueOptions};

#[test]
fn the_overview_counts_equal_stats_and_a_requeue_moves_the_dead_job_back_to_ready() {
    let rt = rt();
    let redis = Redis::start();
    let q = populated(&redis, &rt, "mail");
    let d = Dashboard::start(&["--url", &redis.url], &[], &[]);
    let core = rt.block_on(q.stats()).unwrap();
    let e = d.entry("jobs", "mail");
    let s = &e["stats"];
    assert_eq!(
        (
            count(s, "ready"),
            count(s, "delayed"),
            count(s, "active"),
            count(s, "dead"),
            count(s, "completed"),
            count(s, "enqueued"),
        ),
        (
            core.ready,
            core.delayed,
            core.active,
            core.dead,
            core.completed,
            core.enqueued
        )
    );
    assert_eq!((core.ready, core.dead), (3, 2));
    assert_eq!(e["paused"], false);
    let capped = d.entry("capped", "ticks");
    assert_eq!(count(&capped["stats"], "pushed"), 1);
    let o = d.overview();
    assert_eq!(o["read_only"], false);
    assert_eq!(o["refresh_secs"], 10.0, "the default refresh");

    // The queue's view, its dead letters, one job.
    let v = d.get("/api/queues/mail").json();
    assert_eq!(count(&v["stats"], "dead"), 2);
    assert_eq!(v["groups"], Value::Array(vec![]));
    let dead = d.get("/api/queues/mail/jobs?state=dead").json();
    let ids: Vec<&str> = dead["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["d1", "d2"]);
    let page = d
        .get("/api/queues/mail/jobs?state=ready&offset=1&limit=1")
        .json();
    assert_eq!(page["jobs"][0]["id"], "r2");
    // By default a page goes by cursor: the next one starts after the last job shown.
    let first = d.get("/api/queues/mail/jobs?state=ready&limit=1").json();
    assert_eq!(first["jobs"][0]["id"], "r1");
    let cursor = first["cursor"].as_str().unwrap().to_string();
    let second = d
        .get(&format!(
            "/api/queues/mail/jobs?state=ready&limit=1&cursor={}",
            cursor.replace('|', "%7C")
        ))
        .json();
    assert_eq!(second["jobs"][0]["id"], "r2");
    let job = d.get("/api/queues/mail/jobs/d1").json();
    assert_eq!(
        (&job["state"], &job["last_error"]),
        (&"dead".into(), &"boom".into())
    );
    assert_eq!(job["payload"], "doomed");
    let r1 = d.get("/api/queues/mail/jobs/r1").json();
    assert_eq!(r1["payload"]["n"], "r1", "JSON payloads are shown decoded");

    // Requeue one: back to ready in Redis, and the overview shows it at once.
    let r = d.post("/api/queues/mail/dead/d1/requeue");
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["requeued"], "d1");
    let info = rt.block_on(q.get("d1")).unwrap().unwrap();
    assert_eq!(info.state, JobState::Ready);
    let s = d.entry("jobs", "mail")["stats"].clone();
    assert_eq!((count(&s, "ready"), count(&s, "dead")), (4, 1));
    assert!(d
        .post("/api/queues/mail/dead/d1/requeue")
        .refused(404)
        .contains("no dead job"));

    // Pause and resume; requeue all; purge.
    assert_eq!(d.post("/api/queues/mail/pause").json()["paused"], true);
    assert!(rt.block_on(q.is_paused()).unwrap());
    assert_eq!(d.entry("jobs", "mail")["paused"], true);
    assert_eq!(d.post("/api/queues/mail/resume").json()["paused"], false);
    assert!(!rt.block_on(q.is_paused()).unwrap());
    assert_eq!(
        d.post("/api/queues/mail/dead/requeue-all").json()["requeued"],
        1
    );
    rt.block_on(dead_job(&q, "d3")); // (it fails every ready job: all of them die)
    let dead = rt.block_on(q.stats()).unwrap().dead;
    assert!(dead >= 1);
    assert_eq!(d.post("/api/queues/mail/dead/purge").json()["purged"], dead);
    assert_eq!(rt.block_on(q.stats()).unwrap().dead, 0);

    // The capped queue: groups with their length, and a peek.
    let c = d.get("/api/capped/ticks?peek=g").json();
    assert_eq!(c["groups"][0]["group"], "g");
    assert_eq!(c["groups"][0]["len"], 1);
    assert_eq!(c["peek"]["items"][0]["item"], 1);
}

#[test]
fn the_queue_view_lists_groups_and_schedules() {
    let rt = rt();
    let redis = Redis::start();
    let q = redis.queue("grouped");
    rt.block_on(async {
        q.pause_group("slow").await.unwrap();
        for g in ["slow", "fast", "slow"] {
            let opts = tideq::EnqueueOptions {
                group: Some(g.to_string()),
                ..Default::default()
            };
            q.enqueue(b"x", opts).await.unwrap();
        }
        let every = tideq::Every::Interval(Duration::from_secs(3600));
        q.upsert_schedule("hourly", every, b"tick", Default::default())
            .await
            .unwrap();
    });
    let d = Dashboard::start(&["--url", &redis.url], &[], &[]);
    let v = d.get("/api/queues/grouped").json();
    let mut groups: Vec<(&str, u64, bool)> = v["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["group"].as_str().unwrap(),
                count(g, "ready"),
                g["paused"].as_bool().unwrap(),
            )
        })
        .collect();
    groups.sort();
    assert_eq!(groups, [("fast", 1, false), ("slow", 2, true)]);
    assert_eq!(v["groups_cursor"], Value::Null, "one page holds them all");
    assert_eq!(v["schedules"][0]["name"], "hourly");
}

#[test]
fn the_view_of_a_queue_with_10000_groups_reads_one_page_of_them_per_refresh() {
    let rt = rt();
    let redis = Redis::start();
    let q = redis.queue("tenants");
    rt.block_on(async {
        let jobs: Vec<(Vec<u8>, tideq::EnqueueOptions)> = (0..10_000)
            .map(|g| {
                let opts = tideq::EnqueueOptions {
                    group: Some(format!("tenant-{g}")),
                    ..Default::default()
                };
                (b"x".to_vec(), opts)
            })
            .collect();
        for part in jobs.chunks(5_000) {
            q.enqueue_many(part).await.unwrap();
        }
    });
    let d = Dashboard::start(&["--url", &redis.url], &[], &[]);
    let before = command_calls(&redis.url)
        .get("evalsha")
        .copied()
        .unwrap_or(0);
    let mut seen = std::collections::HashSet::new();
    let mut path = "/api/queues/tenants".to_string();
    let mut pages = 0;
    loop {
        let v = d.get(&path).json();
        pages += 1;
        let page = v["groups"].as_array().unwrap();
        assert!(page.len() <= 200, "a page of {} groups", page.len());
        for g in page {
            assert!(seen.insert(g["group"].as_str().unwrap().to_string()));
        }
        match v["groups_cursor"].as_str() {
            Some(c) => path = format!("/api/queues/tenants?groups={c}"),
            None => break,
        }
    }
    assert_eq!(seen.len(), 10_000, "paging by cursor missed groups");
    // A few script calls per page (the page, the schedules, the workers, another where a page
    // crosses into the next part of the walk, the refresh loop's), not one per group (10,000 a
    // refresh).
    let calls = command_calls(&redis.url)
        .get("evalsha")
        .copied()
        .unwrap_or(0)
        - before;
    assert!(
        calls <= 5 * pages,
        "{calls} script calls for {pages} pages of groups"
    );
}

#[test]
fn changes_need_the_custom_header_and_a_same_origin_and_loopback_hosts() {
    let rt = rt();
    let redis = Redis::start();
    let q = populated(&redis, &rt, "mail");
    let d = Dashboard::start(&["--url", &redis.url], &[], &[]);
    let path = "/api/queues/mail/dead/d1/requeue";
    let no_header = http(d.port, "POST", path, &[]).unwrap();
    assert!(no_header.refused(403).contains("X-Tideq-Request"));
    let cross = http(
        d.port,
        "POST",
        path,
        &[("X-Tideq-Request", "1"), ("Origin", "https://evil.example")],
    )
    .unwrap();
    assert!(cross.refused(403).contains("Origin"));
    let wrong_value = http(d.port, "POST", path, &[("X-Tideq-Request", "yes")]).unwrap();
    wrong_value.refused(403);
    assert_eq!(
        rt.block_on(q.get("d1")).unwrap().unwrap().state,
        JobState::Dead,
        "nothing refused changed anything"
    );
    // Without an Origin (curl, scripts) the header is enough.
    let plain = http(d.port, "POST", path, &[("X-Tideq-Request", "1")]).unwrap();
    assert_eq!(plain.status, 200, "{}", plain.body);
    // A change by GET does not exist.
    assert_eq!(d.get(path).status, 405);
    // DNS rebinding: a loopback listener answers loopback host names only.
    let rebound = http(d.port, "GET", "/api/overview", &[("Host", "evil.example")]).unwrap();
    assert!(rebound.refused(403).contains("loopback"));
    let page = http(d.port, "GET", "/", &[("Host", "evil.example:80")]).unwrap();
    page.refused(403);
    let local = http(d.port, "GET", "/api/overview", &[("Host", "localhost")]).unwrap();
    assert_eq!(local.status, 200);
    // No CORS, framing refused, a strict CSP.
    let page = d.get("/");
    assert_eq!(page.status, 200);
    assert!(page.body.contains("app.js"));
    assert!(!page
        .headers
        .keys()
        .any(|k| k.starts_with("access-control-")));
    assert_eq!(page.headers["x-frame-options"], "DENY");
    assert!(page.headers["content-security-policy"].contains("script-src 'self'"));
    for asset in ["/app.js", "/style.css"] {
        assert_eq!(d.get(asset).status, 200, "{asset}");
    }
}

#[test]
fn a_token_guards_the_api_but_not_the_page() {
    let rt = rt();
    let redis = Redis::start();
    populated(&redis, &rt, "mail");
    for (args, env) in [
        (vec!["--token", "s3cret"], vec![]),
        (vec![], vec![("TIDEQ_DASHBOARD_TOKEN", "s3cret")]),
    ] {
        let d = Dashboard::start(&["--url", &redis.url], &args, &env);
        d.get("/api/overview").refused(401);
        let wrong = http(
            d.port,
            "GET",
            "/api/overview",
            &[("Authorization", "Bearer s3cre")],
        )
        .unwrap();
        wrong.refused(401);
        let right = http(
            d.port,
            "GET",
            "/api/overview",
            &[("Authorization", "Bearer s3cret")],
        )
        .unwrap();
        assert_eq!(right.status, 200, "{}", right.body);
        // A POST without the token is refused before anything else.
        http(
            d.port,
            "POST",
            "/api/queues/mail/pause",
            &[("X-Tideq-Request", "1")],
        )
        .unwrap()
        .refused(401);
        let post = http(
            d.port,
            "POST",
            "/api/queues/mail/pause",
            &[("X-Tideq-Request", "1"), ("Authorization", "Bearer s3cret")],
        )
        .unwrap();
        assert_eq!(post.status, 200, "{}", post.body);
        assert_eq!(d.get("/").status, 200, "the page needs no token");
        assert_eq!(d.get("/app.js").status, 200);
    }
    let out = redis.tideq(&["dashboard", "--token", ""]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

#[test]
fn read_only_refuses_every_post() {
    let rt = rt();
    let redis = Redis::start();
    let q = populated(&redis, &rt, "mail");
    let d = Dashboard::start(&["--url", &redis.url], &["--read-only"], &[]);
    assert_eq!(d.overview()["read_only"], true);
    for path in [
        "/api/queues/mail/dead/d1/requeue",
        "/api/queues/mail/dead/requeue-all",
        "/api/queues/mail/dead/purge",
        "/api/queues/mail/pause",
        "/api/queues/mail/resume",
        "/api/queues/mail/jobs/r1/cancel",
        "/api/queues/mail/jobs/r1/run-now",
        "/api/queues/mail/jobs/d1/retry",
        "/api/queues/mail/jobs/d1/delete",
    ] {
        assert!(d.post(path).refused(403).contains("read-only"), "{path}");
    }
    let s = rt.block_on(q.stats()).unwrap();
    assert_eq!((s.dead, s.ready), (2, 3));
    assert_eq!(d.get("/api/queues/mail/jobs?state=dead").status, 200);
    assert_eq!(d.get("/api/queues/mail/search?task=x").status, 200);
    assert_eq!(d.get("/api/queues/mail/history").status, 200);
}

#[test]
fn unknown_queues_and_jobs_are_404_and_bad_input_400() {
    let rt = rt();
    let redis = Redis::start();
    populated(&redis, &rt, "mail");
    let d = Dashboard::start(&["--url", &redis.url], &[], &[]);
    assert!(d.get("/api/queues/nope").refused(404).contains("nope"));
    d.get("/api/queues/nope/jobs?state=ready").refused(404);
    d.post("/api/queues/nope/pause").refused(404);
    d.get("/api/capped/mail").refused(404);
    d.get("/api/queues/ticks").refused(404);
    d.get("/api/queues/mail/jobs/absent").refused(404);
    d.get("/api/nothing").refused(404);
    assert!(d
        .get("/api/queues/mail/jobs?state=bogus")
        .refused(400)
        .contains("bogus"));
    assert!(d
        .get("/api/queues/mail/jobs?state=ready&limit=501")
        .refused(400)
        .contains("500"));
    d.get("/api/queues/mail/jobs?state=ready&offset=-1")
        .refused(400);
    d.get("/api/queues/mail/jobs?limit=ten").refused(400);
    d.get("/api/queues/%FF").refused(400);
    d.get("/api/capped/ticks?peek=g&max=0").refused(400);
    // Percent-encoded names and ids are decoded.
    let redis_q = redis.queue("with space");
    rt.block_on(redis_q.enqueue(b"x", with_id("a/b c")))
        .unwrap();
    let d = Dashboard::start(&["--url", &redis.url], &[], &[]);
    let job = d.get("/api/queues/with%20space/jobs/a%2Fb%20c").json();
    assert_eq!(job["id"], "a/b c");
}

#[test]
fn a_job_shows_its_parent_and_a_parents_first_children_linked_to_their_jobs() {
    let rt = rt();
    let redis = Redis::start();
    let (q, parts) = (redis.queue("mail"), redis.queue("parts"));
    // A parent of 60 children, the first on another queue; none has run.
    rt.block_on(async {
        let kids = (0..60).map(|i| {
            let kid = FlowJob::new(b"x".to_vec()).options(with_id(&format!("k{i:02}")));
            if i == 0 {
                kid.on(&parts)
            } else {
                kid
            }
        });
        let parent = FlowJob::new(b"p".to_vec()).options(with_id("parent"));
        q.enqueue_flow(parent.children(kids)).await.unwrap();
    });
    let named = ["--queue", "mail", "--queue", "parts", "--refresh", "3600"];
    let d = Dashboard::start(&["--url", &redis.url], &named, &[]);
    let p = d.get("/api/queues/mail/jobs/parent").json();
    assert_eq!(
        (&p["state"], &p["children_pending"], &p["parent"]),
        (&json!("waiting"), &json!(60), &Value::Null)
    );
    assert_eq!(p["children_total"], 60);
    let kids = p["children"].as_array().unwrap();
    assert_eq!(kids.len(), 50, "the first page");
    assert_eq!(
        kids[0],
        json!({"queue": "parts", "id": "k00", "outcome": "pending", "error": null})
    );
    assert_eq!(
        (&kids[1]["queue"], &kids[49]["id"]),
        (&json!("mail"), &json!("k49"))
    );
    let child = d.get("/api/queues/parts/jobs/k00").json();
    assert_eq!(child["parent"], json!({"queue": "mail", "id": "parent"}));
    assert_eq!(
        (&child["children_total"], &child["children"]),
        (&json!(0), &json!([]))
    );

    // On demand, and one page: the job read, then its list's length and page, and the page's
    // outcomes, and the job's attempts and log (HEXISTS, HGET, LRANGE: one pipeline; the 8 other
    // HGETs are get_jobs.lua's; no refresh runs meanwhile: --refresh 3600).
    let before = command_calls(&redis.url);
    assert_eq!(d.get("/api/queues/mail/jobs/parent").status, 200);
    let after = command_calls(&redis.url);
    let calls = |c: &str| after.get(c).unwrap_or(&0) - before.get(c).unwrap_or(&0);
    assert_eq!(
        ["evalsha", "llen", "lrange", "hmget", "hexists", "hget", "hgetall", "hscan"].map(calls),
        [1, 1, 2, 1, 1, 9, 0, 0]
    );

    // The page links the parent and each child to its job (#/j/<queue>/<id>).
    let app = d.get("/app.js").body;
    for part in [
        "parts[0] === 'j'",
        "href: `#/j/${enc(queue)}/${enc(id)}`",
        "jobLink(j.parent.queue, j.parent.id)",
        "jobLink(c.queue, c.id)",
    ] {
        assert!(app.contains(part), "{part} not in app.js");
    }
}

/// The refresh loop's Redis cost: commands counted by `INFO commandstats` over whole refreshes,
/// while the API's overview is polled hard (answered from the cache: it adds nothing).
fn cost_per_queue_and_refresh(redis: &Redis, d: &Dashboard, queues: usize) -> f64 {
    const REFRESHES: u64 = 5;
    let first = d.next_refresh();
    let before = calls_but_info(&redis.url);
    for _ in 0..100 {
        d.overview();
    }
    loop {
        let n = d.overview()["refreshes"].as_u64().unwrap();
        if n >= first + REFRESHES {
            assert_eq!(n, first + REFRESHES, "measured within one refresh interval");
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let after = calls_but_info(&redis.url);
    (after - before) as f64 / (REFRESHES as f64 * queues as f64)
}

#[test]
fn the_refresh_loop_costs_at_most_one_redis_command_per_second_per_queue_by_default() {
    let rt = rt();
    let redis = Redis::start();
    populated(&redis, &rt, "a");
    let b = redis.queue("b");
    rt.block_on(b.enqueue(b"x", Default::default())).unwrap();
    let default = Dashboard::start(&["--url", &redis.url], &[], &[]);
    let default_secs = default.overview()["refresh_secs"].as_f64().unwrap();
    drop(default);

    // Job queues only (named: no discovery), then every queue found (2 job queues, 1 capped).
    let named = Dashboard::start(
        &["--url", &redis.url],
        &["--queue", "a", "--queue", "b", "--refresh", "0.5"],
        &[],
    );
    let per_job_queue = cost_per_queue_and_refresh(&redis, &named, 2);
    drop(named);
    let all = Dashboard::start(&["--url", &redis.url], &["--refresh", "0.5"], &[]);
    assert_eq!(all.overview()["queues"].as_array().unwrap().len(), 3);
    let per_queue = cost_per_queue_and_refresh(&redis, &all, 3);
    eprintln!(
        "refresh cost: {per_job_queue} commands per job queue per refresh, {per_queue} per queue \
         (2 job, 1 capped); at the default {default_secs} s: {:.2} and {:.2} per second",
        per_job_queue / default_secs,
        per_queue / default_secs
    );
    assert_eq!(per_job_queue, 8.0, "one stats() pipeline per job queue");
    assert!(per_job_queue / default_secs <= 1.0);
    assert!(per_queue / default_secs <= 1.0);
}

#[test]
fn on_a_cluster_the_overview_lists_a_queue_and_its_counts() {
    let rt = rt();
    let cluster = Cluster::start();
    let client = cluster.client();
    let q = Queue::new(&client, "clustered", QueueOptions::default()).unwrap();
    rt.block_on(async {
        dead_job(&q, "d1").await;
        for i in 0..3 {
            q.enqueue(format!("{i}"), Default::default()).await.unwrap();
        }
    });
    let d = Dashboard::start(&cluster.flags(), &[], &[]);
    let s = d.entry("jobs", "clustered")["stats"].clone();
    assert_eq!((count(&s, "ready"), count(&s, "dead")), (3, 1));
    let r = d.post("/api/queues/clustered/dead/d1/requeue");
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        rt.block_on(q.get("d1")).unwrap().unwrap().state,
        JobState::Ready
    );
}

#[test]
fn a_job_action_its_state_does_not_allow_is_409_and_changes_nothing() {
    let rt = rt();
    let redis = Redis::start();
    let q = populated(&redis, &rt, "mail");
    let d = Dashboard::start(&["--url", &redis.url], &[], &[]);
    // r1 is ready, d1 dead.
    assert!(d
        .post("/api/queues/mail/jobs/r1/run-now")
        .refused(409)
        .contains("ready"));
    assert!(d
        .post("/api/queues/mail/jobs/r1/delete")
        .refused(409)
        .contains("cancel"));
    d.post("/api/queues/mail/jobs/d1/cancel").refused(409);
    d.post("/api/queues/mail/jobs/r1/retry").refused(404);
    d.post("/api/queues/mail/jobs/absent/cancel").refused(404);
    assert!(d
        .post("/api/queues/mail/jobs/r1/explode")
        .refused(404)
        .contains("run-now"));
    let s = rt.block_on(q.stats()).unwrap();
    assert_eq!((s.ready, s.dead, s.cancelled), (3, 2, 0));
    // The ones allowed: each lands in Redis.
    for (path, id) in [
        ("/api/queues/mail/jobs/r1/cancel", "r1"),
        ("/api/queues/mail/jobs/d1/delete", "d1"),
    ] {
        let r = d.post(path);
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(rt.block_on(q.get(id)).unwrap(), None, "{path}");
    }
    let r = d.post("/api/queues/mail/jobs/d2/retry");
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        rt.block_on(q.get("d2")).unwrap().unwrap().state,
        JobState::Ready
    );
}

#[test]
fn history_and_search_refuse_bad_input() {
    let rt = rt();
    let redis = Redis::start();
    populated(&redis, &rt, "mail");
    let d = Dashboard::start(&["--url", &redis.url], &[], &[]);
    assert!(d
        .get("/api/queues/mail/history?window=5")
        .refused(400)
        .contains("3600"));
    d.get("/api/queues/mail/history?window=soon").refused(400);
    for window in [3600, 86_400, 1_209_600] {
        let h = d
            .get(&format!("/api/queues/mail/history?window={window}"))
            .json();
        assert_eq!(h["window_secs"], window);
        assert!(h["points"].is_array(), "{h}");
    }
    assert!(d
        .get("/api/queues/mail/search?task=x&state=bogus")
        .refused(400)
        .contains("bogus"));
    d.get("/api/queues/mail/search?task=x&limit=501")
        .refused(400);
    d.get("/api/queues/mail/search?task=x&cursor=garbage")
        .refused(400);
    let found = d.get("/api/queues/mail/search?state=ready").json();
    assert_eq!(found["jobs"].as_array().unwrap().len(), 3, "{found}");
    assert_eq!(found["cursor"], Value::Null);
}

#[test]
fn a_new_queue_shows_at_the_next_refresh_and_at_once_by_its_address() {
    let rt = rt();
    let redis = Redis::start();
    populated(&redis, &rt, "mail");
    // The default refresh (10 s): a queue opened by its address cannot wait for it.
    let d = Dashboard::start(&["--url", &redis.url], &[], &[]);
    let q = redis.queue("brand-new");
    rt.block_on(q.enqueue(b"x", with_id("n1"))).unwrap();
    let r = d.get("/api/queues/brand-new");
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(d.get("/api/queues/brand-new/jobs/n1").json()["id"], "n1");
    // And on the overview, at the next refresh (woken early by the find).
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while d.overview()["queues"]
        .as_array()
        .unwrap()
        .iter()
        .all(|e| e["name"] != "brand-new")
    {
        assert!(std::time::Instant::now() < deadline, "not on the overview");
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(d);

    // Without a request for it: within one refresh after it appears.
    let d = Dashboard::start(&["--url", &redis.url], &["--refresh", "0.5"], &[]);
    let q = redis.queue("another");
    let at = d.next_refresh();
    rt.block_on(q.enqueue(b"x", Default::default())).unwrap();
    loop {
        let o = d.overview();
        let listed = o["queues"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["name"] == "another");
        if listed {
            let n = o["refreshes"].as_u64().unwrap();
            assert!(n <= at + 2, "listed after {} refreshes", n - at);
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}
