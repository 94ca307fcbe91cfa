//! What the CLI's tests share: a private `redis-server` on a free loopback port, running the
//! `tideq` binary, reading its output, making dead jobs.
#![allow(dead_code)]

use std::net::TcpListener;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;
use tideq::{Client, EnqueueOptions, JobState, Queue, QueueOptions};

pub struct Redis {
    pub url: String,
    child: std::process::Child,
    dir: std::path::PathBuf,
}

impl Redis {
    pub fn start() -> Self {
        let port = free_port();
        let dir = std::env::temp_dir().join(unique("tideq-cli-redis"));
        std::fs::create_dir_all(&dir).unwrap();
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .args(["--dir", dir.to_str().unwrap()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server must be installed (scripts/ensure-deps.sh)");
        let url = format!("redis://127.0.0.1:{port}");
        let client = Client::open(&url).unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while rt().block_on(client.ping()).is_err() {
            assert!(Instant::now() < deadline, "redis-server did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        Redis { url, child, dir }
    }

    pub fn queue(&self, name: &str) -> Queue {
        Queue::new(
            &Client::open(&self.url).unwrap(),
            name,
            QueueOptions::default(),
        )
        .unwrap()
    }

    /// Runs `tideq --url <this server> args...` with stdin not a terminal.
    pub fn tideq(&self, args: &[&str]) -> Output {
        run(&[&["--url", &self.url], args].concat())
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

pub fn unique(prefix: &str) -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    format!(
        "{prefix}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

pub fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

pub fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tideq"))
        .args(args)
        .env_remove("TIDEQ_REDIS_URL")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).unwrap()
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8(out.stderr.clone()).unwrap()
}

/// Exit code 0, and stdout.
pub fn ok(out: Output) -> String {
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout: {}\nstderr: {}",
        stdout(&out),
        stderr(&out)
    );
    stdout(&out)
}

pub fn json(out: Output) -> Value {
    let text = ok(out);
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("not one JSON document ({e}): {text}"))
}

/// A job enqueued with one attempt, leased and failed: dead.
pub async fn dead_job(q: &Queue, id: &str) {
    let opts = EnqueueOptions {
        id: Some(id.to_string()),
        max_attempts: Some(1),
        ..Default::default()
    };
    q.enqueue(b"doomed", opts).await.unwrap();
    let jobs = q.lease_jobs(10, Duration::from_secs(30)).await.unwrap();
    for job in jobs {
        q.fail(&job, "boom").await.unwrap();
    }
    assert_eq!(q.get(id).await.unwrap().unwrap().state, JobState::Dead);
}

pub fn with_id(id: &str) -> EnqueueOptions {
    EnqueueOptions {
        id: Some(id.to_string()),
        ..Default::default()
    }
}
