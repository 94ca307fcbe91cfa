//! Queue discovery: the queues of both kinds under the client's key prefix, found with `SCAN`
//! (on every primary of a cluster) for their stats keys and the keys recording their shard
//! counts (`shards.rs`). Nothing is registered on the hot path: listing costs one pass over the
//! keyspace, on demand (the CLI and operators' tools): about 0.9 s per million keys (SCAN COUNT
//! 1000, one round trip per step; Redis is never blocked), and one `GET` per queue found for its
//! shard count. A registry set written by the scripts was the alternative: it would cost every
//! enqueue a command and go stale when a queue's keys are deleted.

use std::collections::{BTreeMap, BTreeSet};

use futures_util::{StreamExt, TryStreamExt};
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
    /// Its shard count (1: not sharded): the one recorded in Redis by its first producer,
    /// worker or push; for a queue last written by a tideq that did not record it, the smallest
    /// count whose shards include every shard found holding data.
    pub shards: usize,
}

/// What one queue's keys found by SCAN say: the shard tags holding stats, and whether its shard
/// count is recorded.
#[derive(Default)]
struct Found {
    tags: BTreeSet<String>,
    recorded: bool,
}

/// The smallest shard count of queue `name` whose shards' hash tags include every tag in
/// `tags` (each `<name>#<i>.<salt>`, or `<name>` alone for one shard; see
/// [`shard_tags`](crate::keys::shard_tags): shard `i` of `n` has the smallest salt putting it in
/// the i-th of `n` slot ranges); the number of tags when no count fits.
pub(crate) fn infer_shards(name: &str, tags: &BTreeSet<String>) -> usize {
    if tags.is_empty() || (tags.len() == 1 && tags.contains(name)) {
        return 1;
    }
    // Per tag: its shard index, and the slots of salts 0..=its salt (its own last).
    let mut parsed = Vec::with_capacity(tags.len());
    for tag in tags {
        let Some((i, salt)) = tag
            .strip_prefix(name)
            .and_then(|t| t.strip_prefix('#'))
            .and_then(|t| t.split_once('.'))
            .and_then(|(i, s)| Some((i.parse::<usize>().ok()?, s.parse::<u32>().ok()?)))
        else {
            return tags.len();
        };
        let slots: Vec<usize> = (0..=salt)
            .map(|s| crate::keys::key_slot(&format!("{name}#{i}.{s}")) as usize)
            .collect();
        parsed.push((i, slots));
    }
    let least = parsed.iter().map(|(i, _)| i + 1).max().unwrap_or(1).max(2);
    (least..=crate::keys::MAX_SHARDS)
        .find(|&n| {
            parsed.iter().all(|(i, slots)| {
                let range = i * 16384 / n..(i + 1) * 16384 / n;
                let (own, earlier) = slots.split_last().expect("salt 0 at least");
                range.contains(own) && !earlier.iter().any(|s| range.contains(s))
            })
        })
        .unwrap_or(tags.len())
}

impl Client {
    /// The queues of both kinds under this client's key prefix (every queue once anything was
    /// enqueued, scheduled or pushed), by kind then name, with their shard counts.
    pub async fn queues(&self) -> Result<Vec<QueueRef>> {
        let prefix = self.config().prefix().to_string();
        // `...:stats`, `...:c:stats`, `...:shards` and `...:c:shards` (matched exactly below).
        let keys = self
            .scan_keys(&format!("{prefix}:{{*}}:*s[th]a[rt]*s"))
            .await?;
        let mut found: BTreeMap<(QueueKind, String), Found> = BTreeMap::new();
        for key in keys {
            let Some(rest) = key.strip_prefix(&format!("{prefix}:{{")) else {
                continue;
            };
            let Some((tag, tail)) = rest.split_once('}') else {
                continue;
            };
            let (kind, recorded) = match tail {
                ":stats" => (QueueKind::Jobs, false),
                ":c:stats" => (QueueKind::Capped, false),
                ":shards" => (QueueKind::Jobs, true),
                ":c:shards" => (QueueKind::Capped, true),
                _ => continue,
            };
            // A shard's tag is `<queue>#<i>.<salt>` (queue names cannot hold '#').
            let name = tag.split('#').next().unwrap_or(tag).to_string();
            let f = found.entry((kind, name)).or_default();
            if recorded {
                // Recorded under the tag of the name alone.
                f.recorded |= !tag.contains('#');
            } else {
                f.tags.insert(tag.to_string());
            }
        }
        // The recorded counts, 64 GETs in flight at a time.
        let reads = found.into_iter().map(|((kind, name), f)| async move {
            let recorded = if f.recorded {
                self.recorded_shards(kind, &name).await?
            } else {
                None
            };
            let shards = recorded.unwrap_or_else(|| infer_shards(&name, &f.tags));
            Ok::<_, crate::Error>(QueueRef { kind, name, shards })
        });
        futures_util::stream::iter(reads)
            .buffered(64)
            .try_collect()
            .await
    }

    /// Every key matching `pattern`: SCAN on the server, or on each primary of a cluster.
    pub(crate) async fn scan_keys(&self, pattern: &str) -> Result<Vec<String>> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::shard_tags;

    #[test]
    fn a_shard_count_is_inferred_from_any_of_its_shards() {
        for n in [2, 3, 4, 7, 16] {
            let all = shard_tags("tideq", "q", n).unwrap();
            // Every shard, the last one alone, the first alone: the count, or a smaller one
            // that has the same tags (never a larger one).
            let every: BTreeSet<String> = all.iter().cloned().collect();
            assert_eq!(infer_shards("q", &every), n);
            let last: BTreeSet<String> = [all[n - 1].clone()].into();
            assert_eq!(infer_shards("q", &last), n);
            let first: BTreeSet<String> = [all[0].clone()].into();
            let m = infer_shards("q", &first);
            assert!(m <= n && shard_tags("tideq", "q", m).unwrap()[0] == all[0]);
        }
        assert_eq!(infer_shards("q", &["q".to_string()].into()), 1);
        assert_eq!(infer_shards("q", &BTreeSet::new()), 1);
    }
}
