//! The dashboard and the CLI at the sizes operators reach: a queue's view with 10,000 schedules
//! and 10,001 live workers carries a page of each (not all of them), with no script call over
//! 10 ms (SLOWLOG); an offset far down the ready list is refused, naming the walk by cursor.

mod common;

use std::process::Command;

use common::dashboard::*;
use common::*;
use serde_json::Value;

/// `redis-cli -p <port> --json args...`: the reply as JSON.
fn cli(redis: &Redis, args: &[&str]) -> Value {
    let port = redis.url.rsplit(':').next().unwrap();
    let out = Command::new("redis-cli")
        .args(["-p", port, "--json"])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
}

/// The script calls Redis ran so far.
fn script_calls(redis: &Redis) -> u64 {
    command_calls(&redis.url)
        .get("evalsha")
        .copied()
        .unwrap_or(0)
}

/// Asserts that of the `calls` script calls since the last `SLOWLOG RESET`, none took over
/// 10 ms but for 1 and 1 in a hundred more: on this 2-core machine shared with builds, any
/// command meets a stall now and then, often a few together.
fn assert_short(redis: &Redis, calls: u64) {
    let log = cli(redis, &["SLOWLOG", "GET", "1000"]);
    let slow: Vec<String> = log
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e[2].as_u64().unwrap_or(0) > 10_000)
        .map(|e| format!("{} µs: {}", e[2], e[3]))
        .filter(|c| c.contains("EVALSHA"))
        .collect();
    assert!(
        slow.len() <= 1 + (calls / 100) as usize,
        "{} of {calls} script calls over 10 ms: {slow:#?}",
        slow.len()
    );
}

// Issue 40, item 10: 10,000 schedules made each queue view 1.26 MB (every schedule in it), read
// in 12-16 ms calls; 10,001 workers would all be in it too.
#[test]
fn a_queue_view_with_10000_schedules_and_10001_workers_carries_a_page_of_each() {
    let rt = rt();
    let redis = Redis::start();
    let q = redis.queue("crowded");
    rt.block_on(async {
        q.enqueue(b"x", Default::default()).await.unwrap();
        for i in 0..10_000 {
            let opts = tideq::EnqueueOptions {
                task: Some("report".into()),
                ..Default::default()
            };
            q.upsert_schedule(
                &format!("s{i:05}"),
                tideq::Every::interval(std::time::Duration::from_secs(3600)),
                br#"{"report":"daily","to":["ops@example.com"],"format":"pdf"}"#,
                opts,
            )
            .await
            .unwrap();
        }
    });
    // Live workers, as their reports write them (docs/data-model.md, "Workers").
    let now = cli(&redis, &["TIME"])[0]
        .as_str()
        .unwrap()
        .parse::<u64>()
        .unwrap()
        * 1000;
    for part in (0..10_001u64).collect::<Vec<_>>().chunks(1000) {
        let mut zadd = vec!["ZADD".to_string(), "tideq:{crowded}:workers".to_string()];
        let mut hset = vec!["HSET".to_string(), "tideq:{crowded}:winfo".to_string()];
        for &i in part {
            let id = format!("w{i:05}");
            zadd.extend([(now - i).to_string(), id.clone()]);
            let entry = serde_json::json!({
                "queue": "crowded", "host": "box", "pid": i, "runtime": "python",
                "version": "0", "concurrency": 4, "started": i, "running": 0, "ids": [],
            });
            hset.extend([id, entry.to_string()]);
        }
        for args in [zadd, hset] {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            cli(&redis, &args);
        }
    }
    let d = Dashboard::start(&["--url", &redis.url], &[], &[]);
    cli(
        &redis,
        &["CONFIG", "SET", "slowlog-log-slower-than", "10000"],
    );
    cli(&redis, &["SLOWLOG", "RESET"]);
    let before = script_calls(&redis);
    let r = d.get("/api/queues/crowded");
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.body.len() < 100_000, "a view of {} bytes", r.body.len());
    let v = r.json();
    let names: Vec<&str> = v["schedules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    let first: Vec<String> = (0..50).map(|i| format!("s{i:05}")).collect();
    assert_eq!(names, first, "the first page, by name");
    assert_eq!(v["schedules_total"], 10_000);
    assert_eq!(v["workers"].as_array().unwrap().len(), 50);
    assert_eq!(v["workers_total"], 10_001);
    assert_eq!(v["workers"][0]["id"], "w00000", "in the order they started");
    // The pages further on.
    let v = d
        .get("/api/queues/crowded?schedules=9990&workers=10000")
        .json();
    assert_eq!(v["schedules"].as_array().unwrap().len(), 10);
    assert_eq!(v["schedules"][0]["name"], "s09990");
    assert_eq!(v["schedules_offset"], 9990);
    assert_eq!(v["workers"].as_array().unwrap().len(), 1);
    assert_eq!(v["workers"][0]["id"], "w10000");
    let past = d.get("/api/queues/crowded?schedules=20000").json();
    assert_eq!(past["schedules"], serde_json::json!([]));
    // Each view reads every schedule and worker, about 200 and 500 a call (10 and 1 calls of
    // 1,000 before, the workers' past the first 1,000 dropped).
    let calls = script_calls(&redis) - before;
    assert!(
        calls >= 3 * (45 + 20),
        "three views in {calls} script calls"
    );
    assert_short(&redis, calls);
    // A bad offset is 400.
    let bad = d.get("/api/queues/crowded?workers=-1");
    assert_eq!(bad.status, 400, "{}", bad.body);
}

// Issue 40, item 7: `?offset=` on the ready list walked every group in one script, with no cap.
#[test]
fn a_far_offset_on_the_ready_list_is_refused_naming_the_walk_by_cursor() {
    let rt = rt();
    let redis = Redis::start();
    let q = redis.queue("far");
    rt.block_on(async {
        for g in ["a", "b", "c"] {
            let opts = tideq::EnqueueOptions {
                group: Some(g.to_string()),
                ..Default::default()
            };
            q.enqueue(b"x", opts).await.unwrap();
        }
    });
    let d = Dashboard::start(&["--url", &redis.url], &[], &[]);
    let near = d.get("/api/queues/far/jobs?state=ready&offset=1");
    assert_eq!(near.status, 200, "{}", near.body);
    assert_eq!(near.json()["jobs"].as_array().unwrap().len(), 2);
    let far = d.get("/api/queues/far/jobs?state=ready&offset=10001");
    assert_eq!(far.status, 400, "{}", far.body);
    assert!(far.body.contains("jobs_page"), "{}", far.body);
    // Other states' offsets cost a rank lookup: not refused.
    let delayed = d.get("/api/queues/far/jobs?state=delayed&offset=50000");
    assert_eq!(delayed.status, 200, "{}", delayed.body);
    // The CLI says the same.
    let out = redis.tideq(&["jobs", "far", "ready", "--offset", "10001"]);
    assert_ne!(out.status.code(), Some(0));
    assert!(stderr(&out).contains("jobs_page"), "{}", stderr(&out));
}
