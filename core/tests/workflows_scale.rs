//! Flows at the sizes users reach: 99,999 children under one parent written and cancelled, a
//! chord of 100,000 children run to its callback, 33,000 held jobs of a producer that crashed.
//! Each test reads SLOWLOG (the project's budget is 10 ms per script call) and counts what
//! happened; they run one at a time, against a reniced redis-server (common/scale.rs).

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::jobs::{drained, redis_ms};
use common::scale::*;
use common::{unique, RedisServer};
use serde_json::{json, Value};
use tideq::{
    Client, EnqueueOptions, FlowJob, Job, JobState, Queue, QueueOptions, Tasks, WorkerOptions,
};

/// How long a flow's job stays held before the workers settle it (docs/flows.md: "30 s later").
const HOLD_GRACE_MS: u64 = 30_000;

fn node(id: &str) -> FlowJob {
    FlowJob::new(id.as_bytes().to_vec()).options(EnqueueOptions {
        id: Some(id.into()),
        ..Default::default()
    })
}

fn queues(server: &RedisServer) -> (Queue, Queue) {
    let client = Client::open(&server.url).unwrap();
    let roots = Queue::new(&client, &unique("roots"), QueueOptions::default()).unwrap();
    let parts = Queue::new(&client, &unique("parts"), QueueOptions::default()).unwrap();
    (roots, parts)
}

/// `root` on `roots` with `n` children ("c0", "c1", ...) on `parts`.
async fn big_flow(roots: &Queue, parts: &Queue, root: &str, n: usize) {
    let kids: Vec<FlowJob> = (0..n).map(|i| node(&format!("c{i}")).on(parts)).collect();
    let made = roots.enqueue_flow(node(root).children(kids)).await.unwrap();
    assert!(made.created);
}

/// Asserts that the calls since `slowlog_from_now` stayed within the 10 ms budget, `before` the
/// script calls counted when the window opened. This 2-core machine, shared with other builds,
/// stalls a call now and then whatever it does (one ~1 ms script in 100 to 500 met a 10-70 ms
/// stall here while others compiled; a 1 ms Lua loop alone, about one in 1,000): at most one in
/// a hundred of the window's calls may be over. A call that is slow by itself is slow every time;
/// `enqueue.rs`'s unit test holds each write's size.
fn assert_calls_short(server: &RedisServer, before: u64) -> u64 {
    let calls = script_calls(server) - before;
    let slow = slow_calls(server, 10_000);
    let slow: Vec<String> = slow
        .into_iter()
        .map(|c| c.chars().take(200).collect())
        .collect();
    eprintln!("{} of {calls} script calls over 10 ms", slow.len());
    assert!(
        slow.len() as u64 <= (calls / 100).max(1),
        "{} of {calls} script calls over 10 ms: {slow:#?}",
        slow.len()
    );
    calls
}

fn count(server: &RedisServer, cmd: &str, key: String) -> u64 {
    redis::cmd(cmd).arg(key).query(&mut server.conn()).unwrap()
}

/// Issue 40, item 9: 99,999 children made 13 calls over 10 ms (worst 51 ms: the parent's list
/// of children written in one call).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enqueueing_99999_children_makes_no_call_over_10_ms() {
    let _serial = one_at_a_time().await;
    let server = server();
    let (roots, parts) = queues(&server);
    slowlog_from_now(&server, 10_000);
    let before = script_calls(&server);
    let started = Instant::now();
    big_flow(&roots, &parts, "big", 99_999).await;
    eprintln!("99,999 children written in {:?}", started.elapsed());
    let _ = assert_calls_short(&server, before);
    let info = roots.get("big").await.unwrap().unwrap();
    assert_eq!(
        (info.state, info.children_pending),
        (JobState::Waiting, Some(99_999))
    );
    let page = roots.children("big", 99_990, 100).await.unwrap();
    assert_eq!(page.total, 99_999);
    assert_eq!(page.children.last().map(|c| c.id.as_str()), Some("c99998"));
    assert_eq!(parts.stats().await.unwrap().ready, 99_999);
}

/// Issue 40, item 9: cancelling that root made 7 calls over 10 ms (worst 36 ms: its whole list
/// of children read in one call), and took one call per child.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_root_of_99999_children_cancels_them_all_with_no_call_over_10_ms() {
    let _serial = one_at_a_time().await;
    let server = server();
    let (roots, parts) = queues(&server);
    big_flow(&roots, &parts, "big", 99_999).await;
    slowlog_from_now(&server, 10_000);
    let before = script_calls(&server);
    let started = Instant::now();
    roots.cancel("big").await.unwrap();
    eprintln!("99,999 children cancelled in {:?}", started.elapsed());
    let calls = assert_calls_short(&server, before);
    // Not one call per child (100,205 calls, the root's list read whole in one): pages of them.
    assert!(calls < 99_999 / 20, "{calls} script calls");
    let s = parts.stats().await.unwrap();
    assert_eq!((s.ready, s.cancelled), (0, 99_999));
    assert!(roots.get("big").await.unwrap().is_none());
    assert_eq!(
        count(&server, "HLEN", format!("tideq:{{{}}}:meta", parts.name())),
        0
    );
    // The cascade's work list and the children's notices are gone.
    let left: Vec<String> = redis::cmd("KEYS")
        .arg("*:fs:*")
        .query(&mut server.conn())
        .unwrap();
    assert_eq!(left, Vec::<String>::new());
    assert_eq!(
        count(&server, "LLEN", format!("tideq:{{{}}}:fout", parts.name())),
        0
    );
}

/// Issue 46: a chord of 100,000 children (100,001 jobs) was refused. It is written, its
/// children's results are relayed to the callback, and the callback reads all of them, in
/// order, each call under 10 ms.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chord_of_100000_children_runs_its_callback_once_with_every_result_no_call_over_10_ms() {
    let _serial = one_at_a_time().await;
    let server = server();
    let (roots, parts) = queues(&server);
    let n: i64 = 100_000;
    let kids: Vec<FlowJob> = (0..n)
        .map(|i| FlowJob::task("double", &i).unwrap().on(&parts))
        .collect();
    let sum = FlowJob::step("sum").options(EnqueueOptions {
        id: Some("sum".into()),
        ..Default::default()
    });
    slowlog_from_now(&server, 10_000);
    let before = script_calls(&server);
    roots
        .enqueue_flow(FlowJob::chord(kids, sum).unwrap())
        .await
        .unwrap();
    let opts = || WorkerOptions {
        concurrency: 50,
        ..drained()
    };
    let double = Tasks::new().task("double", |i: i64, _job: Job| async move {
        Ok::<Value, String>(json!(2 * i))
    });
    let w = parts.work_tasks(opts(), double).unwrap();
    let done = tokio::time::timeout(Duration::from_secs(600), w.join())
        .await
        .expect("the children ran");
    assert_eq!(done.completed, n as u64);
    let runs = Arc::new(AtomicU64::new(0));
    let r = runs.clone();
    let sum = Tasks::new().task("sum", move |all: Vec<i64>, _job: Job| {
        let r = r.clone();
        async move {
            r.fetch_add(1, Ordering::SeqCst);
            let in_order = all.iter().enumerate().all(|(i, v)| *v == 2 * i as i64);
            Ok::<Value, String>(json!({ "count": all.len(), "in_order": in_order }))
        }
    });
    let w = roots.work_tasks(opts(), sum).unwrap();
    tokio::time::timeout(Duration::from_secs(120), w.join())
        .await
        .expect("the callback ran");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let done = roots.get("sum").await.unwrap().unwrap();
    let result: Value = serde_json::from_slice(done.result.as_deref().unwrap()).unwrap();
    assert_eq!(result, json!({ "count": n, "in_order": true }));
    let _ = assert_calls_short(&server, before);
}

/// Issue 40, item 22: a crashed producer's held jobs sat their 30 s grace, then went 1,000 per
/// ~5 s per queue (33,000 took 116 s). They go at full speed once their grace is over, in calls
/// under 10 ms, and whole: here the root was never written, so none of them runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_producers_33000_held_jobs_are_settled_at_once_when_their_grace_is_over() {
    let _serial = one_at_a_time().await;
    let server = server();
    let (roots, parts) = queues(&server);
    let n = 33_000;
    big_flow(&roots, &parts, "lost", n).await;
    // As a producer that died before writing the root leaves them: every child held (not in
    // the ready list), its grace over in 10 s, and no root.
    let base = |q: &Queue| format!("tideq:{{{}}}:", q.name());
    let mut c = server.conn();
    let due_in = 10_000;
    let held_at = redis_ms(&server) + due_in - HOLD_GRACE_MS;
    let root = format!("0\tlost\t{}", base(&roots));
    let ids: Vec<String> = (0..n).map(|i| format!("c{i}")).collect();
    for run in ids.chunks(1000) {
        let mut pipe = redis::pipe();
        let mut hold = redis::cmd("ZADD");
        hold.arg(format!("{}fhold", base(&parts)));
        let mut roots_of = redis::cmd("HSET");
        roots_of.arg(format!("{}froot", base(&parts)));
        for id in run {
            hold.arg(held_at).arg(id);
            roots_of.arg(id).arg(&root);
        }
        pipe.add_command(hold).add_command(roots_of);
        let () = pipe.query(&mut c).unwrap();
    }
    let () = redis::pipe()
        .del(format!("{}ready", base(&parts)))
        .hdel(format!("{}meta", base(&roots)), "lost")
        .query(&mut c)
        .unwrap();
    let held = || count(&server, "ZCARD", format!("{}fhold", base(&parts)));
    assert_eq!(held(), n as u64);
    slowlog_from_now(&server, 10_000);
    let before = script_calls(&server);
    let w = parts
        .work(drained(), |_j: Job| async { Ok::<(), String>(()) })
        .unwrap();
    let started = Instant::now();
    let due = Duration::from_millis(due_in);
    while held() > 0 && started.elapsed() < due + Duration::from_secs(120) {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let took = started.elapsed();
    eprintln!(
        "{n} held jobs settled {:?} after their grace was over",
        took.saturating_sub(due)
    );
    let stats = tokio::time::timeout(Duration::from_secs(30), w.join())
        .await
        .expect("the worker stops once nothing is pending");
    assert_eq!(held(), 0);
    // Before, 33 rounds 5 s apart: 165 s past the grace. Now one round of 33 pages.
    assert!(
        took < due + Duration::from_secs(20),
        "settled {:?} after the grace was over",
        took.saturating_sub(due)
    );
    assert_eq!(stats.completed, 0, "no job of a flow never sealed ran");
    let s = parts.stats().await.unwrap();
    assert_eq!((s.enqueued, s.ready), (0, 0));
    assert_eq!(count(&server, "HLEN", format!("{}meta", base(&parts))), 0);
    let _ = assert_calls_short(&server, before);
}
