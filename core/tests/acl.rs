//! Least privilege: every role works under exactly the ACL rules `tideq::acl::rules` gives for
//! it, and no more (a producer's user cannot fetch jobs), so the documented lists cannot drift
//! from what the scripts run.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{unique, RedisServer};
use tideq::acl::{rules, Role};
use tideq::{
    Backoff, CappedOptions, CappedQueue, Client, Config, ConsumerOptions, EnqueueOptions, FlowJob,
    Job, JobState, Queue, QueueOptions, Tasks, WorkerOptions,
};

/// A client logged in as a fresh user holding exactly `role`'s rules for `queue`.
fn client_as(server: &RedisServer, queue: &str, role: Role) -> Client {
    client_with(server, role, &rules("tideq", queue, 1, role).unwrap())
}

/// A client logged in as a fresh user holding the rules `line`.
fn client_with(server: &RedisServer, role: Role, line: &str) -> Client {
    let user = unique(role.as_str());
    let mut cmd = redis::cmd("ACL");
    cmd.arg("SETUSER")
        .arg(&user)
        .arg("reset")
        .arg("on")
        .arg(">pw");
    for rule in line.split(' ') {
        cmd.arg(rule);
    }
    cmd.query::<()>(&mut server.conn()).unwrap();
    let url = format!("redis://{user}:pw@127.0.0.1:{}", server.port);
    Client::new(Config::new(url)).unwrap()
}

/// A run of hundreds of fields into a small hash asks its encoding first (OBJECT, among the
/// producer's and worker's commands since then): users set up with the lists of earlier
/// versions, without it, still enqueue and promote such runs.
#[tokio::test]
async fn users_set_up_before_object_was_among_their_commands_still_write_runs_of_hundreds() {
    let server = RedisServer::start();
    let name = unique("acl-old");
    let as_old = |role| {
        let line = rules("tideq", &name, 1, role).unwrap();
        assert!(line.contains(" +object "), "{line}");
        let client = client_with(&server, role, &line.replace(" +object ", " "));
        Queue::new(&client, &name, QueueOptions::default()).unwrap()
    };
    let (producer, worker) = (as_old(Role::Producer), as_old(Role::Worker));
    let soon = EnqueueOptions {
        delay: Some(Duration::from_millis(50)),
        ..Default::default()
    };
    let jobs: Vec<(Vec<u8>, EnqueueOptions)> = (0..300)
        .map(|i| (format!("{i}").into_bytes(), soon.clone()))
        .collect();
    let made = producer.enqueue_many(&jobs).await.unwrap();
    assert!(made.iter().all(|e| e.created));
    tokio::time::sleep(Duration::from_millis(100)).await;
    // Promoted (their ready-since entries: one run of 300) and leased.
    let got = worker
        .lease_jobs(300, Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(got.len(), 300);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_job_role_works_under_exactly_its_documented_acl() {
    let server = RedisServer::start_private(common::free_port(), &[]);
    let name = unique("acl");
    let opts = QueueOptions {
        max_attempts: 2,
        backoff: Backoff::fixed(10),
        keep_dead: Some(1),
        ..Default::default()
    };
    let as_role = |role| Queue::new(&client_as(&server, &name, role), &name, opts.clone()).unwrap();
    let (producer, worker, admin) = (
        as_role(Role::Producer),
        as_role(Role::Worker),
        as_role(Role::Admin),
    );

    producer
        .enqueue(
            b"ok",
            EnqueueOptions {
                id: Some("a".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let many: Vec<(&[u8], EnqueueOptions)> = vec![
        (
            b"fail",
            EnqueueOptions {
                id: Some("f1".into()),
                ..Default::default()
            },
        ),
        (
            b"fail",
            EnqueueOptions {
                id: Some("f2".into()),
                ..Default::default()
            },
        ),
        (
            b"slow",
            EnqueueOptions {
                id: Some("s".into()),
                ..Default::default()
            },
        ),
        (
            b"ok",
            EnqueueOptions {
                delay: Some(Duration::from_millis(50)),
                ..Default::default()
            },
        ),
    ];
    producer.enqueue_many(&many).await.unwrap();
    // Fetch, complete, fail (retry, dead letter, dead-letter trimming), lease renewal.
    let w = worker
        .work(
            WorkerOptions {
                lease: Duration::from_millis(90),
                stop_when_drained: true,
                poll_interval: Duration::from_millis(50),
                ..Default::default()
            },
            |job: Job| async move {
                match job.payload.as_slice() {
                    b"fail" => Err("boom".to_string()),
                    b"slow" => {
                        tokio::time::sleep(Duration::from_millis(250)).await;
                        Ok(())
                    }
                    _ => Ok(()),
                }
            },
        )
        .unwrap();
    let stats = tokio::time::timeout(Duration::from_secs(20), w.join())
        .await
        .unwrap();
    assert!(w.error().is_none(), "{:?}", w.error());
    assert_eq!(
        (stats.completed, stats.failed, stats.lease_lost),
        (3, 4, 0),
        "{stats:?}"
    );

    // The operator's calls.
    assert!(admin.get("a").await.unwrap().is_some());
    let s = admin.stats().await.unwrap();
    assert_eq!((s.dead, s.dead_trimmed), (1, 1), "{s:?}");
    let dead = admin.dead_letters(0, 10).await.unwrap();
    assert_eq!(admin.jobs(JobState::Dead, 0, 10).await.unwrap(), dead);
    for state in JobState::ALL {
        admin.jobs(state, 0, 10).await.unwrap();
    }
    admin.requeue(&dead[0].id).await.unwrap();
    // Per-task metrics (TIME, HGETALL of the totals, HKEYS and HGET of the snapshots).
    for window in [None, Some(Duration::from_secs(3600))] {
        admin.task_metrics(window).await.unwrap();
    }
    producer
        .enqueue(
            b"x",
            EnqueueOptions {
                id: Some("c".into()),
                delay: Some(Duration::from_secs(60)),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    admin.cancel("c").await.unwrap();
    // Run now, delete and search are the admin's too.
    producer
        .enqueue(
            b"x",
            EnqueueOptions {
                id: Some("p".into()),
                delay: Some(Duration::from_secs(60)),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    admin.promote("p").await.unwrap();
    admin
        .find_jobs(&tideq::JobFilter::default(), None, 10)
        .await
        .unwrap();
    assert_eq!(
        admin.get("a").await.unwrap().unwrap().state,
        JobState::Completed
    );
    admin.delete("a").await.unwrap();
    // Clean, in calls of many jobs: the completed ones left, the dead ones.
    for state in [JobState::Completed, JobState::Dead] {
        admin.clean(state, Duration::ZERO).await.unwrap();
    }
    admin.requeue_all().await.unwrap();
    admin.purge().await.unwrap();
    // Queue control is the admin's too.
    admin.pause().await.unwrap();
    assert!(admin.is_paused().await.unwrap());
    admin.resume().await.unwrap();
    admin
        .set_limits(tideq::control::Limits {
            max_active: Some(5),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(admin.limits().await.unwrap().max_active, Some(5));
    admin.pause_group("g").await.unwrap();
    assert!(admin.group("g").await.unwrap().paused);
    // As `group` tells it, but the latency, which only `group` reads.
    let listed = tideq::GroupInfo {
        latency: Some(std::time::Duration::ZERO),
        ..admin.groups().await.unwrap().remove(0)
    };
    assert_eq!(listed, admin.group("g").await.unwrap());
    // Listing ready jobs reads the priority lists, the rotation and the held groups too.
    for (job_id, priority, group) in [("p", Some(3), None), ("held", None, Some("g"))] {
        let opts = EnqueueOptions {
            id: Some(job_id.into()),
            priority,
            group: group.map(String::from),
            ..Default::default()
        };
        producer.enqueue(b"x", opts).await.unwrap();
    }
    let ready = admin.jobs(JobState::Ready, 0, 10).await.unwrap();
    let ready: Vec<&str> = ready.iter().map(|j| j.id.as_str()).collect();
    assert!(ready.ends_with(&["p", "held"]), "{ready:?}");
    admin.cancel("p").await.unwrap();
    admin.cancel("held").await.unwrap();
    admin.resume_group("g").await.unwrap();
    admin.set_limits(Default::default()).await.unwrap();

    // A shutdown that releases a running job.
    producer.enqueue(b"slow", Default::default()).await.unwrap();
    let w = worker
        .work(
            WorkerOptions {
                grace: Duration::from_millis(10),
                ..Default::default()
            },
            |_job: Job| async {
                tokio::time::sleep(Duration::from_secs(60)).await;
                Ok::<(), String>(())
            },
        )
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(w.shutdown().await.released >= 1);

    // Cancelling a running job: the admin asks, the worker's renewer sees it (SMISMEMBER) and the
    // job ends cancelled (fail_job.lua), the worker's user doing every step.
    producer.enqueue(b"run", id_opts("run")).await.unwrap();
    let w = worker
        .work(WorkerOptions::default(), |_job: Job| async {
            tokio::time::sleep(Duration::from_secs(60)).await;
            Ok::<(), String>(())
        })
        .unwrap();
    let mut running = false;
    for _ in 0..50 {
        if admin.get("run").await.unwrap().map(|j| j.state) == Some(JobState::Active) {
            running = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(running);
    admin.cancel("run").await.unwrap();
    let mut gone = false;
    for _ in 0..60 {
        if admin.get("run").await.unwrap().is_none() {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(gone, "the running job was not cancelled");
    assert_eq!(w.shutdown().await.cancelled, 1);

    // The lifecycle features under each role: the admin turns the event log on; the producer
    // declares a schedule, enqueues with dedup and debounce keys and reads the log as a named
    // reader; the worker fires the schedule (and writes events); the admin lists, removes, and
    // turns the log off.
    admin.set_events(Some(100)).await.unwrap();
    let named = tideq::EventsOptions {
        name: Some("audit".into()),
        from_start: false,
    };
    let mut reader = producer.events(named.clone()).await.unwrap();
    producer
        .upsert_schedule(
            "tick",
            tideq::Every::interval(Duration::from_millis(100)),
            b"tick",
            Default::default(),
        )
        .await
        .unwrap();
    let dedup = EnqueueOptions {
        dedup: Some(tideq::Dedup::new("k")),
        ..Default::default()
    };
    producer.enqueue(b"d", dedup.clone()).await.unwrap();
    assert!(!producer.enqueue(b"d", dedup).await.unwrap().created);
    let debounce = EnqueueOptions {
        debounce: Some(tideq::Debounce::new("b", Duration::from_millis(20))),
        ..Default::default()
    };
    producer.enqueue(b"b1", debounce.clone()).await.unwrap();
    producer.enqueue(b"b2", debounce).await.unwrap();
    let w = worker
        .work(
            WorkerOptions {
                poll_interval: Duration::from_millis(50),
                ..Default::default()
            },
            |_job: Job| async { Ok::<(), String>(()) },
        )
        .unwrap();
    let mut scheduled = false;
    while let Some(e) = reader.next(Some(Duration::from_secs(5))).await.unwrap() {
        if e.kind == tideq::EventKind::Completed && e.job_id.starts_with("tick@") {
            scheduled = true;
            break;
        }
    }
    assert!(scheduled, "no scheduled job completed");
    reader.commit().await.unwrap();
    w.shutdown().await;
    assert!(w.error().is_none(), "{:?}", w.error());
    assert_eq!(admin.schedules().await.unwrap().len(), 1);
    let mut areader = admin.events(named).await.unwrap();
    areader.next(Some(Duration::from_millis(50))).await.unwrap();
    assert!(admin.remove_schedule("tick").await.unwrap());
    admin.set_events(None).await.unwrap();

    // Flows: a chord written by the producer; the worker relays its children's notices and
    // fills the callback's arguments; the admin pages its children.
    let parts = (1..=3).map(|n| FlowJob::task("part", &n).unwrap());
    let callback = FlowJob::step("sum").options(id_opts("chord"));
    producer
        .enqueue_flow(FlowJob::chord(parts, callback).unwrap())
        .await
        .unwrap();
    let summed = Arc::new(Mutex::new(Vec::new()));
    let s = summed.clone();
    let tasks = Tasks::new()
        .task("part", |n: i64, _job: Job| async move {
            Ok::<serde_json::Value, String>(serde_json::json!(n * 10))
        })
        .task("sum", move |all: Vec<i64>, _job: Job| {
            let s = s.clone();
            async move {
                s.lock().unwrap().push(all);
                Ok::<(), String>(())
            }
        });
    let w = worker
        .work_tasks(
            WorkerOptions {
                poll_interval: Duration::from_millis(50),
                stop_when_drained: true,
                ..Default::default()
            },
            tasks,
        )
        .unwrap();
    tokio::time::timeout(Duration::from_secs(20), w.join())
        .await
        .unwrap();
    assert!(w.error().is_none(), "{:?}", w.error());
    assert_eq!(*summed.lock().unwrap(), vec![vec![10, 20, 30]]);
    let page = admin.children("chord", 0, 10).await.unwrap();
    assert_eq!(page.total, 3);
    assert_eq!(admin.children_results("chord").await.unwrap().len(), 3);
    // A flow of many children: the producer looks its ids up and stages the parent's list
    // before writing it in several calls; the admin cancels them all, a page at a time.
    let many = (0..1_200).map(|n| FlowJob::task("part", &n).unwrap());
    producer
        .enqueue_flow(
            FlowJob::new(b"big".to_vec())
                .options(id_opts("big"))
                .children(many),
        )
        .await
        .unwrap();
    assert_eq!(admin.children("big", 0, 0).await.unwrap().total, 1_200);
    admin.cancel("big").await.unwrap();
    assert_eq!(admin.stats().await.unwrap().ready, 0);

    // No more than its role: a producer's user cannot fetch.
    let w = producer
        .work(WorkerOptions::default(), |_job: Job| async {
            Ok::<(), String>(())
        })
        .unwrap();
    tokio::time::timeout(Duration::from_secs(10), w.join())
        .await
        .unwrap();
    assert_eq!(w.error().map(|e| e.code()), Some("PERMISSION"));

    // A denied pipeline (stats) says it once, naming a command, without redis-rs's indexes.
    let err = producer.stats().await.unwrap_err();
    assert_eq!(err.code(), "PERMISSION");
    assert!(
        err.message().starts_with(&format!(
            "queue {name:?}: stats: the Redis user may not run "
        )) && !err.message().contains("Index")
            && !err.message().contains("Pipeline"),
        "{err}"
    );
}

#[tokio::test]
async fn each_capped_role_works_under_exactly_its_documented_acl() {
    let server = RedisServer::start_private(common::free_port(), &[]);
    let name = unique("acl-capped");
    let opts = CappedOptions {
        capacity: 2,
        ..Default::default()
    };
    let producer = CappedQueue::new(
        &client_as(&server, &name, Role::CappedProducer),
        &name,
        opts.clone(),
    )
    .unwrap();
    let consumer = CappedQueue::new(
        &client_as(&server, &name, Role::CappedConsumer),
        &name,
        opts,
    )
    .unwrap();
    producer.push("g1", b"a").await.unwrap();
    producer
        .push_many(&[("g1", b"b"), ("g1", b"c"), ("g2", b"d")])
        .await
        .unwrap();
    assert_eq!(consumer.len("g1").await.unwrap(), 2);
    let peeked: Vec<Vec<u8>> = consumer
        .peek("g1", 10)
        .await
        .unwrap()
        .into_iter()
        .map(|p| p.item)
        .collect();
    assert_eq!(peeked, vec![b"b".to_vec(), b"c".to_vec()]);
    assert_eq!(consumer.groups().await.unwrap().len(), 2);
    assert_eq!(consumer.stats().await.unwrap().dropped, 1);
    assert_eq!(
        consumer.pop_batch("g1", 1).await.unwrap(),
        vec![b"b".to_vec()]
    );
    assert!(consumer.next_batch(10).await.unwrap().is_some());
    let c = consumer
        .consume(
            ConsumerOptions {
                stop_when_empty: true,
                ..Default::default()
            },
            |_b| async { Ok::<(), String>(()) },
        )
        .unwrap();
    tokio::time::timeout(Duration::from_secs(10), c.join())
        .await
        .unwrap();
    assert!(c.error().is_none(), "{:?}", c.error());
    // A consumer's user cannot push.
    assert_eq!(
        consumer.push("g1", b"x").await.unwrap_err().code(),
        "PERMISSION"
    );
    // Encrypted: a consumer without the key keeps what it cannot open; the producer, holding
    // it, pushes them back.
    let ring = |id: &str| tideq::Encryption::keyring(id, [(id, [7u8; 32])]).unwrap();
    let sealed = |role, id: &str| {
        let opts = CappedOptions {
            capacity: 2,
            encryption: Some(ring(id)),
            ..Default::default()
        };
        CappedQueue::new(&client_as(&server, &name, role), &name, opts).unwrap()
    };
    let (producer, consumer) = (
        sealed(Role::CappedProducer, "k9"),
        sealed(Role::CappedConsumer, "k1"),
    );
    producer.push("g3", b"s").await.unwrap();
    assert!(consumer.pop_batch("g3", 10).await.unwrap().is_empty());
    assert_eq!(consumer.unreadable(10).await.unwrap().len(), 1);
    assert_eq!(producer.requeue_unreadable().await.unwrap(), 1);
    assert_eq!(consumer.len("g3").await.unwrap(), 1);
}

fn id_opts(id: &str) -> EnqueueOptions {
    EnqueueOptions {
        id: Some(id.into()),
        ..Default::default()
    }
}
