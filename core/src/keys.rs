//! Every Redis key tideq uses is built here, and nowhere else.
//!
//! Layout: `<prefix>:{<queue>}:<kind>[:<group>]`. The queue name sits inside the hash tag, so all
//! keys of one queue hash to one Cluster slot and every script touches a single slot.

use crate::error::{Error, Result};
use crate::scripts::LuaScript;

/// Longest accepted queue, group or prefix name, in bytes.
pub const MAX_NAME_LEN: usize = 256;

/// Checks a queue or group name: non-empty, at most 256 bytes, no `{`, `}` or control characters.
pub fn validate_name(what: &str, name: &str) -> Result<()> {
    if name.is_empty() {
        return Err(Error::invalid(format!("{what} name must not be empty")));
    }
    if name.len() > MAX_NAME_LEN {
        return Err(Error::invalid(format!(
            "{what} name is {} bytes long; the limit is {MAX_NAME_LEN}",
            name.len()
        )));
    }
    if let Some(c) = name
        .chars()
        .find(|c| *c == '{' || *c == '}' || c.is_control())
    {
        return Err(Error::invalid(format!(
            "{what} name {name:?} contains {c:?}; braces and control characters are not allowed"
        )));
    }
    Ok(())
}

/// Characters Redis ACL key patterns treat as patterns: a queue or prefix holding one could be
/// matched by another tenant's rule (`~tideq:{e*}:*` would grant the queue `emails`).
const GLOB: [char; 5] = ['*', '?', '[', ']', '\\'];

/// Queue names and key prefixes appear in ACL key rules, so they may not hold glob characters.
fn validate_no_glob(what: &str, name: &str) -> Result<()> {
    if let Some(c) = name.chars().find(|c| GLOB.contains(c)) {
        return Err(Error::invalid(format!(
            "{what} {name:?} contains {c:?}; '*', '?', '[', ']' and '\\' are not allowed in queue \
             names and key prefixes (Redis ACL key rules read them as patterns)"
        )));
    }
    Ok(())
}

pub(crate) fn validate_prefix(prefix: &str) -> Result<()> {
    validate_name("key prefix", prefix)?;
    validate_no_glob("key prefix", prefix)
}

/// Keys of one capped queue.
#[derive(Debug, Clone)]
pub(crate) struct CappedKeys {
    base: String,
}

impl CappedKeys {
    #[cfg(test)]
    pub fn new(prefix: &str, queue: &str) -> Result<Self> {
        Ok(Self::shards(prefix, queue, 1)?.remove(0))
    }

    /// The keys of each shard of a queue split in `shards` (1 = not sharded).
    pub fn shards(prefix: &str, queue: &str, shards: usize) -> Result<Vec<Self>> {
        Ok(shard_tags(prefix, queue, shards)?
            .into_iter()
            .map(|tag| CappedKeys {
                base: format!("{prefix}:{{{tag}}}:c:"),
            })
            .collect())
    }

    /// The list holding one group's items.
    pub fn group(&self, group: &str) -> String {
        format!("{}g:{group}", self.base)
    }
    /// Wake-up tokens for consumers dedicated to one group.
    pub fn group_wake(&self, group: &str) -> String {
        format!("{}w:{group}", self.base)
    }
    /// Rotation list of groups with data (round-robin order).
    pub fn registry(&self) -> String {
        format!("{}reg", self.base)
    }
    /// Membership set mirroring [`registry`](Self::registry) (groups in the rotation list).
    pub fn registry_set(&self) -> String {
        format!("{}regset", self.base)
    }
    /// Sorted set of registered groups: expiry ms (+inf without a TTL), 0 once drained.
    pub fn live(&self) -> String {
        format!("{}live", self.base)
    }
    /// Counters: pushed, dropped, discarded, delivered.
    pub fn stats(&self) -> String {
        format!("{}stats", self.base)
    }
    /// Wake-up tokens for general consumers.
    pub fn wake(&self) -> String {
        format!("{}wake", self.base)
    }
    /// Items a pop could not open (sealed with a key the consumer lacks), newest first, bounded.
    pub fn unreadable(&self) -> String {
        format!("{}unreadable", self.base)
    }

    /// The keys a capped script takes, in the order its contract header lists them (`group`
    /// names the group whose list is meant by `group`).
    pub fn for_script(&self, script: &LuaScript, group: &str) -> Vec<String> {
        script
            .keys
            .iter()
            .map(|name| {
                self.by_name(name, group).unwrap_or_else(|| {
                    panic!("{}: unknown key {name:?} in its header", script.name)
                })
            })
            .collect()
    }

    /// A key by the name a script's contract header gives it (`group` is `group`'s list).
    pub fn by_name(&self, name: &str, group: &str) -> Option<String> {
        Some(match name {
            "group" => self.group(group),
            "registry" => self.registry(),
            "registry_set" => self.registry_set(),
            "live" => self.live(),
            "stats" => self.stats(),
            "wake" => self.wake(),
            "unreadable" => self.unreadable(),
            _ => return None,
        })
    }
}

/// Keys of one job queue. Every script gets them in KEYS; none is invented in Lua.
#[derive(Debug, Clone)]
pub(crate) struct JobKeys {
    base: String,
}

macro_rules! job_keys {
    ($($name:ident => $suffix:literal: $doc:literal),* $(,)?) => {
        impl JobKeys {
            $(#[doc = $doc] pub fn $name(&self) -> String { format!("{}{}", self.base, $suffix) })*

            /// A key by its accessor's name, as scripts' contract headers name their keys.
            pub fn by_name(&self, name: &str) -> Option<String> {
                match name {
                    $(stringify!($name) => Some(self.$name()),)*
                    _ => None,
                }
            }

            /// Every key of the queue (shard).
            #[cfg(test)]
            pub fn all(&self) -> Vec<String> {
                vec![$(self.$name()),*]
            }
        }
    };
}

job_keys! {
    ready => "ready": "List of ready job ids, oldest first.",
    delayed => "delayed": "Sorted set of delayed job ids, score = due time (ms, Redis clock).",
    active => "active": "Sorted set of leased job ids, score = lease deadline (ms), plus an encoding anchor (docs/data-model.md, \"Active zset\").",
    dead => "dead": "Sorted set of dead-lettered job ids, score = time of death (ms).",
    done => "done": "List of retained completed job ids, oldest first.",
    jobs => "jobs": "Hash id -> envelope (MessagePack, immutable).",
    meta => "meta": "Hash id -> \"state|attempts|max attempts|enqueued ms|x\" (mutable state; see docs/data-model.md, \"Job meta\").",
    errors => "errors": "Hash id -> last error text (size-capped).",
    stats => "stats": "Counters: enqueued, completed, failed, retried, recovered, cancelled, snoozed, expired, requeued, dead_trimmed, lost.",
    wake => "wake": "Wake-up tokens for idle workers.",
    idem => "idem": "Sorted set of ids given to enqueue: +inf while the job exists, then when it finished (idempotency window).",
    route => "route": "Hash id -> \"priority|sequence|group\" for jobs with a priority or a group (0 = no priority, \"\" = no group; queue control, see docs/data-model.md).",
    prio => "prio": "Sorted set of the priorities that have ready jobs without a group (score = priority).",
    p => "p:": "Prefix of each priority's list of ready jobs (`p:<priority>`), built in the scripts.",
    grot => "grot": "List: the group rotation (groups that can start a job now).",
    gset => "gset": "Set of the groups in the rotation.",
    gheld => "gheld": "Set of groups out of the rotation for want of room (limit, pause, rate).",
    gstate => "gstate": "Hash group -> its jobs running now.",
    gcfg => "gcfg": "Hash of per-group settings: \"limit:<group>\", \"rate:<group>\", \"paused:<group>\", \"until:<group>\" while a handler's back-off holds the group, and \"back:<group>\" while a group given back to its shared limiter is passed over.",
    gwait => "gwait": "Sorted set of groups waiting for their rate window (score = when they may start again).",
    cfg => "cfg": "Hash of queue settings: paused, max_active, rate, glimit, grate, events (the event log's length), until (while a handler's back-off holds the queue), rtat (a token-bucket rate's state: when its tokens are all back, ms).",
    rl => "rl": "Sorted set of the queue's recent starts (its rate-limit window).",
    expires => "expires": "Sorted set of pending job ids with a deadline to start by, score = the deadline (ms, Redis clock; see docs/data-model.md, \"Expiry\").",
    fwait => "fwait": "Hash id -> how many of its children a flow job still waits for (see docs/data-model.md, \"Flows\").",
    fhold => "fhold": "Sorted set of flow jobs held until their flow is sealed, score = when held (ms).",
    froot => "froot": "Hash held flow job id -> \"<due ms>\\t<root id>\\t<root key base>\".",
    fparent => "fparent": "Hash flow child id -> its parent notice head (lib/parents.lua).",
    fout => "fout": "List: notices of finished flow children for their parents, relayed by the workers.",
    frelay => "frelay": "Lock: the worker relaying this outbox now (expires).",
    fl => "fl:": "Prefix of each flow parent's list of children (`fl:<id>`, \"<base>\\t<id>\\t<queue>\" each).",
    fs => "fs:": "Prefix of a flow parent's children list in transit (`fs:<token>`, expiring): staged by the flow's writer before the parent (which renames it to `fl:<id>`), or left to go through by a cancel of the parent.",
    fk => "fk:": "Prefix of each flow parent's record of how its children ended (`fk:<id>`: \"<queue>\\t<id>\" -> outcome).",
    rat => "rat": "Hash id -> when the pending job became ready (ms, Redis clock), for jobs made ready after their enqueue (a delayed job promoted, a retry, a release; see docs/data-model.md, \"Latency\").",
    cost => "cost": "Hash id -> the tokens a job takes from a token-bucket rate when it starts, for jobs whose cost is not 1 (see docs/data-model.md, \"Queue control\").",
    ghost => "ghost": "Hash of list entries left by cancelled ready jobs: \"r|<id>\" (the ready list) or \"p<priority>|<id>\" (that priority's list) -> how many.",
    g => "g:": "Prefix of each group's ready zset (`g:<group>`), built in the scripts.",
    gr => "gr:": "Prefix of each group's rate-limit window (`gr:<group>`), built in the scripts.",
    gb => "gb:": "Prefix of each group's token bucket (`gb:<group>`: when its tokens are all back, ms; expires then), built in the scripts.",
    results => "results": "Hash id -> what a completed job's handler returned (size-capped).",
    progress => "progress": "Hash id -> the last progress a job's handler reported (size-capped).",
    attempts => "attempts": "Hash id -> the job's attempts (a JSON array of records: number, start, end, worker, outcome, error, trace; see docs/data-model.md, \"Attempts and logs\").",
    logs => "logs": "Hash id -> the bytes of the job's log lines kept (`lg:<id>`).",
    lg => "lg:": "Prefix of each job's log (`lg:<id>`): a list of \"<ms>|<attempt>|<line>\", oldest first, capped.",
    waiters => "waiters": "Hash id -> how many callers wait for that unfinished job (`wait`).",
    fin => "fin:": "Prefix of each client hub's inbox (`fin:<hub id>`): how the jobs its callers wait for finished, one notice per job.",
    cancel => "cancel": "Set of active job ids whose cancel was requested (their workers stop them; see docs/data-model.md, \"Cancel requests\").",
    dd => "dd:": "Prefix of each dedup key (`dd:<key>`): the id of the job it names (see docs/data-model.md, \"Dedup and debounce\").",
    dkey => "dkey": "Hash id -> dedup key, for pending jobs whose key lives until they finish (and dead ones, for a requeue).",
    events => "events": "Stream: the queue's event log, when events are on (see docs/data-model.md, \"Events\").",
    evsub => "evsub": "Hash reader name -> the last event log entry it read (named event readers).",
    metrics => "metrics": "Hash of histogram buckets summed over the workers (`rt:le<bound>`, `lt:le<bound>`, sums, counts; see docs/data-model.md, \"Metrics\").",
    workers => "workers": "Sorted set of worker ids, score = when each was last seen (ms): its reports with a fetch, its lease renewals.",
    winfo => "winfo": "Hash worker id -> the worker's entry: who it is and what it runs (see docs/data-model.md, \"Workers\").",
    hist => "hist:": "Prefix of each UTC day's history hash (`hist:<day since the epoch>`): minute of the day -> the queue's totals at that minute's first worker report (see docs/data-model.md, \"History\").",
    tasks => "tasks": "Set of the task names (percent-encoded) whose counts are tracked, at most 100; the others count under \"(other)\" (see docs/data-model.md, \"Per-task metrics\").",
    tstat => "tstat": "Hash \"<kind>:<task>\" -> per-task running total (kinds c, f, d, n, us: completed, failed attempts, dead-lettered, runs, run time in µs).",
    tm => "tm:": "Prefix of each hour's hash of per-task snapshots (`tm:<hour since the epoch>`): 10-minute slot -> the per-task totals at its first worker report (kept 3 hours).",
    th => "th:": "Prefix of each UTC day's hash of per-task snapshots (`th:<day since the epoch>`): hour of the day -> the per-task totals at its first worker report (kept 15 days).",
    sched => "sched": "Hash schedule name -> \"<version>|<spec>\" (the spec in MessagePack).",
    snext => "snext": "Sorted set of schedule names, score = the schedule's next slot (ms).",
    spause => "spause": "Hash paused schedule name -> its next slot kept while paused (ms; \"0\": none). A paused schedule is out of `snext`.",
    slast => "slast": "Hash schedule name -> the id of the last job it enqueued (a slot fired, or run now).",
}

impl JobKeys {
    #[cfg(test)]
    pub fn new(prefix: &str, queue: &str) -> Result<Self> {
        Ok(Self::shards(prefix, queue, 1)?.remove(0))
    }

    /// The keys of each shard of a queue split in `shards` (1 = not sharded).
    pub fn shards(prefix: &str, queue: &str, shards: usize) -> Result<Vec<Self>> {
        Ok(shard_tags(prefix, queue, shards)?
            .into_iter()
            .map(|tag| JobKeys {
                base: format!("{prefix}:{{{tag}}}:"),
            })
            .collect())
    }

    /// The keys whose names start with `base` (`"<prefix>:{<tag>}:"`), as a flow notice names its
    /// parent's queue; `None` unless it has that form.
    pub fn from_base(base: &str) -> Option<Self> {
        let (prefix, rest) = base.split_once(":{")?;
        let tag = rest.strip_suffix("}:")?;
        if prefix.is_empty() || tag.is_empty() || tag.contains(['{', '}']) {
            return None;
        }
        Some(JobKeys {
            base: base.to_string(),
        })
    }

    /// `"<prefix>:{<tag>}:"`, what every key of the queue (shard) starts with.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// The keys a job script takes, in the order its contract header lists them.
    pub fn for_script(&self, script: &LuaScript) -> Vec<String> {
        script
            .keys
            .iter()
            .map(|name| {
                self.by_name(name).unwrap_or_else(|| {
                    panic!("{}: unknown key {name:?} in its header", script.name)
                })
            })
            .collect()
    }
}

/// Keys of one shared limiter (`limiter.rs`): `<prefix>:{#lim:<name>}:<kind>`. Its own hash tag,
/// so every limiter operation touches one Cluster slot; `#` cannot start a queue's tag (queue
/// names may not hold it), so no queue's keys can alias a limiter's.
#[derive(Debug, Clone)]
pub(crate) struct LimiterKeys {
    base: String,
}

impl LimiterKeys {
    pub fn new(prefix: &str, name: &str) -> Result<Self> {
        validate_prefix(prefix)?;
        validate_name("limiter", name)?;
        validate_no_glob("limiter name", name)?;
        Ok(LimiterKeys {
            base: format!("{prefix}:{{#lim:{name}}}:"),
        })
    }

    /// Hash: the limiter's definition (`kind`, `n`, `ms`, `refill`) and a bucket's tokens.
    pub fn lim(&self) -> String {
        format!("{}lim", self.base)
    }

    /// Sorted set: a concurrency limiter's holders (score = lease deadline, ms) or a window
    /// limiter's starts (score = start time, ms).
    pub fn hold(&self) -> String {
        format!("{}hold", self.base)
    }

    /// A key by the name a script's contract header gives it.
    pub fn by_name(&self, name: &str) -> Option<String> {
        match name {
            "lim" => Some(self.lim()),
            "hold" => Some(self.hold()),
            _ => None,
        }
    }

    /// The keys a limiter script takes, in the order its contract header lists them.
    pub fn for_script(&self, script: &LuaScript) -> Vec<String> {
        script
            .keys
            .iter()
            .map(|name| {
                self.by_name(name).unwrap_or_else(|| {
                    panic!("{}: unknown key {name:?} in its header", script.name)
                })
            })
            .collect()
    }
}

/// Most shards a queue may have.
pub const MAX_SHARDS: usize = 1024;

/// Where a queue's shard count is recorded (`shards.rs`): under the hash tag of the queue's name
/// alone, which a one-shard queue's keys have and a sharded queue's do not, so a reader finds it
/// without knowing the count. `<prefix>:{<queue>}:shards`, or `:c:shards` for a capped queue.
pub(crate) fn shards_key(prefix: &str, queue: &str, kind: crate::discover::QueueKind) -> String {
    match kind {
        crate::discover::QueueKind::Jobs => format!("{prefix}:{{{queue}}}:shards"),
        crate::discover::QueueKind::Capped => format!("{prefix}:{{{queue}}}:c:shards"),
    }
}

/// The hash tag of each shard of a queue. One shard: the queue name itself. More: `name#i.s`,
/// with the smallest salt `s` that puts shard `i` in the i-th of `shards` equal slot ranges, so
/// the shards spread over the masters of an evenly split cluster (and over any slot layout,
/// statistically). Queue names may not contain `#`, so no name can alias another's shard.
pub fn shard_tags(prefix: &str, queue: &str, shards: usize) -> Result<Vec<String>> {
    validate_prefix(prefix)?;
    validate_name("queue", queue)?;
    validate_no_glob("queue name", queue)?;
    if queue.contains('#') {
        return Err(Error::invalid(format!(
            "queue name {queue:?} contains '#', which is reserved for shards"
        )));
    }
    if shards == 0 || shards > MAX_SHARDS {
        return Err(Error::invalid(format!(
            "shards must be 1 to {MAX_SHARDS}, got {shards}"
        )));
    }
    if shards == 1 {
        return Ok(vec![queue.to_string()]);
    }
    Ok((0..shards)
        .map(|i| {
            let lo = (i * 16384 / shards) as u16;
            let hi = ((i + 1) * 16384 / shards) as u16;
            (0u32..)
                .map(|salt| format!("{queue}#{i}.{salt}"))
                .find(|tag| (lo..hi).contains(&crc16_slot(tag.as_bytes())))
                .expect("some salt lands in every range")
        })
        .collect())
}

/// Which of `n` shards an id or group belongs to (stable: CRC16 of its bytes).
pub(crate) fn shard_of(id: &str, n: usize) -> usize {
    if n <= 1 {
        0
    } else {
        crc16_slot(id.as_bytes()) as usize % n
    }
}

fn crc16_slot(bytes: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &b in bytes {
        crc ^= (b as u16) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc % 16384
}

/// The Redis Cluster hash slot of a key (CRC16/XMODEM of the hash tag, mod 16384).
pub fn key_slot(key: &str) -> u16 {
    let bytes = key.as_bytes();
    let tagged = match bytes.iter().position(|&b| b == b'{') {
        Some(open) => match bytes[open + 1..].iter().position(|&b| b == b'}') {
            Some(len) if len > 0 => &bytes[open + 1..open + 1 + len],
            _ => bytes,
        },
        None => bytes,
    };
    crc16_slot(tagged)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_names_are_invalid_argument() {
        for bad in ["", "a{b", "a}b", "a\nb", "a\u{7f}"] {
            assert_eq!(
                validate_name("queue", bad).unwrap_err().code(),
                "INVALID_ARGUMENT",
                "{bad:?}"
            );
        }
        assert!(validate_name("queue", &"x".repeat(257)).is_err());
        assert!(validate_name("queue", &"x".repeat(256)).is_ok());
        assert!(validate_name("queue", "game:42/é").is_ok());
    }

    #[test]
    fn every_key_of_a_queue_shares_one_slot() {
        let k = CappedKeys::new("tideq", "events").unwrap();
        let slot = key_slot(&k.registry());
        for key in [
            k.group("g1"),
            k.group("{x}"),
            k.group_wake("g"),
            k.registry_set(),
            k.live(),
            k.stats(),
            k.wake(),
            k.unreadable(),
        ] {
            assert_eq!(key_slot(&key), slot, "{key}");
        }
        let j = JobKeys::new("tideq", "events").unwrap();
        for key in j.all() {
            assert_eq!(key_slot(&key), slot, "{key}");
        }
        assert_eq!(key_slot("foo"), 12182); // value from the Redis Cluster spec
        for n in [2, 3, 10] {
            let shards = JobKeys::shards("tideq", "events", n).unwrap();
            for (i, sk) in shards.iter().enumerate() {
                let slot = key_slot(&sk.ready()) as usize;
                assert!(slot * n / 16384 == i, "shard {i}/{n} in slot {slot}");
                for key in sk.all() {
                    assert_eq!(key_slot(&key) as usize, slot, "{key}");
                }
            }
        }
        assert!(JobKeys::new("tideq", "a#1").is_err());
        for glob in ["e*", "a?", "[x]", "b\\c"] {
            let err = JobKeys::new("tideq", glob).unwrap_err();
            assert!(err.message().contains("ACL"), "{err}");
            assert!(CappedKeys::new(glob, "q").is_err(), "prefix {glob:?}");
        }
        assert!(CappedKeys::new("tideq", "q")
            .unwrap()
            .group("g*")
            .contains("g*"));
        assert!(JobKeys::shards("tideq", "a", 0).is_err());
        assert_eq!(
            key_slot("{user1000}.following"),
            key_slot("{user1000}.followers")
        );
    }
}
