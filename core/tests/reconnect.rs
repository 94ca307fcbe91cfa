//! A Redis that restarts: the first call afterwards works (a command whose connection was found
//! closed before it went out is sent again on a new one), a command lost in flight is not sent
//! again, and workers lease again one back-off step after Redis is back. The servers listen on a
//! unix socket of their own: while one is down, no other process can take its address (a free
//! TCP port can be taken by another test's server, which the clients would then talk to).

mod common;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{unique, RedisServer};
use tideq::{Client, EnqueueOptions, ErrorKind, Job, Queue, QueueOptions, WorkerOptions};

fn with_id(id: &str) -> EnqueueOptions {
    EnqueueOptions {
        id: Some(id.into()),
        ..Default::default()
    }
}

/// Issue 40 item 3: after a SIGKILL and a restart on the same port, the first call of a client
/// that was connected before failed with "broken pipe"; the next succeeded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_call_after_redis_is_killed_and_restarted_succeeds() {
    let mut s = RedisServer::start_unix(&[]);
    let client = Client::open(&s.url).unwrap();
    let q = Queue::new(&client, &unique("rs"), QueueOptions::default()).unwrap();
    q.enqueue(b"x", with_id("before")).await.unwrap();
    // A script call, a pipeline and a plain command, each the first after its own restart.
    s.restart();
    let e = q.enqueue(b"x", with_id("after")).await;
    assert!(e.is_ok(), "first enqueue after a restart: {e:?}");
    assert!(q.get("after").await.unwrap().is_some());
    s.restart();
    let st = q.stats().await;
    assert!(st.is_ok(), "first stats after a restart: {st:?}");
    s.restart();
    let p = client.ping().await;
    assert!(p.is_ok(), "first ping after a restart: {p:?}");
}

/// Issue 40 item 3, the SHUTDOWN case: Redis closes its clients' connections as it exits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_call_after_a_shutdown_restart_succeeds() {
    let mut s = RedisServer::start_unix(&[]);
    let client = Client::open(&s.url).unwrap();
    let q = Queue::new(&client, &unique("sd"), QueueOptions::default()).unwrap();
    q.enqueue(b"x", Default::default()).await.unwrap();
    let _ = redis::cmd("SHUTDOWN")
        .arg("NOSAVE")
        .exec(&mut s.conn())
        .map(|_| ());
    s.restart();
    let e = q.enqueue(b"x", with_id("after")).await;
    assert!(
        e.is_ok(),
        "first enqueue after SHUTDOWN and a restart: {e:?}"
    );
}

/// Issue 40 item 3: calls made while Redis is down fail with `CONNECTION` (the reconnection
/// fails); the first call once it is back does not inherit that failure.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_call_after_an_outage_that_failed_calls_succeeds() {
    let mut s = RedisServer::start_unix(&[]);
    let client = Client::open(&s.url).unwrap();
    let q = Queue::new(&client, &unique("out"), QueueOptions::default()).unwrap();
    q.enqueue(b"x", Default::default()).await.unwrap();
    s.stop();
    for _ in 0..3 {
        let err = q.enqueue(b"x", Default::default()).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Connection, "{err}");
    }
    // Long enough for the reconnection those calls started to have given up.
    tokio::time::sleep(Duration::from_millis(500)).await;
    s.restart();
    let e = q.enqueue(b"x", with_id("after")).await;
    assert!(e.is_ok(), "first enqueue once Redis is back: {e:?}");
}

/// Issue 40 item 3, the other side: a command that went out and was lost with its connection may
/// have run, so it is not sent again; the caller gets `CONNECTION`. Here the server holds the
/// enqueue (CLIENT PAUSE WRITE) and the connection is killed under it: were the enqueue sent
/// again, it would run once the pause ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_lost_in_flight_is_not_sent_again() {
    let s = RedisServer::start_unix(&[]);
    let client = Client::open(&s.url).unwrap();
    let q = Queue::new(&client, &unique("inflight"), QueueOptions::default()).unwrap();
    q.enqueue(b"x", Default::default()).await.unwrap();
    let mut admin = s.conn();
    redis::cmd("CLIENT")
        .arg("PAUSE")
        .arg(10_000)
        .arg("WRITE")
        .exec(&mut admin)
        .unwrap();
    let held = {
        let q = q.clone();
        tokio::spawn(async move { q.enqueue(b"x", with_id("lost")).await })
    };
    // Wait until the enqueue is held by the server, then kill every other client connection.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let list: String = redis::cmd("CLIENT").arg("LIST").query(&mut admin).unwrap();
        // Held by the pause: blocked (flag b) on its EVALSHA.
        let held = |l: &&str| {
            l.contains("cmd=evalsha")
                && l.split(' ')
                    .any(|f| f.strip_prefix("flags=").is_some_and(|f| f.contains('b')))
        };
        if list.lines().any(|l| held(&l)) {
            break;
        }
        assert!(Instant::now() < deadline, "the enqueue never reached Redis");
        std::thread::sleep(Duration::from_millis(10));
    }
    let _: i64 = redis::cmd("CLIENT")
        .arg("KILL")
        .arg("TYPE")
        .arg("normal")
        .arg("SKIPME")
        .arg("yes")
        .query(&mut admin)
        .unwrap();
    let res = held.await.unwrap();
    redis::cmd("CLIENT")
        .arg("UNPAUSE")
        .exec(&mut admin)
        .unwrap();
    let err = res.expect_err("the enqueue lost in flight must fail, not be sent again");
    assert_eq!(err.kind(), ErrorKind::Connection, "{err}");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        q.get("lost").await.unwrap().is_none(),
        "the enqueue lost in flight was sent again"
    );
}

/// When each job's handler started.
type Started = Arc<Mutex<HashMap<String, Instant>>>;

fn recording_worker(q: &Queue, poll: Duration) -> (tideq::Worker, Started) {
    let started: Started = Default::default();
    let seen = started.clone();
    let worker = q
        .work(
            WorkerOptions {
                concurrency: 1,
                poll_interval: poll,
                ..Default::default()
            },
            move |job: Job| {
                seen.lock().unwrap().insert(job.id.clone(), Instant::now());
                // The warm-up job runs a while, so the fetch carrying its ack falls in the outage
                // the test starts when it sees the job start (an idle worker would sleep through
                // it, its poll being long).
                let warm = job.id == "warm";
                async move {
                    if warm {
                        tokio::time::sleep(Duration::from_millis(300)).await;
                    }
                    Ok::<(), String>(())
                }
            },
        )
        .unwrap();
    (worker, started)
}

async fn started_at(started: &Started, id: &str, within: Duration) -> Option<Instant> {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if let Some(t) = started.lock().unwrap().get(id) {
            return Some(*t);
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    None
}

/// Issue 40 item 23: workers took 5.5–8 s to lease again after a 2 s outage: the fetch that
/// ended the back-off step in progress when Redis came back failed once more (its connection's
/// reconnection had failed during the outage), costing a second, longer step. Now the first fetch
/// after Redis is back works, so a worker leases again within one back-off step.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_leases_again_one_back_off_step_after_a_2_s_outage() {
    let mut s = RedisServer::start_unix(&[]);
    let name = unique("resume");
    let q = Queue::new(
        &Client::open(&s.url).unwrap(),
        &name,
        QueueOptions::default(),
    )
    .unwrap();
    let (worker, started) = recording_worker(&q, Duration::from_secs(5));
    q.enqueue(b"x", with_id("warm")).await.unwrap();
    assert!(started_at(&started, "warm", Duration::from_secs(10))
        .await
        .is_some());
    // A job is waiting when Redis goes away; it is leased once Redis is back.
    s.stop();
    let down = Instant::now();
    tokio::time::sleep(Duration::from_secs(2)).await;
    s.restart();
    let back = Instant::now();
    // A fetch that failed just before Redis was up may be counted a moment later (a loaded
    // machine): count from 200 ms on.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let errors_when_back = worker.stats().fetch_errors;
    let producer = Queue::new(
        &Client::open(&s.url).unwrap(),
        &name,
        QueueOptions::default(),
    )
    .unwrap();
    producer.enqueue(b"x", with_id("after")).await.unwrap();
    let at = started_at(&started, "after", Duration::from_secs(20))
        .await
        .expect("the worker never leased again");
    let stats = worker.shutdown().await;
    eprintln!(
        "2 s outage ({:.1?} down): leased again {:.2?} after Redis was back ({:.2?} after it \
         went down); {} fetch errors during the outage, {} after",
        back - down,
        at - back,
        at - down,
        errors_when_back,
        stats.fetch_errors - errors_when_back
    );
    assert!(errors_when_back > 0, "the outage was not seen");
    assert_eq!(
        stats.fetch_errors, errors_when_back,
        "a fetch failed after Redis was back: the worker lost another back-off step"
    );
    // One step: they start at 50 ms and double, ±50%, so the one under way when Redis came back
    // after 2 s is at most 4.8 s (7.5 s at the 5 s cap).
    assert!(at - back < Duration::from_secs(5), "{:?}", at - back);
}
