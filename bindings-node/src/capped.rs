//! `CappedQueue`: wraps `tideq::CappedQueue`. Arguments are converted here, the work is done by
//! the core on napi's tokio runtime, and results come back as Promises. At-most-once: a popped
//! batch is gone from Redis even if the code that received it fails.

use napi::bindgen_prelude::*;
use napi_derive::napi;

use crate::client::client_option;
use crate::convert::{array, bytes, count, count1, string, to_millis, Options};
use crate::error::{spawn, throw, type_error, Res};
use crate::results::Bytes;

/// Options of `new CappedQueue(name, options)`. Every field is optional.
// Declared for the TypeScript definitions only; `convert::Options` reads the fields one by one.
#[allow(dead_code)]
#[napi(object, object_from_js = false, object_to_js = false)]
pub struct CappedQueueOptions {
    /// The connection to use. Default: a new `Client` on `url`.
    #[napi(ts_type = "Client")]
    pub client: Option<()>,
    /// Shorthand for `client: new Client({ url })`; not allowed together with `client`.
    pub url: Option<String>,
    /// Items kept per group; pushing more drops the oldest. Default 1000.
    pub capacity: Option<u32>,
    /// A group that receives nothing for this long disappears. `null`: never. Default 1 day.
    #[napi(ts_type = "number | null")]
    pub ttl_ms: Option<f64>,
    /// Items older than this are discarded when consumed, never delivered. Default: no limit.
    #[napi(ts_type = "number | null")]
    pub max_age_ms: Option<f64>,
    /// Split the queue in this many shards (1 to 1024), each with its own Redis Cluster hash
    /// tag, so one queue spreads over a cluster's masters. Queue names may not contain `#`.
    /// A group lives on one shard (chosen by its name), so its order and cap hold; consumers
    /// serve every shard; `stats` adds the shards up.
    /// Every handle on a queue must use the same count: the first producer, worker or push
    /// records it in Redis, and a handle made with another count is refused (`INVALID_ARGUMENT`)
    /// at its first call. Changing it means draining the queue, then deleting that record
    /// (`<prefix>:{<queue>}:shards`). Default 1. On a single server it works but gains nothing.
    pub shards: Option<u32>,
    /// Encryption at rest (the same option `new Queue` takes): each item is sealed before it
    /// reaches Redis and opened when popped or peeked; items stored in clear read as they are.
    /// An item a pop cannot open (its key is missing or does not match) is not delivered: it is
    /// kept in the queue's unreadable list (`unreadable`, `requeueUnreadable`).
    pub encryption: Option<crate::crypt::EncryptionOptions>,
}

const QUEUE_KEYS: &[&str] = &[
    "client",
    "url",
    "capacity",
    "ttlMs",
    "maxAgeMs",
    "shards",
    "encryption",
];

/// A batch taken from one group, oldest item first.
#[napi(object, object_from_js = false)]
pub struct Batch {
    pub group: String,
    #[napi(ts_type = "Buffer[]")]
    pub items: Items,
}

/// Items on their way to JS: an array of `Buffer`s, each a copy of one item. Copying a small
/// item into a fresh Buffer is cheaper than handing V8 the Rust allocation (an external buffer
/// with a finalizer per item).
pub struct Items(pub Vec<Vec<u8>>);

impl ToNapiValue for Items {
    unsafe fn to_napi_value(
        raw_env: napi::sys::napi_env,
        val: Self,
    ) -> Result<napi::sys::napi_value> {
        let env = Env::from_raw(raw_env);
        let mut arr = env.create_array(val.0.len() as u32)?;
        for (i, item) in val.0.iter().enumerate() {
            arr.set(i as u32, &BufferSlice::copy_from(&env, item)?)?;
        }
        unsafe { Array::to_napi_value(raw_env, arr) }
    }
}

/// An item still queued in a group, as `peek` shows it.
#[napi(object, object_from_js = false)]
pub struct Peeked {
    /// When it was pushed: ms since the epoch, Redis clock.
    pub pushed_at_ms: f64,
    /// The item's bytes (its sealed bytes when `unreadable` is set).
    #[napi(ts_type = "Buffer")]
    pub item: Bytes,
    /// Set when this handle cannot open the item (it is encrypted with a key the handle lacks or
    /// that does not match, or the handle has no encryption): why, naming the key id.
    pub unreadable: Option<String>,
}

/// An item a pop took but could not open (its key was missing or did not match), kept in the
/// queue's unreadable list (`unreadable`).
#[napi(object, object_from_js = false)]
pub struct UnreadableItem {
    /// The group it was popped from (and goes back to).
    pub group: String,
    /// The id of the key it is sealed with.
    pub key_id: String,
    /// Why it could not be opened (names the key id).
    pub error: String,
    /// When the pop found it unreadable: ms since the epoch (the consumer's clock).
    pub at_ms: f64,
    /// The sealed bytes, as they were stored.
    #[napi(ts_type = "Buffer")]
    pub item: Bytes,
}

/// Options of `peek(group, options)`.
// Declared for the TypeScript definitions only; `peek` reads the field itself.
#[allow(dead_code)]
#[napi(object, object_from_js = false, object_to_js = false)]
pub struct PeekOptions {
    /// Most items shown, 1 to 1000. Default 10.
    pub max: Option<u32>,
}

/// Queue-wide counters kept in Redis.
#[napi(object, object_from_js = false)]
pub struct CappedStats {
    /// Items accepted by `push`/`pushMany`.
    pub pushed: i64,
    /// Items dropped because their group was over capacity.
    pub dropped: i64,
    /// Items discarded at consume time because they were older than `maxAgeMs`.
    pub discarded: i64,
    /// Items handed out by `popBatch`/`nextBatch`/consumers.
    pub delivered: i64,
    /// Groups currently holding data.
    pub groups: i64,
    /// Popped items that could not be opened (a missing or wrong key), kept in the unreadable
    /// list instead of being delivered (not counted in `delivered`).
    pub unreadable: i64,
    /// Unreadable items pushed back by `requeueUnreadable`.
    pub requeued: i64,
}

impl From<tideq::CappedStats> for CappedStats {
    fn from(s: tideq::CappedStats) -> Self {
        CappedStats {
            pushed: s.pushed as i64,
            dropped: s.dropped as i64,
            discarded: s.discarded as i64,
            delivered: s.delivered as i64,
            groups: s.groups as i64,
            unreadable: s.unreadable as i64,
            requeued: s.requeued as i64,
        }
    }
}

/// A capped grouped queue: per-group FIFOs capped at `capacity` (drop-oldest), round-robin
/// batches over groups. Delivery is at-most-once.
///
/// Errors carry `err.code`: `INVALID_ARGUMENT`, `PAYLOAD_TOO_LARGE`, `CONNECTION`, `AUTH`
/// (Redis refused the credentials, or needs some), `PERMISSION` (the Redis user may not run a
/// command), `OUT_OF_MEMORY` (Redis is full and refuses writes; reads work), `NOT_REDIS`,
/// `EVICTION_POLICY` (the client's `evictionCheck: 'refuse'`), `REDIS`, `CLOSED`. An argument of
/// the wrong JS type is a `TypeError` whose code is `INVALID_ARGUMENT`. Async methods reject
/// (they never throw synchronously), with the stack of the call; constructors throw.
#[napi]
pub struct CappedQueue {
    pub(crate) inner: tideq::CappedQueue,
}

impl CappedQueue {
    fn build(name: &Unknown, options: Option<&Unknown>) -> Res<tideq::CappedQueue> {
        let name = string("queue name", name)?;
        let opts = Options::new("CappedQueue options", options, QUEUE_KEYS)?;
        let client = client_option(&opts)?;
        let defaults = tideq::CappedOptions::default();
        let capped = tideq::CappedOptions {
            capacity: opts.get("capacity", count1)?.unwrap_or(defaults.capacity),
            ttl: opts.nullable_millis("ttlMs", defaults.ttl)?,
            max_age: opts.nullable_millis("maxAgeMs", defaults.max_age)?,
            encryption: opts.get("encryption", crate::crypt::encryption)?,
        };
        let shards = opts.get("shards", count1)?.unwrap_or(1);
        Ok(tideq::CappedQueue::sharded(&client, &name, shards, capped)?)
    }
}

#[napi]
impl CappedQueue {
    /// A handle on queue `name`. Validates the name and options (throws `INVALID_ARGUMENT`);
    /// does not touch Redis.
    #[napi(
        constructor,
        ts_args_type = "name: string, options?: CappedQueueOptions"
    )]
    pub fn new(env: &Env, name: Unknown, options: Option<Unknown>) -> Result<Self> {
        Ok(CappedQueue {
            inner: throw(env, CappedQueue::build(&name, options.as_ref()))?,
        })
    }

    #[napi(getter)]
    pub fn name(&self) -> String {
        self.inner.name().to_string()
    }

    /// How many shards the queue is split in (1 when not sharded).
    #[napi(getter)]
    pub fn shards(&self) -> u32 {
        self.inner.shard_count() as u32
    }

    #[napi(getter)]
    pub fn capacity(&self) -> f64 {
        self.inner.options().capacity as f64
    }

    /// `null` when groups never expire.
    #[napi(getter)]
    pub fn ttl_ms(&self) -> Option<f64> {
        to_millis(self.inner.options().ttl)
    }

    /// `null` when items never age out.
    #[napi(getter)]
    pub fn max_age_ms(&self) -> Option<f64> {
        to_millis(self.inner.options().max_age)
    }

    /// Appends `item` to `group`, dropping the oldest items above capacity. Resolves with how
    /// many items were dropped. A string item is stored as its UTF-8 bytes.
    #[napi(
        ts_args_type = "group: string, item: Buffer | Uint8Array | string",
        ts_return_type = "Promise<number>"
    )]
    pub fn push<'env>(
        &self,
        env: &'env Env,
        group: Unknown,
        item: Unknown,
    ) -> Result<PromiseRaw<'env, i64>> {
        let q = self.inner.clone();
        let args = string("group", &group).and_then(|g| Ok((g, bytes("item", &item)?)));
        spawn(
            env,
            args.map(|(group, item)| async move { Ok(q.push(&group, item).await? as i64) }),
        )
    }

    /// Pushes many `[group, item]` pairs in one round trip. Every pair is checked first: on bad
    /// input nothing is written. Resolves with, per item, how many items its push dropped.
    #[napi(
        ts_args_type = "items: Array<[group: string, item: Buffer | Uint8Array | string]>",
        ts_return_type = "Promise<number[]>"
    )]
    pub fn push_many<'env>(
        &self,
        env: &'env Env,
        items: Unknown,
    ) -> Result<PromiseRaw<'env, Vec<i64>>> {
        let q = self.inner.clone();
        let pairs = array("items", &items, |i, pair| {
            let what = format!("items[{i}]");
            let mut parts = array(&what, pair, |_, el| Ok(*el))?.into_iter();
            match (parts.next(), parts.next(), parts.next()) {
                (Some(g), Some(item), None) => Ok((
                    string(&format!("{what}[0] (group)"), &g)?,
                    bytes(&format!("{what}[1] (item)"), &item)?,
                )),
                _ => Err(type_error(format!("{what} must be a [group, item] pair"))),
            }
        });
        spawn(
            env,
            pairs.map(|pairs| async move {
                let drops = q.push_many(&pairs).await?;
                Ok(drops.into_iter().map(|d| d as i64).collect())
            }),
        )
    }

    /// Atomically removes and returns up to `max` items of `group`, oldest first (exactly `max`
    /// when that many are queued).
    #[napi(
        ts_args_type = "group: string, max: number",
        ts_return_type = "Promise<Buffer[]>"
    )]
    pub fn pop_batch<'env>(
        &self,
        env: &'env Env,
        group: Unknown,
        max: Unknown,
    ) -> Result<PromiseRaw<'env, Items>> {
        let q = self.inner.clone();
        let args = string("group", &group).and_then(|g| Ok((g, count1("max", &max)?)));
        spawn(
            env,
            args.map(|(group, max)| async move { Ok(Items(q.pop_batch(&group, max).await?)) }),
        )
    }

    /// Takes the next batch of up to `max` items, round-robin over the groups that have data;
    /// resolves with `null` when no group has any.
    #[napi(ts_args_type = "max: number", ts_return_type = "Promise<Batch | null>")]
    pub fn next_batch<'env>(
        &self,
        env: &'env Env,
        max: Unknown,
    ) -> Result<PromiseRaw<'env, Option<Batch>>> {
        let q = self.inner.clone();
        spawn(
            env,
            count1("max", &max).map(|max| async move {
                Ok(q.next_batch(max).await?.map(|b| Batch {
                    group: b.group,
                    items: Items(b.items),
                }))
            }),
        )
    }

    /// The oldest `max` items of `group` (default 10, at most 1000), oldest first, left in place.
    /// Items older than `maxAgeMs` are left out, as a pop would discard them, so fewer than
    /// `max` may come back. An encrypted item this handle cannot open comes back as stored
    /// (sealed), its `unreadable` naming the key id. Rejects with `INVALID_ARGUMENT` for a bad
    /// group or `max`.
    #[napi(
        ts_args_type = "group: string, options?: PeekOptions",
        ts_return_type = "Promise<Peeked[]>"
    )]
    pub fn peek<'env>(
        &self,
        env: &'env Env,
        group: Unknown,
        options: Option<Unknown>,
    ) -> Result<PromiseRaw<'env, Vec<Peeked>>> {
        let q = self.inner.clone();
        let args = string("group", &group).and_then(|g| {
            let o = Options::new("peek options", options.as_ref(), &["max"])?;
            Ok((
                g,
                o.get("max", count)?.unwrap_or(tideq::capped::DEFAULT_PEEK),
            ))
        });
        spawn(
            env,
            args.map(|(group, max)| async move {
                let peeked = q.peek(&group, max).await?;
                Ok(peeked
                    .into_iter()
                    .map(|p| Peeked {
                        pushed_at_ms: p.pushed_at_ms as f64,
                        item: Bytes(p.item),
                        unreadable: p.unreadable,
                    })
                    .collect())
            }),
        )
    }

    /// Up to `max` (1 to 1000, default 100) of the items pops could not open, newest first:
    /// each with its group, key id, error and sealed bytes. They stay listed (the newest 1000
    /// per shard are kept).
    #[napi(
        ts_args_type = "options?: { max?: number }",
        ts_return_type = "Promise<UnreadableItem[]>"
    )]
    pub fn unreadable<'env>(
        &self,
        env: &'env Env,
        options: Option<Unknown>,
    ) -> Result<PromiseRaw<'env, Vec<UnreadableItem>>> {
        let q = self.inner.clone();
        let max = Options::new("unreadable options", options.as_ref(), &["max"])
            .and_then(|o| Ok(o.get("max", count)?.unwrap_or(100)));
        spawn(
            env,
            max.map(|max| async move {
                let items = q.unreadable(max).await?;
                Ok(items
                    .into_iter()
                    .map(|u| UnreadableItem {
                        group: u.group,
                        key_id: u.key_id,
                        error: u.error,
                        at_ms: u.at_ms as f64,
                        item: Bytes(u.item),
                    })
                    .collect())
            }),
        )
    }

    /// Pushes the unreadable items this handle can now open (their key is restored in its
    /// `encryption`) back to their groups, and resolves with how many; the others stay listed.
    #[napi(ts_return_type = "Promise<number>")]
    pub fn requeue_unreadable<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, i64>> {
        let q = self.inner.clone();
        spawn(
            env,
            Ok(async move { Ok(q.requeue_unreadable().await? as i64) }),
        )
    }

    /// Number of items queued in `group`.
    #[napi(ts_args_type = "group: string", ts_return_type = "Promise<number>")]
    pub fn len<'env>(&self, env: &'env Env, group: Unknown) -> Result<PromiseRaw<'env, i64>> {
        let q = self.inner.clone();
        spawn(
            env,
            string("group", &group).map(|group| async move { Ok(q.len(&group).await? as i64) }),
        )
    }

    /// Groups that currently hold data, in round-robin order. Reads the whole rotation; to
    /// show some of many, read a page with `groupsPage`.
    #[napi(ts_return_type = "Promise<string[]>")]
    pub fn groups<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, Vec<String>>> {
        let q = self.inner.clone();
        spawn(env, Ok(async move { Ok(q.groups().await?) }))
    }

    /// About `count` (1 to 250, default 100) of the groups holding data, from `cursor` (absent
    /// or `null`: the start), in no particular order, and the cursor of the next page (`null`
    /// after the last). Each call costs about `count` groups' work, however many there are.
    #[napi(
        ts_args_type = "options?: { cursor?: string | null; count?: number }",
        ts_return_type = "Promise<CappedGroupPage>"
    )]
    pub fn groups_page<'env>(
        &self,
        env: &'env Env,
        options: Option<Unknown>,
    ) -> Result<PromiseRaw<'env, CappedGroupPage>> {
        let q = self.inner.clone();
        let args = crate::control::page_args("groupsPage options", options.as_ref());
        spawn(
            env,
            args.map(|(cursor, count)| async move {
                let page = q.groups_page(cursor.as_deref(), count).await?;
                Ok(CappedGroupPage {
                    groups: page.groups,
                    cursor: page.cursor,
                })
            }),
        )
    }

    /// Queue-wide counters.
    #[napi(ts_return_type = "Promise<CappedStats>")]
    pub fn stats<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, CappedStats>> {
        let q = self.inner.clone();
        spawn(env, Ok(async move { Ok(q.stats().await?.into()) }))
    }
}

/// A page of a capped queue's groups (`groupsPage`) and the cursor of the next page.
#[napi(object, object_from_js = false, use_nullable = true)]
pub struct CappedGroupPage {
    /// The page's groups, in no particular order.
    pub groups: Vec<String>,
    /// Give it to the next `groupsPage` call; `null` when this was the last page.
    pub cursor: Option<String>,
}
