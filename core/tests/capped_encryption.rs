//! Encryption at rest for the capped grouped queue (issue 45, part 1): Redis only holds sealed
//! items; pops and peek open them; an item a consumer cannot open (the pop already took it) is
//! kept in the bounded unreadable list naming its key, and comes back once the key is restored.

mod common;

use common::scan::{every_byte, holds_marker, MARKER};
use common::{unique, RedisServer};
use tideq::{CappedOptions, CappedQueue, Client, Encryption, ErrorKind, MAX_UNREADABLE};

fn ring(current: &str, keys: &[(&str, u8)]) -> Encryption {
    Encryption::keyring(current, keys.iter().map(|(id, b)| (*id, [*b; 32]))).unwrap()
}

fn capped(server: &RedisServer, name: &str, enc: Option<Encryption>) -> CappedQueue {
    let opts = CappedOptions {
        capacity: 10_000,
        encryption: enc,
        ..Default::default()
    };
    CappedQueue::new(&Client::open(&server.url).unwrap(), name, opts).unwrap()
}

fn item(i: usize) -> Vec<u8> {
    format!("{MARKER}-{i}").into_bytes()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_plaintext_in_redis_after_push_and_pops_and_peek_return_it() {
    let server = RedisServer::start();
    let q = capped(&server, &unique("cenc"), Some(ring("k1", &[("k1", 1)])));
    q.push("g1", item(0)).await.unwrap();
    let many: Vec<(&str, Vec<u8>)> = (1..6).map(|i| ("g1", item(i))).collect();
    q.push_many(&many).await.unwrap();
    q.push("g2", item(9)).await.unwrap();
    assert!(!holds_marker(&every_byte(&server)), "a plaintext in Redis");

    let peeked = q.peek("g1", 10).await.unwrap();
    assert_eq!(peeked.len(), 6);
    assert!(peeked.iter().all(|p| p.unreadable.is_none()));
    assert_eq!(peeked[0].item, item(0));
    assert_eq!(q.pop_batch("g1", 2).await.unwrap(), vec![item(0), item(1)]);
    let mut seen = Vec::new();
    while let Some(b) = q.next_batch(10).await.unwrap() {
        seen.extend(b.items);
    }
    seen.sort();
    assert_eq!(seen, (2..6).chain([9]).map(item).collect::<Vec<_>>());
    let stats = q.stats().await.unwrap();
    assert_eq!((stats.delivered, stats.unreadable), (7, 0));

    // The scan does see a clear item: the same item on a queue without encryption.
    capped(&server, &unique("clear"), None)
        .push("g", item(0))
        .await
        .unwrap();
    assert!(holds_marker(&every_byte(&server)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn items_a_consumer_cannot_open_are_kept_unreadable_naming_the_key_not_lost() {
    let server = RedisServer::start();
    let name = unique("cenc");
    let producer = capped(&server, &name, Some(ring("k9", &[("k9", 9)])));
    let clear = capped(&server, &name, None);
    clear.push("g", b"clear-before".to_vec()).await.unwrap();
    producer.push("g", item(1)).await.unwrap();
    producer.push("g", item(2)).await.unwrap();
    clear.push("g", b"clear-after".to_vec()).await.unwrap();

    // Without k9: peek names the key and shows the sealed bytes.
    let lacking = capped(&server, &name, Some(ring("k1", &[("k1", 1)])));
    let peeked = lacking.peek("g", 10).await.unwrap();
    assert_eq!(peeked[0].item, b"clear-before");
    let why = peeked[1].unreadable.as_deref().unwrap();
    assert!(why.contains("\"k9\""), "{why}");
    assert_eq!(
        tideq::crypt::sealed_key_id(&peeked[1].item).as_deref(),
        Some("k9")
    );

    // The pop delivers the readable items only; the others are kept, naming k9.
    let got = lacking.pop_batch("g", 10).await.unwrap();
    assert_eq!(got, vec![b"clear-before".to_vec(), b"clear-after".to_vec()]);
    let kept = lacking.unreadable(10).await.unwrap();
    assert_eq!(kept.len(), 2);
    for u in &kept {
        assert_eq!((u.group.as_str(), u.key_id.as_str()), ("g", "k9"));
        assert!(u.error.contains("\"k9\""), "{}", u.error);
        assert_eq!(tideq::crypt::sealed_key_id(&u.item).as_deref(), Some("k9"));
    }
    let stats = lacking.stats().await.unwrap();
    assert_eq!((stats.delivered, stats.unreadable), (2, 2));
    assert!(!holds_marker(&every_byte(&server)));

    // A wrong key under the right id and a handle without encryption: kept too, never garbage.
    producer.push("g", item(3)).await.unwrap();
    let impostor = capped(&server, &name, Some(ring("k9", &[("k9", 8)])));
    assert!(impostor.next_batch(10).await.unwrap().is_none());
    producer.push("g", item(4)).await.unwrap();
    assert!(clear.pop_batch("g", 10).await.unwrap().is_empty());
    let kept = clear.unreadable(10).await.unwrap();
    assert_eq!(kept.len(), 4);
    assert!(kept[0].error.contains("no encryption"), "{}", kept[0].error);
    assert!(
        kept[1].error.contains("does not match"),
        "{}",
        kept[1].error
    );

    // Nothing comes back to a handle that still cannot open them.
    assert_eq!(lacking.requeue_unreadable().await.unwrap(), 0);
    assert_eq!(clear.requeue_unreadable().await.unwrap(), 0);
    // With k9 restored: all four are back in their group, in push order, and pop in clear.
    let restored = capped(&server, &name, Some(ring("k1", &[("k1", 1), ("k9", 9)])));
    assert_eq!(restored.requeue_unreadable().await.unwrap(), 4);
    assert_eq!(restored.requeue_unreadable().await.unwrap(), 0, "once only");
    assert!(restored.unreadable(10).await.unwrap().is_empty());
    assert_eq!(
        restored.pop_batch("g", 10).await.unwrap(),
        (1..5).map(item).collect::<Vec<_>>()
    );
    let stats = restored.stats().await.unwrap();
    assert_eq!(
        (stats.unreadable, stats.requeued, stats.delivered),
        (4, 4, 6)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_unreadable_list_keeps_the_newest_1000() {
    let server = RedisServer::start();
    let name = unique("cenc");
    let producer = capped(&server, &name, Some(ring("k9", &[("k9", 9)])));
    let n = MAX_UNREADABLE + 200;
    let items: Vec<(&str, Vec<u8>)> = (0..n).map(|i| ("g", item(i))).collect();
    producer.push_many(&items).await.unwrap();
    let lacking = capped(&server, &name, Some(ring("k1", &[("k1", 1)])));
    for _ in 0..(n / 300 + 1) {
        assert!(lacking.pop_batch("g", 300).await.unwrap().is_empty());
    }
    let mut c = server.conn();
    let keys: Vec<String> = redis::cmd("KEYS").arg("*unreadable").query(&mut c).unwrap();
    assert_eq!(keys.len(), 1);
    let len: usize = redis::cmd("LLEN").arg(&keys[0]).query(&mut c).unwrap();
    assert_eq!(len, MAX_UNREADABLE);
    assert_eq!(lacking.stats().await.unwrap().unreadable, n as u64);
    // The newest kept: requeued with the key, they are the last 1,000 pushed, in order.
    let restored = capped(&server, &name, Some(ring("k9", &[("k9", 9)])));
    assert_eq!(
        restored.requeue_unreadable().await.unwrap(),
        MAX_UNREADABLE as u64
    );
    let back = restored.pop_batch("g", n).await.unwrap();
    assert_eq!(back, (200..n).map(item).collect::<Vec<_>>());
    let err = restored.unreadable(MAX_UNREADABLE + 1).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert_eq!(
        restored.unreadable(0).await.unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn items_sealed_under_k1_still_pop_after_k2_becomes_current() {
    let server = RedisServer::start();
    let name = unique("cenc");
    let before = capped(&server, &name, Some(ring("k1", &[("k1", 1)])));
    before.push("g", item(1)).await.unwrap();
    let after = capped(&server, &name, Some(ring("k2", &[("k1", 1), ("k2", 2)])));
    after.push("g", item(2)).await.unwrap();
    let peeked = after.peek("g", 10).await.unwrap();
    let ids: Vec<_> = peeked.iter().map(|p| p.unreadable.is_none()).collect();
    assert_eq!(ids, vec![true, true]);
    assert_eq!(
        after.pop_batch("g", 10).await.unwrap(),
        vec![item(1), item(2)]
    );
    assert!(after.unreadable(10).await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_key_config_is_refused_before_anything_is_written() {
    let server = RedisServer::start();
    let mut c = server.conn();
    for err in [
        Encryption::keyring("k1", [("k1", [0u8; 16])]).unwrap_err(),
        Encryption::keyring("k2", [("k1", [0u8; 32])]).unwrap_err(),
        Encryption::keyring("bad id", [("bad id", [0u8; 32])]).unwrap_err(),
        Encryption::with_provider("t2", |_| None).unwrap_err(),
    ] {
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    }
    let dbsize: u64 = redis::cmd("DBSIZE").query(&mut c).unwrap();
    assert_eq!(dbsize, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn items_pushed_in_clear_before_encryption_still_pop() {
    let server = RedisServer::start();
    let name = unique("cenc");
    capped(&server, &name, None)
        .push("g", b"old".to_vec())
        .await
        .unwrap();
    let q = capped(&server, &name, Some(ring("k1", &[("k1", 1)])));
    q.push("g", b"new".to_vec()).await.unwrap();
    assert_eq!(q.peek("g", 10).await.unwrap()[0].item, b"old");
    assert_eq!(
        q.next_batch(10).await.unwrap().unwrap().items,
        vec![b"old".to_vec(), b"new".to_vec()]
    );
    assert_eq!(q.stats().await.unwrap().unreadable, 0);
}

/// Cost: without encryption a push and a pop make the same calls as before (SLOWLOG-free, one
/// script call each); printed for the record with the sealed run's numbers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pushes_and_pops_without_encryption_make_no_extra_calls() {
    let server = RedisServer::start();
    let mut c = server.conn();
    let n = 100_000;
    let mut evalsha_by_run = Vec::new();
    // Scripts loaded first, so no run counts an EVALSHA refused with NOSCRIPT.
    let warm = capped(&server, &unique("warm"), None);
    warm.push("g", b"x".to_vec()).await.unwrap();
    warm.pop_batch("g", 1).await.unwrap();
    for (label, enc) in [("clear", None), ("sealed", Some(ring("k1", &[("k1", 1)])))] {
        let q = capped(&server, &unique(label), enc);
        let items: Vec<(String, Vec<u8>)> = (0..n)
            .map(|i| (format!("g{}", i % 100), vec![b'x'; 64]))
            .collect();
        let _: () = redis::cmd("CONFIG").arg("RESETSTAT").query(&mut c).unwrap();
        let t = std::time::Instant::now();
        for chunk in items.chunks(10_000) {
            q.push_many(chunk).await.unwrap();
        }
        let pushed = t.elapsed();
        let t = std::time::Instant::now();
        let mut popped = 0;
        while let Some(b) = q.next_batch(1000).await.unwrap() {
            popped += b.items.len();
        }
        let pops = t.elapsed();
        assert_eq!(popped, n);
        let info: String = redis::cmd("INFO")
            .arg("commandstats")
            .query(&mut c)
            .unwrap();
        let calls = |cmd: &str| -> u64 {
            info.lines()
                .find(|l| l.starts_with(&format!("cmdstat_{cmd}:")))
                .and_then(|l| l.split("calls=").nth(1))
                .and_then(|r| r.split(',').next())
                .and_then(|v| v.parse().ok())
                .unwrap_or(0)
        };
        let evalsha = calls("evalsha");
        println!(
            "{label}: {n} pushes in {pushed:?}, pops in {pops:?}; EVALSHA calls {evalsha}, \
             LPUSH {}",
            calls("lpush")
        );
        // Only the push and pop scripts ran: the unreadable list was never written.
        assert_eq!(calls("lpush"), 0);
        assert_eq!(q.stats().await.unwrap().unreadable, 0);
        evalsha_by_run.push(evalsha);
    }
    assert_eq!(
        evalsha_by_run[0], evalsha_by_run[1],
        "sealing adds no script call"
    );
}

/// A sharded queue: each shard keeps its own unreadable list; a consumer delivers only what it
/// can open, and every kept item comes back to its group.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consumer_on_a_sharded_queue_delivers_the_readable_and_keeps_the_rest_per_shard() {
    let server = RedisServer::start();
    let name = unique("cenc");
    let client = Client::open(&server.url).unwrap();
    let sharded = |enc: Option<Encryption>| {
        let opts = CappedOptions {
            encryption: enc,
            ..Default::default()
        };
        CappedQueue::sharded(&client, &name, 3, opts).unwrap()
    };
    let producer = sharded(Some(ring("k9", &[("k9", 9)])));
    let clear = sharded(None);
    let groups: Vec<String> = (0..12).map(|i| format!("g{i}")).collect();
    for g in &groups {
        producer.push(g, item(1)).await.unwrap();
        clear.push(g, b"clear".to_vec()).await.unwrap();
    }
    let lacking = sharded(Some(ring("k1", &[("k1", 1)])));
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    let c = lacking
        .consume(
            tideq::ConsumerOptions {
                stop_when_empty: true,
                ..Default::default()
            },
            move |b: tideq::Batch| {
                log.lock().unwrap().extend(b.items);
                std::future::ready(Ok::<(), String>(()))
            },
        )
        .unwrap();
    c.join().await;
    assert_eq!(*seen.lock().unwrap(), vec![b"clear".to_vec(); 12]);
    let kept = lacking.unreadable(MAX_UNREADABLE).await.unwrap();
    let mut kept_groups: Vec<String> = kept.iter().map(|u| u.group.clone()).collect();
    kept_groups.sort();
    let mut want = groups.clone();
    want.sort();
    assert_eq!(kept_groups, want);
    let mut c = server.conn();
    let lists: Vec<String> = redis::cmd("KEYS").arg("*unreadable").query(&mut c).unwrap();
    assert!(lists.len() > 1, "one list per shard: {lists:?}");
    assert_eq!(producer.requeue_unreadable().await.unwrap(), 12);
    for g in &groups {
        assert_eq!(producer.pop_batch(g, 10).await.unwrap(), vec![item(1)]);
    }
}
