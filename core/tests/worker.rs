//! The worker runtime's contract (delayed jobs promoted once, graceful shutdown, idle cost and
//! wake-ups, riding out a Redis restart, draining, sharded queues), one test per promise,
//! against a real redis-server.

mod common;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::jobs::*;
use common::{unique, RedisServer};
use tideq::{Client, EnqueueOptions, Job, JobState, Queue, QueueOptions, WorkerOptions};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delayed_jobs_never_run_early_and_are_promoted_exactly_once_with_two_workers_racing() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let base = redis_ms(&server);
    let jobs: Vec<(Vec<u8>, EnqueueOptions)> = (0..300u64)
        .map(|i| {
            let due = base + 300 + (i % 30) * 10;
            (
                due.to_string().into_bytes(),
                EnqueueOptions {
                    run_at_ms: Some(due),
                    ..id(&format!("d{i}"))
                },
            )
        })
        .collect();
    q.enqueue_many(&jobs).await.unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut workers = Vec::new();
    for _ in 0..2 {
        let (seen, url) = (seen.clone(), server.url.clone());
        workers.push(
            q.work(drained(), move |job: Job| {
                let mut c = redis::Client::open(url.as_str())
                    .unwrap()
                    .get_connection()
                    .unwrap();
                let (s, us): (u64, u64) = redis::cmd("TIME").query(&mut c).unwrap();
                let due: u64 = job.payload_str().unwrap().parse().unwrap();
                seen.lock()
                    .unwrap()
                    .push((job.id.clone(), due, s * 1000 + us / 1000));
                async { Ok::<(), String>(()) }
            })
            .unwrap(),
        );
    }
    for w in &workers {
        tokio::time::timeout(Duration::from_secs(20), w.join())
            .await
            .unwrap();
    }
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 300);
    let ids: HashSet<&String> = seen.iter().map(|(id, _, _)| id).collect();
    assert_eq!(ids.len(), 300, "a delayed job ran twice");
    for (id, due, ran) in seen.iter() {
        assert!(ran >= due, "{id} ran {} ms early", due - ran);
    }
}

#[tokio::test]
async fn graceful_shutdown_finishes_running_jobs_and_returns_unfinished_leases_at_once() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    q.enqueue(b"quick", id("quick")).await.unwrap();
    q.enqueue(b"endless", id("endless")).await.unwrap();
    let started = Arc::new(AtomicUsize::new(0));
    let s2 = started.clone();
    let opts = WorkerOptions {
        grace: Duration::from_millis(300),
        concurrency: 2,
        ..Default::default()
    };
    let w = q
        .work(opts, move |job: Job| {
            s2.fetch_add(1, Ordering::SeqCst);
            async move {
                let ms = if job.payload == b"quick" {
                    100
                } else {
                    3_600_000
                };
                tokio::time::sleep(Duration::from_millis(ms)).await;
                Ok::<(), String>(())
            }
        })
        .unwrap();
    assert!(
        wait_until(Duration::from_secs(5), || started.load(Ordering::SeqCst)
            == 2)
        .await
    );
    let stats = w.shutdown().await;
    assert_eq!((stats.completed, stats.released), (1, 1));
    let info = q.get("endless").await.unwrap().unwrap();
    assert_eq!(
        info.state,
        JobState::Ready,
        "returned to the queue, not left to its lease"
    );
    assert_eq!(info.attempts, 0, "a returned attempt is not counted");
    assert_eq!(
        q.get("quick").await.unwrap().unwrap().state,
        JobState::Completed
    );
}

/// Calls per command since the last `CONFIG RESETSTAT` (script-internal calls included).
fn command_calls(server: &RedisServer) -> HashMap<String, u64> {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query(&mut server.conn())
        .unwrap();
    tideq_testing::command_calls(&info)
        .into_iter()
        // The test's own INFO and CONFIG RESETSTAT (Valkey counts "config|resetstat"), and the
        // CLIENT SETINFO a new connection sends (Valkey and Redis 7.2+ count it).
        .filter(|(name, _)| {
            name != "info" && !name.starts_with("config") && name != "client|setinfo"
        })
        .collect()
}

#[tokio::test]
async fn an_idle_worker_costs_about_two_commands_per_second_with_default_options() {
    let server = RedisServer::start_private(common::free_port(), &[]);
    let q = queue(&server.url);
    let w = q
        .work(WorkerOptions::default(), |_job: Job| async {
            Ok::<(), String>(())
        })
        .unwrap();
    until_blocked(&server, 1).await;
    redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .exec(&mut server.conn())
        .unwrap();
    // Two blocking waits long (the listener's BLPOP blocks 5 s), so the window holds whole
    // waits and at least one look-around of the default 5 s poll interval.
    tokio::time::sleep(Duration::from_secs(11)).await;
    let calls = command_calls(&server);
    let total: u64 = calls.values().sum();
    let blpop = calls.get("blpop").copied().unwrap_or(0);
    assert!(blpop >= 1, "the window saw no blocking wait: {calls:?}");
    assert!(
        total <= 24,
        "idle worker ran {total} commands in 11 s (script-internal ones included): {calls:?}"
    );
    w.shutdown().await;
}

#[tokio::test]
async fn a_new_job_reaches_an_idle_worker_by_its_wake_up_not_its_poll() {
    let server = RedisServer::start_private(common::free_port(), &[]);
    let q = queue(&server.url);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s2 = seen.clone();
    // Polling once a minute: only the wake-up can bring the job within seconds.
    let opts = WorkerOptions {
        poll_interval: Duration::from_secs(60),
        ..Default::default()
    };
    let w = q
        .work(opts, move |job: Job| {
            s2.lock().unwrap().push((job.id.clone(), Instant::now()));
            async { Ok::<(), String>(()) }
        })
        .unwrap();
    until_blocked(&server, 1).await;
    let t = Instant::now();
    q.enqueue(b"x", id("wake")).await.unwrap();
    assert!(
        wait_until(Duration::from_secs(10), || !seen.lock().unwrap().is_empty()).await,
        "not woken"
    );
    eprintln!("picked up after {:?}", seen.lock().unwrap()[0].1 - t);
    w.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_rides_out_a_redis_restart_and_nothing_is_lost() {
    let mut server = RedisServer::start_private(
        common::free_port(),
        &["--appendonly", "yes", "--appendfsync", "always"],
    );
    let q = queue(&server.url);
    let jobs: Vec<(Vec<u8>, EnqueueOptions)> =
        (0..200).map(|i| (vec![1], id(&format!("r{i}")))).collect();
    q.enqueue_many(&jobs).await.unwrap();
    let done = Arc::new(Mutex::new(HashMap::<String, u32>::new()));
    let d2 = done.clone();
    let opts = WorkerOptions {
        lease: Duration::from_millis(1000),
        concurrency: 4,
        poll_interval: Duration::from_millis(200),
        ..Default::default()
    };
    let w = q
        .work(opts, move |job: Job| {
            *d2.lock().unwrap().entry(job.id.clone()).or_default() += 1;
            async {
                tokio::time::sleep(Duration::from_millis(5)).await;
                Ok::<(), String>(())
            }
        })
        .unwrap();
    assert!(wait_until(Duration::from_secs(5), || done.lock().unwrap().len() >= 50).await);
    server.restart();
    assert!(
        wait_until(Duration::from_secs(30), || done.lock().unwrap().len()
            == 200)
        .await,
        "only {} of 200 jobs handled after the restart",
        done.lock().unwrap().len()
    );
    // Jobs whose ack was lost in the restart are redelivered (at-least-once), none is lost.
    let mut settled = false;
    for _ in 0..150 {
        if let Ok(s) = q.stats().await {
            if s.ready + s.active + s.delayed == 0 {
                settled = true;
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(settled, "jobs left unsettled after the restart");
    w.shutdown().await;
}

#[tokio::test]
async fn a_draining_worker_stops_as_soon_as_its_last_job_ends() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    q.enqueue(b"x", EnqueueOptions::default()).await.unwrap();
    // Default poll interval (5 s): only noticing the job's end can stop the worker sooner.
    let opts = WorkerOptions {
        stop_when_drained: true,
        ..Default::default()
    };
    let w = q
        .work(opts, |_job: Job| async {
            tokio::time::sleep(Duration::from_millis(50)).await;
            Ok::<(), String>(())
        })
        .unwrap();
    let t = Instant::now();
    let stats = tokio::time::timeout(Duration::from_secs(10), w.join())
        .await
        .unwrap();
    assert_eq!(stats.completed, 1);
    assert!(
        t.elapsed() < Duration::from_secs(3),
        "took {:?}, i.e. waited out the poll interval",
        t.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_worker_picks_up_a_delayed_job_within_milliseconds_of_its_due_time() {
    // Redis checks BLPOP timeouts only 10 times a second, so this needs the worker's own timer.
    let server = RedisServer::start();
    let q = queue(&server.url);
    let late = Arc::new(Mutex::new(Vec::new()));
    let (l2, url) = (late.clone(), server.url.clone());
    let opts = WorkerOptions {
        poll_interval: Duration::from_secs(30),
        ..Default::default()
    };
    let w = q
        .work(opts, move |job: Job| {
            let mut c = redis::Client::open(url.as_str())
                .unwrap()
                .get_connection()
                .unwrap();
            let (s, us): (u64, u64) = redis::cmd("TIME").query(&mut c).unwrap();
            let due: u64 = job.payload_str().unwrap().parse().unwrap();
            l2.lock()
                .unwrap()
                .push((s * 1000 + us / 1000) as i64 - due as i64);
            async { Ok::<(), String>(()) }
        })
        .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    for i in 0..5u64 {
        let due = redis_ms(&server) + 150 + i * 37;
        q.enqueue(
            due.to_string(),
            EnqueueOptions {
                run_at_ms: Some(due),
                ..Default::default()
            },
        )
        .await
        .unwrap();
        tokio::time::sleep(Duration::from_millis(200 + i * 37)).await;
    }
    assert!(wait_until(Duration::from_secs(5), || late.lock().unwrap().len() == 5).await);
    let mut l = late.lock().unwrap().clone();
    l.sort();
    eprintln!("delayed pickup lateness (ms): {l:?}");
    assert!(l[0] >= 0, "ran early: {l:?}");
    assert!(l[2] < 50, "median lateness {} ms: {l:?}", l[2]);
    w.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_stopping_when_drained_runs_every_job_of_a_sharded_queue() {
    let server = RedisServer::start();
    let client = Client::open(&server.url).unwrap();
    for round in 0..30 {
        let q = Queue::sharded(&client, &unique("jq-sh"), 3, QueueOptions::default()).unwrap();
        let jobs: Vec<(&[u8], EnqueueOptions)> = (0..30)
            .map(|_| (&b"x"[..], EnqueueOptions::default()))
            .collect();
        q.enqueue_many(&jobs).await.unwrap();
        let w = q
            .work(drained(), move |_job: Job| async move {
                // Handlers of uneven length, so shards drain at different times.
                tokio::time::sleep(Duration::from_micros(fastrand::u64(0..2000))).await;
                Ok::<(), String>(())
            })
            .unwrap();
        let stats = tokio::time::timeout(Duration::from_secs(10), w.join())
            .await
            .unwrap();
        assert_eq!(
            stats.completed, 30,
            "round {round}: stopped early: {stats:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_worker_does_not_swallow_wake_ups_meant_for_an_idle_one() {
    let server = RedisServer::start_private(common::free_port(), &[]);
    let q = queue(&server.url);
    // Worker A: one slot, taken by a job that runs until the end of the test.
    let release = Arc::new(tokio::sync::Notify::new());
    let r2 = release.clone();
    let slow = WorkerOptions {
        concurrency: 1,
        poll_interval: Duration::from_secs(60),
        ..Default::default()
    };
    let a = q
        .work(slow.clone(), move |_job: Job| {
            let r = r2.clone();
            async move {
                r.notified().await;
                Ok::<(), String>(())
            }
        })
        .unwrap();
    q.enqueue(b"long", id("long")).await.unwrap();
    let active =
        || async { q.get("long").await.unwrap().map(|i| i.state) == Some(JobState::Active) };
    assert!(wait_for(Duration::from_secs(5), active).await);
    // Worker B: idle, polling only once a minute; only wake-ups can bring it jobs in time.
    let picked = Arc::new(Mutex::new(Vec::new()));
    let p2 = picked.clone();
    let b = q
        .work(slow, move |job: Job| {
            p2.lock().unwrap().push(job.id.clone());
            async { Ok::<(), String>(()) }
        })
        .unwrap();
    until_blocked(&server, 1).await;
    // One job at a time, each once B is idle again: each must reach B by its wake-up.
    for i in 0..12 {
        q.enqueue(b"x", id(&format!("j{i}"))).await.unwrap();
        let got = wait_until(Duration::from_secs(3), || {
            picked.lock().unwrap().len() == i + 1
        })
        .await;
        assert!(
            got,
            "job {i} did not reach the idle worker (its wake-up went elsewhere)"
        );
        until_blocked(&server, 1).await;
    }
    release.notify_waiters();
    a.shutdown().await;
    b.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_reaches_every_idle_worker_not_just_the_first() {
    let server = RedisServer::start_private(common::free_port(), &[]);
    let q = queue(&server.url);
    let ran: Arc<Mutex<HashMap<usize, usize>>> = Default::default();
    let mut workers = Vec::new();
    for w in 0..3 {
        let ran = ran.clone();
        let opts = WorkerOptions {
            concurrency: 1,
            poll_interval: Duration::from_secs(60),
            ..Default::default()
        };
        workers.push(
            q.work(opts, move |_job: Job| {
                *ran.lock().unwrap().entry(w).or_default() += 1;
                async {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    Ok::<(), String>(())
                }
            })
            .unwrap(),
        );
    }
    until_blocked(&server, 3).await;
    let jobs: Vec<(&[u8], EnqueueOptions)> = (0..30)
        .map(|_| (&b"x"[..], EnqueueOptions::default()))
        .collect();
    q.enqueue_many(&jobs).await.unwrap();
    let done = wait_until(Duration::from_secs(20), || {
        ran.lock().unwrap().values().sum::<usize>() == 30
    })
    .await;
    assert!(done, "not all jobs ran: {:?}", ran.lock().unwrap());
    let ran = ran.lock().unwrap().clone();
    for w in 0..3 {
        assert!(
            ran.get(&w).copied().unwrap_or(0) >= 5,
            "worker {w} ran too few of the burst: {ran:?}"
        );
    }
    for w in workers {
        w.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_never_returns_a_job_while_its_handler_still_runs() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    q.enqueue(b"stubborn", id("stubborn")).await.unwrap();
    // A handler on another thread that ignores the stop signal (like a plain Python function).
    let log: Arc<Mutex<Vec<(&'static str, Instant)>>> = Default::default();
    let l2 = log.clone();
    let handler: tideq::JobHandler = Arc::new(move |_job: Job| {
        let log = l2.clone();
        Box::pin(async move {
            tokio::task::spawn_blocking(move || {
                log.lock().unwrap().push(("start", Instant::now()));
                std::thread::sleep(Duration::from_millis(1200));
                log.lock().unwrap().push(("end", Instant::now()));
            })
            .await
            .unwrap();
            Ok(None)
        })
    });
    let opts = WorkerOptions {
        grace: Duration::from_millis(100),
        lease: Duration::from_millis(300),
        ..Default::default()
    };
    let first = q.work_boxed(opts.clone(), handler.clone()).unwrap();
    assert!(wait_until(Duration::from_secs(5), || log.lock().unwrap().len() == 1).await);
    // A second worker stands by while the first shuts down past its grace period.
    let second = q.work_boxed(opts, handler).unwrap();
    let stats = first.shutdown().await;
    // The first handler finished (and its job was completed), so nothing was handed back.
    assert_eq!((stats.completed, stats.released), (1, 0), "{stats:?}");
    tokio::time::sleep(Duration::from_millis(500)).await;
    second.shutdown().await;
    let log = log.lock().unwrap().clone();
    let starts = log.iter().filter(|(e, _)| *e == "start").count();
    assert_eq!(
        starts, 1,
        "the job ran again while its first run was going: {log:?}"
    );
    assert_eq!(
        q.get("stubborn").await.unwrap().unwrap().state,
        JobState::Completed
    );
}

#[tokio::test]
async fn a_job_stopped_by_shutdown_goes_back_to_the_front_of_the_queue_uncounted() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    q.enqueue(b"first", id("first")).await.unwrap();
    let started = Arc::new(AtomicUsize::new(0));
    let s2 = started.clone();
    let opts = WorkerOptions {
        concurrency: 1,
        batch_size: 1,
        grace: Duration::from_millis(50),
        ..Default::default()
    };
    // A handler that watches its cancellation and stops when asked.
    let handler: tideq::JobHandler = Arc::new(move |job: Job| {
        s2.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move {
            job.cancellation().cancelled().await;
            Err("stopped".into())
        })
    });
    let w = q.work_boxed(opts, handler).unwrap();
    assert!(
        wait_until(Duration::from_secs(5), || started.load(Ordering::SeqCst)
            == 1)
        .await
    );
    q.enqueue(b"second", id("second")).await.unwrap();
    let stats = w.shutdown().await;
    assert_eq!(stats.released, 1, "{stats:?}");
    let ready: Vec<String> = redis::cmd("LRANGE")
        .arg(format!("tideq:{{{}}}:ready", q.name()))
        .arg(0)
        .arg(-1)
        .query(&mut server.conn())
        .unwrap();
    assert_eq!(ready, ["first", "second"], "released to the front");
    let info = q.get("first").await.unwrap().unwrap();
    assert_eq!((info.state, info.attempts), (JobState::Ready, 0));
}

#[tokio::test]
async fn abort_stops_at_once_and_leaves_a_running_job_to_its_lease() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    q.enqueue(b"x", id("endless")).await.unwrap();
    let started = Arc::new(AtomicUsize::new(0));
    let s2 = started.clone();
    // A handler that ignores its stop signal: a graceful shutdown would wait for it forever.
    let handler: tideq::JobHandler = Arc::new(move |_job: Job| {
        s2.fetch_add(1, Ordering::SeqCst);
        Box::pin(std::future::pending())
    });
    let opts = WorkerOptions {
        grace: Duration::from_millis(50),
        lease: Duration::from_millis(300),
        ..Default::default()
    };
    let w = q.work_boxed(opts, handler).unwrap();
    assert!(
        wait_until(Duration::from_secs(5), || started.load(Ordering::SeqCst)
            == 1)
        .await
    );
    w.stop();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(w.is_running(), "a graceful stop waits for the handler");
    w.abort();
    tokio::time::timeout(Duration::from_secs(2), w.join())
        .await
        .expect("abort returns at once");
    let info = q.get("endless").await.unwrap().unwrap();
    assert_eq!(
        info.state,
        JobState::Active,
        "left to its lease, not handed back"
    );
    // Once the lease expires, another worker takes it.
    let stats = q
        .work(drained(), |_job: Job| async { Ok::<(), String>(()) })
        .unwrap()
        .join()
        .await;
    assert_eq!(stats.completed, 1);
}
