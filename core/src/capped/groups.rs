//! The capped queue's groups and counters, as operators read them: `groups`, `groups_page`
//! (a walk by cursor) and `stats`.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::{CappedQueue, CappedStats};
use crate::error::{Error, Result};
use crate::scripts::{CAPPED_GROUPS, CAPPED_GROUP_PAGE, COUNT_CAPPED_GROUPS};

impl CappedQueue {
    /// Groups that currently hold data, in round-robin order (shard by shard). Reads the whole
    /// rotation (O(groups)); [`stats`](Self::stats) counts them cheaply.
    pub async fn groups(&self) -> Result<Vec<String>> {
        self.op("groups", async {
            let mut out = Vec::new();
            for k in self.shards.iter() {
                let cmd = CAPPED_GROUPS.cmd(&k.for_script(&CAPPED_GROUPS, ""));
                let (names, _): (Vec<String>, u64) = self.client.eval(&cmd, &CAPPED_GROUPS).await?;
                out.extend(names);
            }
            Ok(out)
        })
        .await
    }

    /// About `count` (1 to [`MAX_GROUP_PAGE`](crate::MAX_GROUP_PAGE)) of the groups that hold
    /// data, from `cursor` (`None`: the start), and the cursor of the next page (`None`: that was
    /// the last). Each call costs about `count` groups' work in Redis however many there are; a
    /// page is in no particular order (not the round-robin's). As with Redis's SCAN, a walk lists
    /// every group that holds data throughout, once.
    pub async fn groups_page(&self, cursor: Option<&str>, count: usize) -> Result<CappedGroupPage> {
        self.op("groups_page", async {
            if count == 0 || count > crate::MAX_GROUP_PAGE {
                return Err(Error::invalid(format!(
                    "a page holds 1 to {} groups, got {count}",
                    crate::MAX_GROUP_PAGE
                )));
            }
            let (mut shard, mut scan) = match cursor {
                None => (0, "0".to_string()),
                Some(c) => parse_capped_cursor(c, self.shards.len())?,
            };
            let mut groups = Vec::new();
            while shard < self.shards.len() && groups.len() < count {
                let k = &self.shards[shard];
                let mut cmd = CAPPED_GROUP_PAGE.cmd(&k.for_script(&CAPPED_GROUP_PAGE, ""));
                cmd.arg(&scan).arg(count - groups.len());
                let (names, next): (Vec<String>, String) =
                    self.client.eval(&cmd, &CAPPED_GROUP_PAGE).await?;
                groups.extend(names);
                if next == "0" {
                    (shard, scan) = (shard + 1, "0".to_string());
                } else {
                    scan = next;
                }
            }
            let cursor = (shard < self.shards.len()).then(|| format!("{shard}-{scan}"));
            Ok(CappedGroupPage { groups, cursor })
        })
        .await
    }

    /// Queue-wide counters, added up over the shards.
    pub async fn stats(&self) -> Result<CappedStats> {
        self.op("stats", async {
            let mut conn = self.client.conn().await?;
            let mut total = CappedStats::default();
            for k in self.shards.iter() {
                let counters: HashMap<String, u64> = redis::cmd("HGETALL")
                    .arg(k.stats())
                    .query_async(&mut conn)
                    .await
                    .map_err(|e| self.client.err(e))?;
                let cmd = COUNT_CAPPED_GROUPS.cmd(&k.for_script(&COUNT_CAPPED_GROUPS, ""));
                let (_, groups): (Vec<String>, u64) =
                    self.client.eval(&cmd, &COUNT_CAPPED_GROUPS).await?;
                let get = |k: &str| counters.get(k).copied().unwrap_or(0);
                total.pushed += get("pushed");
                total.dropped += get("dropped");
                total.discarded += get("discarded");
                total.delivered += get("delivered");
                total.unreadable += get("unreadable");
                total.requeued += get("requeued");
                total.groups += groups;
            }
            Ok(total)
        })
        .await
    }
}

/// A page of a capped queue's groups, and where the next one starts (see
/// [`CappedQueue::groups_page`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CappedGroupPage {
    pub groups: Vec<String>,
    /// Give it to the next call; `None` when this was the last page.
    pub cursor: Option<String>,
}

/// A cursor made by [`CappedQueue::groups_page`]: `shard-scan`.
fn parse_capped_cursor(c: &str, shards: usize) -> Result<(usize, String)> {
    let bad = || {
        Error::invalid(format!(
            "{c:?} is not a cursor of this queue's groups: give back the cursor a page returned"
        ))
    };
    let (shard, scan) = c.split_once('-').ok_or_else(bad)?;
    let shard: usize = shard.parse().map_err(|_| bad())?;
    if shard >= shards || scan.parse::<u64>().is_err() {
        return Err(bad());
    }
    Ok((shard, scan.to_string()))
}
