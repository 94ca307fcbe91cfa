//! `tideq queues` (each queue's counts, latency and workers; both kinds under the prefix) and a
//! mistyped queue name (exit 3, the likely queue named, nothing written), against a private
//! `redis-server`.

mod common;

use common::*;
use tideq::{Client, EnqueueOptions};

/// `tideq queues` listed names only: operators asked, as of `rq info`, for each queue's counts,
/// latency and workers at a glance.
#[test]
fn queues_shows_each_queues_counts_latency_and_workers_at_a_glance() {
    let redis = Redis::start();
    let rt = rt();
    let q = redis.queue("glance");
    rt.block_on(async {
        for _ in 0..3 {
            q.enqueue(b"x", Default::default()).await.unwrap();
        }
        dead_job(&q, "gone").await;
        q.pause().await.unwrap();
    });
    let v = json(redis.tideq(&["queues", "--json"]));
    let line = &v[0];
    assert_eq!(
        (
            &line["name"],
            &line["ready"],
            &line["dead"],
            &line["paused"]
        ),
        (&"glance".into(), &0.into(), &1.into(), &true.into()),
        "{v}"
    );
    assert!(
        line["latency_ms"].is_u64() && line["workers"].is_u64(),
        "{v}"
    );
    let text = ok(redis.tideq(&["queues"]));
    // The Redis server's line, then the table.
    assert!(text.starts_with("redis 7"), "{text}");
    let header = text.lines().find(|l| l.starts_with("KIND")).unwrap();
    for col in [
        "READY", "DELAYED", "ACTIVE", "DEAD", "WAITING", "LATENCY", "WORKERS",
    ] {
        assert!(header.contains(col), "{text}");
    }
    assert!(text.contains("paused"), "{text}");
}

#[test]
fn queues_lists_both_kinds_under_the_prefix() {
    let redis = Redis::start();
    let rt = rt();
    rt.block_on(async {
        let q = redis.queue("orders");
        q.enqueue(b"x", Default::default()).await.unwrap();
        let client = Client::open(&redis.url).unwrap();
        let capped =
            tideq::CappedQueue::new(&client, "prices", tideq::CappedOptions::default()).unwrap();
        capped.push("g", b"1").await.unwrap();
    });
    let v = json(redis.tideq(&["queues", "--json"]));
    let of = |name: &str| {
        v.as_array()
            .unwrap()
            .iter()
            .find(|q| q["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{v}"))
    };
    let (orders, prices) = (of("orders"), of("prices"));
    assert_eq!(
        (&orders["kind"], &orders["shards"], &orders["ready"]),
        (&"jobs".into(), &1.into(), &1.into()),
        "{v}"
    );
    assert_eq!(
        (&prices["kind"], &prices["groups"], &prices["pushed"]),
        (&"capped".into(), &1.into(), &1.into()),
        "{v}"
    );
    let text = ok(redis.tideq(&["queues"]));
    assert!(text.contains("orders") && text.contains("capped"), "{text}");
    assert!(ok(redis.tideq(&["--prefix", "nobody", "queues"])).contains("(no queues)"));
}

/// `tideq pause nosuch` printed `paused "nosuch"`, exited 0 and created keys (after which `stats`
/// showed zeros); `history`, `schedules`, `workers` of an unknown queue exited 0. Each now exits
/// 3, names the queue it may have meant, and writes nothing.
#[test]
fn a_typoed_queue_name_exits_3_names_the_likely_queue_and_writes_nothing() {
    let redis = Redis::start();
    rt().block_on(
        redis
            .queue("emails")
            .enqueue(b"x", EnqueueOptions::default()),
    )
    .unwrap();
    let keys = redis_cli(&redis.url, &["DBSIZE"]);
    let commands: [&[&str]; 12] = [
        &["pause", "emials"],
        &["resume", "emials"],
        &["pause", "emials", "--group", "g"],
        &["resume", "emials", "--group", "g"],
        &["limits", "emials"],
        &["group", "emials", "g"],
        &["groups", "emials"],
        &["history", "emials"],
        &["schedules", "emials"],
        &["workers", "emials"],
        &["events", "emials", "--idle", "0.1"],
        &["stats", "emials"],
    ];
    for args in commands {
        let out = redis.tideq(args);
        assert_eq!(out.status.code(), Some(3), "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("\"emials\"") && stderr(&out).contains("emails"),
            "{args:?}: {}",
            stderr(&out)
        );
        assert_eq!(
            redis_cli(&redis.url, &["DBSIZE"]),
            keys,
            "{args:?} wrote keys"
        );
    }
    let out = redis.tideq(&["pause", "emials"]);
    assert!(
        stderr(&out).contains("did you mean \"emails\"?"),
        "{}",
        stderr(&out)
    );
    // The queue itself still answers.
    ok(redis.tideq(&["pause", "emails"]));
    ok(redis.tideq(&["resume", "emails"]));
}
