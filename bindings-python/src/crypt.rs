//! Encryption at rest: `Encryption`, the core's `tideq::Encryption` (a queue's `encryption=`),
//! with a key provider that calls a Python function.

use std::collections::HashMap;

use pyo3::prelude::*;

use crate::error;

/// A queue's encryption at rest (``Queue(..., encryption=...)``, ``CappedQueue(...,
/// encryption=...)``): AES-256-GCM over payloads, results, progress, log lines and error texts
/// (a capped queue's items) before they reach Redis. ``current_key`` is the
/// key id new values are sealed with; ``keys`` maps key ids to 32-byte keys; ``key_provider``
/// (called with a key id, returning its 32 bytes or ``None``; an ``async def`` is run to its end
/// on an event loop of its own) is asked for any other id, once per id (a tenant's keys from a
/// key service). Keep old keys readable while a new one is current to
/// rotate without downtime. A bad key raises ``InvalidArgumentError`` here, before anything is
/// written.
#[pyclass(module = "tideq", frozen)]
pub struct Encryption(pub tideq::Encryption);

#[pymethods]
impl Encryption {
    #[new]
    #[pyo3(signature = (current_key, keys=None, key_provider=None), text_signature = "(current_key, keys=None, key_provider=None)")]
    fn new(
        current_key: &str,
        keys: Option<HashMap<String, Vec<u8>>>,
        key_provider: Option<Py<PyAny>>,
    ) -> PyResult<Self> {
        let provider = key_provider.map(|f| -> Box<tideq::crypt::KeyProvider> {
            Box::new(move |id: &str| Python::attach(|py| provide(py, &f, id)))
        });
        tideq::Encryption::new(current_key, keys.unwrap_or_default(), provider)
            .map(Encryption)
            .map_err(error::to_py)
    }

    /// The key id new values are sealed with.
    #[getter]
    fn current_key(&self) -> String {
        self.0.current_key().to_string()
    }

    fn __repr__(&self) -> String {
        format!("Encryption(current_key={:?})", self.0.current_key())
    }
}

/// One answer of the provider: its bytes, `None` (logged when it raised or gave no bytes). A
/// coroutine is run to its end with `asyncio.run` on a thread of its own, so the caller's event
/// loop, if this thread runs one, is neither needed nor blocked by a nested loop.
fn provide(py: Python<'_>, f: &Py<PyAny>, id: &str) -> Option<Vec<u8>> {
    let shown = |what: &str, e: PyErr| {
        log::error!("tideq: key_provider({id:?}) {what}: {e}");
        None
    };
    let mut out = match f.call1(py, (id,)) {
        Ok(v) => v,
        Err(e) => return shown("raised", e),
    };
    let asyncio = match py.import("asyncio") {
        Ok(m) => m,
        Err(e) => return shown("could not be awaited", e),
    };
    let is_coro = asyncio
        .call_method1("iscoroutine", (&out,))
        .and_then(|b| b.is_truthy())
        .unwrap_or(false);
    if is_coro {
        let coro = out;
        let ran = py.detach(move || {
            std::thread::spawn(move || {
                Python::attach(|py| {
                    py.import("asyncio")
                        .and_then(|a| a.call_method1("run", (coro,)))
                        .map(|v| v.unbind())
                })
            })
            .join()
        });
        out = match ran {
            Ok(Ok(v)) => v,
            Ok(Err(e)) => return shown("raised", e),
            Err(_) => {
                log::error!("tideq: key_provider({id:?}) did not finish");
                return None;
            }
        };
    }
    if out.is_none(py) {
        return None;
    }
    match out.extract::<Vec<u8>>(py) {
        Ok(b) => Some(b),
        Err(e) => shown("did not return bytes", e),
    }
}
