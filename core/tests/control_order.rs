//! Queue control, the order jobs run in: priorities (lower first, FIFO within one), groups served
//! round-robin in their own order (a retried job keeps its place), what is refused before anything
//! is written, and what `get`, `stats` and `groups` show of priorities and groups.

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::control::*;
use common::jobs::*;
use common::{unique, RedisServer};
use tideq::{
    Client, EnqueueOptions, ErrorKind, GroupLimits, Job, JobState, Limits, Queue, QueueOptions,
    Rate, WorkerOptions, MAX_PRIORITY,
};

#[tokio::test]
async fn jobs_without_a_priority_run_first_then_the_lowest_number_first_in_order_within_one() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    for (payload, o) in [
        ("plain-1", EnqueueOptions::default()),
        ("p5-1", prio(5)),
        ("p1-1", prio(1)),
        ("p5-2", prio(5)),
        ("plain-2", EnqueueOptions::default()),
        ("p1-2", prio(1)),
        ("last", prio(MAX_PRIORITY)),
        ("p1-3", prio(1)),
    ] {
        q.enqueue(payload.as_bytes(), o).await.unwrap();
    }
    assert_eq!(q.stats().await.unwrap().ready, 8);
    let order = lease_all(&q).await;
    assert_eq!(
        order,
        ["plain-1", "plain-2", "p1-1", "p1-2", "p1-3", "p5-1", "p5-2", "last"]
    );
}

#[tokio::test]
async fn a_priority_or_group_out_of_range_is_refused_and_nothing_is_written() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    for bad in [
        prio(0),
        prio(MAX_PRIORITY + 1),
        group(""),
        group("a{b}"),
        group("line\nbreak"),
    ] {
        let e = q.enqueue(b"x", bad.clone()).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{bad:?}: {e}");
    }
    let e = q.enqueue(b"x", prio(0)).await.unwrap_err();
    assert!(e.to_string().contains("priority must be 1"), "{e}");
    // A bad job in a batch refuses the whole batch.
    let batch = vec![(b"ok".to_vec(), group("fine")), (b"bad".to_vec(), prio(0))];
    assert!(q.enqueue_many(&batch).await.is_err());
    assert_eq!(q.stats().await.unwrap().enqueued, 0);
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("*{}*", q.name()))
        .query(&mut server.conn())
        .unwrap();
    assert!(keys.is_empty(), "{keys:?}");
    // Limits too.
    let zero_rate = Limits {
        rate: Some(Rate::new(0, Duration::from_secs(1))),
        ..Default::default()
    };
    for bad in [
        zero_rate,
        Limits {
            rate: Some(Rate::new(5, Duration::ZERO)),
            ..Default::default()
        },
        Limits {
            max_active: Some(0),
            ..Default::default()
        },
        Limits {
            group_concurrency: Some(0),
            ..Default::default()
        },
    ] {
        let e = q.set_limits(bad).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{bad:?}: {e}");
    }
    let e = q
        .set_group_limits(
            "g",
            GroupLimits {
                concurrency: Some(0),
                ..Default::default()
            },
        )
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert_eq!(q.limits().await.unwrap(), Limits::default());
}

#[tokio::test]
async fn a_group_keeps_its_order_and_its_priorities() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    for i in 0..5 {
        q.enqueue(format!("g-{i}").as_bytes(), group("g"))
            .await
            .unwrap();
    }
    let urgent = EnqueueOptions {
        priority: Some(1),
        group: Some("g".into()),
        ..Default::default()
    };
    q.enqueue(b"g-urgent", urgent).await.unwrap();
    // Priority within a group: the urgent one first (a group's jobs without a priority count as
    // 0, before it, like plain jobs before prioritized ones).
    let order = lease_all(&q).await;
    assert_eq!(order, ["g-0", "g-1", "g-2", "g-3", "g-4", "g-urgent"]);
}

#[tokio::test]
async fn groups_are_served_round_robin() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let mut jobs = Vec::new();
    for g in ["a", "b", "c"] {
        for i in 0..3 {
            jobs.push((format!("{g}{i}").into_bytes(), group(g)));
        }
    }
    q.enqueue_many(&jobs).await.unwrap();
    let order = lease_all(&q).await;
    assert_eq!(
        order,
        ["a0", "b0", "c0", "a1", "b1", "c1", "a2", "b2", "c2"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_group_with_20000_jobs_cannot_starve_50_groups_with_20() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let big: Vec<_> = (0..20_000)
        .map(|_| (b"big".to_vec(), group("big")))
        .collect();
    q.enqueue_many(&big).await.unwrap();
    let small: Vec<_> = (0..50)
        .flat_map(|g| (0..20).map(move |_| (b"small".to_vec(), group(&format!("tenant-{g}")))))
        .collect();
    q.enqueue_many(&small).await.unwrap();
    let big_done = Arc::new(AtomicU64::new(0));
    let small_done = Arc::new(AtomicU64::new(0));
    let big_when_small_finished = Arc::new(AtomicU64::new(u64::MAX));
    let (b, s, w) = (
        big_done.clone(),
        small_done.clone(),
        big_when_small_finished.clone(),
    );
    let worker = q
        .work(
            WorkerOptions {
                concurrency: 10,
                ..Default::default()
            },
            move |job: Job| {
                if job.payload == b"big" {
                    b.fetch_add(1, Ordering::SeqCst);
                } else if s.fetch_add(1, Ordering::SeqCst) + 1 == 1000 {
                    w.store(b.load(Ordering::SeqCst), Ordering::SeqCst);
                }
                async { Ok::<(), String>(()) }
            },
        )
        .unwrap();
    assert!(
        wait_until(Duration::from_secs(120), || small_done
            .load(Ordering::SeqCst)
            == 1000)
        .await
    );
    worker.shutdown().await;
    let big_then = big_when_small_finished.load(Ordering::SeqCst);
    // Round-robin: about 20 big jobs ran beside the 1,000 small ones (one per turn).
    assert!(
        big_then < 4_000,
        "the big group had {big_then} of 20,000 jobs done when the small groups finished"
    );
    assert!(big_then <= 100, "{big_then}");
}

#[tokio::test]
async fn a_retried_grouped_job_runs_before_the_jobs_enqueued_after_it() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    for i in 0..3 {
        q.enqueue(format!("{i}").as_bytes(), group("g"))
            .await
            .unwrap();
    }
    let j = q.lease_jobs(1, Duration::from_secs(30)).await.unwrap();
    assert_eq!(j[0].payload, b"0");
    q.fail(&j[0], "try again").await.unwrap();
    // Its backoff (50 ms) passes; it is back at the head of its group.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(lease_all(&q).await, ["0", "1", "2"]);
}

#[tokio::test]
async fn groups_lists_every_known_group_by_name_as_group_tells_it() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    assert_eq!(q.groups().await.unwrap(), []);
    q.pause_group("held").await.unwrap();
    for g in ["held", "free", "held"] {
        q.enqueue(g.as_bytes(), group(g)).await.unwrap();
    }
    let all = q.groups().await.unwrap();
    let names: Vec<&str> = all.iter().map(|g| g.group.as_str()).collect();
    assert_eq!(names, ["free", "held"]);
    // As `group` tells it, but the latency, which only `group` reads.
    let timeless = |g: &tideq::GroupInfo| tideq::GroupInfo {
        latency: None,
        ..g.clone()
    };
    assert_eq!(timeless(&all[0]), timeless(&q.group("free").await.unwrap()));
    assert_eq!(timeless(&all[1]), timeless(&q.group("held").await.unwrap()));
    assert_eq!((all[0].ready, all[0].paused), (1, false));
    assert_eq!((all[1].ready, all[1].paused), (2, true));
    // Running jobs count, and a group known only by its settings is listed too.
    let running = q.lease_jobs(10, Duration::from_secs(30)).await.unwrap();
    assert_eq!(running.len(), 1);
    let own = GroupLimits {
        concurrency: Some(3),
        rate: None,
    };
    q.set_group_limits("idle", own).await.unwrap();
    let all = q.groups().await.unwrap();
    let names: Vec<&str> = all.iter().map(|g| g.group.as_str()).collect();
    assert_eq!(names, ["free", "held", "idle"]);
    assert_eq!((all[0].ready, all[0].active), (0, 1));
    assert_eq!((all[2].ready, all[2].concurrency), (0, Some(3)));

    // A sharded queue: every shard is read, each group listed once.
    let sharded = Queue::sharded(
        &Client::open(&server.url).unwrap(),
        &unique("jq"),
        4,
        QueueOptions::default(),
    )
    .unwrap();
    sharded.pause_group("g1").await.unwrap();
    for g in ["g1", "g2", "g3", "g4", "g5"] {
        sharded.enqueue(b"x", group(g)).await.unwrap();
    }
    let all = sharded.groups().await.unwrap();
    let names: Vec<&str> = all.iter().map(|g| g.group.as_str()).collect();
    assert_eq!(names, ["g1", "g2", "g3", "g4", "g5"]);
    assert!(all
        .iter()
        .all(|g| g.ready == 1 && g.paused == (g.group == "g1")));
}

#[tokio::test]
async fn get_and_stats_show_priority_group_and_ready_counts() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let both = EnqueueOptions {
        id: Some("both".into()),
        priority: Some(4),
        group: Some("acme".into()),
        ..Default::default()
    };
    q.enqueue(b"x", both).await.unwrap();
    q.enqueue(b"x", id("plain")).await.unwrap();
    let p = EnqueueOptions {
        id: Some("p".into()),
        priority: Some(2),
        ..Default::default()
    };
    q.enqueue(b"x", p).await.unwrap();
    let info = q.get("both").await.unwrap().unwrap();
    assert_eq!(
        (info.priority, info.group.as_deref(), info.state),
        (Some(4), Some("acme"), JobState::Ready)
    );
    let plain = q.get("plain").await.unwrap().unwrap();
    assert_eq!((plain.priority, plain.group), (None, None));
    assert_eq!(q.get("p").await.unwrap().unwrap().priority, Some(2));
    let s = q.stats().await.unwrap();
    assert_eq!((s.ready, s.paused), (3, false));
    // Cancelling a grouped job keeps its group's counts true.
    q.cancel("both").await.unwrap();
    assert_eq!(q.group("acme").await.unwrap().ready, 0);
    assert_eq!(q.stats().await.unwrap().ready, 2);
    q.cancel("p").await.unwrap();
    assert_eq!(q.stats().await.unwrap().ready, 1);
    assert_eq!(lease_all(&q).await, ["x"]);
}
