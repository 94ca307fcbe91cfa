//! What the lease renewer reports, read from the `log` records it writes (a test binary of its
//! own: the logger is process-wide).

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_renewal_racing_a_finished_job_reports_no_lost_lease() {
    let capture: &'static Capture = Box::leak(Box::new(Capture(Mutex::new(Vec::new()))));
    log::set_logger(capture).unwrap();
    log::set_max_level(log::LevelFilter::Warn);

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
