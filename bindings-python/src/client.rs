//! `tideq.Client`: connection settings shared by queue handles (wraps `tideq::Client`): one
//! server (`url`), a Redis Cluster (`cluster` seeds) or a Sentinel-managed primary (`sentinel`
//! plus `master_name`). `tls_ca` (PEM bytes, or a PEM file's path read here) is handed to
//! `Config::with_tls_ca` as is.

use pyo3::prelude::*;
use tideq::config::redact_url;
use tideq::{Config, EvictionCheck};

use crate::convert::{self, Int, Secret, Secs, Text};
use crate::error::{self, invalid};

/// Which kind of deployment a client reaches, with the addresses it was given (redacted).
enum Mode {
    Single,
    Cluster(Vec<String>),
    Sentinel(Vec<String>, String),
}

/// A handle on one Redis deployment, shared by queues. Connects lazily, on the first command.
///
/// Give at most one of:
///
/// - ``url``: one server; ``redis://``, ``rediss://`` (TLS) and ``unix://`` are accepted. With
///   none of the three, ``$TIDEQ_REDIS_URL``, else ``redis://127.0.0.1:6379``.
/// - ``cluster``: a Redis Cluster, through any of these seed URLs (``redis://host:port`` or
///   ``rediss://``, at least one). Redirects, topology changes and failovers are followed; spread
///   a queue over the masters with the queue option ``shards``.
/// - ``sentinel``: the Sentinels' URLs (at least one) of a primary they monitor as
///   ``master_name``; the client asks them for the current primary again after a failover.
///
/// ``username``/``password`` override the URL's (with Sentinel: the primary's credentials).
/// ``prefix`` is the first segment of every key (default ``"tideq"``); ``max_payload`` the
/// largest item accepted, in bytes (default 512 KiB).
/// ``replica_ack=(replicas, timeout)`` makes every job enqueue wait (Redis ``WAIT``) until
/// ``replicas`` replicas have it, at most ``timeout`` seconds, else ``NotReplicatedError``.
/// ``tls_ca`` trusts a private CA for ``rediss://`` (single server, cluster and Sentinel, both
/// to the Sentinels and to the primary) instead of the public roots; verification stays on. Give
/// the PEM contents as ``bytes`` or the path of a PEM file as ``str``/``os.PathLike`` (read when
/// the client is created; an unreadable file raises ``InvalidArgumentError``, so do ``bytes``
/// holding no PEM certificate).
/// ``eviction_check`` says what to do when Redis's ``maxmemory-policy`` lets it evict keys (and
/// so lose jobs without any error), checked on the first command: ``"warn"`` (the default: log a
/// warning once per server), ``"refuse"`` (every call raises ``EvictionPolicyError``) or
/// ``"off"``.
/// ``credentials_provider`` is asked for the credentials each time a connection logs in (the
/// first connection, every reconnection, each blocking connection, each cluster node and the
/// primary the Sentinels name), for short-lived tokens (ElastiCache IAM, Entra ID): a function
/// or a coroutine function (run on an event loop of its own, in a background thread) returning
/// ``(username, password)`` (``username`` None: the URL's user, else ``default``) or a password
/// alone. What it raises becomes an ``AuthError`` naming it, and it is asked again on the next
/// reconnection. It gives the password: a password in the URL or ``password`` too raises
/// ``InvalidArgumentError``.
/// Conflicting or empty options raise ``InvalidArgumentError``, as do names, URLs and
/// credentials that are not valid UTF-8 (a ``str`` holding a lone surrogate).
#[pyclass(module = "tideq", frozen)]
pub struct Client {
    pub(crate) inner: tideq::Client,
    mode: Mode,
    replica_ack: Option<(usize, f64)>,
    eviction_check: EvictionCheck,
}

impl Client {
    /// The client a queue uses: `client`, or one for `url` (neither: as `Client()`).
    pub fn for_queue(
        py: Python<'_>,
        client: Option<Py<Client>>,
        url: Option<Secret>,
    ) -> PyResult<Py<Client>> {
        match (client, url) {
            (Some(_), Some(_)) => Err(invalid("pass either client or url, not both")),
            (Some(client), None) => Ok(client),
            (None, url) => {
                let config = url.map_or_else(Config::from_env, |u| Config::new(u.0));
                let inner = tideq::Client::new(config).map_err(error::to_py)?;
                Py::new(
                    py,
                    Client {
                        inner,
                        mode: Mode::Single,
                        replica_ack: None,
                        eviction_check: EvictionCheck::default(),
                    },
                )
            }
        }
    }
}

/// A list of URLs that must not be empty (an empty one would otherwise reach the core as an
/// empty URL and fail with a confusing message).
fn non_empty(what: &str, urls: Vec<Secret>) -> PyResult<Vec<String>> {
    if urls.is_empty() {
        return Err(invalid(format!("{what} must list at least one URL")));
    }
    Ok(urls.into_iter().map(|u| u.0).collect())
}

/// `"warn"`, `"refuse"` or `"off"` as the core's `EvictionCheck`.
fn eviction_check(py: Python<'_>, name: &str) -> PyResult<EvictionCheck> {
    Ok(match name {
        "warn" => EvictionCheck::Warn,
        "refuse" => EvictionCheck::Refuse,
        "off" => EvictionCheck::Off,
        _ => {
            return Err(invalid(format!(
                "eviction_check must be \"warn\", \"refuse\" or \"off\", got {}",
                convert::str_repr(py, name)
            )))
        }
    })
}

fn eviction_check_name(check: EvictionCheck) -> &'static str {
    match check {
        EvictionCheck::Warn => "warn",
        EvictionCheck::Refuse => "refuse",
        EvictionCheck::Off => "off",
    }
}

#[pymethods]
impl Client {
    #[new]
    #[pyo3(signature = (url=None, *, cluster=None, sentinel=None, master_name=None, username=None, password=None, prefix=None, max_payload=None, replica_ack=None, tls_ca=None, eviction_check=None, credentials_provider=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        url: Option<Secret>,
        cluster: Option<Vec<Secret>>,
        sentinel: Option<Vec<Secret>>,
        master_name: Option<Text>,
        username: Option<Secret>,
        password: Option<Secret>,
        prefix: Option<Text>,
        max_payload: Option<Int>,
        replica_ack: Option<(Int, Secs)>,
        tls_ca: Option<&Bound<'_, PyAny>>,
        eviction_check: Option<Text>,
        credentials_provider: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let master_name = master_name.map(|n| n.0);
        let (config, mode) = match (url, cluster, sentinel) {
            (url, None, None) => {
                if master_name.is_some() {
                    return Err(invalid("master_name is only for sentinel=[...]"));
                }
                (
                    url.map_or_else(Config::from_env, |u| Config::new(u.0)),
                    Mode::Single,
                )
            }
            (None, Some(nodes), None) => {
                if master_name.is_some() {
                    return Err(invalid("master_name is only for sentinel=[...]"));
                }
                let nodes = non_empty("cluster", nodes)?;
                let shown = nodes.iter().map(|u| redact_url(u)).collect();
                (Config::cluster(nodes), Mode::Cluster(shown))
            }
            (None, None, Some(sentinels)) => {
                let sentinels = non_empty("sentinel", sentinels)?;
                let master_name = master_name.ok_or_else(|| {
                    invalid("sentinel=[...] needs master_name (the name the Sentinels monitor)")
                })?;
                let shown = sentinels.iter().map(|u| redact_url(u)).collect();
                (
                    Config::sentinel(sentinels, master_name.clone()),
                    Mode::Sentinel(shown, master_name),
                )
            }
            _ => {
                return Err(invalid(
                    "give one of url, cluster and sentinel, not several",
                ))
            }
        };
        let mut config = config.with_credentials(username.map(|u| u.0), password.map(|p| p.0));
        if let Some(prefix) = prefix {
            config = config.with_prefix(prefix.0);
        }
        let eviction_check = match eviction_check {
            Some(name) => self::eviction_check(py, &name.0)?,
            None => EvictionCheck::default(),
        };
        config = config.with_eviction_check(eviction_check);
        if let Some(n) = max_payload {
            config = config.with_max_payload(convert::count("max_payload", n)?);
        }
        let replica_ack = match replica_ack {
            Some((replicas, timeout)) => {
                let replicas = convert::count("replica_ack replicas", replicas)?;
                let timeout_d = convert::duration("replica_ack timeout", timeout)?;
                config = config.with_replica_ack(replicas, timeout_d);
                Some((replicas, timeout.0))
            }
            None => None,
        };
        if let Some(ca) = tls_ca {
            config = config.with_tls_ca(convert::pem("tls_ca", ca)?);
        }
        // Credentials that rotate.
        if let Some(f) = credentials_provider.filter(|f| !f.is_none()) {
            config = config.with_credentials_provider(crate::credentials::provider(f)?);
        }
        let inner = tideq::Client::new(config).map_err(error::to_py)?;
        Ok(Client {
            inner,
            mode,
            replica_ack,
            eviction_check,
        })
    }

    /// A round trip to Redis (blocking, the GIL released); raises ``ConnectionError`` when Redis
    /// cannot be reached, ``AuthError`` when it refuses the credentials.
    ///
    /// In asyncio code: ``await asyncio.to_thread(client.ping)``.
    fn ping<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let client = self.inner.clone();
        crate::runtime::Api::Blocking.call(py, async move { client.ping().await })
    }

    /// The URL with any password replaced by ``***`` (cluster: the first seed; Sentinel: the
    /// first Sentinel).
    #[getter]
    fn url(&self) -> String {
        self.inner.config().redacted_url()
    }

    /// ``"single"``, ``"cluster"`` or ``"sentinel"``.
    #[getter]
    fn mode(&self) -> &'static str {
        match self.mode {
            Mode::Single => "single",
            Mode::Cluster(_) => "cluster",
            Mode::Sentinel(..) => "sentinel",
        }
    }

    /// The cluster seed URLs (passwords redacted), or None.
    #[getter]
    fn cluster(&self) -> Option<Vec<String>> {
        match &self.mode {
            Mode::Cluster(nodes) => Some(nodes.clone()),
            _ => None,
        }
    }

    /// The Sentinel URLs (passwords redacted), or None.
    #[getter]
    fn sentinel(&self) -> Option<Vec<String>> {
        match &self.mode {
            Mode::Sentinel(sentinels, _) => Some(sentinels.clone()),
            _ => None,
        }
    }

    /// The name the Sentinels monitor the primary under, or None.
    #[getter]
    fn master_name(&self) -> Option<&str> {
        match &self.mode {
            Mode::Sentinel(_, name) => Some(name),
            _ => None,
        }
    }

    /// ``(replicas, timeout seconds)`` each enqueue waits for, or None.
    #[getter]
    fn replica_ack(&self) -> Option<(usize, f64)> {
        self.replica_ack
    }

    /// ``"warn"``, ``"refuse"`` or ``"off"``: what the client does about a Redis that may
    /// evict keys.
    #[getter]
    fn eviction_check(&self) -> &'static str {
        eviction_check_name(self.eviction_check)
    }

    /// First segment of every Redis key.
    #[getter]
    fn prefix(&self) -> &str {
        self.inner.config().prefix()
    }

    /// Largest item accepted, in bytes.
    #[getter]
    fn max_payload(&self) -> usize {
        self.inner.config().max_payload()
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        let list = |urls: &[String]| {
            let shown: Vec<String> = urls.iter().map(|u| convert::str_repr(py, u)).collect();
            format!("[{}]", shown.join(", "))
        };
        let target = match &self.mode {
            Mode::Single => format!("url={}", convert::str_repr(py, &self.url())),
            Mode::Cluster(nodes) => format!("cluster={}", list(nodes)),
            Mode::Sentinel(sentinels, name) => format!(
                "sentinel={}, master_name={}",
                list(sentinels),
                convert::str_repr(py, name)
            ),
        };
        let ack = self.replica_ack.map_or(String::new(), |(n, t)| {
            format!(", replica_ack=({n}, {t:?})")
        });
        format!(
            "Client({target}, prefix={}{ack})",
            convert::str_repr(py, self.prefix())
        )
    }
}
