//! The capped grouped queue: per-group FIFO lists capped at `capacity` (drop-oldest), a TTL per
//! group, optional `max_age` freshness, atomic batch pops and round-robin over groups with data.
//! Delivery is at-most-once: a popped batch is gone even if its handler fails.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use redis::Value;
use serde::{Deserialize, Serialize};

use crate::client::Client;
use crate::discover::QueueKind::Capped;
use crate::error::{Error, Result};
use crate::keys::{shard_of, validate_name, CappedKeys};
use crate::scripts::{POP_CAPPED, PUSH_CAPPED};

mod groups;
mod sealed;
pub use groups::CappedGroupPage;
pub use sealed::{UnreadableItem, MAX_UNREADABLE};

/// Items per script call in [`CappedQueue::push_many`]; all calls go in one pipeline.
const PUSH_CHUNK_ITEMS: usize = 1000;
const PUSH_CHUNK_BYTES: usize = 4 * 1024 * 1024;
/// Script calls `next_batch` may make on one shard without finding a batch before giving up
/// (each clears up to 1000 drained groups from the rotation).
const MAX_EMPTY_HOPS: usize = 1000;
/// Most items one [`CappedQueue::peek`] returns.
pub const MAX_PEEK: usize = 1000;
/// Items [`CappedQueue::peek`] shows when the caller does not say (the bindings' and the CLI's
/// default).
pub const DEFAULT_PEEK: usize = 10;

/// Options of a capped queue. All handles on one queue should use the same values.
#[derive(Debug, Clone, PartialEq)]
pub struct CappedOptions {
    /// Items kept per group; pushing more drops the oldest. Default 1000.
    pub capacity: usize,
    /// A group that receives nothing for this long disappears. `None`: never. Default 1 day.
    pub ttl: Option<Duration>,
    /// Items older than this (by Redis server time) are discarded when consumed. Default `None`.
    pub max_age: Option<Duration>,
    /// Encryption at rest: items are sealed with the current key before they reach Redis and
    /// opened when popped or peeked (items stored in clear still read as they are). An item
    /// this handle cannot open is kept in the queue's unreadable list
    /// ([`CappedQueue::unreadable`]). Default `None`.
    pub encryption: Option<crate::crypt::Encryption>,
}

impl Default for CappedOptions {
    fn default() -> Self {
        CappedOptions {
            capacity: 1000,
            ttl: Some(Duration::from_secs(24 * 3600)),
            max_age: None,
            encryption: None,
        }
    }
}

/// A batch taken from one group, oldest item first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batch {
    pub group: String,
    pub items: Vec<Vec<u8>>,
}

/// An item still queued, as [`CappedQueue::peek`] shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Peeked {
    /// When it was pushed: ms since the epoch, Redis clock.
    pub pushed_at_ms: u64,
    #[serde(with = "serde_bytes")]
    pub item: Vec<u8>,
    /// Set when the item is sealed and this handle cannot open it (its key is missing or does
    /// not match, or the handle has no encryption): why, naming the key id. `item` then holds
    /// the sealed bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unreadable: Option<String>,
}

/// Counters kept in Redis for the whole queue.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CappedStats {
    /// Items accepted by `push`/`push_many`.
    pub pushed: u64,
    /// Items dropped because their group was over capacity.
    pub dropped: u64,
    /// Items discarded at consume time because they were older than `max_age`.
    pub discarded: u64,
    /// Items handed to consumers (`pop_batch`/`next_batch`).
    pub delivered: u64,
    /// Groups currently holding data.
    pub groups: u64,
    /// Popped items that could not be opened (a missing or wrong key), kept in the unreadable
    /// list instead of being delivered (not counted in `delivered`).
    #[serde(default)]
    pub unreadable: u64,
    /// Unreadable items pushed back by `requeue_unreadable`.
    #[serde(default)]
    pub requeued: u64,
}

/// A handle on one capped queue. Cheap to clone; clones share the round-robin position.
#[derive(Clone)]
pub struct CappedQueue {
    pub(crate) client: Client,
    name: Arc<str>,
    /// One key set per shard (one shard unless built with [`CappedQueue::sharded`]).
    pub(crate) shards: Arc<[CappedKeys]>,
    opts: CappedOptions,
    rr: Arc<Mutex<RoundRobin>>,
    /// The shard count checked against the one recorded in Redis (`shards.rs`).
    recorded: Arc<crate::shards::ShardCheck>,
}

/// Where a round-robin over groups stands: the next shard to look at and, per shard, the groups
/// the last pop script already rotated to (the ones to pop next).
#[derive(Debug, Default)]
pub(crate) struct RoundRobin {
    next_shard: usize,
    hints: Vec<Vec<String>>,
}

impl std::fmt::Debug for CappedQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CappedQueue")
            .field("name", &self.name)
            .field("opts", &self.opts)
            .finish()
    }
}

fn millis(what: &str, d: Option<Duration>) -> Result<u64> {
    match d {
        None => Ok(0),
        Some(d) if d.as_millis() == 0 => {
            Err(Error::invalid(format!("{what} must be at least 1 ms")))
        }
        Some(d) => {
            u64::try_from(d.as_millis()).map_err(|_| Error::invalid(format!("{what} is too large")))
        }
    }
}

impl CappedQueue {
    /// Runs one public operation, naming the queue and the operation in the errors Redis gives
    /// (see [`crate::error::in_operation`]).
    ///
    /// Checks the queue's shard count first (a push records it when none is), once per handle
    /// (`shards.rs`).
    pub(crate) fn op<'a, T: 'a>(
        &'a self,
        op: &'static str,
        f: impl std::future::Future<Output = Result<T>> + Send + 'a,
    ) -> impl std::future::Future<Output = Result<T>> + Send + 'a {
        let f = async move {
            self.recorded
                .ensure(
                    &self.client,
                    Capped,
                    &self.name,
                    self.shards.len(),
                    op == "push",
                )
                .await?;
            f.await
        };
        crate::error::in_operation(&self.name, op, f)
    }

    /// Checks this handle's shard count against the one recorded in Redis (`shards.rs`).
    pub(crate) async fn check_shards(&self) -> Result<()> {
        let n = self.shards.len();
        self.recorded
            .ensure(&self.client, Capped, &self.name, n, false)
            .await
    }

    /// A handle on queue `name`. Validates the name and options; does not touch Redis.
    pub fn new(client: &Client, name: &str, opts: CappedOptions) -> Result<Self> {
        Self::sharded(client, name, 1, opts)
    }

    /// A queue split in `shards` hash tags spread over a Redis Cluster's masters. Each group
    /// lives on one shard (chosen by its name), so its order, cap and registry entry stay
    /// atomic; consumers serve all shards round-robin; `stats` adds them up. All handles on a
    /// queue must use the same shard count: the first push records it in Redis, and a handle
    /// made with another count is refused (`INVALID_ARGUMENT`) at its first operation.
    pub fn sharded(
        client: &Client,
        name: &str,
        shards: usize,
        opts: CappedOptions,
    ) -> Result<Self> {
        let keys = CappedKeys::shards(client.config().prefix(), name, shards)?;
        if opts.capacity == 0 {
            return Err(Error::invalid("capacity must be at least 1"));
        }
        millis("ttl", opts.ttl)?;
        millis("max_age", opts.max_age)?;
        Ok(CappedQueue {
            client: client.clone(),
            name: name.into(),
            shards: keys.into(),
            opts,
            rr: Arc::new(Mutex::new(RoundRobin::default())),
            recorded: Default::default(),
        })
    }

    /// How many shards this queue has.
    pub fn shard_count(&self) -> usize {
        self.shards.len()
    }

    /// The keys of the shard holding `group`.
    pub(crate) fn keys_for(&self, group: &str) -> &CappedKeys {
        &self.shards[shard_of(group, self.shards.len())]
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn options(&self) -> &CappedOptions {
        &self.opts
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    fn check_item(&self, item: &[u8]) -> Result<()> {
        self.client.config().check_payload("item", item.len())
    }

    /// Appends `item` to `group`, dropping the oldest items above capacity. Returns how many
    /// items were dropped.
    pub async fn push(&self, group: &str, item: impl AsRef<[u8]>) -> Result<u64> {
        let drops = self.push_many(&[(group, item.as_ref())]).await?;
        Ok(drops[0])
    }

    /// Pushes many `(group, item)` pairs in one round trip (batched scripts in one pipeline).
    /// Every pair is validated first: on bad input nothing is written. Returns, per item, how
    /// many items its push dropped.
    pub async fn push_many<G, I>(&self, items: &[(G, I)]) -> Result<Vec<u64>>
    where
        G: AsRef<str>,
        I: AsRef<[u8]>,
    {
        if items.len() > crate::job::MAX_BATCH {
            return Err(Error::invalid(format!(
                "push_many takes at most {} items per call; got {}: send them in parts",
                crate::job::MAX_BATCH,
                items.len()
            )));
        }
        for (i, (g, item)) in items.iter().enumerate() {
            let checked =
                validate_name("group", g.as_ref()).and_then(|_| self.check_item(item.as_ref()));
            checked.map_err(|e| {
                if items.len() > 1 {
                    e.context(&format!("item {i}"))
                } else {
                    e
                }
            })?;
        }
        if items.is_empty() {
            return Ok(Vec::new());
        }
        let ttl = millis("ttl", self.opts.ttl)?;
        let sealed = self.seal_items(&items.iter().map(|(_, i)| i).collect::<Vec<_>>())?;
        let item_at = |i: usize| -> &[u8] {
            match &sealed {
                Some(s) => &s[i],
                None => items[i].1.as_ref(),
            }
        };
        // Per shard (a group never spans shards): chunks in one pipeline; shards in parallel.
        let mut by_shard: Vec<Vec<usize>> = vec![Vec::new(); self.shards.len()];
        for (i, (g, _)) in items.iter().enumerate() {
            by_shard[shard_of(g.as_ref(), self.shards.len())].push(i);
        }
        let sends = by_shard
            .iter()
            .enumerate()
            .filter(|(_, idx)| !idx.is_empty())
            .map(|(shard, idx)| {
                let mut cmds = Vec::new();
                let mut start = 0;
                while start < idx.len() {
                    let mut end = start;
                    let mut bytes = 0;
                    while end < idx.len()
                        && end - start < PUSH_CHUNK_ITEMS
                        && (bytes < PUSH_CHUNK_BYTES || end == start)
                    {
                        bytes += item_at(idx[end]).len();
                        end += 1;
                    }
                    let chunk: Vec<(&str, &[u8])> = idx[start..end]
                        .iter()
                        .map(|&i| (items[i].0.as_ref(), item_at(i)))
                        .collect();
                    cmds.push(self.push_cmd(&self.shards[shard], &chunk, ttl));
                    start = end;
                }
                async move {
                    let replies = if cmds.len() == 1 {
                        vec![self.client.eval::<Value>(&cmds[0], &PUSH_CAPPED).await?]
                    } else {
                        self.client.pipeline(&cmds).await?
                    };
                    let mut drops = Vec::with_capacity(idx.len());
                    for reply in replies {
                        let v: Vec<u64> = redis::from_redis_value(reply)
                            .map_err(|e| self.client.err(e.into()))?;
                        drops.extend(v);
                    }
                    Ok::<_, Error>(idx.iter().copied().zip(drops).collect::<Vec<_>>())
                }
            });
        let mut drops = vec![0; items.len()];
        let sends: Vec<_> = sends.map(Box::pin).collect();
        for (i, d) in self
            .op("push", futures_util::future::try_join_all(sends))
            .await?
            .into_iter()
            .flatten()
        {
            drops[i] = d;
        }
        Ok(drops)
    }

    fn push_cmd<G: AsRef<str>, I: AsRef<[u8]>>(
        &self,
        k: &CappedKeys,
        chunk: &[(G, I)],
        ttl: u64,
    ) -> redis::Cmd {
        let mut index: HashMap<&str, usize> = HashMap::new();
        let mut names: Vec<&str> = Vec::new();
        for (g, _) in chunk {
            let g = g.as_ref();
            if !index.contains_key(g) {
                names.push(g);
                index.insert(g, names.len());
            }
        }
        let mut keys = k.for_script(&PUSH_CAPPED, "");
        for g in &names {
            keys.push(k.group(g));
            keys.push(k.group_wake(g));
        }
        let mut cmd = PUSH_CAPPED.cmd(&keys);
        cmd.arg(self.opts.capacity)
            .arg(ttl)
            .arg(names.len())
            .arg(&names);
        for (g, item) in chunk {
            cmd.arg(index[g.as_ref()]).arg(item.as_ref());
        }
        cmd
    }

    /// Atomically removes and returns up to `max` items of `group`, oldest first: exactly `max`
    /// when at least `max` fresh items are queued.
    pub async fn pop_batch(&self, group: &str, max: usize) -> Result<Vec<Vec<u8>>> {
        self.op("pop_batch", async {
            validate_name("group", group)?;
            let shard = shard_of(group, self.shards.len());
            let (mut batches, _, _) = self
                .pop_groups(shard, &[group.to_string()], max, 0, &[])
                .await?;
            Ok(batches.pop().map(|b| b.items).unwrap_or_default())
        })
        .await
    }

    /// One `pop_capped` call on `shard`: pops up to `max` items from each of `groups` (all on that
    /// shard) and, with `next > 0`, advances the round-robin over up to `next` live groups (not
    /// `skip`), returned as the groups to pop next.
    pub(crate) async fn pop_groups(
        &self,
        shard: usize,
        groups: &[String],
        max: usize,
        next: usize,
        skip: &[String],
    ) -> Result<(Vec<Batch>, Vec<String>, bool)> {
        if max == 0 {
            return Err(Error::invalid("max must be at least 1"));
        }
        let k = &self.shards[shard];
        let mut keys = k.for_script(&POP_CAPPED, "");
        keys.extend(groups.iter().map(|g| k.group(g)));
        let mut cmd = POP_CAPPED.cmd(&keys);
        cmd.arg(max)
            .arg(millis("max_age", self.opts.max_age)?)
            .arg(groups.len())
            .arg(next)
            .arg(groups)
            .arg(skip);
        let reply: Value = self.client.eval(&cmd, &POP_CAPPED).await?;
        let bad = || Error::new(crate::ErrorKind::Redis, "unexpected reply from pop_capped");
        type Popped = Vec<(String, Vec<Vec<u8>>)>;
        let (raw, next, more): (Popped, Vec<String>, i64) =
            redis::from_redis_value(reply).map_err(|_| bad())?;
        let mut batches = Vec::with_capacity(raw.len());
        for (group, stamped) in raw {
            let mut items = Vec::with_capacity(stamped.len());
            for mut b in stamped {
                // "<ms>:<bytes>": the stamp is the push time (Redis clock).
                let sep = b.iter().position(|&c| c == b':').ok_or_else(bad)?;
                b.drain(..=sep);
                items.push(b);
            }
            batches.push(Batch { group, items });
        }
        let batches = self.open_batches(shard, batches).await?;
        Ok((batches, next, more == 1))
    }

    /// Takes the next batch round-robin over the groups that have data, or `None` when no group
    /// has any. Groups found empty (drained or expired) leave the rotation on the way.
    pub async fn next_batch(&self, max: usize) -> Result<Option<Batch>> {
        self.op("next_batch", async {
            let mut rr = std::mem::take(&mut *self.rr.lock().unwrap());
            let res = self.next_batches(max, 1, &[], &mut rr).await;
            *self.rr.lock().unwrap() = rr;
            Ok(res?.pop())
        })
        .await
    }

    /// Up to `count` batches (each from another group) round-robin, skipping `skip`, with the
    /// caller's round-robin state: per shard, the groups the previous call already rotated to, so
    /// a steady stream costs one script call per `count` batches. Shards take turns. Empty when no
    /// (unskipped) group has data.
    pub(crate) async fn next_batches(
        &self,
        max: usize,
        count: usize,
        skip: &[String],
        rr: &mut RoundRobin,
    ) -> Result<Vec<Batch>> {
        if max == 0 {
            return Err(Error::invalid("max must be at least 1"));
        }
        let n = self.shards.len();
        rr.hints.resize(n, Vec::new());
        for _ in 0..n {
            let shard = rr.next_shard % n;
            rr.next_shard = (shard + 1) % n;
            for _ in 0..MAX_EMPTY_HOPS {
                let mut hints = std::mem::take(&mut rr.hints[shard]);
                let later = hints.split_off(hints.len().min(count));
                // Boxed: keeps the future's type shallow for callers' auto-trait checks.
                let (batches, next, more) =
                    Box::pin(self.pop_groups(shard, &hints, max, count, skip)).await?;
                let mut queued = later;
                for g in next {
                    if !queued.contains(&g) {
                        queued.push(g);
                    }
                }
                rr.hints[shard] = queued;
                if !batches.is_empty() {
                    return Ok(batches);
                }
                // Nothing found yet: go on while groups to pop were named, or the walk over the
                // rotation stopped at its bound (drained groups are cleared 1000 a call).
                if rr.hints[shard].is_empty() && !more {
                    break;
                }
            }
        }
        Ok(Vec::new())
    }

    /// The oldest `max` items of `group` (1 to [`MAX_PEEK`]), oldest first, left in place. Items
    /// older than `max_age` are left out, as a pop would discard them (so fewer than `max` may
    /// come back while such items head the group); nothing is written.
    pub async fn peek(&self, group: &str, max: usize) -> Result<Vec<Peeked>> {
        self.op("peek", async {
            validate_name("group", group)?;
            if !(1..=MAX_PEEK).contains(&max) {
                return Err(Error::invalid(format!(
                    "max must be 1 to {MAX_PEEK}; got {max}"
                )));
            }
            let max_age = millis("max_age", self.opts.max_age)?;
            let mut lrange = redis::cmd("LRANGE");
            lrange
                .arg(self.keys_for(group).group(group))
                .arg(0)
                .arg(max - 1);
            let replies = self.client.pipeline(&[redis::cmd("TIME"), lrange]).await?;
            let bad = || Error::new(crate::ErrorKind::Redis, "unexpected reply to peek");
            let mut replies = replies.into_iter();
            let (secs, micros): (u64, u64) = replies
                .next()
                .and_then(|v| redis::from_redis_value(v).ok())
                .ok_or_else(bad)?;
            let now = secs * 1000 + micros / 1000;
            let stamped: Vec<Vec<u8>> = replies
                .next()
                .and_then(|v| redis::from_redis_value(v).ok())
                .ok_or_else(bad)?;
            let mut out = Vec::with_capacity(stamped.len());
            for mut b in stamped {
                // "<ms>:<bytes>", as pop_capped.lua reads it.
                let sep = b.iter().position(|&c| c == b':').ok_or_else(bad)?;
                let pushed_at_ms: u64 = std::str::from_utf8(&b[..sep])
                    .ok()
                    .and_then(|s| s.parse().ok())
                    .ok_or_else(bad)?;
                if max_age > 0 && now.saturating_sub(pushed_at_ms) > max_age {
                    continue;
                }
                b.drain(..=sep);
                let (item, unreadable) = self.open_peeked(b);
                out.push(Peeked {
                    pushed_at_ms,
                    item,
                    unreadable,
                });
            }
            Ok(out)
        })
        .await
    }

    /// Number of items queued in `group`.
    pub async fn len(&self, group: &str) -> Result<u64> {
        self.op("len", async {
            validate_name("group", group)?;
            let mut conn = self.client.conn().await?;
            redis::cmd("LLEN")
                .arg(self.keys_for(group).group(group))
                .query_async(&mut conn)
                .await
                .map_err(|e| self.client.err(e))
        })
        .await
    }
}
