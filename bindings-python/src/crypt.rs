//! Encryption at rest: `Encryption`, the core's `tideq::Encryption` (a queue's `encryption=`),
//! with a key provider that calls a Python function.

use std::collections::HashMap;

use pyo3::prelude::*;

use crate::error;

/// A queue's encryption at rest (``Queue(..., encryption=...)``, ``CappedQueue(...,
/// encryption=...)``): AES-256-GCM over payloads, results, progress, log lines and error texts
/// (a capped queue's items) before they reach Redis. ``current_key`` is the
/// key id new values are sealed with; ``keys`` maps key ids to 32-byte keys; ``key_provider``
/// (called with a key id, returning its 32 bytes or ``None``) is asked for any other id, once per
/// id (a tenant's keys from a key service). Keep old keys readable while a new one is current to
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
            Box::new(move |id: &str| {
                Python::attach(|py| match f.call1(py, (id,)) {
                    Ok(v) if v.is_none(py) => None,
                    Ok(v) => match v.extract::<Vec<u8>>(py) {
                        Ok(b) => Some(b),
                        Err(e) => {
                            log::error!("tideq: key_provider({id:?}) did not return bytes: {e}");
                            None
                        }
                    },
                    Err(e) => {
                        log::error!("tideq: key_provider({id:?}) raised: {e}");
                        None
                    }
                })
            })
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
