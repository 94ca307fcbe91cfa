//! The capped grouped queue's delivery: pushes report drops and never exceed the cap, pops return
//! the oldest first, exact bytes, never twice, round-robin over groups at constant cost per group.
//! One test per promise, against a real redis-server.

mod common;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::capped::*;
use common::RedisServer;
use tideq::ConsumerOptions;

#[tokio::test]
async fn push_reports_drops_and_drop_oldest_keeps_the_newest_in_order() {
    let server = RedisServer::start();
    let q = queue(&server, cap(3));
    let mut drops = Vec::new();
    for i in 1..=10 {
        drops.push(q.push("g", format!("{i}")).await.unwrap());
    }
    assert_eq!(drops, vec![0, 0, 0, 1, 1, 1, 1, 1, 1, 1]);
    assert_eq!(q.len("g").await.unwrap(), 3);
    let items = q.pop_batch("g", 10).await.unwrap();
    assert_eq!(items, vec![b"8".to_vec(), b"9".to_vec(), b"10".to_vec()]);
    let s = q.stats().await.unwrap();
    assert_eq!((s.pushed, s.dropped, s.delivered), (10, 7, 3));
}

#[tokio::test]
async fn cap_is_never_exceeded_under_concurrent_producers() {
    let server = RedisServer::start();
    let q = queue(&server, cap(100));
    let key_len = {
        let q = q.clone();
        move || {
            let q = q.clone();
            async move { q.len("hot").await.unwrap() }
        }
    };
    let mut producers = Vec::new();
    for p in 0..8 {
        let q = q.clone();
        producers.push(tokio::spawn(async move {
            let mut dropped = 0;
            for i in 0..250 {
                dropped += q.push("hot", format!("{p}:{i}")).await.unwrap();
                if i % 50 == 0 {
                    let batch: Vec<(String, String)> = (0..40)
                        .map(|j| ("hot".to_string(), format!("{p}:b{i}:{j}")))
                        .collect();
                    dropped += q.push_many(&batch).await.unwrap().iter().sum::<u64>();
                }
            }
            dropped
        }));
    }
    let mut max_seen = 0;
    while producers.iter().any(|p| !p.is_finished()) {
        max_seen = max_seen.max(key_len().await);
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let mut dropped = 0;
    for p in producers {
        dropped += p.await.unwrap();
    }
    let pushed = 8 * (250 + 5 * 40);
    assert!(
        max_seen <= 100,
        "saw {max_seen} items in a group capped at 100"
    );
    assert_eq!(q.len("hot").await.unwrap(), 100);
    assert_eq!(dropped, pushed - 100);
    let s = q.stats().await.unwrap();
    assert_eq!((s.pushed, s.dropped), (pushed, pushed - 100));
}

#[tokio::test]
async fn pop_batch_returns_exactly_max_oldest_first() {
    let server = RedisServer::start();
    let q = queue(&server, cap(1000));
    let items: Vec<(&str, Vec<u8>)> = (0..300u32)
        .map(|i| ("g", i.to_be_bytes().to_vec()))
        .collect();
    q.push_many(&items).await.unwrap();
    let mut next = 0u32;
    for expected in [128, 128, 44, 0] {
        let batch = q.pop_batch("g", 128).await.unwrap();
        assert_eq!(batch.len(), expected);
        for item in batch {
            assert_eq!(item, next.to_be_bytes().to_vec());
            next += 1;
        }
    }
    assert!(
        q.groups().await.unwrap().is_empty(),
        "a drained group leaves the registry"
    );
}

#[tokio::test]
async fn items_keep_their_exact_bytes() {
    let server = RedisServer::start();
    let q = queue(&server, cap(10));
    let odd: Vec<Vec<u8>> = vec![
        vec![],
        b":".to_vec(),
        b"12:34".to_vec(),
        (0..=255u8).collect(),
        vec![0; 1000],
    ];
    for item in &odd {
        q.push("bytes", item).await.unwrap();
    }
    assert_eq!(q.pop_batch("bytes", 10).await.unwrap(), odd);
}

#[tokio::test]
async fn push_many_spans_many_chunks_and_returns_drop_counts() {
    let server = RedisServer::start();
    let q = queue(&server, cap(1000));
    let items: Vec<(String, String)> = (0..5000)
        .map(|i| (format!("g{}", i % 3), format!("{i}")))
        .collect();
    let drops = q.push_many(&items).await.unwrap();
    assert_eq!(drops.len(), 5000);
    // each group gets 1666 or 1667 items; everything above 1000 dropped one item each
    assert_eq!(drops.iter().sum::<u64>(), 5000 - 3000);
    assert!(drops[..3000].iter().all(|&d| d == 0));
    assert!(drops[3000..].iter().all(|&d| d == 1));
    for g in ["g0", "g1", "g2"] {
        assert_eq!(q.len(g).await.unwrap(), 1000);
    }
    let mut groups = q.groups().await.unwrap();
    groups.sort();
    assert_eq!(groups, vec!["g0", "g1", "g2"]);
}

#[tokio::test]
async fn popped_items_are_never_delivered_twice_across_concurrent_consumers() {
    let server = RedisServer::start();
    let q = queue(&server, cap(100_000));
    let items: Vec<(String, String)> = (0..20_000)
        .map(|i| (format!("g{}", i % 37), format!("{i}")))
        .collect();
    q.push_many(&items).await.unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut consumers = Vec::new();
    for c in 0..6 {
        let q = q.clone();
        let seen = seen.clone();
        consumers.push(tokio::spawn(async move {
            loop {
                let got = if c % 2 == 0 {
                    q.next_batch(64).await.unwrap().map(|b| b.items)
                } else {
                    let groups = q.groups().await.unwrap();
                    match groups.first() {
                        Some(g) => Some(q.pop_batch(g, 50).await.unwrap()),
                        None => None,
                    }
                };
                match got {
                    Some(items) => seen.lock().unwrap().extend(items),
                    None => break,
                }
            }
        }));
    }
    for c in consumers {
        c.await.unwrap();
    }
    let seen = seen.lock().unwrap().clone();
    let unique: HashSet<&Vec<u8>> = seen.iter().collect();
    assert_eq!(unique.len(), seen.len(), "an item was delivered twice");
    assert_eq!(seen.len(), 20_000, "an item was lost");
    assert_eq!(q.stats().await.unwrap().delivered, 20_000);
}

#[tokio::test]
async fn round_robin_serves_every_small_group_within_51_calls() {
    let server = RedisServer::start();
    let q = queue(&server, cap(20_000));
    let big: Vec<(&str, String)> = (0..10_000).map(|i| ("big", format!("{i}"))).collect();
    q.push_many(&big).await.unwrap();
    let small: Vec<(String, String)> = (0..50)
        .flat_map(|g| (0..10).map(move |i| (format!("small{g}"), format!("{i}"))))
        .collect();
    q.push_many(&small).await.unwrap();
    let mut served = HashSet::new();
    for _ in 0..51 {
        let batch = q.next_batch(128).await.unwrap().expect("groups have data");
        served.insert(batch.group);
    }
    for g in 0..50 {
        assert!(
            served.contains(&format!("small{g}")),
            "small{g} not served in 51 calls"
        );
    }
    assert!(served.contains("big"));
}

#[tokio::test]
async fn draining_many_one_item_groups_costs_constant_time_per_group() {
    let server = RedisServer::start();
    let q = queue(&server, cap(10));
    let n = 20_000;
    let items: Vec<(String, &str)> = (0..n).map(|i| (format!("g{i}"), "x")).collect();
    q.push_many(&items).await.unwrap();
    assert_eq!(q.stats().await.unwrap().groups, n as u64);
    let opts = ConsumerOptions {
        concurrency: 64,
        stop_when_empty: true,
        ..Default::default()
    };
    let stats = q
        .consume(opts, |_batch| async { Ok::<(), String>(()) })
        .unwrap()
        .join()
        .await;
    assert_eq!(stats.items, n as u64);
    assert_eq!(q.stats().await.unwrap().groups, 0);
    // Drained groups leave the rotation when met, and nothing else is left behind.
    let left: u64 = redis::cmd("LLEN")
        .arg(format!("tideq:{{{}}}:c:reg", q.name()))
        .query(&mut server.conn())
        .unwrap();
    assert_eq!(left, 0);
}
