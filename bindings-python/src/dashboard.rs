//! `_Dashboard`: the dashboard mounted in a Python web app (`tideq.asgi.dashboard`), the CLI
//! crate's router called in-process on the binding's runtime (`tideq_cli::dashboard::Dashboard`'s
//! bridge). Python only passes requests and asks its app's `authorize` hook when told to.

use std::borrow::Cow;
use std::time::Duration;

use pyo3::prelude::*;
use tideq_cli::dashboard::{Action, BridgeRequest, Bridged, Dashboard as Inner, MountOptions};

use crate::client::Client;
use crate::convert::{Secret, Secs, Text};
use crate::error::{self, invalid};
use crate::runtime;

/// The dashboard for one ASGI app (``tideq.asgi.dashboard`` makes it; not for direct use).
#[pyclass(module = "tideq", name = "_Dashboard", frozen)]
pub struct Dashboard {
    inner: Inner,
}

/// What `handle` resolves to: `(ask, status, headers, body)`; `ask` is `"read"` or `"act"` when
/// the app's hook must decide first (then the rest is empty).
type Answer = (
    Option<&'static str>,
    u16,
    Vec<(String, String)>,
    Cow<'static, [u8]>,
);

fn action(name: &str) -> PyResult<Action> {
    match name {
        "read" => Ok(Action::Read),
        "act" => Ok(Action::Act),
        _ => Err(invalid(format!(
            "an action is \"read\" or \"act\", not {name:?}"
        ))),
    }
}

#[pymethods]
impl Dashboard {
    #[new]
    #[pyo3(signature = (url=None, *, client=None, queues=None, shards=None, refresh=None, read_only=false, allowed_hosts=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        url: Option<Secret>,
        client: Option<Py<Client>>,
        queues: Option<Vec<Text>>,
        shards: Option<usize>,
        refresh: Option<Secs>,
        read_only: bool,
        allowed_hosts: Option<Vec<Text>>,
    ) -> PyResult<Self> {
        let client = Client::for_queue(py, client, url)?.get().inner.clone();
        let mut opts = MountOptions::new()
            .queues(queues.unwrap_or_default().into_iter().map(|t| t.0))
            .read_only(read_only)
            .allowed_hosts(allowed_hosts.unwrap_or_default().into_iter().map(|t| t.0));
        if let Some(n) = shards {
            opts = opts.shards(n);
        }
        if let Some(Secs(s)) = refresh {
            opts = opts.refresh(Duration::try_from_secs_f64(s).map_err(|_| {
                invalid(format!(
                    "refresh must be a positive number of seconds, got {s}"
                ))
            })?);
        }
        let inner = Inner::bridged(client, opts).map_err(error::to_py)?;
        Ok(Dashboard { inner })
    }

    /// Answers one request (a coroutine): ``(ask, status, headers, body)``. ``path`` is the path
    /// under the mount (``""`` for the prefix itself), ``prefix`` the mount as the browser sees
    /// it, ``granted`` the app hook's answers so far (``[("read", True)]``).
    #[pyo3(signature = (method, prefix, path, query, headers, body, granted))]
    #[allow(clippy::too_many_arguments)]
    fn handle<'py>(
        &self,
        py: Python<'py>,
        method: String,
        prefix: String,
        path: String,
        query: Option<String>,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
        granted: Vec<(String, bool)>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let granted = granted
            .into_iter()
            .map(|(a, ok)| action(&a).map(|a| (a, ok)))
            .collect::<PyResult<Vec<_>>>()?;
        let req = BridgeRequest {
            method,
            prefix,
            path,
            query,
            headers: headers
                .into_iter()
                .map(|(k, v)| (k, v.into_bytes()))
                .collect(),
            body,
        };
        let inner = self.inner.clone();
        runtime::awaitable(py, async move {
            let answer: Answer = match inner.handle(req, &granted).await {
                Bridged::Ask(a) => (Some(a.as_str()), 0, Vec::new(), Cow::Borrowed(&[])),
                Bridged::Response {
                    status,
                    headers,
                    body,
                } => (
                    None,
                    status,
                    headers
                        .into_iter()
                        .map(|(k, v)| (k, String::from_utf8_lossy(&v).into_owned()))
                        .collect(),
                    Cow::Owned(body),
                ),
            };
            Ok(answer)
        })
    }
}
