//! The capped grouped queue's groups and ages: the registry never misses a group with items, an
//! expired group is neither listed nor counted, items past max_age are discarded and counted, peek
//! shows the oldest with their push time and leaves out the too old. Against a real redis-server.

mod common;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::capped::*;
use common::RedisServer;
use tideq::{CappedOptions, ConsumerOptions};

/// Reads every group's length and the registry (rotation list and set, live zset) in one MULTI,
/// so the check itself is atomic.
#[allow(clippy::type_complexity)]
fn registry_snapshot(
    server: &RedisServer,
    q: &str,
    groups: &[String],
) -> (Vec<u64>, HashSet<String>, Vec<String>, HashMap<String, f64>) {
    let mut pipe = redis::pipe();
    pipe.atomic();
    for g in groups {
        pipe.cmd("LLEN").arg(format!("tideq:{{{q}}}:c:g:{g}"));
    }
    pipe.cmd("SMEMBERS").arg(format!("tideq:{{{q}}}:c:regset"));
    pipe.cmd("LRANGE")
        .arg(format!("tideq:{{{q}}}:c:reg"))
        .arg(0)
        .arg(-1);
    pipe.cmd("ZRANGE")
        .arg(format!("tideq:{{{q}}}:c:live"))
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES");
    let mut values: Vec<redis::Value> = pipe.query(&mut server.conn()).unwrap();
    let live: Vec<(String, f64)> = redis::from_redis_value(values.pop().unwrap()).unwrap();
    let list: Vec<String> = redis::from_redis_value(values.pop().unwrap()).unwrap();
    let set: HashSet<String> = redis::from_redis_value(values.pop().unwrap()).unwrap();
    let lens = values
        .into_iter()
        .map(|v| redis::from_redis_value(v).unwrap())
        .collect();
    (lens, set, list, live.into_iter().collect())
}

#[tokio::test]
async fn a_group_with_items_is_never_missing_from_the_registry() {
    let server = RedisServer::start();
    let q = queue(&server, cap(50));
    let groups: Vec<String> = (0..20).map(|i| format!("g{i}")).collect();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut tasks = Vec::new();
    for p in 0..3 {
        let (q, groups, stop) = (q.clone(), groups.clone(), stop.clone());
        tasks.push(tokio::spawn(async move {
            let mut i = p;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                q.push(&groups[i % groups.len()], "x").await.unwrap();
                i += 7;
            }
        }));
    }
    for c in 0..3 {
        let (q, groups, stop) = (q.clone(), groups.clone(), stop.clone());
        tasks.push(tokio::spawn(async move {
            let mut i = c;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                if c == 0 {
                    q.next_batch(3).await.unwrap();
                } else {
                    q.pop_batch(&groups[i % groups.len()], 2).await.unwrap();
                }
                i += 1;
            }
        }));
    }
    for _ in 0..200 {
        let (lens, set, list, live) = registry_snapshot(&server, q.name(), &groups);
        for (g, len) in groups.iter().zip(&lens) {
            if *len > 0 {
                assert!(
                    set.contains(g),
                    "{g} has {len} items but is not in the rotation"
                );
                let score = live.get(g).copied().unwrap_or(0.0);
                assert!(score > 0.0, "{g} has {len} items but is not live ({score})");
            }
        }
        let listed: HashSet<String> = list.iter().cloned().collect();
        assert_eq!(listed, set, "registry list and set disagree");
        assert_eq!(listed.len(), list.len(), "a group is listed twice");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for t in tasks {
        t.await.unwrap();
    }
}

#[tokio::test]
async fn an_expired_group_is_neither_listed_nor_counted_and_its_next_push_wakes_consumers() {
    let server = RedisServer::start();
    let q = queue(
        &server,
        CappedOptions {
            capacity: 10,
            ttl: Some(Duration::from_millis(150)),
            max_age: None,
            ..Default::default()
        },
    );
    q.push("short-lived", "x").await.unwrap();
    assert_eq!(q.groups().await.unwrap(), vec!["short-lived"]);
    assert_eq!(q.stats().await.unwrap().groups, 1);
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(
        q.len("short-lived").await.unwrap(),
        0,
        "the group key expired"
    );
    assert!(
        q.groups().await.unwrap().is_empty(),
        "an expired group is not listed"
    );
    assert_eq!(q.stats().await.unwrap().groups, 0, "nor counted");
    // An idle consumer that polls once a minute: only a wake-up brings it the new item in time.
    let got = Arc::new(Mutex::new(Vec::new()));
    let g2 = got.clone();
    let opts = ConsumerOptions {
        poll_interval: Duration::from_secs(60),
        ..Default::default()
    };
    let c = q
        .consume(opts, move |batch| {
            g2.lock().unwrap().push(batch.group);
            async { Ok::<(), String>(()) }
        })
        .unwrap();
    let idle = wait_until(Duration::from_secs(5), || blocked_clients(&server) == 1).await;
    assert!(idle, "the consumer never went idle");
    q.push("short-lived", "again").await.unwrap();
    let woke = wait_until(Duration::from_secs(5), || got.lock().unwrap().len() == 1).await;
    assert!(woke, "the push to a group whose TTL had passed woke nobody");
    c.shutdown().await;
    assert!(q.next_batch(10).await.unwrap().is_none());
}

fn blocked_clients(server: &RedisServer) -> u64 {
    let info: String = redis::cmd("INFO")
        .arg("clients")
        .query(&mut server.conn())
        .unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix("blocked_clients:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

async fn wait_until(timeout: Duration, mut f: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + timeout;
    while std::time::Instant::now() < deadline {
        if f() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    f()
}

#[tokio::test]
async fn items_older_than_max_age_are_discarded_and_counted_never_delivered() {
    let server = RedisServer::start();
    let q = queue(
        &server,
        CappedOptions {
            capacity: 100,
            ttl: None,
            max_age: Some(Duration::from_millis(200)),
            ..Default::default()
        },
    );
    for i in 0..5 {
        q.push("g", format!("old{i}")).await.unwrap();
    }
    tokio::time::sleep(Duration::from_millis(350)).await;
    q.push("g", "new0").await.unwrap();
    q.push("g", "new1").await.unwrap();
    assert_eq!(
        q.pop_batch("g", 3).await.unwrap(),
        vec![b"new0".to_vec(), b"new1".to_vec()]
    );
    let s = q.stats().await.unwrap();
    assert_eq!((s.discarded, s.delivered), (5, 2));
    // all-stale group: nothing delivered, group leaves the registry
    q.push("stale", "x").await.unwrap();
    tokio::time::sleep(Duration::from_millis(350)).await;
    assert!(q.next_batch(10).await.unwrap().is_none());
    assert!(q.groups().await.unwrap().is_empty());
}

#[tokio::test]
async fn peek_returns_the_oldest_items_first_with_their_push_time_and_removes_nothing() {
    let server = RedisServer::start();
    let q = queue(&server, cap(100));
    let now = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64
    };
    let before = now();
    let items: Vec<Vec<u8>> = (0..5).map(|i| format!("i{i}").into_bytes()).collect();
    for item in &items {
        q.push("g", item).await.unwrap();
    }
    q.push("g", [0u8, b':', 0xff]).await.unwrap();
    let after = now();
    let peeked = q.peek("g", 3).await.unwrap();
    assert_eq!(
        peeked.iter().map(|p| p.item.clone()).collect::<Vec<_>>(),
        items[..3].to_vec()
    );
    for p in &peeked {
        // The Redis clock is this machine's clock here.
        assert!(
            (before.saturating_sub(1000)..=after + 1000).contains(&p.pushed_at_ms),
            "{p:?} not within {before}..{after}"
        );
    }
    assert!(peeked
        .windows(2)
        .all(|w| w[0].pushed_at_ms <= w[1].pushed_at_ms));
    let all = q.peek("g", 1000).await.unwrap();
    assert_eq!(all.len(), 6);
    assert_eq!(all[5].item, vec![0u8, b':', 0xff], "bytes kept exactly");
    assert_eq!(q.len("g").await.unwrap(), 6, "peek removed nothing");
    let s = q.stats().await.unwrap();
    assert_eq!((s.delivered, s.discarded), (0, 0));
    assert_eq!(q.pop_batch("g", 5).await.unwrap(), items);
    assert!(q.peek("absent", 10).await.unwrap().is_empty());
}

#[tokio::test]
async fn peek_leaves_out_items_a_pop_would_discard_as_too_old() {
    let server = RedisServer::start();
    let q = queue(
        &server,
        CappedOptions {
            capacity: 100,
            ttl: None,
            max_age: Some(Duration::from_millis(200)),
            ..Default::default()
        },
    );
    for i in 0..3 {
        q.push("g", format!("old{i}")).await.unwrap();
    }
    tokio::time::sleep(Duration::from_millis(350)).await;
    q.push("g", "new0").await.unwrap();
    q.push("g", "new1").await.unwrap();
    let peeked: Vec<Vec<u8>> = q
        .peek("g", 10)
        .await
        .unwrap()
        .into_iter()
        .map(|p| p.item)
        .collect();
    assert_eq!(peeked, vec![b"new0".to_vec(), b"new1".to_vec()]);
    // The window is the oldest `max` items: stale ones in it are left out, not replaced.
    assert_eq!(q.peek("g", 4).await.unwrap().len(), 1);
    assert_eq!(q.len("g").await.unwrap(), 5, "nothing removed or counted");
    assert_eq!(q.stats().await.unwrap().discarded, 0);
    assert_eq!(
        q.pop_batch("g", 10).await.unwrap(),
        vec![b"new0".to_vec(), b"new1".to_vec()],
        "a pop delivers exactly what peek showed"
    );
}
