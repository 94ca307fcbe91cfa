//! Test harness: every test gets a real `redis-server` on a free loopback port in its own temp
//! dir (or the server at `TIDEQ_TEST_REDIS_URL`, isolated by unique queue names). The servers,
//! clusters and Sentinels come from the `tideq-testing` crate (shared with the CLI's tests, the
//! examples and the benchmarks); what needs tideq's own types is here.
#![allow(dead_code, unused_imports)]

pub use tideq_testing::{
    free_port, make_certs, tls_unavailable, unique, ClusterNode, RedisCluster, RedisServer,
    SentinelSetup, MASTER_NAME,
};

/// Runs a no-op worker until `q` is drained; returns how many jobs it completed.
pub async fn drain_noop(q: &tideq::Queue) -> u64 {
    let w = q
        .work(
            tideq::WorkerOptions {
                stop_when_drained: true,
                ..Default::default()
            },
            |_j: tideq::Job| async { Ok::<(), String>(()) },
        )
        .unwrap();
    w.join().await.completed
}

/// An enqueue through `client` (wrong credentials) fails, and its error does not show `secret`.
pub async fn assert_enqueue_refused_without_leaking(client: &tideq::Client, secret: &str) {
    let err = tideq::Queue::new(client, &unique("refused"), Default::default())
        .unwrap()
        .enqueue(b"x", Default::default())
        .await
        .unwrap_err();
    assert!(!err.to_string().contains(secret), "{err}");
}

/// Job-queue helpers shared by the jobs, lease and worker tests.
pub mod jobs {
    use std::time::{Duration, Instant};

    use super::{unique, RedisServer};
    use tideq::{Backoff, Client, EnqueueOptions, Queue, QueueOptions, WorkerOptions};

    pub fn queue_with(url: &str, opts: QueueOptions) -> Queue {
        Queue::new(&Client::open(url).unwrap(), &unique("jq"), opts).unwrap()
    }

    pub fn queue(url: &str) -> Queue {
        queue_with(
            url,
            QueueOptions {
                backoff: Backoff::fixed(50),
                ..Default::default()
            },
        )
    }

    pub fn id(s: &str) -> EnqueueOptions {
        EnqueueOptions {
            id: Some(s.into()),
            ..Default::default()
        }
    }

    pub fn drained() -> WorkerOptions {
        WorkerOptions {
            stop_when_drained: true,
            poll_interval: Duration::from_millis(100),
            ..Default::default()
        }
    }

    pub fn redis_ms(server: &RedisServer) -> u64 {
        let (s, us): (u64, u64) = redis::cmd("TIME").query(&mut server.conn()).unwrap();
        s * 1000 + us / 1000
    }

    /// A field of `INFO` as a number (0 when absent), e.g. `blocked_clients`.
    pub fn info_u64(server: &RedisServer, field: &str) -> u64 {
        let info: String = redis::cmd("INFO").query(&mut server.conn()).unwrap();
        info.lines()
            .find_map(|l| l.strip_prefix(&format!("{field}:")))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    }

    /// Waits until `n` clients are blocked in `BLPOP` (idle workers listening for wake-ups).
    pub async fn until_blocked(server: &RedisServer, n: u64) {
        let ok = wait_until(Duration::from_secs(10), || {
            info_u64(server, "blocked_clients") == n
        })
        .await;
        assert!(
            ok,
            "expected {n} blocked clients, found {}",
            info_u64(server, "blocked_clients")
        );
    }

    /// [`wait_until`] for a condition that needs Redis (`f` returns a future).
    pub async fn wait_for<F, Fut>(timeout: Duration, mut f: F) -> bool
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = bool>,
    {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if f().await {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        f().await
    }

    pub async fn wait_until(timeout: Duration, mut f: impl FnMut() -> bool) -> bool {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if f() {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        f()
    }
}

/// Helpers of the split test families, each shared by the files of one role.
pub mod capped;
pub mod control;
pub mod finished;
pub mod results;
pub mod scale;
pub mod scan;
pub mod testing;
