//! The dashboard's operator views against private `redis-server`s (issue 43): the completed
//! tab counts the jobs kept, the history counts what came before a queue's first worker, lists
//! carry a job's arguments cut short (never whole payloads), waiting flow parents are listed
//! and cancellable, and the health panel reads latency, failures and Redis itself, with a
//! warning on an evicting policy (`tideq queues` too). The browser side is
//! tests/node/dashboard_ui.test.mjs.

mod common;

use std::time::{Duration, Instant};

use common::dashboard::*;
use common::*;
use serde_json::Value;
use tideq::{Client, EnqueueOptions, FlowJob, Job, Queue, QueueOptions, WorkerOptions};
use tideq_testing::RedisServer;

/// Polls `probe` until it is true (or fails after `secs`).
fn until(secs: u64, what: &str, mut probe: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !probe() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Every job of `state` through the dashboard's pages of `limit`, by cursor: the pages' sizes.
fn walk(d: &Dashboard, queue: &str, state: &str, limit: usize) -> Vec<usize> {
    let mut sizes = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let at = cursor
            .as_deref()
            .map(|c| format!("&cursor={}", c.replace('|', "%7C")))
            .unwrap_or_default();
        let page = d
            .get(&format!(
                "/api/queues/{queue}/jobs?state={state}&limit={limit}{at}"
            ))
            .json();
        sizes.push(page["jobs"].as_array().unwrap().len());
        match page["cursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
            None => return sizes,
        }
        assert!(sizes.len() < 100, "no end to the pages");
    }
}

/// Issue 43, defect 3: the completed tab said "completed 4,074" (the lifetime counter) over
/// ~969 kept jobs, and its last pages were empty. With keep_completed 100 and 250 completed, the
/// tab's count is 100, the pages hold 100 jobs, the last one not empty; the lifetime 250 is
/// given apart, labelled, by the API and by `tideq stats`.
#[test]
fn the_completed_tab_counts_the_jobs_kept_not_every_job_ever_completed() {
    let rt = rt();
    let redis = Redis::start();
    let client = Client::open(&redis.url).unwrap();
    let opts = QueueOptions {
        keep_completed: 100,
        ..Default::default()
    };
    let q = Queue::new(&client, "kept", opts).unwrap();
    rt.block_on(async {
        let jobs: Vec<(&[u8], EnqueueOptions)> = (0..250)
            .map(|_| (&b"{}"[..], EnqueueOptions::default()))
            .collect();
        q.enqueue_many(&jobs).await.unwrap();
        loop {
            let got = q.lease_jobs(100, Duration::from_secs(60)).await.unwrap();
            if got.is_empty() {
                break;
            }
            for job in &got {
                q.complete(job).await.unwrap();
            }
        }
    });
    let core = rt.block_on(q.stats()).unwrap();
    assert_eq!((core.completed, core.completed_kept), (250, 100));

    let d = Dashboard::start(&["--url", &redis.url], &["--refresh", "3600"], &[]);
    let s = d.entry("jobs", "kept")["stats"].clone();
    assert_eq!(
        (count(&s, "completed_kept"), count(&s, "completed")),
        (100, 250)
    );
    let sizes = walk(&d, "kept", "completed", 50);
    assert_eq!(sizes.iter().sum::<usize>(), 100, "{sizes:?}");
    assert!(*sizes.last().unwrap() > 0, "an empty last page: {sizes:?}");

    let text = ok(redis.tideq(&["stats", "kept"]));
    let line = |label: &str| {
        text.lines()
            .find(|l| l.starts_with(label))
            .unwrap_or_else(|| panic!("no {label:?} in {text}"))
            .split_whitespace()
            .last()
            .unwrap()
            .to_string()
    };
    assert_eq!(line("completed (kept)"), "100");
    assert_eq!(line("completed (in all)"), "250");
    let v = json(redis.tideq(&["stats", "kept", "--json"]));
    assert_eq!(
        (count(&v, "completed_kept"), count(&v, "completed")),
        (100, 250)
    );
}

/// Issue 43, defect 4: jobs enqueued before a queue's first worker report were never counted
/// in its history ("enqueued 251 · completed 3,212" for one hour). The enqueue that creates the
/// queue's counters leaves a zero snapshot at its minute, so once a worker ran them the hour
/// shows the 250 enqueued and the 250 completed.
#[test]
fn the_history_counts_jobs_enqueued_before_the_queues_first_worker_report() {
    let rt = rt();
    let redis = Redis::start();
    let q = redis.queue("early");
    rt.block_on(async {
        let jobs: Vec<(&[u8], EnqueueOptions)> = (0..250)
            .map(|_| (&b"x"[..], EnqueueOptions::default()))
            .collect();
        q.enqueue_many(&jobs).await.unwrap();
    });
    // No worker yet: the snapshot the first enqueue left, all zeros.
    let keys = redis_cli(&redis.url, &["--scan", "--pattern", "tideq:{early}:hist:*"]);
    let key = keys
        .lines()
        .next()
        .expect("no history snapshot after the first enqueue");
    let snap = redis_cli(&redis.url, &["HGETALL", key]);
    assert_eq!(snap.lines().nth(1), Some("0,0,0,0,0,0,0"), "{snap}");

    rt.block_on(async {
        let w = q
            .work(
                WorkerOptions {
                    concurrency: 10,
                    poll_interval: Duration::from_millis(50),
                    ..Default::default()
                },
                |_job: Job| async { Ok::<(), String>(()) },
            )
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        while q.stats().await.unwrap().completed < 250 {
            assert!(Instant::now() < deadline, "the worker did not run the jobs");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        w.shutdown().await;
    });
    let d = Dashboard::start(&["--url", &redis.url], &["--refresh", "3600"], &[]);
    let h = d.get("/api/queues/early/history?window=3600").json();
    let sum = |k: &str| -> u64 {
        h["points"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p[k].as_u64().unwrap_or(0))
            .sum()
    };
    assert_eq!((sum("enqueued"), sum("completed")), (250, 250), "{h}");
}

/// Lists show a job's arguments cut to 80 characters (JSON compact, text as is, other bytes as
/// "(binary, N bytes)"), never whole payloads, results or progress; search finds jobs by a
/// piece of their arguments.
#[test]
fn job_lists_carry_the_arguments_cut_short_never_whole_payloads() {
    let rt = rt();
    let redis = Redis::start();
    let q = redis.queue("args");
    let big = format!(
        "{{\"to\":\"ada@example.com\",\"body\":\"{}\"}}",
        "z".repeat(20_000)
    );
    rt.block_on(async {
        q.enqueue(big.as_bytes(), with_id("big")).await.unwrap();
        q.enqueue(b"hello there", with_id("text")).await.unwrap();
        q.enqueue([0xffu8, 0x00, 0xfe, 0x01], with_id("bin"))
            .await
            .unwrap();
    });
    let d = Dashboard::start(&["--url", &redis.url], &["--refresh", "3600"], &[]);
    let r = d.get("/api/queues/args/jobs?state=ready");
    assert!(
        r.body.len() < 4_000,
        "a page of 3 jobs is {} bytes",
        r.body.len()
    );
    let page = r.json();
    let jobs = page["jobs"].as_array().unwrap();
    let by = |id: &str| jobs.iter().find(|j| j["id"] == id).unwrap().clone();
    let b = by("big");
    let args = b["args"].as_str().unwrap();
    assert_eq!(args.chars().count(), 80);
    assert!(
        args.starts_with("{\"body\":\"zzz") || args.starts_with("{\"to\":\"ada"),
        "{args}"
    );
    assert!(args.ends_with('…'));
    assert_eq!(b["args_cut"], true);
    for gone in ["payload", "result", "progress"] {
        assert!(b.get(gone).is_none(), "{gone} in a list row");
    }
    assert_eq!(
        (by("text")["args"].clone(), by("text")["args_cut"].clone()),
        ("hello there".into(), false.into())
    );
    assert_eq!(by("bin")["args"], "(binary, 4 bytes)");
    // The job's page still has the payload whole.
    let whole = d.get("/api/queues/args/jobs/big").json();
    assert_eq!(whole["payload"]["body"].as_str().unwrap().len(), 20_000);
    // Search by a piece of the arguments.
    let found = d
        .get("/api/queues/args/search?contains=ada%40example")
        .json();
    let ids: Vec<&str> = found["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["big"]);
    assert!(found["jobs"][0].get("payload").is_none());
}

/// Issue 43, defect 2 (the dashboard's part): waiting flow parents are counted, listed under
/// their state, and cancelled from their page's action (the children with them).
#[test]
fn waiting_flow_parents_are_counted_listed_and_cancellable_in_the_dashboard() {
    let rt = rt();
    let redis = Redis::start();
    let q = redis.queue("flows");
    rt.block_on(async {
        // The children are delayed an hour: the parent waits.
        let held = EnqueueOptions {
            delay: Some(Duration::from_secs(3600)),
            ..Default::default()
        };
        let kids = (0..3).map(|i| {
            let mut o = held.clone();
            o.id = Some(format!("kid{i}"));
            FlowJob::new(b"k".to_vec()).options(o)
        });
        let parent = FlowJob::new(b"{\"report\":1}".to_vec()).options(with_id("parent"));
        q.enqueue_flow(parent.children(kids)).await.unwrap();
    });
    let d = Dashboard::start(&["--url", &redis.url], &["--refresh", "3600"], &[]);
    assert_eq!(count(&d.entry("jobs", "flows")["stats"], "waiting"), 1);
    let page = d.get("/api/queues/flows/jobs?state=waiting").json();
    assert_eq!(page["jobs"][0]["id"], "parent");
    assert_eq!(page["jobs"][0]["state"], "waiting");
    assert_eq!(page["jobs"][0]["args"], "{\"report\":1}");
    let r = d.post("/api/queues/flows/jobs/parent/cancel");
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(rt.block_on(q.get("parent")).unwrap().is_none());
    assert!(
        rt.block_on(q.get("kid0")).unwrap().is_none(),
        "the children go with it"
    );
    assert_eq!(count(&d.entry("jobs", "flows")["stats"], "waiting"), 0);
    // Cancelling it again: not found, said so.
    assert!(d
        .post("/api/queues/flows/jobs/parent/cancel")
        .refused(404)
        .contains("parent"));
}

/// The health panel: each queue's latency and failed attempts in the last hour, Redis's version,
/// memory, policy, clients and ops/s, and `evicts` on a policy that deletes keys (here
/// allkeys-lru); `tideq queues` prints the same server line, with its warning, above the table.
#[test]
fn the_health_panel_reads_latency_failures_and_redis_and_warns_of_an_evicting_policy() {
    let rt = rt();
    let server = RedisServer::start_private(free_port(), &["--maxmemory-policy", "allkeys-lru"]);
    let redis_url = server.url.clone();
    let q = Queue::new(
        &Client::open(&redis_url).unwrap(),
        "hq",
        QueueOptions::default(),
    )
    .unwrap();
    rt.block_on(async {
        dead_job(&q, "d1").await;
        q.enqueue(b"x", with_id("r1")).await.unwrap();
    });
    let d = Dashboard::start(&["--url", &redis_url], &["--refresh", "3600"], &[]);
    let mut h = Value::Null;
    until(20, "the health document", || {
        h = d.get("/api/health").json();
        h["queues"].as_array().is_some_and(|a| !a.is_empty())
    });
    let hq = &h["queues"][0];
    assert_eq!(hq["name"], "hq");
    assert_eq!(hq["failed_last_hour"], 1, "{h}");
    assert_eq!(hq["dead_lettered_last_hour"], 1, "{h}");
    assert!(hq["latency"].as_f64().unwrap() >= 0.0);
    let r = &h["redis"];
    assert_eq!(r["server"], "redis");
    assert!(r["version"].as_str().unwrap().starts_with('7'), "{r}");
    assert_eq!(
        (r["maxmemory_policy"].clone(), r["evicts"].clone()),
        ("allkeys-lru".into(), true.into())
    );
    assert!(r["used_memory"].as_u64().unwrap() > 0);
    assert!(r["connected_clients"].as_u64().unwrap() >= 1);

    let out = ok(run(&["--url", &redis_url, "queues"]));
    let first = out.lines().next().unwrap();
    assert!(first.starts_with("redis 7"), "{out}");
    assert!(
        first.contains("WARNING: maxmemory-policy allkeys-lru"),
        "{out}"
    );
    // A policy that keeps keys: no warning.
    let plain = Redis::start();
    let out = ok(plain.tideq(&["queues"]));
    assert!(
        out.lines().next().unwrap().contains("(noeviction)"),
        "{out}"
    );
    assert!(!out.contains("WARNING"), "{out}");
}

/// A user not allowed `INFO`: the health panel says why instead of the Redis numbers, and
/// `tideq queues` still lists the queues.
#[test]
fn without_info_the_health_panel_says_why_and_queues_still_lists() {
    let rt = rt();
    let redis = Redis::start();
    let q = redis.queue("noinfo");
    rt.block_on(q.enqueue(b"x", with_id("a"))).unwrap();
    redis_cli(
        &redis.url,
        &[
            "ACL", "SETUSER", "noinfo", "on", ">pw", "~*", "&*", "+@all", "-info",
        ],
    );
    let url = redis.url.replace("redis://", "redis://noinfo:pw@");
    let d = Dashboard::start(&["--url", &url], &["--refresh", "3600"], &[]);
    let h = d.get("/api/health").json();
    let why = h["redis"]["error"].as_str().unwrap_or_default();
    assert!(why.starts_with("PERMISSION") && why.contains("info"), "{h}");
    assert_eq!(h["queues"][0]["name"], "noinfo");
    let out = ok(run(&["--url", &url, "queues"]));
    assert!(out.lines().next().unwrap().starts_with("redis: "), "{out}");
    assert!(out.contains("noinfo"), "{out}");
}
