//! Queues that name a shared limiter (`Queue::set_limiter`): every start of their jobs takes from
//! it, across queues, shards and workers; jobs over the limit stay ready; a concurrency
//! limiter's slot is held while its job runs and comes back when it ends, or when its lease runs
//! out should its worker die. Across processes: `limiters_processes.rs`.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{unique, RedisServer};
use tideq::{Client, EnqueueOptions, ErrorKind, Job, Queue, QueueOptions, WorkerOptions};

const LEASE: Duration = Duration::from_secs(30);

fn queue(client: &Client) -> Queue {
    let opts = QueueOptions {
        max_attempts: 1,
        ..Default::default()
    };
    Queue::new(client, &unique("lq"), opts).unwrap()
}

async fn fill(q: &Queue, n: usize) {
    let jobs: Vec<(Vec<u8>, EnqueueOptions)> = (0..n)
        .map(|_| (b"x".to_vec(), Default::default()))
        .collect();
    q.enqueue_many(&jobs).await.unwrap();
}

fn holders(server: &RedisServer, lim: &str) -> usize {
    redis::cmd("ZCARD")
        .arg(format!("tideq:{{#lim:{lim}}}:hold"))
        .query(&mut server.conn())
        .unwrap()
}

#[tokio::test]
async fn two_queues_naming_a_window_limiter_start_no_more_than_its_starts_together() {
    let server = RedisServer::start();
    let client = Client::open(&server.url).unwrap();
    let lim = unique("win");
    client
        .limiter()
        .window(&lim, 5, Duration::from_secs(60))
        .await
        .unwrap();
    let (a, b) = (queue(&client), queue(&client));
    for q in [&a, &b] {
        q.set_limiter(Some(&lim)).await.unwrap();
        assert_eq!(q.limiter_name().await.unwrap().as_deref(), Some(&*lim));
        fill(q, 10).await;
    }
    assert_eq!(a.lease_jobs(3, LEASE).await.unwrap().len(), 3);
    assert_eq!(b.lease_jobs(10, LEASE).await.unwrap().len(), 2, "5 in all");
    assert_eq!(a.lease_jobs(10, LEASE).await.unwrap().len(), 0);
    assert_eq!(holders(&server, &lim), 5, "the unused room went back");
    assert_eq!(b.stats().await.unwrap().ready, 8, "the rest stay ready");
    // No limiter: the rest start.
    b.set_limiter(None).await.unwrap();
    assert_eq!(b.limiter_name().await.unwrap(), None);
    assert_eq!(b.lease_jobs(100, LEASE).await.unwrap().len(), 8);
}

#[tokio::test]
async fn a_concurrency_limiters_slot_is_held_while_its_job_runs_and_comes_back_when_it_ends() {
    let server = RedisServer::start();
    let client = Client::open(&server.url).unwrap();
    let lim = unique("conc");
    client
        .limiter()
        .concurrent(&lim, 3, Duration::from_secs(60))
        .await
        .unwrap();
    let q = queue(&client);
    q.set_limiter(Some(&lim)).await.unwrap();
    fill(&q, 10).await;
    let jobs = q.lease_jobs(10, LEASE).await.unwrap();
    assert_eq!(jobs.len(), 3);
    assert_eq!(holders(&server, &lim), 3, "one holder per running job");
    assert!(q.lease_jobs(10, LEASE).await.unwrap().is_empty());
    // Each way a job ends gives its slot back: completed, failed, released.
    q.complete(&jobs[0]).await.unwrap();
    q.fail(&jobs[1], "boom").await.unwrap();
    q.release(&jobs[2]).await.unwrap();
    assert_eq!(holders(&server, &lim), 0);
    let again = q.lease_jobs(10, LEASE).await.unwrap();
    assert_eq!(again.len(), 3);
    // A renewed lease renews its slot; the slot of a lease that ran out comes back.
    q.extend(&again[0], Duration::from_secs(120)).await.unwrap();
    let held: Vec<(String, f64)> = redis::cmd("ZRANGE")
        .arg(format!("tideq:{{#lim:{lim}}}:hold"))
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .query(&mut server.conn())
        .unwrap();
    let deadline = held.iter().map(|h| h.1).fold(0.0, f64::max);
    let now: (u64, u64) = redis::cmd("TIME").query(&mut server.conn()).unwrap();
    assert!(deadline > (now.0 * 1000) as f64 + 100_000.0, "{deadline}");
}

#[tokio::test]
async fn a_dead_workers_slots_come_back_when_their_leases_run_out() {
    let server = RedisServer::start();
    let client = Client::open(&server.url).unwrap();
    let lim = unique("conc");
    client
        .limiter()
        .concurrent(&lim, 2, Duration::from_secs(60))
        .await
        .unwrap();
    let q = queue(&client);
    q.set_limiter(Some(&lim)).await.unwrap();
    fill(&q, 4).await;
    // Leased and never settled, as by a worker that died.
    assert_eq!(
        q.lease_jobs(4, Duration::from_millis(300))
            .await
            .unwrap()
            .len(),
        2
    );
    assert!(q.lease_jobs(4, LEASE).await.unwrap().is_empty());
    tokio::time::sleep(Duration::from_millis(400)).await;
    // Their leases ran out: the jobs are recovered and their slots are free again.
    assert_eq!(q.lease_jobs(4, LEASE).await.unwrap().len(), 2);
}

#[tokio::test]
async fn a_bucket_limiter_lets_its_capacity_start_then_its_refill() {
    let server = RedisServer::start();
    let client = Client::open(&server.url).unwrap();
    let lim = unique("bucket");
    client.limiter().bucket(&lim, 4, 0.001).await.unwrap();
    let q = Queue::sharded(&client, &unique("lq"), 2, QueueOptions::default()).unwrap();
    q.set_limiter(Some(&lim)).await.unwrap();
    fill(&q, 20).await;
    let mut got = 0;
    for _ in 0..3 {
        got += q.lease_jobs(20, LEASE).await.unwrap().len();
    }
    assert_eq!(got, 4, "the bucket's 4 tokens, over both shards");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_of_two_queues_naming_one_concurrency_limiter_never_run_more_than_its_n() {
    let server = RedisServer::start();
    let client = Client::open(&server.url).unwrap();
    let lim = unique("conc");
    client
        .limiter()
        .concurrent(&lim, 4, Duration::from_secs(60))
        .await
        .unwrap();
    let running = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let mut workers = Vec::new();
    let mut queues = Vec::new();
    for _ in 0..2 {
        let q = queue(&client);
        q.set_limiter(Some(&lim)).await.unwrap();
        fill(&q, 60).await;
        let (r, m) = (running.clone(), most.clone());
        let opts = WorkerOptions {
            concurrency: 10,
            stop_when_drained: true,
            ..Default::default()
        };
        workers.push(
            q.work(opts, move |_job: Job| {
                let (r, m) = (r.clone(), m.clone());
                async move {
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
    assert!(most <= 4, "{most} jobs ran at once under a limit of 4");
    assert_eq!(most, 4, "the limit was reached");
    assert_eq!(holders(&server, &lim), 0, "every slot given back");
}

#[tokio::test]
async fn a_limiter_never_defined_or_a_bad_name_is_refused_and_nothing_is_written() {
    let server = RedisServer::start();
    let client = Client::open(&server.url).unwrap();
    let q = queue(&client);
    for (name, says) in [
        ("nosuch", "no limiter named \"nosuch\": define it first"),
        ("a{b}", "limiter"),
        ("", "limiter"),
    ] {
        let e = q.set_limiter(Some(name)).await.unwrap_err();
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
async fn a_fetch_whose_limiter_was_deleted_is_refused_naming_it_and_leases_nothing() {
    let server = RedisServer::start();
    let client = Client::open(&server.url).unwrap();
    let lim = unique("gone");
    client
        .limiter()
        .window(&lim, 5, Duration::from_secs(60))
        .await
        .unwrap();
    let q = queue(&client);
    q.set_limiter(Some(&lim)).await.unwrap();
    fill(&q, 3).await;
    let _: () = redis::cmd("DEL")
        .arg(format!("tideq:{{#lim:{lim}}}:lim"))
        .query(&mut server.conn())
        .unwrap();
    let e = q.lease_jobs(3, LEASE).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    assert!(e.to_string().contains("which is not defined"), "{e}");
    assert_eq!(q.stats().await.unwrap().ready, 3, "nothing leased");
}
