//! A primary, one replica and three Sentinels on free loopback ports, torn down on drop.

use std::path::PathBuf;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use crate::{free_port, unique, RedisServer};

/// The master name the Sentinels of a [`SentinelSetup`] monitor.
pub const MASTER_NAME: &str = "tideq-primary";

pub struct SentinelSetup {
    pub primary: RedisServer,
    pub replica: RedisServer,
    /// The Sentinels' URLs.
    pub sentinels: Vec<String>,
    sentinel_children: Vec<Child>,
    dir: PathBuf,
}

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
        let replica = RedisServer::start_private(
            free_port(),
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
        while !setup.ready() {
            assert!(Instant::now() < deadline, "sentinels never saw the replica");
            std::thread::sleep(Duration::from_millis(100));
        }
        setup
    }

    fn ready(&self) -> bool {
        self.sentinels.iter().all(|s| {
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
        })
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
