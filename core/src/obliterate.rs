//! Deleting a whole job queue (`obliterate`): every key of every shard (jobs and their data,
//! schedules, groups, history, settings), found with `SCAN` and deleted with `UNLINK` (the
//! server frees big values off its main thread), a page of keys per call, so no call grows with
//! the queue. The queue is paused first and its settings (the pause) go last, so a worker never
//! starts a job of a half-deleted queue.

use std::collections::BTreeMap;

use crate::error::{Error, Result};
use crate::jobs::Queue;

/// Keys deleted per `UNLINK`.
const UNLINK_BATCH: usize = 256;

/// Most passes over the keyspace before giving up on writers that keep writing.
const MAX_PASSES: usize = 10;

/// Kinds of key live workers and waiting clients write again while they run (their registry
/// entries, reports and inboxes): deleted by each pass, but not waited for.
const REWRITTEN: [&str; 5] = ["workers", "winfo", "metrics", "hist:", "fin:"];

impl Queue {
    /// Deletes the queue: every key of every shard, the jobs (whatever their state) and their
    /// data, schedules, groups and their settings, history, events, limits, pause, and the
    /// record of its shard count, as if it had never been used; returns how many keys were
    /// deleted. Refused (`INVALID_ARGUMENT`, nothing written) while workers of the queue are
    /// live ([`workers`](Self::workers)), unless `force`.
    ///
    /// The queue is paused and marked first (enqueues are refused from then on, nothing
    /// written) and its settings (the pause and the mark) deleted last. Keys are found by
    /// passes of `SCAN` and deleted with `UNLINK`, a page at a time; passes go on until one
    /// finds nothing left to delete. An enqueue racing the call is either done before the mark
    /// (and deleted with the queue) or refused; after the call, an enqueue starts a fresh queue
    /// (with default settings). Jobs
    /// running when a forced obliterate deletes them are gone: their workers' acks and failures
    /// find no job and write nothing (the lease fence); a running worker's own registry entry
    /// comes back with its next fetch until it stops. Interrupted, it leaves the queue paused:
    /// call it again to finish.
    pub async fn obliterate(&self, force: bool) -> Result<u64> {
        self.op("obliterate", async {
            if !force {
                let live = self.alive_workers().await?;
                if !live.is_empty() {
                    return Err(Error::invalid(format!(
                        "{} worker(s) of queue {:?} are live ({}); stop them first, or force it",
                        live.len(),
                        self.name,
                        live.iter()
                            .map(|w| w.id.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )));
                }
            }
            let mut conn = self.client.conn().await?;
            for keys in self.shards.iter() {
                let _: () = redis::cmd("HSET")
                    .arg(keys.cfg())
                    .arg("paused")
                    .arg("1")
                    .arg("obliterating")
                    .arg("1")
                    .query_async(&mut conn)
                    .await
                    .map_err(|e| self.client.err(e))?;
            }
            let prefix = self.client.config().prefix().to_string();
            let name = &*self.name;
            let last: Vec<String> = self
                .shards
                .iter()
                .map(|k| k.cfg())
                .chain([crate::keys::shards_key(
                    &prefix,
                    name,
                    crate::discover::QueueKind::Jobs,
                )])
                .collect();
            // The job queue's keys, sharded or not: `{name}` or `{name#...}` tags (names cannot
            // hold '#', nor glob characters), but not a capped queue's of the same name (`:c:`).
            let pattern = format!("{prefix}:{{{name}[}}#]*");
            let mut deleted = 0u64;
            for pass in 1.. {
                let found: Vec<String> = self
                    .client
                    .scan_keys(&pattern)
                    .await?
                    .into_iter()
                    .filter(|k| owned(k, &prefix, name) && !last.contains(k))
                    .collect();
                let settled = found.iter().all(|k| rewritten(k));
                deleted += self.unlink(&found).await?;
                if settled {
                    break;
                }
                if pass == MAX_PASSES {
                    return Err(Error::new(
                        crate::ErrorKind::Redis,
                        format!(
                            "keys of queue {name:?} kept being written during {MAX_PASSES} \
                             passes (producers enqueueing?); the queue is left paused: call \
                             obliterate again"
                        ),
                    ));
                }
            }
            deleted += self.unlink(&last).await?;
            Ok(deleted)
        })
        .await
    }

    /// Unlinks `keys`, [`UNLINK_BATCH`] at a time, each batch within one hash tag (one slot).
    async fn unlink(&self, keys: &[String]) -> Result<u64> {
        let mut by_tag: BTreeMap<&str, Vec<&String>> = BTreeMap::new();
        for k in keys {
            let tag = k
                .split_once('{')
                .and_then(|(_, r)| r.split_once('}'))
                .map_or("", |(t, _)| t);
            by_tag.entry(tag).or_default().push(k);
        }
        let mut conn = self.client.conn().await?;
        let mut n = 0u64;
        for keys in by_tag.values() {
            for part in keys.chunks(UNLINK_BATCH) {
                let got: u64 = redis::cmd("UNLINK")
                    .arg(part)
                    .query_async(&mut conn)
                    .await
                    .map_err(|e| self.client.err(e))?;
                n += got;
            }
        }
        Ok(n)
    }
}

/// Whether `key` (matched by the obliterate's pattern) is one of job queue `name`'s: tag `name`
/// or `name#...`, not a capped queue's key.
fn owned(key: &str, prefix: &str, name: &str) -> bool {
    let Some(rest) = key.strip_prefix(&format!("{prefix}:{{")) else {
        return false;
    };
    let Some((tag, tail)) = rest.split_once('}') else {
        return false;
    };
    (tag == name || tag.strip_prefix(name).is_some_and(|t| t.starts_with('#')))
        && tail.starts_with(':')
        && !tail.starts_with(":c:")
}

/// Whether `key` is of a kind live workers and clients write again ([`REWRITTEN`]).
fn rewritten(key: &str) -> bool {
    let kind = key.split_once("}:").map_or("", |(_, k)| k);
    REWRITTEN
        .iter()
        .any(|r| kind == *r || (r.ends_with(':') && kind.starts_with(r)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_job_queue_s_own_keys_are_taken() {
        assert!(owned("t:{q}:ready", "t", "q"));
        assert!(owned("t:{q#1.7}:jobs", "t", "q"));
        assert!(owned("t:{q}:shards", "t", "q"));
        assert!(!owned("t:{q}:c:stats", "t", "q"));
        assert!(!owned("t:{q#1.7}:c:g:x", "t", "q"));
        assert!(!owned("t:{q2}:ready", "t", "q"));
        assert!(!owned("t2:{q}:ready", "t", "q"));
        assert!(rewritten("t:{q}:workers") && rewritten("t:{q}:hist:20000"));
        assert!(!rewritten("t:{q}:jobs") && !rewritten("t:{q}:wake"));
    }
}
