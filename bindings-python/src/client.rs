//! `tideq.Client`: connection settings shared by queue handles (wraps `tideq::Client`).

use pyo3::prelude::*;

use crate::convert;
use crate::errors;

/// Environment variable read when no URL is given.
const URL_ENV: &str = "TIDEQ_REDIS_URL";
const DEFAULT_URL: &str = "redis://127.0.0.1:6379";

/// A handle on one Redis deployment, shared by queues. Connects lazily, on the first command.
#[pyclass(module = "tideq", frozen)]
pub struct Client {
    pub(crate) inner: tideq::Client,
}

impl Client {
    /// A client for `url`, or for `$TIDEQ_REDIS_URL`, or for the local default.
    pub fn from_url(url: Option<String>) -> PyResult<Self> {
        Client::new(
            url,
            None,
            None,
            "tideq",
            tideq::config::DEFAULT_MAX_PAYLOAD as i64,
        )
    }
}

#[pymethods]
impl Client {
    #[new]
    #[pyo3(signature = (url=None, *, username=None, password=None, prefix="tideq", max_payload=524288))]
    fn new(
        url: Option<String>,
        username: Option<String>,
        password: Option<String>,
        prefix: &str,
        max_payload: i64,
    ) -> PyResult<Self> {
        let url = url
            .or_else(|| std::env::var(URL_ENV).ok().filter(|u| !u.is_empty()))
            .unwrap_or_else(|| DEFAULT_URL.to_string());
        let config = tideq::Config::new(url)
            .with_credentials(username, password)
            .with_prefix(prefix)
            .with_max_payload(convert::count("max_payload", max_payload)?);
        let inner = tideq::Client::new(config).map_err(errors::to_py)?;
        Ok(Client { inner })
    }

    /// The URL with any password replaced by `***`.
    #[getter]
    fn url(&self) -> String {
        self.inner.config().redacted_url()
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
        format!(
            "Client(url={}, prefix={})",
            convert::str_repr(py, &self.url()),
            convert::str_repr(py, self.prefix())
        )
    }
}
