//! The job queue's producer and operator contract (enqueue, idempotent ids, delays, cancel,
//! dead letters, bad input), one test per promise, against a real redis-server.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::jobs::*;
use common::{unique, RedisServer};
use tideq::{
    Backoff, Client, Config, EnqueueOptions, Job, JobState, Queue, QueueOptions, WorkerOptions,
};

#[tokio::test]
async fn enqueue_returns_the_id_and_an_existing_id_creates_nothing() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let a = q.enqueue(b"one", id("order-1")).await.unwrap();
    assert_eq!((a.id.as_str(), a.created), ("order-1", true));
    let b = q.enqueue(b"two", id("order-1")).await.unwrap();
    assert!(!b.created, "a second job with the same id was created");
    let info = q.get("order-1").await.unwrap().unwrap();
    assert_eq!(info.payload, b"one");
    assert_eq!(info.state, JobState::Ready);
    let random = q.enqueue(b"x", EnqueueOptions::default()).await.unwrap();
    assert!(random.created && random.id.len() == 32);
    let s = q.stats().await.unwrap();
    assert_eq!((s.ready, s.enqueued), (2, 2));
}

#[tokio::test]
async fn enqueue_many_is_idempotent_per_id_and_keeps_order() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let jobs: Vec<(Vec<u8>, EnqueueOptions)> = (0..1200)
        .map(|i| (format!("{i}").into_bytes(), id(&format!("j{}", i % 1100))))
        .collect();
    let res = q.enqueue_many(&jobs).await.unwrap();
    assert_eq!(res.len(), 1200);
    assert_eq!(res.iter().filter(|r| r.created).count(), 1100);
    assert!(res[1100..].iter().all(|r| !r.created));
    let order = Arc::new(Mutex::new(Vec::new()));
    let o2 = order.clone();
    let w = q
        .work(
            WorkerOptions {
                concurrency: 1,
                ..drained()
            },
            move |job: Job| {
                o2.lock()
                    .unwrap()
                    .push(job.payload_str().unwrap().parse::<u32>().unwrap());
                async { Ok::<(), String>(()) }
            },
        )
        .unwrap();
    w.join().await;
    assert_eq!(
        *order.lock().unwrap(),
        (0..1100).collect::<Vec<_>>(),
        "FIFO"
    );
}

/// A call of plain jobs only goes in the enqueue script's short form (4 values per job); one with
/// any option goes in the full form (10). Either way each job keeps its own options, its id and
/// its max attempts.
#[tokio::test]
async fn one_call_mixing_plain_and_optioned_jobs_keeps_each_jobs_options() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let o = |f: fn(&mut EnqueueOptions)| {
        let mut o = EnqueueOptions::default();
        f(&mut o);
        o
    };
    let mixed: Vec<(Vec<u8>, EnqueueOptions)> = vec![
        (b"plain".to_vec(), o(|_| {})),
        (b"named".to_vec(), id("m-1")),
        (
            b"later".to_vec(),
            o(|o| o.delay = Some(Duration::from_secs(60))),
        ),
        (b"grouped".to_vec(), o(|o| o.group = Some("g".into()))),
        (b"urgent".to_vec(), o(|o| o.priority = Some(3))),
        (b"heavy".to_vec(), o(|o| o.cost = Some(3))),
        (b"twice".to_vec(), o(|o| o.max_attempts = Some(2))),
    ];
    let made = q.enqueue_many(&mixed).await.unwrap();
    assert!(made.iter().all(|e| e.created));
    let info = |i: usize| {
        let q = q.clone();
        let id = made[i].id.clone();
        async move { q.get(&id).await.unwrap().unwrap() }
    };
    assert_eq!(made[1].id, "m-1");
    assert_eq!(info(0).await.state, JobState::Ready);
    assert_eq!(info(2).await.state, JobState::Delayed);
    assert_eq!(info(3).await.group.as_deref(), Some("g"));
    assert_eq!(info(4).await.priority, Some(3));
    assert_eq!(info(5).await.cost, 3);
    assert_eq!(info(6).await.max_attempts, 2);
    // Plain jobs only (the short form): ids given and not, an id seen before, max attempts.
    let plain: Vec<(Vec<u8>, EnqueueOptions)> = vec![
        (b"a".to_vec(), id("m-1")),
        (b"b".to_vec(), id("p-2")),
        (b"c".to_vec(), o(|o| o.max_attempts = Some(7))),
    ];
    let made2 = q.enqueue_many(&plain).await.unwrap();
    let created: Vec<bool> = made2.iter().map(|e| e.created).collect();
    assert_eq!(created, [false, true, true]);
    let c = q.get(&made2[2].id).await.unwrap().unwrap();
    assert_eq!((c.state, c.max_attempts), (JobState::Ready, 7));
    assert_eq!(q.stats().await.unwrap().enqueued, 9);
}

#[tokio::test]
async fn delay_is_measured_from_redis_time() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let before = redis_ms(&server);
    q.enqueue(
        b"x",
        EnqueueOptions {
            delay: Some(Duration::from_millis(400)),
            ..id("later")
        },
    )
    .await
    .unwrap();
    let info = q.get("later").await.unwrap().unwrap();
    assert_eq!(info.state, JobState::Delayed);
    let due = info.state_since_or_until.unwrap();
    assert!(
        due >= before + 400 && due <= redis_ms(&server) + 400,
        "due {due}, before {before}"
    );
}

#[tokio::test]
async fn cancel_removes_delayed_and_ready_jobs() {
    // (Active, dead and completed jobs: tests/cancel.rs.)
    let server = RedisServer::start();
    let q = queue(&server.url);
    q.enqueue(b"r", id("ready")).await.unwrap();
    q.enqueue(
        b"d",
        EnqueueOptions {
            delay: Some(Duration::from_secs(60)),
            ..id("delayed")
        },
    )
    .await
    .unwrap();
    q.cancel("ready").await.unwrap();
    q.cancel("delayed").await.unwrap();
    assert!(q.get("ready").await.unwrap().is_none());
    assert!(q.get("delayed").await.unwrap().is_none());
    assert_eq!(q.cancel("nope").await.unwrap_err().code(), "JOB_NOT_FOUND");
    let s = q.stats().await.unwrap();
    assert_eq!((s.ready, s.delayed, s.cancelled), (0, 0, 2));
}

#[tokio::test]
async fn dead_letters_can_be_listed_requeued_and_purged() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    for i in 0..5 {
        q.enqueue(
            format!("{i}"),
            EnqueueOptions {
                max_attempts: Some(1),
                ..id(&format!("bad{i}"))
            },
        )
        .await
        .unwrap();
    }
    let w = q
        .work(drained(), |_job: Job| async { Err::<(), _>("nope") })
        .unwrap();
    w.join().await;
    let dead = q.dead_letters(0, 10).await.unwrap();
    assert_eq!(dead.len(), 5);
    assert!(dead
        .iter()
        .all(|j| j.state == JobState::Dead && j.last_error.as_deref() == Some("nope")));
    assert_eq!(q.dead_letters(3, 10).await.unwrap().len(), 2, "paged");
    q.requeue("bad0").await.unwrap();
    assert_eq!(q.requeue("bad0").await.unwrap_err().code(), "JOB_NOT_FOUND");
    let info = q.get("bad0").await.unwrap().unwrap();
    assert_eq!((info.state, info.attempts), (JobState::Ready, 0));
    assert_eq!(q.requeue_all().await.unwrap(), 4);
    let w = q
        .work(drained(), |_job: Job| async { Err::<(), _>("still bad") })
        .unwrap();
    w.join().await;
    assert_eq!(q.purge().await.unwrap(), 5);
    let s = q.stats().await.unwrap();
    assert_eq!((s.dead, s.ready, s.delayed, s.active), (0, 0, 0, 0));
    let stored: u64 = redis::cmd("HLEN")
        .arg(format!("tideq:{{{}}}:jobs", q.name()))
        .query(&mut server.conn())
        .unwrap();
    assert_eq!(stored, 0);
}

#[tokio::test]
async fn error_text_stored_with_a_job_is_size_capped() {
    let server = RedisServer::start();
    let q = queue_with(
        &server.url,
        QueueOptions {
            max_error_len: 100,
            ..Default::default()
        },
    );
    q.enqueue(
        b"x",
        EnqueueOptions {
            max_attempts: Some(1),
            ..id("loud")
        },
    )
    .await
    .unwrap();
    let w = q
        .work(drained(), |_job: Job| async {
            Err::<(), _>("é".repeat(10_000))
        })
        .unwrap();
    w.join().await;
    let err = q.get("loud").await.unwrap().unwrap().last_error.unwrap();
    assert!(err.len() <= 104, "{} bytes stored", err.len());
}

#[tokio::test]
async fn scripts_are_reloaded_after_script_flush() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let flush = || {
        redis::cmd("SCRIPT")
            .arg("FLUSH")
            .exec(&mut server.conn())
            .unwrap()
    };
    flush();
    q.enqueue(b"a", id("a")).await.unwrap();
    flush();
    let many: Vec<(Vec<u8>, EnqueueOptions)> =
        (0..1500).map(|i| (vec![1], id(&format!("m{i}")))).collect();
    q.enqueue_many(&many).await.unwrap();
    flush();
    q.cancel("a").await.unwrap();
    flush();
    let w = q
        .work(drained(), |_job: Job| async { Ok::<(), String>(()) })
        .unwrap();
    assert_eq!(w.join().await.completed, 1500);
}

#[tokio::test]
async fn bad_job_input_is_rejected_and_nothing_is_written() {
    let server = RedisServer::start_private(common::free_port(), &[]);
    let client = Client::new(Config::new(&server.url).with_max_payload(100)).unwrap();
    let opts = |max_attempts| QueueOptions {
        max_attempts,
        ..Default::default()
    };
    assert_eq!(
        Queue::new(&client, "q", opts(0)).unwrap_err().code(),
        "INVALID_ARGUMENT"
    );
    assert_eq!(
        Queue::new(&client, "bad{name}", opts(1))
            .unwrap_err()
            .code(),
        "INVALID_ARGUMENT"
    );
    let bad_backoff = QueueOptions {
        backoff: Backoff {
            max_ms: 1,
            ..Backoff::exponential(10, 1)
        },
        ..Default::default()
    };
    assert_eq!(
        Queue::new(&client, "q", bad_backoff).unwrap_err().code(),
        "INVALID_ARGUMENT"
    );
    let q = Queue::new(&client, "q", QueueOptions::default()).unwrap();
    let long = "x".repeat(257);
    for bad in ["", "tab\t", long.as_str()] {
        assert_eq!(
            q.enqueue(b"x", id(bad)).await.unwrap_err().code(),
            "INVALID_ARGUMENT",
            "id {bad:?}"
        );
        assert_eq!(q.get(bad).await.unwrap_err().code(), "INVALID_ARGUMENT");
        assert_eq!(q.cancel(bad).await.unwrap_err().code(), "INVALID_ARGUMENT");
    }
    // Ids a URL path cannot carry (the dashboard's job page): refused at enqueue.
    for bad in [".", ".."] {
        let e = q.enqueue(b"x", id(bad)).await.unwrap_err();
        assert_eq!(e.code(), "INVALID_ARGUMENT", "id {bad:?}");
        assert!(e.message().contains("URL"), "{e}");
    }
    // Times past the year 9999 (run_at = 1e300 seconds from Python).
    let far = [
        EnqueueOptions {
            run_at_ms: Some(u64::MAX),
            ..Default::default()
        },
        EnqueueOptions {
            delay: Some(Duration::from_secs(u64::MAX / 2000)),
            ..Default::default()
        },
        EnqueueOptions {
            expires_at_ms: Some(300_000_000_000_000),
            ..Default::default()
        },
    ];
    for o in far {
        let e = q.enqueue(b"x", o).await.unwrap_err();
        assert_eq!(e.code(), "INVALID_ARGUMENT");
        assert!(e.message().contains("year 9999"), "{e}");
    }
    let zero = EnqueueOptions {
        max_attempts: Some(0),
        ..Default::default()
    };
    assert_eq!(
        q.enqueue(b"x", zero).await.unwrap_err().code(),
        "INVALID_ARGUMENT"
    );
    let both = EnqueueOptions {
        delay: Some(Duration::from_secs(1)),
        run_at_ms: Some(1),
        ..Default::default()
    };
    assert_eq!(
        q.enqueue(b"x", both).await.unwrap_err().code(),
        "INVALID_ARGUMENT"
    );
    let no_time = EnqueueOptions {
        timeout: Some(Duration::ZERO),
        ..Default::default()
    };
    assert_eq!(
        q.enqueue(b"x", no_time).await.unwrap_err().code(),
        "INVALID_ARGUMENT"
    );
    let too_large = q
        .enqueue(vec![0u8; 101], EnqueueOptions::default())
        .await
        .unwrap_err();
    assert_eq!(too_large.code(), "PAYLOAD_TOO_LARGE");
    assert!(
        too_large.to_string().contains("max_payload option"),
        "names the option that raises the limit: {too_large}"
    );
    let mixed = vec![(vec![1u8], id("fine")), (vec![0u8; 101], id("huge"))];
    assert_eq!(
        q.enqueue_many(&mixed).await.unwrap_err().code(),
        "PAYLOAD_TOO_LARGE"
    );
    assert_eq!(
        q.work(
            WorkerOptions {
                concurrency: 0,
                ..Default::default()
            },
            |_j: Job| async { Ok::<(), String>(()) }
        )
        .err()
        .unwrap()
        .code(),
        "INVALID_ARGUMENT"
    );
    let dbsize: u64 = redis::cmd("DBSIZE").query(&mut server.conn()).unwrap();
    assert_eq!(dbsize, 0);
}

#[tokio::test]
async fn enqueue_with_redis_unreachable_is_a_connection_error() {
    let port = common::free_port();
    let client = Client::new(
        Config::new(format!("redis://:pw@127.0.0.1:{port}"))
            .with_connect_timeout(Duration::from_millis(300)),
    )
    .unwrap();
    let q = Queue::new(&client, "q", QueueOptions::default()).unwrap();
    let err = q
        .enqueue(b"x", EnqueueOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.code(), "CONNECTION");
}

#[tokio::test]
async fn a_sharded_queue_spreads_jobs_and_still_finds_each_by_id() {
    let server = RedisServer::start();
    let client = Client::open(&server.url).unwrap();
    let opts = QueueOptions {
        backoff: Backoff::fixed(10),
        max_attempts: 1,
        ..Default::default()
    };
    let q = Queue::sharded(&client, &unique("sh"), 4, opts).unwrap();
    let jobs: Vec<(Vec<u8>, EnqueueOptions)> =
        (0..400).map(|i| (vec![1], id(&format!("s{i}")))).collect();
    assert!(q
        .enqueue_many(&jobs)
        .await
        .unwrap()
        .iter()
        .all(|r| r.created));
    assert!(
        !q.enqueue(b"again", id("s7")).await.unwrap().created,
        "idempotent across shards"
    );
    let mut conn = server.conn();
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("tideq:{{{}#*}}:ready", q.name()))
        .query(&mut conn)
        .unwrap();
    assert_eq!(keys.len(), 4, "every shard got jobs: {keys:?}");
    assert_eq!(q.stats().await.unwrap().ready, 400);
    assert_eq!(q.get("s123").await.unwrap().unwrap().state, JobState::Ready);
    q.cancel("s123").await.unwrap();
    let w = q
        .work(drained(), |job: Job| async move {
            if job.id.ends_with('0') {
                Err("no".to_string())
            } else {
                Ok(())
            }
        })
        .unwrap();
    let stats = w.join().await;
    assert_eq!((stats.completed, stats.failed), (359, 40));
    assert_eq!(q.dead_letters(0, 100).await.unwrap().len(), 40);
    assert_eq!(
        q.dead_letters(30, 100).await.unwrap().len(),
        10,
        "paged across shards"
    );
    q.requeue("s10").await.unwrap();
    assert_eq!(q.purge().await.unwrap(), 39);
    let s = q.stats().await.unwrap();
    assert_eq!((s.ready, s.dead, s.completed, s.cancelled), (1, 0, 359, 1));
}

#[tokio::test]
async fn an_id_creates_one_job_within_the_idempotency_window_even_after_its_job_was_trimmed() {
    let server = RedisServer::start();
    // Completed jobs are deleted at once, so only the window remembers the id.
    let q = queue_with(
        &server.url,
        QueueOptions {
            keep_completed: 0,
            ..Default::default()
        },
    );
    assert!(q.enqueue(b"x", id("charge-42")).await.unwrap().created);
    common::drain_noop(&q).await;
    assert!(
        q.get("charge-42").await.unwrap().is_none(),
        "its data is gone"
    );
    let again = q.enqueue(b"x", id("charge-42")).await.unwrap();
    assert!(
        !again.created,
        "enqueued again within the window: nothing created"
    );
    assert_eq!(q.stats().await.unwrap().ready, 0);

    // Without a window, an id is remembered only while its job is retained.
    let forgetful = queue_with(
        &server.url,
        QueueOptions {
            keep_completed: 0,
            idempotency_window: None,
            ..Default::default()
        },
    );
    forgetful.enqueue(b"x", id("charge-42")).await.unwrap();
    common::drain_noop(&forgetful).await;
    assert!(
        forgetful
            .enqueue(b"x", id("charge-42"))
            .await
            .unwrap()
            .created
    );

    // A short window: the id is free again once it has passed.
    let short = queue_with(
        &server.url,
        QueueOptions {
            keep_completed: 0,
            idempotency_window: Some(Duration::from_millis(200)),
            ..Default::default()
        },
    );
    short.enqueue(b"x", id("a")).await.unwrap();
    common::drain_noop(&short).await;
    assert!(!short.enqueue(b"x", id("a")).await.unwrap().created);
    tokio::time::sleep(Duration::from_millis(300)).await;
    short.enqueue(b"x", id("other")).await.unwrap();
    common::drain_noop(&short).await; // a completion trims the window
    assert!(short.enqueue(b"x", id("a")).await.unwrap().created);
}

#[tokio::test]
async fn cancelled_and_purged_jobs_free_their_ids() {
    let server = RedisServer::start();
    let q = queue_with(
        &server.url,
        QueueOptions {
            max_attempts: 1,
            ..Default::default()
        },
    );
    q.enqueue(
        b"x",
        EnqueueOptions {
            delay: Some(Duration::from_secs(60)),
            ..id("c")
        },
    )
    .await
    .unwrap();
    q.cancel("c").await.unwrap();
    assert!(
        q.enqueue(
            b"x",
            EnqueueOptions {
                delay: Some(Duration::from_secs(60)),
                ..id("c")
            }
        )
        .await
        .unwrap()
        .created
    );
    q.cancel("c").await.unwrap();
    q.enqueue(b"x", id("p")).await.unwrap();
    let fail = |_job: Job| async { Err::<(), String>("boom".into()) };
    q.work(drained(), fail).unwrap().join().await;
    assert_eq!(q.purge().await.unwrap(), 1);
    assert!(q.enqueue(b"x", id("p")).await.unwrap().created);
}

#[tokio::test]
async fn a_batch_over_the_maximum_is_refused_whole_and_nothing_is_written() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let jobs: Vec<(&[u8], EnqueueOptions)> = (0..tideq::MAX_BATCH + 1)
        .map(|_| (&b"x"[..], EnqueueOptions::default()))
        .collect();
    let err = q.enqueue_many(&jobs).await.unwrap_err();
    assert_eq!(err.code(), "INVALID_ARGUMENT");
    assert!(err.message().contains("at most 100000"), "{err}");
    assert_eq!(q.stats().await.unwrap().enqueued, 0);
    let capped = tideq::CappedQueue::new(
        &Client::open(&server.url).unwrap(),
        &common::unique("c"),
        Default::default(),
    )
    .unwrap();
    let items: Vec<(&str, &[u8])> = (0..tideq::MAX_BATCH + 1)
        .map(|_| ("g", &b"x"[..]))
        .collect();
    assert_eq!(
        capped.push_many(&items).await.unwrap_err().code(),
        "INVALID_ARGUMENT"
    );
    assert_eq!(capped.len("g").await.unwrap(), 0);
}

#[tokio::test]
async fn the_idempotency_window_remembers_at_most_its_bound_of_ids_oldest_forgotten_first() {
    let server = RedisServer::start();
    let q = queue_with(
        &server.url,
        QueueOptions {
            keep_completed: 0,
            idempotency_max_ids: 3,
            ..Default::default()
        },
    );
    for i in 0..5 {
        q.enqueue(b"x", id(&format!("i{i}"))).await.unwrap();
        common::drain_noop(&q).await;
    }
    let remembered: u64 = redis::cmd("ZCARD")
        .arg(format!("tideq:{{{}}}:idem", q.name()))
        .query(&mut server.conn())
        .unwrap();
    assert_eq!(remembered, 3, "memory stays bounded");
    assert!(
        q.enqueue(b"x", id("i0")).await.unwrap().created,
        "the oldest was forgotten"
    );
    assert!(
        !q.enqueue(b"x", id("i4")).await.unwrap().created,
        "the newest is remembered"
    );
}
