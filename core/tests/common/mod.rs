//! Test harness: every test gets a real `redis-server` on a free loopback port in its own temp
//! dir (or the server at `TIDEQ_TEST_REDIS_URL`, isolated by unique queue names).
#![allow(dead_code)]

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

pub struct RedisServer {
    pub port: u16,
    pub url: String,
    child: Option<Child>,
    dir: PathBuf,
    extra: Vec<String>,
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A unique name per call, so tests sharing a server never see each other's keys.
pub fn unique(prefix: &str) -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    format!(
        "{prefix}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

impl RedisServer {
    /// A private server, or the shared one named by `TIDEQ_TEST_REDIS_URL`.
    pub fn start() -> Self {
        if let Ok(url) = std::env::var("TIDEQ_TEST_REDIS_URL") {
            return RedisServer {
                port: 0,
                url,
                child: None,
                dir: PathBuf::new(),
                extra: Vec::new(),
            };
        }
        Self::start_private(free_port(), &[])
    }

    /// Always a private server on `port` (for tests that restart or reconfigure it).
    pub fn start_private(port: u16, extra: &[&str]) -> Self {
        let dir = std::env::temp_dir().join(unique("tideq-redis"));
        std::fs::create_dir_all(&dir).unwrap();
        let mut server = RedisServer {
            port,
            url: format!("redis://127.0.0.1:{port}"),
            child: None,
            dir,
            extra: extra.iter().map(|s| s.to_string()).collect(),
        };
        server.spawn();
        server
    }

    fn spawn(&mut self) {
        let log = std::fs::File::create(self.dir.join("redis.log")).unwrap();
        let child = Command::new("redis-server")
            .args([
                "--port",
                &self.port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .args(["--dir", self.dir.to_str().unwrap()])
            .args(&self.extra)
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .stdin(Stdio::null())
            .spawn()
            .expect("redis-server must be installed (scripts/ensure-redis.sh)");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(mut c) =
                redis::Client::open(self.url.as_str()).and_then(|c| c.get_connection())
            {
                if redis::cmd("PING").query::<String>(&mut c).is_ok() {
                    return;
                }
            }
            assert!(
                Instant::now() < deadline,
                "redis-server did not start:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    pub fn restart(&mut self) {
        self.stop();
        self.spawn();
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("redis.log")).unwrap_or_default()
    }

    /// A plain synchronous connection for assertions.
    pub fn conn(&self) -> redis::Connection {
        redis::Client::open(self.url.as_str())
            .unwrap()
            .get_connection()
            .unwrap()
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        if std::thread::panicking() && self.child.is_some() {
            eprintln!("--- redis-server log ---\n{}", self.log());
        }
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
