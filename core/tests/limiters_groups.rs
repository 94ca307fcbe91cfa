//! Groups that name a shared limiter (`Queue::set_group_limiter`, issue 45 part 3): every start of
//! a group's jobs takes from the limiter, across queues and workers; a job the limiter has no room
//! for is given back to its place without counting an attempt, and its group waits while the
//! queue's other groups go on; a concurrency limiter's slot is held while its job runs and comes
//! back when it ends, or when its lease runs out should its worker die.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{unique, RedisServer};
use tideq::{Client, EnqueueOptions, ErrorKind, Job, Queue, QueueOptions, WorkerOptions};

const LEASE: Duration = Duration::from_secs(30);

fn queue(client: &Client, max_attempts: u32) -> Queue {
    let opts = QueueOptions {
        max_attempts,
        ..Default::default()
    };
    Queue::new(client, &unique("gq"), opts).unwrap()
}

fn in_group(g: &str, id: Option<String>) -> EnqueueOptions {
    EnqueueOptions {
        group: Some(g.to_string()),
        id,
        ..Default::default()
    }
}

async fn fill(q: &Queue, group: &str, n: usize) {
    let jobs: Vec<(Vec<u8>, EnqueueOptions)> = (0..n)
        .map(|_| (group.as_bytes().to_vec(), in_group(group, None)))
        .collect();
    q.enqueue_many(&jobs).await.unwrap();
}

/// A concurrency limiter of one slot, newly named.
async fn one_slot_limiter(client: &Client) -> String {
    let lim = unique("conc");
    client
        .limiter()
        .concurrent(&lim, 1, Duration::from_secs(60))
        .await
        .unwrap();
    lim
}

fn hold_key(lim: &str) -> String {
    format!("tideq:{{#lim:{lim}}}:hold")
}

fn holders(server: &RedisServer, lim: &str) -> usize {
    redis::cmd("ZCARD")
        .arg(hold_key(lim))
        .query(&mut server.conn())
        .unwrap()
}

/// Jobs given back to their queue (the count its give-backs keep in its stats hash).
fn given_back(server: &RedisServer, q: &Queue) -> u64 {
    let n: Option<u64> = redis::cmd("HGET")
        .arg(format!("tideq:{{{}}}:stats", q.name()))
        .arg("given_back")
        .query(&mut server.conn())
        .unwrap();
    n.unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn groups_of_two_queues_naming_one_limiter_never_run_more_than_its_slots() {
    let server = RedisServer::start();
    let client = Client::open(&server.url).unwrap();
    let lim = unique("conc");
    client
        .limiter()
        .concurrent(&lim, 3, Duration::from_secs(60))
        .await
        .unwrap();
    // A ledger of the runs under way: how many overlap at most, and each run's attempt.
    let running = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let not_first = Arc::new(AtomicUsize::new(0));
    let (mut workers, mut queues) = (Vec::new(), Vec::new());
    for _ in 0..2 {
        // max_attempts 1: a give-back that counted an attempt would leave the job dead.
        let q = queue(&client, 1);
        q.set_group_limiter("acme", Some(&lim)).await.unwrap();
        fill(&q, "acme", 60).await;
        let (r, m, nf) = (running.clone(), most.clone(), not_first.clone());
        let opts = WorkerOptions {
            concurrency: 20,
            stop_when_drained: true,
            ..Default::default()
        };
        workers.push(
            q.work(opts, move |job: Job| {
                let (r, m, nf) = (r.clone(), m.clone(), nf.clone());
                async move {
                    if job.attempt != 1 {
                        nf.fetch_add(1, Ordering::SeqCst);
                    }
                    let now = r.fetch_add(1, Ordering::SeqCst) + 1;
                    m.fetch_max(now, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    r.fetch_sub(1, Ordering::SeqCst);
                    Ok::<(), String>(())
                }
            })
            .unwrap(),
        );
        queues.push(q);
    }
    for w in workers {
        assert_eq!(w.join().await.completed, 60);
    }
    let most = most.load(Ordering::SeqCst);
    assert!(
        most <= 3,
        "{most} jobs of the groups ran at once under a limit of 3"
    );
    assert_eq!(most, 3, "the limit was reached");
    assert_eq!(
        not_first.load(Ordering::SeqCst),
        0,
        "a run was not its job's first attempt"
    );
    let gb: u64 = queues.iter().map(|q| given_back(&server, q)).sum();
    println!("give-backs for 120 jobs over a limit of 3, 2 x 20 workers: {gb}");
    for q in &queues {
        let s = q.stats().await.unwrap();
        assert_eq!((s.completed, s.dead, s.retried), (60, 0, 0));
    }
    assert_eq!(holders(&server, &lim), 0, "every slot given back");
}

#[tokio::test]
async fn a_group_held_by_its_limiter_does_not_slow_the_queues_other_groups() {
    let server = RedisServer::start();
    let client = Client::open(&server.url).unwrap();
    let lim = one_slot_limiter(&client).await;
    let q = queue(&client, 1);
    q.set_group_limiter("acme", Some(&lim)).await.unwrap();
    fill(&q, "acme", 5).await;
    fill(&q, "free", 20).await;
    let mut got = Vec::new();
    for _ in 0..10 {
        got.extend(q.lease_jobs(4, LEASE).await.unwrap());
    }
    let acme = got.iter().filter(|j| j.payload == b"acme").count();
    assert_eq!(acme, 1, "one slot");
    assert_eq!(got.len() - acme, 20, "the other group drained meanwhile");
    assert_eq!(holders(&server, &lim), 1);
    let info = q.group("acme").await.unwrap();
    assert_eq!((info.ready, info.active), (4, 1));
    assert_eq!(info.limiter.as_deref(), Some(&*lim));
    assert_eq!(q.group("free").await.unwrap().limiter, None);
    // Its slot back, the group starts its next job (once its wait for the limiter is over).
    let running = got.iter().find(|j| j.payload == b"acme").unwrap();
    q.complete(running).await.unwrap();
    assert_eq!(holders(&server, &lim), 0);
    let next = q.lease_jobs(4, LEASE).await.unwrap();
    assert_eq!(next.len(), 1, "one slot");
}

#[tokio::test]
async fn a_window_limiter_over_a_group_counts_its_starts_not_its_running_jobs() {
    let server = RedisServer::start();
    let client = Client::open(&server.url).unwrap();
    let lim = unique("win");
    client
        .limiter()
        .window(&lim, 2, Duration::from_secs(60))
        .await
        .unwrap();
    let q = queue(&client, 1);
    q.set_group_limiter("acme", Some(&lim)).await.unwrap();
    fill(&q, "acme", 5).await;
    let first = q.lease_jobs(10, LEASE).await.unwrap();
    assert_eq!(first.len(), 2);
    for j in &first {
        q.complete(j).await.unwrap();
    }
    q.resume_group("acme").await.unwrap(); // offered again at once: the window still says no
    assert!(q.lease_jobs(10, LEASE).await.unwrap().is_empty());
    assert_eq!(holders(&server, &lim), 2, "two starts in the window");
    assert_eq!(q.group("acme").await.unwrap().ready, 3);
    // No limiter: the rest start.
    q.set_group_limiter("acme", None).await.unwrap();
    assert_eq!(q.group("acme").await.unwrap().limiter, None);
    assert_eq!(q.lease_jobs(10, LEASE).await.unwrap().len(), 3);
}

#[tokio::test]
async fn a_bucket_limiter_over_a_group_lets_its_capacity_start() {
    let server = RedisServer::start();
    let client = Client::open(&server.url).unwrap();
    let lim = unique("bucket");
    client.limiter().bucket(&lim, 4, 0.001).await.unwrap();
    let q = queue(&client, 1);
    q.set_group_limiter("acme", Some(&lim)).await.unwrap();
    fill(&q, "acme", 10).await;
    let mut got = 0;
    for _ in 0..3 {
        got += q.lease_jobs(3, LEASE).await.unwrap().len();
        q.resume_group("acme").await.unwrap();
    }
    assert_eq!(got, 4, "the bucket's 4 tokens");
    assert_eq!(q.group("acme").await.unwrap().ready, 6);
}

#[tokio::test]
async fn a_group_limiter_never_defined_or_a_bad_name_is_refused_and_nothing_is_written() {
    let server = RedisServer::start();
    let client = Client::open(&server.url).unwrap();
    let q = queue(&client, 1);
    for (group, name, says) in [
        (
            "acme",
            "nosuch",
            "no limiter named \"nosuch\": define it first",
        ),
        ("acme", "a{b}", "limiter"),
        ("acme", "", "limiter"),
        ("", "nosuch", "group"),
    ] {
        let e = q.set_group_limiter(group, Some(name)).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
        assert!(e.to_string().contains(says), "{e}");
    }
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg("*")
        .query(&mut server.conn())
        .unwrap();
    assert!(keys.is_empty(), "{keys:?}");
}

#[tokio::test]
async fn a_job_given_back_a_thousand_times_keeps_its_place_and_its_attempts() {
    let server = RedisServer::start();
    let client = Client::open(&server.url).unwrap();
    let lim = one_slot_limiter(&client).await;
    // The one slot, held by a handler elsewhere.
    let guard = client.limiter().acquire(&lim).await.unwrap();
    let q = queue(&client, 1);
    q.set_group_limiter("acme", Some(&lim)).await.unwrap();
    for id in ["j1", "j2", "j3"] {
        q.enqueue(b"x", in_group("acme", Some(id.into())))
            .await
            .unwrap();
    }
    for _ in 0..1000 {
        // Offered again at once (else the group waits for the limiter a while).
        q.resume_group("acme").await.unwrap();
        assert!(q.lease_jobs(3, LEASE).await.unwrap().is_empty());
    }
    assert!(
        given_back(&server, &q) >= 1000,
        "{}",
        given_back(&server, &q)
    );
    let s = q.stats().await.unwrap();
    assert_eq!((s.ready, s.active, s.dead), (3, 0, 0));
    assert_eq!(q.get("j1").await.unwrap().unwrap().attempts, 0);
    guard.release().await.unwrap();
    // In their order, each on its first attempt.
    let mut order = Vec::new();
    for _ in 0..3 {
        q.resume_group("acme").await.unwrap();
        let jobs = q.lease_jobs(3, LEASE).await.unwrap();
        assert_eq!(jobs.len(), 1);
        assert_eq!(jobs[0].attempt, 1);
        order.push(jobs[0].id.clone());
        q.complete(&jobs[0]).await.unwrap();
    }
    assert_eq!(order, ["j1", "j2", "j3"]);
    assert_eq!(q.stats().await.unwrap().completed, 3);
}

#[tokio::test]
async fn a_group_slot_is_renewed_with_its_lease_and_given_back_when_its_job_ends() {
    let server = RedisServer::start();
    let client = Client::open(&server.url).unwrap();
    let lim = unique("conc");
    client
        .limiter()
        .concurrent(&lim, 2, Duration::from_secs(60))
        .await
        .unwrap();
    // A queue limiter too: a job holds a slot of each.
    let qlim = unique("qconc");
    client
        .limiter()
        .concurrent(&qlim, 10, Duration::from_secs(60))
        .await
        .unwrap();
    let q = queue(&client, 3);
    q.set_limiter(Some(&qlim)).await.unwrap();
    q.set_group_limiter("acme", Some(&lim)).await.unwrap();
    fill(&q, "acme", 5).await;
    let jobs = q.lease_jobs(5, LEASE).await.unwrap();
    assert_eq!(jobs.len(), 2);
    assert_eq!((holders(&server, &lim), holders(&server, &qlim)), (2, 2));
    q.extend(&jobs[0], Duration::from_secs(120)).await.unwrap();
    let held: Vec<(String, f64)> = redis::cmd("ZRANGE")
        .arg(hold_key(&lim))
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .query(&mut server.conn())
        .unwrap();
    let deadline = held.iter().map(|h| h.1).fold(0.0, f64::max);
    let now: (u64, u64) = redis::cmd("TIME").query(&mut server.conn()).unwrap();
    assert!(deadline > (now.0 * 1000) as f64 + 100_000.0, "{deadline}");
    q.complete(&jobs[0]).await.unwrap();
    q.fail(&jobs[1], "boom").await.unwrap();
    assert_eq!((holders(&server, &lim), holders(&server, &qlim)), (0, 0));
}

#[tokio::test]
async fn a_dead_workers_group_slots_come_back_with_its_leases() {
    let server = RedisServer::start();
    let client = Client::open(&server.url).unwrap();
    let lim = unique("conc");
    client
        .limiter()
        .concurrent(&lim, 2, Duration::from_secs(60))
        .await
        .unwrap();
    let q = queue(&client, 3);
    q.set_group_limiter("acme", Some(&lim)).await.unwrap();
    fill(&q, "acme", 4).await;
    // Leased and never settled, as by a worker that died.
    let short = Duration::from_millis(300);
    assert_eq!(q.lease_jobs(4, short).await.unwrap().len(), 2);
    q.resume_group("acme").await.unwrap();
    assert!(q.lease_jobs(4, LEASE).await.unwrap().is_empty());
    tokio::time::sleep(Duration::from_millis(400)).await;
    // Their leases ran out: the jobs are recovered and their slots are free again.
    q.resume_group("acme").await.unwrap();
    assert_eq!(q.lease_jobs(4, LEASE).await.unwrap().len(), 2);
    assert_eq!(holders(&server, &lim), 2);
}

#[tokio::test]
async fn a_group_whose_limiter_has_room_starts_every_job_asked_for_after_one_was_given_back() {
    let server = RedisServer::start();
    let client = Client::open(&server.url).unwrap();
    let lim = unique("conc");
    client
        .limiter()
        .concurrent(&lim, 100, Duration::from_secs(60))
        .await
        .unwrap();
    let q = queue(&client, 1);
    q.set_group_limiter("acme", Some(&lim)).await.unwrap();
    fill(&q, "acme", 30).await;
    // The limiter full for a moment: the handle learns to fetch few of the group's jobs.
    let full: Vec<_> = {
        let mut g = Vec::new();
        for _ in 0..100 {
            g.push(client.limiter().acquire(&lim).await.unwrap());
        }
        g
    };
    assert!(q.lease_jobs(10, LEASE).await.unwrap().is_empty());
    for g in full {
        g.release().await.unwrap();
    }
    q.resume_group("acme").await.unwrap();
    // Room again: one call still leases all it asks for.
    assert_eq!(q.lease_jobs(25, LEASE).await.unwrap().len(), 25);
    assert_eq!(holders(&server, &lim), 25);
    assert_eq!(given_back(&server, &q), 10);
}

/// INFO commandstats' call count of `cmd` (lower case) since the last `CONFIG RESETSTAT`.
fn calls_of(server: &RedisServer, cmd: &str) -> u64 {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query(&mut server.conn())
        .unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("cmdstat_{cmd}:calls=")))
        .and_then(|rest| rest.split(',').next())
        .map_or(0, |n| n.parse().unwrap())
}

#[tokio::test]
async fn a_give_back_among_100000_groups_never_searches_the_rotation() {
    let server = RedisServer::start();
    let client = Client::open(&server.url).unwrap();
    let lim = one_slot_limiter(&client).await;
    let _slot = client.limiter().acquire(&lim).await.unwrap();
    let q = queue(&client, 1);
    // Four groups naming the full limiter first in the rotation, then 100,000 tenants.
    let named = ["n0", "n1", "n2", "n3"];
    for g in named {
        q.set_group_limiter(g, Some(&lim)).await.unwrap();
        q.enqueue(b"x", in_group(g, None)).await.unwrap();
    }
    for batch in 0..20 {
        let jobs: Vec<(Vec<u8>, EnqueueOptions)> = (0..5_000)
            .map(|i| {
                let g = format!("t{}", batch * 5_000 + i);
                (g.clone().into_bytes(), in_group(&g, None))
            })
            .collect();
        q.enqueue_many(&jobs).await.unwrap();
    }
    let mut conn = server.conn();
    for (k, v) in [
        ("slowlog-log-slower-than", "0"),
        ("slowlog-max-len", "1000"),
    ] {
        let _: () = redis::cmd("CONFIG")
            .arg("SET")
            .arg(k)
            .arg(v)
            .query(&mut conn)
            .unwrap();
    }
    let _: () = redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query(&mut conn)
        .unwrap();
    let _: () = redis::cmd("SLOWLOG").arg("RESET").query(&mut conn).unwrap();
    // The fetch leases a job of each of the four; the limiter has room for none, so all four go
    // back in one call, and the look goes on with the queue's other groups, in order.
    let got = q.lease_jobs(4, LEASE).await.unwrap();
    let got: Vec<&[u8]> = got.iter().map(|j| j.payload.as_slice()).collect();
    assert_eq!(got, [&b"t0"[..], b"t1", b"t2", b"t3"]);
    assert_eq!(given_back(&server, &q), 4);
    assert_eq!(
        calls_of(&server, "lrem"),
        0,
        "a give-back searched the rotation"
    );
    // They keep their place at the rotation's back (where the fetch put them, before the four it
    // took next), marked to be passed over for the limiter's wait, or until one of their jobs
    // ends.
    let inside: Vec<u8> = redis::cmd("SMISMEMBER")
        .arg(format!("tideq:{{{}}}:gset", q.name()))
        .arg(&named)
        .query(&mut conn)
        .unwrap();
    assert_eq!(inside, [1, 1, 1, 1]);
    let last: Vec<String> = redis::cmd("LRANGE")
        .arg(format!("tideq:{{{}}}:grot", q.name()))
        .arg(-8)
        .arg(-5)
        .query(&mut conn)
        .unwrap();
    assert_eq!(last, named);
    let s = q.stats().await.unwrap();
    assert_eq!((s.ready, s.active), (100_004 - 4, 4));
    // For the record (not asserted: machines differ): the slowest script call since the fill.
    let log: Vec<Vec<redis::Value>> = redis::cmd("SLOWLOG")
        .arg("GET")
        .arg(1000)
        .query(&mut conn)
        .unwrap();
    let slowest = log
        .iter()
        .filter_map(|e| {
            let us = redis::from_redis_value::<u64>(e.get(2)?.clone()).ok()?;
            let args = redis::from_redis_value::<Vec<String>>(e.get(3)?.clone()).ok()?;
            (args[0] == "EVALSHA").then_some(us)
        })
        .max();
    eprintln!("slowest script call at 100,000 groups: {slowest:?} µs");
}

#[tokio::test]
async fn a_job_enqueued_to_a_group_given_back_leaves_it_in_one_place_and_is_listed_once() {
    let server = RedisServer::start();
    let client = Client::open(&server.url).unwrap();
    let lim = one_slot_limiter(&client).await;
    let _slot = client.limiter().acquire(&lim).await.unwrap();
    let q = queue(&client, 1);
    q.set_group_limiter("acme", Some(&lim)).await.unwrap();
    fill(&q, "acme", 2).await;
    fill(&q, "other", 3).await;
    // acme's job is given back (acme stays in the rotation, marked), then other's is leased.
    assert_eq!(q.lease_jobs(1, LEASE).await.unwrap().len(), 1);
    assert_eq!(given_back(&server, &q), 1);
    // A new job of the group while the mark holds.
    fill(&q, "acme", 1).await;
    let mut conn = server.conn();
    let member = |set: &str, conn: &mut redis::Connection| -> bool {
        redis::cmd("SISMEMBER")
            .arg(format!("tideq:{{{}}}:{set}", q.name()))
            .arg("acme")
            .query(conn)
            .unwrap()
    };
    let (rotation, held) = (member("gset", &mut conn), member("gheld", &mut conn));
    assert!(
        rotation && !held,
        "in the rotation: {rotation}, held: {held}"
    );
    let ready = q.jobs(tideq::JobState::Ready, 0, 100).await.unwrap();
    let ids: Vec<&str> = ready.iter().map(|j| j.id.as_str()).collect();
    let unique: std::collections::HashSet<&str> = ids.iter().copied().collect();
    assert_eq!((ids.len(), unique.len()), (5, 5), "{ids:?}");
    // The fetch that meets it holds it: still in one place, and other's jobs go on.
    assert_eq!(q.lease_jobs(2, LEASE).await.unwrap().len(), 2);
    let (rotation, held) = (member("gset", &mut conn), member("gheld", &mut conn));
    assert!(
        !rotation && held,
        "in the rotation: {rotation}, held: {held}"
    );
    assert_eq!(given_back(&server, &q), 1);
}
