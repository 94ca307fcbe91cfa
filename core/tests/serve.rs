//! `tideq::serve` and what it relies on in the worker: `max_jobs` (exact), `is_ready`,
//! `jobs_taken`, the health endpoint, and the status lines to a supervisor (issue 41, core
//! part), against a real redis-server. The signal handling is tested with a separate process
//! (the CLI's `worker_child` example, cli/tests/supervise*.rs).

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::{FromRawFd, IntoRawFd, OwnedFd};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::jobs::*;
use common::{drain_noop, free_port, RedisServer};
use tideq::{Job, Queue, ServeOptions, Worker, WorkerOptions};

fn fast() -> WorkerOptions {
    WorkerOptions {
        poll_interval: Duration::from_millis(100),
        ..Default::default()
    }
}

async fn fill(q: &Queue, n: usize) {
    let jobs: Vec<(Vec<u8>, tideq::EnqueueOptions)> = (0..n)
        .map(|i| (i.to_string().into_bytes(), Default::default()))
        .collect();
    q.enqueue_many(&jobs).await.unwrap();
}

fn noop(q: &Queue, opts: WorkerOptions) -> Worker {
    q.work(opts, |_j: Job| async { Ok::<(), String>(()) })
        .unwrap()
}

async fn until(what: &str, secs: u64, mut f: impl FnMut() -> bool) {
    let t = Instant::now();
    while !f() {
        assert!(t.elapsed() < Duration::from_secs(secs), "timed out: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A pipe: (read end, write end).
fn pipe() -> (std::fs::File, OwnedFd) {
    let mut fds = [0; 2];
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    unsafe {
        (
            std::fs::File::from_raw_fd(fds[0]),
            OwnedFd::from_raw_fd(fds[1]),
        )
    }
}

/// The status code of `GET path` on `addr` (0: nothing listens).
fn get(addr: std::net::SocketAddr, path: &str) -> u16 {
    let Ok(mut s) = std::net::TcpStream::connect(addr) else {
        return 0;
    };
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    let _ = s.read_to_string(&mut text);
    text.split(' ').nth(1).unwrap_or("0").parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_jobs_leases_exactly_that_many_then_the_worker_stops_and_no_job_is_lost() {
    let server = RedisServer::start();
    // Limits below, at and above a fetch's batch, at several concurrencies.
    for (concurrency, batch_size, max) in [(1, 0, 1), (5, 0, 7), (10, 3, 25), (20, 0, 33)] {
        let q = queue(&server.url);
        fill(&q, 100).await;
        let ran = Arc::new(AtomicUsize::new(0));
        let r = ran.clone();
        let w = q
            .work(
                WorkerOptions {
                    concurrency,
                    batch_size,
                    max_jobs: Some(max),
                    ..fast()
                },
                move |_j: Job| {
                    r.fetch_add(1, Ordering::SeqCst);
                    async {
                        tokio::time::sleep(Duration::from_millis(5)).await;
                        Ok::<(), String>(())
                    }
                },
            )
            .unwrap();
        let stats = tokio::time::timeout(Duration::from_secs(20), w.join())
            .await
            .expect("the worker stops by itself");
        assert!(!w.is_running() && w.error().is_none() && !w.is_ready());
        assert_eq!(w.jobs_taken(), max, "concurrency {concurrency}");
        assert_eq!(stats.completed, max);
        assert_eq!(ran.load(Ordering::SeqCst) as u64, max);
        let st = q.stats().await.unwrap();
        assert_eq!(
            (st.ready, st.active),
            (100 - max, 0),
            "none lost, none held"
        );
        // The rest is there for the next worker.
        assert_eq!(drain_noop(&q).await, 100 - max);
    }
}

#[tokio::test]
async fn max_jobs_zero_is_refused() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let e = q
        .work(
            WorkerOptions {
                max_jobs: Some(0),
                ..Default::default()
            },
            |_j: Job| async { Ok::<(), String>(()) },
        )
        .unwrap_err();
    assert_eq!(e.kind(), tideq::ErrorKind::InvalidArgument);
    assert!(e.to_string().contains("max_jobs must be at least 1"), "{e}");
    let w = noop(&q, fast());
    let e = tideq::serve(
        vec![w],
        ServeOptions {
            max_jobs: Some(0),
            ..Default::default()
        },
    )
    .await
    .unwrap_err();
    assert!(e.to_string().contains("max_jobs must be at least 1"), "{e}");
    let none: Vec<Worker> = vec![];
    let e = tideq::serve(none, ServeOptions::default())
        .await
        .unwrap_err();
    assert!(e.to_string().contains("at least one worker"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_jobs_stops_a_busy_worker_after_its_running_jobs_finish_not_at_its_grace() {
    // The jobs running when the limit is reached finish (they are not cut at the grace).
    let server = RedisServer::start();
    let q = queue(&server.url);
    fill(&q, 10).await;
    let w = q
        .work(
            WorkerOptions {
                concurrency: 4,
                max_jobs: Some(4),
                grace: Duration::from_millis(50),
                ..fast()
            },
            |_j: Job| async {
                tokio::time::sleep(Duration::from_millis(400)).await;
                Ok::<(), String>(())
            },
        )
        .unwrap();
    let stats = tokio::time::timeout(Duration::from_secs(20), w.join())
        .await
        .unwrap();
    assert_eq!((stats.completed, stats.released), (4, 0));
    assert_eq!(q.stats().await.unwrap().ready, 6);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn is_ready_is_false_while_redis_is_stopped_and_true_again_after_it_restarts() {
    let mut server = RedisServer::start_private(free_port(), &[]);
    let q = queue(&server.url);
    let w = noop(&q, fast());
    until("ready at start", 10, || w.is_ready()).await;
    server.stop();
    until("unready while Redis is down", 20, || !w.is_ready()).await;
    server.restart();
    until("ready after the restart", 30, || w.is_ready()).await;
    w.shutdown().await;
    assert!(!w.is_ready(), "a stopped worker is not ready");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_returns_the_stats_once_every_worker_stopped_by_itself() {
    let server = RedisServer::start();
    let (a, b) = (queue(&server.url), queue(&server.url));
    fill(&a, 20).await;
    fill(&b, 20).await;
    let wa = noop(
        &a,
        WorkerOptions {
            max_jobs: Some(5),
            ..fast()
        },
    );
    let wb = noop(
        &b,
        WorkerOptions {
            max_jobs: Some(8),
            concurrency: 2,
            ..fast()
        },
    );
    let stats = tokio::time::timeout(
        Duration::from_secs(20),
        tideq::serve(vec![wa, wb], ServeOptions::default()),
    )
    .await
    .expect("serve returns")
    .unwrap();
    assert_eq!((stats[0].completed, stats[1].completed), (5, 8));
    assert_eq!(a.stats().await.unwrap().ready, 15);
    assert_eq!(b.stats().await.unwrap().ready, 12);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_max_jobs_stops_every_worker_gracefully_once_the_process_total_is_reached() {
    let server = RedisServer::start();
    let (a, b) = (queue(&server.url), queue(&server.url));
    fill(&a, 200).await;
    fill(&b, 200).await;
    let slow = |q: &Queue| {
        q.work(fast(), |_j: Job| async {
            tokio::time::sleep(Duration::from_millis(20)).await;
            Ok::<(), String>(())
        })
        .unwrap()
    };
    let (wa, wb) = (slow(&a), slow(&b));
    let stats = tokio::time::timeout(
        Duration::from_secs(20),
        tideq::serve(
            vec![wa, wb],
            ServeOptions {
                max_jobs: Some(30),
                ..Default::default()
            },
        ),
    )
    .await
    .unwrap()
    .unwrap();
    let done: u64 = stats.iter().map(|s| s.completed).sum();
    assert!(done >= 30, "{stats:?}");
    // Every job leased was run to its end: nothing left active, nothing lost.
    let (sa, sb) = (a.stats().await.unwrap(), b.stats().await.unwrap());
    assert_eq!((sa.active, sb.active), (0, 0));
    assert_eq!(sa.ready + sb.ready + done, 400);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_livez_is_200_and_readyz_follows_the_workers_readiness() {
    let mut server = RedisServer::start_private(free_port(), &[]);
    let q = queue(&server.url);
    let w = Arc::new(noop(&q, fast()));
    let addr: std::net::SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let serving = tokio::spawn(tideq::serve(
        vec![w.clone()],
        ServeOptions {
            health: Some(addr),
            ..Default::default()
        },
    ));
    let probe = |path: &'static str| tokio::task::spawn_blocking(move || get(addr, path));
    let t = Instant::now();
    while probe("/readyz").await.unwrap() != 200 {
        assert!(t.elapsed() < Duration::from_secs(10), "never ready");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(probe("/livez").await.unwrap(), 200);
    assert_eq!(probe("/other").await.unwrap(), 404);
    server.stop();
    let t = Instant::now();
    while probe("/readyz").await.unwrap() != 503 {
        assert!(t.elapsed() < Duration::from_secs(20), "never unready");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        probe("/livez").await.unwrap(),
        200,
        "alive while Redis is down"
    );
    server.restart();
    let t = Instant::now();
    while probe("/readyz").await.unwrap() != 200 {
        assert!(t.elapsed() < Duration::from_secs(30), "never ready again");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    w.stop();
    serving.await.unwrap().unwrap();
    // The endpoint ends with serve.
    assert!(std::net::TcpStream::connect(addr).is_err());
}

#[tokio::test]
async fn health_on_an_address_in_use_is_a_clear_error() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let e = tideq::serve(
        vec![noop(&q, fast())],
        ServeOptions {
            health: Some(taken.local_addr().unwrap()),
            ..Default::default()
        },
    )
    .await
    .unwrap_err();
    assert!(
        e.to_string().contains("cannot serve the health endpoint"),
        "{e}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_lines_tell_readiness_jobs_and_recycling_on_the_supervisor_fd() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    fill(&q, 10).await;
    let (read, write) = pipe();
    let w = noop(
        &q,
        WorkerOptions {
            max_jobs: Some(6),
            ..fast()
        },
    );
    let stats = tokio::time::timeout(
        Duration::from_secs(20),
        tideq::serve(
            vec![w],
            ServeOptions {
                status_fd: Some(write.into_raw_fd()),
                ..Default::default()
            },
        ),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(stats[0].completed, 6);
    // serve closed the fd when it returned: the reader sees the end.
    let lines: Vec<String> = BufReader::new(read).lines().map(|l| l.unwrap()).collect();
    assert!(lines[0].starts_with("ready "), "{lines:?}");
    for l in &lines {
        let ok = l.starts_with("ready 0 jobs ")
            || l.starts_with("ready 1 jobs ")
            || l == "recycling jobs 6";
        assert!(ok, "unexpected line {l:?} in {lines:?}");
    }
    let recycling = lines
        .iter()
        .position(|l| l.starts_with("recycling"))
        .unwrap();
    assert_eq!(
        lines.iter().filter(|l| l.starts_with("recycling")).count(),
        1
    );
    assert!(
        lines[recycling + 1..]
            .iter()
            .all(|l| l.starts_with("ready 0")),
        "{lines:?}"
    );
    assert_eq!(lines.last().unwrap(), "ready 0 jobs 6");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_lines_repeat_at_least_every_500_ms() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let (read, write) = pipe();
    let w = Arc::new(noop(&q, fast()));
    let serving = tokio::spawn(tideq::serve(
        vec![w.clone()],
        ServeOptions {
            status_fd: Some(write.into_raw_fd()),
            ..Default::default()
        },
    ));
    let lines = tokio::task::spawn_blocking(move || {
        let mut r = BufReader::new(read);
        let mut out = Vec::new();
        let t = Instant::now();
        let mut last = Instant::now();
        while t.elapsed() < Duration::from_secs(3) {
            let mut l = String::new();
            r.read_line(&mut l).unwrap();
            out.push((l, last.elapsed()));
            last = Instant::now();
        }
        out
    })
    .await
    .unwrap();
    w.stop();
    serving.await.unwrap().unwrap();
    // Within 3 s: at least 5 lines (one per 500 ms), the latest ready.
    assert!(lines.len() >= 5, "{lines:?}");
    assert_eq!(lines.last().unwrap().0, "ready 1 jobs 0\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_status_pipe_stops_the_workers_gracefully_their_jobs_finish() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    fill(&q, 3).await;
    let (read, write) = pipe();
    let started = Arc::new(AtomicUsize::new(0));
    let s = started.clone();
    let w = q
        .work(
            WorkerOptions {
                concurrency: 3,
                grace: Duration::from_secs(10),
                ..fast()
            },
            move |_j: Job| {
                s.fetch_add(1, Ordering::SeqCst);
                async {
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    Ok::<(), String>(())
                }
            },
        )
        .unwrap();
    let serving = tokio::spawn(tideq::serve(
        vec![w],
        ServeOptions {
            status_fd: Some(write.into_raw_fd()),
            ..Default::default()
        },
    ));
    until("jobs started", 10, || started.load(Ordering::SeqCst) == 3).await;
    // The supervisor goes away: the next write fails with EPIPE.
    drop(read);
    let stats = tokio::time::timeout(Duration::from_secs(20), serving)
        .await
        .expect("serve stops")
        .unwrap()
        .unwrap();
    assert_eq!((stats[0].completed, stats[0].released), (3, 0));
    let st = q.stats().await.unwrap();
    assert_eq!((st.ready, st.active, st.completed), (0, 0, 3));
}

#[tokio::test]
async fn a_bad_supervisor_fd_is_a_clear_error() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let e = tideq::serve(
        vec![noop(&q, fast())],
        ServeOptions {
            status_fd: Some(987),
            ..Default::default()
        },
    )
    .await
    .unwrap_err();
    assert!(e.to_string().contains("status fd 987 is not open"), "{e}");
}
