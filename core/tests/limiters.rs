//! Shared limiters (issue 45, part 3): concurrency, window and token bucket by name, each
//! error path refused with nothing written, and an over-limit acquire inside a handler snoozing
//! its job without using an attempt. Across processes: `limiters_processes.rs`.

mod common;

use std::time::Duration;

use common::jobs::*;
use common::{unique, RedisServer};
use tideq::{Client, ErrorKind, Job, LimitError, Limiter, WorkerOptions};

fn limiter(server: &RedisServer) -> Limiter {
    Client::open(&server.url).unwrap().limiter()
}

fn keys(server: &RedisServer) -> Vec<String> {
    let mut k: Vec<String> = redis::cmd("KEYS")
        .arg("*")
        .query(&mut server.conn())
        .unwrap();
    k.sort();
    k
}

fn over(r: Result<tideq::LimitGuard, LimitError>) -> Duration {
    match r {
        Err(LimitError::Over(o)) => o.retry_after,
        other => panic!("expected over the limit, got {other:?}"),
    }
}

#[tokio::test]
async fn a_concurrency_limit_admits_n_holders_and_a_released_slot_is_taken_again() {
    let server = RedisServer::start();
    let l = limiter(&server);
    l.concurrent("api", 3, Duration::from_secs(60))
        .await
        .unwrap();
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(l.acquire("api").await.unwrap());
    }
    let wait = over(l.acquire("api").await);
    assert!(
        wait > Duration::ZERO && wait <= Duration::from_millis(375),
        "{wait:?}"
    );
    assert!(held[0].lease_deadline_ms().unwrap() > redis_ms(&server));
    assert!(held.pop().unwrap().release().await.unwrap());
    let again = l.acquire("api").await.unwrap();
    over(l.acquire("api").await);
    // A dropped guard gives its slot back too (in the background).
    drop(again);
    assert!(
        wait_for(Duration::from_secs(5), || async {
            l.acquire("api").await.map(std::mem::forget).is_ok()
        })
        .await
    );
}

#[tokio::test]
async fn a_dead_holders_slot_comes_back_after_its_lease_and_extend_keeps_it() {
    let server = RedisServer::start();
    let l = limiter(&server);
    l.concurrent("one", 1, Duration::from_millis(300))
        .await
        .unwrap();
    let lost = l.acquire("one").await.unwrap();
    std::mem::forget(lost); // a holder that died: never released
    over(l.acquire("one").await);
    tokio::time::sleep(Duration::from_millis(350)).await;
    // Extended before its lease ran out, the slot stays held past it.
    l.concurrent("one", 1, Duration::from_secs(1))
        .await
        .unwrap();
    let mut kept = l.acquire("one").await.unwrap();
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert!(kept.extend(Duration::from_secs(1)).await.unwrap());
    tokio::time::sleep(Duration::from_millis(600)).await;
    over(l.acquire("one").await);
    l.concurrent("one", 1, Duration::from_millis(300))
        .await
        .unwrap();
    assert!(kept.release().await.unwrap());
    let late = l.acquire("one").await.unwrap();
    tokio::time::sleep(Duration::from_millis(350)).await;
    // Its lease ran out: extend and release say it was no longer held.
    let mut late = late;
    assert!(!late.extend(Duration::from_secs(1)).await.unwrap());
    assert!(!late.release().await.unwrap());
}

#[tokio::test]
async fn a_window_admits_n_starts_per_window_and_tells_when_the_next_may_start() {
    let server = RedisServer::start();
    let l = limiter(&server);
    l.window("w", 3, Duration::from_millis(500)).await.unwrap();
    for _ in 0..3 {
        let g = l.acquire("w").await.unwrap();
        assert_eq!(g.lease_deadline_ms(), None);
        assert!(g.release().await.unwrap());
    }
    let wait = over(l.acquire("w").await);
    assert!(wait <= Duration::from_millis(500), "{wait:?}");
    tokio::time::sleep(wait + Duration::from_millis(20)).await;
    l.acquire("w").await.unwrap();
}

#[tokio::test]
async fn a_bucket_allows_its_burst_then_tells_the_wait_for_the_cost() {
    let server = RedisServer::start();
    let l = limiter(&server);
    l.bucket("b", 10, 2.0).await.unwrap();
    for _ in 0..10 {
        l.acquire("b").await.unwrap();
    }
    // Empty: a token comes every 500 ms, 4 tokens in 2 s.
    let one = over(l.acquire("b").await);
    assert!(one <= Duration::from_millis(500), "{one:?}");
    let four = over(l.acquire_cost("b", 4).await);
    assert!(
        four > Duration::from_millis(1500) && four <= Duration::from_secs(2),
        "{four:?}"
    );
    // Redefined smaller, the bucket keeps its tokens, capped at the new capacity.
    l.bucket("b", 3, 1000.0).await.unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    l.acquire_cost("b", 3).await.unwrap();
}

#[tokio::test]
async fn every_bad_argument_is_refused_with_nothing_written() {
    let server = RedisServer::start();
    let l = limiter(&server);
    let s = Duration::from_secs(1);
    let invalid = |r: tideq::Result<()>| {
        let e = r.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
        e.to_string()
    };
    assert!(invalid(l.concurrent("a", 0, s).await).contains("n must be 1 to 100000"));
    invalid(l.concurrent("a", 100_001, s).await);
    assert!(invalid(l.concurrent("a", 1, Duration::ZERO).await).contains("lease"));
    invalid(
        l.concurrent("a", 1, Duration::from_secs(8 * 24 * 3600))
            .await,
    );
    invalid(l.window("a", 0, s).await);
    assert!(invalid(l.window("a", 1, Duration::ZERO).await).contains("per"));
    invalid(l.bucket("a", 0, 1.0).await);
    invalid(l.bucket("a", 1_000_000_001, 1.0).await);
    for refill in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        assert!(invalid(l.bucket("a", 5, refill).await).contains("refill"));
    }
    for name in ["", "a{b}", "a*", "x?", &"n".repeat(257)] {
        invalid(l.concurrent(name, 1, s).await);
        let e = l.acquire(name).await.unwrap_err();
        assert!(matches!(&e, LimitError::Failed(e) if e.kind() == ErrorKind::InvalidArgument));
    }
    assert_eq!(keys(&server), Vec::<String>::new());

    // Acquiring an unknown limiter, or a cost that cannot fit, takes nothing.
    let e = l.acquire("nobody").await.unwrap_err();
    assert!(e.to_string().contains("no limiter named \"nobody\""), "{e}");
    l.concurrent("c", 2, s).await.unwrap();
    l.bucket("b", 5, 1.0).await.unwrap();
    let before = keys(&server);
    let e = l.acquire_cost("c", 2).await.unwrap_err();
    assert!(
        e.to_string().contains("concurrent limiter: its cost is 1"),
        "{e}"
    );
    let e = l.acquire_cost("b", 6).await.unwrap_err();
    assert!(e.to_string().contains("more than the capacity"), "{e}");
    let e = l.acquire_cost("b", 0).await.unwrap_err();
    assert!(e.to_string().contains("cost must be 1"), "{e}");
    assert_eq!(keys(&server), before);
    let tokens: String = redis::cmd("HGET")
        .arg(before.iter().find(|k| k.contains("{#lim:b}")).unwrap())
        .arg("tokens")
        .query(&mut server.conn())
        .unwrap();
    assert_eq!(tokens, "5");
}

#[tokio::test]
async fn a_limiter_keys_live_in_their_own_slot() {
    let server = RedisServer::start();
    let l = limiter(&server);
    l.concurrent("stripe", 1, Duration::from_secs(5))
        .await
        .unwrap();
    let _g = l.acquire("stripe").await.unwrap();
    assert_eq!(
        keys(&server),
        ["tideq:{#lim:stripe}:hold", "tideq:{#lim:stripe}:lim"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_the_limit_in_a_handler_snoozes_the_job_without_using_an_attempt() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let l = limiter(&server);
    let name = unique("lim");
    l.concurrent(&name, 1, Duration::from_secs(30))
        .await
        .unwrap();
    let held = l.acquire(&name).await.unwrap();
    let e = q.enqueue(b"x", Default::default()).await.unwrap();
    let (lh, nh) = (l.clone(), name.clone());
    let worker = q
        .work(WorkerOptions::default(), move |_job: Job| {
            let (l, name) = (lh.clone(), nh.clone());
            async move {
                let slot = l.acquire(&name).await?;
                slot.release().await?;
                Ok::<(), tideq::HandlerError>(())
            }
        })
        .unwrap();
    assert!(
        wait_for(Duration::from_secs(10), || async {
            q.stats().await.unwrap().snoozed >= 2
        })
        .await
    );
    held.release().await.unwrap();
    assert!(
        wait_for(Duration::from_secs(10), || async {
            q.stats().await.unwrap().completed == 1
        })
        .await
    );
    worker.stop();
    let info = q.get(&e.id).await.unwrap().unwrap();
    assert_eq!(info.attempts, 1, "{info:?}");
    let stats = q.stats().await.unwrap();
    assert_eq!((stats.retried, stats.dead_lettered), (0, 0));
}

/// Four callers taking from one bucket as fast as it lets them, 30 s: its burst, then its refill
/// rate, within 5% (a bucket never gives more; a stall of the machine shorter than the capacity's
/// worth of refill is made up after it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bucket_allows_its_burst_then_its_refill_rate_within_5_percent_over_30_s() {
    let server = RedisServer::start();
    let l = limiter(&server);
    let (capacity, refill, secs) = (50u64, 20.0f64, 30u64);
    l.bucket("steady", capacity, refill).await.unwrap();
    let end = tokio::time::Instant::now() + Duration::from_secs(secs);
    let callers: Vec<_> = (0..4)
        .map(|_| {
            let l = l.clone();
            tokio::spawn(async move {
                let mut got = 0u64;
                while tokio::time::Instant::now() < end {
                    match l.acquire("steady").await {
                        Ok(_) => got += 1,
                        Err(LimitError::Over(o)) => {
                            let until = (tokio::time::Instant::now() + o.retry_after).min(end);
                            tokio::time::sleep_until(until).await;
                        }
                        Err(e) => panic!("{e}"),
                    }
                }
                got
            })
        })
        .collect();
    let mut total = 0;
    for c in callers {
        total += c.await.unwrap();
    }
    let expected = capacity as f64 + refill * secs as f64;
    eprintln!("bucket: {total} acquired in {secs} s, expected {expected}");
    assert!(
        (total as f64 - expected).abs() <= expected * 0.05,
        "{total} acquired in {secs} s, expected {expected} ± 5%"
    );
}
