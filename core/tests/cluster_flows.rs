//! Flows on a real local Redis Cluster (6 nodes: 3 masters, 3 replicas), their children on a
//! queue sharded over the three masters: a flow large enough to be written in several calls
//! (ids looked up per shard, a staged children's list, held writes, release), run, cancelled,
//! and a crashed writer's held jobs settled. Any key outside a call's hash slot fails with
//! CROSSSLOT.

mod common;

use std::time::Duration;

use common::jobs::drained;
use common::{unique, RedisCluster};
use serde_json::{json, Value};
use tideq::{Client, Config, FlowJob, Job, Queue, QueueOptions, Tasks};

fn client(cluster: &RedisCluster) -> Client {
    Client::new(Config::cluster(cluster.nodes.clone())).unwrap()
}

/// A connection to the master holding `key`.
fn conn_for(cluster: &RedisCluster, key: &str) -> redis::Connection {
    let slot: u16 = redis::cmd("CLUSTER")
        .arg("KEYSLOT")
        .arg(key)
        .query(&mut cluster.node(0))
        .unwrap();
    let master = cluster.master_of_slot(slot);
    let port: u16 = master.rsplit(':').next().unwrap().parse().unwrap();
    cluster.conn_to(port)
}

async fn run(q: &Queue, tasks: Tasks) -> u64 {
    let w = q.work_tasks(drained(), tasks).unwrap();
    tokio::time::timeout(Duration::from_secs(120), w.join())
        .await
        .expect("the worker drains")
        .completed
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_flow_over_a_sharded_queue_is_written_run_cancelled_and_settled_on_a_cluster() {
    let cluster = RedisCluster::start();
    let c = client(&cluster);
    let roots = Queue::new(&c, &unique("roots"), QueueOptions::default()).unwrap();
    let parts = Queue::sharded(&c, &unique("parts"), 3, QueueOptions::default()).unwrap();
    let n = 1_200;
    let kids = |n: i64| -> Vec<FlowJob> {
        (0..n)
            .map(|i| FlowJob::task("double", &i).unwrap().on(&parts))
            .collect()
    };
    let id = |s: &str| tideq::EnqueueOptions {
        id: Some(s.into()),
        ..Default::default()
    };
    // A chord: written, run, its callback reading every result in order.
    let chord = FlowJob::chord(kids(n), FlowJob::step("sum").options(id("sum"))).unwrap();
    roots.enqueue_flow(chord).await.unwrap();
    let double = || {
        Tasks::new().task("double", |i: i64, _job: Job| async move {
            Ok::<Value, String>(json!(2 * i))
        })
    };
    assert_eq!(run(&parts, double()).await, n as u64);
    let sum = Tasks::new().task("sum", |all: Vec<i64>, _job: Job| async move {
        let in_order = all.iter().enumerate().all(|(i, v)| *v == 2 * i as i64);
        Ok::<Value, String>(json!({ "count": all.len(), "in_order": in_order }))
    });
    assert_eq!(run(&roots, sum).await, 1);
    let done = roots.get("sum").await.unwrap().unwrap();
    let result: Value = serde_json::from_slice(done.result.as_deref().unwrap()).unwrap();
    assert_eq!(result, json!({ "count": n, "in_order": true }));

    // A flow cancelled: its children on every shard go with it.
    let big = FlowJob::new(b"big".to_vec())
        .options(id("big"))
        .children(kids(n));
    roots.enqueue_flow(big).await.unwrap();
    assert_eq!(parts.stats().await.unwrap().ready, n as u64);
    roots.cancel("big").await.unwrap();
    let s = parts.stats().await.unwrap();
    assert_eq!((s.ready, s.cancelled), (0, n as u64));

    // A writer that died before the root: its held jobs, on every shard, are dropped.
    let lost = FlowJob::new(b"lost".to_vec())
        .options(id("lost"))
        .children(kids(n));
    roots.enqueue_flow(lost).await.unwrap();
    let list = format!("tideq:{{{}}}:fl:lost", roots.name());
    let refs: Vec<String> = redis::cmd("LRANGE")
        .arg(&list)
        .arg(0)
        .arg(-1)
        .query(&mut conn_for(&cluster, &list))
        .unwrap();
    let root = format!("0\tlost\ttideq:{{{}}}:", roots.name());
    let mut by_base: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for r in &refs {
        let mut parts = r.splitn(3, '\t');
        let (base, id) = (parts.next().unwrap(), parts.next().unwrap());
        by_base.entry(base.into()).or_default().push(id.into());
    }
    assert_eq!(by_base.len(), 3, "the children are on every shard");
    for (base, ids) in &by_base {
        let mut conn = conn_for(&cluster, &format!("{base}fhold"));
        let mut hold = redis::cmd("ZADD");
        hold.arg(format!("{base}fhold"));
        let mut roots_of = redis::cmd("HSET");
        roots_of.arg(format!("{base}froot"));
        for id in ids {
            hold.arg(1).arg(id);
            roots_of.arg(id).arg(&root);
        }
        let () = redis::pipe()
            .del(format!("{base}ready"))
            .add_command(hold)
            .add_command(roots_of)
            .query(&mut conn)
            .unwrap();
    }
    let meta = format!("tideq:{{{}}}:meta", roots.name());
    let _: i64 = redis::cmd("HDEL")
        .arg(&meta)
        .arg("lost")
        .query(&mut conn_for(&cluster, &meta))
        .unwrap();
    // A worker that finds nothing else to do may stop before its settling is done: run again.
    for _ in 0..10 {
        assert_eq!(run(&parts, double()).await, 0, "none of them ran");
        if parts.stats().await.unwrap().enqueued == 2 * n as u64 {
            break;
        }
    }
    let s = parts.stats().await.unwrap();
    assert_eq!((s.ready, s.enqueued), (0, 2 * n as u64));
}
