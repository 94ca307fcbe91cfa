//! What the Redis server says of itself (`INFO`): version, memory and its limit, the eviction
//! policy, clients, load. For an operator's health panel; a cluster's nodes are summed.

use serde::{Deserialize, Serialize};

use super::server::info_text;
use super::*;

/// The server's state as `INFO` gives it ([`Client::server_info`]). On a Redis Cluster, the
/// primaries' numbers are summed (`nodes` says how many answered) and the first node's version
/// and policy are given (an evicting policy on any node wins, since that node loses keys).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ServerInfo {
    /// `redis` or `valkey`.
    pub server: String,
    /// Its version, e.g. `7.0.15`.
    pub version: String,
    /// Memory used (bytes, `used_memory`).
    pub used_memory: u64,
    /// The memory limit (bytes, `maxmemory`); 0: none.
    pub maxmemory: u64,
    /// `maxmemory-policy`: anything but `noeviction` deletes keys (jobs) under memory pressure.
    pub maxmemory_policy: String,
    /// Whether that policy evicts keys (anything but `noeviction`).
    pub evicts: bool,
    /// Clients connected (`connected_clients`).
    pub connected_clients: u64,
    /// Commands per second, as the server measures it now (`instantaneous_ops_per_sec`).
    pub ops_per_sec: u64,
    /// Seconds since the server started (the least among the nodes).
    pub uptime_secs: u64,
    /// Nodes that answered (1 but on a cluster).
    pub nodes: u64,
}

impl ServerInfo {
    /// Parses the text of one or more `INFO` replies (one per node, one after the other).
    pub fn parse(text: &str) -> ServerInfo {
        let mut s = ServerInfo::default();
        let mut uptime: Option<u64> = None;
        for line in text.lines() {
            let Some((k, v)) = line.trim().split_once(':') else {
                continue;
            };
            let n = || v.trim().parse::<u64>().unwrap_or(0);
            match k {
                "redis_version" => {
                    s.nodes += 1;
                    if s.version.is_empty() {
                        s.server = "redis".into();
                        s.version = v.trim().into();
                    }
                }
                "valkey_version" => {
                    // Valkey names its version twice (redis_version for compatibility).
                    s.server = "valkey".into();
                    s.version = v.trim().into();
                }
                "used_memory" => s.used_memory += n(),
                "maxmemory" => s.maxmemory += n(),
                "maxmemory_policy" => {
                    let p = v.trim();
                    if s.maxmemory_policy.is_empty() || (p != "noeviction" && !s.evicts) {
                        s.maxmemory_policy = p.into();
                    }
                    s.evicts |= p != "noeviction";
                }
                "connected_clients" => s.connected_clients += n(),
                "instantaneous_ops_per_sec" => s.ops_per_sec += n(),
                "uptime_in_seconds" => uptime = Some(uptime.map_or(n(), |u| u.min(n()))),
                _ => {}
            }
        }
        s.uptime_secs = uptime.unwrap_or(0);
        s
    }
}

impl Client {
    /// What the server says of itself: its version, memory used and limit, eviction policy
    /// (with whether it evicts: jobs are keys, and an evicting policy loses them silently),
    /// clients connected and commands per second. One `INFO` (on a cluster, one per primary).
    /// A user not allowed `INFO` gets `PERMISSION`.
    pub async fn server_info(&self) -> Result<ServerInfo> {
        let mut conn = self.conn().await?;
        let v: redis::Value = redis::cmd("INFO")
            .query_async(&mut conn)
            .await
            .map_err(|e| self.err(e))?;
        Ok(ServerInfo::parse(&info_text(&v)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_text_parses_and_a_cluster_sums() {
        let node = "# Server\r\nredis_version:7.0.15\r\nuptime_in_seconds:42\r\n# Clients\r\n\
                    connected_clients:3\r\n# Memory\r\nused_memory:1000\r\nmaxmemory:0\r\n\
                    maxmemory_policy:noeviction\r\n# Stats\r\ninstantaneous_ops_per_sec:7\r\n";
        let s = ServerInfo::parse(node);
        assert_eq!(
            (s.server.as_str(), s.version.as_str(), s.nodes),
            ("redis", "7.0.15", 1)
        );
        assert_eq!(
            (s.used_memory, s.connected_clients, s.ops_per_sec),
            (1000, 3, 7)
        );
        assert!(!s.evicts);
        let lru = node
            .replace("noeviction", "allkeys-lru")
            .replace(":42", ":10");
        let two = ServerInfo::parse(&format!("{node}\n{lru}"));
        assert_eq!((two.nodes, two.used_memory, two.uptime_secs), (2, 2000, 10));
        assert!(two.evicts);
        assert_eq!(two.maxmemory_policy, "allkeys-lru");
        let valkey = ServerInfo::parse("redis_version:7.2.4\nvalkey_version:8.0.1\n");
        assert_eq!(
            (valkey.server.as_str(), valkey.version.as_str()),
            ("valkey", "8.0.1")
        );
    }
}
