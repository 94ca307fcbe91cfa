//! Waiting for jobs at scale: N concurrent `wait()`s from one process (Rust in this process,
//! Python and Node as child processes), on a private redis-server. For each runtime: how many
//! connections the waits added, and how long after its job finished each wait returned (p50,
//! p99, max: the handler returns the time it finished, in µs since the epoch, and the waiter
//! subtracts it from the time it got it); then how long 20 waits with a 50 ms timeout took.
//!
//! Usage: `cargo run --release -p tideq-bench --bin waits -- [--n 10000] [--rust-only]`
//! (`make bench-waits`; the Python and Node runs need the bindings built, e.g. by `make test`).

use std::io::BufRead;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tideq::{Client, EnqueueOptions, Job, Queue, QueueOptions, WorkerOptions};
use tideq_testing::RedisServer;

/// What one runtime's waits measured.
#[derive(Debug, Default)]
struct Row {
    ok: usize,
    connections: i64,
    p50: f64,
    p99: f64,
    max: f64,
    timeout_50ms: f64,
}

fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0)
}

fn info(url: &str, field: &str) -> i64 {
    let mut c = redis::Client::open(url).unwrap().get_connection().unwrap();
    let text: String = redis::cmd("INFO").query(&mut c).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

fn waiting(url: &str, queue: &str) -> usize {
    let mut c = redis::Client::open(url).unwrap().get_connection().unwrap();
    redis::cmd("HLEN")
        .arg(format!("tideq:{{{queue}}}:waiters"))
        .query(&mut c)
        .unwrap()
}

/// N jobs `w<i>`, and `never` (due in a day, on queue `<queue>-idle`) for the timeout waits.
async fn prepare(client: &Client, queue: &str, n: usize) -> Queue {
    let q = Queue::new(client, queue, QueueOptions::default()).unwrap();
    let jobs: Vec<(Vec<u8>, EnqueueOptions)> = (0..n)
        .map(|i| {
            let opts = EnqueueOptions {
                id: Some(format!("w{i}")),
                ..Default::default()
            };
            (Vec::new(), opts)
        })
        .collect();
    for part in jobs.chunks(5_000) {
        q.enqueue_many(part).await.unwrap();
    }
    // On a queue of its own, so the worker that drains this one is not held by it.
    let idle = Queue::new(client, &format!("{queue}-idle"), QueueOptions::default()).unwrap();
    let later = EnqueueOptions {
        id: Some("never".into()),
        delay: Some(Duration::from_secs(86_400)),
        ..Default::default()
    };
    idle.enqueue(b"", later).await.unwrap();
    q
}

/// Waits until every wait is registered, counts the connections, then runs the jobs (the
/// handler returns when it finished) until the queue is drained.
async fn finish_all(url: &str, q: &Queue, n: usize, base: i64) -> i64 {
    let t = Instant::now();
    while waiting(url, q.name()) < n {
        assert!(
            t.elapsed() < Duration::from_secs(120),
            "the waits did not register"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let connections = info(url, "connected_clients") - base;
    let opts = WorkerOptions {
        concurrency: 100,
        stop_when_drained: true,
        poll_interval: Duration::from_millis(100),
        ..Default::default()
    };
    let w = q
        .work(opts, |_job: Job| async {
            Ok::<_, String>(now_us().to_string().into_bytes())
        })
        .unwrap();
    w.join().await;
    connections
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

async fn run_rust(url: &str, n: usize) -> Row {
    let driver = Client::open(url).unwrap();
    let q = prepare(&driver, "waits-rust", n).await;
    let base = info(url, "connected_clients");
    // The waits' own client, as a service waiting for jobs would have.
    let waiter = Queue::new(
        &Client::open(url).unwrap(),
        "waits-rust",
        QueueOptions::default(),
    )
    .unwrap();
    let waits: Vec<_> = (0..n)
        .map(|i| {
            let q = waiter.clone();
            tokio::spawn(async move {
                let out = q
                    .wait(&format!("w{i}"), Some(Duration::from_secs(120)))
                    .await;
                let got = now_us();
                out.ok().and_then(|o| {
                    let done: u64 = String::from_utf8(o.result?).ok()?.parse().ok()?;
                    Some(got.saturating_sub(done) as f64 / 1000.0)
                })
            })
        })
        .collect();
    let connections = finish_all(url, &q, n, base).await;
    let mut lat: Vec<f64> = Vec::new();
    for w in waits {
        if let Some(ms) = w.await.unwrap() {
            lat.push(ms);
        }
    }
    lat.sort_by(|a, b| a.total_cmp(b));
    let idle = Queue::new(waiter.client(), "waits-rust-idle", QueueOptions::default()).unwrap();
    let mut timeout_50ms: f64 = 0.0;
    for _ in 0..20 {
        let t = Instant::now();
        let _ = idle.wait("never", Some(Duration::from_millis(50))).await;
        timeout_50ms = timeout_50ms.max(t.elapsed().as_secs_f64() * 1000.0);
    }
    Row {
        ok: lat.len(),
        connections,
        p50: percentile(&lat, 0.5),
        p99: percentile(&lat, 0.99),
        max: lat.last().copied().unwrap_or(f64::NAN),
        timeout_50ms,
    }
}

/// A child process's run: it starts N waits on queue `waits-<name>`, prints "ready", and prints
/// one JSON line of what it measured when its waits have returned.
async fn run_child(url: &str, n: usize, name: &str, cmd: &str, script: &str) -> Option<Row> {
    let driver = Client::open(url).unwrap();
    let queue = format!("waits-{name}");
    let q = prepare(&driver, &queue, n).await;
    let base = info(url, "connected_clients");
    let mut child = match Command::new(cmd)
        .args([script, url, &queue, &n.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
    {
        Ok(c) => c,
        Err(e) => {
            println!("  {name}: skipped ({cmd}: {e})");
            return None;
        }
    };
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    // The child's own connection is counted too: it is the one a service would have anyway.
    let connections = finish_all(url, &q, n, base).await - 1;
    let last = tokio::task::spawn_blocking(move || {
        lines.find_map(|l| l.ok().filter(|l| l.starts_with('{')))
    })
    .await
    .unwrap();
    let _ = child.wait();
    let line = last?;
    let field = |k: &str| -> f64 {
        line.split(&format!("\"{k}\":"))
            .nth(1)
            .and_then(|r| r.split([',', '}']).next())
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(f64::NAN)
    };
    Some(Row {
        ok: field("ok") as usize,
        connections,
        p50: field("p50"),
        p99: field("p99"),
        max: field("max"),
        timeout_50ms: field("timeout_50ms"),
    })
}

#[tokio::main]
async fn main() {
    let mut n = 10_000;
    let mut rust_only = false;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--n" => n = args.next().and_then(|v| v.parse().ok()).expect("--n N"),
            "--rust-only" => rust_only = true,
            other => panic!("unknown argument {other:?} (--n N, --rust-only)"),
        }
    }
    let redis = RedisServer::start_announced();
    let url = redis.url.clone();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    println!("{n} concurrent waits from one process, then their {n} jobs run (concurrency 100)");
    let mut rows = vec![("Rust", Some(run_rust(&url, n).await))];
    if !rust_only {
        let py = root.join(".venv/bin/python");
        let script = root.join("bench/waits/waits.py");
        let row = run_child(
            &url,
            n,
            "python",
            py.to_str().unwrap(),
            script.to_str().unwrap(),
        )
        .await;
        rows.push(("Python", row));
        let script = root.join("bench/waits/waits.mjs");
        let row = run_child(&url, n, "node", "node", script.to_str().unwrap()).await;
        rows.push(("Node", row));
    }
    println!(
        "\n| runtime | waits answered | connections added | finish → return p50 | p99 | max | a 50 ms timeout took (max of 20) |"
    );
    println!("|---|---|---|---|---|---|---|");
    for (name, row) in rows {
        match row {
            Some(r) => println!(
                "| {name} | {} of {n} | {} | {:.1} ms | {:.1} ms | {:.1} ms | {:.1} ms |",
                r.ok, r.connections, r.p50, r.p99, r.max, r.timeout_50ms
            ),
            None => println!("| {name} | skipped | | | | | |"),
        }
    }
    println!("\nTargets: at most 3 connections added, p99 at most 50 ms.");
}
