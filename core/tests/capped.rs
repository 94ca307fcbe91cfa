//! The capped grouped queue's contract, one test per promise, against a real redis-server.

mod common;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{unique, RedisServer};
use tideq::{CappedOptions, CappedQueue, Client, Config, ConsumerOptions};

fn queue(server: &RedisServer, opts: CappedOptions) -> CappedQueue {
    let client = Client::open(&server.url).unwrap();
    CappedQueue::new(&client, &unique("q"), opts).unwrap()
}

fn cap(capacity: usize) -> CappedOptions {
    CappedOptions {
        capacity,
        ..Default::default()
    }
}

fn dbsize(server: &RedisServer) -> u64 {
    redis::cmd("DBSIZE").query(&mut server.conn()).unwrap()
}

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

#[tokio::test]
async fn items_older_than_max_age_are_discarded_and_counted_never_delivered() {
    let server = RedisServer::start();
    let q = queue(
        &server,
        CappedOptions {
            capacity: 100,
            ttl: None,
            max_age: Some(Duration::from_millis(200)),
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

#[tokio::test]
async fn scripts_are_reloaded_after_script_flush_also_in_pipelines() {
    let server = RedisServer::start();
    let q = queue(&server, cap(100_000));
    let flush = || {
        redis::cmd("SCRIPT")
            .arg("FLUSH")
            .exec(&mut server.conn())
            .unwrap()
    };
    flush();
    assert_eq!(q.push("g", "a").await.unwrap(), 0);
    flush();
    let many: Vec<(&str, String)> = (0..3500).map(|i| ("g", format!("{i}"))).collect();
    assert_eq!(
        q.push_many(&many).await.unwrap().len(),
        3500,
        "pipelined scripts after a flush"
    );
    flush();
    assert_eq!(q.pop_batch("g", 1).await.unwrap(), vec![b"a".to_vec()]);
    flush();
    assert_eq!(q.next_batch(10).await.unwrap().unwrap().items.len(), 10);
}

#[tokio::test]
async fn bad_input_is_rejected_with_invalid_argument_and_nothing_is_written() {
    let server = RedisServer::start_private(common::free_port(), &[]);
    let client = Client::new(Config::new(&server.url).with_max_payload(1024)).unwrap();
    let long = "x".repeat(257);
    for bad in ["", "a{b", "a}b", "tab\there", long.as_str()] {
        let err = CappedQueue::new(&client, bad, cap(10)).unwrap_err();
        assert_eq!(err.code(), "INVALID_ARGUMENT", "queue name {bad:?}");
    }
    for opts in [
        cap(0),
        CappedOptions {
            ttl: Some(Duration::ZERO),
            ..cap(1)
        },
        CappedOptions {
            max_age: Some(Duration::ZERO),
            ..cap(1)
        },
    ] {
        assert_eq!(
            CappedQueue::new(&client, "q", opts).unwrap_err().code(),
            "INVALID_ARGUMENT"
        );
    }
    let q = CappedQueue::new(&client, "q", cap(10)).unwrap();
    for bad in ["", "a{b", "a}b", "nl\n", long.as_str()] {
        assert_eq!(
            q.push(bad, "x").await.unwrap_err().code(),
            "INVALID_ARGUMENT",
            "group {bad:?}"
        );
        assert_eq!(
            q.pop_batch(bad, 1).await.unwrap_err().code(),
            "INVALID_ARGUMENT"
        );
        assert_eq!(q.len(bad).await.unwrap_err().code(), "INVALID_ARGUMENT");
        assert_eq!(q.peek(bad, 1).await.unwrap_err().code(), "INVALID_ARGUMENT");
    }
    for max in [0, tideq::capped::MAX_PEEK + 1] {
        let err = q.peek("g", max).await.unwrap_err();
        assert_eq!(err.code(), "INVALID_ARGUMENT", "max {max}");
        assert!(err.message().contains("max must be 1 to 1000"), "{err}");
    }
    assert_eq!(
        q.pop_batch("g", 0).await.unwrap_err().code(),
        "INVALID_ARGUMENT"
    );
    assert_eq!(
        q.next_batch(0).await.unwrap_err().code(),
        "INVALID_ARGUMENT"
    );
    let err = q.push("g", vec![0u8; 1025]).await.unwrap_err();
    assert_eq!(err.code(), "PAYLOAD_TOO_LARGE");
    let mixed = vec![("g", vec![1u8]), ("g", vec![0u8; 2000])];
    assert_eq!(
        q.push_many(&mixed).await.unwrap_err().code(),
        "PAYLOAD_TOO_LARGE"
    );
    let mixed = vec![("g", vec![1u8]), ("b{ad", vec![1u8])];
    assert_eq!(
        q.push_many(&mixed).await.unwrap_err().code(),
        "INVALID_ARGUMENT"
    );
    let bad_prefix = Client::new(Config::new(&server.url).with_prefix("a{b"));
    assert_eq!(bad_prefix.unwrap_err().code(), "INVALID_ARGUMENT");
    assert_eq!(
        Client::open("http://localhost").unwrap_err().code(),
        "INVALID_ARGUMENT"
    );
    assert_eq!(dbsize(&server), 0, "bad input wrote something");
}

#[tokio::test]
async fn unreachable_redis_is_a_connection_error_without_the_password() {
    let port = common::free_port();
    let client = Client::new(
        Config::new(format!("redis://alice:s3cret@127.0.0.1:{port}"))
            .with_connect_timeout(Duration::from_millis(500)),
    )
    .unwrap();
    let q = CappedQueue::new(&client, "q", cap(10)).unwrap();
    let err = q.push("g", "x").await.unwrap_err();
    assert_eq!(err.code(), "CONNECTION", "{err}");
    assert!(!err.to_string().contains("s3cret"), "{err}");
    assert_eq!(
        q.push_many(&[("g", "x"), ("h", "y")])
            .await
            .unwrap_err()
            .code(),
        "CONNECTION"
    );
    assert_eq!(q.next_batch(1).await.unwrap_err().code(), "CONNECTION");
}

#[tokio::test]
async fn acl_users_authenticate_and_wrong_passwords_are_rejected_without_leaking() {
    let server = RedisServer::start_private(common::free_port(), &[]);
    redis::cmd("ACL")
        .arg(&["SETUSER", "app", "on", ">app-pass", "~tideq:*", "+@all"])
        .exec(&mut server.conn())
        .unwrap();
    let good = Client::new(
        Config::new(&server.url).with_credentials(Some("app".into()), Some("app-pass".into())),
    )
    .unwrap();
    let q = CappedQueue::new(&good, "acl", cap(10)).unwrap();
    q.push("g", "x").await.unwrap();
    let url = format!("redis://app:wrong-pass@127.0.0.1:{}", server.port);
    let bad = CappedQueue::new(&Client::open(&url).unwrap(), "acl", cap(10)).unwrap();
    let err = bad.push("g", "x").await.unwrap_err();
    assert!(!err.to_string().contains("wrong-pass"), "{err}");
    assert_eq!(q.len("g").await.unwrap(), 1);
}

#[tokio::test]
async fn keys_live_under_the_prefix_and_one_hash_tag() {
    let server = RedisServer::start_private(common::free_port(), &[]);
    let client = Client::new(Config::new(&server.url).with_prefix("app1")).unwrap();
    let q = CappedQueue::new(&client, "events", cap(10)).unwrap();
    q.push_many(&[("a", "1"), ("b", "2")]).await.unwrap();
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg("*")
        .query(&mut server.conn())
        .unwrap();
    assert!(!keys.is_empty());
    let slots: HashMap<u16, usize> = keys.iter().fold(HashMap::new(), |mut m, k| {
        assert!(k.starts_with("app1:{events}:"), "{k}");
        *m.entry(tideq::keys::key_slot(k)).or_default() += 1;
        m
    });
    assert_eq!(
        slots.len(),
        1,
        "keys of one queue span several slots: {keys:?}"
    );
}

#[tokio::test]
async fn a_sharded_capped_queue_keeps_each_group_on_one_shard_and_serves_them_all() {
    let server = RedisServer::start();
    let client = Client::open(&server.url).unwrap();
    let q = CappedQueue::sharded(&client, &unique("shq"), 3, cap(100)).unwrap();
    let items: Vec<(String, String)> = (0..3000)
        .map(|i| (format!("g{}", i % 30), format!("{i}")))
        .collect();
    let drops = q.push_many(&items).await.unwrap();
    assert_eq!(drops.iter().sum::<u64>(), 0);
    assert_eq!(q.groups().await.unwrap().len(), 30);
    assert_eq!(q.stats().await.unwrap().groups, 30);
    // Each group's list lives whole in one shard, in push order.
    let first: Vec<Vec<u8>> = q.pop_batch("g7", 3).await.unwrap();
    assert_eq!(first, vec![b"7".to_vec(), b"37".to_vec(), b"67".to_vec()]);
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("tideq:{{{}#*}}:c:reg", q.name()))
        .query(&mut server.conn())
        .unwrap();
    assert_eq!(keys.len(), 3, "every shard has a registry: {keys:?}");
    // Round-robin reaches every group across the shards.
    let mut served = HashSet::new();
    for _ in 0..30 {
        served.insert(q.next_batch(1000).await.unwrap().unwrap().group);
    }
    assert_eq!(served.len(), 30);
    assert!(q.next_batch(10).await.unwrap().is_none());
    let s = q.stats().await.unwrap();
    assert_eq!((s.pushed, s.delivered, s.groups), (3000, 3000, 0));
}
