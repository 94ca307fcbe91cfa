//! `tideq worker` (issue 41): the standalone binary's answer, bad flags, a broken target,
//! signals (SIGTERM drains, a second aborts, SIGTTIN/SIGTTOU), the health probes. Real processes
//! (the `worker_host` and `worker_child` examples) and a real redis-server.

mod common;

use std::time::{Duration, Instant};

use common::supervise::*;
use tideq_testing::{free_port, RedisServer};

#[test]
fn worker_without_a_host_names_the_packages_and_exits_2() {
    let out = common::run(&["worker", "app.tasks:queue"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    for want in ["pip install tideq", "npm install tideq", "tideq::serve"] {
        assert!(err.contains(want), "{want} in {err}");
    }
}

#[test]
fn bad_flag_values_are_refused_with_clear_errors_and_start_nothing() {
    let cases: &[(&[&str], &str)] = &[
        (&["--processes", "0"], "or auto"),
        (&["--processes", "many"], "or auto"),
        (&["--concurrency", "0"], "--concurrency"),
        (&["--queues", "emails=0"], "at least 1"),
        (&["--queues", "a,a"], "named twice"),
        (&["--max-jobs-per-process", "0"], "--max-jobs-per-process"),
        (
            &["--max-memory-per-process", "200XB"],
            "200MB, 1GiB, 500000K",
        ),
        (&["--max-memory-per-process", "0"], "at least 1 byte"),
        (&["--shutdown-grace=-1"], "seconds"),
        (&["--health", "localhost"], "--health"),
        (&["--log-format", "xml"], "--log-format"),
        (&["--log-level", "loud"], "--log-level"),
        (&["--prefix", "p"], "not supported here"),
    ];
    for (args, want) in cases {
        let dir = temp_dir("badflag");
        let out = std::process::Command::new(examples().join("worker_host"))
            .args(["worker", &format!("pid-file={}", dir.display())])
            .args(*args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {want:?} in {err}");
        assert_eq!(
            std::fs::read_dir(&dir).unwrap().count(),
            0,
            "{args:?} started a child"
        );
    }
}

#[test]
fn a_broken_target_exits_1_with_its_error_having_started_at_most_3_children() {
    let server = RedisServer::start();
    for processes in ["1", "2"] {
        let t = Instant::now();
        let mut sup = Supervisor::start(&server.url, "fail-at-start", &["--processes", processes]);
        assert_eq!(sup.wait(60), Some(1), "{}", sup.log());
        let started = sup.events("child_started").len();
        assert!(
            started <= 3.max(processes.parse::<usize>().unwrap()),
            "{started} started"
        );
        let gave_up = sup.events("giving_up");
        assert_eq!(gave_up.len(), 1, "{}", sup.log());
        assert!(
            gave_up[0]["stderr_tail"]
                .as_str()
                .unwrap()
                .contains("cannot load the target"),
            "{}",
            sup.log()
        );
        // The children's own stderr is passed through too.
        assert!(sup.log().contains("worker_child: cannot load the target"));
        eprintln!(
            "broken target, {processes} process(es): gave up in {:?}",
            t.elapsed()
        );
    }
}

#[test]
fn sigterm_mid_run_drains_every_started_job_and_exits_0() {
    let server = RedisServer::start();
    let q = queue(&server.url, "work");
    fill(&q, 200);
    let dir = temp_dir("drain");
    let ledger_path = dir.join("ledger");
    let target = format!("sleep=300,ledger={}", ledger_path.display());
    let mut sup = Supervisor::start(
        &server.url,
        &target,
        &[
            "--processes",
            "2",
            "--concurrency",
            "5",
            "--shutdown-grace",
            "20",
        ],
    );
    until("jobs running in both children", 30, || {
        let l = ledger(&ledger_path);
        l.iter()
            .map(|(_, _, p)| *p)
            .collect::<std::collections::HashSet<_>>()
            .len()
            == 2
    });
    sup.signal(libc::SIGTERM);
    assert_eq!(sup.wait(60), Some(0), "{}", sup.log());
    let started: Vec<String> = ledger(&ledger_path)
        .into_iter()
        .filter(|(s, _, _)| *s)
        .map(|(_, id, _)| id)
        .collect();
    check_ledger(&ledger_path, started.clone(), &Default::default());
    let st = stats(&q);
    assert_eq!(st.active, 0);
    assert_eq!(st.completed as usize, started.len());
    assert_eq!(st.ready as usize, 200 - started.len());
    assert!(children_of(sup.pid()).is_empty());
}

#[test]
fn a_second_sigterm_aborts_the_children_and_their_jobs_go_back_by_their_leases() {
    let server = RedisServer::start();
    let q = queue(&server.url, "work");
    fill(&q, 4);
    let dir = temp_dir("abort");
    let ledger_path = dir.join("ledger");
    let target = format!("sleep=60000,lease=1000,ledger={}", ledger_path.display());
    let mut sup = Supervisor::start(
        &server.url,
        &target,
        &["--concurrency", "4", "--shutdown-grace", "60"],
    );
    until("4 jobs running", 30, || ledger(&ledger_path).len() == 4);
    sup.signal(libc::SIGTERM);
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(sup.wait(0), None, "the first SIGTERM waits for the jobs");
    sup.signal(libc::SIGTERM);
    assert_eq!(sup.wait(30), Some(0), "{}", sup.log());
    // Not lost: a worker runs them once their leases expire.
    assert_eq!(stats(&q).completed, 0);
    assert_eq!(drain(&q), 4);
}

#[test]
fn sigttin_adds_a_child_and_sigttou_removes_one() {
    let server = RedisServer::start();
    let mut sup = Supervisor::start(&server.url, "sleep=10", &[]);
    until("one child", 30, || sup.events("child_ready").len() == 1);
    sup.signal(libc::SIGTTIN);
    until("two children ready", 30, || {
        sup.events("child_ready").len() == 2 && sup.children().len() == 2
    });
    sup.signal(libc::SIGTTOU);
    until("back to one child", 30, || sup.children().len() == 1);
    sup.signal(libc::SIGTERM);
    assert_eq!(sup.wait(30), Some(0), "{}", sup.log());
}

#[test]
fn health_readyz_is_503_while_redis_is_stopped_and_200_after_it_returns() {
    let mut server = RedisServer::start_private(free_port(), &[]);
    let addr = format!("127.0.0.1:{}", free_port());
    let mut sup = Supervisor::start(
        &server.url,
        "sleep=10",
        &["--processes", "2", "--health", &addr],
    );
    until("ready", 30, || http_get(&addr, "/readyz") == 200);
    assert_eq!(http_get(&addr, "/livez"), 200);
    server.stop();
    until("unready while Redis is down", 30, || {
        http_get(&addr, "/readyz") == 503
    });
    assert_eq!(http_get(&addr, "/livez"), 200, "alive while Redis is down");
    server.restart();
    until("ready again", 60, || http_get(&addr, "/readyz") == 200);
    sup.signal(libc::SIGTERM);
    assert_eq!(sup.wait(30), Some(0), "{}", sup.log());
}

#[test]
fn text_logs_are_one_line_per_child_event() {
    let server = RedisServer::start();
    let child = std::process::Command::new(examples().join("worker_host"))
        .args(["worker", "sleep=1", "--url", &server.url])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(2));
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("tideq worker: child 1 (pid "), "{err}");
    assert!(err.contains(") started (start)"), "{err}");
    assert!(err.contains(") exited (exit code 0)"), "{err}");
}

/// `tideq::serve`'s own signal handling, in a process of its own (no supervisor): the first
/// SIGTERM drains, a second aborts.
#[test]
fn serve_in_a_process_drains_on_sigterm_and_a_second_sigterm_aborts() {
    let server = RedisServer::start();
    let q = queue(&server.url, "work");
    let dir = temp_dir("serve-signals");
    let child = |target: &str| {
        std::process::Command::new(examples().join("worker_child"))
            .args([target, "--url", &server.url, "--concurrency", "3"])
            .args(["--shutdown-grace", "60"])
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap()
    };
    let wait = |c: &mut std::process::Child, secs: u64| {
        let t = Instant::now();
        loop {
            if let Some(s) = c.try_wait().unwrap() {
                return s.code();
            }
            if t.elapsed() > Duration::from_secs(secs) {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    let term = |c: &std::process::Child| unsafe {
        libc::kill(c.id() as i32, libc::SIGTERM);
    };
    // One SIGTERM: the three running jobs finish, then the process exits 0.
    fill(&q, 10);
    let ledger_path = dir.join("drain");
    let mut c = child(&format!("sleep=700,ledger={}", ledger_path.display()));
    until("3 jobs running", 30, || ledger(&ledger_path).len() == 3);
    term(&c);
    assert_eq!(wait(&mut c, 30), Some(0));
    check_ledger(
        &ledger_path,
        ledger(&ledger_path).into_iter().map(|(_, id, _)| id),
        &Default::default(),
    );
    let st = stats(&q);
    assert_eq!((st.completed, st.active, st.ready), (3, 0, 7));
    // Two: the process exits at once, its jobs left to their leases.
    let ledger_path = dir.join("abort");
    let mut c = child(&format!(
        "sleep=60000,lease=1000,ledger={}",
        ledger_path.display()
    ));
    until("3 jobs running", 30, || ledger(&ledger_path).len() == 3);
    term(&c);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        wait(&mut c, 0),
        None,
        "the first SIGTERM waits for the jobs"
    );
    term(&c);
    assert_eq!(wait(&mut c, 30), Some(0));
    assert_eq!(ledger(&ledger_path).len(), 3, "none ended");
    assert_eq!(drain(&q), 7);
}
