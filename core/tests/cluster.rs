//! Both queue kinds on a real local Redis Cluster (6 nodes: 3 masters, 3 replicas).

mod common;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{unique, RedisCluster};
use tideq::{
    Backoff, Batch, CappedOptions, CappedQueue, Client, Config, ConsumerOptions, EnqueueOptions,
    Job, JobState, Queue, QueueOptions, WorkerOptions,
};

fn client(cluster: &RedisCluster) -> Client {
    Client::new(Config::cluster(cluster.nodes.clone())).unwrap()
}

/// Runs every script (and every plain command) of both queue kinds on the cluster: any key outside
/// the queue's hash tag would fail with CROSSSLOT.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_operation_of_both_queue_kinds_runs_on_the_cluster_without_crossslot() {
    let cluster = RedisCluster::start();
    let c = client(&cluster);

    let capped = CappedQueue::new(
        &c,
        &unique("cc"),
        CappedOptions {
            capacity: 5,
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(capped.push("g1", "a").await.unwrap(), 0);
    let many: Vec<(String, String)> = (0..2500)
        .map(|i| (format!("g{}", i % 7), format!("{i}")))
        .collect();
    capped.push_many(&many).await.unwrap();
    assert_eq!(capped.len("g1").await.unwrap(), 5);
    assert_eq!(capped.pop_batch("g1", 2).await.unwrap().len(), 2);
    assert!(capped.next_batch(10).await.unwrap().is_some());
    assert!(!capped.groups().await.unwrap().is_empty());
    assert!(capped.stats().await.unwrap().pushed >= 2501);

    let q = Queue::new(
        &c,
        &unique("cj"),
        QueueOptions {
            backoff: Backoff::fixed(10),
            max_attempts: 2,
            ..Default::default()
        },
    )
    .unwrap();
    let jobs: Vec<(Vec<u8>, EnqueueOptions)> = (0..1200)
        .map(|i| {
            (
                vec![1],
                EnqueueOptions {
                    id: Some(format!("j{i}")),
                    ..Default::default()
                },
            )
        })
        .collect();
    q.enqueue_many(&jobs).await.unwrap();
    q.enqueue(
        b"d",
        EnqueueOptions {
            id: Some("later".into()),
            delay: Some(Duration::from_secs(60)),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    q.cancel("later").await.unwrap();
    q.enqueue(
        b"bad",
        EnqueueOptions {
            id: Some("bad".into()),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let w = q
        .work(
            WorkerOptions {
                stop_when_drained: true,
                lease: Duration::from_millis(300),
                ..Default::default()
            },
            |job: Job| async move {
                if job.id == "bad" {
                    Err("no".to_string())
                } else {
                    tokio::time::sleep(Duration::from_millis(if job.id == "j0" { 500 } else { 0 }))
                        .await; // exercises extend
                    Ok(())
                }
            },
        )
        .unwrap();
    let stats = w.join().await;
    assert_eq!(stats.completed, 1200);
    assert_eq!(q.get("bad").await.unwrap().unwrap().state, JobState::Dead);
    assert_eq!(q.dead_letters(0, 10).await.unwrap().len(), 1);
    q.requeue("bad").await.unwrap();
    assert_eq!(q.get("bad").await.unwrap().unwrap().state, JobState::Ready);
    assert_eq!(q.stats().await.unwrap().ready, 1);
    let w = q
        .work(
            WorkerOptions {
                stop_when_drained: true,
                ..Default::default()
            },
            |_job: Job| async { Err::<(), _>("still no") },
        )
        .unwrap();
    w.join().await;
    assert_eq!(q.purge().await.unwrap(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumers_and_workers_deliver_everything_on_the_cluster() {
    let cluster = RedisCluster::start();
    let c = client(&cluster);
    let capped = CappedQueue::new(
        &c,
        &unique("cc"),
        CappedOptions {
            capacity: 10_000,
            ..Default::default()
        },
    )
    .unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s2 = seen.clone();
    let consumer = capped
        .consume(
            ConsumerOptions {
                concurrency: 4,
                poll_interval: Duration::from_millis(200),
                ..Default::default()
            },
            move |b: Batch| {
                s2.lock().unwrap().extend(b.items);
                async { Ok::<(), String>(()) }
            },
        )
        .unwrap();
    let items: Vec<(String, String)> = (0..3000)
        .map(|i| (format!("g{}", i % 40), format!("{i}")))
        .collect();
    capped.push_many(&items).await.unwrap();
    for _ in 0..200 {
        if seen.lock().unwrap().len() == 3000 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    consumer.shutdown().await;
    let got: HashSet<Vec<u8>> = seen.lock().unwrap().iter().cloned().collect();
    assert_eq!(got.len(), 3000);

    let q = Queue::new(&c, &unique("cj"), QueueOptions::default()).unwrap();
    let done = Arc::new(Mutex::new(HashSet::new()));
    let d2 = done.clone();
    let w = q
        .work(
            WorkerOptions {
                concurrency: 20,
                poll_interval: Duration::from_millis(200),
                ..Default::default()
            },
            move |job: Job| {
                d2.lock().unwrap().insert(job.id.clone());
                async { Ok::<(), String>(()) }
            },
        )
        .unwrap();
    for i in 0..500 {
        let delay = (i % 5 == 0).then(|| Duration::from_millis(200));
        q.enqueue(
            b"x",
            EnqueueOptions {
                id: Some(format!("k{i}")),
                delay,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    }
    for _ in 0..200 {
        if done.lock().unwrap().len() == 500 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let stats = w.shutdown().await;
    assert_eq!(done.lock().unwrap().len(), 500);
    assert_eq!(stats.completed, 500);
}

#[tokio::test]
async fn scripts_are_reloaded_on_every_node_after_script_flush() {
    let cluster = RedisCluster::start();
    let c = client(&cluster);
    let q = Queue::new(&c, &unique("cj"), QueueOptions::default()).unwrap();
    q.enqueue(b"a", EnqueueOptions::default()).await.unwrap();
    for i in 0..cluster.nodes.len() {
        redis::cmd("SCRIPT")
            .arg("FLUSH")
            .exec(&mut cluster.node(i))
            .unwrap();
    }
    let jobs: Vec<(Vec<u8>, EnqueueOptions)> = (0..1500)
        .map(|_| (vec![1], EnqueueOptions::default()))
        .collect();
    q.enqueue_many(&jobs).await.unwrap();
    assert_eq!(common::drain_noop(&q).await, 1501);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_shards_of_one_queue_land_on_three_masters_and_workers_serve_them_all() {
    let cluster = RedisCluster::start();
    let c = client(&cluster);
    let q = Queue::sharded(&c, &unique("sharded"), 3, QueueOptions::default()).unwrap();
    let jobs: Vec<(Vec<u8>, EnqueueOptions)> = (0..300)
        .map(|i| {
            (
                vec![1],
                EnqueueOptions {
                    id: Some(format!("x{i}")),
                    ..Default::default()
                },
            )
        })
        .collect();
    q.enqueue_many(&jobs).await.unwrap();
    // Where each shard's keys live, from the cluster's own slot map.
    let mut masters = HashSet::new();
    let mut raw = cluster.node(0);
    for i in 0..3 {
        let pattern = format!("tideq:{{{}#{i}.*}}:ready", q.name());
        let mut found = Vec::new();
        for n in 0..cluster.nodes.len() {
            let keys: Vec<String> = redis::cmd("KEYS")
                .arg(&pattern)
                .query(&mut cluster.node(n))
                .unwrap();
            found.extend(keys);
        }
        let key = found
            .first()
            .unwrap_or_else(|| panic!("shard {i} has no ready list"));
        let slot: u16 = redis::cmd("CLUSTER")
            .arg("KEYSLOT")
            .arg(key)
            .query(&mut raw)
            .unwrap();
        masters.insert(cluster.master_of_slot(slot));
    }
    assert_eq!(masters.len(), 3, "shards share a master: {masters:?}");

    // An idle worker (30 s poll) is woken by a job landing on any shard.
    let seen = Arc::new(Mutex::new(HashSet::new()));
    let s2 = seen.clone();
    let opts = WorkerOptions {
        concurrency: 10,
        poll_interval: Duration::from_secs(30),
        ..Default::default()
    };
    let w = q
        .work(opts, move |job: Job| {
            s2.lock().unwrap().insert(job.id.clone());
            async { Ok::<(), String>(()) }
        })
        .unwrap();
    for _ in 0..200 {
        if seen.lock().unwrap().len() == 300 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(seen.lock().unwrap().len(), 300);
    tokio::time::sleep(Duration::from_millis(300)).await; // idle now
    for i in 0..6 {
        q.enqueue(
            b"late",
            EnqueueOptions {
                id: Some(format!("late{i}")),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    }
    for _ in 0..200 {
        if seen.lock().unwrap().len() == 306 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        seen.lock().unwrap().len(),
        306,
        "an idle worker missed a wake-up on some shard"
    );
    let stats = w.shutdown().await;
    assert_eq!(stats.completed, 306);
    assert_eq!(q.stats().await.unwrap().completed, 306);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sharded_capped_queue_on_the_cluster_wakes_idle_consumers_on_any_shard() {
    let cluster = RedisCluster::start();
    let c = client(&cluster);
    let q = CappedQueue::sharded(
        &c,
        &unique("shc"),
        3,
        CappedOptions {
            capacity: 1000,
            ..Default::default()
        },
    )
    .unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s2 = seen.clone();
    let opts = ConsumerOptions {
        poll_interval: Duration::from_secs(30),
        concurrency: 2,
        ..Default::default()
    };
    let consumer = q
        .consume(opts, move |b: Batch| {
            s2.lock().unwrap().extend(b.items);
            async { Ok::<(), String>(()) }
        })
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await; // idle, blocked on every shard's wake list
    for g in 0..9 {
        q.push(&format!("game:{g}"), format!("{g}")).await.unwrap();
    }
    for _ in 0..300 {
        if seen.lock().unwrap().len() == 9 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        seen.lock().unwrap().len(),
        9,
        "a shard's wake-up was missed"
    );
    consumer.shutdown().await;
    assert_eq!(q.stats().await.unwrap().delivered, 9);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acl_user_works_on_the_cluster_and_a_wrong_password_is_refused_without_leaking() {
    let cluster = RedisCluster::start();
    for i in 0..cluster.nodes.len() {
        redis::cmd("ACL")
            .arg(&["SETUSER", "app", "on", ">cluster-pass", "~tideq:*", "+@all"])
            .exec(&mut cluster.node(i))
            .unwrap();
    }
    let creds = |pass: &str| {
        Config::cluster(cluster.nodes.clone())
            .with_credentials(Some("app".into()), Some(pass.into()))
    };
    let c = Client::new(creds("cluster-pass")).unwrap();
    let q = Queue::sharded(&c, &unique("acl"), 3, QueueOptions::default()).unwrap();
    q.enqueue(b"x", EnqueueOptions::default()).await.unwrap();
    assert_eq!(common::drain_noop(&q).await, 1);
    let wrong =
        Client::new(creds("wrong-pass").with_connect_timeout(Duration::from_secs(2))).unwrap();
    common::assert_enqueue_refused_without_leaking(&wrong, "wrong-pass").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_queue_kinds_work_on_a_tls_only_cluster() {
    if common::tls_unavailable().is_some() {
        return;
    }
    let certs = common::make_certs();
    let cluster = RedisCluster::start_tls(&certs);
    let ca = std::fs::read(certs.join("ca.pem")).unwrap();
    let c = Client::new(Config::cluster(cluster.nodes.clone()).with_tls_ca(ca)).unwrap();
    let capped = CappedQueue::sharded(&c, &unique("tlsc"), 3, CappedOptions::default()).unwrap();
    let items: Vec<(String, String)> = (0..300)
        .map(|i| (format!("g{}", i % 30), format!("{i}")))
        .collect();
    capped.push_many(&items).await.unwrap();
    let mut got = 0;
    while let Some(b) = capped.next_batch(100).await.unwrap() {
        got += b.items.len();
    }
    assert_eq!(got, 300);
    let q = Queue::sharded(&c, &unique("tlsj"), 3, QueueOptions::default()).unwrap();
    let jobs: Vec<(Vec<u8>, EnqueueOptions)> = (0..300)
        .map(|_| (vec![1], EnqueueOptions::default()))
        .collect();
    q.enqueue_many(&jobs).await.unwrap();
    assert_eq!(common::drain_noop(&q).await, 300);
    let _ = std::fs::remove_dir_all(&certs);
}

/// Queue control on a cluster, with a queue sharded over the three masters: every flow script
/// (keys built per group and per priority in Lua) stays in its shard's slot, each group on one
/// shard keeps its order and its concurrency limit, priorities order, and pause holds everywhere.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn groups_priorities_limits_and_pause_work_on_a_cluster_with_a_sharded_queue() {
    let cluster = RedisCluster::start();
    let c = client(&cluster);
    let q = Queue::sharded(&c, &unique("flow"), 3, QueueOptions::default()).unwrap();
    q.set_limits(tideq::Limits {
        group_concurrency: Some(2),
        rate: Some(tideq::Rate::new(10_000, Duration::from_secs(1))),
        ..Default::default()
    })
    .await
    .unwrap();
    q.pause().await.unwrap();
    let mut jobs = Vec::new();
    for i in 0..120 {
        let group = format!("tenant-{}", i % 6);
        jobs.push((
            format!("{group}:{i}").into_bytes(),
            EnqueueOptions {
                group: Some(group),
                ..Default::default()
            },
        ));
    }
    for i in 0..30 {
        jobs.push((
            format!("p{}:{i}", i % 3 + 1).into_bytes(),
            EnqueueOptions {
                priority: Some(i % 3 + 1),
                ..Default::default()
            },
        ));
    }
    let ids = q.enqueue_many(&jobs).await.unwrap();
    assert!(q.stats().await.unwrap().paused);
    assert_eq!(q.stats().await.unwrap().ready, 150);
    // A grouped job is found (and cancelled) on its group's shard.
    let g7 = &ids[7].id;
    let info = q.get(g7).await.unwrap().unwrap();
    assert_eq!(info.group.as_deref(), Some("tenant-1"));
    q.cancel(g7).await.unwrap();
    assert!(q.get(g7).await.unwrap().is_none());
    let seen: Arc<Mutex<Vec<String>>> = Default::default();
    let running: Arc<Mutex<std::collections::HashMap<String, (u32, u32)>>> = Default::default();
    let (s, r) = (seen.clone(), running.clone());
    let worker = q
        .work(
            WorkerOptions {
                concurrency: 20,
                ..Default::default()
            },
            move |job: Job| {
                let (s, r) = (s.clone(), r.clone());
                async move {
                    let text = String::from_utf8(job.payload).unwrap();
                    let group = text.split(':').next().unwrap().to_string();
                    {
                        let mut r = r.lock().unwrap();
                        let e = r.entry(group.clone()).or_default();
                        e.0 += 1;
                        e.1 = e.1.max(e.0);
                    }
                    s.lock().unwrap().push(text);
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    r.lock().unwrap().get_mut(&group).unwrap().0 -= 1;
                    Ok::<(), String>(())
                }
            },
        )
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(seen.lock().unwrap().is_empty(), "paused");
    q.resume().await.unwrap();
    let ok = tokio::time::timeout(Duration::from_secs(60), async {
        while q.stats().await.unwrap().completed < 149 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(ok.is_ok(), "{:?}", q.stats().await.unwrap());
    worker.shutdown().await;
    let seen = seen.lock().unwrap().clone();
    for g in 0..6 {
        let tenant = format!("tenant-{g}");
        let order: Vec<u32> = seen
            .iter()
            .filter(|t| t.starts_with(&format!("{tenant}:")))
            .map(|t| t.split(':').nth(1).unwrap().parse().unwrap())
            .collect();
        // In order, up to two jobs started at the same time (its limit) swapping places.
        assert_eq!(order.len(), if g == 1 { 19 } else { 20 });
        for i in 2..order.len() {
            assert!(order[i] > order[i - 2], "{tenant} out of order: {order:?}");
        }
        let peak = running.lock().unwrap()[&tenant].1;
        assert!(peak <= 2, "{tenant}: {peak} ran at once");
    }
    for g in 0..6 {
        let info = q.group(&format!("tenant-{g}")).await.unwrap();
        assert_eq!((info.ready, info.active), (0, 0));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queues_finds_the_queues_on_every_master_of_the_cluster() {
    let cluster = RedisCluster::start();
    let c = client(&cluster);
    let q = Queue::sharded(&c, &unique("disc"), 3, QueueOptions::default()).unwrap();
    for i in 0..30 {
        q.enqueue(format!("{i}"), EnqueueOptions::default())
            .await
            .unwrap();
    }
    let capped = CappedQueue::new(&c, &unique("discc"), CappedOptions::default()).unwrap();
    capped.push("g", b"1").await.unwrap();
    let found = c.queues().await.unwrap();
    let jobs = found
        .iter()
        .find(|r| r.name == q.name())
        .expect("the job queue");
    assert_eq!((jobs.kind, jobs.shards), (tideq::QueueKind::Jobs, 3));
    assert!(found
        .iter()
        .any(|r| r.kind == tideq::QueueKind::Capped && r.name == capped.name()));
}
