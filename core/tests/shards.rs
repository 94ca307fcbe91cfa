//! A queue's shard count, recorded in Redis by its first writer (`<prefix>:{<queue>}:shards`):
//! every reader finds it (`Client::recorded_shards`, `Client::queues`), and a handle made with
//! another count is refused before it reads or writes the wrong shards. Against a real
//! redis-server (the cluster case is in cluster.rs).

mod common;

use std::time::Duration;

use common::{unique, RedisServer};
use tideq::acl::{rules, Role};
use tideq::{
    CappedOptions, CappedQueue, Client, Config, ConsumerOptions, EnqueueOptions, ErrorKind, Every,
    Queue, QueueKind, QueueOptions, WorkerOptions,
};

fn jobs(c: &Client, name: &str, shards: usize) -> Queue {
    Queue::sharded(c, name, shards, QueueOptions::default()).unwrap()
}

fn capped(c: &Client, name: &str, shards: usize) -> CappedQueue {
    CappedQueue::sharded(c, name, shards, CappedOptions::default()).unwrap()
}

fn with_id(id: &str) -> EnqueueOptions {
    EnqueueOptions {
        id: Some(id.into()),
        ..Default::default()
    }
}

/// Every key under the prefix.
fn keys(server: &RedisServer) -> Vec<String> {
    let mut k: Vec<String> = redis::cmd("KEYS")
        .arg("tideq:*")
        .query(&mut server.conn())
        .unwrap();
    k.sort();
    k
}

/// Two ids that land on two different shards of 4 (of the 4 shards, 2 hold data).
fn two_shards_of_four() -> [String; 2] {
    let ids: Vec<String> = (0..64).map(|i| format!("j{i}")).collect();
    let shard = |id: &str| tideq::keys::key_slot(id) as usize % 4;
    let b = ids.iter().find(|b| shard(b) != shard(&ids[0])).unwrap();
    [ids[0].clone(), b.clone()]
}

#[tokio::test]
async fn a_handle_with_another_shard_count_than_recorded_is_refused_and_writes_nothing() {
    let server = RedisServer::start();
    let c = Client::open(&server.url).unwrap();
    let name = unique("four");
    let four = jobs(&c, &name, 4);
    assert_eq!(
        c.recorded_shards(QueueKind::Jobs, &name).await.unwrap(),
        None
    );
    four.enqueue(b"x", with_id("a")).await.unwrap();
    assert_eq!(
        c.recorded_shards(QueueKind::Jobs, &name).await.unwrap(),
        Some(4)
    );
    let before = keys(&server);
    for n in [1, 2, 8] {
        let wrong = jobs(&c, &name, n);
        let e = wrong.enqueue(b"x", with_id("b")).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
        assert!(
            e.message().contains("has 4 shard(s)") && e.message().contains(&format!("not {n}")),
            "{e}"
        );
        // Readers are refused too, rather than reading the wrong shards.
        let e = wrong.stats().await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
        let e = wrong.jobs_page(tideq::JobState::Ready, None, 10).await;
        assert_eq!(e.unwrap_err().kind(), ErrorKind::InvalidArgument);
        // A worker stops at once with the error, having fetched nothing.
        let w = wrong
            .work(WorkerOptions::default(), |_j: tideq::Job| async {
                Ok::<(), String>(())
            })
            .unwrap();
        tokio::time::timeout(Duration::from_secs(10), w.join())
            .await
            .expect("the worker stops by itself");
        assert_eq!(w.error().unwrap().kind(), ErrorKind::InvalidArgument);
        // A flow with a child on it.
        let flow = tideq::FlowJob::new(b"p").child(tideq::FlowJob::new(b"c").on(&wrong));
        let e = jobs(&c, &unique("parent"), 1).enqueue_flow(flow).await;
        assert_eq!(e.unwrap_err().kind(), ErrorKind::InvalidArgument);
    }
    // Nothing was written by the refused handles, nor for the refused flows' parents.
    assert_eq!(keys(&server), before);
    // The right count still works, and a handle's clones share its check.
    let again = jobs(&c, &name, 4);
    assert_eq!(again.stats().await.unwrap().ready, 1);
    assert_eq!(again.clone().stats().await.unwrap().enqueued, 1);
}

#[tokio::test]
async fn a_reader_of_a_queue_nothing_recorded_reads_and_records_nothing() {
    let server = RedisServer::start();
    let c = Client::open(&server.url).unwrap();
    let name = unique("fresh");
    let q = jobs(&c, &name, 3);
    assert_eq!(q.stats().await.unwrap().enqueued, 0);
    assert!(keys(&server).is_empty(), "{:?}", keys(&server));
    // Its first enqueue records it; the reader handle is then checked on its next write.
    q.enqueue(b"x", Default::default()).await.unwrap();
    assert_eq!(
        c.recorded_shards(QueueKind::Jobs, &name).await.unwrap(),
        Some(3)
    );
    // A schedule records it too (a queue that has only schedules is found).
    let sched = jobs(&c, &unique("sched"), 2);
    sched
        .upsert_schedule(
            "tick",
            Every::interval(Duration::from_secs(3600)),
            b"x",
            Default::default(),
        )
        .await
        .unwrap();
    assert_eq!(
        c.recorded_shards(QueueKind::Jobs, sched.name())
            .await
            .unwrap(),
        Some(2)
    );
    // A record that is no count is a clear error.
    let bad = unique("bad");
    redis::cmd("SET")
        .arg(format!("tideq:{{{bad}}}:shards"))
        .arg("lots")
        .query::<()>(&mut server.conn())
        .unwrap();
    let e = c.recorded_shards(QueueKind::Jobs, &bad).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(e.message().contains("not a shard count"), "{e}");
    let e = jobs(&c, &bad, 1).stats().await.unwrap_err();
    assert!(e.message().contains("not a shard count"), "{e}");
}

#[tokio::test]
async fn a_capped_queue_records_its_shard_count_and_refuses_another() {
    let server = RedisServer::start();
    let c = Client::open(&server.url).unwrap();
    let name = unique("ticks");
    capped(&c, &name, 3).push("g", b"1").await.unwrap();
    assert_eq!(
        c.recorded_shards(QueueKind::Capped, &name).await.unwrap(),
        Some(3)
    );
    // The job queue of the same name is another queue.
    assert_eq!(
        c.recorded_shards(QueueKind::Jobs, &name).await.unwrap(),
        None
    );
    let before = keys(&server);
    let wrong = capped(&c, &name, 1);
    for e in [
        wrong.push("g", b"2").await.unwrap_err(),
        wrong.stats().await.unwrap_err(),
    ] {
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
        assert!(e.message().contains("capped queue"), "{e}");
    }
    let consumer = wrong
        .consume(ConsumerOptions::default(), |_b: tideq::Batch| async {
            Ok::<(), String>(())
        })
        .unwrap();
    tokio::time::timeout(Duration::from_secs(10), consumer.join())
        .await
        .expect("the consumer stops by itself");
    assert_eq!(consumer.error().unwrap().kind(), ErrorKind::InvalidArgument);
    assert_eq!(keys(&server), before);
    assert_eq!(capped(&c, &name, 3).stats().await.unwrap().pushed, 1);
}

#[tokio::test]
async fn queues_reports_the_recorded_shard_count_not_the_shards_holding_data() {
    let server = RedisServer::start();
    let c = Client::open(&server.url).unwrap();
    // 4 shards, 2 of them holding data.
    let q = jobs(&c, "orders", 4);
    for id in two_shards_of_four() {
        q.enqueue(b"x", with_id(&id)).await.unwrap();
    }
    // 4 shards, only schedules (no job yet).
    let s = jobs(&c, "reports", 4);
    s.upsert_schedule(
        "daily",
        Every::interval(Duration::from_secs(86_400)),
        b"x",
        Default::default(),
    )
    .await
    .unwrap();
    // A sharded capped queue with one group.
    capped(&c, "ticks", 4).push("g", b"1").await.unwrap();
    let found = c.queues().await.unwrap();
    let shards = |kind, name: &str| {
        found
            .iter()
            .find(|r| r.kind == kind && r.name == name)
            .unwrap_or_else(|| panic!("{name} not found: {found:?}"))
            .shards
    };
    assert_eq!(shards(QueueKind::Jobs, "orders"), 4);
    assert_eq!(shards(QueueKind::Jobs, "reports"), 4);
    assert_eq!(shards(QueueKind::Capped, "ticks"), 4);
    assert_eq!(found.len(), 3, "{found:?}");

    // A queue that recorded nothing (written by a tideq that did not): the smallest count
    // whose shards hold every shard found, here its last.
    let old = jobs(&c, "old", 4);
    let last = (0..)
        .map(|i| format!("o{i}"))
        .find(|id| tideq::keys::key_slot(id) as usize % 4 == 3)
        .unwrap();
    old.enqueue(b"x", with_id(&last)).await.unwrap();
    redis::cmd("DEL")
        .arg("tideq:{old}:shards")
        .query::<()>(&mut server.conn())
        .unwrap();
    let found = c.queues().await.unwrap();
    let old = found.iter().find(|r| r.name == "old").unwrap();
    assert_eq!(old.shards, 4, "{found:?}");
}

/// The ACL rules of each role on a sharded queue cover the key recording its count.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_role_of_a_sharded_queue_works_under_its_acl_with_the_recorded_count() {
    let server = RedisServer::start_private(common::free_port(), &[]);
    let name = unique("aclsh");
    let as_role = |role| {
        let user = unique(role_name(role));
        let mut cmd = redis::cmd("ACL");
        cmd.arg("SETUSER")
            .arg(&user)
            .arg("reset")
            .arg("on")
            .arg(">pw");
        for rule in rules("tideq", &name, 3, role).unwrap().split(' ') {
            cmd.arg(rule);
        }
        cmd.query::<()>(&mut server.conn()).unwrap();
        let url = format!("redis://{user}:pw@127.0.0.1:{}", server.port);
        Client::new(Config::new(url)).unwrap()
    };
    let producer = jobs(&as_role(Role::Producer), &name, 3);
    producer.enqueue(b"x", with_id("a")).await.unwrap();
    let worker = jobs(&as_role(Role::Worker), &name, 3);
    let w = worker
        .work(
            WorkerOptions {
                stop_when_drained: true,
                ..Default::default()
            },
            |_j: tideq::Job| async { Ok::<(), String>(()) },
        )
        .unwrap();
    assert_eq!(w.join().await.completed, 1);
    assert!(w.error().is_none(), "{:?}", w.error());
    let admin = jobs(&as_role(Role::Admin), &name, 3);
    assert_eq!(admin.stats().await.unwrap().completed, 1);
    // The wrong count, refused under the same rules.
    let e = jobs(&as_role(Role::Admin), &name, 2).stats().await;
    assert_eq!(e.unwrap_err().kind(), ErrorKind::InvalidArgument);

    let cname = unique("aclcap");
    let capped_as = |role| {
        let user = unique(role_name(role));
        let mut cmd = redis::cmd("ACL");
        cmd.arg("SETUSER")
            .arg(&user)
            .arg("reset")
            .arg("on")
            .arg(">pw");
        for rule in rules("tideq", &cname, 3, role).unwrap().split(' ') {
            cmd.arg(rule);
        }
        cmd.query::<()>(&mut server.conn()).unwrap();
        let url = format!("redis://{user}:pw@127.0.0.1:{}", server.port);
        Client::new(Config::new(url)).unwrap()
    };
    capped(&capped_as(Role::CappedProducer), &cname, 3)
        .push("g", b"1")
        .await
        .unwrap();
    let consumer = capped(&capped_as(Role::CappedConsumer), &cname, 3);
    assert_eq!(consumer.stats().await.unwrap().pushed, 1);
    assert_eq!(consumer.pop_batch("g", 10).await.unwrap().len(), 1);
}

fn role_name(r: Role) -> &'static str {
    r.as_str()
}

/// A worker that cannot reach Redis to check its shard count retries (each failure a fetch
/// error, as the fetches it cannot make yet), and stops when asked.
#[tokio::test]
async fn a_worker_checking_its_shard_count_while_redis_is_down_retries_and_stops_when_asked() {
    let url = format!("redis://127.0.0.1:{}", common::free_port());
    let c = Client::open(&url).unwrap();
    let w = jobs(&c, "q", 2)
        .work(WorkerOptions::default(), |_j: tideq::Job| async {
            Ok::<(), String>(())
        })
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while w.stats().fetch_errors < 2 {
        assert!(std::time::Instant::now() < deadline, "{:?}", w.stats());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    w.stop();
    tokio::time::timeout(Duration::from_secs(10), w.join())
        .await
        .expect("stops when asked");
    assert!(w.error().is_none(), "{:?}", w.error());
}
