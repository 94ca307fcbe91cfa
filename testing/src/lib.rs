//! tideq's test support, and the real mode of tideq's test modes for Rust users: a real
//! `redis-server` on a free loopback port in its own temp dir ([`RedisServer`], with any config
//! line: a password, ACL users, TLS, replication), a local 6-node Redis Cluster (or any number
//! of masters and replicas: [`RedisCluster`], started by `tests/cluster/redis-cluster.sh`) and a
//! primary with a replica and three Sentinels ([`SentinelSetup`]). Everything is torn down on
//! drop. Never mocks.
//!
//! For integration tests of an application, [`RedisServer::start`] is the fixture: a private,
//! empty server per test (it needs `redis-server` on `PATH`), or the server named by
//! `TIDEQ_TEST_REDIS_URL` when that is set (then give each test its own queue names:
//! [`unique`]). Unit tests that only enqueue need no server: `tideq::testing`'s fake and inline
//! modes record or run the jobs in the process.
//!
//! ```ignore
//! // in an application's tests (tideq and tideq-testing as dev-dependencies)
//! use tideq_testing::{unique, RedisServer};
//!
//! # async fn test() {
//! let server = RedisServer::start(); // stopped, and its files removed, when dropped
//! let client = tideq::Client::open(&server.url).unwrap();
//! let q = tideq::Queue::new(&client, &unique("emails"), Default::default()).unwrap();
//! q.enqueue(b"hello", Default::default()).await.unwrap();
//! # }
//! ```
//!
//! The core's tests (`core/tests/common`), the CLI's tests (`cli/tests/common`), the examples and
//! the benchmarks use it too. This crate does not depend on `tideq` (the core's tests use it: a
//! cycle would give them two copies of tideq's types); helpers that need tideq live next to the
//! tests that use them.

mod cluster;
mod sentinel;
mod server;

use std::collections::HashMap;
use std::net::TcpListener;
use std::sync::atomic::{AtomicU64, Ordering};

pub use cluster::{ClusterNode, RedisCluster};
pub use sentinel::{SentinelSetup, MASTER_NAME};
pub use server::{make_certs, tls_unavailable, RedisServer};

/// A loopback port free at the time of the call.
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

/// Calls per command in an `INFO commandstats` reply (`cmdstat_<name>:calls=<n>,...`), by
/// command name as Redis gives it (`evalsha`, `config|resetstat`, ...), script-internal calls
/// included. Callers leave out their own measuring commands (INFO, CONFIG) as they need.
pub fn command_calls(info: &str) -> HashMap<String, u64> {
    info.lines()
        .filter_map(|l| {
            let (name, fields) = l.strip_prefix("cmdstat_")?.split_once(':')?;
            let calls = fields
                .split(',')
                .find_map(|f| f.strip_prefix("calls="))?
                .parse()
                .ok()?;
            Some((name.to_string(), calls))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn command_calls_reads_each_commands_calls() {
        let info = "# Commandstats\r\ncmdstat_evalsha:calls=12,usec=40,usec_per_call=3.33\r\n\
                    cmdstat_config|resetstat:calls=1,usec=5\r\ncmdstat_blpop:calls=0,usec=0\r\n";
        let calls = super::command_calls(info);
        assert_eq!(calls.len(), 3);
        assert_eq!(calls["evalsha"], 12);
        assert_eq!(calls["config|resetstat"], 1);
        assert_eq!(calls["blpop"], 0);
    }
}
