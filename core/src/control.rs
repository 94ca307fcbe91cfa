//! Queue control for a job queue: what decides which job runs next besides order. Priorities and
//! groups are given per job at enqueue (`EnqueueOptions::priority`, `::group`); this module holds
//! the queue-wide settings every worker obeys, kept in Redis so they apply across processes and
//! can change while workers run: pause/resume (the queue or one group), a cap on running jobs, a
//! start rate, and the groups' concurrency limit and start rate (a default and per group).
//!
//! Rate limits count job *starts* (deliveries) in a sliding window: no window of that length
//! ever holds more (or, given a burst, in a token bucket); `max_active` caps the jobs *running*
//! at once. Limited jobs stay where they are,
//! and an idle worker waits exactly until the window allows the next start.

use std::collections::HashMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::job::ms;
use crate::jobs::Queue;
use crate::keys::{shard_of, validate_name};
use crate::scripts::{GROUP_INFO, LIST_GROUPS, SET_GROUP_CONTROL, SET_QUEUE_CONTROL};

/// A start rate: at most `max` starts in any window of `per` (a sliding window), or, with a
/// `burst`, a token bucket that holds at most `burst` starts and refills `max` every `per`.
///
/// The window never lets more than `max` start within any `per`; the bucket lets a quiet queue or
/// group start `burst` at once, then paces the rest evenly (one every `per / max`), as Sidekiq's
/// bucket limiter and Hatchet's units do. A new bucket starts full.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rate {
    pub max: u32,
    pub per: Duration,
    /// `Some`: a token bucket of this many starts (at least 1), refilled at `max` per `per`.
    #[serde(default)]
    pub burst: Option<u32>,
}

impl Rate {
    /// At most `max` starts in any window of `per`.
    pub fn new(max: u32, per: Duration) -> Self {
        Rate {
            max,
            per,
            burst: None,
        }
    }

    /// A token bucket: up to `burst` starts at once, refilled at `max` per `per`.
    pub fn bucket(max: u32, per: Duration, burst: u32) -> Self {
        Rate {
            max,
            per,
            burst: Some(burst),
        }
    }

    fn encode(self) -> Result<String> {
        if self.max == 0 || self.per.as_millis() == 0 {
            return Err(Error::invalid(
                "a rate limit needs at least 1 start per window of at least 1 ms",
            ));
        }
        match self.burst {
            None => Ok(format!("{}|{}", self.max, ms(self.per))),
            Some(0) => Err(Error::invalid(
                "a token bucket's burst must be at least 1 start",
            )),
            Some(b) => Ok(format!("{}|{}|b{b}", self.max, ms(self.per))),
        }
    }

    fn decode(s: &str) -> Option<Self> {
        let (n, rest) = s.split_once('|')?;
        let (per, burst) = match rest.split_once("|b") {
            Some((per, b)) => (per, Some(b.parse().ok()?)),
            None => (rest, None),
        };
        Some(Rate {
            max: n.parse().ok()?,
            per: Duration::from_millis(per.parse().ok()?),
            burst,
        })
    }
}

/// Queue-wide limits; `None` is no limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// At most this many jobs of the queue running at once, across all workers.
    pub max_active: Option<u32>,
    /// At most this many job starts per window, across all workers.
    pub rate: Option<Rate>,
    /// Each group: at most this many of its jobs running at once (groups without their own).
    pub group_concurrency: Option<u32>,
    /// Each group: at most this many starts per window (groups without their own).
    pub group_rate: Option<Rate>,
}

/// One group's own limits; `None` is the queue's default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GroupLimits {
    pub concurrency: Option<u32>,
    pub rate: Option<Rate>,
}

/// What a group holds and obeys now (on its shard).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupInfo {
    pub group: String,
    /// Jobs ready to start (not delayed).
    pub ready: u64,
    /// Jobs running.
    pub active: u64,
    pub paused: bool,
    /// The concurrency limit in force (its own, else the queue's default).
    pub concurrency: Option<u32>,
    /// The start rate in force (its own, else the queue's default).
    pub rate: Option<Rate>,
    /// How long the longest-ready of its next 10 jobs (in its order of turn) has been ready
    /// (zero when none is): the group's own latency. Read by [`Queue::group`] only; `None` in
    /// the lists of groups ([`Queue::groups`], [`Queue::groups_page`]), which would otherwise
    /// look up every listed group's jobs.
    #[serde(default)]
    pub latency: Option<Duration>,
    /// The shared limiter its starts take from ([`Queue::set_group_limiter`]), if any.
    #[serde(default)]
    pub limiter: Option<String>,
}

/// Shard `shard`'s share of a limit `n` split over `shards` (the first `n % shards` get one
/// more), so the shares add up to `n`.
fn share(n: u32, shard: usize, shards: usize) -> u32 {
    let (base, rest) = (n / shards as u32, n % shards as u32);
    base + u32::from((shard as u32) < rest)
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map(|v| v.to_string()).unwrap_or_default()
}

fn positive(what: &str, v: Option<u32>) -> Result<Option<u32>> {
    match v {
        Some(0) => Err(Error::invalid(format!(
            "{what} must be at least 1 (or none)"
        ))),
        v => Ok(v),
    }
}

impl Queue {
    pub(crate) async fn set_control(
        &self,
        op: &'static str,
        target: &str,
        settings: &[(&str, String)],
    ) -> Result<()> {
        self.op(op, self.set_control_on_shards(target, settings))
            .await
    }

    async fn set_control_on_shards(&self, target: &str, settings: &[(&str, String)]) -> Result<()> {
        self.set_control_per_shard(target, |_| settings.to_vec())
            .await
    }

    /// [`set_control`](Self::set_control) with each shard's own settings (`per_shard(shard)`).
    async fn set_control_per_shard<'a>(
        &self,
        target: &str,
        per_shard: impl Fn(usize) -> Vec<(&'a str, String)>,
    ) -> Result<()> {
        // "queue", or "group:<name>".
        let group = target.strip_prefix("group:");
        let script = if group.is_some() {
            &*SET_GROUP_CONTROL
        } else {
            &*SET_QUEUE_CONTROL
        };
        for shard in 0..self.shards.len() {
            let mut cmd = self.script_cmd(shard, script);
            if let Some(g) = group {
                cmd.arg(g);
            }
            for (k, v) in per_shard(shard) {
                cmd.arg(k).arg(v);
            }
            self.client.eval::<i64>(&cmd, script).await?;
        }
        Ok(())
    }

    /// Workers stop starting jobs of this queue (running ones finish; enqueues go on).
    pub async fn pause(&self) -> Result<()> {
        self.set_control("pause", "queue", &[("paused", "1".into())])
            .await
    }

    /// Workers start jobs again; idle ones are woken at once.
    pub async fn resume(&self) -> Result<()> {
        self.set_control("resume", "queue", &[("paused", String::new())])
            .await
    }

    /// Stops starting jobs of `group` (other groups go on).
    pub async fn pause_group(&self, group: &str) -> Result<()> {
        validate_name("group", group)?;
        self.set_control(
            "pause_group",
            &format!("group:{group}"),
            &[("paused", "1".into())],
        )
        .await
    }

    /// Starts jobs of `group` again.
    pub async fn resume_group(&self, group: &str) -> Result<()> {
        validate_name("group", group)?;
        self.set_control(
            "resume_group",
            &format!("group:{group}"),
            &[("paused", String::new())],
        )
        .await
    }

    /// Replaces the queue's limits (every field; `None` removes that limit).
    ///
    /// On a sharded queue, `max_active` and `rate` hold across all shards: each shard gets its
    /// share (`max_active` 5 over 4 shards: 2, 1, 1, 1), so the queue as a whole never runs or
    /// starts more than the limit, though a busy shard cannot borrow an idle one's share. A
    /// limit smaller than the number of shards is refused (`INVALID_ARGUMENT`). Group limits
    /// need no split: a group's jobs all live on one shard.
    pub async fn set_limits(&self, limits: Limits) -> Result<()> {
        let shards = self.shards.len();
        let grate = limits.group_rate.map(Rate::encode).transpose()?;
        let max_active = positive("max_active", limits.max_active)?;
        let glimit = positive("group_concurrency", limits.group_concurrency)?;
        if let Some(r) = limits.rate {
            r.encode()?;
        }
        for (what, n) in [
            ("max_active", max_active),
            ("rate", limits.rate.map(|r| r.max)),
            ("the rate's burst", limits.rate.and_then(|r| r.burst)),
        ] {
            if let Some(n) = n.filter(|n| (*n as usize) < shards) {
                return Err(Error::invalid(format!(
                    "{what} is {n} on a queue of {shards} shards: each shard needs a share of at \
                     least 1 (the limit is split between the shards so that it holds across them)"
                )));
            }
        }
        let op = self.set_control_per_shard("queue", |shard| {
            let max_share = max_active.map(|n| share(n, shard, shards));
            let rate_share = limits.rate.map(|r| {
                Rate {
                    max: share(r.max, shard, shards),
                    per: r.per,
                    burst: r.burst.map(|b| share(b, shard, shards)),
                }
                .encode()
                .unwrap_or_default()
            });
            vec![
                ("max_active", opt(max_share)),
                ("max_active_total", opt(max_active)),
                ("rate", rate_share.unwrap_or_default()),
                (
                    "rate_total",
                    limits.rate.map(|r| r.max.to_string()).unwrap_or_default(),
                ),
                ("burst_total", opt(limits.rate.and_then(|r| r.burst))),
                ("glimit", opt(glimit)),
                ("grate", grate.clone().unwrap_or_default()),
            ]
        });
        self.op("set_limits", op).await
    }

    /// Sets `group`'s own limits (`None` fields: the queue's defaults).
    pub async fn set_group_limits(&self, group: &str, limits: GroupLimits) -> Result<()> {
        validate_name("group", group)?;
        let rate = limits.rate.map(Rate::encode).transpose()?;
        let limit = positive("concurrency", limits.concurrency)?;
        self.set_control(
            "set_group_limits",
            &format!("group:{group}"),
            &[("limit", opt(limit)), ("rate", rate.unwrap_or_default())],
        )
        .await
    }

    async fn cfg(&self, shard: usize) -> Result<HashMap<String, String>> {
        let mut conn = self.client.conn().await?;
        redis::cmd("HGETALL")
            .arg(self.shards[shard].cfg())
            .query_async(&mut conn)
            .await
            .map_err(|e| self.client.err(e))
    }

    /// True when the queue is paused.
    pub async fn is_paused(&self) -> Result<bool> {
        self.op("is_paused", async {
            Ok(self.cfg(0).await?.get("paused").is_some_and(|p| p == "1"))
        })
        .await
    }

    /// The queue's limits.
    pub async fn limits(&self) -> Result<Limits> {
        self.op("limits", async {
            let c = self.cfg(0).await?;
            // A sharded queue's shards hold shares of the limits; the whole is kept beside them.
            let total = |share: &str, total: &str| c.get(total).or_else(|| c.get(share)).cloned();
            let rate = c.get("rate").and_then(|v| Rate::decode(v)).map(|r| Rate {
                max: total("rate", "rate_total")
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(r.max),
                burst: r.burst.map(|b| {
                    c.get("burst_total")
                        .and_then(|v| v.parse().ok())
                        .unwrap_or(b)
                }),
                ..r
            });
            Ok(Limits {
                max_active: total("max_active", "max_active_total").and_then(|v| v.parse().ok()),
                rate,
                group_concurrency: c.get("glimit").and_then(|v| v.parse().ok()),
                group_rate: c.get("grate").and_then(|v| Rate::decode(v)),
            })
        })
        .await
    }

    /// What `group` holds (ready, running) and obeys (paused, limits in force).
    pub async fn group(&self, group: &str) -> Result<GroupInfo> {
        self.op("group", async {
            validate_name("group", group)?;
            let shard = shard_of(group, self.shards.len());
            let (ready, active, limit, rate, paused, latency, limiter): RawGroupLatency = self
                .client
                .eval(&self.group_cmd(shard, group), &GROUP_INFO)
                .await?;
            let raw = (ready, active, limit, rate, paused, limiter);
            Ok(group_info(group, raw, Some(latency), &self.limits().await?))
        })
        .await
    }

    /// Every group the queue knows, on every shard, sorted by name, each as
    /// [`group`](Self::group) tells it: the groups in the rotation or held out of it, those with
    /// running jobs or waiting for their rate window, and those with settings of their own (a
    /// pause, a limit). Reads the queue in pages of [`MAX_GROUP_PAGE`] (one short call each, see
    /// [`groups_page`](Self::groups_page)), so its cost grows with the groups; a view that shows
    /// some of them should read a page.
    pub async fn groups(&self) -> Result<Vec<GroupInfo>> {
        self.op("groups", async {
            let mut all = std::collections::BTreeMap::new();
            let mut cursor: Option<String> = None;
            loop {
                let page = self
                    .page_of_groups(cursor.as_deref(), MAX_GROUP_PAGE)
                    .await?;
                for g in page.groups {
                    all.insert(g.group.clone(), g);
                }
                match page.cursor {
                    Some(c) => cursor = Some(c),
                    None => return Ok(all.into_values().collect()),
                }
            }
        })
        .await
    }

    /// About `count` (1 to [`MAX_GROUP_PAGE`]) of the groups [`groups`](Self::groups) lists,
    /// from `cursor` (`None`: the start), and the cursor of the next page (`None`: that was the
    /// last). Each call costs about `count` groups' work in Redis however many the queue has. A
    /// page is in no particular order and may hold fewer or more than `count` (up to about
    /// twice as many: a SCAN call returns what the buckets it visits hold); as with
    /// Redis's SCAN, a walk lists every group that stays put meanwhile, once, and one that
    /// changes state during the walk (say, from waiting to held) may be listed twice or missed.
    pub async fn groups_page(&self, cursor: Option<&str>, count: usize) -> Result<GroupPage> {
        self.op("groups_page", self.page_of_groups(cursor, count))
            .await
    }

    async fn page_of_groups(&self, cursor: Option<&str>, count: usize) -> Result<GroupPage> {
        if count == 0 || count > MAX_GROUP_PAGE {
            return Err(Error::invalid(format!(
                "a page holds 1 to {MAX_GROUP_PAGE} groups, got {count}"
            )));
        }
        let (mut shard, mut part, mut scan) = match cursor {
            None => (0, 1, "0".to_string()),
            Some(c) => parse_group_cursor(c, self.shards.len())?,
        };
        let defaults = self.limits().await?;
        let mut groups = Vec::new();
        while shard < self.shards.len() && groups.len() < count {
            let mut cmd = self.script_cmd(shard, &LIST_GROUPS);
            cmd.arg(part).arg(&scan).arg(count - groups.len());
            let (rows, next, at): (Vec<(String, RawGroup)>, u8, String) =
                self.client.eval(&cmd, &LIST_GROUPS).await?;
            for (name, raw) in rows {
                groups.push(group_info(&name, raw, None, &defaults));
            }
            if next == 0 {
                (shard, part, scan) = (shard + 1, 1, "0".to_string());
            } else {
                (part, scan) = (next, at);
            }
        }
        let cursor = (shard < self.shards.len()).then(|| format!("{shard}-{part}-{scan}"));
        Ok(GroupPage { groups, cursor })
    }

    fn group_cmd(&self, shard: usize, group: &str) -> redis::Cmd {
        let mut cmd = self.script_cmd(shard, &GROUP_INFO);
        cmd.arg(group);
        cmd
    }
}

/// Most groups one [`Queue::groups_page`] call returns.
pub const MAX_GROUP_PAGE: usize = 250;
/// The page size the bindings and the CLI use when none is given.
pub const DEFAULT_GROUP_PAGE: usize = 100;

/// A page of groups, and where the next one starts (see [`Queue::groups_page`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupPage {
    pub groups: Vec<GroupInfo>,
    /// Give it to the next call; `None` when this was the last page.
    pub cursor: Option<String>,
}

/// A cursor made by [`Queue::groups_page`]: `shard-part-scan`.
fn parse_group_cursor(c: &str, shards: usize) -> Result<(usize, u8, String)> {
    let bad = || {
        Error::invalid(format!(
            "{c:?} is not a cursor of this queue's groups: give back the cursor a page returned"
        ))
    };
    let mut it = c.splitn(3, '-');
    let shard: usize = it.next().and_then(|v| v.parse().ok()).ok_or_else(bad)?;
    let part: u8 = it.next().and_then(|v| v.parse().ok()).ok_or_else(bad)?;
    let scan = it.next().ok_or_else(bad)?;
    if shard >= shards || !(1..=5).contains(&part) || scan.parse::<u64>().is_err() {
        return Err(bad());
    }
    Ok((shard, part, scan.to_string()))
}

/// A group as `list_groups.lua` reads it: ready, running, own limit, own rate, paused, limiter.
type RawGroup = (
    u64,
    u64,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
);
/// `group_info.lua`'s reply: ready, running, own limit, own rate, paused, latency (ms), limiter.
type RawGroupLatency = (
    u64,
    u64,
    Option<String>,
    Option<String>,
    Option<String>,
    u64,
    Option<String>,
);

fn group_info(group: &str, raw: RawGroup, latency: Option<u64>, defaults: &Limits) -> GroupInfo {
    let (ready, active, limit, rate, paused, limiter) = raw;
    GroupInfo {
        group: group.to_string(),
        ready,
        active,
        paused: paused.is_some(),
        concurrency: limit
            .as_deref()
            .and_then(|v| v.parse().ok())
            .or(defaults.group_concurrency),
        rate: rate
            .as_deref()
            .and_then(Rate::decode)
            .or(defaults.group_rate),
        latency: latency.map(Duration::from_millis),
        limiter,
    }
}
