//! `tideq worker` with jobs running (issue 41): a child SIGKILLed every second, recycling by jobs
//! and by memory, a rolling restart on SIGHUP: every job completes, none runs twice at once
//! (a ledger of each run's start and end), the children come back to the count asked for.
//! Real processes (the `worker_host` and `worker_child` examples) and a real redis-server.

mod common;

use std::collections::HashSet;
use std::time::{Duration, Instant};

use common::supervise::*;
use tideq_testing::RedisServer;

fn ids(n: usize) -> impl Iterator<Item = String> {
    (0..n).map(|i| format!("j{i}"))
}

#[test]
fn sigkill_of_a_child_every_second_loses_no_job_runs_none_twice_at_once_and_restores_the_count() {
    let server = RedisServer::start();
    let q = queue(&server.url, "work");
    let n = 1500;
    fill(&q, n);
    let dir = temp_dir("kill");
    let ledger_path = dir.join("ledger");
    let target = format!("sleep=50,lease=1500,ledger={}", ledger_path.display());
    let mut sup = Supervisor::start(
        &server.url,
        &target,
        &["--processes", "2", "--concurrency", "5"],
    );
    until("two children", 30, || sup.events("child_ready").len() >= 2);
    let mut killed = HashSet::new();
    for i in 0..8 {
        std::thread::sleep(Duration::from_secs(1));
        let kids = sup.children();
        if let Some(&pid) = kids.get(i % kids.len().max(1)) {
            unsafe {
                libc::kill(pid as i32, libc::SIGKILL);
            }
            killed.insert(pid);
        }
    }
    assert!(killed.len() >= 6, "killed {killed:?}");
    until("every job completed", 180, || {
        stats(&q).completed as usize == n
    });
    until("two children again", 60, || {
        let kids = sup.children();
        kids.len() == 2 && kids.iter().all(|p| !killed.contains(p))
    });
    check_ledger(&ledger_path, ids(n), &killed);
    let st = stats(&q);
    assert_eq!((st.ready, st.active, st.dead), (0, 0, 0));
    sup.signal(libc::SIGTERM);
    assert_eq!(sup.wait(30), Some(0), "{}", sup.log());
}

#[test]
fn recycling_by_max_jobs_replaces_children_and_loses_no_job() {
    let server = RedisServer::start();
    let q = queue(&server.url, "work");
    let n = 120;
    fill(&q, n);
    let dir = temp_dir("recycle");
    let ledger_path = dir.join("ledger");
    let target = format!("sleep=10,ledger={}", ledger_path.display());
    let mut sup = Supervisor::start(
        &server.url,
        &target,
        &["--max-jobs-per-process", "20", "--concurrency", "4"],
    );
    until("every job completed", 120, || {
        stats(&q).completed as usize == n
    });
    let per_pid = check_ledger(&ledger_path, ids(n), &HashSet::new());
    assert!(per_pid.len() >= n / 20, "{per_pid:?}");
    assert!(per_pid.values().all(|runs| *runs <= 20), "{per_pid:?}");
    assert!(sup.events("child_recycling").len() >= n / 20 - 1);
    assert!(sup.events("child_recycling")[0]["reason"] == "max jobs reached");
    // None restarted as a failure.
    assert!(sup.events("giving_up").is_empty());
    assert!(
        sup.events("child_exited")
            .iter()
            .all(|e| e["level"] == "info"),
        "{}",
        sup.log()
    );
    sup.signal(libc::SIGTERM);
    assert_eq!(sup.wait(30), Some(0), "{}", sup.log());
}

#[test]
fn recycling_by_memory_replaces_a_leaking_child_and_loses_no_job() {
    let server = RedisServer::start();
    let q = queue(&server.url, "work");
    let n = 60;
    fill(&q, n);
    let dir = temp_dir("leak");
    let ledger_path = dir.join("ledger");
    // 5 MB kept per job, a limit of 60 MB: a child is replaced every few jobs.
    let target = format!("sleep=20,leak=5,ledger={}", ledger_path.display());
    let mut sup = Supervisor::start(
        &server.url,
        &target,
        &["--max-memory-per-process", "60MB", "--concurrency", "2"],
    );
    let mut max_rss = 0u64;
    let t = Instant::now();
    while (stats(&q).completed as usize) < n {
        assert!(t.elapsed() < Duration::from_secs(120), "{}", sup.log());
        for pid in sup.children() {
            let statm = std::fs::read_to_string(format!("/proc/{pid}/statm")).unwrap_or_default();
            let pages: u64 = statm
                .split(' ')
                .nth(1)
                .and_then(|p| p.parse().ok())
                .unwrap_or(0);
            max_rss = max_rss.max(pages * 4096);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let per_pid = check_ledger(&ledger_path, ids(n), &HashSet::new());
    assert!(per_pid.len() >= 2, "{per_pid:?}");
    let recycled = sup.events("child_recycling");
    assert!(!recycled.is_empty());
    assert_eq!(recycled[0]["reason"], "memory over the limit");
    // Bounded: the limit, plus what a child leaks between two looks and its last jobs.
    assert!(max_rss < 200_000_000, "max RSS {max_rss}");
    sup.signal(libc::SIGTERM);
    assert_eq!(sup.wait(30), Some(0), "{}", sup.log());
}

#[test]
fn sighup_replaces_every_child_one_at_a_time_and_loses_no_job() {
    let server = RedisServer::start();
    let q = queue(&server.url, "work");
    let n = 300;
    fill(&q, n);
    let dir = temp_dir("hup");
    let ledger_path = dir.join("ledger");
    let target = format!("sleep=100,ledger={}", ledger_path.display());
    let mut sup = Supervisor::start(
        &server.url,
        &target,
        &["--processes", "2", "--concurrency", "3"],
    );
    until("two children ready", 30, || {
        sup.events("child_ready").len() == 2
    });
    let before: HashSet<u32> = sup.children().into_iter().collect();
    until("jobs running", 30, || ledger(&ledger_path).len() >= 6);
    sup.signal(libc::SIGHUP);
    until("every child replaced", 60, || {
        let now = sup.children();
        now.len() == 2 && now.iter().all(|p| !before.contains(p))
    });
    until("every job completed", 120, || {
        stats(&q).completed as usize == n
    });
    check_ledger(&ledger_path, ids(n), &HashSet::new());
    let reasons: Vec<_> = sup
        .events("child_recycling")
        .iter()
        .map(|e| e["reason"].clone())
        .collect();
    assert_eq!(reasons.len(), 2, "{reasons:?}");
    // None failed: the old children exited by themselves once told to.
    assert!(sup
        .events("child_exited")
        .iter()
        .all(|e| e["level"] == "info"));
    sup.signal(libc::SIGTERM);
    assert_eq!(sup.wait(30), Some(0), "{}", sup.log());
}
