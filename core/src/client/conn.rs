//! The connections a client holds: the shared one (a node, a cluster, or the primary the
//! Sentinels name) and the blocking ones.
//!
//! A command whose connection turns out to be closed before the command was handed to it (Redis
//! restarted since the last call, or the reconnection tried meanwhile failed) is sent once more,
//! on a fresh connection: see [`unsent`]. A command that was handed to the connection and then
//! lost with it is not: it may have run, so its caller hears `CONNECTION` and decides.

use std::future::Future;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use redis::aio::{ConnectionLike, ConnectionManager, MultiplexedConnection};
use redis::cluster_async::ClusterConnection;

use super::cluster::ClusterConn;
use redis::sentinel::SentinelClient;
use redis::{AsyncConnectionConfig, Cmd, Pipeline, RedisFuture, Value};

/// The shared connection: one node or a cluster, used through redis-rs' `ConnectionLike`.
#[derive(Clone)]
pub(crate) enum Conn {
    Single(ConnectionManager),
    Cluster(ClusterConn),
    Sentinel(SentinelConn),
    /// A single node with a credentials provider (see `credentials.rs`).
    Renewed(super::credentials::RenewedConn),
}

/// A connection for blocking waits (no response timeout).
pub(crate) enum BlockingConn {
    Single(MultiplexedConnection),
    Cluster(ClusterConnection),
}

macro_rules! delegate_connection_like {
    ($ty:ident) => {
        impl ConnectionLike for $ty {
            fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
                match self {
                    $ty::Single(c) => c.req_packed_command(cmd),
                    $ty::Cluster(c) => c.req_packed_command(cmd),
                }
            }

            fn req_packed_commands<'a>(
                &'a mut self,
                cmd: &'a Pipeline,
                offset: usize,
                count: usize,
            ) -> RedisFuture<'a, Vec<Value>> {
                match self {
                    $ty::Single(c) => c.req_packed_commands(cmd, offset, count),
                    $ty::Cluster(c) => c.req_packed_commands(cmd, offset, count),
                }
            }

            fn get_db(&self) -> i64 {
                match self {
                    $ty::Single(c) => c.get_db(),
                    $ty::Cluster(c) => c.get_db(),
                }
            }
        }
    };
}

delegate_connection_like!(BlockingConn);

/// Runs `f` and tells whether it finished on its first poll.
///
/// A request on a redis-rs multiplexed connection is handed to the connection's writer task
/// through a channel and then waits for its reply, which cannot be there on the same poll (the
/// writer has not written it yet). So a request that *fails* on its first poll failed before it
/// was handed over: the channel was closed (the connection had died, e.g. Redis restarted, and
/// the failure is only seen at the next send, there being no disconnect notice in RESP2), or
/// the connection manager's reconnection had already failed. Such a request never reached Redis.
/// A request that fails later may have been written, and may have run.
async fn first_poll<F: Future>(f: F) -> (F::Output, bool) {
    let mut f = std::pin::pin!(f);
    let mut polls = 0u32;
    std::future::poll_fn(|cx| {
        polls += 1;
        match f.as_mut().poll(cx) {
            Poll::Ready(out) => Poll::Ready((out, polls == 1)),
            Poll::Pending => Poll::Pending,
        }
    })
    .await
}

/// A connection error met before the request was handed to the connection (see
/// [`first_poll`]): the request was not sent, and sending it again on a fresh connection cannot
/// run it twice.
pub(super) fn unsent(e: &redis::RedisError, at_once: bool) -> bool {
    at_once && crate::error::is_connection_error(e) && !e.is_timeout()
}

/// A single-node request, sent once more when it failed unsent ([`unsent`]). The connection
/// manager reconnects on that failure; the second send waits for the new connection.
pub(super) async fn resend_if_unsent<'a, T, F>(mut send: F) -> redis::RedisResult<T>
where
    F: FnMut() -> RedisFuture<'a, T>,
{
    match first_poll(send()).await {
        (Err(e), at_once) if unsent(&e, at_once) => {
            log::debug!("tideq: the connection was closed before the command went out ({e}); sending it on a new one");
            send().await
        }
        (res, _) => res,
    }
}

impl ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Conn::Single(c) => Box::pin(resend_if_unsent(move || {
                let mut c = c.clone();
                Box::pin(async move { c.send_packed_command(cmd).await })
            })),
            Conn::Cluster(c) => c.req_packed_command(cmd),
            Conn::Sentinel(c) => c.req_packed_command(cmd),
            Conn::Renewed(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        cmd: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Conn::Single(c) => Box::pin(resend_if_unsent(move || {
                let mut c = c.clone();
                Box::pin(async move { c.send_packed_commands(cmd, offset, count).await })
            })),
            Conn::Cluster(c) => c.req_packed_commands(cmd, offset, count),
            Conn::Sentinel(c) => c.req_packed_commands(cmd, offset, count),
            Conn::Renewed(c) => c.req_packed_commands(cmd, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Conn::Single(c) => c.get_db(),
            Conn::Cluster(c) => c.get_db(),
            Conn::Sentinel(c) => c.get_db(),
            Conn::Renewed(c) => c.get_db(),
        }
    }
}

/// A connection to whichever node the Sentinels name as primary. It asks them again after a
/// connection error or a `READONLY` reply (the old primary was demoted), and retries a command
/// refused with `READONLY` once on the new primary (it was not executed), as it does one that
/// failed unsent ([`unsent`]).
#[derive(Clone)]
pub(crate) struct SentinelConn {
    pub(super) inner: Arc<SentinelInner>,
}

pub(super) struct SentinelInner {
    pub(super) sentinel: Arc<tokio::sync::Mutex<SentinelClient>>,
    pub(super) current: std::sync::Mutex<Option<MultiplexedConnection>>,
    /// Address of the primary `current` talks to.
    pub(super) addr: std::sync::Mutex<Option<String>>,
    pub(super) watching: std::sync::atomic::AtomicBool,
    pub(super) config: AsyncConnectionConfig,
}

/// How often a Sentinel client asks the Sentinels who the primary is. After a failover the old
/// primary keeps accepting writes until the Sentinels demote it (seconds later); writes in that
/// window would be lost, so the client must not wait for an error to notice the switch.
pub(super) const SENTINEL_CHECK: Duration = Duration::from_millis(500);

pub(super) fn is_readonly(e: &redis::RedisError) -> bool {
    e.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::ReadOnly)
        || e.code() == Some("READONLY")
}

impl SentinelConn {
    pub(super) async fn primary(&self) -> redis::RedisResult<MultiplexedConnection> {
        if let Some(c) = self.inner.current.lock().unwrap().clone() {
            return Ok(c);
        }
        let mut sentinel = self.inner.sentinel.lock().await;
        if let Some(c) = self.inner.current.lock().unwrap().clone() {
            return Ok(c);
        }
        let client = sentinel.async_get_client().await?;
        let conn = client
            .get_multiplexed_async_connection_with_config(&self.inner.config)
            .await?;
        *self.inner.addr.lock().unwrap() = Some(client.get_connection_info().addr().to_string());
        *self.inner.current.lock().unwrap() = Some(conn.clone());
        if !self
            .inner
            .watching
            .swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            Self::watch(Arc::downgrade(&self.inner));
        }
        Ok(conn)
    }

    /// Follows the Sentinels' choice of primary: when it changes, the next command reconnects.
    /// Ends when the client is dropped.
    fn watch(weak: std::sync::Weak<SentinelInner>) {
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(SENTINEL_CHECK).await;
                let Some(inner) = weak.upgrade() else { return };
                let named = {
                    let mut sentinel = inner.sentinel.lock().await;
                    sentinel
                        .async_get_client()
                        .await
                        .map(|c| c.get_connection_info().addr().to_string())
                };
                if let Ok(named) = named {
                    let mut addr = inner.addr.lock().unwrap();
                    if addr.as_deref().is_some_and(|a| a != named) {
                        log::info!("tideq: Sentinels name a new primary ({named}); switching");
                        *addr = None;
                        *inner.current.lock().unwrap() = None;
                    }
                }
            }
        });
    }

    fn forget(&self) {
        *self.inner.current.lock().unwrap() = None;
    }

    fn check(&self, e: &redis::RedisError) -> bool {
        let stale = is_readonly(e);
        if stale || crate::error::is_connection_error(e) {
            self.forget();
        }
        stale
    }
}

impl ConnectionLike for SentinelConn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        Box::pin(async move {
            for _ in 0..2 {
                let mut conn = self.primary().await?;
                match first_poll(conn.req_packed_command(cmd)).await {
                    (Err(e), at_once) => {
                        if self.check(&e) || unsent(&e, at_once) {
                            continue;
                        }
                        return Err(e);
                    }
                    (Ok(Value::ServerError(e)), _) if e.code() == "READONLY" => {
                        self.forget();
                        continue;
                    }
                    (other, _) => return other,
                }
            }
            let mut conn = self.primary().await?;
            conn.req_packed_command(cmd).await
        })
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        cmd: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        Box::pin(async move {
            let mut conn = self.primary().await?;
            let res = match first_poll(conn.req_packed_commands(cmd, offset, count)).await {
                (Err(e), at_once) if unsent(&e, at_once) => {
                    self.forget();
                    conn = self.primary().await?;
                    conn.req_packed_commands(cmd, offset, count).await
                }
                (res, _) => res,
            };
            match &res {
                Err(e) => {
                    self.check(e);
                }
                Ok(values) => {
                    if values
                        .iter()
                        .any(|v| matches!(v, Value::ServerError(e) if e.code() == "READONLY"))
                    {
                        self.forget();
                    }
                }
            }
            res
        })
    }

    fn get_db(&self) -> i64 {
        0
    }
}
