//! The shared Redis Cluster connection and what it does while the cluster moves (a failover, a
//! reshard), and the single-node connections that blocking waits take to the primary of their
//! key's slot.
//!
//! redis-rs's cluster connection follows `MOVED`/`ASK` and retries a few times, briefly. A
//! failover outlasts that: until the replica has taken over, a command for the failed primary's
//! slots is answered `MOVED` (to the dead primary), `CLUSTERDOWN` or `TRYAGAIN`, or cannot find
//! a node at all. None of those ran the command, so [`ClusterConn`] sends it again, backing off,
//! until the client's response timeout has passed since the call began; then the caller gets a
//! `CONNECTION` error. Loops that back off by themselves (the worker's fetches, acks and lease
//! renewals) opt out with [`without_failover_wait`], so one shard's outage does not hold them.
//! While commands wait, one line is logged when the first starts waiting and one when every slot
//! that failed works again (not one per node connection and retry, as redis-rs logs).

use std::collections::HashSet;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use redis::aio::ConnectionLike;
use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::{RoutingInfo, SingleNodeRoutingInfo};
use redis::{Cmd, Pipeline, RedisFuture, Value};

use crate::background::jittered;

tokio::task_local! {
    /// Set while a loop that backs off by itself runs: its commands do not wait out failovers.
    static NO_FAILOVER_WAIT: ();
}

/// Runs `f` with its cluster commands failing at once (after redis-rs's own brief retries)
/// instead of waiting for a failover to end: for loops with a back-off of their own per shard.
pub(crate) fn without_failover_wait<F: Future>(f: F) -> impl Future<Output = F::Output> {
    NO_FAILOVER_WAIT.scope((), f)
}

fn waits_out_failovers() -> bool {
    NO_FAILOVER_WAIT.try_with(|_| ()).is_err()
}

/// An error that says the command did not run because the cluster is moving: redirected to a
/// node that is gone, the cluster down or the slot migrating, a demoted primary, no node to send
/// it to, a node loading or refusing connections.
pub(crate) fn did_not_run(e: &redis::RedisError) -> bool {
    use redis::{ErrorKind as K, ServerErrorKind as S};
    matches!(
        e.kind(),
        K::Server(
            S::Moved | S::Ask | S::TryAgain | S::ClusterDown | S::MasterDown | S::BusyLoading
        ) | K::Server(S::ReadOnly)
            | K::ClusterConnectionNotFound
    ) || e.is_connection_refusal()
}

/// The shared cluster connection (see the module's docs).
#[derive(Clone)]
pub(crate) struct ClusterConn {
    pub(crate) conn: ClusterConnection,
    shared: Arc<Shared>,
}

struct Shared {
    /// How long a call may wait for the cluster: the client's response timeout.
    budget: Duration,
    outage: OutageLog,
}

impl ClusterConn {
    pub(crate) fn new(conn: ClusterConnection, budget: Duration) -> Self {
        ClusterConn {
            conn,
            shared: Arc::new(Shared {
                budget,
                outage: OutageLog::default(),
            }),
        }
    }
}

/// Sends until the command runs, fails for another reason, or the budget is spent.
async fn ride_out<'a, T, F>(
    shared: &Shared,
    slot: Option<u16>,
    mut send: F,
) -> redis::RedisResult<T>
where
    F: FnMut() -> RedisFuture<'a, T>,
{
    let start = Instant::now();
    let mut step = Duration::from_millis(50);
    let mut tries = 0u32;
    loop {
        // The first try is bounded by redis-rs (the response timeout, retries included); the
        // next ones by what is left of it.
        let sent = if tries == 0 {
            send().await
        } else {
            let left = shared.budget.saturating_sub(start.elapsed());
            tokio::time::timeout(left, send())
                .await
                .unwrap_or_else(|_| Err(std::io::Error::from(std::io::ErrorKind::TimedOut).into()))
        };
        tries += 1;
        match sent {
            Ok(v) => {
                shared.outage.worked(slot);
                return Ok(v);
            }
            Err(e) if did_not_run(&e) && waits_out_failovers() => {
                let wait = jittered(step);
                if start.elapsed() + wait > shared.budget {
                    return Err(e);
                }
                shared.outage.waiting(slot, &e);
                tokio::time::sleep(wait).await;
                step = (step * 2).min(Duration::from_secs(1));
            }
            Err(e) => return Err(e),
        }
    }
}

impl ConnectionLike for ClusterConn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        let conn = self.conn.clone();
        let shared = self.shared.clone();
        Box::pin(async move {
            ride_out(&shared, slot_of(cmd), || {
                let mut c = conn.clone();
                Box::pin(async move { c.req_packed_command(cmd).await })
            })
            .await
        })
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        cmd: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        let conn = self.conn.clone();
        let shared = self.shared.clone();
        Box::pin(async move {
            let slot = cmd.cmd_iter().next().and_then(slot_of);
            ride_out(&shared, slot, || {
                let mut c = conn.clone();
                Box::pin(async move { c.req_packed_commands(cmd, offset, count).await })
            })
            .await
        })
    }

    fn get_db(&self) -> i64 {
        self.conn.get_db()
    }
}

/// The slot of a command's first key (the key after `numkeys` for `EVALSHA`/`EVAL`), for the
/// outage log; `None` for a command without keys.
fn slot_of(cmd: &Cmd) -> Option<u16> {
    let mut args = cmd.args_iter().map(|a| match a {
        redis::Arg::Simple(b) => b,
        _ => b"".as_slice(),
    });
    let name = args.next()?;
    let key = if name.eq_ignore_ascii_case(b"EVALSHA") || name.eq_ignore_ascii_case(b"EVAL") {
        args.nth(2)?
    } else {
        args.next()?
    };
    Some(crate::keys::key_slot(&String::from_utf8_lossy(key)))
}

/// One line when commands start waiting for the cluster, again once a minute while some slot
/// still fails, and one when every slot that failed has worked again.
#[derive(Default)]
struct OutageLog {
    /// Fast path: no slot is failing.
    active: AtomicBool,
    state: Mutex<OutageState>,
}

#[derive(Default)]
struct OutageState {
    failing: HashSet<Option<u16>>,
    since: Option<Instant>,
    logged: Option<Instant>,
    retries: u64,
}

const OUTAGE_REPEAT: Duration = Duration::from_secs(60);

impl OutageLog {
    fn waiting(&self, slot: Option<u16>, e: &redis::RedisError) {
        let mut st = self.state.lock().unwrap();
        let now = Instant::now();
        st.retries += 1;
        st.failing.insert(slot);
        self.active.store(true, Ordering::Release);
        match (st.since, st.logged) {
            (None, _) => {
                st.since = Some(now);
                st.logged = Some(now);
                log::warn!(
                    "tideq: the Redis Cluster did not run a command ({}); waiting for it to \
                     settle (a failover or a reshard), logged again once a minute until it works",
                    short(e)
                );
            }
            (Some(since), Some(logged)) if now.duration_since(logged) >= OUTAGE_REPEAT => {
                st.logged = Some(now);
                log::warn!(
                    "tideq: the Redis Cluster still has not settled after {:.0?} ({} retries): {}",
                    now.duration_since(since),
                    st.retries,
                    short(e)
                );
            }
            _ => {}
        }
    }

    fn worked(&self, slot: Option<u16>) {
        if !self.active.load(Ordering::Acquire) {
            return;
        }
        let mut st = self.state.lock().unwrap();
        if !st.failing.remove(&slot) || !st.failing.is_empty() {
            return;
        }
        self.active.store(false, Ordering::Release);
        if let Some(since) = st.since.take() {
            log::warn!(
                "tideq: the Redis Cluster works again, after {:.1?} ({} retries)",
                since.elapsed(),
                st.retries
            );
        }
        st.logged = None;
        st.retries = 0;
    }
}

/// A redis-rs error in one line, without its "An error was signalled by the server" preamble.
fn short(e: &redis::RedisError) -> String {
    match (e.code(), e.detail()) {
        (Some(code), Some(detail)) => format!("{code} {detail}"),
        _ => e.to_string(),
    }
}

/// The primary serving `key`'s slot, from `CLUSTER SLOTS` (asked through the shared connection):
/// where a blocking wait on that key connects (see `Client::blocking_conn_for`).
pub(crate) async fn slot_owner(
    shared: &mut ClusterConn,
    key: &str,
) -> redis::RedisResult<(String, u16)> {
    let slot = crate::keys::key_slot(key);
    let slots: Value = shared
        .conn
        .route_command(
            redis::cmd("CLUSTER").arg("SLOTS").clone(),
            RoutingInfo::SingleNode(SingleNodeRoutingInfo::Random),
        )
        .await?;
    owner(&slots, slot).ok_or_else(|| {
        redis::RedisError::from((
            redis::ErrorKind::ClusterConnectionNotFound,
            "no node serves the slot",
            slot.to_string(),
        ))
    })
}

/// The primary of `slot` in a `CLUSTER SLOTS` reply.
fn owner(slots: &Value, slot: u16) -> Option<(String, u16)> {
    let Value::Array(ranges) = slots else {
        return None;
    };
    ranges.iter().find_map(|r| {
        let Value::Array(r) = r else { return None };
        let start: u16 = redis::from_redis_value(r.first()?.clone()).ok()?;
        let end: u16 = redis::from_redis_value(r.get(1)?.clone()).ok()?;
        if !(start..=end).contains(&slot) {
            return None;
        }
        let Value::Array(node) = r.get(2)? else {
            return None;
        };
        let host: String = redis::from_redis_value(node.first()?.clone()).ok()?;
        let port: u16 = redis::from_redis_value(node.get(1)?.clone()).ok()?;
        Some((host, port))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::Client;
    use crate::config::Config;

    /// A wait's connection on a cluster goes to its key's primary (over TLS too), and only there.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_blocking_wait_on_a_cluster_connects_to_the_primary_of_its_key() {
        let certs = tideq_testing::tls_unavailable()
            .is_none()
            .then(tideq_testing::make_certs);
        let mut setups = vec![(tideq_testing::RedisCluster::start(), None)];
        if let Some(certs) = &certs {
            let ca = std::fs::read(certs.join("ca.pem")).unwrap();
            setups.push((tideq_testing::RedisCluster::start_tls(certs), Some(ca)));
        }
        for (cluster, ca) in &setups {
            let mut config = Config::cluster(cluster.nodes.clone());
            if let Some(ca) = ca {
                config = config.with_tls_ca(ca.clone());
            }
            let client = Client::new(config).unwrap();
            for key in ["tideq:{a}:wake", "tideq:{b}:wake", "tideq:{c}:wake"] {
                let mut conn = client.blocking_conn_for(key).await.unwrap();
                let role: Vec<Value> = redis::cmd("ROLE").query_async(&mut conn).await.unwrap();
                assert_eq!(role[0], Value::BulkString(b"master".to_vec()), "{key}");
                // It serves the key (no MOVED), and blocks on it.
                let got: Option<(String, String)> = redis::cmd("BLPOP")
                    .arg(key)
                    .arg(0.05)
                    .query_async(&mut conn)
                    .await
                    .unwrap();
                assert_eq!(got, None);
            }
        }
        if let Some(certs) = certs {
            let _ = std::fs::remove_dir_all(certs);
        }
    }

    #[test]
    fn the_outage_key_is_the_slot_of_the_first_key() {
        let mut eval = redis::cmd("EVALSHA");
        eval.arg("abc")
            .arg(2)
            .arg("tideq:{q}:ready")
            .arg("tideq:{q}:meta");
        assert_eq!(slot_of(&eval), Some(crate::keys::key_slot("{q}")));
        let mut get = redis::cmd("LLEN");
        get.arg("tideq:{r}:ready");
        assert_eq!(slot_of(&get), Some(crate::keys::key_slot("{r}")));
        assert_eq!(slot_of(&redis::cmd("PING")), None);
    }

    #[test]
    fn errors_of_a_moving_cluster_did_not_run_the_command() {
        for line in [
            "MOVED 8999 127.0.0.1:7106",
            "ASK 8999 127.0.0.1:7106",
            "TRYAGAIN Multiple keys request during rehashing of slot",
            "CLUSTERDOWN The cluster is down",
            "MASTERDOWN Link with MASTER is down",
            "LOADING Redis is loading the dataset in memory",
            "READONLY You can't write against a read only replica.",
        ] {
            let reply = redis::parse_redis_value(format!("-{line}\r\n").as_bytes()).unwrap();
            let err = reply.extract_error().unwrap_err();
            assert!(did_not_run(&err), "{line}");
        }
        let reply = redis::parse_redis_value(b"-ERR user_script:1: boom\r\n").unwrap();
        assert!(!did_not_run(&reply.extract_error().unwrap_err()));
    }

    #[test]
    fn cluster_slots_names_the_primary_of_a_slot() {
        let node = |port: i64| {
            Value::Array(vec![
                Value::BulkString(b"127.0.0.1".to_vec()),
                Value::Int(port),
                Value::BulkString(b"id".to_vec()),
            ])
        };
        let slots = Value::Array(vec![
            Value::Array(vec![
                Value::Int(0),
                Value::Int(5460),
                node(7000),
                node(7003),
            ]),
            Value::Array(vec![Value::Int(5461), Value::Int(16383), node(7001)]),
        ]);
        assert_eq!(owner(&slots, 0), Some(("127.0.0.1".into(), 7000)));
        assert_eq!(owner(&slots, 5461), Some(("127.0.0.1".into(), 7001)));
        assert_eq!(owner(&Value::Array(vec![]), 3), None);
    }
}
