//! Capped-queue benchmark: the raw Redis ceiling (`redis-benchmark` running EVALSHA of the push
//! script) and tideq's operations from Rust, Python and Node against one redis-server, printed as
//! items/s and ratios to the ceiling. `make bench` (or `cargo run --release -p tideq-bench --bin
//! capped -- [N] [--smoke]`; `--smoke`: a few thousand items, to check it runs, as `make test`
//! does in a debug build).

use std::process::Command;
use std::time::Instant;

use serde_json_lite::parse_line;
use tideq::{CappedOptions, CappedQueue, Client};
use tideq_testing::RedisServer;

const PUSH_SCRIPT: &str = include_str!("../../../core/src/lua/push_capped.lua");
/// The library push_capped.lua includes (the core flattens `--#include` lines the same way).
const PUSH_LIB: &str = include_str!("../../../core/src/lua/lib/capped_push.lua");

/// The keys push_capped.lua takes for one group, in its header's order: registry, registry_set,
/// live, stats, wake, then the group's list and wake list.
const PUSH_KEYS: [&str; 7] = [
    "b:{c}:reg",
    "b:{c}:regset",
    "b:{c}:live",
    "b:{c}:stats",
    "b:{c}:wake",
    "b:{c}:g",
    "b:{c}:w",
];

/// The push script's arguments: capacity 1000, no TTL, one group `g`, one 64-byte item.
fn push_args() -> Vec<String> {
    let mut a: Vec<String> = ["1000", "0", "1", "g", "1"].map(String::from).to_vec();
    a.push("x".repeat(64));
    a
}

/// Items the push script has counted (the stats hash's `pushed`).
fn pushed(raw: &mut redis::Connection) -> u64 {
    redis::cmd("HGET")
        .arg(PUSH_KEYS[3])
        .arg("pushed")
        .query::<Option<u64>>(raw)
        .unwrap()
        .unwrap_or(0)
}

/// Clients redis-benchmark runs.
const CLIENTS: usize = 50;

/// redis-benchmark's requests/s for EVALSHA of the push script, `pipeline` commands per send,
/// about `n` requests (rounded up to whole sends of every client: redis-benchmark sends that
/// many whatever `-n` says). Every call must have pushed its item (the script's own counter says so): a call
/// that fails is answered as fast as one that works, so a ceiling measured over errors is no
/// ceiling. `Err` says why there is none.
fn ceiling(
    port: u16,
    raw: &mut redis::Connection,
    sha: &str,
    pipeline: usize,
    n: usize,
) -> Result<f64, String> {
    let mut one = redis::cmd("EVALSHA");
    one.arg(sha)
        .arg(PUSH_KEYS.len())
        .arg(&PUSH_KEYS[..])
        .arg(push_args());
    if let Err(e) = one.query::<redis::Value>(raw) {
        return Err(format!("the push script refuses the benchmark's call: {e}"));
    }
    let n = n.div_ceil(CLIENTS * pipeline) * CLIENTS * pipeline;
    let before = pushed(raw);
    let out = Command::new("redis-benchmark")
        .args(["-h", "127.0.0.1", "-p", &port.to_string(), "-q"])
        .args(["-c", &CLIENTS.to_string()])
        .args(["-n", &n.to_string(), "-P", &pipeline.to_string()])
        .arg("EVALSHA")
        .arg(sha)
        .arg(PUSH_KEYS.len().to_string())
        .args(PUSH_KEYS)
        .args(push_args())
        .output()
        .map_err(|e| format!("redis-benchmark (package redis-tools) is needed: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let counted = pushed(raw) - before;
    if counted != n as u64 {
        return Err(format!(
            "{counted} of {n} calls pushed their item: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    // "EVALSHA ...: 123456.79 requests per second, p50=..." (the last \r-separated segment)
    let last = text
        .split(['\r', '\n'])
        .rfind(|l| l.contains("requests per second"))
        .unwrap_or("");
    last.rsplit(": ")
        .next()
        .and_then(|s| s.split_whitespace().next())
        .and_then(|s| s.parse::<f64>().ok())
        .filter(|v| *v > 0.0 && v.is_finite())
        .ok_or_else(|| format!("no rate in redis-benchmark's output: {text:?}"))
}

/// `v` as a percentage of `ceiling`, or "-" when there is no ceiling to divide by.
fn ratio(v: f64, ceiling: &Result<f64, String>) -> String {
    match ceiling {
        Ok(c) if *c > 0.0 => format!("{:.0}%", 100.0 * v / c),
        _ => "-".to_string(),
    }
}

#[tokio::main]
async fn main() -> tideq::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let smoke = args.iter().any(|a| a == "--smoke");
    let n: usize = args
        .iter()
        .find_map(|s| s.parse().ok())
        .unwrap_or(if smoke { 2_000 } else { 200_000 });
    let redis = RedisServer::from_env_or_start();
    // Port 0: a server named by TIDEQ_REDIS_URL, its port read from the URL.
    let port = Some(redis.port).filter(|p| *p != 0).unwrap_or_else(|| {
        redis
            .url
            .rsplit(':')
            .next()
            .unwrap()
            .trim_end_matches('/')
            .parse()
            .unwrap()
    });
    let client = Client::open(&redis.url)?;
    let mut raw = redis::Client::open(redis.url.as_str())
        .unwrap()
        .get_connection()
        .unwrap();
    let sha: String = redis::cmd("SCRIPT")
        .arg("LOAD")
        .arg(PUSH_SCRIPT.replace("--#include lib/capped_push.lua\n", PUSH_LIB))
        .query(&mut raw)
        .unwrap();
    let c1 = ceiling(port, &mut raw, &sha, 1, n);
    let c64 = ceiling(port, &mut raw, &sha, 64, n * 5);
    let shown = |c: &Result<f64, String>| match c {
        Ok(v) => format!("{v:.0}/s"),
        Err(e) => format!("not measured ({e})"),
    };
    println!(
        "ceiling (redis-benchmark, EVALSHA push_capped, 50 clients): -P 1 {}   -P 64 {}",
        shown(&c1),
        shown(&c64)
    );

    let mut results = vec![rust_bench(&client, n).await?];
    for (runtime, cmd, args) in [
        ("python", ".venv/bin/python", vec!["bench/capped_bench.py"]),
        ("node", "node", vec!["bench/capped_bench.mjs"]),
    ] {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
        let out = Command::new(cmd)
            .current_dir(root)
            .args(&args)
            .arg(&redis.url)
            .arg(n.to_string())
            .output();
        match out {
            Ok(o) if o.status.success() => {
                let text = String::from_utf8_lossy(&o.stdout);
                match text.lines().rev().find_map(parse_line) {
                    Some(r) => results.push(r),
                    None => println!("{runtime}: no result line in {text:?}"),
                }
            }
            Ok(o) => println!(
                "{runtime}: bench failed: {}",
                String::from_utf8_lossy(&o.stderr)
                    .lines()
                    .last()
                    .unwrap_or("")
            ),
            Err(e) => println!(
                "{runtime}: not run ({e}); build it first (make test or scripts/test-{runtime}.sh)"
            ),
        }
    }

    println!(
        "\n{:<8} {:<16} {:>12} {:>10} {:>10}",
        "runtime", "operation", "items/s", "vs -P 1", "vs -P 64"
    );
    for (runtime, ops) in &results {
        for (op, v) in ops {
            println!(
                "{runtime:<8} {op:<16} {v:>12.0} {:>10} {:>10}",
                ratio(*v, &c1),
                ratio(*v, &c64)
            );
        }
    }
    println!("\ntargets: push_many >= 200000/s and >= 70% of -P 64 from every runtime; pop_batch(128) >= 1000000/s from Rust");
    if let Some(e) = [&c1, &c64].into_iter().find_map(|c| c.as_ref().err()) {
        // No ratio over a ceiling that was not measured: say so and fail.
        eprintln!("bench: no ceiling, so no ratios: {e}");
        // `exit` runs no destructors: stop a private redis-server first.
        drop(redis);
        std::process::exit(1);
    }
    if results.len() < 3 {
        eprintln!("bench: {} of 3 runtimes gave results", results.len());
        drop(redis);
        std::process::exit(1);
    }
    Ok(())
}

async fn rust_bench(client: &Client, n: usize) -> tideq::Result<(String, Vec<(String, f64)>)> {
    let opts = CappedOptions {
        capacity: n * 2,
        ttl: None,
        max_age: None,
        ..Default::default()
    };
    let q = CappedQueue::new(client, &format!("bench-rs-{}", std::process::id()), opts)?;
    let item = vec![b'x'; 64];
    let mut ops = Vec::new();

    let seq = n / 10;
    let t = Instant::now();
    for i in 0..seq {
        q.push(&format!("g{}", i % 1000), &item).await?;
    }
    ops.push((
        "push_seq".to_string(),
        seq as f64 / t.elapsed().as_secs_f64(),
    ));

    let t = Instant::now();
    let mut in_flight = Vec::new();
    for i in 0..seq {
        let (q, item) = (q.clone(), item.clone());
        in_flight.push(tokio::spawn(async move {
            q.push(&format!("g{}", i % 1000), &item).await
        }));
        if in_flight.len() == 256 {
            for f in in_flight.drain(..) {
                f.await.unwrap()?;
            }
        }
    }
    for f in in_flight.drain(..) {
        f.await.unwrap()?;
    }
    ops.push((
        "push_concurrent".to_string(),
        seq as f64 / t.elapsed().as_secs_f64(),
    ));

    let items: Vec<(String, Vec<u8>)> = (0..n)
        .map(|i| (format!("m{}", i % 1000), item.clone()))
        .collect();
    let t = Instant::now();
    for chunk in items.chunks(10_000) {
        q.push_many(chunk).await?;
    }
    ops.push((
        "push_many".to_string(),
        n as f64 / t.elapsed().as_secs_f64(),
    ));

    let one: Vec<(&str, &[u8])> = (0..n).map(|_| ("one", item.as_slice())).collect();
    for chunk in one.chunks(10_000) {
        q.push_many(chunk).await?;
    }
    let t = Instant::now();
    let mut got = 0;
    while got < n {
        let b = q.pop_batch("one", 128).await?;
        if b.is_empty() {
            break;
        }
        got += b.len();
    }
    ops.push((
        "pop_batch(128)".to_string(),
        got as f64 / t.elapsed().as_secs_f64(),
    ));

    // The same with 4 batches in flight, as a consumer with concurrency would.
    for chunk in one.chunks(10_000) {
        q.push_many(chunk).await?;
    }
    let t = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..4 {
        let q = q.clone();
        tasks.push(tokio::spawn(async move {
            let mut got = 0;
            loop {
                let b = q.pop_batch("one", 128).await?;
                if b.is_empty() {
                    return Ok::<usize, tideq::Error>(got);
                }
                got += b.len();
            }
        }));
    }
    let mut got = 0;
    for t in tasks {
        got += t.await.unwrap()?;
    }
    ops.push((
        "pop_batch(128)x4".to_string(),
        got as f64 / t.elapsed().as_secs_f64(),
    ));

    // next_batch over 100 groups (also drains the m* groups left by push_many).
    let spread: Vec<(String, &[u8])> = (0..n)
        .map(|i| (format!("s{}", i % 100), item.as_slice()))
        .collect();
    for chunk in spread.chunks(10_000) {
        q.push_many(chunk).await?;
    }
    let t = Instant::now();
    let mut got = 0;
    while let Some(b) = q.next_batch(128).await? {
        got += b.items.len();
    }
    ops.push((
        "next_batch(128)".to_string(),
        got as f64 / t.elapsed().as_secs_f64(),
    ));
    Ok(("rust".to_string(), ops))
}

/// Reads the one-line JSON objects the Python and Node benches print: {"runtime":"x","op":n,...}.
mod serde_json_lite {
    pub fn parse_line(line: &str) -> Option<(String, Vec<(String, f64)>)> {
        let body = line.trim().strip_prefix('{')?.strip_suffix('}')?;
        let mut runtime = None;
        let mut ops = Vec::new();
        for field in body.split(',') {
            let (k, v) = field.split_once(':')?;
            let k = k.trim().trim_matches('"').to_string();
            let v = v.trim();
            if k == "runtime" {
                runtime = Some(v.trim_matches('"').to_string());
            } else {
                ops.push((k, v.parse().ok()?));
            }
        }
        Some((runtime?, ops))
    }
}
