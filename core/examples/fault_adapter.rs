//! Fault-suite adapter, Rust side (same arguments and ledger lines as tests/faults/adapter.py):
//!   fault_adapter producer URL QUEUE LEDGER PREFIX N SECONDS
//!   fault_adapter worker URL QUEUE LEDGER LEASE_MS CONCURRENCY

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tideq::{Client, EnqueueOptions, Job, Queue, QueueOptions, WorkerOptions};

fn ledger(path: &str) -> Arc<Mutex<std::fs::File>> {
    let f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    Arc::new(Mutex::new(f))
}

fn write(f: &Mutex<std::fs::File>, line: &str) {
    // One write per line: a killed process loses no line that was written.
    f.lock()
        .unwrap()
        .write_all(format!("{line}\n").as_bytes())
        .unwrap();
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (kind, url, queue, path) = (&args[1], &args[2], &args[3], &args[4]);
    let rt = tideq::runtime_builder().build().unwrap();
    rt.block_on(async {
        let client = Client::open(url).unwrap();
        let q = Queue::new(&client, queue, QueueOptions::default()).unwrap();
        let out = ledger(path);
        if kind == "producer" {
            let (prefix, n): (&str, usize) = (&args[5], args[6].parse().unwrap());
            let pace_us = (args[7].parse::<f64>().unwrap() * 2e6 / n as f64) as u64;
            for i in 0..n {
                let id = format!("{prefix}-{i}");
                let deadline = Instant::now() + Duration::from_secs(60);
                loop {
                    let o = EnqueueOptions {
                        id: Some(id.clone()),
                        ..Default::default()
                    };
                    match q.enqueue(id.as_bytes(), o).await {
                        Ok(_) => {
                            write(&out, &format!("acked {id}"));
                            break;
                        }
                        Err(_) if Instant::now() > deadline => {
                            write(&out, &format!("gave_up {id}"));
                            break;
                        }
                        Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
                    }
                }
                tokio::time::sleep(Duration::from_micros(fastrand::u64(0..=pace_us))).await;
            }
        } else {
            let lease = Duration::from_millis(args[5].parse().unwrap());
            let opts = WorkerOptions {
                concurrency: args[6].parse().unwrap(),
                lease,
                grace: Duration::from_secs(2),
                ..Default::default()
            };
            let w = q
                .work(opts, move |job: Job| {
                    write(&out, &format!("done {}", job.id));
                    async {
                        tokio::time::sleep(Duration::from_micros(fastrand::u64(0..5000))).await;
                        Ok::<(), String>(())
                    }
                })
                .unwrap();
            w.run_until_signal().await;
        }
    });
}
