//! A queue's shard count, recorded in Redis where every reader finds it without knowing it:
//! `<prefix>:{<queue>}:shards` for a job queue, `<prefix>:{<queue>}:c:shards` for a capped queue
//! (the hash tag a one-shard queue's keys have, whatever the count; see docs/data-model.md,
//! "Shard count").
//!
//! The first handle that writes to a queue records its count: a producer's first enqueue (or
//! flow, or schedule), a worker as it starts, a capped queue's first push (`SET NX GET`: one
//! round trip, once per handle). Every handle checks its own count against the record before
//! its first operation (a writer by that same call, any other by one `GET`, once per handle), and
//! a handle made with another count is refused (`INVALID_ARGUMENT`) rather than reading or
//! writing the wrong shards. Operators' tools (`tideq`, the exporter, the dashboard) read the
//! record to know the count ([`Client::recorded_shards`], [`Client::queues`]).

use std::sync::atomic::{AtomicU8, Ordering};

use crate::client::Client;
use crate::discover::QueueKind;
use crate::error::{Error, Result};
use crate::keys::{shards_key, MAX_SHARDS};

// 0: nothing checked yet.
/// Checked: no record (so far), nothing recorded by this handle.
const NO_RECORD: u8 = 1;
/// The record holds this handle's count.
const RECORDED: u8 = 2;

/// One handle's check of its shard count against the record (shared by its clones): 0 before
/// the first check, then [`NO_RECORD`] or [`RECORDED`].
#[derive(Debug, Default)]
pub(crate) struct ShardCheck(AtomicU8);

impl ShardCheck {
    /// Before an operation of the handle on queue `name` (of `kind`, made with `shards`):
    /// records the count when `write` and none is recorded yet, and refuses a handle whose count
    /// differs from the record. Costs one command the first time (and the first write after a
    /// read found no record), none after.
    pub(crate) async fn ensure(
        &self,
        client: &Client,
        kind: QueueKind,
        name: &str,
        shards: usize,
        write: bool,
    ) -> Result<()> {
        let state = self.0.load(Ordering::Acquire);
        if state == RECORDED || (state == NO_RECORD && !write) {
            return Ok(());
        }
        let key = shards_key(client.config().prefix(), name, kind);
        let mut conn = client.conn().await?;
        let was: Option<String> = if write {
            redis::cmd("SET")
                .arg(&key)
                .arg(shards)
                .arg("NX")
                .arg("GET")
                .query_async(&mut conn)
                .await
        } else {
            redis::cmd("GET").arg(&key).query_async(&mut conn).await
        }
        .map_err(|e| client.err(e))?;
        match was {
            None if !write => self.0.store(NO_RECORD, Ordering::Release),
            None => self.0.store(RECORDED, Ordering::Release),
            Some(v) => {
                let recorded = parse(&key, &v)?;
                if recorded != shards {
                    return Err(mismatch(kind, name, recorded, shards, &key));
                }
                self.0.store(RECORDED, Ordering::Release);
            }
        }
        Ok(())
    }
}

/// A record's value, checked.
fn parse(key: &str, v: &str) -> Result<usize> {
    v.parse::<usize>()
        .ok()
        .filter(|n| (1..=MAX_SHARDS).contains(n))
        .ok_or_else(|| {
            Error::invalid(format!(
                "{key} holds {v:?}, not a shard count (1 to {MAX_SHARDS})"
            ))
        })
}

fn mismatch(kind: QueueKind, name: &str, recorded: usize, given: usize, key: &str) -> Error {
    let what = match kind {
        QueueKind::Jobs => "job queue",
        QueueKind::Capped => "capped queue",
    };
    Error::invalid(format!(
        "{what} {name:?} has {recorded} shard(s) (recorded in {key} when it was first used), \
         not {given}: every handle of a queue must use the same shard count (to change it, \
         drain the queue and delete that key)"
    ))
}

impl Client {
    /// The shard count recorded for the queue of `kind` named `name` by its first producer,
    /// worker or push (see [`Queue::sharded`](crate::Queue::sharded)); `None` when nothing
    /// recorded one (a queue never used, or last written by a tideq that did not record it).
    pub async fn recorded_shards(&self, kind: QueueKind, name: &str) -> Result<Option<usize>> {
        // Checks the name as a handle would.
        crate::keys::shard_tags(self.config().prefix(), name, 1)?;
        let key = shards_key(self.config().prefix(), name, kind);
        let mut conn = self.conn().await?;
        let v: Option<String> = redis::cmd("GET")
            .arg(&key)
            .query_async(&mut conn)
            .await
            .map_err(|e| self.err(e))?;
        v.map(|v| parse(&key, &v)).transpose()
    }
}

/// A worker's or consumer's check of its shard count as it starts (`check`: the handle's
/// [`ShardCheck::ensure`]), retried with backoff while Redis does not answer. `Ok(true)` to go
/// on, `Ok(false)` when stopped meanwhile, `Err` when the count is refused (or the credentials
/// or permissions are): the loop stops on it, having written nothing.
pub(crate) async fn check_at_start<F, Fut>(
    what: String,
    stop: &mut tokio::sync::watch::Receiver<bool>,
    check: F,
) -> Result<bool>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<()>>,
{
    use crate::background::{jittered, stopped, Outage};
    let mut backoff = std::time::Duration::from_millis(50);
    let mut outage = Outage::new(what);
    loop {
        let r = tokio::select! {
            _ = stopped(stop) => return Ok(false),
            r = check() => r,
        };
        match r {
            Ok(()) => {
                outage.recovered();
                return Ok(true);
            }
            Err(e) if e.is_fatal() || e.kind() == crate::ErrorKind::InvalidArgument => {
                return Err(e)
            }
            Err(e) => outage.failed(&e, backoff),
        }
        tokio::select! {
            _ = stopped(stop) => return Ok(false),
            _ = tokio::time::sleep(jittered(backoff)) => {}
        }
        backoff = (backoff * 2).min(std::time::Duration::from_secs(5));
    }
}
