//! The README's Rust quick start, run by `make test` so it never rots.
//! `cargo run --example quickstart` (starts a private redis-server unless TIDEQ_REDIS_URL is set)

mod support;

use std::time::Duration;

use tideq::{
    CappedOptions, CappedQueue, Client, ConsumerOptions, EnqueueOptions, Job, Queue, QueueOptions,
    WorkerOptions,
};

#[tokio::main]
async fn main() -> tideq::Result<()> {
    let redis = support::Redis::from_env_or_spawn();
    let client = Client::open(&redis.url)?;

    // Capped grouped queue: newest data wins, at-most-once.
    let events = CappedQueue::new(
        &client,
        "events",
        CappedOptions {
            capacity: 1000,
            ..Default::default()
        },
    )?;
    events.push("game:1", b"player 7 jumped").await?;
    let consumer = events.consume(
        ConsumerOptions {
            stop_when_empty: true,
            ..Default::default()
        },
        |batch| async move {
            println!("{}: {} item(s)", batch.group, batch.items.len());
            Ok::<(), String>(())
        },
    )?;
    consumer.join().await;

    // Job queue: delayed, retried, at-least-once.
    let emails = Queue::new(&client, "emails", QueueOptions::default())?;
    let job = EnqueueOptions {
        id: Some("welcome-42".into()),
        delay: Some(Duration::from_millis(100)),
        ..Default::default()
    };
    let queued = emails.enqueue(br#"{"to":"ada@example.com"}"#, job).await?;
    println!("enqueued {} (created: {})", queued.id, queued.created);
    let worker = emails.work(
        WorkerOptions {
            stop_when_drained: true,
            ..Default::default()
        },
        |job: Job| async move {
            println!(
                "sending {} (attempt {})",
                job.payload_str().map_err(|e| e.to_string())?,
                job.attempt
            );
            Ok::<(), String>(())
        },
    )?;
    let stats = worker.join().await;
    println!("completed {}", stats.completed);
    Ok(())
}
