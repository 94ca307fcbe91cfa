//! A local 6-node Redis Cluster (3 masters, 3 replicas) started by
//! `tests/cluster/redis-cluster.sh`, torn down on drop; or any other number of masters and
//! replicas ([`RedisCluster::start_sized`]).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::unique;

const CLUSTER_SCRIPT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tests/cluster/redis-cluster.sh"
);

pub struct RedisCluster {
    /// The nodes' URLs (`redis://` or `rediss://`), seeds for a cluster client.
    pub nodes: Vec<String>,
    dir: PathBuf,
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
    pub fn start() -> Self {
        Self::start_with(None, &[], None)
    }

    /// A cluster of `primaries` masters, each with `replicas` replicas (0: none, which a
    /// benchmark may want and a failover test may not), the slots split in equal ranges (which
    /// master holds which: [`topology`](Self::topology), [`master_of_slot`](Self::master_of_slot)).
    pub fn start_sized(primaries: usize, replicas: usize) -> Self {
        assert!(primaries >= 1, "a cluster needs a master");
        Self::start_with(None, &[], Some((primaries, replicas)))
    }

    /// A cluster speaking TLS only, with the certificates in `certs` (see
    /// [`make_certs`](crate::make_certs)).
    pub fn start_tls(certs: &Path) -> Self {
        Self::start_with(Some(certs), &[], None)
    }

    /// A cluster whose nodes take `extra` redis-server arguments after the script's own (a later
    /// argument wins: `--cluster-node-timeout 5000`, `--cluster-require-full-coverage no`).
    pub fn start_args(extra: &[&str]) -> Self {
        Self::start_with(None, extra, None)
    }

    fn start_with(tls: Option<&Path>, extra: &[&str], layout: Option<(usize, usize)>) -> Self {
        let dir = std::env::temp_dir().join(unique("tideq-cluster"));
        let mut cmd = Command::new("bash");
        cmd.arg(CLUSTER_SCRIPT).arg("start").arg(&dir);
        if let Some(certs) = tls {
            cmd.env("TIDEQ_CLUSTER_TLS", certs);
        }
        if let Some((primaries, replicas)) = layout {
            cmd.env("TIDEQ_CLUSTER_PRIMARIES", primaries.to_string());
            cmd.env("TIDEQ_CLUSTER_REPLICAS", replicas.to_string());
        }
        if !extra.is_empty() {
            let mut args = std::env::var("TIDEQ_CLUSTER_ARGS").unwrap_or_default();
            for a in extra {
                args.push(' ');
                args.push_str(a);
            }
            cmd.env("TIDEQ_CLUSTER_ARGS", args.trim());
        }
        let out = cmd.output().expect("bash");
        // Built before the check, so a half-started cluster is stopped on the way out.
        let scheme = if tls.is_some() { "rediss" } else { "redis" };
        let cluster = RedisCluster {
            nodes: String::from_utf8_lossy(&out.stdout)
                .trim()
                .split(',')
                .map(|h| format!("{scheme}://{h}"))
                .collect(),
            dir,
        };
        assert!(
            out.status.success(),
            "cluster start failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        cluster
    }

    /// A plain connection to one node (by index) for assertions and fault injection.
    pub fn node(&self, i: usize) -> redis::Connection {
        redis::Client::open(self.nodes[i].as_str())
            .unwrap()
            .get_connection()
            .unwrap()
    }

    /// `host:port` of the master serving `slot`, from CLUSTER SLOTS of node 0.
    pub fn master_of_slot(&self, slot: u16) -> String {
        let raw: redis::Value = redis::cmd("CLUSTER")
            .arg("SLOTS")
            .query(&mut self.node(0))
            .unwrap();
        let redis::Value::Array(ranges) = raw else {
            panic!("CLUSTER SLOTS")
        };
        let slots = ranges.into_iter().map(|r| {
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
        });
        let (_, _, (h, p)) = slots
            .into_iter()
            .find(|(s, e, _)| (*s..=*e).contains(&slot))
            .expect("slot covered");
        format!("{h}:{p}")
    }

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
        // The script's stop kills the nodes and removes the folder.
        let _ = Command::new("bash")
            .arg(CLUSTER_SCRIPT)
            .arg("stop")
            .arg(&self.dir)
            .output();
    }
}
