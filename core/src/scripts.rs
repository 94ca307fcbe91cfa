//! The Lua scripts: one file under `src/lua/` per operation, each opening with its contract
//! (`KEYS[i] <key> ...`, `ARGV[i] ...`, `Returns: ...`). Shared helpers live in `src/lua/lib/`, one
//! file per topic, that a script pulls in with `--#include lib/<topic>.lua` lines after its header
//! (Redis scripts cannot call each other); a helper file names the files it needs the same way.
//! The text sent to Redis is the script with its includes flattened: each file once, after the
//! files it includes, in the order first named, less the helper functions the script never
//! reaches (Redis defines every function of a script's text on each call). An unknown file or an
//! include cycle panics when the script is loaded (the unit tests load every script). The data model the scripts share is
//! documented in `docs/data-model.md`.
//!
//! The header is also the key contract: the key names after `KEYS[1]`, `KEYS[2]`, ... are the
//! accessor names of [`JobKeys`](crate::keys::JobKeys) / [`CappedKeys`](crate::keys::CappedKeys),
//! and the Rust side builds each script's key array from that list
//! ([`JobKeys::for_script`](crate::keys::JobKeys::for_script)), so the two cannot drift. A `--#K`
//! line in a script becomes its `K` table from the same list (`local K = { ready = KEYS[1], ... }`).
//!
//! Scripts run by EVALSHA; NOSCRIPT (after a restart or `SCRIPT FLUSH`) is recovered by
//! `SCRIPT LOAD` and a retry, also inside pipelines (see `client.rs`).

use std::sync::LazyLock;

pub(crate) mod encoding;

macro_rules! libs {
    ($($file:literal),* $(,)?) => {
        /// Files a script may include (`--#include lib/<file>`), by path under `src/lua/`.
        pub(crate) const INCLUDES: &[(&str, &str)] =
            &[$((concat!("lib/", $file), include_str!(concat!("lua/lib/", $file)))),*];
    };
}

libs! {
    "acks.lua",
    "active.lua",
    "attempts.lua",
    "base.lua",
    "bury.lua",
    "capped_push.lua",
    "cancel.lua",
    "cfg.lua",
    "chunked.lua",
    "control.lua",
    "costs.lua",
    "dead.lua",
    "dedup.lua",
    "events.lua",
    "forget.lua",
    "ghosts.lua",
    "history.lua",
    "latency.lua",
    "meta.lua",
    "metrics.lua",
    "parents.lua",
    "policy.lua",
    "promote.lua",
    "retention.lua",
    "route.lua",
    "tasks.lua",
    "waiters.lua",
    "workers.lua",
}

/// The line a script's `K` table is generated at.
const K_LINE: &str = "--#K";

/// One Lua script, compiled into the crate, with its SHA1 computed once.
pub(crate) struct LuaScript {
    /// File name under `src/lua/`.
    pub name: &'static str,
    /// The file as written (contract header first).
    pub source: &'static str,
    /// What Redis runs: `source` with its includes flattened and its `K` table generated.
    pub code: String,
    pub sha: String,
    /// Key names from the header, in `KEYS[1]`, `KEYS[2]`, ... order.
    pub keys: Vec<&'static str>,
    /// The Redis type the header gives each key (`ready list`: "list"), where it gives one
    /// (key prefixes and the like have none).
    pub key_types: Vec<Option<&'static str>>,
    /// The files flattened into `code` (their includes resolved), in order.
    pub includes: Vec<&'static str>,
}

/// The paths (`lib/<topic>.lua`) a text's `--#include` lines name, in order.
#[cfg(test)]
fn include_lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines()
        .filter_map(|l| l.trim().strip_prefix("--#include "))
        .map(str::trim)
}

/// Flattens `source`'s includes from `files`: each `--#include` line is replaced by the text of
/// the file it names (preceded by its own includes, flattened the same way), unless that file came
/// already, so each file comes once and after the files it needs. `done` collects the files, in
/// order; an unknown file or a cycle is an error.
fn flatten(
    name: &str,
    source: &str,
    files: &[(&'static str, &str)],
    stack: &mut Vec<&'static str>,
    done: &mut Vec<&'static str>,
    out: &mut String,
) -> Result<(), String> {
    for line in source.split_inclusive('\n') {
        let Some(file) = line.trim().strip_prefix("--#include ") else {
            out.push_str(line);
            continue;
        };
        let file = file.trim();
        let &(path, text) = files
            .iter()
            .find(|(f, _)| *f == file)
            .ok_or_else(|| format!("{name}: unknown include {file:?}"))?;
        if done.contains(&path) {
            continue;
        }
        if stack.contains(&path) {
            return Err(format!(
                "{name}: include cycle {} -> {path}",
                stack.join(" -> ")
            ));
        }
        stack.push(path);
        flatten(path, text, files, stack, done, out)?;
        stack.pop();
        done.push(path);
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
    Ok(())
}

/// The identifiers in `text` (words of letters, digits and `_` not starting with a digit),
/// comments and strings included: a conservative list of what it may refer to.
fn identifiers(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| w.chars().next().is_some_and(|c| !c.is_ascii_digit()))
}

/// A shared helper file's top-level functions: (name, text from its `local function` line to
/// its closing `end` line, both at column 0). The helper files are written so (a unit test
/// checks each one).
fn lib_functions(text: &str) -> Vec<(&str, &str)> {
    let mut out = Vec::new();
    let mut rest = text;
    let mut at = 0;
    while let Some(start) = find_line(rest, "local function ") {
        let from = &rest[start..];
        let name = from["local function ".len()..]
            .split('(')
            .next()
            .unwrap_or("")
            .trim();
        let end = from
            .find("\nend\n")
            .map(|e| e + "\nend\n".len())
            .or_else(|| from.ends_with("\nend").then_some(from.len()))
            .unwrap_or(from.len());
        out.push((name, &from[..end]));
        at += start + end;
        rest = &text[at..];
    }
    out
}

/// The byte offset of the first line of `text` that starts with `prefix`.
fn find_line(text: &str, prefix: &str) -> Option<usize> {
    if text.starts_with(prefix) {
        return Some(0);
    }
    text.find(&format!("\n{prefix}")).map(|i| i + 1)
}

/// The helper files `includes`, each without the functions `source` does not reach (through the
/// functions it calls, and theirs): Redis defines every function a script's text holds on every
/// call (each a Lua closure), so one that is never called still costs.
fn shaken(source: &str, includes: &[&'static str]) -> Vec<(&'static str, String)> {
    let files: Vec<(&'static str, &'static str)> = includes
        .iter()
        .filter_map(|p| INCLUDES.iter().find(|(f, _)| f == p).copied())
        .collect();
    let functions: Vec<(&str, &str)> = files.iter().flat_map(|(_, t)| lib_functions(t)).collect();
    // Roots: the script's text, and what the helper files hold outside their functions.
    let mut todo: Vec<&str> = identifiers(source).collect();
    let outside: Vec<String> = files
        .iter()
        .map(|(_, t)| {
            lib_functions(t)
                .iter()
                .fold(t.to_string(), |acc, (_, body)| acc.replacen(body, "", 1))
        })
        .collect();
    todo.extend(outside.iter().flat_map(|t| identifiers(t)));
    let mut used: std::collections::HashSet<&str> = std::collections::HashSet::new();
    while let Some(word) = todo.pop() {
        if used.contains(word) {
            continue;
        }
        if let Some((name, body)) = functions.iter().find(|(n, _)| *n == word) {
            used.insert(name);
            todo.extend(identifiers(body));
        }
    }
    files
        .iter()
        .map(|(path, text)| {
            let kept = lib_functions(text)
                .iter()
                .filter(|(name, _)| !used.contains(name))
                .fold(text.to_string(), |acc, (_, body)| acc.replacen(body, "", 1));
            (*path, kept)
        })
        .collect()
}

/// The `K` table of a script whose header lists `keys`: `local K = { <name> = KEYS[<i>], ... }`
/// (after KEYS and ARGV made locals).
fn k_table(keys: &[&str]) -> String {
    let fields: Vec<String> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| format!("{k} = KEYS[{}]", i + 1))
        .collect();
    // KEYS and ARGV are globals: as locals, each use is a register read, not a table lookup.
    format!(
        "local KEYS, ARGV = KEYS, ARGV\nlocal K = {{ {} }}\n",
        fields.join(", ")
    )
}

impl LuaScript {
    fn new(name: &'static str, source: &'static str) -> Self {
        let (keys, key_types): (Vec<_>, Vec<_>) = header_keys(name, source).into_iter().unzip();
        let (mut whole, mut stack, mut includes) = (String::new(), Vec::new(), Vec::new());
        flatten(
            name,
            source,
            INCLUDES,
            &mut stack,
            &mut includes,
            &mut whole,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        // What Redis runs: the same, without the helper functions the script never reaches.
        let files = shaken(source, &includes);
        let files: Vec<(&'static str, &str)> =
            files.iter().map(|(p, t)| (*p, t.as_str())).collect();
        let (mut flat, mut again) = (String::new(), Vec::new());
        flatten(name, source, &files, &mut stack, &mut again, &mut flat)
            .unwrap_or_else(|e| panic!("{e}"));
        let mut code = String::with_capacity(flat.len());
        for line in flat.split_inclusive('\n') {
            if line.trim_end() == K_LINE {
                code.push_str(&k_table(&keys));
            } else {
                code.push_str(line);
            }
        }
        LuaScript {
            name,
            source,
            sha: redis::Script::new(&code).get_hash().to_string(),
            code,
            keys,
            key_types,
            includes,
        }
    }

    /// The first of `cmd`'s keys (an `EVALSHA` of this script) holding another kind of value
    /// than the header says this script keeps there, as (key, its type, the expected type):
    /// what a `WRONGTYPE` error was about. Read with one pipeline of `TYPE` calls.
    pub(crate) async fn wrong_type_key(
        &self,
        conn: &mut impl redis::aio::ConnectionLike,
        cmd: &redis::Cmd,
    ) -> Option<(String, String, &'static str)> {
        let keys: Vec<Vec<u8>> = cmd
            .args_iter()
            .skip(3)
            .take(self.keys.len())
            .filter_map(|a| match a {
                redis::Arg::Simple(k) => Some(k.to_vec()),
                _ => None,
            })
            .collect();
        let mut pipe = redis::pipe();
        let mut expected = Vec::new();
        for (key, ty) in keys.iter().zip(&self.key_types) {
            if let Some(ty) = ty {
                pipe.cmd("TYPE").arg(key);
                expected.push((key, *ty));
            }
        }
        let types: Vec<String> = pipe.query_async(conn).await.ok()?;
        expected
            .into_iter()
            .zip(types)
            .find(|((_, want), got)| got != "none" && got != want)
            .map(|((key, want), got)| (String::from_utf8_lossy(key).into_owned(), got, want))
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

/// The Redis types a contract header may give a key, after its name (`KEYS[1] ready list`).
const KEY_TYPES: &[&str] = &["hash", "list", "zset", "set", "stream", "string"];

/// The key names of a contract header: the word after each `KEYS[<n>]` (n = 1, 2, ... in order;
/// forms like `KEYS[5 + 2(i-1)]` describe variadic keys and are not listed), each with its type
/// when the next word is one.
fn header_keys(name: &str, source: &'static str) -> Vec<(&'static str, Option<&'static str>)> {
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
        let mut words = rest[close + 1..].split_whitespace();
        let word = words.next().unwrap_or("");
        let ty = words
            .next()
            .and_then(|t| KEY_TYPES.iter().find(|k| **k == t).copied());
        assert_eq!(n, keys.len() + 1, "{name}: KEYS[{n}] out of order");
        keys.push((word, ty));
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
    COUNT_CAPPED_GROUPS => "count_capped_groups.lua",
    CAPPED_GROUP_PAGE => "capped_group_page.lua",
    KEEP_UNREADABLE_CAPPED => "keep_unreadable_capped.lua",
    REQUEUE_CAPPED => "requeue_capped.lua",
    ENQUEUE_JOBS => "enqueue_jobs.lua",
    DUE_SCHEDULES => "due_schedules.lua",
    LIST_SCHEDULES => "list_schedules.lua",
    UPSERT_SCHEDULE => "upsert_schedule.lua",
    REMOVE_SCHEDULE => "remove_schedule.lua",
    PAUSE_SCHEDULE => "pause_schedule.lua",
    GET_SCHEDULE => "get_schedule.lua",
    FETCH_JOBS => "fetch_jobs.lua",
    COMPLETE_JOBS => "complete_jobs.lua",
    FAIL_JOB => "fail_job.lua",
    RELEASE_JOB => "release_job.lua",
    SNOOZE_JOB => "snooze_job.lua",
    ENQUEUE_FLOW => "enqueue_flow.lua",
    RELEASE_FLOW => "release_flow.lua",
    DROP_FLOW => "drop_flow.lua",
    FLOW_NOTIFY => "flow_notify.lua",
    RELAY_STEP => "relay_step.lua",
    EXTEND_LEASE => "extend_lease.lua",
    CANCEL_JOB => "cancel_job.lua",
    REQUEUE_DEAD => "requeue_dead.lua",
    PURGE_DEAD => "purge_dead.lua",
    PROMOTE_JOB => "promote_job.lua",
    DELETE_JOB => "delete_job.lua",
    CLEAN_JOBS => "clean_jobs.lua",
    GET_JOBS => "get_jobs.lua",
    LIST_JOBS => "list_jobs.lua",
    PAGE_JOBS => "page_jobs.lua",
    SET_QUEUE_CONTROL => "set_queue_control.lua",
    SET_GROUP_CONTROL => "set_group_control.lua",
    GROUP_INFO => "group_info.lua",
    LIST_GROUPS => "list_groups.lua",
    SET_PROGRESS => "set_progress.lua",
    LOG_JOB => "log_job.lua",
    WAIT_JOB => "wait_job.lua",
    READ_EVENTS => "read_events.lua",
    LIST_WORKERS => "list_workers.lua",
    QUEUE_LATENCY => "queue_latency.lua",
    // Shared limiters (limiter.rs).
    SET_LIMITER => "set_limiter.lua",
    ACQUIRE_LIMIT => "acquire_limit.lua",
    RELEASE_LIMIT => "release_limit.lua",
    EXTEND_LIMIT => "extend_limit.lua",
    LIMIT_BATCH => "limit_batch.lua",
}

/// Finds which script an `EVALSHA` command runs (first argument after the command name).
pub(crate) fn by_sha(sha: &[u8]) -> Option<&'static LuaScript> {
    all().iter().copied().find(|s| s.sha.as_bytes() == sha)
}

pub(crate) fn is_noscript(err: &redis::RedisError) -> bool {
    err.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript)
}

#[cfg(test)]
mod tests;
