//! Helpers of the scale tests (scale_control, scale_listing): one test at a time, SLOWLOG, a reniced
//! redis-server, many groups filled.

use super::RedisServer;
use tideq::EnqueueOptions;

/// These tests time Redis calls (SLOWLOG times them in wall-clock time), so they run one at a
/// time: on two cores, one test filling 100,000 groups would make another's calls look slow.
pub async fn one_at_a_time() -> tokio::sync::MutexGuard<'static, ()> {
    static LOCK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    LOCK.lock().await
}

/// Calls slower than `micros`, from SLOWLOG (each as its command line, truncated). The commands a
/// script runs are logged too (client "?:0"): they are part of their script's call, left out.
pub fn slow_calls(server: &RedisServer, micros: u64) -> Vec<String> {
    let entries: Vec<redis::Value> = redis::cmd("SLOWLOG")
        .arg("GET")
        .arg(1000)
        .query(&mut server.conn())
        .unwrap();
    let mut out = Vec::new();
    for e in entries {
        if let redis::Value::Array(fields) = e {
            let took: u64 = redis::from_redis_value(fields[2].clone()).unwrap_or(0);
            let client: String = redis::from_redis_value(fields[4].clone()).unwrap_or_default();
            if client == "?:0" {
                continue;
            }
            let args: Vec<Vec<u8>> = redis::from_redis_value(fields[3].clone()).unwrap_or_default();
            if took > micros {
                let args: Vec<String> = args
                    .iter()
                    .map(|a| String::from_utf8_lossy(a).into_owned())
                    .collect();
                out.push(format!("{took} µs: {}", args.join(" ")));
            }
        }
    }
    out
}

/// A redis-server for a scale test, reniced ahead of the test's own threads: SLOWLOG times a call
/// from start to end, so a Redis the OS preempts for them (2 cores) shows calls as slow as the
/// preemption. (Left as it is where renice is not allowed.)
pub fn server() -> RedisServer {
    let server = RedisServer::start();
    let info: String = redis::cmd("INFO")
        .arg("server")
        .query(&mut server.conn())
        .unwrap();
    if let Some(pid) = info.lines().find_map(|l| l.strip_prefix("process_id:")) {
        let _ = std::process::Command::new("renice")
            .args(["-n", "-10", "-p", pid.trim()])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status();
    }
    server
}

/// Starts SLOWLOG afresh, logging every call over `micros`.
pub fn slowlog_from_now(server: &RedisServer, micros: u64) {
    let mut c = server.conn();
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("slowlog-log-slower-than")
        .arg(micros)
        .query(&mut c)
        .unwrap();
    let _: () = redis::cmd("SLOWLOG").arg("RESET").query(&mut c).unwrap();
}

/// `groups` groups with `per` jobs each, enqueued in parts of 10,000.
pub async fn fill(q: &tideq::Queue, groups: usize, per: usize) {
    let mut all = Vec::new();
    for g in 0..groups {
        for j in 0..per {
            all.push((
                format!("{g}.{j}").into_bytes(),
                EnqueueOptions {
                    group: Some(format!("tenant-{g}")),
                    ..Default::default()
                },
            ));
        }
    }
    for part in all.chunks(10_000) {
        q.enqueue_many(part).await.unwrap();
    }
}

/// The script calls Redis ran so far (EVALSHA and EVAL, from INFO commandstats).
#[allow(dead_code)]
pub fn script_calls(server: &RedisServer) -> u64 {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query(&mut server.conn())
        .unwrap();
    let calls = tideq_testing::command_calls(&info);
    calls.get("evalsha").copied().unwrap_or(0) + calls.get("eval").copied().unwrap_or(0)
}

/// The script calls over 10 ms a window of `calls` script calls may hold and still pass: 1 and 1
/// in a hundred more. On a 2-core machine shared with builds any command meets a stall now and
/// then, often a few together; a call whose size is unbounded is slow every time it runs, which
/// this still catches.
#[allow(dead_code)]
pub fn stalls_allowed(calls: u64) -> usize {
    1 + (calls / 100) as usize
}
