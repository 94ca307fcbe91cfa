//! The Lua scripts: one file under `src/lua/` per operation, each opening with its contract
//! (`KEYS[i] <key> ...`, `ARGV[i] ...`, `Returns: ...`). Shared helpers live in `lib_*.lua` files
//! that a script pulls in with a `--#include lib_jobs.lua` line after its header (Redis scripts
//! cannot call each other); the text sent to Redis is the script with its includes flattened.
//!
//! The header is also the key contract: the key names after `KEYS[1]`, `KEYS[2]`, ... are the
//! accessor names of [`JobKeys`](crate::keys::JobKeys) / [`CappedKeys`](crate::keys::CappedKeys),
//! and the Rust side builds each script's key array from that list
//! ([`JobKeys::for_script`](crate::keys::JobKeys::for_script)), so the two cannot drift.
//!
//! Scripts run by EVALSHA; NOSCRIPT (after a restart or `SCRIPT FLUSH`) is recovered by
//! `SCRIPT LOAD` and a retry, also inside pipelines (see `client.rs`).

use std::sync::LazyLock;

/// The job scripts' shared helpers.
pub(crate) const LIB_JOBS: &str = include_str!("lua/lib_jobs.lua");

/// Files a script may include.
const INCLUDES: &[(&str, &str)] = &[("lib_jobs.lua", LIB_JOBS)];

/// One Lua script, compiled into the crate, with its SHA1 computed once.
pub(crate) struct LuaScript {
    /// File name under `src/lua/`.
    pub name: &'static str,
    /// The file as written (contract header first).
    pub source: &'static str,
    /// What Redis runs: `source` with its includes flattened.
    pub code: String,
    pub sha: String,
    /// Key names from the header, in `KEYS[1]`, `KEYS[2]`, ... order.
    pub keys: Vec<&'static str>,
}

impl LuaScript {
    fn new(name: &'static str, source: &'static str) -> Self {
        let mut code = String::with_capacity(source.len());
        for line in source.split_inclusive('\n') {
            match line.trim().strip_prefix("--#include ") {
                Some(file) => {
                    let (_, text) = INCLUDES
                        .iter()
                        .find(|(f, _)| *f == file.trim())
                        .unwrap_or_else(|| panic!("{name}: unknown include {file:?}"));
                    code.push_str(text);
                    code.push('\n');
                }
                None => code.push_str(line),
            }
        }
        LuaScript {
            name,
            source,
            sha: redis::Script::new(&code).get_hash().to_string(),
            code,
            keys: header_keys(name, source),
        }
    }

    /// An `EVALSHA` command for this script with these keys.
    pub fn cmd<K: redis::ToRedisArgs>(&self, keys: &[K]) -> redis::Cmd {
        let mut cmd = redis::cmd("EVALSHA");
        cmd.arg(&self.sha).arg(keys.len()).arg(keys);
        cmd
    }

    /// The command(s) a permission error inside this script was about, from the line Redis
    /// names (`... on @user_script:12.`): the command called on that line, or, on a line that
    /// calls a command chosen at run time, every command the script uses.
    pub fn denied_command(&self, message: &str) -> String {
        let line: Option<usize> = message
            .split("@user_script:")
            .nth(1)
            .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|n| n.parse().ok());
        let named = |text: &str| -> Vec<String> {
            text.split("redis.call('")
                .skip(1)
                .filter_map(|rest| rest.split('\'').next())
                .map(str::to_uppercase)
                .collect()
        };
        if let Some(text) = line.and_then(|n| self.code.lines().nth(n.saturating_sub(1))) {
            if let [one] = named(text).as_slice() {
                return one.clone();
            }
        }
        let all: Vec<String> = crate::acl::script_commands(self)
            .into_iter()
            .map(|c| c.to_uppercase())
            .collect();
        format!("one of {}", all.join(", "))
    }

    pub fn load_cmd(&self) -> redis::Cmd {
        let mut cmd = redis::cmd("SCRIPT");
        cmd.arg("LOAD").arg(&self.code);
        cmd
    }
}

/// The key names of a contract header: the word after each `KEYS[<n>]` (n = 1, 2, ... in order;
/// forms like `KEYS[5 + 2(i-1)]` describe variadic keys and are not listed).
fn header_keys(name: &str, source: &'static str) -> Vec<&'static str> {
    // A first line `#!lua flags=...` (Redis script flags) comes before the contract.
    let body = match source.strip_prefix("#!") {
        Some(rest) => rest.split_once('\n').map_or("", |(_, b)| b),
        None => source,
    };
    let header = body
        .strip_prefix("--[[")
        .and_then(|s| s.split_once("]]"))
        .map(|(h, _)| h)
        .unwrap_or_else(|| panic!("{name} must open with its contract (--[[ ... ]])"));
    let mut keys = Vec::new();
    let mut rest = header;
    while let Some(at) = rest.find("KEYS[") {
        rest = &rest[at + 5..];
        let Some(close) = rest.find(']') else { break };
        let Ok(n) = rest[..close].parse::<usize>() else {
            continue;
        };
        let word = rest[close + 1..].split_whitespace().next().unwrap_or("");
        assert_eq!(n, keys.len() + 1, "{name}: KEYS[{n}] out of order");
        keys.push(word);
    }
    keys
}

macro_rules! scripts {
    ($($ident:ident => $file:literal),* $(,)?) => {
        $(pub(crate) static $ident: LazyLock<LuaScript> =
            LazyLock::new(|| LuaScript::new($file, include_str!(concat!("lua/", $file))));)*

        /// Every script, so a client can find one by SHA (e.g. to reload it after NOSCRIPT).
        pub(crate) fn all() -> &'static [&'static LuaScript] {
            static ALL: LazyLock<Vec<&'static LuaScript>> =
                LazyLock::new(|| vec![$(&*$ident),*]);
            &ALL
        }
    };
}

scripts! {
    PUSH_CAPPED => "push_capped.lua",
    POP_CAPPED => "pop_capped.lua",
    CAPPED_GROUPS => "capped_groups.lua",
    CAPPED_GROUP_PAGE => "capped_group_page.lua",
    ENQUEUE_JOBS => "enqueue_jobs.lua",
    SCHEDULES => "schedules.lua",
    UPSERT_SCHEDULE => "upsert_schedule.lua",
    REMOVE_SCHEDULE => "remove_schedule.lua",
    FETCH_JOBS => "fetch_jobs.lua",
    COMPLETE_JOBS => "complete_jobs.lua",
    FAIL_JOB => "fail_job.lua",
    RELEASE_JOB => "release_job.lua",
    EXTEND_LEASE => "extend_lease.lua",
    CANCEL_JOB => "cancel_job.lua",
    REQUEUE_DEAD => "requeue_dead.lua",
    PURGE_DEAD => "purge_dead.lua",
    GET_JOBS => "get_jobs.lua",
    LIST_JOBS => "list_jobs.lua",
    PAGE_JOBS => "page_jobs.lua",
    SET_FLOW => "set_flow.lua",
    GROUP_INFO => "group_info.lua",
    LIST_GROUPS => "list_groups.lua",
    SET_PROGRESS => "set_progress.lua",
    WAIT_JOB => "wait_job.lua",
    READ_EVENTS => "read_events.lua",
}

/// Finds which script an `EVALSHA` command runs (first argument after the command name).
pub(crate) fn by_sha(sha: &[u8]) -> Option<&'static LuaScript> {
    all().iter().copied().find(|s| s.sha.as_bytes() == sha)
}

pub(crate) fn is_noscript(err: &redis::RedisError) -> bool {
    err.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript)
}

#[cfg(test)]
mod tests {
    use crate::keys::{CappedKeys, JobKeys};

    /// Lua's `unpack` stops near 8,000 values ("too many results to unpack"), and a script that
    /// fails there keeps the writes it made before. So no script unpacks a list whose length a
    /// caller or the data decides: such lists go through lib_jobs.lua's `chunked` and
    /// `chunked_read` (runs of 1000). Any other `unpack(` must take a run of at most 1000
    /// (`unpack(t, i, math.min(i + 999, ...))`) or say on its line why its length is bounded
    /// (`-- bounded: N`).
    #[test]
    fn no_script_unpacks_a_list_of_unbounded_length() {
        let mut sources: Vec<(&str, &str)> =
            super::all().iter().map(|s| (s.name, s.source)).collect();
        sources.push(("lib_jobs.lua", super::LIB_JOBS));
        let mut bad = Vec::new();
        for (name, source) in sources {
            for (n, line) in source.lines().enumerate() {
                for (at, _) in line.match_indices("unpack(") {
                    let call = &line[at..];
                    let run_of_1000 = call.contains(", i, math.min(i + 999, ");
                    let bounded = line.contains("-- bounded: ");
                    if !run_of_1000 && !bounded {
                        bad.push(format!("{name}:{}: {}", n + 1, line.trim()));
                    }
                }
            }
        }
        assert!(bad.is_empty(), "unbounded unpack:\n{}", bad.join("\n"));
    }

    #[test]
    fn every_script_states_its_contract() {
        for s in super::all() {
            let body = s
                .source
                .strip_prefix("#!lua flags=no-writes\n")
                .unwrap_or(s.source);
            assert!(
                body.starts_with("--[["),
                "{} must open with its contract",
                s.name
            );
            for word in ["KEYS[1]", "ARGV[1]", "Returns:"] {
                assert!(s.source.contains(word), "{} header lacks {word}", s.name);
            }
            assert!(!s.keys.is_empty(), "{} lists no keys", s.name);
        }
    }

    #[test]
    fn every_key_a_header_names_is_one_the_rust_side_builds() {
        const CAPPED: [&str; 4] = [
            "push_capped.lua",
            "pop_capped.lua",
            "capped_groups.lua",
            "capped_group_page.lua",
        ];
        let jobs = JobKeys::new("tideq", "q").unwrap();
        let capped = CappedKeys::new("tideq", "q").unwrap();
        for s in super::all() {
            for key in &s.keys {
                let known = if CAPPED.contains(&s.name) {
                    capped.by_name(key, "g").is_some()
                } else {
                    jobs.by_name(key).is_some()
                };
                assert!(
                    known,
                    "{}: KEYS name {key:?} is not a key of its queue",
                    s.name
                );
            }
        }
        // The job scripts take exactly the keys their header lists.
        let fail = jobs.for_script(&super::FAIL_JOB);
        assert_eq!(fail.len(), 30);
        assert_eq!(fail[0], jobs.active());
        assert_eq!(fail[8], jobs.wake());
    }

    #[test]
    fn includes_are_flattened_and_contracts_kept_first() {
        let fetch = &*super::FETCH_JOBS;
        assert!(fetch.code.starts_with("--[["));
        assert!(fetch.code.contains("local function parse_meta"));
        assert!(!fetch.code.contains("--#include"));
    }
}
