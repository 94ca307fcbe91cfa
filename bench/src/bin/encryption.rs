//! Encryption at rest's cost: jobs/s (enqueue, then run by a worker to completion with the
//! payload as result) with and without encryption, at 1 KB and 64 KB payloads, on a private
//! redis-server. `cargo run --release -p tideq-bench --bin encryption [JOBS_1K] [JOBS_64K]`.

use std::time::{Duration, Instant};

use tideq::{Client, Encryption, EnqueueOptions, Job, Queue, QueueOptions, WorkerOptions};
use tideq_testing::RedisServer;

async fn run(url: &str, size: usize, n: usize, encrypted: bool) -> (f64, f64) {
    let opts = QueueOptions {
        encryption: encrypted.then(|| Encryption::keyring("k1", [("k1", [7u8; 32])]).unwrap()),
        keep_completed: 0,
        max_result_len: 128 * 1024,
        ..Default::default()
    };
    let name = format!("bench-enc-{size}-{encrypted}");
    let q = Queue::new(&Client::open(url).unwrap(), &name, opts).unwrap();
    let payload = vec![b'x'; size];
    let t = Instant::now();
    for chunk in (0..n).collect::<Vec<_>>().chunks(100) {
        let jobs: Vec<(&[u8], EnqueueOptions)> = chunk
            .iter()
            .map(|_| (payload.as_slice(), EnqueueOptions::default()))
            .collect();
        q.enqueue_many(&jobs).await.unwrap();
    }
    let enq = n as f64 / t.elapsed().as_secs_f64();
    let t = Instant::now();
    let w = q
        .work(
            WorkerOptions {
                concurrency: 32,
                stop_when_drained: true,
                poll_interval: Duration::from_millis(20),
                ..Default::default()
            },
            |job: Job| async move { Ok::<Vec<u8>, String>(job.payload) },
        )
        .unwrap();
    let stats = w.join().await;
    assert_eq!(stats.completed as usize, n);
    (enq, n as f64 / t.elapsed().as_secs_f64())
}

#[tokio::main]
async fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let (n1, n64) = (
        args.first().copied().unwrap_or(20_000),
        args.get(1).copied().unwrap_or(2_000),
    );
    let server = RedisServer::start();
    println!("payload  encrypted  enqueue jobs/s  processed jobs/s");
    for (size, n) in [(1024, n1), (64 * 1024, n64)] {
        for encrypted in [false, true] {
            let (enq, done) = run(&server.url, size, n, encrypted).await;
            println!(
                "{:>6}B  {:>9}  {:>14.0}  {:>16.0}",
                size, encrypted, enq, done
            );
        }
    }
}
