//! Least privilege: the exact Redis ACL rules each role needs for one queue, derived from the
//! scripts the role runs (parsed from their text, shared helpers included) plus the plain
//! commands its code sends, so the list follows the scripts as they change. A test runs every
//! role under exactly these rules.
//!
//! ```
//! use tideq::acl::{rules, Role};
//! let line = rules("tideq", "emails", 1, Role::Worker).unwrap();
//! assert!(line.contains("~tideq:{emails}:*") && line.contains("+evalsha"));
//! // ACL SETUSER emails-worker on >password <line>
//! ```

use std::collections::BTreeSet;

use crate::error::Result;
use crate::keys::shard_tags;
use crate::scripts::{self, LuaScript};

/// What a Redis user does with a queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Enqueues jobs (`enqueue`, `enqueue_many`, with or without replica acks), waits for
    /// their outcome (`wait`), declares schedules.
    Producer,
    /// Runs a worker: fetches, completes, fails, releases and renews jobs, reports progress,
    /// waits for wake-ups, fires the schedules' due slots.
    Worker,
    /// Inspects, repairs and steers a job queue: `get`, `jobs`, `wait`, `cancel`, dead letters, `stats`,
    /// and queue control (pause and resume, limits, `group`).
    Admin,
    /// Pushes to a capped queue.
    CappedProducer,
    /// Consumes a capped queue (`pop_batch`, `next_batch`, consumers), reads `len`, `groups`,
    /// `stats`, `peek`.
    CappedConsumer,
}

impl Role {
    pub const ALL: [Role; 5] = [
        Role::Producer,
        Role::Worker,
        Role::Admin,
        Role::CappedProducer,
        Role::CappedConsumer,
    ];

    /// `producer`, `worker`, `admin`, `capped-producer`, `capped-consumer`.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Producer => "producer",
            Role::Worker => "worker",
            Role::Admin => "admin",
            Role::CappedProducer => "capped-producer",
            Role::CappedConsumer => "capped-consumer",
        }
    }

    /// The role named `name` (as [`as_str`](Self::as_str) spells it).
    pub fn parse(name: &str) -> Result<Self> {
        Self::ALL
            .into_iter()
            .find(|r| r.as_str() == name)
            .ok_or_else(|| {
                crate::Error::invalid(format!(
                    "unknown role {name:?}; roles: producer, worker, admin, capped-producer, \
                     capped-consumer"
                ))
            })
    }

    fn scripts(self) -> Vec<&'static LuaScript> {
        use scripts::*;
        match self {
            Role::Producer => vec![
                &ENQUEUE_JOBS,
                &ENQUEUE_FLOW,
                &RELEASE_FLOW,
                &DROP_FLOW,
                &WAIT_JOB,
                &UPSERT_SCHEDULE,
                &REMOVE_SCHEDULE,
                &PAUSE_SCHEDULE,
                &GET_SCHEDULE,
                &DUE_SCHEDULES,
                &LIST_SCHEDULES,
                &READ_EVENTS,
            ],
            Role::Worker => vec![
                &FETCH_JOBS,
                &COMPLETE_JOBS,
                &FAIL_JOB,
                &RELEASE_JOB,
                &SNOOZE_JOB,
                &FLOW_NOTIFY,
                &RELAY_STEP,
                &RELEASE_FLOW,
                &DROP_FLOW,
                &EXTEND_LEASE,
                &SET_PROGRESS,
                &DUE_SCHEDULES,
                &LIST_SCHEDULES,
                &ENQUEUE_JOBS,
            ],
            Role::Admin => vec![
                &GET_JOBS,
                &LIST_JOBS,
                &PAGE_JOBS,
                &CANCEL_JOB,
                &REQUEUE_DEAD,
                &PURGE_DEAD,
                &PROMOTE_JOB,
                &DELETE_JOB,
                &CLEAN_JOBS,
                &FLOW_NOTIFY,
                &RELAY_STEP,
                &SET_QUEUE_CONTROL,
                &SET_GROUP_CONTROL,
                &GROUP_INFO,
                &LIST_GROUPS,
                &LIST_WORKERS,
                &QUEUE_LATENCY,
                &WAIT_JOB,
                &UPSERT_SCHEDULE,
                &REMOVE_SCHEDULE,
                &PAUSE_SCHEDULE,
                &GET_SCHEDULE,
                &DUE_SCHEDULES,
                &LIST_SCHEDULES,
                &READ_EVENTS,
            ],
            // Pushing back the unreadable items whose key is restored is a push.
            Role::CappedProducer => vec![&PUSH_CAPPED, &REQUEUE_CAPPED],
            Role::CappedConsumer => vec![
                &POP_CAPPED,
                &CAPPED_GROUPS,
                &COUNT_CAPPED_GROUPS,
                &CAPPED_GROUP_PAGE,
                &KEEP_UNREADABLE_CAPPED,
            ],
        }
    }

    /// Commands the role's code sends itself (besides EVALSHA and SCRIPT LOAD).
    fn direct(self) -> &'static [&'static str] {
        match self {
            // WAIT (and EXISTS before it) only with replica acks; BLMPOP for `wait` (its
            // finish notice); GET for a debounce key; TIME for a schedule's next slot; the event
            // log (XREAD to wait for entries, HGET/HSET a named reader's place).
            // A flow: HMGET and ZMSCORE to find its ids taken already, RPUSH and PEXPIRE to
            // stage a long children's list, UNLINK of one left by a refused flow. The queue's
            // shard count: SET NX GET records it (or reads it) before the first enqueue
            // (`shards.rs`).
            Role::Producer => &[
                "wait", "exists", "blmpop", "get", "time", "xread", "hget", "hset", "hmget",
                "zmscore", "rpush", "pexpire", "unlink", "set",
            ],
            // Wake-up listener: BLPOP, and passing a token on; cancel requests (renewer). Flows:
            // relaying the outbox (SET NX of its lock, LRANGE), settling held jobs
            // (ZRANGEBYSCORE, HMGET, HGET of the root, ZRANGE of the next), a parent reading its
            // children (HSCAN), a chain's link or chord's callback reading its arguments
            // (LRANGE, HMGET). The queue's shard count (SET NX GET as it starts, GET).
            Role::Worker => &[
                "get",
                "blpop",
                "rpush",
                "pexpire",
                "smismember",
                "set",
                "lrange",
                "zrangebyscore",
                "zrange",
                "hmget",
                "hget",
                "hscan",
            ],
            // The event log too: set_events (HSET/HDEL of the setting, DEL of the log), readers
            // (XREAD to wait, HSET of a named reader's place); stats (HMGET of the settings).
            // A cancelled flow job's outbox relayed (SET, LRANGE), its children cancelled a page
            // of their list at a time (LRANGE, LTRIM); children's results (HSCAN); a page of a
            // parent's children (LLEN, LRANGE, HMGET). The queue's shard count (GET). Bulk
            // actions: clean (TIME, ZRANGE of the dead, LRANGE and HMGET of the completed),
            // obliterate (HSET of the pause, SCAN for the queue's keys, UNLINK). Stats count the waiting
            // flow jobs (HLEN). Per-task metrics (TIME, HGETALL of the totals, HKEYS of the
            // snapshot hashes, HGET of one snapshot).
            Role::Admin => &[
                "zcard", "llen", "zcount", "hgetall", "hget", "hmget", "blmpop", "time", "hset",
                "hdel", "del", "xread", "set", "lrange", "ltrim", "hscan", "get", "zrange", "scan",
                "unlink", "hlen", "hkeys",
            ],
            // The queue's shard count, recorded by the first push (SET NX GET); the unreadable
            // list read by `requeue_unreadable` (LRANGE).
            Role::CappedProducer => &["set", "lrange"],
            // Wake-up waits, `len`, `stats`; `peek` (TIME and LRANGE in one pipeline); the
            // queue's shard count (GET).
            Role::CappedConsumer => &["blpop", "llen", "hgetall", "lrange", "time", "get"],
        }
    }
}

/// The commands named literally in `code` (`redis.call('X'`, `redis.pcall('X'`, and the
/// run-splitting helpers `chunked('X'`, `chunked_read('X'`), lower case.
fn literal_commands(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for marker in [
        "redis.call('",
        "redis.pcall('",
        "chunked('",
        "chunked_read('",
    ] {
        for rest in code.split(marker).skip(1) {
            if let Some(cmd) = rest.split('\'').next() {
                out.insert(cmd.to_ascii_lowercase());
            }
        }
    }
    out
}

/// The shared helpers a script includes (`lua/lib/*.lua`): per function, the commands it runs
/// itself and the helpers it calls.
fn helpers(script: &LuaScript) -> Vec<(&'static str, &'static str)> {
    let mut out = Vec::new();
    for path in &script.includes {
        let Some(&(_, lib)) = scripts::INCLUDES.iter().find(|(p, _)| p == path) else {
            continue;
        };
        let mut rest = lib;
        while let Some(at) = rest.find("\nlocal function ") {
            let after = &rest[at + "\nlocal function ".len()..];
            let name = after.split('(').next().unwrap_or("");
            let end = after.find("\nlocal function ").unwrap_or(after.len());
            out.push((name, &after[..end]));
            rest = &after[end..];
        }
    }
    out
}

/// Every command a script runs: the ones in its own text, and those of the shared helpers it
/// calls (transitively), lower case.
pub(crate) fn script_commands(script: &LuaScript) -> BTreeSet<String> {
    let helpers = helpers(script);
    let mut out = literal_commands(script.source);
    let mut todo: Vec<&str> = vec![script.source];
    let mut seen: BTreeSet<&str> = BTreeSet::new();
    while let Some(text) = todo.pop() {
        for (name, body) in &helpers {
            if !seen.contains(name) && text.contains(&format!("{name}(")) {
                seen.insert(name);
                out.extend(literal_commands(body));
                todo.push(body);
            }
        }
    }
    out
}

/// The ACL rules (one line for `ACL SETUSER <user> on ><password> <rules>`) that let a user do
/// `role` on queue `queue` (split in `shards`) under key prefix `prefix`, and nothing else: the
/// commands (first `-@all`), and key patterns for exactly the queue's hash tags (and, when it
/// has more than one shard, the key recording its shard count). `INFO` is
/// included for the eviction-policy check (without it the check is skipped); on a Redis Cluster
/// add `+cluster|slots +cluster|shards` so the client can read the topology.
pub fn rules(prefix: &str, queue: &str, shards: usize, role: Role) -> Result<String> {
    let tags = shard_tags(prefix, queue, shards)?;
    let mut commands: BTreeSet<String> = ["evalsha", "script|load", "ping", "info"]
        .into_iter()
        .map(String::from)
        .collect();
    for s in role.scripts() {
        commands.extend(script_commands(s));
    }
    commands.extend(role.direct().iter().map(|c| c.to_string()));
    let mut line = String::from("resetchannels -@all");
    for c in &commands {
        line.push_str(" +");
        line.push_str(c);
    }
    for tag in tags {
        line.push_str(&format!(" ~{prefix}:{{{tag}}}:*"));
    }
    // The key recording the queue's shard count, under the hash tag of its name alone: one of
    // the queue's keys already when it has one shard.
    if shards > 1 {
        let kind = match role {
            Role::CappedProducer | Role::CappedConsumer => crate::discover::QueueKind::Capped,
            _ => crate::discover::QueueKind::Jobs,
        };
        line.push_str(&format!(
            " ~{}",
            crate::keys::shards_key(prefix, queue, kind)
        ));
    }
    Ok(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_role_gets_the_commands_of_its_scripts_and_only_its_queue() {
        let worker = rules("tideq", "emails", 1, Role::Worker).unwrap();
        for c in [
            "+lpop",
            "+zadd",
            "+hmget",
            "+blpop",
            "+time",
            "+evalsha",
            "+script|load",
        ] {
            assert!(worker.contains(c), "{c} missing: {worker}");
        }
        assert!(worker.ends_with(" ~tideq:{emails}:*"), "{worker}");
        assert!(!worker.contains("+eval "), "{worker}");
        let producer = rules("tideq", "emails", 1, Role::Producer).unwrap();
        assert!(
            !producer.contains("+lpop"),
            "a producer does not pop: {producer}"
        );
        let sharded = rules("app", "emails", 3, Role::Producer).unwrap();
        assert_eq!(sharded.matches(" ~app:{emails#").count(), 3, "{sharded}");
        // The key recording the shard count, and no other key of the name's own tag.
        assert!(sharded.ends_with(" ~app:{emails}:shards"), "{sharded}");
        let capped = rules("app", "ticks", 2, Role::CappedConsumer).unwrap();
        assert!(capped.ends_with(" ~app:{ticks}:c:shards"), "{capped}");
        assert!(rules("tideq", "e*", 1, Role::Worker).is_err());
        for r in Role::ALL {
            assert_eq!(Role::parse(r.as_str()).unwrap(), r);
        }
    }
}
