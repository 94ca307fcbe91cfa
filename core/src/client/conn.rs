//! The connections a client holds: the shared one (a node, a cluster, or the primary the
//! Sentinels name) and the blocking ones.

use std::sync::Arc;
use std::time::Duration;

use redis::aio::{ConnectionLike, ConnectionManager, MultiplexedConnection};
use redis::cluster_async::ClusterConnection;
use redis::sentinel::SentinelClient;
use redis::{AsyncConnectionConfig, Cmd, Pipeline, RedisFuture, Value};

/// The shared connection: one node or a cluster, used through redis-rs' `ConnectionLike`.
#[derive(Clone)]
pub(crate) enum Conn {
    Single(ConnectionManager),
    Cluster(ClusterConnection),
    Sentinel(SentinelConn),
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

impl ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Conn::Single(c) => c.req_packed_command(cmd),
            Conn::Cluster(c) => c.req_packed_command(cmd),
            Conn::Sentinel(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        cmd: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Conn::Single(c) => c.req_packed_commands(cmd, offset, count),
            Conn::Cluster(c) => c.req_packed_commands(cmd, offset, count),
            Conn::Sentinel(c) => c.req_packed_commands(cmd, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Conn::Single(c) => c.get_db(),
            Conn::Cluster(c) => c.get_db(),
            Conn::Sentinel(c) => c.get_db(),
        }
    }
}

/// A connection to whichever node the Sentinels name as primary. It asks them again after a
/// connection error or a `READONLY` reply (the old primary was demoted), and retries a command
/// refused with `READONLY` once on the new primary (it was not executed).
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
                match conn.req_packed_command(cmd).await {
                    Err(e) if self.check(&e) => continue,
                    Ok(Value::ServerError(e)) if e.code() == "READONLY" => {
                        self.forget();
                        continue;
                    }
                    other => return other,
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
            let res = conn.req_packed_commands(cmd, offset, count).await;
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
