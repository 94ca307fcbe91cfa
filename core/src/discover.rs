//! Queue discovery: the queues of both kinds under the client's key prefix, found with `SCAN`
//! (on every primary of a cluster) for their stats keys. Nothing is registered on the hot path:
//! listing costs one pass over the keyspace, on demand (the CLI and operators' tools): about
//! 0.9 s per million keys (SCAN COUNT 1000, one round trip per step; Redis is never blocked).
//! A registry set written by the scripts was the alternative: it would cost every enqueue a
//! command and go stale when a queue's keys are deleted.

use std::collections::BTreeMap;

use redis::cluster_routing::{RoutingInfo, SingleNodeRoutingInfo};
use redis::Value;

use crate::client::{Client, Conn};
use crate::error::Result;

/// Which kind of queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum QueueKind {
    /// A job queue ([`crate::Queue`]).
    Jobs,
    /// A capped grouped queue ([`crate::CappedQueue`]).
    Capped,
}

impl QueueKind {
    /// `"jobs"` or `"capped"`.
    pub fn as_str(self) -> &'static str {
        match self {
            QueueKind::Jobs => "jobs",
            QueueKind::Capped => "capped",
        }
    }
}

/// A queue found under the prefix.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct QueueRef {
    pub kind: QueueKind,
    pub name: String,
    /// How many shards of it were found (1: not sharded).
    pub shards: usize,
}

impl Client {
    /// The queues of both kinds under this client's key prefix (those that have stats: every
    /// queue once anything was enqueued or pushed), by kind then name.
    pub async fn queues(&self) -> Result<Vec<QueueRef>> {
        let prefix = self.config().prefix().to_string();
        let keys = self.scan_keys(&format!("{prefix}:{{*}}:*stats")).await?;
        let mut found: BTreeMap<(QueueKind, String), std::collections::BTreeSet<String>> =
            BTreeMap::new();
        for key in keys {
            let Some(rest) = key.strip_prefix(&format!("{prefix}:{{")) else {
                continue;
            };
            let Some((tag, tail)) = rest.split_once('}') else {
                continue;
            };
            let kind = match tail {
                ":stats" => QueueKind::Jobs,
                ":c:stats" => QueueKind::Capped,
                _ => continue,
            };
            // A shard's tag is `<queue>#<i>.<salt>` (queue names cannot hold '#').
            let name = tag.split('#').next().unwrap_or(tag).to_string();
            found
                .entry((kind, name))
                .or_default()
                .insert(tag.to_string());
        }
        Ok(found
            .into_iter()
            .map(|((kind, name), tags)| QueueRef {
                kind,
                name,
                shards: tags.len(),
            })
            .collect())
    }

    /// Every key matching `pattern`: SCAN on the server, or on each primary of a cluster.
    async fn scan_keys(&self, pattern: &str) -> Result<Vec<String>> {
        let mut conn = self.conn().await?;
        let mut out = Vec::new();
        match &mut conn {
            Conn::Cluster(c) => {
                let slots: Value = c
                    .conn
                    .route_command(
                        redis::cmd("CLUSTER").arg("SLOTS").clone(),
                        RoutingInfo::SingleNode(SingleNodeRoutingInfo::Random),
                    )
                    .await
                    .map_err(|e| self.err(e))?;
                let mut primaries = std::collections::BTreeSet::new();
                if let Value::Array(ranges) = slots {
                    for r in ranges {
                        if let Value::Array(r) = r {
                            if let Some(Value::Array(node)) = r.get(2) {
                                let host: Option<String> = node
                                    .first()
                                    .and_then(|v| redis::from_redis_value(v.clone()).ok());
                                let port: Option<u16> = node
                                    .get(1)
                                    .and_then(|v| redis::from_redis_value(v.clone()).ok());
                                if let (Some(h), Some(p)) = (host, port) {
                                    primaries.insert((h, p));
                                }
                            }
                        }
                    }
                }
                for (host, port) in primaries {
                    let mut cursor = 0u64;
                    loop {
                        let mut cmd = redis::cmd("SCAN");
                        cmd.arg(cursor)
                            .arg("MATCH")
                            .arg(pattern)
                            .arg("COUNT")
                            .arg(1000);
                        let reply = c
                            .conn
                            .route_command(
                                cmd,
                                RoutingInfo::SingleNode(SingleNodeRoutingInfo::ByAddress {
                                    host: host.clone(),
                                    port,
                                }),
                            )
                            .await
                            .map_err(|e| self.err(e))?;
                        let (next, keys): (u64, Vec<String>) =
                            redis::from_redis_value(reply).map_err(|e| self.err(e.into()))?;
                        out.extend(keys);
                        cursor = next;
                        if cursor == 0 {
                            break;
                        }
                    }
                }
            }
            conn => {
                let mut cursor = 0u64;
                loop {
                    let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
                        .arg(cursor)
                        .arg("MATCH")
                        .arg(pattern)
                        .arg("COUNT")
                        .arg(1000)
                        .query_async(conn)
                        .await
                        .map_err(|e| self.err(e))?;
                    out.extend(keys);
                    cursor = next;
                    if cursor == 0 {
                        break;
                    }
                }
            }
        }
        Ok(out)
    }
}
