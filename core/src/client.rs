//! A connection to Redis shared by queue handles: one multiplexed, auto-reconnecting connection
//! for ordinary commands (a single node, or a Redis Cluster connection that follows the slot map,
//! MOVED/ASK and failovers), and separate connections for blocking waits (a
//! blocking command on the shared connection would hold up every other command behind it).

use std::sync::Arc;
use std::time::Duration;

use redis::aio::{
    ConnectionLike, ConnectionManager, ConnectionManagerConfig, MultiplexedConnection,
};
use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;
use redis::sentinel::{SentinelClient, SentinelClientBuilder, SentinelServerType};
use redis::{AsyncConnectionConfig, Cmd, FromRedisValue, Pipeline, RedisFuture, Value};
use tokio::sync::OnceCell;

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
    inner: Arc<SentinelInner>,
}

struct SentinelInner {
    sentinel: Arc<tokio::sync::Mutex<SentinelClient>>,
    current: std::sync::Mutex<Option<MultiplexedConnection>>,
    /// Address of the primary `current` talks to.
    addr: std::sync::Mutex<Option<String>>,
    watching: std::sync::atomic::AtomicBool,
    config: AsyncConnectionConfig,
}

/// How often a Sentinel client asks the Sentinels who the primary is. After a failover the old
/// primary keeps accepting writes until the Sentinels demote it (seconds later); writes in that
/// window would be lost, so the client must not wait for an error to notice the switch.
const SENTINEL_CHECK: Duration = Duration::from_millis(500);

fn is_readonly(e: &redis::RedisError) -> bool {
    e.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::ReadOnly)
        || e.code() == Some("READONLY")
}

impl SentinelConn {
    async fn primary(&self) -> redis::RedisResult<MultiplexedConnection> {
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

#[allow(clippy::large_enum_variant)] // one per Client, never moved around
enum Backend {
    Single(redis::Client),
    Sentinel(SentinelConn),
    Cluster {
        client: Box<ClusterClient>,
        blocking: Box<ClusterClient>,
    },
}

use crate::config::{Config, EvictionCheck};
use crate::error::{Error, ErrorKind, Result};
use crate::scripts::{self, LuaScript};

/// A cheap-to-clone handle on one Redis deployment. Connects lazily, on first use.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

struct Inner {
    config: Config,
    backend: Backend,
    secret: Option<String>,
    conn: OnceCell<Conn>,
    /// A second connection for enqueues that `WAIT` for replicas, so a waiting enqueue does not
    /// hold up every other command of the client (WAIT must follow the writes on one connection).
    ack_conn: OnceCell<Conn>,
    /// Where the outcomes of the jobs this client's callers wait for arrive.
    hub: crate::hub::Hub,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("config", &self.inner.config)
            .finish()
    }
}

impl Client {
    /// Validates the configuration; does not connect (the first command does).
    pub fn new(config: Config) -> Result<Self> {
        config.validate()?;
        let secret = config.secret();
        let backend = if config.is_cluster() {
            let nodes = config
                .cluster_nodes
                .iter()
                .map(|u| config.connection_info_for(u))
                .collect::<Result<Vec<_>>>()?;
            let build = |response_timeout: Duration| {
                let mut builder = ClusterClient::builder(nodes.clone());
                if let Some(certs) = config.tls_certs() {
                    builder = builder.certs(certs);
                }
                builder
                    .connection_timeout(config.connect_timeout)
                    .response_timeout(response_timeout)
                    .retries(8)
                    .build()
                    .map_err(|e| Error::from_redis(e, secret.as_deref()))
            };
            Backend::Cluster {
                client: Box::new(build(config.response_timeout)?),
                // BLPOP waits are bounded by the caller (seconds), so a day is "no timeout".
                blocking: Box::new(build(Duration::from_secs(24 * 3600))?),
            }
        } else if config.is_sentinel() {
            let sentinels = config
                .sentinels
                .iter()
                .map(|u| {
                    // Sentinels usually run without the primary's ACL user: connect to them plainly.
                    use redis::IntoConnectionInfo;
                    u.as_str().into_connection_info().map_err(|e| {
                        Error::invalid(format!(
                            "invalid Sentinel URL {}: {}",
                            crate::config::redact_url(u),
                            e.category()
                        ))
                    })
                })
                .collect::<Result<Vec<_>>>()?;
            // The primary takes the config's credentials and database; `rediss://` Sentinel URLs
            // mean TLS to the Sentinels and to the primary; `with_tls_ca` applies to both.
            let primary = config.connection_info_for(&config.sentinels[0])?;
            let settings = primary.redis_settings();
            let addrs = sentinels.iter().map(|info| info.addr().clone());
            let mut builder = SentinelClientBuilder::new(
                addrs,
                config.master_name.clone(),
                SentinelServerType::Master,
            )
            .map_err(|e| Error::from_redis(e, secret.as_deref()))?
            .set_client_to_redis_db(settings.db());
            if let Some(u) = settings.username() {
                builder = builder.set_client_to_redis_username(u);
            }
            if let Some(p) = settings.password() {
                builder = builder.set_client_to_redis_password(p);
            }
            if config.sentinels[0].starts_with("rediss://") {
                builder = builder.set_client_to_redis_tls_mode(redis::TlsMode::Secure);
            }
            if let Some(certs) = config.tls_certs() {
                builder = builder
                    .set_client_to_redis_certificates(certs.clone())
                    .set_client_to_sentinel_certificates(certs);
            }
            let client = builder
                .build()
                .map_err(|e| Error::from_redis(e, secret.as_deref()))?;
            Backend::Sentinel(SentinelConn {
                inner: Arc::new(SentinelInner {
                    sentinel: Arc::new(tokio::sync::Mutex::new(client)),
                    current: std::sync::Mutex::new(None),
                    addr: std::sync::Mutex::new(None),
                    watching: std::sync::atomic::AtomicBool::new(false),
                    config: AsyncConnectionConfig::new()
                        .set_connection_timeout(Some(config.connect_timeout))
                        .set_response_timeout(Some(config.response_timeout)),
                }),
            })
        } else {
            let info = config.connection_info_for(&config.url)?;
            let client = match config.tls_certs() {
                Some(certs) => redis::Client::build_with_tls(info, certs),
                None => redis::Client::open(info),
            };
            Backend::Single(client.map_err(|e| Error::from_redis(e, secret.as_deref()))?)
        };
        Ok(Client {
            inner: Arc::new(Inner {
                config,
                backend,
                secret,
                conn: OnceCell::new(),
                ack_conn: OnceCell::new(),
                hub: crate::hub::Hub::new(),
            }),
        })
    }

    /// The client's wait hub (see `hub.rs`).
    pub(crate) fn hub(&self) -> &crate::hub::Hub {
        &self.inner.hub
    }

    /// Shorthand for `Client::new(Config::new(url))`.
    pub fn open(url: &str) -> Result<Self> {
        Client::new(Config::new(url))
    }

    pub fn config(&self) -> &Config {
        &self.inner.config
    }

    /// Round trip to Redis; `CONNECTION` error when it cannot be reached.
    pub async fn ping(&self) -> Result<()> {
        let mut conn = self.conn().await?;
        redis::cmd("PING")
            .query_async::<()>(&mut conn)
            .await
            .map_err(|e| self.err(e))
    }

    pub(crate) fn err(&self, e: redis::RedisError) -> Error {
        let err = Error::from_redis(e, self.inner.secret.as_deref());
        match err.kind() {
            ErrorKind::Connection | ErrorKind::Auth | ErrorKind::NotRedis => {
                let to = self.inner.config.redacted_url();
                Error::new(err.kind(), format!("{} (Redis at {to})", err.message()))
            }
            _ => err,
        }
    }

    fn script_err(&self, e: redis::RedisError, script: &LuaScript) -> Error {
        let err = self.err(e);
        match err.kind() {
            ErrorKind::Redis => Error::new(
                ErrorKind::Redis,
                format!("{} ({})", err.message(), script.name),
            ),
            // Inside a script Redis says only "can't run this command": name it from the line.
            ErrorKind::Permission if err.message().contains("@user_script:") => Error::new(
                ErrorKind::Permission,
                format!(
                    "the Redis user may not run {}, which {} needs (see the README's \
                     'Least privilege' section for the ACL each role needs)",
                    script.denied_command(err.message()),
                    script.name
                ),
            ),
            _ => err,
        }
    }

    /// The shared connection (reconnects by itself after a failure).
    pub(crate) async fn conn(&self) -> Result<Conn> {
        self.inner
            .conn
            .get_or_try_init(|| async {
                let mut conn = self.connect().await.map_err(|e| self.err(e))?;
                self.check_server(&mut conn).await?;
                Ok(conn)
            })
            .await
            .cloned()
    }

    /// Opens the shared connection.
    async fn connect(&self) -> redis::RedisResult<Conn> {
        let cfg = &self.inner.config;
        match &self.inner.backend {
            Backend::Single(client) => {
                let mgr_cfg = ConnectionManagerConfig::new()
                    .set_connection_timeout(Some(cfg.connect_timeout))
                    .set_response_timeout(Some(cfg.response_timeout))
                    .set_number_of_retries(1)
                    .set_min_delay(Duration::from_millis(50))
                    .set_max_delay(Duration::from_secs(2));
                ConnectionManager::new_with_config(client.clone(), mgr_cfg)
                    .await
                    .map(Conn::Single)
            }
            Backend::Sentinel(conn) => {
                conn.primary().await?;
                Ok(Conn::Sentinel(conn.clone()))
            }
            Backend::Cluster { client, .. } => {
                client.get_async_connection().await.map(Conn::Cluster)
            }
        }
    }

    /// The first command on a new shared connection, once per client: checks that Redis
    /// answers and accepts the credentials (so a missing password is `AUTH` whatever the first
    /// real command, not a connection Redis dropped), and reads its `maxmemory-policy` (from
    /// `INFO memory`, which works where `CONFIG GET` is not allowed): any policy but
    /// `noeviction` lets Redis delete queue keys under memory pressure, losing jobs silently.
    /// Warns once per server, or refuses to work with [`EvictionCheck::Refuse`]. A user not
    /// allowed `INFO` skips the policy check.
    async fn check_server(&self, conn: &mut Conn) -> Result<()> {
        let check = self.inner.config.eviction_check;
        // One round trip: the server's version, and its eviction policy when that is checked.
        let mut probe = redis::pipe();
        probe.cmd("INFO").arg("server");
        if check != EvictionCheck::Off {
            probe.cmd("INFO").arg("memory");
        }
        let info: Vec<Value> = match probe.query_async(conn).await.map_err(|e| self.err(e)) {
            Ok(v) => v,
            Err(e) if e.kind() == ErrorKind::Permission => {
                log::debug!("tideq: could not read the server's version and eviction policy: {e}");
                return Ok(());
            }
            Err(e) => return Err(e),
        };
        let server = info.first().map(info_text).unwrap_or_default();
        if let Err(why) = supported_server(&server) {
            let to = self.inner.config.redacted_url();
            return Err(Error::new(
                ErrorKind::NotSupported,
                format!("the server at {to} is {why}"),
            ));
        }
        let info = info.get(1).cloned().unwrap_or(Value::Nil);
        if check == EvictionCheck::Off {
            return Ok(());
        }
        let text = format!("{info:?}");
        let policies: Vec<&str> = text
            .split("maxmemory_policy:")
            .skip(1)
            .filter_map(|rest| rest.split(['\\', '\r', '\n', '"']).next())
            .filter(|p| *p != "noeviction")
            .collect();
        let Some(policy) = policies.first() else {
            return Ok(());
        };
        let to = self.inner.config.redacted_url();
        let message = format!(
            "Redis at {to} has maxmemory-policy {policy}: under memory pressure it deletes keys, \
             and jobs with them, without any error; set maxmemory-policy noeviction"
        );
        if check == EvictionCheck::Refuse {
            return Err(Error::new(ErrorKind::EvictionPolicy, message));
        }
        static WARNED: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
        let mut warned = WARNED.lock().unwrap();
        if !warned.contains(&to) {
            warned.push(to);
            log::warn!("tideq: {message}");
        }
        Ok(())
    }

    /// The connection for replica-acknowledged enqueues (see `Inner::ack_conn`).
    pub(crate) async fn ack_conn(&self) -> Result<Conn> {
        let cfg = &self.inner.config;
        let wait = cfg.replica_ack.map(|(_, t)| t).unwrap_or_default();
        self.inner
            .ack_conn
            .get_or_try_init(|| async {
                match &self.inner.backend {
                    Backend::Single(client) => {
                        let mgr_cfg = ConnectionManagerConfig::new()
                            .set_connection_timeout(Some(cfg.connect_timeout))
                            .set_response_timeout(Some(cfg.response_timeout + wait))
                            .set_number_of_retries(1);
                        ConnectionManager::new_with_config(client.clone(), mgr_cfg)
                            .await
                            .map(Conn::Single)
                    }
                    Backend::Sentinel(main) => {
                        let conn = SentinelConn {
                            inner: Arc::new(SentinelInner {
                                sentinel: main.inner.sentinel.clone(),
                                current: std::sync::Mutex::new(None),
                                addr: std::sync::Mutex::new(None),
                                watching: std::sync::atomic::AtomicBool::new(false),
                                config: AsyncConnectionConfig::new()
                                    .set_connection_timeout(Some(cfg.connect_timeout))
                                    .set_response_timeout(Some(cfg.response_timeout + wait)),
                            }),
                        };
                        conn.primary().await?;
                        Ok(Conn::Sentinel(conn))
                    }
                    Backend::Cluster { blocking, .. } => {
                        blocking.get_async_connection().await.map(Conn::Cluster)
                    }
                }
            })
            .await
            .cloned()
            .map_err(|e| self.err(e))
    }

    /// A fresh connection without a response timeout, for `BLPOP`-style waits.
    pub(crate) async fn blocking_conn(&self) -> Result<BlockingConn> {
        match &self.inner.backend {
            Backend::Single(client) => {
                let cfg = AsyncConnectionConfig::new()
                    .set_connection_timeout(Some(self.inner.config.connect_timeout))
                    .set_response_timeout(None);
                client
                    .get_multiplexed_async_connection_with_config(&cfg)
                    .await
                    .map(BlockingConn::Single)
                    .map_err(|e| self.err(e))
            }
            Backend::Sentinel(conn) => {
                let client = {
                    let mut sentinel = conn.inner.sentinel.lock().await;
                    sentinel.async_get_client().await.map_err(|e| self.err(e))?
                };
                let cfg = AsyncConnectionConfig::new()
                    .set_connection_timeout(Some(self.inner.config.connect_timeout))
                    .set_response_timeout(None);
                client
                    .get_multiplexed_async_connection_with_config(&cfg)
                    .await
                    .map(BlockingConn::Single)
                    .map_err(|e| self.err(e))
            }
            Backend::Cluster { blocking, .. } => blocking
                .get_async_connection()
                .await
                .map(BlockingConn::Cluster)
                .map_err(|e| self.err(e)),
        }
    }

    /// Runs one script by EVALSHA, loading it on NOSCRIPT and retrying. During a cluster failover
    /// on Valkey (which does not pass loaded scripts on to replicas) the retry can meet a node
    /// whose scripts are not loaded yet: up to five tries, 25 ms apart and growing, while the
    /// topology settles.
    pub(crate) async fn eval<T: FromRedisValue>(
        &self,
        cmd: &redis::Cmd,
        script: &LuaScript,
    ) -> Result<T> {
        let mut conn = self.conn().await?;
        self.eval_on(&mut conn, cmd, script).await
    }

    /// [`eval`](Self::eval) on a given connection.
    pub(crate) async fn eval_on<T: FromRedisValue>(
        &self,
        conn: &mut Conn,
        cmd: &redis::Cmd,
        script: &LuaScript,
    ) -> Result<T> {
        let conn = &mut *conn;
        let mut tries = 0;
        loop {
            match cmd.query_async::<T>(conn).await {
                Err(e) if scripts::is_noscript(&e) && tries < 5 => {
                    if tries > 0 {
                        tokio::time::sleep(std::time::Duration::from_millis(25 << tries)).await;
                    }
                    tries += 1;
                    script
                        .load_cmd()
                        .query_async::<String>(conn)
                        .await
                        .map_err(|e| self.err(e))?;
                }
                other => return other.map_err(|e| self.script_err(e, script)),
            }
        }
    }

    /// Sends commands in one pipeline and returns their replies in order. Scripts that Redis no
    /// longer knows (NOSCRIPT after a restart or `SCRIPT FLUSH`) are loaded and only the commands
    /// that failed that way are sent again; any other error fails the call.
    pub(crate) async fn pipeline(&self, cmds: &[redis::Cmd]) -> Result<Vec<Value>> {
        let mut conn = self.conn().await?;
        self.pipeline_on(&mut conn, cmds).await
    }

    /// [`pipeline`](Self::pipeline) on a given connection.
    pub(crate) async fn pipeline_on(
        &self,
        conn: &mut Conn,
        cmds: &[redis::Cmd],
    ) -> Result<Vec<Value>> {
        let conn = &mut *conn;
        let mut out: Vec<Option<Value>> = vec![None; cmds.len()];
        let mut pending: Vec<usize> = (0..cmds.len()).collect();
        for _round in 0..3 {
            let mut pipe = redis::pipe();
            pipe.ignore_errors();
            for &i in &pending {
                pipe.add_command(cmds[i].clone());
            }
            let replies: Vec<redis::RedisResult<Value>> =
                pipe.query_async(conn).await.map_err(|e| self.err(e))?;
            let mut missing = Vec::new();
            for (&i, reply) in pending.iter().zip(replies) {
                match reply {
                    Ok(v) => out[i] = Some(v),
                    Err(e) if scripts::is_noscript(&e) => missing.push(i),
                    Err(e) => return Err(self.err(e)),
                }
            }
            if missing.is_empty() {
                return Ok(out.into_iter().map(|v| v.unwrap_or(Value::Nil)).collect());
            }
            // One SCRIPT LOAD at a time: on a cluster, redis-rs sends it to every node.
            let mut loaded: Vec<&str> = Vec::new();
            for &i in &missing {
                if let Some(redis::Arg::Simple(sha)) = cmds[i].args_iter().nth(1) {
                    if let Some(script) = scripts::by_sha(sha) {
                        if !loaded.contains(&script.name) {
                            loaded.push(script.name);
                            script
                                .load_cmd()
                                .query_async::<()>(conn)
                                .await
                                .map_err(|e| self.err(e))?;
                        }
                    }
                }
            }
            pending = missing;
        }
        Err(Error::new(
            ErrorKind::Redis,
            "scripts kept disappearing (NOSCRIPT) while pipelining",
        ))
    }
}

/// The text of an `INFO` reply.
fn info_text(v: &Value) -> String {
    match v {
        Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        Value::VerbatimString { text, .. } => text.clone(),
        Value::SimpleString(s) => s.clone(),
        // A cluster answers a routed INFO per node.
        Value::Map(m) => m
            .iter()
            .map(|(_, v)| info_text(v))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The oldest servers tideq runs on: its scripts declare flags (`#!lua flags=`, Redis 7.0).
pub(crate) const MIN_REDIS: (u32, u32) = (7, 0);
pub(crate) const MIN_VALKEY: (u32, u32) = (7, 2);

/// Whether `INFO server` names a supported server; if not, what it is and what is needed.
/// A server that names no version (a proxy, say) is given the benefit of the doubt.
pub(crate) fn supported_server(info: &str) -> std::result::Result<(), String> {
    let field = |name: &str| {
        info.lines()
            .find_map(|l| l.trim().strip_prefix(name)?.strip_prefix(':'))
            .map(str::trim)
    };
    let parse = |v: &str| -> Option<(u32, u32)> {
        let mut parts = v.split('.').map(|p| p.parse::<u32>().ok());
        Some((parts.next()??, parts.next().flatten().unwrap_or(0)))
    };
    let need = format!(
        "tideq needs Redis {}.{} or later, or Valkey {}.{} or later",
        MIN_REDIS.0, MIN_REDIS.1, MIN_VALKEY.0, MIN_VALKEY.1
    );
    if let Some(v) = field("valkey_version") {
        return match parse(v) {
            Some(got) if got < MIN_VALKEY => Err(format!("Valkey {v}: {need}")),
            _ => Ok(()),
        };
    }
    match field("redis_version") {
        Some(v) => match parse(v) {
            Some(got) if got < MIN_REDIS => Err(format!("Redis {v}: {need}")),
            _ => Ok(()),
        },
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_older_than_redis_7_or_valkey_7_2_are_refused_naming_their_version() {
        let redis = |v: &str| format!("# Server\r\nredis_version:{v}\r\nredis_mode:standalone\r\n");
        let valkey = |v: &str| {
            format!(
                "# Server\r\nredis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:{v}\r\n"
            )
        };
        for ok in [
            redis("7.0.15"),
            redis("7.2.4"),
            redis("8.0.0"),
            valkey("7.2.5"),
            valkey("8.1.8"),
        ] {
            assert_eq!(supported_server(&ok), Ok(()), "{ok}");
        }
        let old = supported_server(&redis("6.2.14")).unwrap_err();
        assert!(
            old.starts_with("Redis 6.2.14: tideq needs Redis 7.0 or later"),
            "{old}"
        );
        let old = supported_server(&redis("5.0.7")).unwrap_err();
        assert!(old.contains("Redis 5.0.7"), "{old}");
        // A Valkey too old is named as Valkey, whatever Redis version it claims to be.
        let vk = "redis_version:7.0.0\r\nserver_name:valkey\r\nvalkey_version:7.0.1\r\n";
        assert!(supported_server(vk)
            .unwrap_err()
            .starts_with("Valkey 7.0.1"));
        // A server that names no version (a proxy) is not refused.
        assert_eq!(supported_server("# Server\r\n"), Ok(()));
    }
    use crate::scripts::{CAPPED_GROUPS, GET_JOBS};

    /// A private redis-server on a free port, killed on drop.
    struct Server(std::process::Child, u16);

    impl Drop for Server {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    fn server() -> Server {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = std::process::Command::new("redis-server")
            .args([
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
            ])
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("redis-server must be installed");
        for _ in 0..500 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Server(child, port)
    }

    #[tokio::test]
    async fn after_noscript_in_a_pipeline_only_the_commands_that_failed_are_sent_again() {
        let s = server();
        let client = Client::open(&format!("redis://127.0.0.1:{}", s.1)).unwrap();
        let mut conn = client.conn().await.unwrap();
        // One script known to Redis, the other not.
        redis::cmd("SCRIPT")
            .arg("FLUSH")
            .query_async::<()>(&mut conn)
            .await
            .unwrap();
        GET_JOBS
            .load_cmd()
            .query_async::<String>(&mut conn)
            .await
            .unwrap();
        redis::cmd("CONFIG")
            .arg("RESETSTAT")
            .query_async::<()>(&mut conn)
            .await
            .unwrap();
        let jobs = crate::keys::JobKeys::new("t", "q").unwrap();
        let capped = crate::keys::CappedKeys::new("t", "q").unwrap();
        let mut read = GET_JOBS.cmd(&jobs.for_script(&GET_JOBS));
        read.arg("some-id");
        let mut count = CAPPED_GROUPS.cmd(&capped.for_script(&CAPPED_GROUPS, ""));
        count.arg("count");
        let replies = client.pipeline(&[read.clone(), count, read]).await.unwrap();
        assert_eq!(replies.len(), 3);
        let info: String = redis::cmd("INFO")
            .arg("commandstats")
            .query_async(&mut conn)
            .await
            .unwrap();
        let calls = |name: &str| -> u64 {
            info.lines()
                .find_map(|l| l.strip_prefix(&format!("cmdstat_{name}:")))
                .and_then(|l| l.split("calls=").nth(1))
                .and_then(|c| c.split(',').next())
                .and_then(|c| c.parse().ok())
                .unwrap_or(0)
        };
        assert_eq!(
            calls("evalsha"),
            4,
            "three sent, and only the failed one again: {info}"
        );
        assert_eq!(calls("script|load"), 1, "{info}");
    }
}
