//! A connection to Redis shared by queue handles: one multiplexed, auto-reconnecting connection
//! for ordinary commands (a single node, or a Redis Cluster connection that follows the slot map,
//! MOVED/ASK and failovers), and separate connections for blocking waits (a
//! blocking command on the shared connection would hold up every other command behind it).

mod cluster;
mod conn;
mod credentials;
mod eval;
mod info;
mod server;

pub(crate) use cluster::without_failover_wait;
pub(crate) use conn::{BlockingConn, Conn};
use conn::{SentinelConn, SentinelInner};
pub(crate) use credentials::PROVIDER_FAILED;
pub use credentials::{Credentials, CredentialsFuture, CredentialsProvider};
pub use info::ServerInfo;

use std::sync::Arc;
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::cluster::ClusterClient;
use redis::sentinel::{SentinelClientBuilder, SentinelServerType};
use redis::AsyncConnectionConfig;
use tokio::sync::OnceCell;

use crate::config::Config;
use crate::error::{Error, ErrorKind, Result};

#[allow(clippy::large_enum_variant)] // one per Client, never moved around
enum Backend {
    Single(redis::Client),
    Sentinel(SentinelConn),
    Cluster {
        client: Box<ClusterClient>,
        blocking: Box<ClusterClient>,
    },
}

/// A cheap-to-clone handle on one Redis deployment. Connects lazily, on first use.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

struct Inner {
    config: Config,
    backend: Backend,
    /// The credentials provider as redis-rs's hook, when the config has one.
    streaming: Option<credentials::Streaming>,
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
        let streaming = match &config.credentials_provider {
            Some(provider) => {
                let info = config.connection_info_for(&config.url)?;
                Some(credentials::Streaming {
                    provider: provider.clone(),
                    username: info.redis_settings().username().map(str::to_string),
                })
            }
            None => None,
        };
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
                // redis-rs retries a command that meets a moving cluster 8 times, waiting 1.28 s
                // or more between tries by default; tideq waits out a failover itself (see
                // cluster.rs), so these tries are brief: 50 ms, doubling, up to 1 s.
                if let Some(streaming) = &streaming {
                    builder = builder.set_credentials_provider(streaming.clone());
                }
                builder
                    .connection_timeout(config.connect_timeout)
                    .response_timeout(response_timeout)
                    .retries(8)
                    .min_retry_wait(50)
                    .max_retry_wait(1000)
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
                    config: with_provider(
                        AsyncConnectionConfig::new()
                            .set_connection_timeout(Some(config.connect_timeout))
                            .set_response_timeout(Some(config.response_timeout)),
                        &streaming,
                    ),
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
                streaming,
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
                let message = format!("{} (Redis at {to})", err.message());
                err.with_message(message)
            }
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
                self.manager(client, mgr_cfg).await
            }
            Backend::Sentinel(conn) => {
                conn.primary().await?;
                Ok(Conn::Sentinel(conn.clone()))
            }
            Backend::Cluster { client, .. } => client
                .get_async_connection()
                .await
                .map(|c| Conn::Cluster(cluster::ClusterConn::new(c, cfg.response_timeout))),
        }
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
                        self.manager(client, mgr_cfg).await
                    }
                    Backend::Sentinel(main) => {
                        let conn = SentinelConn {
                            inner: Arc::new(SentinelInner {
                                sentinel: main.inner.sentinel.clone(),
                                current: std::sync::Mutex::new(None),
                                addr: std::sync::Mutex::new(None),
                                watching: std::sync::atomic::AtomicBool::new(false),
                                config: with_provider(
                                    AsyncConnectionConfig::new()
                                        .set_connection_timeout(Some(cfg.connect_timeout))
                                        .set_response_timeout(Some(cfg.response_timeout + wait)),
                                    &self.inner.streaming,
                                ),
                            }),
                        };
                        conn.primary().await?;
                        Ok(Conn::Sentinel(conn))
                    }
                    Backend::Cluster { blocking, .. } => {
                        blocking.get_async_connection().await.map(|c| {
                            Conn::Cluster(cluster::ClusterConn::new(c, cfg.response_timeout + wait))
                        })
                    }
                }
            })
            .await
            .cloned()
            .map_err(|e| self.err(e))
    }

    /// A fresh connection without a response timeout for `BLPOP`-style waits on `key` (and keys
    /// in its slot): on a cluster, a connection to the primary serving that slot only (a waiting
    /// listener needs no more), elsewhere what [`blocking_conn`](Self::blocking_conn) gives.
    pub(crate) async fn blocking_conn_for(&self, key: &str) -> Result<BlockingConn> {
        if !matches!(self.inner.backend, Backend::Cluster { .. }) {
            return self.blocking_conn().await;
        }
        let Conn::Cluster(mut shared) = self.conn().await? else {
            unreachable!("a cluster client's shared connection is a cluster connection")
        };
        let (host, port) = cluster::slot_owner(&mut shared, key)
            .await
            .map_err(|e| self.err(e))?;
        let cfg = &self.inner.config;
        let seed = cfg.connection_info_for(&cfg.cluster_nodes[0])?;
        let addr = match seed.addr() {
            redis::ConnectionAddr::TcpTls {
                insecure,
                tls_params,
                ..
            } => redis::ConnectionAddr::TcpTls {
                host,
                port,
                insecure: *insecure,
                tls_params: tls_params.clone(),
            },
            _ => redis::ConnectionAddr::Tcp(host, port),
        };
        let info = seed.set_addr(addr);
        let node = match cfg.tls_certs() {
            Some(certs) => redis::Client::build_with_tls(info, certs),
            None => redis::Client::open(info),
        }
        .map_err(|e| self.err(e))?;
        let conn_cfg = self.blocking_config();
        node.get_multiplexed_async_connection_with_config(&conn_cfg)
            .await
            .map(BlockingConn::Single)
            .map_err(|e| self.err(e))
    }

    /// A single node's shared connection: redis-rs's connection manager, or with a credentials
    /// provider one that asks the provider again after a failed authentication.
    async fn manager(
        &self,
        client: &redis::Client,
        mgr_cfg: ConnectionManagerConfig,
    ) -> redis::RedisResult<Conn> {
        match &self.inner.streaming {
            None => ConnectionManager::new_with_config(client.clone(), mgr_cfg)
                .await
                .map(Conn::Single),
            Some(streaming) => {
                let mgr_cfg = mgr_cfg.set_credentials_provider(streaming.clone());
                credentials::RenewedConn::connect(client.clone(), mgr_cfg)
                    .await
                    .map(Conn::Renewed)
            }
        }
    }

    /// The settings of a blocking connection (no response timeout).
    fn blocking_config(&self) -> AsyncConnectionConfig {
        with_provider(
            AsyncConnectionConfig::new()
                .set_connection_timeout(Some(self.inner.config.connect_timeout))
                .set_response_timeout(None),
            &self.inner.streaming,
        )
    }

    /// A fresh connection without a response timeout, for `BLPOP`-style waits.
    pub(crate) async fn blocking_conn(&self) -> Result<BlockingConn> {
        match &self.inner.backend {
            Backend::Single(client) => {
                let cfg = self.blocking_config();
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
                let cfg = self.blocking_config();
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
}

/// `cfg` with the credentials provider, if there is one.
fn with_provider(
    cfg: AsyncConnectionConfig,
    streaming: &Option<credentials::Streaming>,
) -> AsyncConnectionConfig {
    match streaming {
        Some(s) => cfg.set_credentials_provider(s.clone()),
        None => cfg,
    }
}
