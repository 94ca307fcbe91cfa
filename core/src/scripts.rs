//! The Lua scripts: one file under `src/lua/` per operation, each opening with its contract
//! (`KEYS[i] <key> ...`, `ARGV[i] ...`, `Returns: ...`). Shared helpers live in `src/lua/lib/`, one
//! file per topic, that a script pulls in with `--#include lib/<topic>.lua` lines after its header
//! (Redis scripts cannot call each other); a helper file names the files it needs the same way.
//! The text sent to Redis is the script with its includes flattened: each file once, after the
//! files it includes, in the order first named. An unknown file or an include cycle panics when the
//! script is loaded (the unit tests load every script). The data model the scripts share is
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
    "base.lua",
    "bury.lua",
    "cancel.lua",
    "cfg.lua",
    "chunked.lua",
    "control.lua",
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
    "retention.lua",
    "route.lua",
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
    files: &[(&'static str, &'static str)],
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

/// The `K` table of a script whose header lists `keys`: `local K = { <name> = KEYS[<i>], ... }`.
fn k_table(keys: &[&str]) -> String {
    let fields: Vec<String> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| format!("{k} = KEYS[{}]", i + 1))
        .collect();
    format!("local K = {{ {} }}\n", fields.join(", "))
}

impl LuaScript {
    fn new(name: &'static str, source: &'static str) -> Self {
        let (keys, key_types): (Vec<_>, Vec<_>) = header_keys(name, source).into_iter().unzip();
        let (mut flat, mut stack, mut includes) = (String::new(), Vec::new(), Vec::new());
        flatten(name, source, INCLUDES, &mut stack, &mut includes, &mut flat)
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
    ENQUEUE_JOBS => "enqueue_jobs.lua",
    DUE_SCHEDULES => "due_schedules.lua",
    LIST_SCHEDULES => "list_schedules.lua",
    UPSERT_SCHEDULE => "upsert_schedule.lua",
    REMOVE_SCHEDULE => "remove_schedule.lua",
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
    GET_JOBS => "get_jobs.lua",
    LIST_JOBS => "list_jobs.lua",
    PAGE_JOBS => "page_jobs.lua",
    SET_QUEUE_CONTROL => "set_queue_control.lua",
    SET_GROUP_CONTROL => "set_group_control.lua",
    GROUP_INFO => "group_info.lua",
    LIST_GROUPS => "list_groups.lua",
    SET_PROGRESS => "set_progress.lua",
    WAIT_JOB => "wait_job.lua",
    READ_EVENTS => "read_events.lua",
    LIST_WORKERS => "list_workers.lua",
    QUEUE_LATENCY => "queue_latency.lua",
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
    use super::{flatten, include_lines, INCLUDES};
    use crate::keys::{CappedKeys, JobKeys};

    /// Lua's `unpack` stops near 8,000 values ("too many results to unpack"), and a script that
    /// fails there keeps the writes it made before. So no script unpacks a list whose length a
    /// caller or the data decides: such lists go through lib/chunked.lua's `chunked` and
    /// `chunked_read` (runs of 1000). Any other `unpack(` must take a run of at most 1000
    /// (`unpack(t, i, math.min(i + 999, ...))`) or say on its line why its length is bounded
    /// (`-- bounded: N`).
    #[test]
    fn no_script_unpacks_a_list_of_unbounded_length() {
        let mut sources: Vec<(&str, &str)> =
            super::all().iter().map(|s| (s.name, s.source)).collect();
        sources.extend(INCLUDES.iter().copied());
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
            // A script that takes no ARGV says so.
            let argv = if s.source.contains("ARGV: none") {
                "ARGV: none"
            } else {
                "ARGV[1]"
            };
            for word in ["KEYS[1]", argv, "Returns:"] {
                assert!(s.source.contains(word), "{} header lacks {word}", s.name);
            }
            if argv == "ARGV: none" {
                assert!(!s.code.contains("ARGV["), "{} reads ARGV", s.name);
            }
            assert!(!s.keys.is_empty(), "{} lists no keys", s.name);
        }
    }

    #[test]
    fn every_key_a_header_names_is_one_the_rust_side_builds() {
        const CAPPED: [&str; 5] = [
            "push_capped.lua",
            "pop_capped.lua",
            "capped_groups.lua",
            "count_capped_groups.lua",
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
        assert_eq!(fail.len(), 37);
        assert_eq!(fail[0], jobs.active());
        assert_eq!(fail[8], jobs.wake());
    }

    #[test]
    fn includes_are_flattened_and_contracts_kept_first() {
        let fetch = &*super::FETCH_JOBS;
        assert!(fetch.code.starts_with("--[["));
        assert!(fetch.code.contains("local function parse_meta"));
        assert!(!fetch.code.contains("--#include"));
        // Each file once, after the files it includes.
        assert_eq!(fetch.code.matches("local function chunked(").count(), 1);
        let at = |f: &str| fetch.includes.iter().position(|p| *p == f).unwrap();
        assert!(at("lib/chunked.lua") < at("lib/control.lua"));
        assert!(at("lib/route.lua") < at("lib/control.lua"));
        assert!(at("lib/control.lua") < at("lib/acks.lua"));
        // A script takes only the helpers it uses (and theirs).
        let extend = &*super::EXTEND_LEASE;
        assert_eq!(extend.includes, ["lib/meta.lua", "lib/workers.lua"]);
        assert!(!extend.code.contains("local function chunked("));
    }

    /// Every file under `src/lua/` is compiled in: each `lib/*.lua` as an include, each other one
    /// as a script; and every include is used.
    #[test]
    fn every_lua_file_is_a_script_or_an_include() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lua");
        let names = |d: &std::path::Path| -> Vec<String> {
            let mut v: Vec<String> = std::fs::read_dir(d)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(".lua"))
                .collect();
            v.sort();
            v
        };
        let mut scripts: Vec<&str> = super::all().iter().map(|s| s.name).collect();
        scripts.sort();
        assert_eq!(names(&dir), scripts);
        let mut libs: Vec<String> = INCLUDES
            .iter()
            .map(|(p, _)| p.trim_start_matches("lib/").to_string())
            .collect();
        libs.sort();
        assert_eq!(names(&dir.join("lib")), libs);
        for (path, _) in INCLUDES {
            assert!(
                super::all().iter().any(|s| s.includes.contains(path)),
                "{path} is included by no script"
            );
        }
    }

    /// The names a helper file defines at its top level (`local function f(`, `local X =`).
    fn defined(text: &str) -> Vec<&str> {
        text.lines()
            .filter_map(|l| {
                let rest = l
                    .strip_prefix("local function ")
                    .or_else(|| l.strip_prefix("local "))?;
                let name = rest
                    .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .next()?;
                (!name.is_empty()).then_some(name)
            })
            .collect()
    }

    /// The names `text` declares local anywhere (`local a, b = ...`, `local function f(`).
    fn declared(text: &str) -> Vec<&str> {
        text.lines()
            .filter_map(|l| l.trim_start().strip_prefix("local "))
            .flat_map(|rest| {
                let rest = rest.strip_prefix("function ").unwrap_or(rest);
                let names = rest.split(['=', '(']).next().unwrap_or("");
                names.split(',').map(str::trim)
            })
            .collect()
    }

    /// The identifiers `text` uses, comments left out (a field `x.name` is not a use of `name`).
    fn used(text: &str) -> std::collections::BTreeSet<String> {
        let mut out = std::collections::BTreeSet::new();
        // Block comments (`--[[ ... ]]`, the contract) first.
        let mut code_parts = Vec::new();
        let mut rest = text;
        while let Some(at) = rest.find("--[[") {
            code_parts.push(&rest[..at]);
            rest = rest[at..].split_once("]]").map_or("", |(_, after)| after);
        }
        code_parts.push(rest);
        for line in code_parts.iter().flat_map(|p| p.lines()) {
            // String literals blanked out, then the line comment left off.
            let mut blank = String::with_capacity(line.len());
            let mut quote = None;
            let mut escaped = false;
            for c in line.chars() {
                match quote {
                    Some(q) => {
                        if !escaped && c == q {
                            quote = None;
                        }
                        escaped = !escaped && c == '\\';
                        blank.push(' ');
                    }
                    None => {
                        if c == '\'' || c == '"' {
                            quote = Some(c);
                        }
                        blank.push(c);
                    }
                }
            }
            let code: &str = blank.split("--").next().unwrap_or("");
            let mut start = None;
            for (i, c) in code.char_indices().chain([(code.len(), ' ')]) {
                let word = c.is_alphanumeric() || c == '_';
                match (word, start) {
                    (true, None) => start = Some(i),
                    (false, Some(s)) => {
                        if !code[..s].ends_with('.') {
                            out.insert(code[s..i].to_string());
                        }
                        start = None;
                    }
                    _ => {}
                }
            }
        }
        out
    }

    /// A helper called from a script or a helper file is defined in a file it includes (directly
    /// or through another), else Redis would fail the script only when that line runs; and every
    /// include a file names is used by it (a script includes only what it uses).
    #[test]
    fn each_file_includes_what_it_uses_and_only_that() {
        let owner = |name: &str| -> Option<&'static str> {
            INCLUDES
                .iter()
                .find(|(_, text)| defined(text).contains(&name))
                .map(|(p, _)| *p)
        };
        let mut files: Vec<(&str, &str)> = INCLUDES.to_vec();
        files.extend(super::all().iter().map(|s| (s.name, s.source)));
        for (name, text) in files {
            let (mut flat, mut stack, mut done) = (String::new(), Vec::new(), Vec::new());
            flatten(name, text, INCLUDES, &mut stack, &mut done, &mut flat).unwrap();
            let own = declared(text);
            let uses = used(text);
            for word in &uses {
                if let Some(lib) = owner(word) {
                    assert!(
                        own.contains(&word.as_str()) || done.contains(&lib),
                        "{name} uses {word} without including {lib}"
                    );
                }
            }
            for inc in include_lines(text) {
                let (_, lib) = INCLUDES.iter().find(|(p, _)| *p == inc).unwrap();
                let any = defined(lib).iter().any(|d| uses.contains(*d));
                assert!(any, "{name} includes {inc} but uses nothing of it");
            }
        }
    }

    #[test]
    fn includes_resolve_once_in_order_and_refuse_cycles_and_unknown_files() {
        let files: &[(&str, &str)] = &[
            ("lib/a.lua", "--#include lib/b.lua\nA\n"),
            ("lib/b.lua", "B\n"),
            (
                "lib/c.lua",
                "--#include lib/a.lua\n--#include lib/b.lua\nC\n",
            ),
            ("lib/x.lua", "--#include lib/y.lua\n"),
            ("lib/y.lua", "--#include lib/x.lua\n"),
        ];
        let run = |src: &str| {
            let (mut out, mut stack, mut done) = (String::new(), Vec::new(), Vec::new());
            flatten("s.lua", src, files, &mut stack, &mut done, &mut out).map(|()| (out, done))
        };
        let (out, done) = run("H\n--#include lib/c.lua\n--#include lib/b.lua\nS\n").unwrap();
        assert_eq!(out, "H\nB\nA\nC\nS\n");
        assert_eq!(done, ["lib/b.lua", "lib/a.lua", "lib/c.lua"]);
        let cycle = run("--#include lib/x.lua\n").unwrap_err();
        assert!(cycle.contains("cycle"), "{cycle}");
        let missing = run("--#include lib/nope.lua\n").unwrap_err();
        assert!(missing.contains("unknown include"), "{missing}");
    }

    #[test]
    fn the_k_table_is_generated_from_the_header() {
        for s in super::all() {
            assert!(
                !s.source.contains("local K ="),
                "{}: K comes from the header (--#K)",
                s.name
            );
            if s.source.lines().any(|l| l == super::K_LINE) {
                let table = super::k_table(&s.keys);
                assert!(s.code.contains(&table), "{}", s.name);
            }
        }
        assert_eq!(
            super::k_table(&["jobs", "meta"]),
            "local K = { jobs = KEYS[1], meta = KEYS[2] }\n"
        );
        let fetch = &*super::FETCH_JOBS;
        assert!(fetch
            .code
            .contains("local K = { ready = KEYS[1], delayed = KEYS[2], active = KEYS[3],"));
        assert!(fetch
            .code
            .contains(" winfo = KEYS[43], hist = KEYS[44], rat = KEYS[45] }\n"));
    }
}
