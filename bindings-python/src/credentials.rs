//! `Client(credentials_provider=...)`: a Python function asked for the credentials of each new
//! connection (`tideq::Config::with_credentials_provider`). A plain function is called on a
//! blocking thread (it may do I/O); a coroutine function's coroutine is run there on an event loop
//! of its own (`asyncio.run`). It returns `(username, password)` (`username` may be None) or
//! a password alone; what it raises becomes the `AuthError`'s text.

use std::sync::Arc;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyString, PyTuple};
use tideq::{Credentials, CredentialsProvider};

/// The core's provider calling `f`; `TypeError` unless `f` is callable.
pub(crate) fn provider(f: &Bound<'_, PyAny>) -> PyResult<impl CredentialsProvider> {
    if !f.is_callable() {
        return Err(PyTypeError::new_err(format!(
            "credentials_provider must be a function returning (username, password); got {}",
            f.get_type().name()?
        )));
    }
    let f = Arc::new(f.clone().unbind());
    Ok(move || {
        let f = f.clone();
        async move {
            tokio::task::spawn_blocking(move || Python::attach(|py| call(py, &f)))
                .await
                .map_err(|e| format!("the provider did not finish: {e}"))?
        }
    })
}

/// One call of the provider, its coroutine run to completion, its result read.
fn call(py: Python<'_>, f: &Py<PyAny>) -> Result<Credentials, String> {
    let shown = |e: PyErr| e.to_string();
    let mut out = f.bind(py).call0().map_err(shown)?;
    let asyncio = py.import("asyncio").map_err(shown)?;
    if asyncio
        .call_method1("iscoroutine", (&out,))
        .and_then(|b| b.is_truthy())
        .map_err(shown)?
    {
        out = asyncio.call_method1("run", (out,)).map_err(shown)?;
    }
    read(&out)
}

fn read(out: &Bound<'_, PyAny>) -> Result<Credentials, String> {
    if let Ok(password) = out.cast::<PyString>() {
        return Ok(Credentials::password(password.to_string()));
    }
    let bad = || {
        let ty = out
            .get_type()
            .name()
            .map(|n| n.to_string())
            .unwrap_or_default();
        format!("it returned a {ty}; expected (username, password) or a password (str)")
    };
    let pair = out.cast::<PyTuple>().map_err(|_| bad())?;
    if pair.len() != 2 {
        return Err(bad());
    }
    let user = pair.get_item(0).map_err(|_| bad())?;
    let username = if user.is_none() {
        None
    } else {
        Some(user.cast::<PyString>().map_err(|_| bad())?.to_string())
    };
    let password = pair.get_item(1).map_err(|_| bad())?;
    let password = password.cast::<PyString>().map_err(|_| bad())?.to_string();
    Ok(Credentials { username, password })
}
