//! The capped grouped queue's set-up: scripts reloaded after SCRIPT FLUSH, bad input refused with
//! nothing written, connection and ACL errors that never show the password, keys under the prefix
//! and one hash tag, sharded queues. Against a real redis-server.

mod common;

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use common::capped::*;
use common::{unique, RedisServer};
use tideq::{CappedOptions, CappedQueue, Client, Config};

fn dbsize(server: &RedisServer) -> u64 {
    redis::cmd("DBSIZE").query(&mut server.conn()).unwrap()
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
