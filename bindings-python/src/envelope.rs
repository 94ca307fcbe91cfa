//! `decode_envelope`/`encode_envelope` over the core's `Envelope` (core `envelope`): the
//! envelope crosses as its MessagePack value (`Envelope::to_value`/`from_value`), converted
//! generically, so the schema (field names, types, defaults, checks) is the core's alone.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use tideq::envelope::Value;
use tideq::Envelope;

use crate::convert;
use crate::error::{self, invalid};
use crate::job::Backoff;

/// The fields of a job envelope (wire format v1): ``v``, ``id``, ``payload`` (bytes),
/// ``created_at``, ``max_attempts``, ``backoff`` (``kind``, ``base_ms``, ``max_ms``, ``jitter``),
/// ``timeout_ms``, and when set ``task``, ``format`` and ``trace`` (a dict of W3C Trace Context
/// headers); fields of later versions are left out. ``InvalidArgumentError`` for bytes that are
/// not an envelope this build reads.
#[pyfunction]
pub fn decode_envelope<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let env = Envelope::decode(&convert::bytes_like("data", data)?).map_err(error::to_py)?;
    convert::from_value(py, &env.to_value())
}

/// The envelope bytes for ``fields`` (as ``decode_envelope`` returns them; ``v`` defaults to
/// the current version, ``timeout_ms`` to None; ``backoff`` may also be a ``Backoff``). Unknown
/// or missing fields and values of the wrong type raise ``InvalidArgumentError``.
#[pyfunction]
pub fn encode_envelope<'py>(
    py: Python<'py>,
    fields: &Bound<'py, PyDict>,
) -> PyResult<Bound<'py, PyBytes>> {
    let env = Envelope::from_value(to_value(fields.as_any())?).map_err(|e| {
        // serde names a missing field "missing field `id`"; say it in this API's words.
        let missing = e.message().split_once("missing field `");
        match missing.and_then(|(_, rest)| rest.split_once('`')) {
            Some((name, _)) => invalid(format!(
                "envelope field {} is missing",
                convert::str_repr(py, name)
            )),
            None => error::to_py(e),
        }
    })?;
    Ok(PyBytes::new(py, &env.encode()))
}

/// [`convert::to_value`], with a `tideq.Backoff` anywhere as the envelope's backoff map.
fn to_value(obj: &Bound<'_, PyAny>) -> PyResult<Value> {
    let Ok(backoff) = obj.cast::<Backoff>() else {
        return convert::to_value(obj, to_value);
    };
    let b = backoff.get().0;
    let [kind, base_ms, max_ms, jitter] = tideq::Backoff::FIELDS;
    Ok(Value::Map(vec![
        (kind.into(), b.kind.as_str().into()),
        (base_ms.into(), b.base_ms.into()),
        (max_ms.into(), b.max_ms.into()),
        (jitter.into(), b.jitter.into()),
    ]))
}
