//! What the CLI's tests share: a private `redis-server` on a free loopback port (or a local
//! Redis Cluster), running the `tideq` binary, reading its output and scrapes, making dead jobs.
#![allow(dead_code)]

pub mod dashboard;
pub mod supervise;

use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use tideq::{Client, EnqueueOptions, JobState, Queue, QueueOptions};
pub use tideq_testing::free_port;
use tideq_testing::{RedisCluster, RedisServer};

/// A private redis-server (from `tideq-testing`), stopped on drop.
pub struct Redis {
    pub url: String,
    _server: RedisServer,
}

impl Redis {
    pub fn start() -> Self {
        let server = RedisServer::start_private(free_port(), &[]);
        Redis {
            url: server.url.clone(),
            _server: server,
        }
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

/// `redis-cli -u URL args...`: a raw command, its output.
pub fn redis_cli(url: &str, args: &[&str]) -> String {
    let out = Command::new("redis-cli")
        .arg("-u")
        .arg(url)
        .args(args)
        .output()
        .expect("redis-cli (package redis-tools)");
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
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

/// The cursor of the next page a listing wrote on stderr (`next page: --cursor 'C'`), unquoted.
pub fn next_cursor(out: &Output) -> Option<String> {
    let err = stderr(out);
    let quoted = err
        .lines()
        .find_map(|l| l.strip_prefix("next page: --cursor "))?;
    let inner = quoted.strip_prefix('\'')?.strip_suffix('\'')?;
    Some(inner.replace("'\\''", "'"))
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

/// A plain HTTP/1.0 GET (the exporter's scrape), the body; `None` until it answers.
pub fn http_get(port: u16, path: &str) -> Option<String> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    Some(out.split_once("\r\n\r\n")?.1.to_string())
}

/// `tideq <conn...> exporter --listen 127.0.0.1:<free> --refresh 0.2 <args...>`, killed on drop.
pub struct Exporter {
    pub port: u16,
    child: Child,
}

impl Exporter {
    /// Starts it and waits until it answers.
    pub fn start(conn: &[&str], args: &[&str]) -> Self {
        let port = free_port();
        let child = Command::new(env!("CARGO_BIN_EXE_tideq"))
            .args(conn)
            .args(["exporter", "--listen", &format!("127.0.0.1:{port}")])
            .args(["--refresh", "0.2"])
            .args(args)
            .env_remove("TIDEQ_REDIS_URL")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let e = Exporter { port, child };
        e.scrape_when(|_| true);
        e
    }

    /// The first scrape of /metrics whose text passes `ready` (within 15 s).
    pub fn scrape_when(&self, ready: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            if let Some(t) = http_get(self.port, "/metrics").filter(|t| ready(t)) {
                return t;
            }
            assert!(Instant::now() < deadline, "the exporter did not answer");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The value of one series in Prometheus text.
pub fn series(text: &str, name_and_labels: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name_and_labels)?.trim().parse().ok())
}

/// A local 6-node Redis Cluster (3 masters, 3 replicas, from `tideq-testing`), torn down on
/// drop.
pub struct Cluster {
    pub nodes: Vec<String>,
    _cluster: RedisCluster,
}

impl Cluster {
    pub fn start() -> Self {
        let cluster = RedisCluster::start();
        Cluster {
            nodes: cluster.nodes.clone(),
            _cluster: cluster,
        }
    }

    pub fn client(&self) -> Client {
        Client::new(tideq::Config::cluster(self.nodes.clone())).unwrap()
    }

    /// `--cluster <seed>` for every node.
    pub fn flags(&self) -> Vec<&str> {
        self.nodes
            .iter()
            .flat_map(|n| ["--cluster", n.as_str()])
            .collect()
    }

    /// Runs `tideq --cluster <seed>... args...`.
    pub fn tideq(&self, args: &[&str]) -> Output {
        run(&[&self.flags()[..], args].concat())
    }
}
