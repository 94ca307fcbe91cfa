//! The queue's latency (`stats().latency`, `group().latency`): how long the job next in line has
//! been ready, one test per way a job becomes ready, against a real redis-server. Ages are
//! checked against bounds read from the Redis clock before and after, never against a sleep's
//! length. (Issue 41, part 4: the number autoscalers scale on.)

mod common;

use std::time::Duration;

use common::jobs::*;
use common::{scale, unique, RedisServer};
use tideq::{Backoff, Client, EnqueueOptions, Queue, QueueOptions};

const LEASE: Duration = Duration::from_secs(60);

fn ms(d: Duration) -> u64 {
    d.as_millis() as u64
}

fn in_group(g: &str) -> EnqueueOptions {
    EnqueueOptions {
        group: Some(g.into()),
        ..Default::default()
    }
}

#[tokio::test]
async fn an_empty_queue_and_one_with_only_future_jobs_have_latency_0() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    assert_eq!(q.stats().await.unwrap().latency, Duration::ZERO);
    let later = EnqueueOptions {
        delay: Some(Duration::from_secs(60)),
        ..Default::default()
    };
    q.enqueue(b"later", later).await.unwrap();
    assert_eq!(q.stats().await.unwrap().latency, Duration::ZERO);
    // A job leased is no longer waiting either.
    q.enqueue(b"now", Default::default()).await.unwrap();
    let jobs = q.lease_jobs(1, LEASE).await.unwrap();
    assert_eq!(jobs.len(), 1);
    assert_eq!(q.stats().await.unwrap().latency, Duration::ZERO);
}

#[tokio::test]
async fn a_ready_job_reports_its_age_since_enqueue_and_nothing_once_leased() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let before = redis_ms(&server);
    q.enqueue(b"a", Default::default()).await.unwrap();
    let after = redis_ms(&server);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let from = redis_ms(&server);
    let l = ms(q.stats().await.unwrap().latency);
    let to = redis_ms(&server);
    assert!(l >= from - after && l <= to - before, "{l} ms");
    q.lease_jobs(1, LEASE).await.unwrap();
    assert_eq!(q.stats().await.unwrap().latency, Duration::ZERO);
}

/// A delayed job counts from its due time, not its enqueue: both before a worker promotes it (no
/// worker runs: the latency still grows, so an autoscaler can start one) and after a promotion
/// that came late.
#[tokio::test]
async fn a_delayed_job_promoted_late_reports_its_ready_age_not_its_enqueue_age() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let delay = 1000;
    let before = redis_ms(&server);
    let o = EnqueueOptions {
        delay: Some(Duration::from_millis(delay)),
        ..Default::default()
    };
    q.enqueue(b"d", o).await.unwrap();
    let after = redis_ms(&server);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    // Due, not promoted (no worker): counted from its due time.
    let from = redis_ms(&server);
    let l = ms(q.stats().await.unwrap().latency);
    let to = redis_ms(&server);
    assert!(
        l >= from - (after + delay) && l <= to - (before + delay),
        "{l} ms"
    );
    // Promoted now, late (a paused queue's fetch promotes but leases nothing).
    q.pause().await.unwrap();
    assert!(q.lease_jobs(1, LEASE).await.unwrap().is_empty());
    assert_eq!(q.stats().await.unwrap().ready, 1);
    let from = redis_ms(&server);
    let l = ms(q.stats().await.unwrap().latency);
    let to = redis_ms(&server);
    assert!(l >= from - (after + delay), "{l} ms");
    assert!(
        l <= to - (before + delay),
        "{l} ms: counted from its enqueue ({} ms ago), not its due time",
        to - before
    );
    // Leased: its record of when it became ready goes with its wait.
    q.resume().await.unwrap();
    assert_eq!(q.lease_jobs(1, LEASE).await.unwrap().len(), 1);
    assert_eq!(q.stats().await.unwrap().latency, Duration::ZERO);
    let rat_left: u64 = redis::cmd("EXISTS")
        .arg(format!("tideq:{{{}}}:rat", q.name()))
        .query(&mut server.conn())
        .unwrap();
    assert_eq!(rat_left, 0, "the ready-since hash outlived the jobs' wait");
}

#[tokio::test]
async fn a_retried_job_reports_its_age_since_its_backoff_ended() {
    let server = RedisServer::start();
    let backoff = 500;
    let q = queue_with(
        &server.url,
        QueueOptions {
            backoff: Backoff::fixed(backoff),
            ..Default::default()
        },
    );
    q.enqueue(b"r", Default::default()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let job = q.lease_jobs(1, LEASE).await.unwrap().pop().unwrap();
    let before = redis_ms(&server);
    assert!(
        !q.fail(&job, "boom").await.unwrap(),
        "retried, not dead-lettered"
    );
    let after = redis_ms(&server);
    // During the backoff: nothing ready.
    assert_eq!(q.stats().await.unwrap().latency, Duration::ZERO);
    tokio::time::sleep(Duration::from_millis(800)).await;
    q.pause().await.unwrap();
    assert!(q.lease_jobs(1, LEASE).await.unwrap().is_empty());
    assert_eq!(q.stats().await.unwrap().ready, 1);
    let from = redis_ms(&server);
    let l = ms(q.stats().await.unwrap().latency);
    let to = redis_ms(&server);
    assert!(
        l >= from - (after + backoff) && l <= to - (before + backoff),
        "{l} ms"
    );
}

/// A released job goes to the front of the line with a fresh age; the job behind it, waiting
/// longer, is the one counted. A cancelled one's entry left in the list counts for nothing.
#[tokio::test]
async fn a_released_job_at_the_front_does_not_hide_the_older_job_behind_it() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    q.enqueue(b"first", id("first")).await.unwrap();
    q.enqueue(b"old", id("old")).await.unwrap();
    let after_old = redis_ms(&server);
    let job = q.lease_jobs(1, LEASE).await.unwrap().pop().unwrap();
    assert_eq!(job.id, "first");
    tokio::time::sleep(Duration::from_millis(400)).await;
    q.release(&job).await.unwrap();
    let from = redis_ms(&server);
    let l = ms(q.stats().await.unwrap().latency);
    assert!(
        l >= from - after_old,
        "{l} ms: the job behind the released one was missed"
    );
    // Cancelled while ready: its entry stays in the list as a ghost and counts for nothing.
    q.cancel("old").await.unwrap();
    q.cancel("first").await.unwrap();
    assert_eq!(q.stats().await.unwrap().latency, Duration::ZERO);
}

#[tokio::test]
async fn a_grouped_queue_reports_its_oldest_group_and_each_group_its_own() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let before = redis_ms(&server);
    q.enqueue(b"a", in_group("old")).await.unwrap();
    let after_old = redis_ms(&server);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before_new = redis_ms(&server);
    q.enqueue(b"b", in_group("new")).await.unwrap();
    let from = redis_ms(&server);
    let (s, old, new, none) = (
        q.stats().await.unwrap(),
        q.group("old").await.unwrap(),
        q.group("new").await.unwrap(),
        q.group("nobody").await.unwrap(),
    );
    let to = redis_ms(&server);
    let (l, lo, ln) = (
        ms(s.latency),
        ms(old.latency.unwrap()),
        ms(new.latency.unwrap()),
    );
    assert!(l >= from - after_old && l <= to - before, "queue {l} ms");
    assert!(lo >= from - after_old && lo <= to - before, "old {lo} ms");
    assert!(ln <= to - before_new, "new {ln} ms");
    assert_eq!(none.latency, Some(Duration::ZERO));
    // A list of groups does not read it (it would look up every listed group's jobs).
    let page = q.groups_page(None, 10).await.unwrap();
    assert!(page.groups.iter().all(|g| g.latency.is_none()), "{page:?}");
}

/// A sharded queue's latency is its oldest shard's: the shards' longest, not their sum or mean.
#[tokio::test]
async fn a_sharded_queue_reports_the_longest_over_its_shards() {
    let server = RedisServer::start();
    let client = Client::open(server.url.as_str()).unwrap();
    let q = Queue::sharded(&client, &unique("lat4"), 4, QueueOptions::default()).unwrap();
    let before = redis_ms(&server);
    q.enqueue(b"oldest", id("oldest")).await.unwrap();
    let after = redis_ms(&server);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let items: Vec<(Vec<u8>, EnqueueOptions)> = (0..40)
        .map(|i| (format!("j{i}").into_bytes(), id(&format!("j{i}"))))
        .collect();
    q.enqueue_many(&items).await.unwrap();
    let from = redis_ms(&server);
    let l = ms(q.stats().await.unwrap().latency);
    let to = redis_ms(&server);
    assert!(l >= from - after && l <= to - before, "{l} ms");
}

/// The latency reads a bounded part of the queue: at 100,000 groups (and jobs made ready late, whose
/// records are looked up) no call of `stats` or `group` runs over 10 ms (SLOWLOG), nor does a page
/// of groups (which does not read the latency).
#[tokio::test]
async fn reading_the_latency_over_100000_groups_takes_no_call_over_10ms() {
    let _one = scale::one_at_a_time().await;
    let server = scale::server();
    let q = queue(&server.url);
    scale::fill(&q, 100_000, 1).await;
    // A few promoted late too (their ready time is recorded).
    let o = EnqueueOptions {
        delay: Some(Duration::from_millis(1)),
        group: Some("tenant-0".into()),
        ..Default::default()
    };
    for _ in 0..100 {
        q.enqueue(b"late", o.clone()).await.unwrap();
    }
    q.pause().await.unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert!(q.lease_jobs(1, LEASE).await.unwrap().is_empty());
    // Every call over 0.2 ms logged, for the record (the commands the scripts run are faster, so
    // they do not push the calls out of the log); none may be over 10 ms.
    scale::slowlog_from_now(&server, 200);
    let s = q.stats().await.unwrap();
    assert_eq!(s.ready, 100_100);
    assert!(s.latency > Duration::ZERO);
    let g = q.group("tenant-0").await.unwrap();
    assert!(g.latency > Some(Duration::ZERO));
    let mut cursor = None;
    for _ in 0..4 {
        let page = q.groups_page(cursor.as_deref(), 250).await.unwrap();
        cursor = page.cursor;
    }
    let calls = scale::slow_calls(&server, 200);
    let took = |c: &String| c.split(' ').next().unwrap().parse::<u64>().unwrap();
    let longest = calls.iter().map(took).max().unwrap_or(0);
    println!(
        "{} calls over 0.2 ms, the longest {longest} µs",
        calls.len()
    );
    for c in &calls {
        println!("  {}", c.chars().take(80).collect::<String>());
    }
    let slow: Vec<_> = calls.iter().filter(|c| took(c) > 10_000).collect();
    assert!(slow.is_empty(), "calls over 10 ms: {slow:?}");
}

/// The ready-since times the rat hash holds, by job id (see docs/data-model.md, "Latency").
fn ready_since(server: &RedisServer, q: &Queue) -> std::collections::HashMap<String, u64> {
    redis::cmd("HGETALL")
        .arg(format!("tideq:{{{}}}:rat", q.name()))
        .query(&mut server.conn())
        .unwrap()
}

/// More than 16 jobs due at one instant (a burst, a schedule's jobs) are promoted without their
/// scores read one by one: each still counts from its due time, and every one's lateness is
/// filed. 1,200 take two fetches (at most 1,000 a fetch), each such a run.
#[tokio::test]
async fn a_burst_due_at_one_instant_counts_each_job_from_its_due_time() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let due = redis_ms(&server) + 300;
    let at = EnqueueOptions {
        run_at_ms: Some(due),
        ..Default::default()
    };
    let jobs: Vec<(Vec<u8>, EnqueueOptions)> = (0..1200)
        .map(|i| (format!("{i}").into_bytes(), at.clone()))
        .collect();
    q.enqueue_many(&jobs).await.unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    // Promoted late (a paused queue's fetch promotes but leases nothing).
    q.pause().await.unwrap();
    let from = redis_ms(&server);
    // One call: its first fetch promotes 1,000, the next the 200 left.
    assert!(q.lease_jobs(1, LEASE).await.unwrap().is_empty());
    let to = redis_ms(&server);
    assert_eq!(q.stats().await.unwrap().ready, 1200);
    let since = ready_since(&server, &q);
    assert_eq!(since.len(), 1200);
    assert!(since.values().all(|&s| s == due), "not all at {due}");
    let late = q.metrics().await.unwrap().promotion_lateness;
    assert_eq!(late.count, 1200);
    let each = late.sum_ms / 1200.0;
    assert!(
        each >= (from - due) as f64 && each <= (to - due) as f64,
        "{each} ms late each"
    );
    let l = ms(q.stats().await.unwrap().latency);
    assert!(l >= from - due, "{l} ms");
    q.resume().await.unwrap();
    assert_eq!(q.lease_jobs(1000, LEASE).await.unwrap().len(), 1000);
    assert_eq!(q.lease_jobs(1000, LEASE).await.unwrap().len(), 200);
    assert!(ready_since(&server, &q).is_empty());
}

/// More than 16 due at different times are read with their scores: each counts from its own.
#[tokio::test]
async fn more_than_16_due_at_different_times_each_count_from_their_own_due_time() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let base = redis_ms(&server) + 200;
    let jobs: Vec<(Vec<u8>, EnqueueOptions)> = (0..100u64)
        .map(|i| {
            let o = EnqueueOptions {
                run_at_ms: Some(base + i),
                ..Default::default()
            };
            (format!("{i}").into_bytes(), o)
        })
        .collect();
    let made = q.enqueue_many(&jobs).await.unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    q.pause().await.unwrap();
    let from = redis_ms(&server);
    assert!(q.lease_jobs(1, LEASE).await.unwrap().is_empty());
    let to = redis_ms(&server);
    let since = ready_since(&server, &q);
    assert_eq!(since.len(), 100);
    for (i, e) in made.iter().enumerate() {
        assert_eq!(since[&e.id], base + i as u64, "job {i}");
    }
    let late = q.metrics().await.unwrap().promotion_lateness;
    assert_eq!(late.count, 100);
    let dues: u64 = (0..100).map(|i| base + i).sum();
    assert!(
        late.sum_ms >= (100 * from - dues) as f64 && late.sum_ms <= (100 * to - dues) as f64,
        "{} ms late in all",
        late.sum_ms
    );
}
