//! A connection to Redis shared by queue handles: one multiplexed, auto-reconnecting connection
//! for ordinary commands, and separate connections for blocking waits (TOOLCHAIN pitfall 1).

use std::sync::Arc;

use redis::aio::{ConnectionManager, ConnectionManagerConfig, MultiplexedConnection};
use redis::{AsyncConnectionConfig, FromRedisValue, Value};
use tokio::sync::OnceCell;

use crate::config::Config;
use crate::error::{Error, ErrorKind, Result};
use crate::scripts::{self, LuaScript};

/// A cheap-to-clone handle on one Redis deployment. Connects lazily, on first use.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

struct Inner {
    config: Config,
    redis: redis::Client,
    secret: Option<String>,
    conn: OnceCell<ConnectionManager>,
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
        let info = config.connection_info()?;
        let secret = config.secret();
        let redis =
            redis::Client::open(info).map_err(|e| Error::from_redis(e, secret.as_deref()))?;
        Ok(Client {
            inner: Arc::new(Inner {
                config,
                redis,
                secret,
                conn: OnceCell::new(),
            }),
        })
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
        if err.kind() == ErrorKind::Connection {
            let to = self.inner.config.redacted_url();
            Error::new(
                ErrorKind::Connection,
                format!("{} (Redis at {to})", err.message()),
            )
        } else {
            err
        }
    }

    fn script_err(&self, e: redis::RedisError, script: &LuaScript) -> Error {
        let err = self.err(e);
        if err.kind() == ErrorKind::Redis {
            Error::new(
                ErrorKind::Redis,
                format!("{} ({})", err.message(), script.name),
            )
        } else {
            err
        }
    }

    /// The shared connection (reconnects by itself after a failure).
    pub(crate) async fn conn(&self) -> Result<ConnectionManager> {
        let cfg = &self.inner.config;
        self.inner
            .conn
            .get_or_try_init(|| async {
                let mgr_cfg = ConnectionManagerConfig::new()
                    .set_connection_timeout(Some(cfg.connect_timeout))
                    .set_response_timeout(Some(cfg.response_timeout))
                    .set_number_of_retries(1)
                    .set_min_delay(std::time::Duration::from_millis(50))
                    .set_max_delay(std::time::Duration::from_secs(2));
                ConnectionManager::new_with_config(self.inner.redis.clone(), mgr_cfg).await
            })
            .await
            .cloned()
            .map_err(|e| self.err(e))
    }

    /// A fresh connection without a response timeout, for `BLPOP`-style waits.
    pub(crate) async fn blocking_conn(&self) -> Result<MultiplexedConnection> {
        let cfg = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(self.inner.config.connect_timeout))
            .set_response_timeout(None);
        self.inner
            .redis
            .get_multiplexed_async_connection_with_config(&cfg)
            .await
            .map_err(|e| self.err(e))
    }

    /// Runs one script by EVALSHA, loading it on NOSCRIPT and retrying once.
    pub(crate) async fn eval<T: FromRedisValue>(
        &self,
        cmd: &redis::Cmd,
        script: &LuaScript,
    ) -> Result<T> {
        let mut conn = self.conn().await?;
        match cmd.query_async::<T>(&mut conn).await {
            Err(e) if scripts::is_noscript(&e) => {
                script
                    .load_cmd()
                    .query_async::<String>(&mut conn)
                    .await
                    .map_err(|e| self.err(e))?;
                cmd.query_async::<T>(&mut conn)
                    .await
                    .map_err(|e| self.script_err(e, script))
            }
            other => other.map_err(|e| self.script_err(e, script)),
        }
    }

    /// Sends commands in one pipeline and returns their replies in order. Scripts that Redis no
    /// longer knows (NOSCRIPT after a restart or `SCRIPT FLUSH`) are loaded and only the commands
    /// that failed that way are sent again; any other error fails the call.
    pub(crate) async fn pipeline(&self, cmds: &[redis::Cmd]) -> Result<Vec<Value>> {
        let mut conn = self.conn().await?;
        let mut out: Vec<Option<Value>> = vec![None; cmds.len()];
        let mut pending: Vec<usize> = (0..cmds.len()).collect();
        for _round in 0..3 {
            let mut pipe = redis::pipe();
            pipe.ignore_errors();
            for &i in &pending {
                pipe.add_command(cmds[i].clone());
            }
            let replies: Vec<redis::RedisResult<Value>> =
                pipe.query_async(&mut conn).await.map_err(|e| self.err(e))?;
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
            let mut load = redis::pipe();
            for &i in &missing {
                let sha = cmds[i].args_iter().nth(1);
                if let Some(redis::Arg::Simple(sha)) = sha {
                    if let Some(script) = scripts::by_sha(sha) {
                        load.add_command(script.load_cmd()).ignore();
                    }
                }
            }
            load.query_async::<()>(&mut conn)
                .await
                .map_err(|e| self.err(e))?;
            pending = missing;
        }
        Err(Error::new(
            ErrorKind::Redis,
            "scripts kept disappearing (NOSCRIPT) while pipelining",
        ))
    }
}
