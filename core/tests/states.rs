//! "A job is in exactly one state at any time", checked against a real Redis while workers
//! fetch, complete and fail jobs, and an operator cancels, requeues and purges at random: after
//! every step an atomic snapshot of the queue's keys must place every job in one state only,
//! the state its record names.

mod common;

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use common::jobs::*;
use common::RedisServer;
use tideq::{Backoff, EnqueueOptions, Job, Queue, QueueOptions, WorkerOptions};

/// Every container of the queue, read in one MULTI.
struct Snapshot {
    meta: HashMap<String, String>,
    ready: Vec<String>,
    delayed: Vec<String>,
    active: Vec<String>,
    dead: Vec<String>,
    done: Vec<String>,
    jobs: HashSet<String>,
}

fn snapshot(server: &RedisServer, q: &Queue) -> Snapshot {
    let k = |kind: &str| format!("tideq:{{{}}}:{kind}", q.name());
    let mut pipe = redis::pipe();
    pipe.atomic()
        .cmd("HGETALL")
        .arg(k("meta"))
        .cmd("LRANGE")
        .arg(k("ready"))
        .arg(0)
        .arg(-1)
        .cmd("ZRANGE")
        .arg(k("delayed"))
        .arg(0)
        .arg(-1)
        .cmd("ZRANGE")
        .arg(k("active"))
        .arg("-inf")
        .arg("(+inf")
        .arg("BYSCORE")
        .cmd("ZRANGE")
        .arg(k("dead"))
        .arg(0)
        .arg(-1)
        .cmd("LRANGE")
        .arg(k("done"))
        .arg(0)
        .arg(-1)
        .cmd("HKEYS")
        .arg(k("jobs"));
    #[allow(clippy::type_complexity)]
    let (meta, ready, delayed, active, dead, done, jobs): (
        HashMap<String, String>,
        Vec<String>,
        Vec<String>,
        Vec<String>,
        Vec<String>,
        Vec<String>,
        HashSet<String>,
    ) = pipe.query(&mut server.conn()).unwrap();
    Snapshot {
        meta,
        ready,
        delayed,
        active,
        dead,
        done,
        jobs,
    }
}

fn check(s: &Snapshot) {
    let mut places: HashMap<&str, Vec<&str>> = HashMap::new();
    for (list, name) in [
        (&s.ready, "ready"),
        (&s.delayed, "delayed"),
        (&s.active, "active"),
        (&s.dead, "dead"),
        (&s.done, "done"),
    ] {
        for id in list {
            places.entry(id.as_str()).or_default().push(name);
        }
    }
    for (id, where_) in &places {
        assert_eq!(where_.len(), 1, "job {id} is in {where_:?} at once");
        let m = s.meta.get(*id);
        assert!(m.is_some(), "job {id} is {} but has no record", where_[0]);
        let state = &m.unwrap()[..1];
        let expected = match where_[0] {
            "ready" | "delayed" | "active" => "q",
            "dead" => "x",
            _ => "c",
        };
        assert_eq!(
            state, expected,
            "job {id} is {} but its record says {m:?}",
            where_[0]
        );
    }
    for id in s.meta.keys() {
        assert!(
            places.contains_key(id.as_str()),
            "job {id} is in no state (record {:?})",
            s.meta[id]
        );
        assert!(s.jobs.contains(id), "job {id} has a record but no envelope");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_is_in_exactly_one_state_while_workers_and_an_operator_race() {
    let server = RedisServer::start();
    let q = queue_with(
        &server.url,
        QueueOptions {
            max_attempts: 3,
            backoff: Backoff::fixed(20),
            keep_completed: 50,
            ..Default::default()
        },
    );
    let mut workers = Vec::new();
    for w in 0..3u64 {
        let opts = WorkerOptions {
            concurrency: 4,
            lease: Duration::from_millis(300),
            poll_interval: Duration::from_millis(50),
            ..Default::default()
        };
        workers.push(
            q.work(opts, move |job: Job| async move {
                // Outcomes by the job's id and attempt: some succeed, some fail, some stall.
                let h = job.id.bytes().map(u64::from).sum::<u64>() + w + u64::from(job.attempt);
                match h % 5 {
                    0 | 1 => Ok(()),
                    2 => Err("boom".to_string()),
                    3 => {
                        tokio::time::sleep(Duration::from_millis(5)).await;
                        Ok(())
                    }
                    _ => {
                        tokio::time::sleep(Duration::from_millis(20)).await;
                        Err("slow boom".to_string())
                    }
                }
            })
            .unwrap(),
        );
    }
    let mut rng = fastrand::Rng::with_seed(7);
    for step in 0..400 {
        let id = format!("j{}", rng.usize(0..60));
        match rng.usize(0..10) {
            0..=3 => {
                let delay = rng.bool().then(|| Duration::from_millis(rng.u64(1..100)));
                let _ = q
                    .enqueue(
                        b"x",
                        EnqueueOptions {
                            id: Some(id),
                            delay,
                            ..Default::default()
                        },
                    )
                    .await
                    .unwrap();
            }
            4 => {
                let _ = q.cancel(&id).await;
            }
            5 => {
                let _ = q.requeue(&id).await;
            }
            6 => {
                q.requeue_all().await.unwrap();
            }
            7 if step % 50 == 0 => {
                q.purge().await.unwrap();
            }
            _ => tokio::time::sleep(Duration::from_millis(rng.u64(0..10))).await,
        }
        check(&snapshot(&server, &q));
    }
    for w in workers {
        w.shutdown().await;
    }
    check(&snapshot(&server, &q));
}
