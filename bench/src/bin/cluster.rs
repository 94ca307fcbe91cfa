//! Cluster mode of the benchmark: the same work on one redis-server (1 shard) and on a local
//! 6-node Redis Cluster (1 shard and 3 shards), for both queue kinds. `make bench-cluster`
//! (`make bench-cluster`, or `cargo run --release -p tideq-bench --bin cluster -- [N]`). Starts its own servers.
//!
//! On a 2-core machine the three masters share the cores with the client, so this shows the
//! cost of cluster routing and the spread of shards rather than a 3x speed-up.

use std::time::{Duration, Instant};

use tideq::{
    CappedOptions, CappedQueue, Client, Config, EnqueueOptions, Job, Queue, QueueOptions,
    WorkerOptions,
};
use tideq_testing::{RedisCluster, RedisServer};

fn rate(n: usize, d: Duration) -> f64 {
    n as f64 / d.as_secs_f64()
}

async fn run(client: &Client, shards: usize, n: usize) -> tideq::Result<[f64; 4]> {
    let tag = format!("cb{}-{shards}", fastrand::u32(..));
    let q = Queue::sharded(
        client,
        &tag,
        shards,
        QueueOptions {
            keep_completed: 0,
            ..Default::default()
        },
    )?;
    let jobs: Vec<(&[u8], EnqueueOptions)> = (0..n)
        .map(|_| (&b"{\"n\":1}"[..], EnqueueOptions::default()))
        .collect();
    let t = Instant::now();
    for chunk in jobs.chunks(5000) {
        q.enqueue_many(chunk).await?;
    }
    let enqueue = rate(n, t.elapsed());
    let t = Instant::now();
    let w = q.work(
        WorkerOptions {
            concurrency: 100,
            stop_when_drained: true,
            ..Default::default()
        },
        |_j: Job| async { Ok::<(), String>(()) },
    )?;
    let done = w.join().await.completed as usize;
    let work = rate(done, t.elapsed());

    let c = CappedQueue::sharded(
        client,
        &tag,
        shards,
        CappedOptions {
            capacity: n,
            ..Default::default()
        },
    )?;
    let items: Vec<(String, [u8; 64])> = (0..n)
        .map(|i| (format!("g{}", i % 300), [b'x'; 64]))
        .collect();
    let t = Instant::now();
    for chunk in items.chunks(10_000) {
        c.push_many(chunk).await?;
    }
    let push = rate(n, t.elapsed());
    let t = Instant::now();
    let mut got = 0;
    while let Some(b) = c.next_batch(128).await? {
        got += b.items.len();
    }
    let next = rate(got, t.elapsed());
    Ok([enqueue, work, push, next])
}

#[tokio::main]
async fn main() -> tideq::Result<()> {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(50_000);
    let single = RedisServer::start_announced();
    let cluster = RedisCluster::start();
    let one = Client::open(&single.url)?;
    let many = Client::new(Config::cluster(cluster.nodes.clone()))?;
    let rows = [
        ("one node, 1 shard", run(&one, 1, n).await?),
        ("cluster, 1 shard", run(&many, 1, n).await?),
        ("cluster, 3 shards", run(&many, 3, n).await?),
    ];
    println!(
        "\n{:<20} {:>16} {:>16} {:>16} {:>18}",
        "setup", "enqueue_many/s", "worker c100/s", "push_many/s", "next_batch(128)/s"
    );
    for (name, [a, b, c, d]) in &rows {
        println!("{name:<20} {a:>16.0} {b:>16.0} {c:>16.0} {d:>18.0}");
    }
    let base = rows[0].1;
    for (name, r) in &rows[1..] {
        println!(
            "{name:<20} vs one node: {:.2}x {:.2}x {:.2}x {:.2}x",
            r[0] / base[0],
            r[1] / base[1],
            r[2] / base[2],
            r[3] / base[3]
        );
    }
    Ok(())
}
