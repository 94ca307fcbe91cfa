//! The capped-queue consumer runtime's promises, against a real redis-server.

mod common;

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{unique, RedisServer};
use tideq::{Batch, CappedOptions, CappedQueue, Client, ConsumerOptions};

fn queue(url: &str) -> CappedQueue {
    let client = Client::open(url).unwrap();
    CappedQueue::new(
        &client,
        &unique("cq"),
        CappedOptions {
            capacity: 100_000,
            ..Default::default()
        },
    )
    .unwrap()
}

async fn wait_until(timeout: Duration, mut f: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if f() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    f()
}

type Seen = Arc<Mutex<Vec<(String, Vec<u8>)>>>;

fn recorder(
    seen: &Seen,
) -> impl Fn(Batch) -> std::future::Ready<Result<(), String>> + Send + Sync + 'static {
    let seen = seen.clone();
    move |b: Batch| {
        let mut s = seen.lock().unwrap();
        s.extend(b.items.into_iter().map(|i| (b.group.clone(), i)));
        std::future::ready(Ok(()))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumer_delivers_every_item_exactly_once_with_concurrency() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let items: Vec<(String, String)> = (0..5000)
        .map(|i| (format!("g{}", i % 50), format!("{i}")))
        .collect();
    q.push_many(&items).await.unwrap();
    let seen: Seen = Default::default();
    let opts = ConsumerOptions {
        concurrency: 8,
        batch_size: 32,
        stop_when_empty: true,
        ..Default::default()
    };
    let seen2 = seen.clone();
    let c = q
        .consume(opts, move |b: Batch| {
            let seen = seen2.clone();
            async move {
                tokio::time::sleep(Duration::from_millis(1)).await;
                seen.lock()
                    .unwrap()
                    .extend(b.items.into_iter().map(|i| (b.group.clone(), i)));
                Ok::<(), String>(())
            }
        })
        .unwrap();
    let stats = tokio::time::timeout(Duration::from_secs(30), c.join())
        .await
        .unwrap();
    let seen = seen.lock().unwrap();
    let unique: HashSet<_> = seen.iter().collect();
    assert_eq!(seen.len(), 5000);
    assert_eq!(unique.len(), 5000);
    assert_eq!(stats.items, 5000);
    assert_eq!(stats.failed, 0);
}

#[tokio::test]
async fn dedicated_consumers_serve_hot_groups_and_general_consumers_skip_them() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let hot = vec!["hot1".to_string(), "hot2".to_string()];
    let mut items: Vec<(String, String)> = Vec::new();
    for i in 0..300 {
        items.push((hot[i % 2].clone(), format!("h{i}")));
        items.push((format!("cold{}", i % 30), format!("c{i}")));
    }
    q.push_many(&items).await.unwrap();
    let hot_seen: Seen = Default::default();
    let cold_seen: Seen = Default::default();
    let dedicated = q
        .consume(
            ConsumerOptions {
                groups: hot.clone(),
                stop_when_empty: true,
                ..Default::default()
            },
            recorder(&hot_seen),
        )
        .unwrap();
    let general = q
        .consume(
            ConsumerOptions {
                exclude: hot.clone(),
                stop_when_empty: true,
                concurrency: 2,
                ..Default::default()
            },
            recorder(&cold_seen),
        )
        .unwrap();
    dedicated.join().await;
    general.join().await;
    let hot_seen = hot_seen.lock().unwrap();
    let cold_seen = cold_seen.lock().unwrap();
    assert_eq!(hot_seen.len(), 300);
    assert!(hot_seen.iter().all(|(g, _)| hot.contains(g)));
    assert_eq!(cold_seen.len(), 300);
    assert!(
        cold_seen.iter().all(|(g, _)| g.starts_with("cold")),
        "a general consumer took a hot group"
    );
}

#[tokio::test]
async fn an_idle_consumer_is_woken_by_a_push_without_polling() {
    let server = RedisServer::start_private(common::free_port(), &[]);
    let q = queue(&server.url);
    let seen: Seen = Default::default();
    // A 30 s poll interval: only the producer's wake-up signal can deliver within the test.
    let opts = ConsumerOptions {
        poll_interval: Duration::from_secs(30),
        ..Default::default()
    };
    let c = q.consume(opts, recorder(&seen)).unwrap();
    let dedicated = q
        .consume(
            ConsumerOptions {
                groups: vec!["vip".into()],
                poll_interval: Duration::from_secs(30),
                ..Default::default()
            },
            recorder(&seen),
        )
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .exec(&mut server.conn())
        .unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query(&mut server.conn())
        .unwrap();
    let calls: u64 = info
        .lines()
        .filter(|l| {
            l.starts_with("cmdstat_")
                && !l.starts_with("cmdstat_info")
                && !l.starts_with("cmdstat_config")
        })
        .filter_map(|l| {
            l.split("calls=")
                .nth(1)?
                .split(',')
                .next()?
                .parse::<u64>()
                .ok()
        })
        .sum();
    assert!(
        calls <= 2,
        "two idle consumers sent {calls} commands in 2 s:\n{info}"
    );
    q.push("anything", "x").await.unwrap();
    q.push("vip", "y").await.unwrap();
    assert!(
        wait_until(Duration::from_secs(10), || seen.lock().unwrap().len() == 2).await,
        "not woken"
    );
    c.shutdown().await;
    dedicated.shutdown().await;
}

#[tokio::test]
async fn a_failing_handler_does_not_stop_the_consumer_and_its_batch_is_not_redelivered() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    for i in 0..10 {
        q.push(&format!("g{i}"), "x").await.unwrap();
    }
    let calls = Arc::new(AtomicUsize::new(0));
    let calls2 = calls.clone();
    let c = q
        .consume(
            ConsumerOptions {
                stop_when_empty: true,
                ..Default::default()
            },
            move |b: Batch| {
                let n = calls2.fetch_add(1, Ordering::SeqCst);
                async move {
                    match n % 3 {
                        0 => Err(format!("boom on {}", b.group)),
                        1 => panic!("handler panicked"),
                        _ => Ok(()),
                    }
                }
            },
        )
        .unwrap();
    let stats = tokio::time::timeout(Duration::from_secs(10), c.join())
        .await
        .unwrap();
    assert_eq!(
        calls.load(Ordering::SeqCst),
        10,
        "each batch handled once, never redelivered"
    );
    assert_eq!(stats.batches, 10);
    assert_eq!(stats.failed, 7);
    assert_eq!(q.stats().await.unwrap().delivered, 10);
}

#[tokio::test]
async fn graceful_shutdown_lets_running_handlers_finish_and_takes_no_new_batches() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    for i in 0..5 {
        q.push(&format!("g{i}"), "x").await.unwrap();
    }
    let started = Arc::new(AtomicUsize::new(0));
    let finished = Arc::new(AtomicUsize::new(0));
    let (s2, f2) = (started.clone(), finished.clone());
    let c = q
        .consume(
            ConsumerOptions {
                concurrency: 2,
                ..Default::default()
            },
            move |_b: Batch| {
                let (s, f) = (s2.clone(), f2.clone());
                async move {
                    s.fetch_add(1, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    f.fetch_add(1, Ordering::SeqCst);
                    Ok::<(), String>(())
                }
            },
        )
        .unwrap();
    assert!(
        wait_until(Duration::from_secs(5), || started.load(Ordering::SeqCst)
            == 2)
        .await
    );
    c.shutdown().await;
    assert_eq!(
        finished.load(Ordering::SeqCst),
        2,
        "running handlers finished before shutdown returned"
    );
    assert_eq!(
        started.load(Ordering::SeqCst),
        2,
        "no batch taken after stop"
    );
    assert_eq!(
        q.groups().await.unwrap().len(),
        3,
        "untaken groups stay queued"
    );
    assert!(!c.is_running());
}

#[tokio::test]
async fn a_handler_stuck_past_the_grace_period_is_abandoned() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    q.push("g", "x").await.unwrap();
    let started = Arc::new(AtomicUsize::new(0));
    let s2 = started.clone();
    let opts = ConsumerOptions {
        grace: Duration::from_millis(200),
        ..Default::default()
    };
    let c = q
        .consume(opts, move |_b: Batch| {
            s2.fetch_add(1, Ordering::SeqCst);
            async move {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                Ok::<(), String>(())
            }
        })
        .unwrap();
    assert!(
        wait_until(Duration::from_secs(5), || started.load(Ordering::SeqCst)
            == 1)
        .await
    );
    let t = Instant::now();
    c.shutdown().await;
    assert!(t.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn the_consumer_rides_out_a_redis_restart() {
    let mut server = RedisServer::start_private(common::free_port(), &[]);
    let q = queue(&server.url);
    let seen: Seen = Default::default();
    let opts = ConsumerOptions {
        poll_interval: Duration::from_millis(200),
        ..Default::default()
    };
    let c = q.consume(opts, recorder(&seen)).unwrap();
    q.push("g", "before").await.unwrap();
    assert!(wait_until(Duration::from_secs(5), || seen.lock().unwrap().len() == 1).await);
    server.restart();
    // The first commands after the restart may fail while connections are re-established.
    let mut pushed = false;
    for _ in 0..50 {
        if q.push("g", "after").await.is_ok() {
            pushed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(pushed, "producer never reconnected");
    assert!(
        wait_until(Duration::from_secs(15), || seen.lock().unwrap().len() == 2).await,
        "consumer never recovered"
    );
    c.shutdown().await;
}

#[tokio::test]
async fn consumer_options_are_validated() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let noop = |_b: Batch| async { Ok::<(), String>(()) };
    for opts in [
        ConsumerOptions {
            concurrency: 0,
            ..Default::default()
        },
        ConsumerOptions {
            batch_size: 0,
            ..Default::default()
        },
        ConsumerOptions {
            groups: vec!["a{".into()],
            ..Default::default()
        },
        ConsumerOptions {
            groups: vec!["a".into()],
            exclude: vec!["b".into()],
            ..Default::default()
        },
        ConsumerOptions {
            poll_interval: Duration::ZERO,
            ..Default::default()
        },
    ] {
        assert_eq!(
            q.consume(opts, noop).err().unwrap().code(),
            "INVALID_ARGUMENT"
        );
    }
}

#[test]
fn starting_a_consumer_or_worker_outside_a_tokio_runtime_is_closed() {
    let client = Client::open("redis://127.0.0.1:1").unwrap();
    let q = CappedQueue::new(&client, "no-rt", CappedOptions::default()).unwrap();
    let err = q
        .consume(ConsumerOptions::default(), |_b: Batch| async {
            Ok::<(), String>(())
        })
        .err()
        .unwrap();
    assert_eq!(err.code(), "CLOSED");
    let jobs = tideq::Queue::new(&client, "no-rt", tideq::QueueOptions::default()).unwrap();
    let err = jobs
        .work(tideq::WorkerOptions::default(), |_j: tideq::Job| async {
            Ok::<(), String>(())
        })
        .err()
        .unwrap();
    assert_eq!(err.code(), "CLOSED");
}
