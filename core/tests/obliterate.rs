//! Obliterate, against a real redis-server: refused while workers are live (or forced), what a
//! running job's late ack brings back (nothing), an enqueue racing it, and its cost at 100,000
//! jobs and on a sharded queue (SLOWLOG).

mod common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::finished::*;
use common::jobs::*;
use common::{scale, unique, RedisServer};
use tideq::{Client, EnqueueOptions, Every, Job, JobState, Queue, QueueOptions, WorkerOptions};

/// A neighbour whose name and prefix look like `name`'s, with a job in every state.
/// A queue of a new name on `server`, and its name.
fn fresh(server: &RedisServer) -> (String, Queue) {
    let name = unique("ob");
    let q = Queue::new(
        &Client::open(&server.url).unwrap(),
        &name,
        Default::default(),
    )
    .unwrap();
    (name, q)
}

async fn neighbour(server: &RedisServer, name: &str) -> Queue {
    let q = Queue::new(
        &Client::open(&server.url).unwrap(),
        &format!("{name}2"),
        Default::default(),
    )
    .unwrap();
    kill(&q, &["nd"]).await;
    finish(&q, &["nc"]).await;
    q.enqueue(b"x", id("nr")).await.unwrap();
    q
}

#[tokio::test]
async fn obliterate_is_refused_while_a_worker_is_live_and_done_with_force() {
    let server = RedisServer::start();
    let (name, q) = fresh(&server);
    q.enqueue(b"x", later("l1")).await.unwrap();
    let w = q
        .work(WorkerOptions::default(), |_j: Job| async {
            Ok::<(), String>(())
        })
        .unwrap();
    assert!(
        wait_for(Duration::from_secs(10), || async {
            !q.workers().await.unwrap().is_empty()
        })
        .await
    );
    let err = q.obliterate(false).await.unwrap_err();
    assert_eq!(err.code(), "INVALID_ARGUMENT", "{err}");
    assert!(err.to_string().contains("live"), "{err}");
    // Nothing written: the job is there, the queue not paused.
    assert_eq!(state(&q, "l1").await, Some(JobState::Delayed));
    assert!(!q.stats().await.unwrap().paused);
    assert!(q.obliterate(true).await.unwrap() > 0);
    assert_eq!(state(&q, "l1").await, None);
    w.stop();
    w.join().await;
    q.obliterate(false).await.unwrap();
    assert!(keys_matching(&server, &format!("tideq:{{{name}*")).is_empty());
}

#[tokio::test]
async fn a_running_job_s_ack_after_a_forced_obliterate_brings_no_data_back() {
    let server = RedisServer::start();
    let (name, q) = fresh(&server);
    q.enqueue(b"x", id("running")).await.unwrap();
    let job = q.lease_jobs(1, LONG).await.unwrap().remove(0);
    q.obliterate(true).await.unwrap();
    // Its holder's complete and fail find no job: nothing of it is written back.
    let _ = q.complete_with_result(&job, b"\"ok\"").await;
    let _ = q.fail(&job, "boom").await;
    assert_eq!(state(&q, "running").await, None);
    for k in keys_matching(&server, &format!("tideq:{{{name}*")) {
        let kind = k.rsplit("}:").next().unwrap();
        assert!(
            !["jobs", "meta", "results", "errors", "active", "done", "dead"].contains(&kind),
            "{k} came back"
        );
    }
}

#[tokio::test]
async fn an_enqueue_racing_an_obliterate_is_deleted_whole_refused_or_kept_whole() {
    let server = RedisServer::start();
    let name = unique("ob");
    let client = Client::open(&server.url).unwrap();
    let q = Queue::new(&client, &name, Default::default()).unwrap();
    let jobs: Vec<(Vec<u8>, EnqueueOptions)> = (0..5000)
        .map(|i| (format!("{i}").into_bytes(), EnqueueOptions::default()))
        .collect();
    q.enqueue_many(&jobs).await.unwrap();
    let producer = {
        let q = Queue::new(&client, &name, Default::default()).unwrap();
        tokio::spawn(async move {
            let mut refused = 0;
            for i in 0..300 {
                if let Err(e) = q.enqueue(b"late", id(&format!("late-{i}"))).await {
                    assert!(e.to_string().contains("obliterated"), "{e}");
                    refused += 1;
                }
            }
            refused
        })
    };
    q.obliterate(false).await.unwrap();
    producer.await.unwrap();
    // Whatever is left is whole: every listed job has its data, and every job with data is
    // listed ready; the queue is not left paused.
    let s = q.stats().await.unwrap();
    assert!(!s.paused);
    let mut c = server.conn();
    let base = format!("tideq:{{{name}}}:");
    let data: BTreeSet<String> = redis::cmd("HKEYS")
        .arg(format!("{base}jobs"))
        .query(&mut c)
        .unwrap();
    let meta: BTreeSet<String> = redis::cmd("HKEYS")
        .arg(format!("{base}meta"))
        .query(&mut c)
        .unwrap();
    let ready: Vec<String> = redis::cmd("LRANGE")
        .arg(format!("{base}ready"))
        .arg(0)
        .arg(-1)
        .query(&mut c)
        .unwrap();
    let ready: BTreeSet<String> = ready.into_iter().collect();
    assert_eq!(data, meta);
    assert_eq!(data, ready);
    assert_eq!(s.ready as usize, ready.len());
    assert!(data.iter().all(|id| id.starts_with("late-")), "{data:?}");
}

/// At scale: a queue of 100,000 jobs (ready, delayed, dead, completed, grouped, a schedule) and a
/// 3-shard queue are deleted to their last key, no call over 10 ms, a neighbour left whole.
#[tokio::test]
async fn obliterate_of_100000_jobs_and_of_a_3_shard_queue_leaves_no_key_and_no_call_over_10ms() {
    let _one = scale::one_at_a_time().await;
    let server = scale::server();
    let client = Client::open(&server.url).unwrap();
    let name = unique("big");
    let opts = QueueOptions {
        keep_completed: 100_000,
        keep_dead: None,
        max_attempts: 1,
        ..Default::default()
    };
    let q = Queue::new(&client, &name, opts.clone()).unwrap();
    let n = neighbour(&server, &name).await;
    let sharded = Queue::sharded(&client, &format!("{name}s"), 3, opts.clone()).unwrap();
    let mut all = Vec::new();
    for i in 0..100_000 {
        let o = match i % 10 {
            0..=2 => EnqueueOptions {
                delay: Some(Duration::from_secs(3600)),
                ..Default::default()
            },
            3..=4 => EnqueueOptions {
                group: Some(format!("g{}", i % 500)),
                ..Default::default()
            },
            5 => EnqueueOptions {
                priority: Some(3),
                ..Default::default()
            },
            _ => EnqueueOptions::default(),
        };
        all.push((format!("{i}").into_bytes(), o));
    }
    for part in all.chunks(10_000) {
        q.enqueue_many(part).await.unwrap();
        sharded.enqueue_many(&part[..1000]).await.unwrap();
    }
    // Some finish: completed and dead.
    let w = q
        .work(
            WorkerOptions {
                concurrency: 64,
                max_jobs: Some(20_000),
                ..drained()
            },
            |j: Job| async move {
                if j.payload.ends_with(b"7") {
                    Err("no".to_string())
                } else {
                    Ok(())
                }
            },
        )
        .unwrap();
    w.join().await;
    q.upsert_schedule(
        "tick",
        Every::interval(Duration::from_secs(3600)),
        b"s",
        Default::default(),
    )
    .await
    .unwrap();
    let s = q.stats().await.unwrap();
    assert!(
        s.delayed > 0 && s.ready > 0 && s.dead > 0 && s.completed > 0,
        "{s:?}"
    );
    let neighbour_before: Vec<_> = snapshot(&server)
        .into_iter()
        .filter(|(k, _)| k.contains(&format!("{{{name}2}}")))
        .collect();
    assert!(!neighbour_before.is_empty());
    scale::slowlog_from_now(&server, 10_000);
    assert!(q.obliterate(false).await.unwrap() > 10);
    assert!(sharded.obliterate(false).await.unwrap() > 3);
    let slow = scale::slow_calls(&server, 10_000);
    assert!(slow.is_empty(), "{slow:?}");
    assert_eq!(
        keys_matching(&server, &format!("tideq:{{{name}}}*")),
        Vec::<String>::new()
    );
    assert_eq!(
        keys_matching(&server, &format!("tideq:{{{name}s*")),
        Vec::<String>::new()
    );
    let neighbour_after: Vec<_> = snapshot(&server)
        .into_iter()
        .filter(|(k, _)| k.contains(&format!("{{{name}2}}")))
        .collect();
    assert_eq!(neighbour_after, neighbour_before);
    assert_eq!(state(&n, "nr").await, Some(JobState::Ready));
    assert_eq!(q.stats().await.unwrap(), Default::default());
}
