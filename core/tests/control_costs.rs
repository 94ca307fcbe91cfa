//! Queue control, jobs' costs (`EnqueueOptions::cost`, issue 45 part 3): under a token-bucket
//! rate a job takes its cost in tokens when it starts; one that does not fit waits at the head of
//! its list or group (none behind it overtakes it) until its tokens are back; a cost above the
//! burst takes the whole burst; the counters stay right after the jobs go back; a bad cost is
//! refused with nothing written; the cost is forgotten with its job. Against a real redis-server.

mod common;

use std::time::Duration;

use common::control::*;
use common::jobs::*;
use common::RedisServer;
use tideq::{
    Client, EnqueueOptions, ErrorKind, GroupLimits, Limits, Queue, QueueOptions, Rate, MAX_COST,
};

const LEASE: Duration = Duration::from_secs(30);

fn cost(c: u32) -> EnqueueOptions {
    EnqueueOptions {
        cost: Some(c),
        ..Default::default()
    }
}

/// The payloads of the jobs one lease call starts (each completed).
async fn lease(q: &Queue) -> Vec<String> {
    let jobs = q.lease_jobs(100, LEASE).await.unwrap();
    let mut out = Vec::new();
    for j in jobs {
        q.complete(&j).await.unwrap();
        out.push(String::from_utf8(j.payload).unwrap());
    }
    out
}

async fn bucket(q: &Queue, max: u32, per: Duration, burst: u32) {
    q.set_limits(Limits {
        rate: Some(Rate::bucket(max, per, burst)),
        ..Default::default()
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn a_job_of_cost_10_takes_a_burst_of_10_and_nothing_starts_until_it_refills() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    // 10 a second (one token every 100 ms), at most 10.
    bucket(&q, 10, Duration::from_secs(1), 10).await;
    q.enqueue(b"big", cost(10)).await.unwrap();
    for i in 0..5 {
        q.enqueue(format!("small{i}").as_bytes(), Default::default())
            .await
            .unwrap();
    }
    assert_eq!(lease(&q).await, ["big"]);
    assert_eq!(lease(&q).await, Vec::<String>::new(), "the bucket is empty");
    assert_eq!(q.stats().await.unwrap().ready, 5);
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_eq!(lease(&q).await.len(), 5, "refilled");
}

#[tokio::test]
async fn a_costly_job_keeps_its_place_and_no_cheaper_job_behind_it_overtakes_it() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    bucket(&q, 10, Duration::from_secs(1), 10).await;
    for (name, c) in [
        ("a3", 3),
        ("b3", 3),
        ("c3", 3),
        ("d4", 4),
        ("e1", 1),
        ("f1", 1),
    ] {
        q.enqueue(name.as_bytes(), cost(c)).await.unwrap();
    }
    // 9 tokens taken; the 10th cannot start d4, and e1 and f1 wait behind it.
    assert_eq!(lease(&q).await, ["a3", "b3", "c3"]);
    assert_eq!(lease(&q).await, Vec::<String>::new());
    assert_eq!(q.stats().await.unwrap().ready, 3);
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_eq!(lease(&q).await, ["d4", "e1", "f1"], "in their order");
}

#[tokio::test]
async fn a_prioritized_costly_job_keeps_its_place_in_its_priority() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    bucket(&q, 1, Duration::from_secs(60), 5).await;
    let p = |c: u32| EnqueueOptions {
        priority: Some(1),
        cost: Some(c),
        ..Default::default()
    };
    q.enqueue(b"p3", p(3)).await.unwrap();
    q.enqueue(b"p4", p(4)).await.unwrap();
    q.enqueue(b"p1", p(1)).await.unwrap();
    assert_eq!(lease(&q).await, ["p3"]);
    assert_eq!(lease(&q).await, Vec::<String>::new());
    let s = q.stats().await.unwrap();
    assert_eq!(s.ready, 2, "p4 and p1 wait, counted");
    let ready = q.jobs(tideq::JobState::Ready, 0, 10).await.unwrap();
    let names: Vec<_> = ready
        .iter()
        .map(|j| String::from_utf8(j.payload.clone()).unwrap())
        .collect();
    assert_eq!(names, ["p4", "p1"], "in their order");
}

#[tokio::test]
async fn a_group_bucket_takes_each_jobs_cost_and_keeps_the_groups_order() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    q.set_group_limits(
        "metered",
        GroupLimits {
            rate: Some(Rate::bucket(1, Duration::from_secs(60), 5)),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let g = |c: u32| EnqueueOptions {
        group: Some("metered".into()),
        cost: Some(c),
        ..Default::default()
    };
    for (name, c) in [("m2a", 2), ("m2b", 2), ("m2c", 2), ("m1", 1)] {
        q.enqueue(name.as_bytes(), g(c)).await.unwrap();
    }
    for i in 0..3 {
        q.enqueue(format!("free{i}").as_bytes(), group("free"))
            .await
            .unwrap();
    }
    // Leased, not completed: the group's running count is checked.
    let mut got = Vec::new();
    loop {
        let jobs = q.lease_jobs(100, LEASE).await.unwrap();
        if jobs.is_empty() {
            break;
        }
        got.extend(
            jobs.into_iter()
                .map(|j| String::from_utf8(j.payload).unwrap()),
        );
    }
    let metered: Vec<_> = got.iter().filter(|p| p.starts_with('m')).collect();
    assert_eq!(metered, ["m2a", "m2b"], "{got:?}");
    assert_eq!(got.len(), 5, "{got:?}");
    let info = q.group("metered").await.unwrap();
    assert_eq!((info.ready, info.active), (2, 2));
    let s = q.stats().await.unwrap();
    assert_eq!((s.ready, s.active), (2, 5));
    let ready = q.jobs(tideq::JobState::Ready, 0, 10).await.unwrap();
    let mut names: Vec<_> = ready
        .iter()
        .map(|j| String::from_utf8(j.payload.clone()).unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["m1", "m2c"]);
}

#[tokio::test]
async fn a_group_job_waits_for_its_tokens_then_starts_first() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    // One token every 100 ms, at most 4.
    q.set_group_limits(
        "g",
        GroupLimits {
            rate: Some(Rate::bucket(10, Duration::from_secs(1), 4)),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let g = |c: u32| EnqueueOptions {
        group: Some("g".into()),
        cost: Some(c),
        ..Default::default()
    };
    for (name, c) in [("g3", 3), ("g4", 4), ("g1", 1)] {
        q.enqueue(name.as_bytes(), g(c)).await.unwrap();
    }
    assert_eq!(lease(&q).await, ["g3"]);
    assert_eq!(lease(&q).await, Vec::<String>::new());
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        lease(&q).await,
        ["g4"],
        "its tokens are back; g1 still behind it"
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(lease(&q).await, ["g1"]);
    let info = q.group("g").await.unwrap();
    assert_eq!((info.ready, info.active), (0, 0));
}

#[tokio::test]
async fn a_cost_above_the_burst_takes_the_whole_burst_once_the_bucket_is_full() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    // One token every 100 ms, at most 5.
    bucket(&q, 10, Duration::from_secs(1), 5).await;
    q.enqueue(b"huge1", cost(50)).await.unwrap();
    q.enqueue(b"huge2", cost(MAX_COST)).await.unwrap();
    assert_eq!(lease(&q).await, ["huge1"], "a full bucket starts it");
    assert_eq!(lease(&q).await, Vec::<String>::new());
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(lease(&q).await, ["huge2"]);
}

#[tokio::test]
async fn the_counters_stay_right_after_jobs_that_did_not_fit_go_back() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    // 100 tokens a second, at most 6: a job of cost 5 a call, the next ones given back.
    bucket(&q, 100, Duration::from_secs(1), 6).await;
    q.enqueue(b"plain", cost(5)).await.unwrap();
    q.enqueue(
        b"prio",
        EnqueueOptions {
            priority: Some(2),
            cost: Some(5),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    q.enqueue(
        b"grouped",
        EnqueueOptions {
            group: Some("g".into()),
            cost: Some(5),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let mut order = Vec::new();
    for _ in 0..3 {
        let jobs = q.lease_jobs(100, LEASE).await.unwrap();
        assert_eq!(jobs.len(), 1, "one job's tokens a call");
        order.push(String::from_utf8(jobs[0].payload.clone()).unwrap());
        let s = q.stats().await.unwrap();
        assert_eq!(s.ready as usize, 3 - order.len(), "after {order:?}");
        assert_eq!(s.active as usize, order.len());
        let info = q.group("g").await.unwrap();
        let started = order.iter().any(|p| p == "grouped");
        assert_eq!((info.ready, info.active), (!started as u64, started as u64));
        tokio::time::sleep(Duration::from_millis(80)).await;
    }
    assert_eq!(order, ["plain", "prio", "grouped"]);
}

#[tokio::test]
async fn a_sharded_queue_bucket_gives_each_shard_its_share_and_a_cost_above_it_takes_it_whole() {
    let server = RedisServer::start();
    let client = Client::open(&server.url).unwrap();
    let q = Queue::sharded(
        &client,
        &common::unique("costs"),
        2,
        QueueOptions::default(),
    )
    .unwrap();
    // 3 tokens per shard, nothing refills within the test.
    bucket(&q, 2, Duration::from_secs(60), 6).await;
    for i in 0..20 {
        q.enqueue(format!("j{i}").as_bytes(), cost(5))
            .await
            .unwrap();
    }
    let mut total = 0;
    for _ in 0..4 {
        total += lease(&q).await.len();
    }
    assert_eq!(
        total, 2,
        "one job per shard, each taking its shard's 3 tokens"
    );
    assert_eq!(q.stats().await.unwrap().ready, 18);
}

#[tokio::test]
async fn a_bad_cost_is_refused_with_nothing_written() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    for bad in [0, MAX_COST + 1] {
        let e = q.enqueue(b"x", cost(bad)).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
        assert!(e.to_string().contains("cost"), "{e}");
        let e = q
            .enqueue_many(&[
                (b"ok".to_vec(), EnqueueOptions::default()),
                (b"bad".to_vec(), cost(bad)),
            ])
            .await
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    }
    let flow = tideq::FlowJob::new(b"parent".to_vec())
        .child(tideq::FlowJob::new(b"child".to_vec()).options(cost(0)));
    let e = q.enqueue_flow(flow).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    let s = q.stats().await.unwrap();
    assert_eq!((s.enqueued, s.ready), (0, 0), "nothing written");
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg("*")
        .query(&mut server.conn())
        .unwrap();
    assert!(!keys.iter().any(|k| k.ends_with(":cost")), "{keys:?}");
}

#[tokio::test]
async fn get_shows_the_cost_and_it_is_forgotten_with_its_job() {
    let server = RedisServer::start();
    let client = Client::open(&server.url).unwrap();
    let q = Queue::new(
        &client,
        &common::unique("costs"),
        QueueOptions {
            keep_completed: 0,
            ..Default::default()
        },
    )
    .unwrap();
    let a = q.enqueue(b"a", cost(7)).await.unwrap().id;
    let b = q.enqueue(b"b", Default::default()).await.unwrap().id;
    let c = q.enqueue(b"c", cost(2)).await.unwrap().id;
    assert_eq!(q.get(&a).await.unwrap().unwrap().cost, 7);
    assert_eq!(q.get(&b).await.unwrap().unwrap().cost, 1);
    let listed = q.jobs(tideq::JobState::Ready, 0, 10).await.unwrap();
    let costs: Vec<u32> = listed.iter().map(|j| j.cost).collect();
    assert_eq!(costs, [7, 1, 2]);
    let cost_key = format!("tideq:{{{}}}:cost", q.name());
    let hlen = |server: &RedisServer| -> u64 {
        redis::cmd("HLEN")
            .arg(&cost_key)
            .query(&mut server.conn())
            .unwrap()
    };
    assert_eq!(hlen(&server), 2, "only the jobs whose cost is not 1");
    q.cancel(&c).await.unwrap();
    assert_eq!(hlen(&server), 1, "a cancelled job's cost goes");
    assert_eq!(lease(&q).await.len(), 2);
    assert_eq!(
        hlen(&server),
        0,
        "a completed job's cost goes with its data"
    );
}

#[tokio::test]
async fn a_flow_jobs_cost_is_stored_and_shown() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let flow = tideq::FlowJob::new(b"parent".to_vec())
        .options(EnqueueOptions {
            id: Some("parent".into()),
            ..Default::default()
        })
        .child(
            tideq::FlowJob::new(b"child".to_vec()).options(EnqueueOptions {
                id: Some("child".into()),
                cost: Some(3),
                ..Default::default()
            }),
        );
    q.enqueue_flow(flow).await.unwrap();
    assert_eq!(q.get("child").await.unwrap().unwrap().cost, 3);
    assert_eq!(q.get("parent").await.unwrap().unwrap().cost, 1);
}

/// A worker under a bucket of 10 refilled at 20 a second: jobs of cost 5 start two at once, then
/// one every 250 ms, in their order; the worker neither starts them faster nor stalls.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_starts_costly_jobs_in_order_no_faster_than_the_bucket_refills() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    bucket(&q, 20, Duration::from_secs(1), 10).await;
    for i in 0..8 {
        q.enqueue(format!("j{i}").as_bytes(), cost(5))
            .await
            .unwrap();
    }
    let starts = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let s = starts.clone();
    let t0 = std::time::Instant::now();
    let worker = q
        .work(
            tideq::WorkerOptions {
                concurrency: 10,
                ..Default::default()
            },
            move |job: tideq::Job| {
                let s = s.clone();
                async move {
                    s.lock()
                        .unwrap()
                        .push((String::from_utf8(job.payload).unwrap(), t0.elapsed()));
                    Ok::<(), String>(())
                }
            },
        )
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while starts.lock().unwrap().len() < 8 && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    worker.shutdown().await;
    let mut starts = starts.lock().unwrap().clone();
    let last = starts.iter().map(|s| s.1).max().unwrap_or_default();
    starts.sort();
    let names: Vec<_> = starts.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["j0", "j1", "j2", "j3", "j4", "j5", "j6", "j7"]);
    // 40 tokens: 10 at once, 30 refilled at 20 a second (1.5 s), less a little for the clocks.
    assert!(
        last >= Duration::from_millis(1400),
        "all started by {last:?}"
    );
    // Waiting for the tokens, the worker sleeps until they are back: a few fetches per start,
    // not a loop.
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query(&mut server.conn())
        .unwrap();
    let evals: u64 = info
        .lines()
        .find_map(|l| l.strip_prefix("cmdstat_evalsha:calls="))
        .and_then(|l| l.split(',').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    eprintln!("{evals} script calls");
    assert!(evals < 200, "{evals} script calls");
}
