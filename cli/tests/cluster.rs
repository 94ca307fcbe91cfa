//! The `tideq` binary against a local 6-node Redis Cluster (tests/cluster/redis-cluster.sh): the
//! operator's commands and the exporter see a queue sharded over the masters as the library does.

mod common;

use std::time::Duration;

use common::*;
use tideq::{EnqueueOptions, JobState, Queue, QueueOptions};

#[test]
fn on_a_cluster_the_commands_and_the_exporter_see_a_sharded_queue_as_the_library_does() {
    let cluster = Cluster::start();
    let rt = rt();
    let client = cluster.client();
    let q = Queue::sharded(&client, "orders", 3, QueueOptions::default()).unwrap();
    rt.block_on(async {
        for i in 0..30 {
            let opts = EnqueueOptions {
                id: Some(format!("o{i}")),
                ..Default::default()
            };
            q.enqueue(b"x", opts).await.unwrap();
        }
        // Two dead letters, on whichever shards their ids fall.
        for id in ["d1", "d2"] {
            let opts = EnqueueOptions {
                id: Some(id.into()),
                max_attempts: Some(1),
                delay: Some(Duration::from_millis(1)),
                ..Default::default()
            };
            q.enqueue(b"doomed", opts).await.unwrap();
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        // Lease everything, fail the doomed two, give the rest back by completing nothing: they
        // stay active until their leases expire, so ack them to leave the ready count known.
        let jobs = q.lease_jobs(100, Duration::from_secs(60)).await.unwrap();
        for job in &jobs {
            if job.id.starts_with('d') {
                q.fail(job, "boom").await.unwrap();
            } else {
                q.complete(job).await.unwrap();
            }
        }
        for i in 30..40 {
            q.enqueue(format!("{i}"), EnqueueOptions::default())
                .await
                .unwrap();
        }
        let capped =
            tideq::CappedQueue::new(&client, "ticks", tideq::CappedOptions::default()).unwrap();
        capped.push("g", b"1").await.unwrap();
    });
    let stats = rt.block_on(q.stats()).unwrap();
    assert_eq!((stats.ready, stats.dead, stats.completed), (10, 2, 30));

    let queues = json(cluster.tideq(&["queues", "--json"]));
    let list = queues.as_array().unwrap();
    let orders = list.iter().find(|q| q["name"] == "orders").expect("orders");
    assert_eq!(orders["shards"], 3, "{queues}");
    assert!(list.iter().any(|q| q["name"] == "ticks"), "{queues}");

    let s = json(cluster.tideq(&["--shards", "3", "stats", "orders", "--json"]));
    assert_eq!(s["ready"], 10, "{s}");
    // Without --shards: the count the queue recorded (on whichever master holds its name's slot).
    assert_eq!(
        json(cluster.tideq(&["stats", "orders", "--json"]))["ready"],
        10
    );
    let out = cluster.tideq(&["--shards", "2", "stats", "orders"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(s["dead"], 2, "{s}");
    assert_eq!(s["completed"], 30, "{s}");

    let dead = json(cluster.tideq(&["--shards", "3", "jobs", "orders", "dead", "--json"]));
    let mut ids: Vec<&str> = dead["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["id"].as_str().unwrap())
        .collect();
    ids.sort();
    assert_eq!(ids, ["d1", "d2"]);

    let out = cluster.tideq(&["--shards", "3", "dead", "orders", "requeue", "d2"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let info = rt.block_on(q.get("d2")).unwrap().unwrap();
    assert_eq!(info.state, JobState::Ready);

    let out = cluster.tideq(&["--shards", "3", "pause", "orders"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(rt.block_on(q.is_paused()).unwrap());
    let out = cluster.tideq(&["--shards", "3", "resume", "orders"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(!rt.block_on(q.is_paused()).unwrap());

    // The exporter discovers both queues (with their shard counts) and reports the sharded one's
    // counts summed over its shards.
    let exporter = Exporter::start(&["--cluster", &cluster.nodes[0]], &[]);
    let text = exporter.scrape_when(|t| t.contains("orders"));
    let stats = rt.block_on(q.stats()).unwrap();
    let value = |name: &str| series(&text, name);
    assert_eq!(
        value("tideq_jobs{queue=\"orders\",state=\"ready\"}"),
        Some(stats.ready as f64),
        "{text}"
    );
    assert_eq!(
        value("tideq_jobs{queue=\"orders\",state=\"dead\"}"),
        Some(stats.dead as f64),
        "{text}"
    );
    assert_eq!(
        value("tideq_capped_pushed_total{queue=\"ticks\"}"),
        Some(1.0),
        "{text}"
    );
    assert_eq!(value("tideq_exporter_refresh_ok"), Some(1.0), "{text}");
}
