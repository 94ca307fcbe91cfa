//! Flow control: what decides which job runs next. Priorities (lower first, FIFO within one),
//! groups served round-robin in their own order, per-group concurrency limits and start rates,
//! a queue-wide running cap and start rate, pause and resume (the queue or one group). Limits hold
//! across worker processes, and a worker killed mid-job gives its group's slots back.

mod common;

use std::collections::HashMap;
use std::process::{Child, Command};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::jobs::*;
use common::{unique, RedisServer};
use tideq::{
    Client, EnqueueOptions, ErrorKind, GroupLimits, Job, JobState, Limits, Queue, QueueOptions,
    Rate, WorkerOptions, MAX_PRIORITY,
};

fn prio(p: u32) -> EnqueueOptions {
    EnqueueOptions {
        priority: Some(p),
        ..Default::default()
    }
}

fn group(g: &str) -> EnqueueOptions {
    EnqueueOptions {
        group: Some(g.into()),
        ..Default::default()
    }
}

async fn lease_all(q: &Queue) -> Vec<String> {
    let mut out = Vec::new();
    loop {
        let jobs = q.lease_jobs(100, Duration::from_secs(30)).await.unwrap();
        if jobs.is_empty() {
            return out;
        }
        for j in jobs {
            q.complete(&j).await.unwrap();
            out.push(String::from_utf8(j.payload).unwrap());
        }
    }
}

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

/// Records, in Redis, how many jobs of each group run at once: `HINCRBY` on start and end, and
/// the highest count seen per group. Works across processes.
async fn observe(conn: &mut redis::aio::MultiplexedConnection, key: &str, g: &str) -> i64 {
    let now: i64 = redis::cmd("HINCRBY")
        .arg(format!("{key}:running"))
        .arg(g)
        .arg(1)
        .query_async(conn)
        .await
        .unwrap();
    let _: () = redis::cmd("EVAL")
        .arg("if tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or 0) < tonumber(ARGV[2]) then redis.call('HSET', KEYS[1], ARGV[1], ARGV[2]) end")
        .arg(1)
        .arg(format!("{key}:max"))
        .arg(g)
        .arg(now)
        .query_async(conn)
        .await
        .unwrap();
    now
}

async fn observed_end(conn: &mut redis::aio::MultiplexedConnection, key: &str, g: &str) {
    let _: i64 = redis::cmd("HINCRBY")
        .arg(format!("{key}:running"))
        .arg(g)
        .arg(-1)
        .query_async(conn)
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_at_its_limit_never_blocks_the_other_groups() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    q.set_limits(Limits {
        group_concurrency: Some(1),
        ..Default::default()
    })
    .await
    .unwrap();
    for i in 0..3 {
        q.enqueue(format!("slow-{i}").as_bytes(), group("slow"))
            .await
            .unwrap();
    }
    for i in 0..20 {
        q.enqueue(
            format!("fast-{i}").as_bytes(),
            group(&format!("f{}", i % 4)),
        )
        .await
        .unwrap();
    }
    let release = Arc::new(tokio::sync::Notify::new());
    let fast = Arc::new(AtomicU64::new(0));
    let (r, f) = (release.clone(), fast.clone());
    let worker = q
        .work(
            WorkerOptions {
                concurrency: 8,
                ..Default::default()
            },
            move |job: Job| {
                let (r, f) = (r.clone(), f.clone());
                async move {
                    if job.payload.starts_with(b"slow") {
                        r.notified().await;
                    } else {
                        f.fetch_add(1, Ordering::SeqCst);
                    }
                    Ok::<(), String>(())
                }
            },
        )
        .unwrap();
    // All fast jobs finish while the slow group's first job holds its only slot.
    assert!(
        wait_until(Duration::from_secs(20), || fast.load(Ordering::SeqCst)
            == 20)
        .await
    );
    let info = q.group("slow").await.unwrap();
    assert_eq!((info.active, info.ready, info.concurrency), (1, 2, Some(1)));
    for _ in 0..3 {
        release.notify_one();
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        wait_for(Duration::from_secs(20), || async {
            let s = q.stats().await.unwrap();
            if s.completed < 23 {
                release.notify_one();
            }
            s.completed == 23
        })
        .await
    );
    worker.shutdown().await;
    let info = q.group("slow").await.unwrap();
    assert_eq!((info.active, info.ready), (0, 0));
}

#[tokio::test]
async fn concurrency_1_never_runs_two_jobs_of_a_group_at_once() {
    // BullMQ Pro's groups have been seen running two jobs of a group with concurrency 1.
    let server = RedisServer::start();
    let q = queue(&server.url);
    q.set_group_limits(
        "serial",
        GroupLimits {
            concurrency: Some(1),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let jobs: Vec<_> = (0..40)
        .map(|i| (format!("{i}").into_bytes(), group("serial")))
        .collect();
    q.enqueue_many(&jobs).await.unwrap();
    let client = redis::Client::open(server.url.as_str()).unwrap();
    let key = unique("obs");
    let order = Arc::new(Mutex::new(Vec::new()));
    let (k, o) = (key.clone(), order.clone());
    let worker = q
        .work(
            WorkerOptions {
                concurrency: 20,
                stop_when_drained: true,
                poll_interval: Duration::from_millis(100),
                ..Default::default()
            },
            move |job: Job| {
                let (client, k, o) = (client.clone(), k.clone(), o.clone());
                async move {
                    let mut c = client.get_multiplexed_async_connection().await.unwrap();
                    observe(&mut c, &k, "serial").await;
                    o.lock()
                        .unwrap()
                        .push(String::from_utf8(job.payload).unwrap());
                    tokio::time::sleep(Duration::from_millis(2)).await;
                    observed_end(&mut c, &k, "serial").await;
                    Ok::<(), String>(())
                }
            },
        )
        .unwrap();
    let stats = worker.join().await;
    assert_eq!(stats.completed, 40);
    let max: i64 = redis::cmd("HGET")
        .arg(format!("{key}:max"))
        .arg("serial")
        .query(&mut server.conn())
        .unwrap();
    assert_eq!(max, 1);
    // And in order.
    let expect: Vec<String> = (0..40).map(|i| i.to_string()).collect();
    assert_eq!(*order.lock().unwrap(), expect);
}

#[tokio::test]
async fn a_stalled_job_gives_its_group_slot_back_and_keeps_its_place() {
    // BullMQ Pro: a stalled job could leave its group's active count stuck, and the group
    // stopped. Here the expired lease frees the slot, and the job runs again before the jobs
    // enqueued after it.
    let server = RedisServer::start();
    let q = queue(&server.url);
    q.set_limits(Limits {
        group_concurrency: Some(1),
        ..Default::default()
    })
    .await
    .unwrap();
    for i in 0..3 {
        q.enqueue(format!("{i}").as_bytes(), group("g"))
            .await
            .unwrap();
    }
    let first = q.lease_jobs(10, Duration::from_millis(200)).await.unwrap();
    assert_eq!(first.len(), 1, "the group's limit is 1");
    assert_eq!(first[0].payload, b"0");
    assert!(q
        .lease_jobs(10, Duration::from_secs(30))
        .await
        .unwrap()
        .is_empty());
    assert_eq!(q.group("g").await.unwrap().active, 1);
    // The holder dies (never acks). Once the lease is over, the slot is back, and job 0 first.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let again = q.lease_jobs(10, Duration::from_secs(30)).await.unwrap();
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].payload, b"0");
    assert_eq!(again[0].attempt, 2);
    assert!(matches!(
        q.complete(&first[0]).await.unwrap_err().kind(),
        ErrorKind::LeaseLost
    ));
    q.complete(&again[0]).await.unwrap();
    assert_eq!(lease_all(&q).await, ["1", "2"]);
    let info = q.group("g").await.unwrap();
    assert_eq!((info.active, info.ready), (0, 0));
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
async fn pause_stops_starts_while_enqueues_go_on_and_resume_wakes_idle_workers_at_once() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let started = Arc::new(AtomicU64::new(0));
    let release = Arc::new(tokio::sync::Semaphore::new(0));
    let (s, r) = (started.clone(), release.clone());
    let worker = q
        .work(
            WorkerOptions {
                concurrency: 4,
                // Longer than the test: only a wake-up can start the jobs after the resume.
                poll_interval: Duration::from_secs(60),
                ..Default::default()
            },
            move |_job: Job| {
                let (s, r) = (s.clone(), r.clone());
                async move {
                    s.fetch_add(1, Ordering::SeqCst);
                    r.acquire().await.unwrap().forget();
                    Ok::<(), String>(())
                }
            },
        )
        .unwrap();
    q.enqueue(b"running", EnqueueOptions::default())
        .await
        .unwrap();
    assert!(
        wait_until(Duration::from_secs(10), || started.load(Ordering::SeqCst)
            == 1)
        .await
    );
    q.pause().await.unwrap();
    assert!(q.is_paused().await.unwrap());
    assert!(q.stats().await.unwrap().paused);
    for _ in 0..3 {
        q.enqueue(b"later", EnqueueOptions::default())
            .await
            .unwrap();
    }
    q.enqueue(b"later", group("g")).await.unwrap();
    q.enqueue(b"later", prio(3)).await.unwrap();
    // The running job finishes; nothing new starts.
    release.add_permits(1);
    assert!(
        wait_for(Duration::from_secs(10), || async {
            q.stats().await.unwrap().completed == 1
        })
        .await
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(started.load(Ordering::SeqCst), 1);
    let s = q.stats().await.unwrap();
    assert_eq!((s.ready, s.active), (5, 0));
    release.add_permits(100);
    let resumed = Instant::now();
    q.resume().await.unwrap();
    assert!(!q.is_paused().await.unwrap());
    assert!(
        wait_for(Duration::from_secs(10), || async {
            q.stats().await.unwrap().completed == 6
        })
        .await
    );
    assert!(
        resumed.elapsed() < Duration::from_secs(30),
        "woken, not polled"
    );
    worker.shutdown().await;
}

#[tokio::test]
async fn a_paused_group_waits_while_the_others_run() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    q.pause_group("held").await.unwrap();
    for g in ["held", "free", "held", "free"] {
        q.enqueue(g.as_bytes(), group(g)).await.unwrap();
    }
    assert_eq!(lease_all(&q).await, ["free", "free"]);
    let info = q.group("held").await.unwrap();
    assert!(info.paused);
    assert_eq!(info.ready, 2);
    q.resume_group("held").await.unwrap();
    assert!(!q.group("held").await.unwrap().paused);
    assert_eq!(lease_all(&q).await, ["held", "held"]);
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
    assert_eq!(all[0], q.group("free").await.unwrap());
    assert_eq!(all[1], q.group("held").await.unwrap());
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
async fn limits_are_read_back_and_a_group_uses_its_own_or_the_queue_default() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let limits = Limits {
        max_active: Some(7),
        rate: Some(Rate::new(100, Duration::from_secs(1))),
        group_concurrency: Some(2),
        group_rate: Some(Rate::new(5, Duration::from_millis(250))),
    };
    q.set_limits(limits).await.unwrap();
    assert_eq!(q.limits().await.unwrap(), limits);
    let own = GroupLimits {
        concurrency: Some(9),
        rate: None,
    };
    q.set_group_limits("vip", own).await.unwrap();
    let vip = q.group("vip").await.unwrap();
    assert_eq!(vip.concurrency, Some(9));
    assert_eq!(vip.rate, limits.group_rate);
    let other = q.group("other").await.unwrap();
    assert_eq!(
        (other.concurrency, other.rate),
        (Some(2), limits.group_rate)
    );
    q.set_limits(Limits::default()).await.unwrap();
    assert_eq!(q.limits().await.unwrap(), Limits::default());
    assert_eq!(q.group("other").await.unwrap().concurrency, None);
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

#[tokio::test]
async fn rate_limited_jobs_stay_ready_and_an_idle_worker_waits_exactly_for_the_window() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    q.set_limits(Limits {
        rate: Some(Rate::new(2, Duration::from_millis(400))),
        ..Default::default()
    })
    .await
    .unwrap();
    let jobs: Vec<_> = (0..6)
        .map(|_| (b"x".to_vec(), EnqueueOptions::default()))
        .collect();
    q.enqueue_many(&jobs).await.unwrap();
    let starts = Arc::new(Mutex::new(Vec::new()));
    let s = starts.clone();
    let worker = q
        .work(
            WorkerOptions {
                concurrency: 10,
                // Longer than the test: the worker must wake for the window by itself.
                poll_interval: Duration::from_secs(60),
                ..Default::default()
            },
            move |job: Job| {
                s.lock().unwrap().push(job.started_at);
                async { Ok::<(), String>(()) }
            },
        )
        .unwrap();
    assert!(
        wait_until(Duration::from_secs(20), || starts.lock().unwrap().len()
            >= 2)
        .await
    );
    // Limited jobs wait where they are: ready, not delayed.
    let s = q.stats().await.unwrap();
    assert_eq!((s.delayed, s.ready), (0, 4));
    assert!(
        wait_until(Duration::from_secs(20), || starts.lock().unwrap().len()
            == 6)
        .await
    );
    worker.shutdown().await;
    let mut t = starts.lock().unwrap().clone();
    t.sort();
    // Never three starts within 400 ms.
    for w in t.windows(3) {
        assert!(w[2] - w[0] >= 400, "{t:?}");
    }
}

#[tokio::test]
async fn a_group_rate_limits_that_group_only() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    q.set_group_limits(
        "slow",
        GroupLimits {
            rate: Some(Rate::new(1, Duration::from_secs(60))),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    for g in ["slow", "slow", "fast", "fast", "fast"] {
        q.enqueue(g.as_bytes(), group(g)).await.unwrap();
    }
    let mut got = lease_all(&q).await;
    got.sort();
    assert_eq!(got, ["fast", "fast", "fast", "slow"]);
    let info = q.group("slow").await.unwrap();
    assert_eq!(info.ready, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_active_caps_the_running_jobs_across_workers() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    q.set_limits(Limits {
        max_active: Some(3),
        ..Default::default()
    })
    .await
    .unwrap();
    let jobs: Vec<_> = (0..30)
        .map(|_| (b"x".to_vec(), EnqueueOptions::default()))
        .collect();
    q.enqueue_many(&jobs).await.unwrap();
    let client = redis::Client::open(server.url.as_str()).unwrap();
    let key = unique("obs");
    let mut workers = Vec::new();
    for _ in 0..2 {
        let (client, k) = (client.clone(), key.clone());
        let w = queue_named(&server.url, q.name())
            .work(
                WorkerOptions {
                    concurrency: 10,
                    ..Default::default()
                },
                move |_job: Job| {
                    let (client, k) = (client.clone(), k.clone());
                    async move {
                        let mut c = client.get_multiplexed_async_connection().await.unwrap();
                        observe(&mut c, &k, "all").await;
                        tokio::time::sleep(Duration::from_millis(20)).await;
                        observed_end(&mut c, &k, "all").await;
                        Ok::<(), String>(())
                    }
                },
            )
            .unwrap();
        workers.push(w);
    }
    assert!(
        wait_for(Duration::from_secs(30), || async {
            q.stats().await.unwrap().completed == 30
        })
        .await
    );
    for w in &workers {
        w.shutdown().await;
    }
    let max: i64 = redis::cmd("HGET")
        .arg(format!("{key}:max"))
        .arg("all")
        .query(&mut server.conn())
        .unwrap();
    assert!(max <= 3, "{max} jobs ran at once");
}

fn queue_named(url: &str, name: &str) -> Queue {
    Queue::new(
        &Client::open(url).unwrap(),
        name,
        QueueOptions {
            backoff: tideq::Backoff::fixed(50),
            ..Default::default()
        },
    )
    .unwrap()
}

// ---- worker processes ----------------------------------------------------------------------

/// Runs as a worker process when started by [`spawn_worker`] (this test binary, re-executed with
/// `TIDEQ_FLOW_CHILD` set); a no-op in a normal test run. The handler records what it sees in
/// Redis: per group, jobs running now and the most seen at once; start times of every job.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flow_worker_process() {
    let Ok(spec) = std::env::var("TIDEQ_FLOW_CHILD") else {
        return;
    };
    let (url, name, key, lease_ms, hang) = {
        let p: Vec<&str> = spec.split(' ').collect();
        (
            p[0].to_string(),
            p[1].to_string(),
            p[2].to_string(),
            p[3].parse::<u64>().unwrap(),
            p[4] == "hang",
        )
    };
    let q = queue_named(&url, &name);
    let client = redis::Client::open(url.as_str()).unwrap();
    let k = key.clone();
    let worker = q
        .work(
            WorkerOptions {
                concurrency: 30,
                lease: Duration::from_millis(lease_ms),
                ..Default::default()
            },
            move |job: Job| {
                let (client, k) = (client.clone(), k.clone());
                async move {
                    let mut c = client.get_multiplexed_async_connection().await.unwrap();
                    let g = String::from_utf8(job.payload.clone()).unwrap();
                    observe(&mut c, &k, &g).await;
                    let _: () = redis::cmd("RPUSH")
                        .arg(format!("{k}:starts"))
                        .arg(job.started_at)
                        .query_async(&mut c)
                        .await
                        .unwrap();
                    if hang {
                        std::future::pending::<()>().await;
                    }
                    tokio::time::sleep(Duration::from_millis(3 + fastrand_ms())).await;
                    observed_end(&mut c, &k, &g).await;
                    Ok::<(), String>(())
                }
            },
        )
        .unwrap();
    worker.run_until_signal().await;
}

fn fastrand_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos() as u64
        % 7
}

struct WorkerProcess(Child);

impl Drop for WorkerProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn spawn_worker(url: &str, queue: &str, key: &str, lease_ms: u64, hang: bool) -> WorkerProcess {
    let exe = std::env::current_exe().unwrap();
    let spec = format!(
        "{url} {queue} {key} {lease_ms} {}",
        if hang { "hang" } else { "run" }
    );
    WorkerProcess(
        Command::new(exe)
            .args([
                "--exact",
                "flow_worker_process",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("TIDEQ_FLOW_CHILD", spec)
            .spawn()
            .unwrap(),
    )
}

fn max_seen(server: &RedisServer, key: &str) -> HashMap<String, i64> {
    redis::cmd("HGETALL")
        .arg(format!("{key}:max"))
        .query(&mut server.conn())
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_group_concurrency_is_never_exceeded_across_three_worker_processes() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let key = unique("obs");
    q.set_limits(Limits {
        group_concurrency: Some(3),
        ..Default::default()
    })
    .await
    .unwrap();
    q.set_group_limits(
        "g0",
        GroupLimits {
            concurrency: Some(1),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let jobs: Vec<_> = (0..600)
        .map(|i| {
            let g = format!("g{}", i % 8);
            (g.clone().into_bytes(), group(&g))
        })
        .collect();
    q.enqueue_many(&jobs).await.unwrap();
    let _workers: Vec<_> = (0..3)
        .map(|_| spawn_worker(&server.url, q.name(), &key, 30_000, false))
        .collect();
    assert!(
        wait_for(Duration::from_secs(120), || async {
            q.stats().await.unwrap().completed == 600
        })
        .await,
        "{:?}",
        q.stats().await.unwrap()
    );
    let max = max_seen(&server, &key);
    assert_eq!(max.len(), 8);
    for (g, m) in &max {
        let limit = if g == "g0" { 1 } else { 3 };
        assert!(
            *m <= limit,
            "group {g}: {m} jobs ran at once (limit {limit})"
        );
    }
    // The limits were reached, not just respected by a slow run.
    assert!(max.values().filter(|m| **m == 3).count() >= 4, "{max:?}");
    for g in 0..8 {
        let info = q.group(&format!("g{g}")).await.unwrap();
        assert_eq!((info.active, info.ready), (0, 0));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_holding_a_groups_jobs_gives_the_slots_back_within_the_lease() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let key = unique("obs");
    q.set_limits(Limits {
        group_concurrency: Some(2),
        ..Default::default()
    })
    .await
    .unwrap();
    let jobs: Vec<_> = (0..6).map(|_| (b"t".to_vec(), group("t"))).collect();
    q.enqueue_many(&jobs).await.unwrap();
    let mut hung = spawn_worker(&server.url, q.name(), &key, 1_000, true);
    assert!(
        wait_for(Duration::from_secs(30), || async {
            q.group("t").await.unwrap().active == 2
        })
        .await
    );
    hung.0.kill().unwrap(); // SIGKILL
    hung.0.wait().unwrap();
    let killed = Instant::now();
    assert_eq!(
        q.group("t").await.unwrap().active,
        2,
        "held until the leases end"
    );
    let done = Arc::new(AtomicU64::new(0));
    let d = done.clone();
    let worker = q
        .work(drained(), move |_job: Job| {
            d.fetch_add(1, Ordering::SeqCst);
            async { Ok::<(), String>(()) }
        })
        .unwrap();
    let stats = worker.join().await;
    assert_eq!(stats.completed, 6);
    assert!(killed.elapsed() < Duration::from_secs(30));
    let info = q.group("t").await.unwrap();
    assert_eq!((info.active, info.ready), (0, 0));
    assert_eq!(q.stats().await.unwrap().recovered, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_of_500_per_second_holds_across_three_worker_processes() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let key = unique("obs");
    q.set_limits(Limits {
        rate: Some(Rate::new(500, Duration::from_secs(1))),
        ..Default::default()
    })
    .await
    .unwrap();
    let jobs: Vec<_> = (0..5_000)
        .map(|_| (b"all".to_vec(), EnqueueOptions::default()))
        .collect();
    q.enqueue_many(&jobs).await.unwrap();
    let workers: Vec<_> = (0..3)
        .map(|_| spawn_worker(&server.url, q.name(), &key, 30_000, false))
        .collect();
    // Six seconds from the first start, then stop starting.
    let mut conn = server.conn();
    let first = loop {
        let s: Vec<u64> = redis::cmd("LRANGE")
            .arg(format!("{key}:starts"))
            .arg(0)
            .arg(0)
            .query(&mut conn)
            .unwrap();
        if let Some(t) = s.first() {
            break *t;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    while redis_ms(&server) < first + 6_500 {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    q.pause().await.unwrap();
    drop(workers);
    let mut starts: Vec<u64> = redis::cmd("LRANGE")
        .arg(format!("{key}:starts"))
        .arg(0)
        .arg(-1)
        .query(&mut conn)
        .unwrap();
    starts.sort();
    let in_six: Vec<u64> = starts
        .iter()
        .copied()
        .filter(|t| *t < first + 6_000)
        .collect();
    let n = in_six.len() as f64;
    assert!(
        (n - 3000.0).abs() <= 90.0,
        "{n} starts in 6 s at 500/s (expected 3,000 ± 3%)"
    );
    // No one-second window (sliding, on the Redis clock) holds more than 500 starts.
    for (i, t) in starts.iter().enumerate() {
        let j = starts.partition_point(|s| *s < t + 1000);
        assert!(j - i <= 500, "{} starts in the second from {t}", j - i);
    }
}

#[tokio::test]
async fn a_limit_set_while_jobs_run_counts_the_jobs_already_running() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    for i in 0..4 {
        q.enqueue(format!("{i}").as_bytes(), group("g"))
            .await
            .unwrap();
    }
    let running = q.lease_jobs(2, Duration::from_secs(30)).await.unwrap();
    assert_eq!(running.len(), 2);
    assert_eq!(
        q.group("g").await.unwrap().active,
        2,
        "counted without a limit too"
    );
    q.set_group_limits(
        "g",
        GroupLimits {
            concurrency: Some(2),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(q.group("g").await.unwrap().active, 2);
    assert!(q
        .lease_jobs(10, Duration::from_secs(30))
        .await
        .unwrap()
        .is_empty());
    q.complete(&running[0]).await.unwrap();
    let next = q.lease_jobs(10, Duration::from_secs(30)).await.unwrap();
    assert_eq!(next.len(), 1);
    assert_eq!(next[0].payload, b"2");
    // Lifting the limit lets the rest start; setting one again counts afresh.
    q.set_group_limits("g", GroupLimits::default())
        .await
        .unwrap();
    let rest = q.lease_jobs(10, Duration::from_secs(30)).await.unwrap();
    assert_eq!(rest.len(), 1);
    q.set_limits(Limits {
        group_concurrency: Some(5),
        ..Default::default()
    })
    .await
    .unwrap();
    assert_eq!(q.group("g").await.unwrap().active, 3);
    for j in [&running[1], &next[0], &rest[0]] {
        q.complete(j).await.unwrap();
    }
    assert_eq!(q.group("g").await.unwrap().active, 0);
}
