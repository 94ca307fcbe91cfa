//! Schedules: every worker may drive them and each slot still makes exactly one job; missed slots
//! run once after an outage; a schedule changed while running neither duplicates nor loses a
//! slot. One test per promise, against a real redis-server.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::jobs::*;
use common::{unique, RedisServer};
use tideq::{
    Client, EnqueueOptions, ErrorKind, Every, Job, PayloadFormat, Queue, QueueOptions, Tasks,
    Worker, WorkerOptions,
};

type Seen = Arc<Mutex<Vec<(String, Vec<u8>)>>>;

/// A worker on its own client (as another process would be) that records each job it runs.
fn driver(url: &str, name: &str, seen: &Seen) -> Worker {
    let q = Queue::new(&Client::open(url).unwrap(), name, QueueOptions::default()).unwrap();
    let seen = seen.clone();
    q.work(
        WorkerOptions {
            poll_interval: Duration::from_millis(100),
            ..Default::default()
        },
        move |job: Job| {
            let seen = seen.clone();
            async move {
                seen.lock()
                    .unwrap()
                    .push((job.id.clone(), job.payload.to_vec()));
                Ok::<(), String>(())
            }
        },
    )
    .unwrap()
}

/// Slot times per schedule name, from the job ids (`<name>@<slot>`).
fn slots(seen: &Seen) -> BTreeMap<String, Vec<u64>> {
    let mut out: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for (id, _) in seen.lock().unwrap().iter() {
        let (name, slot) = id.rsplit_once('@').unwrap();
        out.entry(name.to_string())
            .or_default()
            .push(slot.parse().unwrap());
    }
    for v in out.values_mut() {
        v.sort();
    }
    out
}

fn assert_one_job_per_slot(slots: &[u64], step: u64) {
    let distinct: BTreeSet<_> = slots.iter().collect();
    assert_eq!(distinct.len(), slots.len(), "a slot ran twice: {slots:?}");
    for w in slots.windows(2) {
        assert_eq!(w[1] - w[0], step, "a slot was skipped: {slots:?}");
    }
}

#[tokio::test]
async fn five_workers_driving_the_same_schedules_for_ten_seconds_make_exactly_one_job_per_slot() {
    let server = RedisServer::start();
    let name = unique("sched");
    let q = Queue::new(
        &Client::open(&server.url).unwrap(),
        &name,
        QueueOptions::default(),
    )
    .unwrap();
    q.upsert_schedule(
        "tick",
        Every::interval(Duration::from_secs(1)),
        b"i",
        Default::default(),
    )
    .await
    .unwrap();
    q.upsert_schedule("cron", Every::cron("* * * * * *"), b"c", Default::default())
        .await
        .unwrap();
    let seen: Seen = Default::default();
    let workers: Vec<Worker> = (0..5).map(|_| driver(&server.url, &name, &seen)).collect();
    tokio::time::sleep(Duration::from_secs(10)).await;
    for w in &workers {
        w.stop();
    }
    for w in workers {
        w.join().await;
    }
    let s = slots(&seen);
    for name in ["tick", "cron"] {
        let v = &s[name];
        assert!(v.len() >= 9, "{name}: {v:?}");
        assert_one_job_per_slot(v, 1000);
    }
}

#[tokio::test]
async fn after_an_outage_a_schedule_runs_once_for_its_missed_slots_then_goes_on() {
    let server = RedisServer::start();
    let name = unique("sched");
    let q = Queue::new(
        &Client::open(&server.url).unwrap(),
        &name,
        QueueOptions::default(),
    )
    .unwrap();
    let first = q
        .upsert_schedule(
            "s",
            Every::interval(Duration::from_millis(200)),
            b"x",
            Default::default(),
        )
        .await
        .unwrap()
        .unwrap();
    // Nobody drives it for about five slots.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let back = redis_ms(&server);
    let seen: Seen = Default::default();
    let w = driver(&server.url, &name, &seen);
    tokio::time::sleep(Duration::from_millis(900)).await;
    w.stop();
    w.join().await;
    let v = slots(&seen)["s"].clone();
    // The missed slots (first .. back) ran as one job: the latest of them, or, when the driver's
    // first look came after the next slot began, that slot's (a loaded machine may take a few
    // ms to start it). Never one of the older missed slots.
    let missed: Vec<_> = v.iter().filter(|&&t| t <= back).collect();
    assert!(
        missed.len() <= 1,
        "{v:?} (back at {back}, first slot {first})"
    );
    assert!(v[0] > first && v[0] + 200 > back, "{v:?} (back at {back})");
    assert_one_job_per_slot(&v, 200);
}

#[tokio::test]
async fn a_schedule_changed_while_workers_run_it_neither_duplicates_nor_loses_a_slot() {
    let server = RedisServer::start();
    let name = unique("sched");
    let q = Queue::new(
        &Client::open(&server.url).unwrap(),
        &name,
        QueueOptions::default(),
    )
    .unwrap();
    let every = |ms| Every::interval(Duration::from_millis(ms));
    q.upsert_schedule("s", every(200), b"old", Default::default())
        .await
        .unwrap();
    let seen: Seen = Default::default();
    let workers: Vec<Worker> = (0..3).map(|_| driver(&server.url, &name, &seen)).collect();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let edit = redis_ms(&server);
    let next = q
        .upsert_schedule("s", every(300), b"new", Default::default())
        .await
        .unwrap()
        .unwrap();
    tokio::time::sleep(Duration::from_millis(2000)).await;
    for w in &workers {
        w.stop();
    }
    for w in workers {
        w.join().await;
    }
    let all = seen.lock().unwrap().clone();
    let (mut old, mut new) = (Vec::new(), Vec::new());
    for (id, payload) in &all {
        let slot: u64 = id.rsplit_once('@').unwrap().1.parse().unwrap();
        if payload == b"old" {
            assert!(
                slot <= edit,
                "an old-spec slot after the edit: {slot} > {edit}"
            );
            old.push(slot);
        } else {
            assert!(
                slot >= next,
                "a new-spec slot before its first: {slot} < {next}"
            );
            new.push(slot);
        }
    }
    old.sort();
    new.sort();
    assert_one_job_per_slot(&old, 200);
    assert_one_job_per_slot(&new, 300);
    assert!(old.len() >= 5 && new.len() >= 5, "{old:?} {new:?}");
    assert!(
        next - old.last().unwrap() <= 300 + 200,
        "a gap at the edit: {old:?} {new:?}"
    );
}

#[tokio::test]
async fn declaring_the_same_schedule_again_keeps_its_next_slot_and_schedules_lists_it() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let opts = EnqueueOptions {
        task: Some("report".into()),
        priority: Some(3),
        ..Default::default()
    };
    let every = Every::cron_in("0 9 * * 1-5", "Europe/Paris");
    let a = q
        .upsert_schedule("daily", every.clone(), b"\"p\"", opts.clone())
        .await
        .unwrap();
    let b = q
        .upsert_schedule("daily", every.clone(), b"\"p\"", opts.clone())
        .await
        .unwrap();
    assert_eq!(a, b);
    let listed = q.schedules().await.unwrap();
    assert_eq!(listed.len(), 1);
    let s = &listed[0];
    assert_eq!(
        (s.name.as_str(), &s.every, s.payload.as_slice()),
        ("daily", &every, &b"\"p\""[..])
    );
    assert_eq!(s.options.task.as_deref(), Some("report"));
    assert_eq!(
        s.options.format,
        Some(PayloadFormat::Json),
        "a task's default"
    );
    assert_eq!(s.options.priority, Some(3));
    assert_eq!(s.next_run_ms, a);
    // 09:00 in Paris is 07:00 or 08:00 UTC, on a weekday.
    let next = chrono_hour_utc(a.unwrap());
    assert!(next == 7 || next == 8, "{next}");
    assert!(q.remove_schedule("daily").await.unwrap());
    assert!(!q.remove_schedule("daily").await.unwrap());
    assert!(q.schedules().await.unwrap().is_empty());
}

fn chrono_hour_utc(ms: u64) -> u64 {
    (ms / 3_600_000) % 24
}

#[tokio::test]
async fn a_removed_schedule_fires_no_more() {
    let server = RedisServer::start();
    let name = unique("sched");
    let q = Queue::new(
        &Client::open(&server.url).unwrap(),
        &name,
        QueueOptions::default(),
    )
    .unwrap();
    q.upsert_schedule(
        "s",
        Every::interval(Duration::from_millis(100)),
        b"x",
        Default::default(),
    )
    .await
    .unwrap();
    let seen: Seen = Default::default();
    let w = driver(&server.url, &name, &seen);
    assert!(wait_until(Duration::from_secs(5), || !seen.lock().unwrap().is_empty()).await);
    q.remove_schedule("s").await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let n = seen.lock().unwrap().len();
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(seen.lock().unwrap().len(), n);
    w.stop();
    w.join().await;
}

#[tokio::test]
async fn bad_schedules_are_refused_and_nothing_is_written() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let ms = |n| Every::interval(Duration::from_millis(n));
    let long = "n".repeat(201);
    let cases: Vec<(&str, Every, EnqueueOptions)> = vec![
        ("a", Every::cron("not a cron"), Default::default()),
        ("a", Every::cron("61 * * * *"), Default::default()),
        // A year field (7 fields) or too few: not the 5 or 6 fields the docs give.
        ("a", Every::cron("0 0 0 1 1 * 2030"), Default::default()),
        ("a", Every::cron("* * * *"), Default::default()),
        // February 30th never comes: refused, not kept silent forever.
        ("a", Every::cron("0 0 30 2 *"), Default::default()),
        (
            "a",
            Every::cron_in("* * * * *", "Mars/Olympus"),
            Default::default(),
        ),
        ("a", ms(0), Default::default()),
        ("", ms(1000), Default::default()),
        (&long, ms(1000), Default::default()),
        ("a", ms(1000), id("fixed")),
        (
            "a",
            ms(1000),
            EnqueueOptions {
                delay: Some(Duration::from_secs(1)),
                ..Default::default()
            },
        ),
        (
            "a",
            ms(1000),
            EnqueueOptions {
                priority: Some(0),
                ..Default::default()
            },
        ),
    ];
    for (name, every, opts) in cases {
        let e = q
            .upsert_schedule(name, every.clone(), b"x", opts)
            .await
            .unwrap_err();
        assert_eq!(
            e.kind(),
            ErrorKind::InvalidArgument,
            "{name:?} {every:?}: {e}"
        );
    }
    let n: i64 = redis::cmd("DBSIZE").query(&mut server.conn()).unwrap();
    assert_eq!(n, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schedules_lists_all_12000_schedules_not_the_first_10000() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let names: Vec<String> = (0..12_000).map(|i| format!("s{i:05}")).collect();
    for part in names.chunks(1_000) {
        let adds = part.iter().map(|n| {
            q.upsert_schedule(
                n,
                Every::interval(Duration::from_secs(3600)),
                b"x",
                Default::default(),
            )
        });
        for r in futures_util::future::join_all(adds).await {
            r.unwrap();
        }
    }
    let listed = q.schedules().await.unwrap();
    assert_eq!(listed.len(), 12_000);
    assert!(listed.windows(2).all(|w| w[0].name < w[1].name));
}

/// `upsert_schedule("tick", b"[]", every=1, task="tick")` without a format was accepted, then
/// every fired job failed "has no task arguments" and was retried: a task's schedule now takes
/// JSON by default, and arguments that do not decode are refused when it is set.
#[tokio::test]
async fn a_task_schedule_without_a_format_takes_json_and_refuses_arguments_that_do_not_decode() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let task = |format| EnqueueOptions {
        task: Some("tick".into()),
        format,
        ..Default::default()
    };
    let every = Every::interval(Duration::from_millis(50));
    for (payload, format) in [
        (&b"not json"[..], None),
        (&b"{\"a\""[..], Some(PayloadFormat::Json)),
        (&b"\x92\x01"[..], Some(PayloadFormat::Msgpack)),
    ] {
        let err = q
            .upsert_schedule("tick", every.clone(), payload, task(format))
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    }
    assert!(q.schedules().await.unwrap().is_empty(), "nothing written");
    q.upsert_schedule("tick", every.clone(), b"[1, 2]", task(None))
        .await
        .unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let tasks = Tasks::new().task("tick", move |args: Vec<u32>, _job: Job| {
        let s = s.clone();
        async move {
            s.lock().unwrap().push(args);
            Ok::<(), String>(())
        }
    });
    let worker = q.work_tasks(WorkerOptions::default(), tasks).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while seen.lock().unwrap().is_empty() && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    worker.shutdown().await;
    assert_eq!(seen.lock().unwrap().first(), Some(&vec![1, 2]));
    assert_eq!(q.stats().await.unwrap().dead, 0);
}
