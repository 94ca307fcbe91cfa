//! A shared limiter across worker processes (issue 45, part 3): a concurrency limit of 5 shared
//! by 3 queues is never exceeded by 3 worker processes, measured by a ledger of every holding
//! (start and end by the Redis clock), while a fourth process that holds slots is SIGKILLed:
//! its slots come back after their lease. Taken in the handlers, and by the queues' fetches
//! (`Queue::set_limiter`).

mod common;

use std::process::{Child, Command};
use std::time::Duration;

use common::jobs::*;
use common::{unique, RedisServer};
use tideq::{Client, EnqueueOptions, Job, Queue, QueueOptions, WorkerOptions};

const LEASE: Duration = Duration::from_secs(2);

/// Appends `what` to the ledger with the Redis time (ms) after it; returns that time.
async fn ledger(conn: &mut redis::aio::MultiplexedConnection, key: &str, what: &str) -> i64 {
    redis::cmd("EVAL")
        .arg(
            "local t = redis.call('TIME') local ms = t[1] * 1000 + math.floor(t[2] / 1000) \
             redis.call('RPUSH', KEYS[1], ARGV[1] .. ' ' .. ms) return ms",
        )
        .arg(1)
        .arg(key)
        .arg(what)
        .query_async(conn)
        .await
        .unwrap()
}

/// Runs as a worker process when started by [`spawn`] (this test binary, re-executed with
/// `TIDEQ_LIMIT_CHILD` set); a no-op in a normal test run. Works every queue given; each job
/// holds a slot of the limiter for a few ms, written to the ledger (`hang`: holds it forever).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limiter_worker_process() {
    let Ok(spec) = std::env::var("TIDEQ_LIMIT_CHILD") else {
        return;
    };
    let p: Vec<String> = spec.split(' ').map(String::from).collect();
    let (url, queues, key, lim) = (&p[0], &p[1], &p[2], &p[3]);
    // "q...": the queues name the limiter (the fetch takes the slot); else the handler does.
    let (by_queue, hang) = (p[4].starts_with('q'), p[4].ends_with("hang"));
    let client = Client::open(url).unwrap();
    let redis = redis::Client::open(url.as_str()).unwrap();
    let mut workers = Vec::new();
    for name in queues.split(',') {
        let q = Queue::new(&client, name, QueueOptions::default()).unwrap();
        let (l, redis, key, lim) = (client.limiter(), redis.clone(), key.clone(), lim.clone());
        let opts = WorkerOptions {
            concurrency: 8,
            lease: LEASE,
            ..Default::default()
        };
        workers.push(
            q.work(opts, move |job: Job| {
                let (l, redis, key, lim) = (l.clone(), redis.clone(), key.clone(), lim.clone());
                async move {
                    let slot = match by_queue {
                        true => None,
                        false => Some(l.acquire(&lim).await?),
                    };
                    let mut c = redis.get_multiplexed_async_connection().await.unwrap();
                    let token = format!(
                        "{}-{}{}",
                        job.id,
                        fastrand::u32(..),
                        if hang { "h" } else { "" }
                    );
                    // A queue's slot: its deadline is read from the limiter once the holder
                    // is killed (its lease is renewed until then).
                    let deadline = slot.as_ref().map_or(0, |s| s.lease_deadline_ms().unwrap());
                    ledger(&mut c, &key, &format!("s {token} {deadline}")).await;
                    if hang {
                        std::future::pending::<()>().await;
                    }
                    tokio::time::sleep(Duration::from_millis(5 + fastrand::u64(0..10))).await;
                    ledger(&mut c, &key, &format!("e {token}")).await;
                    if let Some(slot) = slot {
                        slot.release().await?;
                    }
                    Ok::<(), tideq::HandlerError>(())
                }
            })
            .unwrap(),
        );
    }
    workers[0].run_until_signal().await;
}

struct Process(Child);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn spawn(url: &str, queues: &[String], key: &str, lim: &str, mode: &str) -> Process {
    let spec = format!("{url} {} {key} {lim} {mode}", queues.join(","));
    Process(
        Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "limiter_worker_process",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("TIDEQ_LIMIT_CHILD", spec)
            .spawn()
            .unwrap(),
    )
}

/// The most holdings at once in the ledger: each from its start to its end, or to its lease
/// deadline when it never ended (a killed holder). At one ms, ends count before starts: an end
/// is written before its release, a start after its acquire.
fn max_overlap(entries: &[String]) -> (usize, usize) {
    let mut ends = std::collections::HashMap::new();
    for e in entries {
        let f: Vec<&str> = e.split(' ').collect();
        if f[0] == "e" {
            ends.insert(f[1].to_string(), f[2].parse::<i64>().unwrap());
        }
    }
    let mut events = Vec::new();
    let mut unended = 0;
    for e in entries {
        let f: Vec<&str> = e.split(' ').collect();
        if f[0] == "s" {
            let (deadline, start): (i64, i64) = (f[2].parse().unwrap(), f[3].parse().unwrap());
            let end = ends.get(f[1]).copied().unwrap_or_else(|| {
                unended += 1;
                deadline
            });
            events.push((start, 1i32));
            events.push((end, -1));
        }
    }
    events.sort();
    let (mut now, mut max) = (0i32, 0i32);
    for (_, d) in events {
        now += d;
        max = max.max(now);
    }
    (max as usize, unended)
}

/// The killed holders' lease deadlines, by job id, from a queue limiter's holders
/// (`<queue shard base><id>.<lease token>`, renewed until the kill).
fn holder_deadlines(server: &RedisServer, lim: &str) -> std::collections::HashMap<String, i64> {
    let held: Vec<(String, f64)> = redis::cmd("ZRANGE")
        .arg(format!("tideq:{{#lim:{lim}}}:hold"))
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .query(&mut server.conn())
        .unwrap();
    held.into_iter()
        .filter_map(|(member, at)| {
            let rest = member.split_once("}:")?.1;
            let mut parts = rest.rsplitn(3, '.');
            let (_, _, id) = (parts.next()?, parts.next()?, parts.next()?);
            Some((id.to_string(), at as i64))
        })
        .collect()
}

/// 3 queues share a concurrency limit of 5, taken by the handlers (`by_queue` false) or by the
/// queues' fetches (`Queue::set_limiter`); a process holding slots is SIGKILLed, then 3 worker
/// processes run every job. The ledger never shows more than 5 at once, and shows 5.
async fn a_shared_limit_of_5_over_3_queues_and_3_processes(by_queue: bool) {
    let server = RedisServer::start();
    let client = Client::open(&server.url).unwrap();
    let lim = unique("shared");
    client.limiter().concurrent(&lim, 5, LEASE).await.unwrap();
    let names: Vec<String> = (0..3).map(|i| unique(&format!("lq{i}"))).collect();
    let queues: Vec<Queue> = names
        .iter()
        .map(|n| Queue::new(&client, n, QueueOptions::default()).unwrap())
        .collect();
    for q in &queues {
        if by_queue {
            q.set_limiter(Some(&lim)).await.unwrap();
        }
        let jobs: Vec<(Vec<u8>, EnqueueOptions)> = (0..100)
            .map(|_| (b"x".to_vec(), Default::default()))
            .collect();
        q.enqueue_many(&jobs).await.unwrap();
    }
    let key = unique("ledger");
    let mode = |m: &str| {
        if by_queue {
            format!("q{m}")
        } else {
            m.to_string()
        }
    };
    let mut killed = spawn(&server.url, &names, &key, &lim, &mode("hang"));
    let held = |server: &RedisServer| -> Vec<String> {
        redis::cmd("LRANGE")
            .arg(&key)
            .arg(0)
            .arg(-1)
            .query(&mut server.conn())
            .unwrap()
    };
    // The hanging process holds slots; killed, it never gives them back itself.
    assert!(
        wait_until(Duration::from_secs(30), || held(&server)
            .iter()
            .any(|e| e.starts_with("s ") && e.contains("h ")))
        .await
    );
    let ok = Command::new("kill")
        .args(["-KILL", &killed.0.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
    let _ = killed.0.wait();
    let deadlines = holder_deadlines(&server, &lim);
    let _workers: Vec<Process> = (0..3)
        .map(|_| spawn(&server.url, &names, &key, &lim, &mode("run")))
        .collect();
    assert!(
        wait_for(Duration::from_secs(120), || async {
            let mut done = 0;
            for q in &queues {
                done += q.stats().await.unwrap().completed;
            }
            done == 300
        })
        .await
    );
    // A queue's killed holders: their deadline, as the limiter had it.
    let entries: Vec<String> = held(&server)
        .into_iter()
        .map(|e| {
            let f: Vec<&str> = e.split(' ').collect();
            match (f[0], f.get(2)) {
                ("s", Some(&"0")) if f[1].ends_with('h') => {
                    let id = f[1].rsplit_once('-').unwrap().0;
                    let at = deadlines
                        .get(id)
                        .unwrap_or_else(|| panic!("no holder for {id}"));
                    format!("s {} {at} {}", f[1], f[3])
                }
                _ => e,
            }
        })
        .collect();
    let (max, unended) = max_overlap(&entries);
    assert!(max <= 5, "{max} holders at once (limit 5)");
    // The limit was reached, not just respected by a slow run, and the killed holder's slots
    // came back (every job ran, the killed one's after their lease).
    assert_eq!(max, 5, "{entries:?}");
    assert!(unended >= 1);
    let snoozed: u64 = {
        let mut s = 0;
        for q in &queues {
            s += q.stats().await.unwrap().snoozed;
        }
        s
    };
    eprintln!(
        "ledger: {} holdings, most at once {max}, {unended} killed holders, {snoozed} snoozes",
        entries.len() / 2
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shared_limit_of_5_holds_over_3_queues_and_3_processes_with_a_holder_killed() {
    a_shared_limit_of_5_over_3_queues_and_3_processes(false).await;
}

/// The same through the queues: no handler acquires, the fetches do; none is snoozed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queue_limit_of_5_holds_over_3_queues_and_3_processes_with_a_worker_killed() {
    a_shared_limit_of_5_over_3_queues_and_3_processes(true).await;
}

#[test]
fn the_ledger_counts_ends_before_starts_at_the_same_ms_and_killed_holders_to_their_deadline() {
    let e = |s: &str| s.to_string();
    let entries = [
        e("s a 100 10"),
        e("s b 25 20"), // killed: held until 25
        e("e a 30"),
        e("s c 200 30"), // starts as a ends
        e("s d 200 25"), // starts as b's lease runs out
        e("e c 40"),
        e("e d 40"),
    ];
    assert_eq!(max_overlap(&entries), (2, 1));
}
