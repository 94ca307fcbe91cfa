//! Operators' tools read a queue's shard count from the record its first writer left in Redis,
//! not from the shards that happen to hold data (issue 40, items 17 and 26): `tideq queues`,
//! `tideq stats`, `tideq capped ... stats`, the exporter and the dashboard; a `--shards` other
//! than the recorded one is refused.

mod common;

use std::time::Duration;

use common::dashboard::*;
use common::*;
use tideq::{CappedOptions, CappedQueue, Client, EnqueueOptions, Every, Queue, QueueOptions};

/// Ids that land on the given shards of 4 (`tideq`'s shard of an id: CRC16 of it, modulo).
fn ids_on(shards: &[usize], n: usize) -> Vec<String> {
    (0..)
        .map(|i| format!("j{i}"))
        .filter(|id| shards.contains(&(tideq::keys::key_slot(id) as usize % 4)))
        .take(n)
        .collect()
}

#[test]
fn operators_tools_read_the_recorded_shard_count_not_the_shards_holding_data() {
    let rt = rt();
    let redis = Redis::start();
    let client = Client::open(&redis.url).unwrap();
    // shards=4 and 2 jobs: 2 of its 4 shards hold data.
    let wide = Queue::sharded(&client, "wide", 4, QueueOptions::default()).unwrap();
    rt.block_on(async {
        for id in ids_on(&[0], 1).into_iter().chain(ids_on(&[2], 1)) {
            wide.enqueue(b"x", with_id(&id)).await.unwrap();
        }
        let ticks = CappedQueue::sharded(&client, "ticks", 4, CappedOptions::default()).unwrap();
        for g in ["a", "b", "c"] {
            ticks.push(g, b"1").await.unwrap();
        }
    });
    let queues = json(redis.tideq(&["queues", "--json"]));
    let shards = |kind: &str, name: &str| {
        queues
            .as_array()
            .unwrap()
            .iter()
            .find(|q| q["kind"] == kind && q["name"] == name)
            .unwrap_or_else(|| panic!("{name}: {queues}"))["shards"]
            .clone()
    };
    assert_eq!(shards("jobs", "wide"), 4, "{queues}");
    assert_eq!(shards("capped", "ticks"), 4, "{queues}");
    // No --shards: the recorded count (before: "add --shards 2", then ready 1 of 2).
    let s = json(redis.tideq(&["stats", "wide", "--json"]));
    assert_eq!(
        (s["ready"].as_u64(), s["enqueued"].as_u64()),
        (Some(2), Some(2))
    );
    let jobs = json(redis.tideq(&["jobs", "wide", "ready", "--json"]));
    assert_eq!(jobs["jobs"].as_array().unwrap().len(), 2, "{jobs}");
    // Another count is refused, naming the recorded one.
    for bad in ["1", "2"] {
        let out = redis.tideq(&["--shards", bad, "stats", "wide"]);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(stderr(&out).contains("has 4 shard(s)"), "{}", stderr(&out));
    }
    assert_eq!(
        json(redis.tideq(&["--shards", "4", "stats", "wide", "--json"]))["ready"],
        2
    );
    // A sharded capped queue (before: zeros, exit 0).
    let c = json(redis.tideq(&["capped", "ticks", "stats", "--json"]));
    assert_eq!(
        (c["pushed"].as_u64(), c["groups"].as_u64()),
        (Some(3), Some(3)),
        "{c}"
    );
    let out = redis.tideq(&["--shards", "1", "capped", "ticks", "stats"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let out = redis.tideq(&["capped", "nosuch", "stats"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stderr(&out).contains("no capped queue"), "{}", stderr(&out));
    let out = redis.tideq(&["capped", "wide", "stats"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stderr(&out).contains("is a job queue"), "{}", stderr(&out));

    // The exporter (every queue found, and one named without --shards).
    for args in [&[][..], &["--queue", "wide"][..]] {
        let e = Exporter::start(&["--url", &redis.url], args);
        let text = e.scrape_when(|t| t.contains("wide"));
        assert_eq!(
            series(&text, "tideq_jobs{queue=\"wide\",state=\"ready\"}"),
            Some(2.0),
            "{text}"
        );
    }
    // The dashboard.
    let d = Dashboard::start(&["--url", &redis.url], &[], &[]);
    let e = d.entry("jobs", "wide");
    assert_eq!(
        (e["shards"].as_u64(), e["stats"]["ready"].as_u64()),
        (Some(4), Some(2)),
        "{e}"
    );
    let e = d.entry("capped", "ticks");
    assert_eq!(e["stats"]["pushed"], 3, "{e}");
}

#[test]
fn a_queue_with_only_schedules_is_found_with_all_its_schedules_and_jobs() {
    let rt = rt();
    let redis = Redis::start();
    let client = Client::open(&redis.url).unwrap();
    let d = Dashboard::start(&["--url", &redis.url], &[], &[]);
    // A queue that has only schedules (no job yet): found at once by its address (before: 404
    // until its first job).
    let only = Queue::new(&client, "only-schedules", QueueOptions::default()).unwrap();
    rt.block_on(only.upsert_schedule(
        "nightly",
        Every::cron("0 3 * * *"),
        b"x",
        Default::default(),
    ))
    .unwrap();
    let v = d.get("/api/queues/only-schedules").json();
    assert_eq!(v["schedules"].as_array().unwrap().len(), 1, "{v}");
    assert_eq!(
        ok(redis.tideq(&["schedules", "only-schedules"]))
            .lines()
            .count(),
        2
    );
    let q = json(redis.tideq(&["queues", "--json"]));
    assert!(
        q.as_array()
            .unwrap()
            .iter()
            .any(|q| q["name"] == "only-schedules"),
        "{q}"
    );

    // A 4-shard queue whose jobs sit on 2 shards and whose schedules sit on 3: every schedule
    // and every job counted (before: 22 enqueued of 469, and 1 schedule of 4).
    let reports = Queue::sharded(&client, "reports", 4, QueueOptions::default()).unwrap();
    rt.block_on(async {
        let jobs: Vec<(&[u8], EnqueueOptions)> = ids_on(&[1, 3], 469)
            .into_iter()
            .map(|id| (&b"r"[..], with_id(&id)))
            .collect();
        reports.enqueue_many(&jobs).await.unwrap();
        for name in ["a", "b", "c", "d"] {
            reports
                .upsert_schedule(
                    name,
                    Every::interval(Duration::from_secs(3600)),
                    b"s",
                    Default::default(),
                )
                .await
                .unwrap();
        }
    });
    let v = d.get("/api/queues/reports").json();
    assert_eq!(v["shards"], 4, "{v}");
    assert_eq!(v["stats"]["enqueued"], 469, "{v}");
    assert_eq!(v["schedules"].as_array().unwrap().len(), 4, "{v}");
    let s = json(redis.tideq(&["stats", "reports", "--json"]));
    assert_eq!(s["enqueued"], 469, "{s}");
}
