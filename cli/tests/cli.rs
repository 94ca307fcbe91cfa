//! The `tideq` binary against a private `redis-server` on a free loopback port: one test per
//! promise of the command line, each checked through the core crate.

mod common;

use std::time::Duration;

use common::*;
use serde_json::Value;
use tideq::{acl, EnqueueOptions, JobState};

#[test]
fn stats_json_equals_core_stats() {
    let redis = Redis::start();
    let q = redis.queue("stats");
    let rt = rt();
    rt.block_on(async {
        dead_job(&q, "d1").await; // first: it leases and fails every ready job
        q.enqueue(b"a", Default::default()).await.unwrap();
        let later = EnqueueOptions {
            delay: Some(Duration::from_secs(60)),
            ..Default::default()
        };
        q.enqueue(b"b", later).await.unwrap();
    });
    let core = rt.block_on(q.stats()).unwrap();
    let v = json(redis.tideq(&["stats", "stats", "--json"]));
    let n = |k: &str| v[k].as_u64().unwrap_or_else(|| panic!("{k} missing: {v}"));
    assert_eq!(
        (n("delayed"), n("ready"), n("active"), n("dead")),
        (core.delayed, core.ready, core.active, core.dead)
    );
    assert_eq!(
        (
            n("enqueued"),
            n("completed"),
            n("dead_lettered"),
            n("retried")
        ),
        (
            core.enqueued,
            core.completed,
            core.dead_lettered,
            core.retried
        )
    );
    assert_eq!(
        (n("recovered"), n("cancelled"), n("dead_trimmed"), n("lost")),
        (core.recovered, core.cancelled, core.dead_trimmed, core.lost)
    );
    assert_eq!((n("snoozed"), n("expired")), (core.snoozed, core.expired));
    assert_eq!(v["paused"].as_bool(), Some(core.paused));
    assert_eq!(
        (n("completed_kept"), n("waiting")),
        (core.completed_kept, core.waiting)
    );
    assert_eq!(v.as_object().unwrap().len(), 18, "every field once: {v}");
    assert_eq!((core.ready, core.delayed, core.dead), (1, 1, 1));
    // The latency, in seconds: the one ready job's wait, which grew since core read it.
    let latency = v["latency"].as_f64().unwrap_or_else(|| panic!("{v}"));
    assert!(latency >= core.latency.as_millis() as f64 / 1000.0, "{v}");
    let text = ok(redis.tideq(&["stats", "stats"]));
    assert!(
        text.contains("dead_lettered") && text.contains("paused"),
        "{text}"
    );
    let line = text.lines().find(|l| l.starts_with("latency")).unwrap();
    assert!(line.trim_end().ends_with('s'), "{text}");
}

#[test]
fn jobs_by_state_lists_what_was_enqueued() {
    let redis = Redis::start();
    let q = redis.queue("list");
    rt().block_on(async {
        for id in ["j1", "j2", "j3"] {
            q.enqueue(b"x", with_id(id)).await.unwrap();
        }
    });
    let v = json(redis.tideq(&["jobs", "list", "ready", "--json"]));
    assert_eq!(v["cursor"], Value::Null, "{v}");
    let ids: Vec<&str> = v["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["j1", "j2", "j3"]);
    let v = json(redis.tideq(&[
        "jobs", "list", "ready", "--offset", "1", "--limit", "1", "--json",
    ]));
    assert_eq!(v[0]["id"], "j2");
    let table = ok(redis.tideq(&["jobs", "list", "ready"]));
    assert!(table.starts_with("ID"), "{table}");
    assert!(table.contains("j3") && table.contains("ready"), "{table}");
    let none = json(redis.tideq(&["jobs", "list", "dead", "--json"]));
    assert_eq!(none["jobs"], Value::Array(vec![]));
}

/// A dead page's cursor holds `|`: printed on stdout unquoted, a pasted `--cursor` line piped
/// the shell at the `|`, and piped output carried the hint. It goes to stderr, shell-quoted.
#[test]
fn a_dead_page_cursor_stays_off_stdout_and_pastes_into_a_shell_as_printed() {
    let redis = Redis::start();
    let q = redis.queue("pasted");
    rt().block_on(async {
        for i in 0..3 {
            dead_job(&q, &format!("d{i}")).await;
        }
    });
    let out = redis.tideq(&["jobs", "pasted", "dead", "--limit", "2"]);
    let err = stderr(&out);
    let hint = err
        .lines()
        .find_map(|l| l.strip_prefix("next page: "))
        .unwrap_or_else(|| panic!("no hint on stderr: {err}"))
        .to_string();
    assert!(hint.contains('|') && hint.contains("'"), "{hint}");
    let first = ok(out);
    assert!(!first.contains("next page"), "{first}");
    // The hint as printed, pasted after the same command in a shell.
    let line = format!(
        "{} --url {} jobs pasted dead --limit 2 {hint}",
        env!("CARGO_BIN_EXE_tideq"),
        redis.url
    );
    let pasted = std::process::Command::new("sh")
        .arg("-c")
        .arg(&line)
        .env_remove("TIDEQ_REDIS_URL")
        .output()
        .unwrap();
    let second = ok(pasted);
    assert!(second.contains("d2") && !second.contains("d0"), "{second}");
}

#[test]
fn jobs_walks_a_state_page_by_page_with_the_cursor_each_page_prints() {
    let redis = Redis::start();
    let q = redis.queue("walk");
    rt().block_on(async {
        for i in 0..5 {
            q.enqueue(b"x", with_id(&format!("j{i}"))).await.unwrap();
        }
    });
    let out = redis.tideq(&["jobs", "walk", "ready", "--limit", "2"]);
    let next = next_cursor(&out).unwrap_or_else(|| panic!("{}", stderr(&out)));
    let first = ok(out);
    assert!(
        first.contains("j0") && first.contains("j1") && !first.contains("j2"),
        "{first}"
    );
    let v = json(redis.tideq(&[
        "jobs", "walk", "ready", "--limit", "2", "--cursor", &next, "--json",
    ]));
    let ids: Vec<&str> = v["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["j2", "j3"]);
    let last = v["cursor"].as_str().unwrap().to_string();
    let v = json(redis.tideq(&["jobs", "walk", "ready", "--cursor", &last, "--json"]));
    assert_eq!(
        (v["jobs"][0]["id"].as_str(), v["cursor"].clone()),
        (Some("j4"), Value::Null)
    );
    // A cursor of another state's walk is a usage error, and so is giving both kinds of place.
    let out = redis.tideq(&["jobs", "walk", "delayed", "--cursor", &next]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("cursor"),
        "{out:?}"
    );
    let out = redis.tideq(&["jobs", "walk", "ready", "--cursor", &next, "--offset", "1"]);
    assert!(!out.status.success());
}

#[test]
fn job_shows_the_payload_as_json_text_or_hex() {
    let redis = Redis::start();
    let q = redis.queue("show");
    rt().block_on(async {
        q.enqueue(br#"{"to":"ada"}"#, with_id("js")).await.unwrap();
        q.enqueue(b"plain words", with_id("tx")).await.unwrap();
        q.enqueue([0xffu8, 0x00, 0x01], with_id("bin"))
            .await
            .unwrap();
    });
    let v = json(redis.tideq(&["job", "show", "js", "--json"]));
    assert_eq!(v["payload"]["to"], "ada");
    assert_eq!(v["payload_format"], "json");
    assert_eq!(v["state"], "ready");
    assert_eq!(v["id"], "js");
    let v = json(redis.tideq(&["job", "show", "tx", "--json"]));
    assert_eq!(
        (&v["payload"], &v["payload_format"]),
        (&"plain words".into(), &"text".into())
    );
    let v = json(redis.tideq(&["job", "show", "bin", "--json"]));
    assert_eq!(
        (&v["payload"], &v["payload_format"]),
        (&"ff0001".into(), &"hex".into())
    );
    let v = json(redis.tideq(&["job", "show", "js", "--payload", "hex", "--json"]));
    assert_eq!(v["payload_format"], "hex");
    let text = ok(redis.tideq(&["job", "show", "tx"]));
    assert!(
        text.contains("plain words") && text.contains("(text, 11 bytes)"),
        "{text}"
    );
    assert!(!text.contains("cost"), "a cost of 1 is not shown: {text}");
}

#[test]
fn job_shows_a_cost_that_is_not_1() {
    let redis = Redis::start();
    let q = redis.queue("costs");
    rt().block_on(async {
        let opts = tideq::EnqueueOptions {
            cost: Some(5),
            ..with_id("c5")
        };
        q.enqueue(b"x", opts).await.unwrap();
    });
    let v = json(redis.tideq(&["job", "costs", "c5", "--json"]));
    assert_eq!(v["cost"], 5);
    let text = ok(redis.tideq(&["job", "costs", "c5"]));
    assert!(
        text.lines()
            .any(|l| l.starts_with("cost") && l.ends_with(" 5")),
        "{text}"
    );
}

#[test]
fn dead_requeue_moves_a_dead_job_back_to_ready() {
    let redis = Redis::start();
    let q = redis.queue("dq");
    let rt = rt();
    rt.block_on(dead_job(&q, "gone"));
    let listed = json(redis.tideq(&["dead", "dq", "list", "--json"]));
    assert_eq!(listed["jobs"][0]["id"], "gone");
    assert_eq!(listed["jobs"][0]["last_error"], "boom");
    ok(redis.tideq(&["dead", "dq", "requeue", "gone"]));
    let info = rt.block_on(q.get("gone")).unwrap().unwrap();
    assert_eq!((info.state, info.attempts), (JobState::Ready, 0));
}

#[test]
fn purge_refuses_without_yes_when_not_a_tty_and_works_with_it() {
    let redis = Redis::start();
    let q = redis.queue("pq");
    let rt = rt();
    rt.block_on(dead_job(&q, "p1"));
    let out = redis.tideq(&["dead", "pq", "purge"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--yes"), "{}", stderr(&out));
    assert_eq!(rt.block_on(q.stats()).unwrap().dead, 1, "nothing deleted");
    let out = redis.tideq(&["dead", "pq", "requeue-all"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(rt.block_on(q.stats()).unwrap().dead, 1);
    let text = ok(redis.tideq(&["dead", "pq", "purge", "--yes"]));
    assert!(text.contains("purged 1"), "{text}");
    assert_eq!(rt.block_on(q.stats()).unwrap().dead, 0);
    assert!(rt.block_on(q.get("p1")).unwrap().is_none());
}

#[test]
fn group_shows_the_shared_limiter_its_starts_take_from() {
    let redis = Redis::start();
    let q = redis.queue("gl");
    let rt = rt();
    rt.block_on(async {
        let client = tideq::Client::open(&redis.url)?;
        client
            .limiter()
            .concurrent("acme-api", 2, std::time::Duration::from_secs(60))
            .await?;
        q.set_group_limiter("acme", Some("acme-api")).await?;
        q.enqueue(b"x", EnqueueOptions::default()).await.map(drop)
    })
    .unwrap();
    let v = json(redis.tideq(&["group", "gl", "acme", "--json"]));
    assert_eq!(v["limiter"], "acme-api", "{v}");
    let text = ok(redis.tideq(&["group", "gl", "acme"]));
    assert!(
        text.lines()
            .any(|l| l.starts_with("limiter") && l.ends_with("acme-api")),
        "{text}"
    );
    let v = json(redis.tideq(&["group", "gl", "other", "--json"]));
    assert!(v["limiter"].is_null(), "{v}");
}

#[test]
fn pause_and_resume_change_is_paused() {
    let redis = Redis::start();
    let q = redis.queue("pz");
    let rt = rt();
    rt.block_on(q.enqueue(b"x", EnqueueOptions::default()))
        .unwrap();
    assert!(!rt.block_on(q.is_paused()).unwrap());
    ok(redis.tideq(&["pause", "pz"]));
    assert!(rt.block_on(q.is_paused()).unwrap());
    ok(redis.tideq(&["resume", "pz"]));
    assert!(!rt.block_on(q.is_paused()).unwrap());
    ok(redis.tideq(&["pause", "pz", "--group", "g1"]));
    assert!(rt.block_on(q.group("g1")).unwrap().paused);
    let v = json(redis.tideq(&["group", "pz", "g1", "--json"]));
    assert_eq!(v["paused"], true);
    ok(redis.tideq(&["resume", "pz", "--group", "g1"]));
    assert!(!rt.block_on(q.group("g1")).unwrap().paused);
    let v = json(redis.tideq(&["limits", "pz", "--json"]));
    assert!(v["max_active"].is_null(), "{v}");
}

#[test]
fn groups_lists_the_queues_groups_as_core_does() {
    let redis = Redis::start();
    let q = redis.queue("grouped");
    rt().block_on(q.enqueue(b"ungrouped", EnqueueOptions::default()))
        .unwrap();
    assert_eq!(
        ok(redis.tideq(&["groups", "grouped"])).trim(),
        "(no groups)"
    );
    assert_eq!(
        json(redis.tideq(&["groups", "grouped", "--json"])),
        Value::Array(vec![])
    );
    let rt = rt();
    rt.block_on(async {
        q.pause_group("slow").await.unwrap();
        for g in ["slow", "fast", "slow"] {
            let opts = EnqueueOptions {
                group: Some(g.to_string()),
                ..Default::default()
            };
            q.enqueue(b"x", opts).await.unwrap();
        }
    });
    let v = json(redis.tideq(&["groups", "grouped", "--json"]));
    let core = rt.block_on(q.groups()).unwrap();
    let got: Vec<(&str, u64, bool)> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["group"].as_str().unwrap(),
                g["ready"].as_u64().unwrap(),
                g["paused"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(got, [("fast", 1, false), ("slow", 2, true)]);
    assert_eq!(core.len(), 2);
    let text = ok(redis.tideq(&["groups", "grouped"]));
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("GROUP"), "{text}");
    assert!(
        lines[1].starts_with("fast") && lines[2].starts_with("slow"),
        "{text}"
    );
    assert!(lines[2].contains("true"), "{text}");
    // One page at a time: the next page's cursor is printed after the table.
    let out = redis.tideq(&["groups", "grouped", "--count", "1"]);
    let cursor = next_cursor(&out)
        .unwrap_or_else(|| panic!("no cursor after one group of two: {}", stderr(&out)));
    let text = ok(out);
    let mut seen = vec![text
        .lines()
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_string()];
    let mut at = Some(cursor);
    while let Some(c) = at {
        let v = json(redis.tideq(&["groups", "grouped", "--cursor", &c, "--json"]));
        for g in v["groups"].as_array().unwrap() {
            seen.push(g["group"].as_str().unwrap().to_string());
        }
        at = v["cursor"].as_str().map(str::to_string);
    }
    seen.sort();
    assert_eq!(seen, ["fast", "slow"]);
    let bad = redis.tideq(&["groups", "grouped", "--cursor", "nope"]);
    assert!(!bad.status.success());
    assert!(stderr(&bad).contains("not a cursor"), "{}", stderr(&bad));
}

#[test]
fn enqueue_creates_a_job_core_can_see() {
    let redis = Redis::start();
    let q = redis.queue("eq");
    let rt = rt();
    let v = json(redis.tideq(&[
        "enqueue",
        "eq",
        "hello",
        "--id",
        "e1",
        "--priority",
        "3",
        "--json",
    ]));
    assert_eq!((&v["id"], &v["created"]), (&"e1".into(), &true.into()));
    let info = rt.block_on(q.get("e1")).unwrap().unwrap();
    assert_eq!(
        (info.payload.as_slice(), info.priority),
        (&b"hello"[..], Some(3))
    );
    ok(redis.tideq(&[
        "enqueue",
        "eq",
        "--task",
        "send",
        "--data",
        r#"{"to":"ada"}"#,
        "--id",
        "e2",
        "--delay",
        "60",
    ]));
    let info = rt.block_on(q.get("e2")).unwrap().unwrap();
    assert_eq!(info.state, JobState::Delayed);
    assert_eq!(info.payload, br#"{"to":"ada"}"#);
    let out = redis.tideq(&["enqueue", "eq", "--data", "{not json"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

#[test]
fn acl_prints_exactly_cores_rules() {
    let want = acl::rules("tideq", "emails", 1, acl::Role::Worker).unwrap();
    let line = ok(run(&["acl", "emails", "worker"]));
    assert_eq!(
        line.trim_end(),
        format!("ACL SETUSER emails-worker on >CHANGE-ME {want}")
    );
    let want = acl::rules("app", "emails", 3, acl::Role::Admin).unwrap();
    let rules = ok(run(&[
        "--prefix",
        "app",
        "acl",
        "emails",
        "admin",
        "--shards",
        "3",
        "--rules-only",
    ]));
    assert_eq!(rules.trim_end(), want);
    assert_eq!(run(&["acl", "emails", "boss"]).status.code(), Some(2));
}

#[test]
fn wrong_url_exits_1_with_a_clear_message() {
    let url = format!("redis://127.0.0.1:{}", free_port());
    let out = run(&["--url", &url, "stats", "q"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.starts_with("tideq: CONNECTION"), "{err}");
    assert!(stdout(&out).is_empty());
}

#[test]
fn unknown_job_exits_3() {
    let redis = Redis::start();
    let out = redis.tideq(&["job", "q", "nope"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stderr(&out).contains("no job \"nope\""), "{}", stderr(&out));
    let out = redis.tideq(&["dead", "q", "requeue", "nope"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
}

#[test]
fn bad_state_or_bad_id_exits_2() {
    let redis = Redis::start();
    let out = redis.tideq(&["jobs", "q", "sleeping"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("INVALID_ARGUMENT"),
        "{}",
        stderr(&out)
    );
    let long = "x".repeat(300);
    assert_eq!(redis.tideq(&["job", "q", &long]).status.code(), Some(2));
    assert_eq!(run(&["stats"]).status.code(), Some(2), "usage error");
}

#[test]
fn a_password_in_the_url_never_appears_in_output() {
    let secret = "s3cr3t-Pa55";
    // A server that needs no password refuses AUTH; a closed port refuses the connection.
    let redis = Redis::start();
    let with_pw = redis
        .url
        .replace("redis://", &format!("redis://:{secret}@"));
    let closed = format!("redis://alice:{secret}@127.0.0.1:{}", free_port());
    for url in [with_pw, closed] {
        for args in [
            &["stats", "q"][..],
            &["jobs", "q", "ready"],
            &["dead", "q", "purge", "--yes"],
        ] {
            let out = run(&[&["--url", url.as_str()], args].concat());
            assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
            let all = format!("{}{}", stdout(&out), stderr(&out));
            assert!(!all.contains(secret), "{all}");
            assert!(all.starts_with("tideq: "), "{all}");
        }
    }
}

#[test]
fn schedules_lists_each_schedule_with_its_next_run() {
    let redis = Redis::start();
    let q = redis.queue("sched");
    let rt = rt();
    let next = rt
        .block_on(q.upsert_schedule(
            "daily",
            tideq::Every::cron_in("0 9 * * *", "Europe/Paris"),
            b"{}",
            EnqueueOptions {
                task: Some("report".into()),
                ..Default::default()
            },
        ))
        .unwrap();
    let v = json(redis.tideq(&["schedules", "sched", "--json"]));
    assert_eq!(v[0]["name"], "daily");
    assert_eq!(v[0]["next_run_ms"].as_u64(), next);
    assert_eq!(v[0]["task"], "report");
    assert_eq!(v[0]["every"], "cron 0 9 * * * (Europe/Paris)");
    let text = ok(redis.tideq(&["schedules", "sched"]));
    assert!(
        text.contains("daily") && text.contains("Europe/Paris"),
        "{text}"
    );
    rt.block_on(redis.queue("none").enqueue(b"x", EnqueueOptions::default()))
        .unwrap();
    assert!(ok(redis.tideq(&["schedules", "none"])).contains("(no schedules)"));
}
