use super::{flatten, include_lines, lib_functions, INCLUDES};
use crate::keys::{CappedKeys, JobKeys};

/// Lua's `unpack` stops near 8,000 values ("too many results to unpack"), and a script that
/// fails there keeps the writes it made before. So no script unpacks a list whose length a
/// caller or the data decides: such lists go through lib/chunked.lua's `chunked` and
/// `chunked_read` (runs of 1000). Any other `unpack(` must take a run of at most 1000
/// (`unpack(t, i, math.min(i + 999, ...))`) or say on its line why its length is bounded
/// (`-- bounded: N`).
#[test]
fn no_script_unpacks_a_list_of_unbounded_length() {
    let mut sources: Vec<(&str, &str)> = super::all().iter().map(|s| (s.name, s.source)).collect();
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
    const CAPPED: [&str; 7] = [
        "push_capped.lua",
        "pop_capped.lua",
        "capped_groups.lua",
        "count_capped_groups.lua",
        "capped_group_page.lua",
        "keep_unreadable_capped.lua",
        "requeue_capped.lua",
    ];
    const LIMITER: [&str; 5] = [
        "set_limiter.lua",
        "acquire_limit.lua",
        "release_limit.lua",
        "extend_limit.lua",
        "limit_batch.lua",
    ];
    let jobs = JobKeys::new("tideq", "q").unwrap();
    let capped = CappedKeys::new("tideq", "q").unwrap();
    let limiter = crate::keys::LimiterKeys::new("tideq", "l").unwrap();
    for s in super::all() {
        for key in &s.keys {
            let known = if LIMITER.contains(&s.name) {
                limiter.by_name(key).is_some()
            } else if CAPPED.contains(&s.name) {
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
    assert_eq!(fail.len(), 41);
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
    assert_eq!(
        extend.includes,
        [
            "lib/meta.lua",
            "lib/workers.lua",
            "lib/chunked.lua",
            "lib/attempts.lua"
        ]
    );
    assert!(!extend.code.contains("local function route_of("));
}

/// Each helper file is written as the shaking reads it: at its top level, comments, `local`
/// constants and `local function` blocks closed by an `end` at column 0.
#[test]
fn every_helper_function_is_found_whole() {
    for (path, text) in INCLUDES {
        let found = lib_functions(text);
        assert_eq!(
            found.len(),
            text.matches("\nlocal function ").count()
                + usize::from(text.starts_with("local function ")),
            "{path}"
        );
        for (name, body) in found {
            assert!(
                body.starts_with(&format!("local function {name}(")),
                "{path}: {name}"
            );
            assert!(body.trim_end().ends_with("\nend"), "{path}: {name}");
            // No line at column 0 inside but its first and last.
            let lines: Vec<&str> = body.trim_end().lines().collect();
            for l in &lines[1..lines.len() - 1] {
                assert!(
                    l.is_empty() || l.starts_with(char::is_whitespace) || l.starts_with("--"),
                    "{path}: {name}: {l:?}"
                );
            }
        }
    }
}

/// A script's text defines only the helper functions it reaches: every one is named again
/// after its definition (Redis makes a closure of each on every call).
#[test]
fn a_script_defines_only_the_helper_functions_it_reaches() {
    let mut dropped = 0;
    for s in super::all() {
        for (_, text) in INCLUDES.iter().filter(|(p, _)| s.includes.contains(p)) {
            for (name, _) in lib_functions(text) {
                let def = format!("local function {name}(");
                if !s.code.contains(&def) {
                    dropped += 1;
                    continue;
                }
                let words = s
                    .code
                    .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .filter(|w| *w == name)
                    .count();
                assert!(words >= 2, "{}: {name} is defined, never used", s.name);
            }
        }
    }
    assert!(dropped > 0);
    // The fetch still has what it calls.
    assert!(super::FETCH_JOBS
        .code
        .contains("local function parse_meta("));
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
        "local KEYS, ARGV = KEYS, ARGV\nlocal K = { jobs = KEYS[1], meta = KEYS[2] }\n"
    );
    let fetch = &*super::FETCH_JOBS;
    assert!(fetch
        .code
        .contains("local K = { ready = KEYS[1], delayed = KEYS[2], active = KEYS[3],"));
    assert!(fetch
        .code
        .contains(" winfo = KEYS[43], hist = KEYS[44], rat = KEYS[45], attempts = KEYS[46], logs = KEYS[47], lg = KEYS[48], tasks = KEYS[49], tstat = KEYS[50], tm = KEYS[51], th = KEYS[52], cost = KEYS[53] }\n"));
}
