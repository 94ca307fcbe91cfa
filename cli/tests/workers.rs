//! Live workers as operators see them, against a private `redis-server`: `tideq workers`, the
//! dashboard's queue view, and the exporter's `tideq_workers` / `tideq_workers_busy`, with a
//! worker busy with long jobs (it does not fetch; its lease renewals keep it listed).

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::dashboard::*;
use common::*;
use tideq::{Job, Queue};

/// A runtime whose threads keep the worker going while the test runs the binary.
fn threaded() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Starts a worker holding two jobs until `release` is set, with a 600 ms lease (renewed every
/// 200 ms), and waits until it is listed running both; then forgets its fetch's report, so that
/// only its renewals show it.
fn busy_worker(
    redis: &Redis,
    rt: &tokio::runtime::Runtime,
    q: &Queue,
    release: &Arc<AtomicBool>,
) -> tideq::Worker {
    let release = release.clone();
    rt.block_on(async {
        q.enqueue(b"a", with_id("long-a")).await.unwrap();
        q.enqueue(b"b", with_id("long-b")).await.unwrap();
    });
    let _in = rt.enter();
    let opts = tideq::WorkerOptions {
        concurrency: 2,
        lease: Duration::from_millis(600),
        ..Default::default()
    };
    let w = q
        .work(opts, move |_job: Job| {
            let release = release.clone();
            async move {
                while !release.load(Ordering::SeqCst) {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Ok::<(), String>(())
            }
        })
        .unwrap();
    let running = || rt.block_on(q.workers()).unwrap().first().map(|w| w.running);
    let deadline = Instant::now() + Duration::from_secs(5);
    while running() != Some(2) {
        assert!(Instant::now() < deadline, "the worker was not listed");
        std::thread::sleep(Duration::from_millis(20));
    }
    forget_reports(&redis.url, q.name());
    let deadline = Instant::now() + Duration::from_secs(3);
    while running() != Some(2) {
        assert!(
            Instant::now() < deadline,
            "the renewals did not list the worker"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    w
}

/// Deletes the queue's `workers` and `winfo` keys (an inline command over a plain socket).
fn forget_reports(url: &str, queue: &str) {
    let port: u16 = url.rsplit(':').next().unwrap().parse().unwrap();
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.write_all(format!("DEL tideq:{{{queue}}}:workers tideq:{{{queue}}}:winfo\r\n").as_bytes())
        .unwrap();
    let mut reply = [0u8; 64];
    let n = s.read(&mut reply).unwrap();
    assert!(
        reply[..n].starts_with(b":"),
        "{:?}",
        String::from_utf8_lossy(&reply[..n])
    );
}

#[test]
fn workers_lists_a_worker_busy_with_long_jobs_as_core_does() {
    let redis = Redis::start();
    let rt = threaded();
    let q = redis.queue("busy");
    let release = Arc::new(AtomicBool::new(false));
    let w = busy_worker(&redis, &rt, &q, &release);
    let v = json(redis.tideq(&["workers", "busy", "--json"]));
    let me = &v[0];
    assert_eq!(
        me["pid"].as_u64(),
        Some(u64::from(std::process::id())),
        "{v}"
    );
    assert_eq!(me["runtime"], "rust");
    assert_eq!(me["running"].as_u64(), Some(2));
    assert_eq!(me["running_ids"], serde_json::json!(["long-a", "long-b"]));
    let id = me["id"].as_str().unwrap().to_string();
    let text = ok(redis.tideq(&["workers", "busy"]));
    let head = text.lines().next().unwrap_or("");
    for col in [
        "ID",
        "HOST",
        "PID",
        "RUNTIME",
        "CONCURRENCY",
        "RUNNING",
        "STARTED",
        "LAST SEEN",
    ] {
        assert!(head.contains(col), "{text}");
    }
    assert!(text.contains(&id) && text.contains("rust"), "{text}");
    // The dashboard's queue view shows it too.
    let d = Dashboard::start(&["--url", &redis.url], &[], &[]);
    let view = d.get("/api/queues/busy").json();
    assert_eq!(view["workers"][0]["id"], id.as_str(), "{view}");
    assert_eq!(view["workers"][0]["running"].as_u64(), Some(2), "{view}");
    release.store(true, Ordering::SeqCst);
    rt.block_on(w.shutdown());
    assert!(ok(redis.tideq(&["workers", "busy"])).contains("(no workers"));
    assert_eq!(
        json(redis.tideq(&["workers", "busy", "--json"])),
        serde_json::json!([])
    );
}

#[test]
fn the_exporter_counts_a_worker_busy_with_long_jobs() {
    let redis = Redis::start();
    let rt = threaded();
    let q = redis.queue("held");
    let release = Arc::new(AtomicBool::new(false));
    let w = busy_worker(&redis, &rt, &q, &release);
    let text = Exporter::start(&["--url", &redis.url], &[]).scrape_when(|_| true);
    assert_eq!(
        series(&text, "tideq_workers{queue=\"held\"}"),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        series(&text, "tideq_workers_busy{queue=\"held\"}"),
        Some(1.0),
        "{text}"
    );
    release.store(true, Ordering::SeqCst);
    rt.block_on(w.shutdown());
}

/// libfaketime, to run a reader with its clock moved from Redis's (`scripts/ensure-deps.sh`
/// installs it); `None` when it is not there (the test then says so and returns).
fn libfaketime() -> Option<&'static str> {
    let found = [
        "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
        "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
        "/usr/lib/faketime/libfaketime.so.1",
    ]
    .into_iter()
    .find(|p| std::path::Path::new(p).exists());
    if found.is_none() {
        eprintln!("skipped: libfaketime is not installed (scripts/ensure-deps.sh installs it)");
    }
    found
}

/// `tideq` with its clock moved by `offset` ("+50s", "-120s"): the command, not yet run.
fn skewed(lib: &str, offset: &str, args: &[&str]) -> std::process::Command {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_tideq"));
    cmd.args(args)
        .env_remove("TIDEQ_REDIS_URL")
        .env("LD_PRELOAD", lib)
        .env("FAKETIME", offset)
        .env("FAKETIME_DONT_FAKE_MONOTONIC", "1")
        .stdin(std::process::Stdio::null());
    cmd
}

/// Runs a command on the server over a plain socket (RESP), its reply's first line.
fn command(url: &str, args: &[&str]) -> String {
    let port: u16 = url.rsplit(':').next().unwrap().parse().unwrap();
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let mut req = format!("*{}\r\n", args.len());
    for a in args {
        req.push_str(&format!("${}\r\n{a}\r\n", a.len()));
    }
    s.write_all(req.as_bytes()).unwrap();
    let mut reply = [0u8; 256];
    let n = s.read(&mut reply).unwrap();
    String::from_utf8_lossy(&reply[..n]).to_string()
}

// Issue 40, item 13: `tideq workers` and `tideq_workers` compared the reader's clock with
// Redis's: a reader 50 s ahead listed no workers, one 120 s behind listed dead ones.
#[test]
fn who_is_alive_is_told_by_the_redis_clock_whatever_the_readers_clock() {
    let Some(lib) = libfaketime() else { return };
    let redis = Redis::start();
    let rt = rt();
    let q = redis.queue("clocks");
    rt.block_on(q.enqueue(b"x", Default::default())).unwrap();
    // Two workers by the Redis clock: one seen 5 s ago, one seen 60 s ago (gone).
    let time = command(&redis.url, &["TIME"]);
    let secs: u64 = time.lines().nth(2).unwrap().parse().unwrap();
    let now = secs * 1000;
    let workers = "tideq:{clocks}:workers";
    for (id, seen) in [("alive", now - 5_000), ("gone", now - 60_000)] {
        let r = command(&redis.url, &["ZADD", workers, &seen.to_string(), id]);
        assert!(r.starts_with(':'), "{r}");
    }
    for offset in ["+50s", "-120s", "+0s"] {
        let out = skewed(
            lib,
            offset,
            &["--url", &redis.url, "workers", "clocks", "--json"],
        )
        .output()
        .unwrap();
        let v = json(out);
        let ids: Vec<&str> = v
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, ["alive"], "a reader's clock {offset}");
        // The exporter's count, from a process with the same clock.
        let port = free_port();
        let mut exporter = skewed(lib, offset, &["--url", &redis.url, "exporter"])
            .args(["--listen", &format!("127.0.0.1:{port}"), "--refresh", "0.2"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(15);
        let workers = loop {
            let n = http_get(port, "/metrics")
                .and_then(|t| series(&t, "tideq_workers{queue=\"clocks\"}"));
            if let Some(n) = n {
                break n;
            }
            assert!(Instant::now() < deadline, "the exporter did not answer");
            std::thread::sleep(Duration::from_millis(50));
        };
        let _ = exporter.kill();
        let _ = exporter.wait();
        assert_eq!(workers, 1.0, "the exporter's clock {offset}");
    }
}
