//! Lateness: how long after their due time jobs start (2,000 due within one second, or at one
//! instant), and the precision of an interval schedule.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tideq::{Client, EnqueueOptions, Job, WorkerOptions};

use crate::{fresh, now_ms_f, percentile, LATE_AHEAD_MS, LATE_JOBS, PAYLOAD};

/// The due ms a lateness job carries: its payload starts `{"due":<ms>,` (written by `lateness`).
pub fn due_ms(payload: &[u8]) -> f64 {
    let digits = payload
        .strip_prefix(br#"{"due":"#)
        .expect("lateness payload starts with {\"due\":");
    let end = digits
        .iter()
        .position(|b| !b.is_ascii_digit())
        .unwrap_or(digits.len());
    std::str::from_utf8(&digits[..end])
        .ok()
        .and_then(|d| d.parse::<u64>().ok())
        .expect("due ms") as f64
}

/// One lateness run (p50, p99, min in ms): job i due at start + i × spread_ms / LATE_JOBS (whole
/// ms, rounded down), start ~2 s ahead, its due ms in its payload; spread_ms 0 is a burst.
pub async fn lateness(client: &Client, spread_ms: u64) -> tideq::Result<(f64, f64, f64)> {
    let q = fresh(client, "late")?;
    let start = (now_ms_f() + LATE_AHEAD_MS).round() as u64;
    let rest = std::str::from_utf8(&PAYLOAD[1..]).unwrap(); // the object without its `{`
    let jobs: Vec<(Vec<u8>, EnqueueOptions)> = (0..LATE_JOBS as u64)
        .map(|i| {
            let due = start + i * spread_ms / LATE_JOBS as u64;
            let opts = EnqueueOptions {
                run_at_ms: Some(due),
                ..Default::default()
            };
            (format!("{{\"due\":{due},{rest}").into_bytes(), opts)
        })
        .collect();
    q.enqueue_many(&jobs).await?;
    let late: Arc<Mutex<Vec<f64>>> = Arc::new(Mutex::new(Vec::with_capacity(LATE_JOBS)));
    let l = late.clone();
    let w = q.work(
        WorkerOptions {
            concurrency: 100,
            stop_when_drained: true,
            ..Default::default()
        },
        move |job: Job| {
            let now = now_ms_f();
            l.lock().unwrap().push(now - due_ms(&job.payload));
            async { Ok::<(), String>(()) }
        },
    )?;
    w.join().await;
    let mut v = late.lock().unwrap().clone();
    assert_eq!(v.len(), LATE_JOBS);
    v.sort_by(f64::total_cmp);
    let r = |x: f64| (x * 100.0).round() / 100.0;
    Ok((r(percentile(&v, 50.0)), r(percentile(&v, 99.0)), r(v[0])))
}

/// Schedule precision: a 100 ms interval schedule fired by one idle worker for 5 s; the lateness
/// of each job's handler start after its slot (ms), p50 and p99.
pub async fn schedule_lateness(client: &Client) -> tideq::Result<(f64, f64, usize)> {
    let q = fresh(client, "sched")?;
    q.upsert_schedule(
        "tick",
        tideq::Every::interval(Duration::from_millis(100)),
        PAYLOAD,
        EnqueueOptions::default(),
    )
    .await?;
    let late: Arc<Mutex<Vec<f64>>> = Default::default();
    let l = late.clone();
    let w = q.work(WorkerOptions::default(), move |job: Job| {
        let now = now_ms_f();
        let slot: f64 = job.id.rsplit_once('@').unwrap().1.parse().unwrap();
        l.lock().unwrap().push(now - slot);
        async { Ok::<(), String>(()) }
    })?;
    tokio::time::sleep(Duration::from_secs(5)).await;
    w.shutdown().await;
    q.remove_schedule("tick").await?;
    let mut v = late.lock().unwrap().clone();
    // The first job may stand for slots missed before the worker started.
    if !v.is_empty() {
        v.remove(0);
    }
    v.sort_by(f64::total_cmp);
    let r = |x: f64| (x * 100.0).round() / 100.0;
    Ok((r(percentile(&v, 50.0)), r(percentile(&v, 99.0)), v.len()))
}

/// Enqueue to start (run.py's `start_p50_ms`/`start_p99_ms`): an idle worker at concurrency
/// START_CONCURRENCY; START_JOBS jobs enqueued one by one, paced at START_RATE per second, each
/// carrying the ms it was enqueued at (`{"at":<ms>,...}`); the handler takes the clock first.
pub async fn start_latency(client: &Client) -> tideq::Result<(f64, f64)> {
    const START_JOBS: usize = 2000;
    const START_RATE: f64 = 1000.0;
    const START_CONCURRENCY: usize = 10;
    let q = fresh(client, "start")?;
    let got: Arc<Mutex<Vec<f64>>> = Arc::new(Mutex::new(Vec::with_capacity(START_JOBS)));
    let g = got.clone();
    let w = q.work(
        WorkerOptions {
            concurrency: START_CONCURRENCY,
            ..Default::default()
        },
        move |job: Job| {
            let now = now_ms_f();
            let at = job
                .payload
                .strip_prefix(br#"{"at":"#)
                .and_then(|rest| {
                    let end = rest.iter().position(|&b| b == b',')?;
                    std::str::from_utf8(&rest[..end]).ok()?.parse::<f64>().ok()
                })
                .expect("a start payload begins {\"at\":<ms>,");
            g.lock().unwrap().push(now - at);
            async { Ok::<(), String>(()) }
        },
    )?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let rest = std::str::from_utf8(&PAYLOAD[1..]).unwrap();
    let t0 = tokio::time::Instant::now();
    for i in 0..START_JOBS {
        tokio::time::sleep_until(t0 + Duration::from_secs_f64(i as f64 / START_RATE)).await;
        q.enqueue(
            format!("{{\"at\":{},{rest}", now_ms_f()).into_bytes(),
            EnqueueOptions::default(),
        )
        .await?;
    }
    while got.lock().unwrap().len() < START_JOBS {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    w.shutdown().await;
    let mut v = got.lock().unwrap().clone();
    v.sort_by(f64::total_cmp);
    let r = |x: f64| (x * 1000.0).round() / 1000.0;
    Ok((r(percentile(&v, 50.0)), r(percentile(&v, 99.0))))
}
