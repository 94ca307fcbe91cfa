//! The queue's history (`Queue::history`): per-minute snapshots of the queue's totals that the
//! workers' reports leave in Redis, read back as differences per step. One test per promise,
//! against a real redis-server. Snapshots at chosen minutes are written directly (HSET, in the
//! encoding of docs/data-model.md, "History"), so minute boundaries need no waiting; the first
//! tests go through a real worker's reports.

mod common;

use std::time::Duration;

use common::jobs::*;
use common::{unique, RedisServer};
use tideq::keys::shard_tags;
use tideq::{
    Backoff, Client, EnqueueOptions, ErrorKind, HistoryPoint, Job, Queue, QueueOptions,
    WorkerOptions,
};

const MIN: u64 = 60_000;
const HOUR: Duration = Duration::from_secs(3600);
const MINUTE: Duration = Duration::from_secs(60);

/// The history hash of `day` of each shard's keys.
fn hist_keys(q: &Queue, shards: usize, day: u64) -> Vec<String> {
    shard_tags("tideq", q.name(), shards)
        .unwrap()
        .into_iter()
        .map(|t| format!("tideq:{{{t}}}:hist:{day}"))
        .collect()
}

fn stats_key(q: &Queue, shards: usize, shard: usize) -> String {
    let t = &shard_tags("tideq", q.name(), shards).unwrap()[shard];
    format!("tideq:{{{t}}}:stats")
}

/// Writes a snapshot of `enqueued` (the other counts 0) at minute `minute` since the epoch.
fn snapshot(server: &RedisServer, key_of_day: &impl Fn(u64) -> String, minute: u64, v: &str) {
    let (day, m) = (minute / 1440, minute % 1440);
    let _: () = redis::cmd("HSET")
        .arg(key_of_day(day))
        .arg(m)
        .arg(v)
        .query(&mut server.conn())
        .unwrap();
}

fn set_enqueued(server: &RedisServer, key: &str, n: u64) {
    let _: () = redis::cmd("HSET")
        .arg(key)
        .arg("enqueued")
        .arg(n)
        .query(&mut server.conn())
        .unwrap();
}

fn sum(points: &[HistoryPoint], f: impl Fn(&HistoryPoint) -> u64) -> u64 {
    points.iter().map(f).sum()
}

fn at(points: &[HistoryPoint], minute: u64) -> &HistoryPoint {
    points
        .iter()
        .find(|p| p.at_ms == minute * MIN)
        .unwrap_or_else(|| panic!("no point at minute {minute}: {points:?}"))
}

fn now_minute(server: &RedisServer) -> u64 {
    redis_ms(server) / MIN
}

#[tokio::test]
async fn a_workers_history_sums_to_the_increase_of_the_stats_counters() {
    let server = RedisServer::start();
    let q = queue_with(
        &server.url,
        QueueOptions {
            backoff: Backoff::fixed(20),
            max_attempts: 2,
            ..Default::default()
        },
    );
    // The worker's first report leaves the baseline snapshot (all zeros).
    let w = q
        .work(
            WorkerOptions {
                poll_interval: Duration::from_millis(50),
                ..Default::default()
            },
            |job: Job| async move {
                match job.payload_str().ok() {
                    Some("dead") => Err("always".to_string()),
                    Some("flaky") if job.attempt == 1 => Err("once".to_string()),
                    _ => Ok(()),
                }
            },
        )
        .unwrap();
    let day = redis_ms(&server) / 86_400_000;
    let key = hist_keys(&q, 1, day).remove(0);
    assert!(
        wait_until(Duration::from_secs(5), || {
            let n: u64 = redis::cmd("HLEN")
                .arg(&key)
                .query(&mut server.conn())
                .unwrap();
            n > 0
        })
        .await,
        "no snapshot from the worker's first report"
    );
    for p in ["ok", "ok", "ok", "flaky", "flaky", "dead"] {
        q.enqueue(p, EnqueueOptions::default()).await.unwrap();
    }
    let later = EnqueueOptions {
        delay: Some(Duration::from_millis(100)),
        ..Default::default()
    };
    q.enqueue("ok", later).await.unwrap();
    assert!(
        wait_for(Duration::from_secs(10), || async {
            let s = q.stats().await.unwrap();
            s.completed == 6 && s.dead_lettered == 1
        })
        .await
    );
    let stats = q.stats().await.unwrap();
    w.shutdown().await;
    let h = q.history(HOUR, MINUTE).await.unwrap();
    assert_eq!(h.len(), 60);
    assert_eq!(sum(&h, |p| p.enqueued), stats.enqueued);
    assert_eq!(sum(&h, |p| p.completed), stats.completed);
    assert_eq!(sum(&h, |p| p.retried), stats.retried);
    assert_eq!(sum(&h, |p| p.dead_lettered), stats.dead_lettered);
    assert_eq!(sum(&h, |p| p.failed), stats.retried + stats.dead_lettered);
    assert_eq!((stats.enqueued, stats.completed), (7, 6));
    assert_eq!((stats.retried, stats.dead_lettered), (3, 1));
    // The delayed job and the retries were promoted: a lateness is known.
    assert!(h.iter().any(|p| p.lateness_ms.is_some()), "{h:?}");
    // Steps are whole minutes, oldest first, the last the minute under way.
    assert!(h.windows(2).all(|w| w[1].at_ms == w[0].at_ms + MIN));
    assert!(h[59].at_ms / MIN + 1 >= now_minute(&server));
}

#[tokio::test]
async fn each_report_costs_one_call_and_the_first_of_a_minute_four_more() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let _: () = redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query(&mut server.conn())
        .unwrap();
    // Two reports in one minute (the first fetch's, the last fetch's), unless a minute ends
    // between them: then each writes.
    let before = now_minute(&server);
    let w = q
        .work(
            WorkerOptions {
                poll_interval: Duration::from_millis(50),
                ..Default::default()
            },
            |_job: Job| async { Ok::<(), String>(()) },
        )
        .unwrap();
    assert!(
        wait_for(Duration::from_secs(5), || async {
            q.workers().await.unwrap().len() == 1
        })
        .await
    );
    w.shutdown().await;
    let writes = if now_minute(&server) == before { 1 } else { 2 };
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query(&mut server.conn())
        .unwrap();
    let calls = |cmd: &str| -> u64 {
        info.lines()
            .find_map(|l| l.strip_prefix(&format!("cmdstat_{cmd}:")))
            .and_then(|r| r.split(',').find_map(|kv| kv.strip_prefix("calls=")))
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    // HEXISTS per report; per snapshot written: HMGET (stats), HMGET (metrics), HSET, PEXPIRE.
    // The per-task snapshots (task_metrics.rs) cost two more HEXISTS per report, and a PEXPIRE
    // per snapshot they write.
    let mut c = server.conn();
    let task_snaps: Vec<String> = redis::cmd("KEYS").arg("*:t[mh]:*").query(&mut c).unwrap();
    let mut task_writes = 0;
    for k in &task_snaps {
        let n: u64 = redis::cmd("HLEN").arg(k).query(&mut c).unwrap();
        task_writes += n;
    }
    assert_eq!(calls("hexists"), 2 * 3, "{info}");
    assert_eq!(calls("pexpire"), writes + task_writes, "{info}");
    assert!(calls("hmget") >= 2 * writes, "{info}");
}

#[tokio::test]
async fn the_snapshot_a_report_writes_reads_back_field_by_field() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let stats = stats_key(&q, 1, 0);
    let metrics = stats.replace(":stats", ":metrics");
    let mut conn = server.conn();
    let _: () = redis::cmd("HSET")
        .arg(&stats)
        .arg(&[
            ("enqueued", 7),
            ("completed", 5),
            ("retried", 3),
            ("failed", 2),
            ("cancelled", 1),
        ])
        .query(&mut conn)
        .unwrap();
    let _: () = redis::cmd("HSET")
        .arg(&metrics)
        .arg(&[("lt:count", 4), ("lt:sum_ms", 40)])
        .query(&mut conn)
        .unwrap();
    let w = q
        .work(WorkerOptions::default(), |_job: Job| async {
            Ok::<(), String>(())
        })
        .unwrap();
    assert!(
        wait_for(Duration::from_secs(5), || async {
            q.workers().await.unwrap().len() == 1
        })
        .await
    );
    w.shutdown().await;
    let day = redis_ms(&server) / 86_400_000;
    let key = hist_keys(&q, 1, day).remove(0);
    let all: Vec<(String, String)> = redis::cmd("HGETALL").arg(&key).query(&mut conn).unwrap();
    assert!(!all.is_empty());
    assert!(all.iter().all(|(_, v)| v == "7,5,3,2,1,4,40"), "{all:?}");
    // The day's hash expires: within 15 days.
    let ttl: i64 = redis::cmd("PTTL").arg(&key).query(&mut conn).unwrap();
    assert!(ttl > 14 * 86_400_000 && ttl <= 15 * 86_400_000, "{ttl}");
    // Counters past the snapshot: the difference is what history shows (Rust reads what Lua wrote).
    let _: () = redis::cmd("HINCRBY")
        .arg(&stats)
        .arg("completed")
        .arg(10)
        .query(&mut conn)
        .unwrap();
    let _: () = redis::cmd("HINCRBY")
        .arg(&metrics)
        .arg("lt:count")
        .arg(2)
        .query(&mut conn)
        .unwrap();
    let _: () = redis::cmd("HINCRBY")
        .arg(&metrics)
        .arg("lt:sum_ms")
        .arg(30)
        .query(&mut conn)
        .unwrap();
    let h = q.history(HOUR, MINUTE).await.unwrap();
    assert_eq!(sum(&h, |p| p.completed), 10);
    assert_eq!(sum(&h, |p| p.enqueued + p.failed + p.cancelled), 0);
    let late: Vec<f64> = h.iter().filter_map(|p| p.lateness_ms).collect();
    assert_eq!(late, [15.0]);
}

#[tokio::test]
async fn history_stays_in_redis_for_a_new_handle() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let now = now_minute(&server);
    let key = |day| hist_keys(&q, 1, day).remove(0);
    snapshot(&server, &key, now - 3, "0,0,0,0,0,0,0");
    snapshot(&server, &key, now - 2, "5,4,1,1,0,0,0");
    set_enqueued(&server, &stats_key(&q, 1, 0), 5);
    let name = q.name().to_string();
    drop(q);
    let again = Queue::new(
        &Client::open(&server.url).unwrap(),
        &name,
        Default::default(),
    )
    .unwrap();
    let h = again.history(HOUR, MINUTE).await.unwrap();
    let p = at(&h, now - 3);
    assert_eq!(
        (
            p.enqueued,
            p.completed,
            p.retried,
            p.dead_lettered,
            p.failed
        ),
        (5, 4, 1, 1, 2)
    );
    assert_eq!(sum(&h, |p| p.enqueued), 5);
}

#[tokio::test]
async fn the_shards_of_a_queue_are_summed() {
    let server = RedisServer::start();
    let client = Client::open(&server.url).unwrap();
    let q = Queue::sharded(&client, &unique("hs"), 2, Default::default()).unwrap();
    let now = now_minute(&server);
    for shard in 0..2 {
        let key = |day| hist_keys(&q, 2, day).remove(shard);
        snapshot(&server, &key, now - 5, "0,0,0,0,0,0,0");
        snapshot(
            &server,
            &key,
            now - 4,
            &format!("{},0,0,0,0,0,0", 3 + shard),
        );
        set_enqueued(&server, &stats_key(&q, 2, shard), 3 + shard as u64);
    }
    let h = q.history(HOUR, MINUTE).await.unwrap();
    assert_eq!(at(&h, now - 5).enqueued, 7);
    assert_eq!(sum(&h, |p| p.enqueued), 7);
}

#[tokio::test]
async fn a_gap_between_snapshots_is_spread_over_its_minutes() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let now = now_minute(&server);
    let key = |day| hist_keys(&q, 1, day).remove(0);
    // No report during minutes now-9 .. now-6: their 8 jobs are spread over now-10 .. now-6.
    snapshot(&server, &key, now - 10, "2,0,0,0,0,0,0");
    snapshot(&server, &key, now - 5, "12,0,0,0,0,0,0");
    // Counters reset (keys deleted) count as 0, not as a negative difference.
    snapshot(&server, &key, now - 4, "0,0,0,0,0,0,0");
    set_enqueued(&server, &stats_key(&q, 1, 0), 1);
    let h = q.history(HOUR, MINUTE).await.unwrap();
    for m in now - 10..now - 5 {
        assert_eq!(at(&h, m).enqueued, 2, "minute {m}: {h:?}");
    }
    assert_eq!(at(&h, now - 5).enqueued, 0);
    // Since the last snapshot, up to now (the live counters).
    assert_eq!(sum(&h, |p| p.enqueued), 11);
}

#[tokio::test]
async fn steps_sum_their_minutes_aligned_on_the_step() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let now = now_minute(&server);
    let key = |day| hist_keys(&q, 1, day).remove(0);
    for (i, m) in (now - 30..=now - 20).enumerate() {
        snapshot(
            &server,
            &key,
            m,
            &format!("{},0,0,0,0,{},{}", i * 3, i, i * 10),
        );
    }
    set_enqueued(&server, &stats_key(&q, 1, 0), 30);
    let h = q.history(HOUR, Duration::from_secs(300)).await.unwrap();
    assert_eq!(h.len(), 12);
    assert!(h.iter().all(|p| p.at_ms % (5 * MIN) == 0));
    let last = h.last().unwrap().at_ms / MIN;
    assert!(last == now / 5 * 5 || last == (now + 1) / 5 * 5, "{h:?}");
    assert_eq!(sum(&h, |p| p.enqueued), 30);
    // Each minute's 3 land in the step holding it.
    for p in &h {
        let first = p.at_ms / MIN;
        let expect = (first..first + 5)
            .filter(|m| (now - 30..now - 20).contains(m))
            .count() as u64
            * 3;
        assert_eq!(p.enqueued, expect, "{p:?}");
        if expect > 0 {
            assert_eq!(p.lateness_ms, Some(10.0));
        }
    }
}

#[tokio::test]
async fn a_bad_window_or_step_is_refused() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    for (window, step) in [
        (HOUR, Duration::from_secs(30)),
        (HOUR, Duration::from_secs(90)),
        (MINUTE, MINUTE * 2),
        (Duration::from_secs(15 * 86_400), MINUTE),
        (Duration::ZERO, MINUTE),
    ] {
        let err = q.history(window, step).await.unwrap_err();
        assert_eq!(
            err.kind(),
            ErrorKind::InvalidArgument,
            "{window:?} {step:?}"
        );
    }
    assert_eq!(
        q.history(Duration::from_secs(14 * 86_400), MINUTE)
            .await
            .unwrap()
            .len(),
        20_160
    );
}

/// Issue 40, item 28: a shard's first worker report can come minutes after its first jobs (a
/// sharded queue's workers report to one shard at a time), and its totals then were taken as the
/// baseline: the history showed 399 enqueued / 314 completed where stats said 840 / 540, for
/// good. The enqueue that creates a shard's counters now leaves a zero snapshot.
#[tokio::test]
async fn a_sharded_queue_counts_in_its_history_what_came_before_its_workers_first_reports() {
    let server = RedisServer::start();
    let client = Client::open(&server.url).unwrap();
    let q = Queue::sharded(&client, &unique("late"), 4, Default::default()).unwrap();
    // 540 jobs to run now, 300 for later: all enqueued before any worker reports.
    let now_jobs: Vec<(&[u8], EnqueueOptions)> = (0..540)
        .map(|_| (&b"now"[..], EnqueueOptions::default()))
        .collect();
    q.enqueue_many(&now_jobs).await.unwrap();
    let later = EnqueueOptions {
        delay: Some(HOUR),
        ..Default::default()
    };
    let later_jobs: Vec<(&[u8], EnqueueOptions)> =
        (0..300).map(|_| (&b"later"[..], later.clone())).collect();
    q.enqueue_many(&later_jobs).await.unwrap();
    let w = q
        .work(
            WorkerOptions {
                concurrency: 20,
                ..Default::default()
            },
            |_job: Job| async { Ok::<(), String>(()) },
        )
        .unwrap();
    assert!(
        wait_for(Duration::from_secs(30), || async {
            q.stats().await.unwrap().completed == 540
        })
        .await
    );
    w.shutdown().await;
    let stats = q.stats().await.unwrap();
    assert_eq!((stats.enqueued, stats.completed), (840, 540));
    let h = q.history(HOUR, MINUTE).await.unwrap();
    assert_eq!(sum(&h, |p| p.enqueued), 840, "{h:?}");
    assert_eq!(sum(&h, |p| p.completed), 540, "{h:?}");
}

/// The zero snapshot costs an enqueue nothing but on the call that creates a shard's counters:
/// one `HSETNX` (and a `PEXPIRE`) per shard, once.
#[tokio::test]
async fn only_the_enqueue_that_creates_a_shards_counters_writes_its_zero_snapshot() {
    let server = RedisServer::start();
    let client = Client::open(&server.url).unwrap();
    let q = Queue::sharded(&client, &unique("born"), 4, Default::default()).unwrap();
    let _: () = redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query(&mut server.conn())
        .unwrap();
    for round in 0..10 {
        let jobs: Vec<(String, EnqueueOptions)> = (0..20)
            .map(|i| (format!("{round}-{i}"), EnqueueOptions::default()))
            .collect();
        q.enqueue_many(&jobs).await.unwrap();
    }
    // A flow's shard is born the same way.
    let f = Queue::new(&client, &unique("bornflow"), Default::default()).unwrap();
    for _ in 0..3 {
        let flow = tideq::FlowJob::new(b"p").child(tideq::FlowJob::new(b"c"));
        f.enqueue_flow(flow).await.unwrap();
    }
    let calls = tideq_testing::command_calls(
        &redis::cmd("INFO")
            .arg("commandstats")
            .query::<String>(&mut server.conn())
            .unwrap(),
    );
    assert_eq!(calls.get("hsetnx"), Some(&5), "{calls:?}");
    let day = redis_ms(&server) / 86_400_000;
    for key in hist_keys(&q, 4, day) {
        let all: Vec<(String, String)> = redis::cmd("HGETALL")
            .arg(&key)
            .query(&mut server.conn())
            .unwrap();
        assert_eq!(all.len(), 1, "{key}: {all:?}");
        assert_eq!(all[0].1, "0,0,0,0,0,0,0");
        let ttl: i64 = redis::cmd("PTTL")
            .arg(&key)
            .query(&mut server.conn())
            .unwrap();
        assert!(ttl > 14 * 86_400_000, "{key}: {ttl}");
    }
}
