//! Both queue kinds at work, printed as a report. First a capped grouped queue: ~1 000 games
//! report player events in batches; three hot games get dedicated consumers, general consumers
//! serve the rest round-robin in batches of 128; only fresh events count (a 3-minute window in
//! production, 3 s here so the demo runs in ~25 s). Then a job queue: orders with delays, retries
//! and dead letters.
//!
//! `cargo run --release --example demo` (starts a private redis-server unless TIDEQ_REDIS_URL is set)

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tideq::{
    Backoff, Batch, CappedOptions, CappedQueue, Client, ConsumerOptions, EnqueueOptions, Job,
    Queue, QueueOptions, WorkerOptions,
};

const GAMES: usize = 1000;
const HOT: [&str; 3] = ["game:0", "game:1", "game:2"];
const RUN_FOR: Duration = Duration::from_secs(12);
const EVENTS_PER_SEC: usize = 40_000;

type Counts = Arc<Mutex<HashMap<String, [u64; 3]>>>; // pushed, dropped, delivered

#[tokio::main]
async fn main() -> tideq::Result<()> {
    let redis = tideq_testing::RedisServer::from_env_or_start();
    let client = Client::open(&redis.url)?;
    let name = format!("demo-{}", std::process::id());
    let q = CappedQueue::new(
        &client,
        &name,
        CappedOptions {
            capacity: 20_000,
            ttl: Some(Duration::from_secs(30)),
            max_age: Some(Duration::from_secs(3)),
            ..Default::default()
        },
    )?;
    let counts: Counts = Default::default();
    let hot: Vec<String> = HOT.iter().map(|s| s.to_string()).collect();

    // Dedicated consumers: game:0 and game:1 keep up; game:2's consumer is slow, so most of its
    // backlog ages past the 3 s window and is discarded, never delivered.
    let mut consumers = Vec::new();
    for (i, g) in hot.iter().enumerate() {
        let pause = if i == 2 {
            Duration::from_millis(150)
        } else {
            Duration::ZERO
        };
        let opts = ConsumerOptions {
            groups: vec![g.clone()],
            batch_size: 128,
            ..Default::default()
        };
        consumers.push(q.consume(opts, handler(counts.clone(), pause))?);
    }
    let general = ConsumerOptions {
        exclude: hot.clone(),
        concurrency: 8,
        batch_size: 128,
        ..Default::default()
    };
    consumers.push(q.consume(general, handler(counts.clone(), Duration::from_micros(200)))?);

    println!("tideq demo, on {}\n", redis.url);
    println!(
        "1. Capped grouped queue: {GAMES} games report player events, about {EVENTS_PER_SEC} a \
         second for {} s.\n   Each game keeps its newest 20000 events; events older than 3 s are \
         discarded when consumed.\n   game:0 and game:1 have dedicated consumers, game:2 a \
         deliberately slow one; 8 general consumers\n   serve the other games round-robin. \
         game:999 is a client replaying a backlog of 25000 events at once\n   after an outage: \
         the oldest beyond the cap of 20000 are dropped.",
        RUN_FOR.as_secs()
    );
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let mut producers = Vec::new();
    for p in 0..4u64 {
        let (q, counts, stop) = (q.clone(), counts.clone(), stop.clone());
        producers.push(tokio::spawn(async move {
            let mut seq = p;
            let mut tick = tokio::time::interval(Duration::from_millis(10));
            while !stop.load(Ordering::Relaxed) {
                tick.tick().await;
                // One tick's worth of events: 30% to the hot games, the rest spread over all games.
                let n = EVENTS_PER_SEC / 100 / 4;
                let events: Vec<(String, Vec<u8>)> = (0..n)
                    .map(|_| {
                        seq = seq
                            .wrapping_mul(6364136223846793005)
                            .wrapping_add(1442695040888963407);
                        let r = (seq >> 33) as usize;
                        let game = if (r >> 12) % 10 < 3 { r % 3 } else { r % GAMES };
                        (
                            format!("game:{game}"),
                            format!("{{\"player\":{},\"event\":\"move\"}}", r % 10_000)
                                .into_bytes(),
                        )
                    })
                    .collect();
                let drops = q.push_many(&events).await.expect("push");
                let mut c = counts.lock().unwrap();
                for ((g, _), d) in events.iter().zip(drops) {
                    let e = c.entry(g.clone()).or_default();
                    e[0] += 1;
                    e[1] += d;
                }
            }
        }));
    }
    // A client reconnecting after an outage replays a backlog of 25 000 events for one game at
    // once: the group keeps only its newest 20 000 (capacity), the oldest are dropped.
    let replay: Vec<(&str, Vec<u8>)> = (0..25_000)
        .map(|i| ("game:999", format!("replay {i}").into_bytes()))
        .collect();
    let drops = q.push_many(&replay).await?;
    {
        let mut c = counts.lock().unwrap();
        let e = c.entry("game:999".to_string()).or_default();
        e[0] += replay.len() as u64;
        e[1] += drops.iter().sum::<u64>();
    }
    tokio::time::sleep(RUN_FOR).await;
    stop.store(true, Ordering::Relaxed);
    for p in producers {
        p.await.unwrap();
    }
    let produced_for = started.elapsed();
    // Let consumers drain what is fresh, then stop them gracefully.
    tokio::time::sleep(Duration::from_secs(4)).await;
    for c in &consumers {
        c.stop();
    }
    for c in &consumers {
        c.join().await;
    }

    let counts = counts.lock().unwrap().clone();
    let s = q.stats().await?;
    let mut queued: HashMap<String, u64> = HashMap::new();
    for g in q.groups().await? {
        queued.insert(g.clone(), q.len(&g).await?);
    }
    // Per group, what is not delivered, dropped or still queued was discarded for its age
    // (Redis counts discards per queue; every event is accounted for, as checked below).
    let row = |g: &str| -> [u64; 5] {
        let [p, d, del] = counts.get(g).copied().unwrap_or_default();
        let left = queued.get(g).copied().unwrap_or(0);
        [p, d, p.saturating_sub(d + del + left), del, left]
    };
    println!(
        "\n   {:<10} {:<26} {:>8} {:>8} {:>10} {:>10} {:>7}",
        "group", "", "pushed", "dropped", "discarded", "delivered", "queued"
    );
    let mut named = [0u64; 5];
    for (g, what) in [
        ("game:0", "hot, dedicated consumer"),
        ("game:1", "hot, dedicated consumer"),
        ("game:2", "hot, slow consumer"),
        ("game:999", "replayed backlog"),
    ] {
        let r = row(g);
        (0..5).for_each(|i| named[i] += r[i]);
        println!(
            "   {g:<10} {what:<26} {:>8} {:>8} {:>10} {:>10} {:>7}",
            r[0], r[1], r[2], r[3], r[4]
        );
    }
    let all: Vec<[u64; 5]> = counts.keys().map(|g| row(g)).collect();
    let total: [u64; 5] = std::array::from_fn(|i| all.iter().map(|r| r[i]).sum());
    let others: [u64; 5] = std::array::from_fn(|i| total[i] - named[i]);
    println!(
        "   {:<37} {:>8} {:>8} {:>10} {:>10} {:>7}",
        format!("the {} other games", counts.len().saturating_sub(4)),
        others[0],
        others[1],
        others[2],
        others[3],
        others[4]
    );
    println!(
        "   {:<37} {:>8} {:>8} {:>10} {:>10} {:>7}",
        "total", total[0], total[1], total[2], total[3], total[4]
    );
    let accounted = s.pushed == s.dropped + s.discarded + s.delivered + total[4]
        && (s.pushed, s.dropped, s.discarded, s.delivered)
            == (total[0], total[1], total[2], total[3]);
    println!(
        "\n   every event accounted for (pushed = dropped + discarded + delivered + queued, and the \
         queue's own counters agree): {}",
        if accounted { "yes" } else { "NO" }
    );
    println!(
        "   throughput: {:.0} events/s pushed, {:.0} events/s delivered",
        total[0] as f64 / produced_for.as_secs_f64(),
        s.delivered as f64 / started.elapsed().as_secs_f64(),
    );
    jobs_demo(&client).await
}

/// The job queue: order-timeout jobs, some delayed, some failing once (retried after backoff),
/// a few failing every time (dead-lettered after 3 attempts), processed by two workers.
async fn jobs_demo(client: &Client) -> tideq::Result<()> {
    let q = Queue::new(
        client,
        &format!("demo-orders-{}", std::process::id()),
        QueueOptions {
            max_attempts: 3,
            backoff: Backoff::fixed(200),
            ..Default::default()
        },
    )?;
    println!(
        "\n2. Job queue: 5000 order jobs (500 of them delayed 1-2 s; every 10th fails once and is \
         retried,\n   every 500th always fails and is dead-lettered after 3 attempts), run by 2 \
         workers of 16 slots each."
    );
    let jobs: Vec<(Vec<u8>, EnqueueOptions)> = (0..5000u64)
        .map(|i| {
            let delay = (i % 10 == 3).then(|| Duration::from_millis(1000 + (i % 1000)));
            (
                format!("order {i}").into_bytes(),
                EnqueueOptions {
                    id: Some(format!("order-{i}")),
                    delay,
                    ..Default::default()
                },
            )
        })
        .collect();
    let t = Instant::now();
    q.enqueue_many(&jobs).await?;
    let again = q
        .enqueue(
            b"duplicate",
            EnqueueOptions {
                id: Some("order-1".into()),
                ..Default::default()
            },
        )
        .await?;
    println!(
        "\n   enqueued 5000 jobs in {} ms; enqueuing order-1 again: {}",
        t.elapsed().as_millis(),
        if again.created {
            "created a second job (unexpected)"
        } else {
            "nothing created (its id exists)"
        }
    );
    let handler = |job: Job| async move {
        let n: u64 = job.payload_str().map_err(|e| e.to_string())?[6..]
            .parse()
            .map_err(|_| "bad payload".to_string())?;
        if n % 500 == 7 {
            return Err(format!("payment provider rejected order {n}"));
        }
        if n % 10 == 7 && job.attempt == 1 {
            return Err("timeout talking to the payment provider".to_string());
        }
        Ok(())
    };
    let opts = WorkerOptions {
        concurrency: 16,
        stop_when_drained: true,
        ..Default::default()
    };
    let workers = [q.work(opts.clone(), handler)?, q.work(opts, handler)?];
    let t = Instant::now();
    let mut completed = 0;
    for w in &workers {
        completed += w.join().await.completed;
    }
    let s = q.stats().await?;
    println!(
        "   done in {:.1} s: {} completed (the workers counted {completed}), {} retried after a \
         failure, {} dead-lettered; left: {} ready, {} delayed, {} running",
        t.elapsed().as_secs_f64(),
        s.completed,
        s.retried,
        s.dead,
        s.ready,
        s.delayed,
        s.active
    );
    if let Some(dead) = q.dead_letters(0, 1).await?.first() {
        println!(
            "   a dead letter: {} after {} attempts, last error \"{}\"",
            dead.id,
            dead.attempts,
            dead.last_error.as_deref().unwrap_or("")
        );
    }
    println!("   purged {} dead letters", q.purge().await?);
    Ok(())
}

fn handler(
    counts: Counts,
    pause: Duration,
) -> impl Fn(Batch) -> tideq::HandlerFuture + Send + Sync + 'static {
    move |b: Batch| {
        let counts = counts.clone();
        Box::pin(async move {
            if !pause.is_zero() {
                tokio::time::sleep(pause).await;
            }
            counts.lock().unwrap().entry(b.group).or_default()[2] += b.items.len() as u64;
            Ok(())
        })
    }
}
