//! Shared limiters on a real local Redis Cluster (6 nodes: 3 masters, 3 replicas): a limiter's
//! keys live in one hash slot of their own, so each of its operations is one atomic script on
//! one master, whichever masters the queues that name it live on. Any key outside a call's hash
//! slot would fail with CROSSSLOT.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{unique, RedisCluster};
use tideq::{Client, Config, EnqueueOptions, Job, LimitError, Queue, QueueOptions, WorkerOptions};

fn client(cluster: &RedisCluster) -> Client {
    Client::new(Config::cluster(cluster.nodes.clone())).unwrap()
}

/// A connection to the master holding `key`.
fn conn_for(cluster: &RedisCluster, key: &str) -> redis::Connection {
    let master = cluster.master_of_slot(slot(cluster, key));
    let port: u16 = master.rsplit(':').next().unwrap().parse().unwrap();
    cluster.conn_to(port)
}

fn slot(cluster: &RedisCluster, key: &str) -> u16 {
    redis::cmd("CLUSTER")
        .arg("KEYSLOT")
        .arg(key)
        .query(&mut cluster.node(0))
        .unwrap()
}

/// Every key of every master whose name contains `part`.
fn keys_with(cluster: &RedisCluster, part: &str) -> Vec<String> {
    let mut all = Vec::new();
    for n in cluster.topology().iter().filter(|n| n.master) {
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg(format!("*{part}*"))
            .query(&mut cluster.conn_to(n.port))
            .unwrap();
        all.extend(keys);
    }
    all
}

async fn fill(q: &Queue, n: usize) {
    let jobs: Vec<(Vec<u8>, EnqueueOptions)> = (0..n)
        .map(|i| (format!("{i}").into_bytes(), Default::default()))
        .collect();
    q.enqueue_many(&jobs).await.unwrap();
}

/// Two queues on different masters, one of them sharded over all three, name one concurrency
/// limiter of 4 slots: with 64 handlers able to run at once, never more than 4 of their jobs run
/// together; every job completes, and no slot is left held.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queues_on_every_master_naming_one_limiter_never_run_more_than_its_slots_on_a_cluster() {
    let cluster = RedisCluster::start();
    let c = client(&cluster);
    let lim = unique("stripe");
    c.limiter()
        .concurrent(&lim, 4, Duration::from_secs(30))
        .await
        .unwrap();
    let opts = || QueueOptions {
        max_attempts: 1,
        ..Default::default()
    };
    let sharded = Queue::sharded(&c, &unique("pay"), 3, opts()).unwrap();
    let plain = Queue::new(&c, &unique("refund"), opts()).unwrap();
    let n = 150;
    for q in [&sharded, &plain] {
        q.set_limiter(Some(&lim)).await.unwrap();
        fill(q, n).await;
    }
    let running = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let mut workers = Vec::new();
    for q in [&sharded, &plain, &sharded, &plain] {
        let (running, most) = (running.clone(), most.clone());
        let opts = WorkerOptions {
            concurrency: 16,
            stop_when_drained: true,
            ..Default::default()
        };
        workers.push(
            q.work(opts, move |_j: Job| {
                let (running, most) = (running.clone(), most.clone());
                async move {
                    let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(3)).await;
                    running.fetch_sub(1, Ordering::SeqCst);
                    Ok::<(), String>(())
                }
            })
            .unwrap(),
        );
    }
    let mut completed = 0;
    for w in workers {
        completed += tokio::time::timeout(Duration::from_secs(120), w.join())
            .await
            .expect("the workers drain")
            .completed;
    }
    assert_eq!(completed, 2 * n as u64);
    let most = most.load(Ordering::SeqCst);
    assert!((1..=4).contains(&most), "{most} ran at once");
    for q in [&sharded, &plain] {
        let s = q.stats().await.unwrap();
        assert_eq!((s.ready, s.active, s.dead), (0, 0, 0), "{s:?}");
    }
    // The limiter's keys: all in one slot, on one master, none with a holder left.
    let keys = keys_with(&cluster, &format!("#lim:{lim}"));
    assert!(!keys.is_empty());
    let slots: std::collections::BTreeSet<u16> = keys.iter().map(|k| slot(&cluster, k)).collect();
    assert_eq!(slots.len(), 1, "{keys:?}");
    let hold = format!("tideq:{{#lim:{lim}}}:hold");
    let held: usize = redis::cmd("ZCARD")
        .arg(&hold)
        .query(&mut conn_for(&cluster, &hold))
        .unwrap();
    assert_eq!(held, 0);
}

/// Handlers acquiring from a window and a bucket on a cluster, from many tasks at once: exactly
/// the limit is granted (each take is one script on the limiter's master), the rest are told to
/// come back later.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acquisitions_racing_on_a_cluster_get_exactly_a_window_or_a_buckets_room() {
    let cluster = RedisCluster::start();
    let c = client(&cluster);
    let (win, bucket) = (unique("win"), unique("bucket"));
    let limiter = c.limiter();
    limiter
        .window(&win, 10, Duration::from_secs(60))
        .await
        .unwrap();
    // 5 tokens, refilled at one every 1,000 s: none comes back during the test.
    limiter.bucket(&bucket, 5, 0.001).await.unwrap();
    for (name, room) in [(&win, 10), (&bucket, 5)] {
        let tries = (0..40).map(|_| {
            let (limiter, name) = (limiter.clone(), name.clone());
            tokio::spawn(async move {
                match limiter.acquire(&name).await {
                    Ok(guard) => {
                        std::mem::forget(guard);
                        true
                    }
                    Err(LimitError::Over(_)) => false,
                    Err(LimitError::Failed(e)) => panic!("{e}"),
                }
            })
        });
        let mut granted = 0;
        for t in tries.collect::<Vec<_>>() {
            granted += t.await.unwrap() as usize;
        }
        assert_eq!(granted, room, "limiter {name}");
    }
    // The two limiters' keys each keep to one slot.
    for name in [&win, &bucket] {
        let keys = keys_with(&cluster, &format!("#lim:{name}"));
        let slots: std::collections::BTreeSet<u16> =
            keys.iter().map(|k| slot(&cluster, k)).collect();
        assert_eq!(slots.len(), 1, "{keys:?}");
    }
}
