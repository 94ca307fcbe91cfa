//! Dedup and debounce keys on enqueue: a key names one job; a second enqueue with the key creates
//! nothing while it holds (for its TTL, or until the job finishes), and never after its job is
//! gone; a debounced job takes the latest payload and waits again. One test per promise, against a
//! real redis-server.

mod common;

use std::time::Duration;

use common::jobs::*;
use common::RedisServer;
use tideq::{Debounce, Dedup, EnqueueOptions, ErrorKind, Job, JobState, QueueOptions};

fn dedup(key: &str, ttl: Option<Duration>) -> EnqueueOptions {
    EnqueueOptions {
        dedup: Some(Dedup {
            key: key.into(),
            ttl,
        }),
        ..Default::default()
    }
}

fn debounce(key: &str, ms: u64) -> EnqueueOptions {
    EnqueueOptions {
        debounce: Some(Debounce::new(key, Duration::from_millis(ms))),
        ..Default::default()
    }
}

async fn drain(q: &tideq::Queue) -> Vec<Vec<u8>> {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let s = seen.clone();
    let w = q
        .work(drained(), move |job: Job| {
            let s = s.clone();
            async move {
                s.lock().unwrap().push(job.payload.to_vec());
                Ok::<(), String>(())
            }
        })
        .unwrap();
    tokio::time::timeout(Duration::from_secs(20), w.join())
        .await
        .unwrap();
    let v = seen.lock().unwrap().clone();
    v
}

#[tokio::test]
async fn a_second_enqueue_with_a_dedup_key_within_its_ttl_creates_nothing_and_returns_the_first_id()
{
    let server = RedisServer::start();
    let q = queue(&server.url);
    let ttl = Some(Duration::from_secs(60));
    let first = q.enqueue(b"a", dedup("k", ttl)).await.unwrap();
    assert!(first.created);
    let second = q.enqueue(b"b", dedup("k", ttl)).await.unwrap();
    assert!(!second.created);
    assert_eq!(second.id, first.id);
    assert_eq!(q.stats().await.unwrap().ready, 1);
    // Within the TTL the key holds even after its job completed (throttling).
    assert_eq!(drain(&q).await, vec![b"a".to_vec()]);
    let third = q.enqueue(b"c", dedup("k", ttl)).await.unwrap();
    assert_eq!(
        (third.id.as_str(), third.created),
        (first.id.as_str(), false)
    );
}

#[tokio::test]
async fn a_dedup_key_with_a_ttl_frees_itself_when_the_ttl_ends() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let ttl = Some(Duration::from_millis(150));
    let first = q.enqueue(b"a", dedup("k", ttl)).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let second = q.enqueue(b"b", dedup("k", ttl)).await.unwrap();
    assert!(second.created);
    assert_ne!(second.id, first.id);
}

#[tokio::test]
async fn a_dedup_key_without_ttl_holds_while_its_job_is_pending_and_is_freed_when_it_completes() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let first = q.enqueue(b"a", dedup("k", None)).await.unwrap();
    let again = q.enqueue(b"b", dedup("k", None)).await.unwrap();
    assert_eq!(
        (again.id.as_str(), again.created),
        (first.id.as_str(), false)
    );
    assert_eq!(drain(&q).await, vec![b"a".to_vec()]);
    // The key went with the job: nothing of it is left in Redis.
    let left: Vec<String> = redis::cmd("KEYS")
        .arg("*dd:*")
        .query(&mut server.conn())
        .unwrap();
    assert!(left.is_empty(), "{left:?}");
    let after = q.enqueue(b"c", dedup("k", None)).await.unwrap();
    assert!(after.created);
    assert_ne!(after.id, first.id);
}

#[tokio::test]
async fn a_dedup_key_is_freed_when_its_job_is_dead_lettered_or_cancelled() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let opts = EnqueueOptions {
        max_attempts: Some(1),
        ..dedup("dies", None)
    };
    q.enqueue(b"a", opts.clone()).await.unwrap();
    let w = q
        .work(drained(), |_job: Job| async {
            Err::<(), _>("no".to_string())
        })
        .unwrap();
    tokio::time::timeout(Duration::from_secs(20), w.join())
        .await
        .unwrap();
    assert_eq!(q.stats().await.unwrap().dead, 1);
    assert!(q.enqueue(b"b", opts).await.unwrap().created);

    let c = q.enqueue(b"a", dedup("cancelled", None)).await.unwrap();
    q.cancel(&c.id).await.unwrap();
    assert!(
        q.enqueue(b"b", dedup("cancelled", None))
            .await
            .unwrap()
            .created
    );
}

#[tokio::test]
async fn no_stale_dedup_key_blocks_enqueues_after_its_jobs_data_is_gone() {
    let server = RedisServer::start();
    // Completed jobs are not kept, and the record is then removed by hand (as a restore or an
    // operator's cleanup would): the key names a job that no longer exists.
    let q = queue_with(
        &server.url,
        QueueOptions {
            keep_completed: 0,
            ..Default::default()
        },
    );
    let first = q.enqueue(b"a", dedup("k", None)).await.unwrap();
    let mut c = server.conn();
    let keys: Vec<String> = redis::cmd("KEYS").arg("*:meta").query(&mut c).unwrap();
    let _: () = redis::cmd("HDEL")
        .arg(&keys[0])
        .arg(&first.id)
        .query(&mut c)
        .unwrap();
    let second = q.enqueue(b"b", dedup("k", None)).await.unwrap();
    assert!(
        second.created,
        "a key naming a job that is gone must not block"
    );
    assert_ne!(second.id, first.id);
}

#[tokio::test]
async fn dedup_keys_within_one_enqueue_many_create_one_job_per_key() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let jobs = vec![
        (b"a".to_vec(), dedup("x", None)),
        (b"b".to_vec(), dedup("y", None)),
        (b"c".to_vec(), dedup("x", None)),
    ];
    let out = q.enqueue_many(&jobs).await.unwrap();
    assert!(out[0].created && out[1].created && !out[2].created);
    assert_eq!(out[2].id, out[0].id);
    assert_eq!(q.stats().await.unwrap().ready, 2);
}

#[tokio::test]
async fn a_debounced_enqueue_replaces_the_waiting_jobs_payload_and_pushes_its_due_time_back() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let first = q.enqueue(b"v1", debounce("save", 400)).await.unwrap();
    assert!(first.created);
    let due1 = q
        .get(&first.id)
        .await
        .unwrap()
        .unwrap()
        .state_since_or_until;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let second = q.enqueue(b"v2", debounce("save", 400)).await.unwrap();
    assert_eq!(
        (second.id.as_str(), second.created),
        (first.id.as_str(), false)
    );
    let info = q.get(&first.id).await.unwrap().unwrap();
    assert_eq!(info.state, JobState::Delayed);
    assert_eq!(info.payload, b"v2");
    assert!(info.state_since_or_until.unwrap() >= due1.unwrap() + 90);
    let s = q.stats().await.unwrap();
    assert_eq!((s.delayed, s.enqueued), (1, 1));
    assert_eq!(drain(&q).await, vec![b"v2".to_vec()]);
}

#[tokio::test]
async fn a_debounced_enqueue_after_its_job_started_creates_a_new_job() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let first = q.enqueue(b"v1", debounce("save", 1)).await.unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await;
    let leased = q.lease_jobs(1, Duration::from_secs(30)).await.unwrap();
    assert_eq!(leased[0].id, first.id);
    let second = q.enqueue(b"v2", debounce("save", 1)).await.unwrap();
    assert!(second.created);
    assert_ne!(second.id, first.id);
    assert_eq!(
        q.get(&first.id).await.unwrap().unwrap().payload,
        b"v1",
        "the running job keeps its payload"
    );
}

#[tokio::test]
async fn a_debounced_enqueue_never_replaces_a_job_waiting_for_its_retry() {
    let server = RedisServer::start();
    let q = queue_with(
        &server.url,
        QueueOptions {
            backoff: tideq::Backoff::fixed(30_000),
            ..Default::default()
        },
    );
    let first = q.enqueue(b"v1", debounce("save", 1)).await.unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await;
    let leased = q.lease_jobs(1, Duration::from_secs(30)).await.unwrap();
    assert!(!q.fail(&leased[0], "first attempt failed").await.unwrap());
    // The job waits for its retry in the delayed set: it has started, so this makes a new job.
    let second = q.enqueue(b"v2", debounce("save", 1)).await.unwrap();
    assert!(second.created, "the retrying job was taken over");
    assert_ne!(second.id, first.id);
    let old = q.get(&first.id).await.unwrap().unwrap();
    assert_eq!(
        (old.payload.as_slice(), old.attempts),
        (b"v1".as_slice(), 1)
    );
}

#[tokio::test]
async fn a_debounce_that_moves_its_job_earlier_wakes_an_idle_worker() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let ran = std::sync::Arc::new(std::sync::Mutex::new(None));
    let r = ran.clone();
    // Polling once a minute: only a wake-up can start the job before its first due time.
    let w = q
        .work(
            tideq::WorkerOptions {
                poll_interval: Duration::from_secs(60),
                ..Default::default()
            },
            move |job: Job| {
                let r = r.clone();
                async move {
                    *r.lock().unwrap() = Some((job.payload.to_vec(), std::time::Instant::now()));
                    Ok::<(), String>(())
                }
            },
        )
        .unwrap();
    q.enqueue(b"v1", debounce("save", 20_000)).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let moved = std::time::Instant::now();
    q.enqueue(b"v2", debounce("save", 100)).await.unwrap();
    let deadline = moved + Duration::from_secs(10);
    while ran.lock().unwrap().is_none() {
        assert!(
            std::time::Instant::now() < deadline,
            "the job moved earlier waited for its old due time"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(ran.lock().unwrap().as_ref().unwrap().0, b"v2");
    w.shutdown().await;
}

#[tokio::test]
async fn a_requeued_dead_job_takes_its_dedup_key_back_unless_another_job_holds_it() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let once = |key: &str| EnqueueOptions {
        max_attempts: Some(1),
        ..dedup(key, None)
    };
    let kill = |q: &tideq::Queue| {
        let q = q.clone();
        async move {
            for job in q.lease_jobs(10, Duration::from_secs(30)).await.unwrap() {
                assert!(q.fail(&job, "no").await.unwrap());
            }
        }
    };
    let dead = q.enqueue(b"a", once("k")).await.unwrap();
    kill(&q).await;
    q.requeue(&dead.id).await.unwrap();
    let again = q.enqueue(b"b", once("k")).await.unwrap();
    assert!(!again.created, "a second pending job for key k");
    assert_eq!(again.id, dead.id);
    // While it was dead another job took the key: that one keeps it.
    kill(&q).await;
    let other = q.enqueue(b"c", once("k")).await.unwrap();
    assert!(other.created);
    q.requeue(&dead.id).await.unwrap();
    assert_eq!(q.enqueue(b"d", once("k")).await.unwrap().id, other.id);
    // Purged, a dead job leaves no record of its key behind.
    let keys: std::collections::HashMap<String, String> = redis::cmd("HGETALL")
        .arg(format!("tideq:{{{}}}:dkey", q.name()))
        .query(&mut server.conn())
        .unwrap();
    assert_eq!(keys.len(), 1, "{keys:?}");
    for job in q.lease_jobs(10, Duration::from_secs(30)).await.unwrap() {
        q.fail(&job, "no").await.unwrap();
    }
    q.purge().await.unwrap();
    let keys: std::collections::HashMap<String, String> = redis::cmd("HGETALL")
        .arg(format!("tideq:{{{}}}:dkey", q.name()))
        .query(&mut server.conn())
        .unwrap();
    assert!(keys.is_empty(), "{keys:?}");
}

#[tokio::test]
async fn concurrent_debounced_enqueues_leave_one_waiting_job_with_one_of_their_payloads() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let mut tasks = Vec::new();
    for i in 0..20 {
        let q = q.clone();
        tasks.push(tokio::spawn(async move {
            q.enqueue(format!("v{i}"), debounce("k", 60_000))
                .await
                .unwrap()
        }));
    }
    let mut ids = std::collections::HashSet::new();
    for t in tasks {
        ids.insert(t.await.unwrap().id);
    }
    assert_eq!(ids.len(), 1, "every enqueue names the one job");
    let s = q.stats().await.unwrap();
    assert_eq!((s.delayed, s.enqueued), (1, 1));
}

#[tokio::test]
async fn bad_dedup_and_debounce_options_are_refused_and_nothing_is_written() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let cases = vec![
        dedup("", None),
        dedup("k", Some(Duration::ZERO)),
        dedup("a\nb", None),
        debounce("k", 0),
        EnqueueOptions {
            delay: Some(Duration::from_secs(1)),
            ..debounce("k", 10)
        },
        EnqueueOptions {
            id: Some("mine".into()),
            ..debounce("k", 10)
        },
        EnqueueOptions {
            dedup: Some(Dedup::new("k")),
            ..debounce("k", 10)
        },
    ];
    for o in cases {
        let e = q.enqueue(b"x", o.clone()).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{o:?}: {e}");
    }
    let e = q
        .enqueue_many(&[(b"x", debounce("k", 10)), (b"y", debounce("j", 10))])
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert_eq!(q.stats().await.unwrap().enqueued, 0);
    let n: i64 = redis::cmd("DBSIZE").query(&mut server.conn()).unwrap();
    assert_eq!(n, 0);
}
