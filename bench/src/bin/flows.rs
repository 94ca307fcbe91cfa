//! Flow fan-in benchmark, Rust side: `cargo run --release -p tideq-bench --bin flows -- URL N`
//! (bench/flows/run.py runs it beside BullMQ's FlowProducer on one private redis-server).
//! Prints ONE JSON line:
//!
//! - `enqueue_ms`: `enqueue_flow` of one parent and N children (the children on a queue of 4
//!   shards, the parent on a queue of its own, so the flow is written held, then sealed).
//! - `children_per_s`: N no-op children run by one worker at concurrency 100, from the first
//!   child's start to the last child's end.
//! - `last_child_to_parent_ms`: from the end of the last child's handler to the start of the
//!   parent's (this machine's clock; the parent's worker idles on its own queue meanwhile).
//! - `calls_per_child`: every Redis call of the run (INFO commandstats, script-internal calls
//!   included, INFO and CONFIG excluded), from the enqueue to the parent's start, divided by N.
//! - `parent_results`: how many children results the parent read (N when all came through).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tideq::{Client, FlowJob, Job, Queue, QueueOptions, WorkerOptions};

fn calls(conn: &mut redis::Connection) -> u64 {
    let info: String = redis::cmd("INFO").arg("commandstats").query(conn).unwrap();
    tideq_testing::command_calls(&info)
        .iter()
        .filter(|(k, _)| !k.starts_with("info") && !k.starts_with("config"))
        .map(|(_, v)| v)
        .sum()
}

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let url = args.next().expect("usage: flows URL N");
    let n: usize = args.next().map_or(10_000, |s| s.parse().expect("N"));
    let client = Client::open(&url).unwrap();
    let stamp = std::process::id();
    let parents = Queue::new(
        &client,
        &format!("fan-parent-{stamp}"),
        QueueOptions::default(),
    )
    .unwrap();
    let kids = Queue::sharded(
        &client,
        &format!("fan-kids-{stamp}"),
        4,
        QueueOptions::default(),
    )
    .unwrap();
    let mut conn = redis::Client::open(url.as_str())
        .unwrap()
        .get_connection()
        .unwrap();
    let calls0 = calls(&mut conn);

    let flow = FlowJob::new(b"parent".to_vec())
        .children((0..n).map(|i| FlowJob::new(format!("{i}").into_bytes()).on(&kids)));
    let t0 = Instant::now();
    parents.enqueue_flow(flow).await.unwrap();
    let enqueue_ms = t0.elapsed().as_secs_f64() * 1000.0;

    // (first child start, last child end)
    let span: Arc<Mutex<(Option<Instant>, Option<Instant>)>> = Default::default();
    let parent_start: Arc<Mutex<Option<(Instant, usize)>>> = Default::default();
    let p2 = parent_start.clone();
    let parent_worker = parents
        .work(
            WorkerOptions {
                concurrency: 1,
                ..Default::default()
            },
            move |job: Job| {
                let started = Instant::now();
                let p2 = p2.clone();
                async move {
                    let results = job.children_results().await.map_err(|e| e.to_string())?;
                    *p2.lock().unwrap() = Some((started, results.len()));
                    Ok::<(), String>(())
                }
            },
        )
        .unwrap();
    let s2 = span.clone();
    let kid_worker = kids
        .work(
            WorkerOptions {
                concurrency: 100,
                stop_when_drained: true,
                ..Default::default()
            },
            move |_job: Job| {
                let s2 = s2.clone();
                async move {
                    let now = Instant::now();
                    let mut s = s2.lock().unwrap();
                    s.0.get_or_insert(now);
                    s.1 = Some(Instant::now());
                    Ok::<(), String>(())
                }
            },
        )
        .unwrap();
    kid_worker.join().await;
    let deadline = Instant::now() + Duration::from_secs(60);
    while parent_start.lock().unwrap().is_none() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let calls1 = calls(&mut conn);
    parent_worker.shutdown().await;
    let (first, last) = *span.lock().unwrap();
    let (pstart, results) = parent_start.lock().unwrap().expect("the parent ran");
    let (first, last) = (first.unwrap(), last.unwrap());
    println!(
        "{{\"n\":{n},\"enqueue_ms\":{enqueue_ms:.1},\"children_per_s\":{:.0},\
         \"last_child_to_parent_ms\":{:.2},\"calls_per_child\":{:.2},\
         \"parent_results\":{results}}}",
        n as f64 / (last - first).as_secs_f64(),
        (pstart.saturating_duration_since(last)).as_secs_f64() * 1000.0,
        (calls1 - calls0) as f64 / n as f64,
    );
}
