//! `tideq.Client`: connection settings shared by queue handles (wraps `tideq::Client`): one
//! server (`url`), a Redis Cluster (`cluster` seeds) or a Sentinel-managed primary (`sentinel`
//! plus `master_name`). `tls_ca` (PEM bytes, or a PEM file's path read here) is handed to
//! `Config::with_tls_ca` as is.

use pyo3::prelude::*;
use tideq::config::redact_url;

use crate::convert;
use crate::errors::{self, invalid};

/// Environment variable read when no URL is given.
const URL_ENV: &str = "TIDEQ_REDIS_URL";
const DEFAULT_URL: &str = "redis://127.0.0.1:6379";

/// Which kind of deployment a client reaches, with the addresses it was given (redacted).
enum Mode {
    Single,
    Cluster(Vec<String>),
    Sentinel(Vec<String>, String),
}

/// A handle on one Redis deployment, shared by queues. Connects lazily, on the first command.
#[pyclass(module = "tideq", frozen)]
pub struct Client {
    pub(crate) inner: tideq::Client,
    mode: Mode,
    replica_ack: Option<(usize, f64)>,
}

impl Client {
    /// A client for `url`, or for `$TIDEQ_REDIS_URL`, or for the local default.
    pub fn from_url(url: Option<String>) -> PyResult<Self> {
        Client::new(
            url,
            None,
            None,
            None,
            None,
            None,
            "tideq",
            tideq::config::DEFAULT_MAX_PAYLOAD as i64,
            None,
            None,
        )
    }
}

/// A list of URLs that must not be empty (an empty one would otherwise reach the core as an
/// empty URL and fail with a confusing message).
fn non_empty(what: &str, urls: Vec<String>) -> PyResult<Vec<String>> {
    if urls.is_empty() {
        return Err(invalid(format!("{what} must list at least one URL")));
    }
    Ok(urls)
}

#[pymethods]
impl Client {
    #[new]
    #[pyo3(signature = (url=None, *, cluster=None, sentinel=None, master_name=None, username=None, password=None, prefix="tideq", max_payload=524288, replica_ack=None, tls_ca=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        url: Option<String>,
        cluster: Option<Vec<String>>,
        sentinel: Option<Vec<String>>,
        master_name: Option<String>,
        username: Option<String>,
        password: Option<String>,
        prefix: &str,
        max_payload: i64,
        replica_ack: Option<(i64, f64)>,
        tls_ca: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let (config, mode) = match (url, cluster, sentinel) {
            (url, None, None) => {
                if master_name.is_some() {
                    return Err(invalid("master_name is only for sentinel=[...]"));
                }
                let url = url
                    .or_else(|| std::env::var(URL_ENV).ok().filter(|u| !u.is_empty()))
                    .unwrap_or_else(|| DEFAULT_URL.to_string());
                (tideq::Config::new(url), Mode::Single)
            }
            (None, Some(nodes), None) => {
                if master_name.is_some() {
                    return Err(invalid("master_name is only for sentinel=[...]"));
                }
                let nodes = non_empty("cluster", nodes)?;
                let shown = nodes.iter().map(|u| redact_url(u)).collect();
                (tideq::Config::cluster(nodes), Mode::Cluster(shown))
            }
            (None, None, Some(sentinels)) => {
                let sentinels = non_empty("sentinel", sentinels)?;
                let master_name = master_name.ok_or_else(|| {
                    invalid("sentinel=[...] needs master_name (the name the Sentinels monitor)")
                })?;
                let shown = sentinels.iter().map(|u| redact_url(u)).collect();
                (
                    tideq::Config::sentinel(sentinels, master_name.clone()),
                    Mode::Sentinel(shown, master_name),
                )
            }
            _ => {
                return Err(invalid(
                    "give one of url, cluster and sentinel, not several",
                ))
            }
        };
        let mut config = config
            .with_credentials(username, password)
            .with_prefix(prefix)
            .with_max_payload(convert::count("max_payload", max_payload)?);
        let replica_ack = match replica_ack {
            Some((replicas, timeout)) => {
                let replicas = convert::count("replica_ack replicas", replicas)?;
                let timeout_d = convert::duration("replica_ack timeout", timeout)?;
                config = config.with_replica_ack(replicas, timeout_d);
                Some((replicas, timeout))
            }
            None => None,
        };
        if let Some(ca) = tls_ca {
            config = config.with_tls_ca(convert::pem("tls_ca", ca)?);
        }
        let inner = tideq::Client::new(config).map_err(errors::to_py)?;
        Ok(Client {
            inner,
            mode,
            replica_ack,
        })
    }

    /// The URL with any password replaced by `***` (cluster: the first seed; Sentinel: the first
    /// Sentinel).
    #[getter]
    fn url(&self) -> String {
        self.inner.config().redacted_url()
    }

    /// `"single"`, `"cluster"` or `"sentinel"`.
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

    /// `(replicas, timeout seconds)` every enqueue waits for, or None.
    #[getter]
    fn replica_ack(&self) -> Option<(usize, f64)> {
        self.replica_ack
    }

    #[getter]
    fn prefix(&self) -> &str {
        self.inner.config().prefix()
    }

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
