//! Faults on a real local Redis Cluster under load: a coordinated failover, a master killed with
//! SIGKILL, and a busy slot resharded to another master.

mod common;

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{unique, RedisCluster};
use tideq::keys::key_slot;
use tideq::{Client, Config, EnqueueOptions, Job, Queue, QueueOptions, WorkerOptions};

struct Load {
    acked: Arc<Mutex<Vec<String>>>,
    errors: Arc<Mutex<Vec<String>>>,
    done: Arc<Mutex<HashSet<String>>>,
    stop: Arc<AtomicBool>,
    producer: tokio::task::JoinHandle<()>,
    worker: tideq::Worker,
}

/// A producer enqueuing a job every 5 ms (ids p0, p1, ...) and a worker processing them.
fn start_load(q: &Queue) -> Load {
    let (acked, errors, done) = (
        Arc::new(Mutex::new(Vec::new())),
        Arc::new(Mutex::new(Vec::new())),
        Arc::new(Mutex::new(HashSet::new())),
    );
    let stop = Arc::new(AtomicBool::new(false));
    let producer = {
        let (q, acked, errors, stop) = (q.clone(), acked.clone(), errors.clone(), stop.clone());
        tokio::spawn(async move {
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) {
                let id = format!("p{i}");
                match q
                    .enqueue(
                        b"x",
                        EnqueueOptions {
                            id: Some(id.clone()),
                            ..Default::default()
                        },
                    )
                    .await
                {
                    Ok(_) => acked.lock().unwrap().push(id),
                    Err(e) => errors.lock().unwrap().push(format!("{id}: {e}")),
                }
                i += 1;
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
    };
    let d2 = done.clone();
    let worker = q
        .work(
            WorkerOptions {
                concurrency: 8,
                poll_interval: Duration::from_millis(200),
                lease: Duration::from_secs(5),
                ..Default::default()
            },
            move |job: Job| {
                d2.lock().unwrap().insert(job.id.clone());
                async { Ok::<(), String>(()) }
            },
        )
        .unwrap();
    Load {
        acked,
        errors,
        done,
        stop,
        producer,
        worker,
    }
}

impl Load {
    /// Stops producing, waits for the worker to catch up, returns (acked, errors, acked jobs never processed).
    async fn finish(self, q: &Queue) -> (usize, Vec<String>, Vec<String>) {
        self.stop.store(true, Ordering::Relaxed);
        self.producer.await.unwrap();
        let acked = self.acked.lock().unwrap().clone();
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline
            && acked
                .iter()
                .any(|id| !self.done.lock().unwrap().contains(id))
        {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        self.worker.shutdown().await;
        let _ = q;
        let missing = acked
            .iter()
            .filter(|id| !self.done.lock().unwrap().contains(*id))
            .cloned()
            .collect();
        (acked.len(), self.errors.lock().unwrap().clone(), missing)
    }
}

/// Fault tests run one at a time: each drives a cluster under load, and timing matters.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn master_port_of(cluster: &RedisCluster, slot: u16) -> u16 {
    cluster
        .master_of_slot(slot)
        .rsplit(':')
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_failover_of_the_busy_master_loses_no_job_and_surfaces_no_error() {
    let _serial = SERIAL.lock().await;
    let cluster = RedisCluster::start();
    let client = Client::new(Config::cluster(cluster.nodes.clone())).unwrap();
    let q = Queue::new(&client, &unique("fo"), QueueOptions::default()).unwrap();
    let load = start_load(&q);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let slot = key_slot(&format!("tideq:{{{}}}:ready", q.name()));
    let master = master_port_of(&cluster, slot);
    let topo = cluster.topology();
    let master_id = topo.iter().find(|n| n.port == master).unwrap().id.clone();
    let replica = topo
        .iter()
        .find(|n| n.master_id.as_deref() == Some(&master_id))
        .expect("a replica")
        .port;
    redis::cmd("CLUSTER")
        .arg("FAILOVER")
        .exec(&mut cluster.conn_to(replica))
        .unwrap();
    let t = Instant::now();
    while master_port_of(&cluster, slot) != replica {
        assert!(
            t.elapsed() < Duration::from_secs(15),
            "the failover never happened"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (acked, errors, missing) = load.finish(&q).await;
    eprintln!(
        "CLUSTER FAILOVER under load: {acked} jobs enqueued, {} errors, {} lost",
        errors.len(),
        missing.len()
    );
    assert!(
        errors.is_empty(),
        "errors surfaced during a coordinated failover: {errors:?}"
    );
    assert!(missing.is_empty(), "acknowledged jobs lost: {missing:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_master_is_killed_clients_converge_within_10_seconds() {
    let _serial = SERIAL.lock().await;
    let cluster = RedisCluster::start();
    let client = Client::new(
        Config::cluster(cluster.nodes.clone()).with_response_timeout(Duration::from_secs(2)),
    )
    .unwrap();
    let q = Queue::new(&client, &unique("kill"), QueueOptions::default()).unwrap();
    let load = start_load(&q);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let slot = key_slot(&format!("tideq:{{{}}}:ready", q.name()));
    let master = master_port_of(&cluster, slot);
    let acked_before = load.acked.lock().unwrap().len();
    cluster.kill(master);
    let killed_at = Instant::now();
    // Converged when new enqueues succeed again.
    let mut converged = None;
    while killed_at.elapsed() < Duration::from_secs(20) {
        if load.acked.lock().unwrap().len() > acked_before + 20
            && !load.errors.lock().unwrap().is_empty()
        {
            converged = Some(killed_at.elapsed());
            break;
        }
        if load.acked.lock().unwrap().len() > acked_before + 200 {
            converged = Some(killed_at.elapsed());
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (acked, errors, missing) = load.finish(&q).await;
    eprintln!(
        "SIGKILL of a master: converged after {converged:?}; {acked} jobs acknowledged, {} enqueue errors, {} acknowledged jobs lost (async replication)",
        errors.len(),
        missing.len()
    );
    let converged = converged.expect("clients never converged");
    assert!(converged < Duration::from_secs(10), "took {converged:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resharding_a_busy_slot_loses_no_job() {
    let _serial = SERIAL.lock().await;
    let cluster = RedisCluster::start();
    let client = Client::new(Config::cluster(cluster.nodes.clone())).unwrap();
    // A queue whose slot is the first of its master's range, so `reshard --cluster-slots 1` moves it.
    let name = (0..)
        .map(|i| format!("rs{i}"))
        .find(|n| key_slot(&format!("{{{n}}}")) == 0)
        .unwrap();
    let q = Queue::new(&client, &name, QueueOptions::default()).unwrap();
    let load = start_load(&q);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let from = master_port_of(&cluster, 0);
    let topo = cluster.topology();
    let from_id = topo.iter().find(|n| n.port == from).unwrap().id.clone();
    let to_id = topo
        .iter()
        .find(|n| n.master && n.port != from)
        .unwrap()
        .id
        .clone();
    let out = std::process::Command::new("redis-cli")
        .args(["--cluster", "reshard", &format!("127.0.0.1:{from}")])
        .args([
            "--cluster-from",
            &from_id,
            "--cluster-to",
            &to_id,
            "--cluster-slots",
            "1",
            "--cluster-yes",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let moved_to = master_port_of(&cluster, 0);
    assert_ne!(moved_to, from, "slot 0 did not move");
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (acked, errors, missing) = load.finish(&q).await;
    eprintln!(
        "reshard under load: {acked} jobs enqueued, {} errors, {} lost",
        errors.len(),
        missing.len()
    );
    assert!(missing.is_empty(), "acknowledged jobs lost: {missing:?}");
}
