//! Credentials that rotate: a [`CredentialsProvider`] asked for the username and password each
//! time a connection authenticates (the first connect, every reconnect of the shared
//! connection, every blocking connection, each cluster node's connection and the primary the
//! Sentinels name). Short-lived tokens (AWS ElastiCache / MemoryDB IAM, Azure Entra ID) are
//! passwords of this kind.
//!
//! It rides on redis-rs's own hook (`StreamingCredentialsProvider`): each connection subscribes
//! once and authenticates with the stream's first item, which is one call of the provider.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use futures_util::{stream, Stream, StreamExt};
use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::auth::{BasicAuth, StreamingCredentialsProvider};
use redis::{Cmd, Pipeline, RedisFuture, Value};

/// What a [`CredentialsProvider`] returns: an ACL user (`None`: the user of the URL or of
/// [`Config::with_credentials`](crate::Config::with_credentials), else `default`) and its
/// password or token.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    pub username: Option<String>,
    pub password: String,
}

impl Credentials {
    /// A password (or token) for the configured user.
    pub fn password(password: impl Into<String>) -> Self {
        Credentials {
            username: None,
            password: password.into(),
        }
    }

    /// A user and its password (or token).
    pub fn user(username: impl Into<String>, password: impl Into<String>) -> Self {
        Credentials {
            username: Some(username.into()),
            password: password.into(),
        }
    }
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("username", &self.username)
            .field("password", &"***")
            .finish()
    }
}

/// The future a [`CredentialsProvider`] returns; its error text is shown in the `AUTH` error.
pub type CredentialsFuture =
    Pin<Box<dyn Future<Output = std::result::Result<Credentials, String>> + Send>>;

/// Gives the credentials of each new connection (see
/// [`Config::with_credentials_provider`](crate::Config::with_credentials_provider)). Any
/// `Fn() -> impl Future<Output = Result<Credentials, E>>` with `E: Display` is one.
pub trait CredentialsProvider: Send + Sync + 'static {
    fn credentials(&self) -> CredentialsFuture;
}

impl<F, Fut, E> CredentialsProvider for F
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = std::result::Result<Credentials, E>> + Send + 'static,
    E: std::fmt::Display,
{
    fn credentials(&self) -> CredentialsFuture {
        let fut = self();
        Box::pin(async move { fut.await.map_err(|e| e.to_string()) })
    }
}

/// The words that open the `AUTH` error of a provider that failed (error.rs shows them).
pub(crate) const PROVIDER_FAILED: &str = "the credentials provider failed";

/// A provider as redis-rs's hook: a connection's login calls the provider once; the streams
/// stay open without another item (an ended stream would make redis-rs log a warning for each
/// connection).
#[derive(Clone)]
pub(crate) struct Streaming {
    pub(crate) provider: Arc<dyn CredentialsProvider>,
    /// The user when the provider names none (the config's, else `default`).
    pub(crate) username: Option<String>,
}

impl StreamingCredentialsProvider for Streaming {
    fn subscribe(
        &self,
    ) -> Pin<Box<dyn Stream<Item = redis::RedisResult<BasicAuth>> + Send + 'static>> {
        let this = self.clone();
        // redis-rs subscribes twice per connection, both times on the connecting task: once to
        // log in (polled there at once), once more for a re-authentication task it spawns. That
        // second stream stays silent, so each connection asks the provider once and sends one
        // AUTH.
        let born = tokio::task::try_id();
        let first = async move {
            if tokio::task::try_id() != born {
                std::future::pending::<()>().await;
            }
            match this.provider.credentials().await {
                Ok(c) => {
                    let user = c
                        .username
                        .filter(|u| !u.is_empty())
                        .or(this.username)
                        .unwrap_or_else(|| "default".to_string());
                    Ok(BasicAuth::new(user, c.password))
                }
                Err(why) => Err(redis::RedisError::from((
                    redis::ErrorKind::AuthenticationFailed,
                    PROVIDER_FAILED,
                    why,
                ))),
            }
        };
        Box::pin(stream::once(first).chain(stream::pending()))
    }
}

/// The shared connection of a single node when a provider is set: a connection manager that
/// is replaced when its reconnection failed to authenticate (the provider failed, or Redis
/// refused what it gave). redis-rs's manager reconnects after I/O errors only, and would keep
/// answering that `AUTH` error forever; this one asks the provider again on the next command.
#[derive(Clone)]
pub(crate) struct RenewedConn {
    inner: Arc<RenewedInner>,
}

struct RenewedInner {
    client: redis::Client,
    config: ConnectionManagerConfig,
    current: std::sync::Mutex<Option<ConnectionManager>>,
    connecting: tokio::sync::Mutex<()>,
}

impl RenewedConn {
    /// Connects (the first connection's error is the caller's).
    pub(crate) async fn connect(
        client: redis::Client,
        config: ConnectionManagerConfig,
    ) -> redis::RedisResult<Self> {
        let conn = RenewedConn {
            inner: Arc::new(RenewedInner {
                client,
                config,
                current: std::sync::Mutex::new(None),
                connecting: tokio::sync::Mutex::new(()),
            }),
        };
        conn.manager().await?;
        Ok(conn)
    }

    async fn manager(&self) -> redis::RedisResult<ConnectionManager> {
        if let Some(m) = self.inner.current.lock().unwrap().clone() {
            return Ok(m);
        }
        let _one = self.inner.connecting.lock().await;
        if let Some(m) = self.inner.current.lock().unwrap().clone() {
            return Ok(m);
        }
        let inner = &self.inner;
        let m =
            ConnectionManager::new_with_config(inner.client.clone(), inner.config.clone()).await?;
        *inner.current.lock().unwrap() = Some(m.clone());
        Ok(m)
    }

    /// Forgets the manager after an authentication failure, so the next command reconnects.
    fn check<T>(&self, res: redis::RedisResult<T>) -> redis::RedisResult<T> {
        if let Err(e) = &res {
            if e.kind() == redis::ErrorKind::AuthenticationFailed {
                *self.inner.current.lock().unwrap() = None;
            }
        }
        res
    }
}

impl ConnectionLike for RenewedConn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        Box::pin(async move {
            let m = self.manager().await?;
            let res = super::conn::resend_if_unsent(move || {
                let mut m = m.clone();
                Box::pin(async move { m.send_packed_command(cmd).await })
            })
            .await;
            self.check(res)
        })
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        cmd: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        Box::pin(async move {
            let m = self.manager().await?;
            let res = super::conn::resend_if_unsent(move || {
                let mut m = m.clone();
                Box::pin(async move { m.send_packed_commands(cmd, offset, count).await })
            })
            .await;
            self.check(res)
        })
    }

    fn get_db(&self) -> i64 {
        self.inner
            .client
            .get_connection_info()
            .redis_settings()
            .db()
    }
}
