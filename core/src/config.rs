//! Connection settings shared by every queue handle.

use std::time::Duration;

use std::sync::Arc;

use crate::client::CredentialsProvider;
use crate::error::{Error, Result};
use crate::keys::validate_prefix;

/// Default payload limit: 512 KiB.
pub const DEFAULT_MAX_PAYLOAD: usize = 512 * 1024;

/// The environment variable [`Config::from_env`] reads the Redis URL from.
pub const URL_ENV: &str = "TIDEQ_REDIS_URL";

/// The URL used when none is given and [`URL_ENV`] is not set: a local Redis.
pub const DEFAULT_URL: &str = "redis://127.0.0.1:6379";

/// What a client does about a Redis whose `maxmemory-policy` may evict keys (and so jobs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EvictionCheck {
    /// Log a warning once per server (the default).
    #[default]
    Warn,
    /// Refuse to work: every call fails with `EVICTION_POLICY`.
    Refuse,
    /// Do not check.
    Off,
}

/// What a [`Config`] was built for.
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Single,
    Cluster,
    Sentinel,
}

/// How to reach Redis and the limits applied before anything is sent.
///
/// ```
/// let cfg = tideq::Config::new("redis://127.0.0.1:6379/0").with_prefix("myapp");
/// assert_eq!(cfg.prefix(), "myapp");
/// ```
#[derive(Clone)]
pub struct Config {
    pub(crate) url: String,
    /// Redis Cluster seed nodes (URLs); empty for a single node.
    pub(crate) cluster_nodes: Vec<String>,
    /// Sentinel addresses (URLs) and the monitored master's name; empty for no Sentinel.
    pub(crate) sentinels: Vec<String>,
    pub(crate) master_name: String,
    /// Replicas that must confirm each enqueue (`WAIT`), and how long to wait for them.
    pub(crate) replica_ack: Option<(usize, Duration)>,
    /// PEM root certificate(s) to trust for `rediss://` instead of the public roots.
    pub(crate) tls_ca: Option<Vec<u8>>,
    /// What the config was built for (kept even with an empty address list, to say what is missing).
    mode: Mode,
    pub(crate) username: Option<String>,
    pub(crate) password: Option<String>,
    pub(crate) prefix: String,
    pub(crate) max_payload: usize,
    pub(crate) connect_timeout: Duration,
    pub(crate) response_timeout: Duration,
    pub(crate) eviction_check: EvictionCheck,
    // Credentials that rotate: asked for on every connection (client/credentials.rs).
    pub(crate) credentials_provider: Option<Arc<dyn CredentialsProvider>>,
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("url", &redact_url(&self.url))
            .field(
                "cluster_nodes",
                &self
                    .cluster_nodes
                    .iter()
                    .map(|u| redact_url(u))
                    .collect::<Vec<_>>(),
            )
            .field(
                "sentinels",
                &self
                    .sentinels
                    .iter()
                    .map(|u| redact_url(u))
                    .collect::<Vec<_>>(),
            )
            .field("master_name", &self.master_name)
            .field("replica_ack", &self.replica_ack)
            .field("tls_ca", &self.tls_ca.as_ref().map(|_| "<pem>"))
            .field("username", &self.username)
            .field("password", &self.password.as_ref().map(|_| "***"))
            .field("prefix", &self.prefix)
            .field("max_payload", &self.max_payload)
            .field(
                "credentials_provider",
                &self.credentials_provider.as_ref().map(|_| "<provider>"),
            )
            .finish()
    }
}

impl Default for Config {
    fn default() -> Self {
        Config::new("redis://127.0.0.1:6379")
    }
}

impl Config {
    /// A `redis://` or `rediss://` (TLS) URL; user and password may be in the URL
    /// (`redis://user:pass@host:port/db`) or set with [`with_credentials`](Self::with_credentials).
    pub fn new(url: impl Into<String>) -> Self {
        Config {
            url: url.into(),
            cluster_nodes: Vec::new(),
            sentinels: Vec::new(),
            master_name: String::new(),
            replica_ack: None,
            tls_ca: None,
            mode: Mode::Single,
            username: None,
            password: None,
            prefix: "tideq".to_string(),
            max_payload: DEFAULT_MAX_PAYLOAD,
            connect_timeout: Duration::from_secs(5),
            response_timeout: Duration::from_secs(30),
            eviction_check: EvictionCheck::Warn,
            credentials_provider: None,
        }
    }

    /// The URL in `TIDEQ_REDIS_URL`, else a local Redis (`redis://127.0.0.1:6379`): what the
    /// Python and Node bindings use when no URL is given.
    pub fn from_env() -> Self {
        Config::new(Self::env_url())
    }

    /// `TIDEQ_REDIS_URL` if set and not empty, else [`DEFAULT_URL`].
    pub fn env_url() -> String {
        std::env::var(URL_ENV)
            .ok()
            .filter(|u| !u.is_empty())
            .unwrap_or_else(|| DEFAULT_URL.to_string())
    }

    /// A Redis Cluster, reached through any of these seed nodes (`redis://host:port` or
    /// `rediss://` URLs; credentials as for a single node). Topology changes, MOVED/ASK
    /// redirects and failovers are followed by the client.
    pub fn cluster<I, S>(nodes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let nodes: Vec<String> = nodes.into_iter().map(Into::into).collect();
        let mut cfg = Config::new(nodes.first().cloned().unwrap_or_default());
        cfg.cluster_nodes = nodes;
        cfg.mode = Mode::Cluster;
        cfg
    }

    /// A primary managed by Redis Sentinel: `sentinels` are the Sentinels' URLs
    /// (`redis://host:26379`), `master_name` the name they monitor. The client asks the
    /// Sentinels for the current primary and asks again after a failover. Credentials and TLS
    /// set on this config apply to the primary.
    pub fn sentinel<I, S>(sentinels: I, master_name: impl Into<String>) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let sentinels: Vec<String> = sentinels.into_iter().map(Into::into).collect();
        let mut cfg = Config::new(sentinels.first().cloned().unwrap_or_default());
        cfg.sentinels = sentinels;
        cfg.master_name = master_name.into();
        cfg.mode = Mode::Sentinel;
        cfg
    }

    /// True for a Sentinel-managed primary.
    pub fn is_sentinel(&self) -> bool {
        !self.sentinels.is_empty()
    }

    /// Make every job enqueue wait until `replicas` replicas have it (Redis `WAIT`), for
    /// producers that must not lose an acknowledged job when the primary dies (replication is
    /// asynchronous otherwise). If fewer confirm within `timeout`, enqueue fails with
    /// `NOT_REPLICATED`; the job is on the primary, so retrying with the same id is safe.
    pub fn with_replica_ack(mut self, replicas: usize, timeout: Duration) -> Self {
        self.replica_ack = Some((replicas, timeout));
        self
    }

    /// Trust this PEM root certificate for `rediss://` (a private CA) instead of the public roots.
    /// Single nodes, clusters and Sentinel setups (primary and Sentinels).
    /// (`rediss://host/#insecure` skips verification: tests only.)
    pub fn with_tls_ca(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.tls_ca = Some(pem.into());
        self
    }

    pub(crate) fn tls_certs(&self) -> Option<redis::TlsCertificates> {
        self.tls_ca.as_ref().map(|ca| redis::TlsCertificates {
            client_tls: None,
            root_cert: Some(ca.clone()),
        })
    }

    /// True for a Redis Cluster configuration.
    pub fn is_cluster(&self) -> bool {
        !self.cluster_nodes.is_empty()
    }

    /// ACL user and password, overriding any in the URL.
    pub fn with_credentials(mut self, username: Option<String>, password: Option<String>) -> Self {
        self.username = username;
        self.password = password;
        self
    }

    /// Ask `provider` for the password (and optionally the user) each time a connection
    /// authenticates: the first connection, every reconnection, each blocking connection, each
    /// cluster node's connection and the primary the Sentinels name. For short-lived tokens
    /// (ElastiCache IAM, Azure Entra ID). A provider that fails gives an `AUTH` error naming it,
    /// and is asked again on the next reconnection. It replaces the password: a password in a
    /// URL or in [`with_credentials`](Self::with_credentials) too is `INVALID_ARGUMENT`.
    ///
    /// ```
    /// use tideq::{Config, Credentials};
    /// let cfg = Config::new("redis://app@127.0.0.1:6379").with_credentials_provider(|| async {
    ///     Ok::<_, std::io::Error>(Credentials::password("a-fresh-token"))
    /// });
    /// # let _ = cfg;
    /// ```
    pub fn with_credentials_provider(mut self, provider: impl CredentialsProvider) -> Self {
        self.credentials_provider = Some(Arc::new(provider));
        self
    }

    /// The first segment of every key (default `tideq`).
    pub fn with_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// The largest item or payload accepted, in bytes (default 512 KiB).
    pub fn with_max_payload(mut self, bytes: usize) -> Self {
        self.max_payload = bytes;
        self
    }

    pub fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// How long a non-blocking command may take before it fails with `CONNECTION` (default 30 s).
    pub fn with_response_timeout(mut self, timeout: Duration) -> Self {
        self.response_timeout = timeout;
        self
    }

    /// What to do when Redis's `maxmemory-policy` is not `noeviction` (checked on the first
    /// command, from `INFO memory`): warn once (default), refuse, or skip the check.
    pub fn with_eviction_check(mut self, check: EvictionCheck) -> Self {
        self.eviction_check = check;
        self
    }

    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    pub fn max_payload(&self) -> usize {
        self.max_payload
    }

    /// `PAYLOAD_TOO_LARGE`, naming the option that raises the limit, when `what` (a job's payload,
    /// a capped queue's item) is `len` bytes, over [`max_payload`](Self::max_payload).
    pub(crate) fn check_payload(&self, what: &str, len: usize) -> crate::Result<()> {
        let limit = self.max_payload;
        if len <= limit {
            return Ok(());
        }
        Err(crate::Error::new(
            crate::ErrorKind::PayloadTooLarge,
            format!(
                "{what} is {len} bytes; the limit is {limit} bytes (the client's max_payload \
                 option, maxPayload in Node, raises it)"
            ),
        ))
    }

    /// The URL with any password replaced by `***`, safe to log.
    pub fn redacted_url(&self) -> String {
        redact_url(&self.url)
    }

    pub(crate) fn validate(&self) -> Result<()> {
        validate_prefix(&self.prefix)?;
        match self.mode {
            Mode::Cluster if self.cluster_nodes.is_empty() => {
                return Err(Error::invalid(
                    "a Redis Cluster configuration needs at least one seed node URL",
                ));
            }
            Mode::Sentinel if self.sentinels.is_empty() => {
                return Err(Error::invalid(
                    "a Sentinel configuration needs at least one Sentinel URL",
                ));
            }
            _ => {}
        }
        if let Some(ca) = &self.tls_ca {
            // Parsed as the TLS layer will, so a damaged certificate is refused here rather than
            // surfacing as a connection error.
            use rustls::pki_types::{pem::PemObject, CertificateDer};
            let bad = |why: &dyn std::fmt::Display| {
                Error::invalid(format!(
                    "tls_ca must be PEM certificate(s) (-----BEGIN CERTIFICATE-----): {why}"
                ))
            };
            let mut roots = rustls::RootCertStore::empty();
            for cert in CertificateDer::pem_slice_iter(ca) {
                let cert = cert.map_err(|e| bad(&e))?;
                roots.add(cert).map_err(|e| bad(&e))?;
            }
            if roots.is_empty() {
                return Err(bad(&"no certificate found"));
            }
        }
        if self.max_payload == 0 {
            return Err(Error::invalid("max_payload must be at least 1 byte"));
        }
        if self.is_sentinel() && self.master_name.is_empty() {
            return Err(Error::invalid(
                "a Sentinel configuration needs the master name",
            ));
        }
        if self.is_cluster() && self.is_sentinel() {
            return Err(Error::invalid(
                "use either Redis Cluster or Sentinel, not both",
            ));
        }
        if let Some((n, t)) = self.replica_ack {
            if n == 0 || t.as_millis() == 0 {
                return Err(Error::invalid(
                    "replica_ack needs at least 1 replica and a timeout of at least 1 ms",
                ));
            }
        }
        let urls: Vec<&String> = if self.is_sentinel() {
            self.sentinels.iter().collect()
        } else if self.is_cluster() {
            self.cluster_nodes.iter().collect()
        } else {
            vec![&self.url]
        };
        if self.credentials_provider.is_some() {
            let in_url = urls.iter().any(|u| {
                use redis::IntoConnectionInfo;
                u.as_str()
                    .into_connection_info()
                    .is_ok_and(|i| i.redis_settings().password().is_some())
            });
            if in_url || self.password.is_some() {
                return Err(Error::invalid(
                    "a credentials provider gives the password: remove the password from the URL \
                     (and the password option), or do not set a provider",
                ));
            }
        }
        for url in urls {
            let ok = url.starts_with("redis://")
                || url.starts_with("rediss://")
                || (!self.is_cluster()
                    && (url.starts_with("unix://") || url.starts_with("redis+unix://")));
            if !ok {
                return Err(Error::invalid(format!(
                    "unsupported Redis URL {:?}: expected redis://, rediss:// or unix://",
                    redact_url(url)
                )));
            }
        }
        Ok(())
    }

    /// The redis-rs connection info of `url`, with explicit credentials applied.
    pub(crate) fn connection_info_for(&self, url: &str) -> Result<redis::ConnectionInfo> {
        use redis::IntoConnectionInfo;
        let info = url.into_connection_info().map_err(|e| {
            Error::invalid(format!(
                "invalid Redis URL {}: {}",
                redact_url(url),
                e.category()
            ))
        })?;
        let mut settings = info.redis_settings().clone();
        if let Some(u) = &self.username {
            settings = settings.set_username(u);
        }
        if let Some(p) = &self.password {
            settings = settings.set_password(p);
        }
        Ok(info.set_redis_settings(settings))
    }

    /// The password in force (explicit, in the URL's user info, or a `pass`/`password` query
    /// parameter of a unix-socket URL), to scrub it from error text.
    pub(crate) fn secret(&self) -> Option<String> {
        if let Some(p) = &self.password {
            return Some(p.clone());
        }
        let parts = UrlParts::of(&self.url)?;
        if let Some(p) = parts.password.filter(|p| !p.is_empty()) {
            return Some(p.to_string());
        }
        let found = parts.query_secrets().next().map(str::to_string);
        found.filter(|p| !p.is_empty())
    }
}

/// Query parameters that carry a secret in URLs redis-rs accepts (`unix:///s.sock?pass=...`).
const SECRET_PARAMS: [&str; 3] = ["pass", "password", "passwd"];

/// A URL cut where credentials can sit, without decoding anything.
struct UrlParts<'a> {
    scheme: &'a str,
    user: Option<&'a str>,
    password: Option<&'a str>,
    /// Host, port and path.
    rest: &'a str,
    query: Option<&'a str>,
}

impl<'a> UrlParts<'a> {
    fn of(url: &'a str) -> Option<Self> {
        let (scheme, after) = url.split_once("://")?;
        if scheme.is_empty()
            || !scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '+')
        {
            return None;
        }
        // The user info ends at the last '@' (a password may hold '/', '?', '#' or '@').
        let (userinfo, rest) = match after.rfind('@') {
            Some(at) => (Some(&after[..at]), &after[at + 1..]),
            None => (None, after),
        };
        let (user, password) = match userinfo {
            Some(ui) => match ui.split_once(':') {
                Some((u, p)) => (Some(u), Some(p)),
                // A lone user-info part could be a password given without its ':'.
                None => (None, Some(ui)),
            },
            None => (None, None),
        };
        let (rest, query) = match rest.split_once('?') {
            Some((r, q)) => (r, Some(q)),
            None => (rest, None),
        };
        Some(UrlParts {
            scheme,
            user,
            password,
            rest,
            query,
        })
    }

    fn query_secrets(&self) -> impl Iterator<Item = &'a str> + '_ {
        self.query
            .into_iter()
            .flat_map(|q| q.split('&'))
            .filter_map(|pair| {
                let (k, v) = pair.split_once('=')?;
                SECRET_PARAMS
                    .contains(&k.to_ascii_lowercase().as_str())
                    .then_some(v)
            })
    }
}

/// The URL with every credential it may hold replaced by `***` (the password of the user info,
/// and `pass`/`password` query parameters), safe to log. Something that is not a URL at all
/// (no `scheme://`) is not shown, since it may be a password typed in the wrong place.
pub fn redact_url(url: &str) -> String {
    let Some(p) = UrlParts::of(url) else {
        return "<not a URL: not shown>".to_string();
    };
    let mut out = format!("{}://", p.scheme);
    match (p.user, p.password) {
        // A user part holding '@' may be a password with '@' in it: show none of it.
        (Some(u), Some(_)) if !u.contains('@') => out.push_str(&format!("{u}:***@")),
        (Some(_), Some(_)) => out.push_str("***@"),
        (None, Some(_)) => out.push_str("***@"),
        _ => {}
    }
    out.push_str(p.rest);
    if let Some(q) = p.query {
        let pairs: Vec<String> = q
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((k, _)) if SECRET_PARAMS.contains(&k.to_ascii_lowercase().as_str()) => {
                    format!("{k}=***")
                }
                _ => pair.to_string(),
            })
            .collect();
        out.push('?');
        out.push_str(&pairs.join("&"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redacted_url_hides_the_password() {
        assert_eq!(redact_url("redis://u:s3cret@h:1/0"), "redis://u:***@h:1/0");
        assert_eq!(redact_url("rediss://:s3cret@h"), "rediss://:***@h");
        assert_eq!(redact_url("redis://h:1"), "redis://h:1");
        assert_eq!(redact_url("redis://u:pa/ss@h:1"), "redis://u:***@h:1");
        assert_eq!(redact_url("redis://u:p@ss@h"), "redis://u:***@h");
        assert_eq!(
            redact_url("unix:///tmp/r.sock?db=1&user=alice&pass=SECRET"),
            "unix:///tmp/r.sock?db=1&user=alice&pass=***"
        );
        assert_eq!(
            redact_url("alice:SECRET@host:6379"),
            "<not a URL: not shown>"
        );
        let unix = Config::new("redis+unix:///tmp/r.sock?password=SECRET");
        assert_eq!(unix.secret().as_deref(), Some("SECRET"));
        assert!(!format!("{unix:?}").contains("SECRET"));
        let cfg = Config::new("redis://u:s3cret@h:1/0");
        assert!(!format!("{cfg:?}").contains("s3cret"));
        assert_eq!(cfg.secret().as_deref(), Some("s3cret"));
    }

    #[test]
    fn unsupported_url_is_invalid_argument() {
        let err = Config::new("http://x").validate().unwrap_err();
        assert_eq!(err.code(), "INVALID_ARGUMENT");
    }

    #[test]
    fn bad_cluster_and_sentinel_configs_say_what_is_wrong() {
        let none: [&str; 0] = [];
        let err = Config::cluster(none).validate().unwrap_err();
        assert!(err.message().contains("seed node"), "{err}");
        let err = Config::sentinel(none, "m").validate().unwrap_err();
        assert!(err.message().contains("Sentinel URL"), "{err}");
        let err = Config::sentinel(["redis://h:26379"], "")
            .validate()
            .unwrap_err();
        assert!(err.message().contains("master name"), "{err}");
        let err = Config::new("redis://h")
            .with_replica_ack(1, Duration::from_micros(400))
            .validate()
            .unwrap_err();
        assert_eq!(err.code(), "INVALID_ARGUMENT");
        let dbg = format!(
            "{:?}",
            Config::sentinel(["redis://:pw@h:26379"], "m")
                .with_replica_ack(1, Duration::from_secs(1))
        );
        assert!(
            dbg.contains("replica_ack") && dbg.contains("master_name") && !dbg.contains("pw@"),
            "{dbg}"
        );
    }
}
