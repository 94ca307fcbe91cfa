//! Encryption at rest for the capped queue: items sealed by `push`/`push_many` before they reach
//! Redis and opened by the pops and `peek` (`crate::crypt`). The queue is at-most-once (a pop
//! removes what it takes), so an item a pop cannot open (its key is missing or does not match) is
//! neither handed over as ciphertext nor dropped: it is kept in the shard's bounded unreadable
//! list, where [`CappedQueue::unreadable`] shows it and [`CappedQueue::requeue_unreadable`] pushes
//! it back once the key is available.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::{millis, Batch, CappedQueue};
use crate::crypt::{Encryption, Sealed};
use crate::error::{Error, Result};
use crate::scripts::{KEEP_UNREADABLE_CAPPED, REQUEUE_CAPPED};

/// Most entries a capped queue's unreadable list keeps per shard; older ones are dropped.
pub const MAX_UNREADABLE: usize = 1000;

/// An item a pop took but could not open, as [`CappedQueue::unreadable`] lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnreadableItem {
    /// The group it was popped from (and goes back to).
    pub group: String,
    /// The id of the key it is sealed with.
    pub key_id: String,
    /// Why it could not be opened (names the key id).
    pub error: String,
    /// When the pop found it unreadable: ms since the epoch (the consumer's clock).
    pub at_ms: u64,
    /// The sealed bytes, as they were stored.
    #[serde(with = "serde_bytes")]
    pub item: Vec<u8>,
}

/// Why a stored item cannot be delivered by a handle with `enc` (`None`: it can, as `Ok`).
fn open_item(
    enc: Option<&Encryption>,
    item: Vec<u8>,
) -> std::result::Result<Vec<u8>, (Vec<u8>, String, String)> {
    match enc {
        // Without encryption only a well-formed sealed value is held back (a clear item that
        // merely starts with the magic bytes is delivered as it is).
        None => match Sealed::parse(&item) {
            Ok(Some(s)) => {
                let id = s.key_id.to_string();
                let err = format!(
                    "the item is sealed with key {id:?} and this handle has no encryption \
                     configured"
                );
                Err((item, id, err))
            }
            _ => Ok(item),
        },
        Some(e) => match e.open(&item) {
            Ok(plain) => Ok(plain),
            Err(err) => {
                let id = crate::crypt::sealed_key_id(&item).unwrap_or_default();
                Err((item, id, err.message().to_string()))
            }
        },
    }
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

impl CappedQueue {
    /// The items to send: sealed with the current key when the queue encrypts (`None`: send the
    /// caller's bytes, no copy).
    pub(crate) fn seal_items<I: AsRef<[u8]>>(&self, items: &[I]) -> Result<Option<Vec<Vec<u8>>>> {
        let Some(e) = &self.opts.encryption else {
            return Ok(None);
        };
        items
            .iter()
            .map(|i| e.seal(i.as_ref()))
            .collect::<Result<_>>()
            .map(Some)
    }

    /// A peeked item opened: the plain bytes, or the stored ones and why they cannot be opened.
    pub(crate) fn open_peeked(&self, item: Vec<u8>) -> (Vec<u8>, Option<String>) {
        match open_item(self.opts.encryption.as_ref(), item) {
            Ok(plain) => (plain, None),
            Err((item, _, err)) => (item, Some(err)),
        }
    }

    /// Popped batches (from `shard`) opened. Items that cannot be opened leave their batch (a
    /// batch left empty is dropped) and go to the shard's unreadable list in one script call,
    /// with a warning naming their key ids and count. Without encryption and without sealed
    /// items this costs no call and no copy.
    pub(crate) async fn open_batches(
        &self,
        shard: usize,
        batches: Vec<Batch>,
    ) -> Result<Vec<Batch>> {
        let enc = self.opts.encryption.as_ref();
        // Without encryption, the usual case (no sealed item) hands the batches on untouched.
        let sealed = |i: &Vec<u8>| matches!(Sealed::parse(i), Ok(Some(_)));
        if enc.is_none() && !batches.iter().any(|b| b.items.iter().any(sealed)) {
            return Ok(batches);
        }
        let mut kept: Vec<UnreadableItem> = Vec::new();
        let mut out = Vec::with_capacity(batches.len());
        for b in batches {
            let mut items = Vec::with_capacity(b.items.len());
            for item in b.items {
                match open_item(enc, item) {
                    Ok(plain) => items.push(plain),
                    Err((item, key_id, error)) => kept.push(UnreadableItem {
                        group: b.group.clone(),
                        key_id,
                        error,
                        at_ms: now_ms(),
                        item,
                    }),
                }
            }
            if !items.is_empty() {
                out.push(Batch {
                    group: b.group,
                    items,
                });
            }
        }
        if kept.is_empty() {
            return Ok(out);
        }
        let mut ids: Vec<&str> = kept.iter().map(|u| u.key_id.as_str()).collect();
        ids.sort_unstable();
        ids.dedup();
        log::warn!(
            "capped queue {:?}: {} popped item(s) sealed with key(s) {ids:?} could not be opened; \
             kept in its unreadable list (see unreadable() and requeue_unreadable())",
            self.name(),
            kept.len()
        );
        let k = &self.shards[shard];
        let mut cmd = KEEP_UNREADABLE_CAPPED.cmd(&k.for_script(&KEEP_UNREADABLE_CAPPED, ""));
        cmd.arg(MAX_UNREADABLE);
        for u in &kept {
            cmd.arg(rmp_serde::to_vec_named(u).expect("an unreadable entry serializes"));
        }
        // The pop already took them: on a failed write, say so loudly and still deliver the
        // readable items rather than lose them too.
        if let Err(e) = self.client.eval::<u64>(&cmd, &KEEP_UNREADABLE_CAPPED).await {
            log::error!(
                "capped queue {:?}: {} unreadable item(s) (keys {ids:?}) were popped but could \
                 not be kept in the unreadable list: {e}",
                self.name(),
                kept.len()
            );
        }
        Ok(out)
    }

    /// Up to `max` (1 to [`MAX_UNREADABLE`]) of the items pops could not open, newest first:
    /// each with its group, key id, error and sealed bytes. They stay listed.
    pub async fn unreadable(&self, max: usize) -> Result<Vec<UnreadableItem>> {
        self.op("unreadable", async {
            if !(1..=MAX_UNREADABLE).contains(&max) {
                return Err(Error::invalid(format!(
                    "max must be 1 to {MAX_UNREADABLE}; got {max}"
                )));
            }
            let mut out = Vec::new();
            for k in self.shards.iter() {
                out.extend(
                    self.read_unreadable(&k.unreadable(), max)
                        .await?
                        .into_iter()
                        .map(|(_, u)| u),
                );
            }
            out.sort_by_key(|u| std::cmp::Reverse(u.at_ms));
            out.truncate(max);
            Ok(out)
        })
        .await
    }

    /// A shard's unreadable list: each entry as stored and decoded (entries that do not decode
    /// are left out).
    async fn read_unreadable(
        &self,
        key: &str,
        max: usize,
    ) -> Result<Vec<(Vec<u8>, UnreadableItem)>> {
        let mut conn = self.client.conn().await?;
        let raw: Vec<Vec<u8>> = redis::cmd("LRANGE")
            .arg(key)
            .arg(0)
            .arg(max as i64 - 1)
            .query_async(&mut conn)
            .await
            .map_err(|e| self.client.err(e))?;
        Ok(raw
            .into_iter()
            .filter_map(|r| rmp_serde::from_slice(&r).ok().map(|u| (r, u)))
            .collect())
    }

    /// Pushes the unreadable items this handle can now open (their key was restored) back to
    /// their groups, as a push would (capacity and TTL apply; they are stored as they were,
    /// sealed), and returns how many. The others stay listed. An entry is pushed back once even
    /// when several handles requeue at the same time.
    pub async fn requeue_unreadable(&self) -> Result<u64> {
        self.op("requeue_unreadable", async {
            let Some(enc) = &self.opts.encryption else {
                return Ok(0);
            };
            let ttl = millis("ttl", self.opts.ttl)?;
            let mut total = 0;
            for k in self.shards.iter() {
                let entries = self
                    .read_unreadable(&k.unreadable(), MAX_UNREADABLE)
                    .await?;
                let ready: Vec<_> = entries
                    .into_iter()
                    .filter(|(_, u)| enc.open(&u.item).is_ok())
                    .collect();
                if ready.is_empty() {
                    continue;
                }
                let mut index: HashMap<&str, usize> = HashMap::new();
                let mut names: Vec<&str> = Vec::new();
                for (_, u) in &ready {
                    if !index.contains_key(u.group.as_str()) {
                        names.push(&u.group);
                        index.insert(&u.group, names.len());
                    }
                }
                let mut keys = k.for_script(&REQUEUE_CAPPED, "");
                for g in &names {
                    keys.push(k.group(g));
                    keys.push(k.group_wake(g));
                }
                let mut cmd = REQUEUE_CAPPED.cmd(&keys);
                cmd.arg(self.opts.capacity)
                    .arg(ttl)
                    .arg(names.len())
                    .arg(&names);
                // Oldest first, so a group gets them back in the order they were pushed.
                for (raw, u) in ready.iter().rev() {
                    cmd.arg(index[u.group.as_str()]).arg(raw).arg(&u.item);
                }
                total += self.client.eval::<u64>(&cmd, &REQUEUE_CAPPED).await?;
            }
            Ok(total)
        })
        .await
    }
}
