//! What the runtime reports, read from the `log` records it writes (a test binary of its own:
//! the logger is process-wide; each test reads the lines about its own queue).

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{unique, RedisServer};
use tideq::{Client, EnqueueOptions, Job, Queue, QueueOptions, WorkerOptions};

/// Keeps every warning written through `log`.
struct Capture(Mutex<Vec<String>>);

impl log::Log for Capture {
    fn enabled(&self, m: &log::Metadata) -> bool {
        m.level() <= log::Level::Warn
    }
    fn log(&self, r: &log::Record) {
        if self.enabled(r.metadata()) {
            self.0.lock().unwrap().push(r.args().to_string());
        }
    }
    fn flush(&self) {}
}

fn capture() -> &'static Capture {
    static CAPTURE: std::sync::OnceLock<&'static Capture> = std::sync::OnceLock::new();
    CAPTURE.get_or_init(|| {
        let capture: &'static Capture = Box::leak(Box::new(Capture(Mutex::new(Vec::new()))));
        log::set_logger(capture).unwrap();
        log::set_max_level(log::LevelFilter::Warn);
        capture
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_renewal_racing_a_finished_job_reports_no_lost_lease() {
    let capture = capture();

    let server = RedisServer::start();
    let q = Queue::new(
        &Client::open(&server.url).unwrap(),
        &unique("renew"),
        QueueOptions::default(),
    )
    .unwrap();
    // Instant jobs under a short lease: every renewal (each 20 ms) is sent for the jobs running
    // at that moment, and most of them end, and are acked, before it reaches Redis.
    let n = 20_000;
    let jobs: Vec<(Vec<u8>, EnqueueOptions)> = (0..n)
        .map(|i| (i.to_string().into_bytes(), EnqueueOptions::default()))
        .collect();
    q.enqueue_many(&jobs).await.unwrap();
    let ran = Arc::new(Mutex::new(0usize));
    let counted = ran.clone();
    let w = q
        .work(
            WorkerOptions {
                concurrency: 100,
                lease: Duration::from_millis(60),
                stop_when_drained: true,
                poll_interval: Duration::from_millis(100),
                ..Default::default()
            },
            move |_job: Job| {
                *counted.lock().unwrap() += 1;
                async { Ok::<(), String>(()) }
            },
        )
        .unwrap();
    let stats = tokio::time::timeout(Duration::from_secs(60), w.join())
        .await
        .expect("the worker drains the queue");
    assert!(*ran.lock().unwrap() >= n);
    let lost_warnings = capture
        .0
        .lock()
        .unwrap()
        .iter()
        .filter(|m| m.contains("was lost; its result will be rejected"))
        .count() as u64;
    // A lease really lost (a stalled machine) is warned about and its ack refused; a job that
    // merely finished while its renewal was on the way is neither.
    assert!(
        lost_warnings <= stats.lease_lost,
        "{lost_warnings} lost-lease warnings, {} acks refused ({stats:?})",
        stats.lease_lost
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_says_once_when_redis_comes_back_after_an_outage() {
    let capture = capture();
    let mut server = RedisServer::start_private(common::free_port(), &[]);
    let name = unique("outage");
    let q = Queue::new(
        &Client::open(&server.url).unwrap(),
        &name,
        QueueOptions::default(),
    )
    .unwrap();
    let w = q
        .work(
            WorkerOptions {
                poll_interval: Duration::from_millis(100),
                ..Default::default()
            },
            |_job: Job| async { Ok::<(), String>(()) },
        )
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    server.stop();
    let mine = || -> Vec<String> {
        capture
            .0
            .lock()
            .unwrap()
            .iter()
            .filter(|m| m.contains(&name))
            .cloned()
            .collect()
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !mine().iter().any(|m| m.contains("failed, retrying")) {
        assert!(
            std::time::Instant::now() < deadline,
            "no failure logged: {:?}",
            mine()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Retries go on every poll interval or so; the outage is logged once until a minute passed.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let failures = mine().iter().filter(|m| m.contains("failed")).count();
    assert_eq!(failures, 1, "{:?}", mine());
    server.restart();
    // The client reconnects with a backoff of at most 2 s: a call until then may still fail.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while let Err(e) = q.enqueue(b"x", EnqueueOptions::default()).await {
        assert!(std::time::Instant::now() < deadline, "{e}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    while !mine().iter().any(|m| m.contains("works again")) {
        assert!(
            std::time::Instant::now() < deadline,
            "no recovery logged: {:?}",
            mine()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    w.shutdown().await;
    let lines = mine();
    assert_eq!(
        lines.iter().filter(|m| m.contains("works again")).count(),
        1,
        "{lines:?}"
    );
    assert!(!lines.iter().any(|m| m.contains(" 0 job(s)")), "{lines:?}");
}
