//! What the dashboard's tests share: a `tideq dashboard` child process, HTTP spoken by hand
//! (HTTP/1.1 on a std TcpStream), Redis's `INFO commandstats` read over a raw connection, and
//! a populated queue.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use tideq::{CappedOptions, CappedQueue, Client, Queue};

use super::{dead_job, free_port, with_id, Redis};

/// A `tideq dashboard` child process on a free port, killed on drop.
pub struct Dashboard {
    pub port: u16,
    child: Child,
}

impl Dashboard {
    /// Starts `tideq <conn...> dashboard --listen 127.0.0.1:<free> <args...>` and waits until
    /// its API answers (`env`: extra environment variables).
    pub fn start(conn: &[&str], args: &[&str], env: &[(&str, &str)]) -> Self {
        Self::start_at("127.0.0.1", conn, args, env)
    }

    /// As [`start`](Self::start), listening on `ip` (requests still go to 127.0.0.1).
    pub fn start_at(ip: &str, conn: &[&str], args: &[&str], env: &[(&str, &str)]) -> Self {
        let port = free_port();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_tideq"));
        cmd.args(conn)
            .args(["dashboard", "--listen", &format!("{ip}:{port}")])
            .args(args)
            .env_remove("TIDEQ_REDIS_URL")
            .env_remove("TIDEQ_DASHBOARD_TOKEN")
            .env_remove("TIDEQ_DASHBOARD_READ_TOKEN")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let child = cmd.spawn().unwrap();
        let d = Dashboard { port, child };
        let deadline = Instant::now() + Duration::from_secs(20);
        while http(port, "GET", "/", &[]).is_err() {
            assert!(Instant::now() < deadline, "the dashboard did not answer");
            std::thread::sleep(Duration::from_millis(50));
        }
        d
    }

    pub fn get(&self, path: &str) -> Resp {
        http(self.port, "GET", path, &[]).unwrap()
    }

    /// A POST as the page sends it (the custom header, a same-origin Origin).
    pub fn post(&self, path: &str) -> Resp {
        let origin = format!("http://127.0.0.1:{}", self.port);
        http(
            self.port,
            "POST",
            path,
            &[("X-Tideq-Request", "1"), ("Origin", &origin)],
        )
        .unwrap()
    }

    pub fn overview(&self) -> Value {
        let r = self.get("/api/overview");
        assert_eq!(r.status, 200, "{}", r.body);
        r.json()
    }

    /// The overview entry of the job queue `name`.
    pub fn entry(&self, kind: &str, name: &str) -> Value {
        let o = self.overview();
        o["queues"]
            .as_array()
            .unwrap()
            .iter()
            .find(|q| q["kind"] == kind && q["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("no {kind} queue {name} in {o}"))
    }

    /// Waits until the refresh loop completed another refresh, and returns its number.
    pub fn next_refresh(&self) -> u64 {
        let n = self.overview()["refreshes"].as_u64().unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let now = self.overview()["refreshes"].as_u64().unwrap();
            if now > n {
                return now;
            }
            assert!(Instant::now() < deadline, "no refresh");
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for Dashboard {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub struct Resp {
    pub status: u16,
    pub headers: HashMap<String, String>,
    pub body: String,
}

impl Resp {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {} {}", self.status, self.body))
    }

    /// A refusal: `status`, a JSON `{"error": ...}` body.
    pub fn refused(&self, status: u16) -> String {
        assert_eq!(self.status, status, "{}", self.body);
        self.json()["error"].as_str().unwrap().to_string()
    }
}

/// One HTTP/1.1 request (`Connection: close`), the response read to its end.
pub fn http(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> std::io::Result<Resp> {
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut req = format!("{method} {path} HTTP/1.1\r\n");
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        req.push_str(&format!("Host: 127.0.0.1:{port}\r\n"));
    }
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("Content-Length: 0\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes())?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)?;
    let text = String::from_utf8_lossy(&raw).to_string();
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| std::io::Error::other(format!("no header end: {text:?}")))?;
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("no status: {head:?}")))?;
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    Ok(Resp {
        status,
        headers,
        body: body.to_string(),
    })
}

/// Redis's per-command call counts (`INFO commandstats`), read over a raw connection.
pub fn command_calls(url: &str) -> HashMap<String, u64> {
    let port: u16 = url.rsplit(':').next().unwrap().parse().unwrap();
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.write_all(b"INFO commandstats\r\n").unwrap();
    // "$<len>\r\n<text>\r\n"
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let text = loop {
        let n = s.read(&mut chunk).unwrap();
        assert!(n > 0, "INFO: connection closed");
        buf.extend_from_slice(&chunk[..n]);
        let t = String::from_utf8_lossy(&buf).to_string();
        if let Some((len, rest)) = t.strip_prefix('$').and_then(|t| t.split_once("\r\n")) {
            if rest.len() >= len.parse::<usize>().unwrap() {
                break rest.to_string();
            }
        }
    };
    tideq_testing::command_calls(&text)
}

/// Calls of every command but the measurement's own (INFO) and the test's set-up (CONFIG).
pub fn calls_but_info(url: &str) -> u64 {
    command_calls(url)
        .into_iter()
        .filter(|(name, _)| name != "info" && !name.starts_with("config"))
        .map(|(_, n)| n)
        .sum()
}

/// A job queue with 3 ready and 2 dead jobs (`d1`, `d2`), and a capped queue with one item.
pub fn populated(redis: &Redis, rt: &tokio::runtime::Runtime, name: &str) -> Queue {
    let q = redis.queue(name);
    rt.block_on(async {
        dead_job(&q, "d1").await;
        dead_job(&q, "d2").await;
        for id in ["r1", "r2", "r3"] {
            q.enqueue(format!("{{\"n\":\"{id}\"}}"), with_id(id))
                .await
                .unwrap();
        }
        let capped = CappedQueue::new(
            &Client::open(&redis.url).unwrap(),
            "ticks",
            CappedOptions::default(),
        )
        .unwrap();
        capped.push("g", b"1").await.unwrap();
    });
    q
}

pub fn count(v: &Value, k: &str) -> u64 {
    v[k].as_u64()
        .unwrap_or_else(|| panic!("{k} missing in {v}"))
}
