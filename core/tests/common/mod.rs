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
                match redis::cmd("PING").query::<String>(&mut c) {
                    Ok(_) => return,
                    // Up, with a password required (--requirepass).
                    Err(e) if e.code() == Some("NOAUTH") => return,
                    Err(_) => {}
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

/// A local 6-node Redis Cluster (3 masters, 3 replicas) started by tests/cluster/redis-cluster.sh,
/// torn down on drop.
pub struct RedisCluster {
    pub nodes: Vec<String>,
    dir: PathBuf,
}

impl RedisCluster {
    pub fn start() -> Self {
        Self::start_with(None)
    }

    /// A cluster speaking TLS only, with the certificates in `certs` (see [`make_certs`]).
    pub fn start_tls(certs: &std::path::Path) -> Self {
        Self::start_with(Some(certs))
    }

    fn start_with(tls: Option<&std::path::Path>) -> Self {
        let dir = std::env::temp_dir().join(unique("tideq-cluster"));
        let script = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/cluster/redis-cluster.sh"
        );
        let mut cmd = Command::new("bash");
        cmd.arg(script).arg("start").arg(&dir);
        if let Some(certs) = tls {
            cmd.env("TIDEQ_CLUSTER_TLS", certs);
        }
        let out = cmd.output().expect("bash");
        assert!(
            out.status.success(),
            "cluster start failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let seeds = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let scheme = if tls.is_some() { "rediss" } else { "redis" };
        let nodes = seeds
            .split(',')
            .map(|h| format!("{scheme}://{h}"))
            .collect();
        RedisCluster { nodes, dir }
    }

    /// A plain connection to one node (by index) for assertions and fault injection.
    pub fn node(&self, i: usize) -> redis::Connection {
        redis::Client::open(self.nodes[i].as_str())
            .unwrap()
            .get_connection()
            .unwrap()
    }

    /// `host:port` of the master serving `slot`, from CLUSTER SHARDS/SLOTS of node 0.
    pub fn master_of_slot(&self, slot: u16) -> String {
        let slots: Vec<(u16, u16, (String, u16))> = {
            let raw: redis::Value = redis::cmd("CLUSTER")
                .arg("SLOTS")
                .query(&mut self.node(0))
                .unwrap();
            let redis::Value::Array(ranges) = raw else {
                panic!("CLUSTER SLOTS")
            };
            ranges
                .into_iter()
                .map(|r| {
                    let redis::Value::Array(mut parts) = r else {
                        panic!()
                    };
                    let master = parts.remove(2);
                    let (host, port): (String, u16) = match master {
                        redis::Value::Array(m) => (
                            redis::from_redis_value(m[0].clone()).unwrap(),
                            redis::from_redis_value(m[1].clone()).unwrap(),
                        ),
                        _ => panic!(),
                    };
                    let start: u16 = redis::from_redis_value(parts[0].clone()).unwrap();
                    let end: u16 = redis::from_redis_value(parts[1].clone()).unwrap();
                    (start, end, (host, port))
                })
                .collect()
        };
        let (_, _, (h, p)) = slots
            .into_iter()
            .find(|(s, e, _)| (*s..=*e).contains(&slot))
            .expect("slot covered");
        format!("{h}:{p}")
    }
}

#[derive(Debug, Clone)]
pub struct ClusterNode {
    pub id: String,
    pub port: u16,
    pub master: bool,
    pub master_id: Option<String>,
    pub failed: bool,
}

impl RedisCluster {
    /// The topology as one live node sees it (`CLUSTER NODES`).
    pub fn topology(&self) -> Vec<ClusterNode> {
        for url in &self.nodes {
            let Ok(mut c) = redis::Client::open(url.as_str()).and_then(|c| c.get_connection())
            else {
                continue;
            };
            let Ok(text) = redis::cmd("CLUSTER").arg("NODES").query::<String>(&mut c) else {
                continue;
            };
            return text
                .lines()
                .filter(|l| !l.trim().is_empty())
                .map(|l| {
                    let f: Vec<&str> = l.split_whitespace().collect();
                    let port = f[1].split(['@', ':']).nth(1).unwrap().parse().unwrap();
                    ClusterNode {
                        id: f[0].to_string(),
                        port,
                        master: f[2].contains("master"),
                        master_id: (f[3] != "-").then(|| f[3].to_string()),
                        failed: f[2].contains("fail"),
                    }
                })
                .collect();
        }
        panic!("no cluster node answers");
    }

    /// SIGKILLs the node on `port` (its pid file is in the cluster's folder).
    pub fn kill(&self, port: u16) {
        let pid =
            std::fs::read_to_string(self.dir.join(port.to_string()).join("redis.pid")).unwrap();
        Command::new("kill")
            .arg("-9")
            .arg(pid.trim())
            .status()
            .unwrap();
    }

    pub fn conn_to(&self, port: u16) -> redis::Connection {
        redis::Client::open(format!("redis://127.0.0.1:{port}"))
            .unwrap()
            .get_connection()
            .unwrap()
    }
}

impl Drop for RedisCluster {
    fn drop(&mut self) {
        let script = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/cluster/redis-cluster.sh"
        );
        let _ = Command::new("bash")
            .arg(script)
            .arg("stop")
            .arg(&self.dir)
            .output();
    }
}

/// A primary, one replica and three Sentinels on free loopback ports, torn down on drop.
pub struct SentinelSetup {
    pub primary: RedisServer,
    pub replica: RedisServer,
    pub sentinels: Vec<String>,
    sentinel_children: Vec<Child>,
    dir: PathBuf,
}

pub const MASTER_NAME: &str = "tideq-primary";

impl SentinelSetup {
    pub fn start() -> Self {
        let primary = RedisServer::start_private(
            free_port(),
            &[
                "--repl-diskless-sync",
                "yes",
                "--repl-diskless-sync-delay",
                "0",
            ],
        );
        let replica_port = free_port();
        let replica = RedisServer::start_private(
            replica_port,
            &[
                "--replicaof",
                "127.0.0.1",
                &primary.port.to_string(),
                "--repl-diskless-load",
                "swapdb",
            ],
        );
        let dir = std::env::temp_dir().join(unique("tideq-sentinel"));
        std::fs::create_dir_all(&dir).unwrap();
        let mut sentinel_children = Vec::new();
        let mut sentinels = Vec::new();
        for i in 0..3 {
            let port = free_port();
            let conf = dir.join(format!("sentinel-{i}.conf"));
            std::fs::write(
                &conf,
                format!(
                    "port {port}\nbind 127.0.0.1\ndir {}\nsentinel monitor {MASTER_NAME} 127.0.0.1 {} 2\n\
                     sentinel down-after-milliseconds {MASTER_NAME} 1000\nsentinel failover-timeout {MASTER_NAME} 5000\n\
                     sentinel parallel-syncs {MASTER_NAME} 1\n",
                    dir.display(),
                    primary.port
                ),
            )
            .unwrap();
            let log = std::fs::File::create(dir.join(format!("sentinel-{i}.log"))).unwrap();
            let child = Command::new("redis-server")
                .arg(&conf)
                .arg("--sentinel")
                .stdout(log.try_clone().unwrap())
                .stderr(log)
                .spawn()
                .expect("redis-server --sentinel");
            sentinel_children.push(child);
            sentinels.push(format!("redis://127.0.0.1:{port}"));
        }
        let setup = SentinelSetup {
            primary,
            replica,
            sentinels,
            sentinel_children,
            dir,
        };
        // Ready when every Sentinel knows the primary and its replica.
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let ready = setup.sentinels.iter().all(|s| {
                redis::Client::open(s.as_str())
                    .and_then(|c| c.get_connection())
                    .and_then(|mut c| {
                        let replicas: Vec<redis::Value> = redis::cmd("SENTINEL")
                            .arg("REPLICAS")
                            .arg(MASTER_NAME)
                            .query(&mut c)?;
                        let others: Vec<redis::Value> = redis::cmd("SENTINEL")
                            .arg("SENTINELS")
                            .arg(MASTER_NAME)
                            .query(&mut c)?;
                        Ok(replicas.len() == 1 && others.len() == 2)
                    })
                    .unwrap_or(false)
            });
            if ready {
                break;
            }
            assert!(Instant::now() < deadline, "sentinels never saw the replica");
            std::thread::sleep(Duration::from_millis(100));
        }
        setup
    }

    /// The port of the node the Sentinels currently name as primary.
    pub fn primary_port(&self) -> u16 {
        let mut c = redis::Client::open(self.sentinels[0].as_str())
            .unwrap()
            .get_connection()
            .unwrap();
        let (_, port): (String, u16) = redis::cmd("SENTINEL")
            .arg("GET-MASTER-ADDR-BY-NAME")
            .arg(MASTER_NAME)
            .query(&mut c)
            .unwrap();
        port
    }
}

impl Drop for SentinelSetup {
    fn drop(&mut self) {
        for c in &mut self.sentinel_children {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Why TLS tests cannot run here, when the test command found the redis-server on PATH built
/// without TLS (`TIDEQ_TEST_NO_TLS`, set by scripts/test-valkey.sh): the TLS tests then say so
/// and return.
#[allow(dead_code)]
pub fn tls_unavailable() -> Option<String> {
    let why = std::env::var("TIDEQ_TEST_NO_TLS")
        .ok()
        .filter(|w| !w.is_empty())?;
    eprintln!("skipped: {why}");
    Some(why)
}

/// A private CA and a server certificate it signed for 127.0.0.1, in a new folder:
/// ca.pem, cert.pem, key.pem.
pub fn make_certs() -> PathBuf {
    let dir = std::env::temp_dir().join(unique("tideq-certs"));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("ext.cnf"),
        "subjectAltName=IP:127.0.0.1,DNS:localhost\n",
    )
    .unwrap();
    for args in [
        "req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=tideq-test-ca -keyout ca.key -out ca.pem",
        "req -newkey rsa:2048 -nodes -subj /CN=localhost -keyout key.pem -out server.csr",
        "x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 1 -out cert.pem -extfile ext.cnf",
    ] {
        let ok = Command::new("openssl")
            .args(args.split(' '))
            .current_dir(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("openssl");
        assert!(ok.success(), "openssl {args}");
    }
    dir
}

/// Runs a no-op worker until `q` is drained; returns how many jobs it completed.
pub async fn drain_noop(q: &tideq::Queue) -> u64 {
    let w = q
        .work(
            tideq::WorkerOptions {
                stop_when_drained: true,
                ..Default::default()
            },
            |_j: tideq::Job| async { Ok::<(), String>(()) },
        )
        .unwrap();
    w.join().await.completed
}

/// An enqueue through `client` (wrong credentials) fails, and its error does not show `secret`.
pub async fn assert_enqueue_refused_without_leaking(client: &tideq::Client, secret: &str) {
    let err = tideq::Queue::new(client, &unique("refused"), Default::default())
        .unwrap()
        .enqueue(b"x", Default::default())
        .await
        .unwrap_err();
    assert!(!err.to_string().contains(secret), "{err}");
}

/// Job-queue helpers shared by the jobs, lease and worker tests.
pub mod jobs {
    use std::time::{Duration, Instant};

    use super::{unique, RedisServer};
    use tideq::{Backoff, Client, EnqueueOptions, Queue, QueueOptions, WorkerOptions};

    pub fn queue_with(url: &str, opts: QueueOptions) -> Queue {
        Queue::new(&Client::open(url).unwrap(), &unique("jq"), opts).unwrap()
    }

    pub fn queue(url: &str) -> Queue {
        queue_with(
            url,
            QueueOptions {
                backoff: Backoff::fixed(50),
                ..Default::default()
            },
        )
    }

    pub fn id(s: &str) -> EnqueueOptions {
        EnqueueOptions {
            id: Some(s.into()),
            ..Default::default()
        }
    }

    pub fn drained() -> WorkerOptions {
        WorkerOptions {
            stop_when_drained: true,
            poll_interval: Duration::from_millis(100),
            ..Default::default()
        }
    }

    pub fn redis_ms(server: &RedisServer) -> u64 {
        let (s, us): (u64, u64) = redis::cmd("TIME").query(&mut server.conn()).unwrap();
        s * 1000 + us / 1000
    }

    /// A field of `INFO` as a number (0 when absent), e.g. `blocked_clients`.
    pub fn info_u64(server: &RedisServer, field: &str) -> u64 {
        let info: String = redis::cmd("INFO").query(&mut server.conn()).unwrap();
        info.lines()
            .find_map(|l| l.strip_prefix(&format!("{field}:")))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    }

    /// Waits until `n` clients are blocked in `BLPOP` (idle workers listening for wake-ups).
    pub async fn until_blocked(server: &RedisServer, n: u64) {
        let ok = wait_until(Duration::from_secs(10), || {
            info_u64(server, "blocked_clients") == n
        })
        .await;
        assert!(
            ok,
            "expected {n} blocked clients, found {}",
            info_u64(server, "blocked_clients")
        );
    }

    /// [`wait_until`] for a condition that needs Redis (`f` returns a future).
    pub async fn wait_for<F, Fut>(timeout: Duration, mut f: F) -> bool
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = bool>,
    {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if f().await {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        f().await
    }

    pub async fn wait_until(timeout: Duration, mut f: impl FnMut() -> bool) -> bool {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if f() {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        f()
    }
}
