//! Python values to core arguments and back: items, durations, counts, batches.

use std::time::Duration;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyList, PyMemoryView, PyTuple};

use crate::errors::invalid;

/// An item as bytes: `bytes`, `bytearray` or `memoryview`; anything else (`str` included) is a
/// `TypeError` naming the type.
pub fn item(obj: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(b.as_bytes().to_vec());
    }
    if let Ok(b) = obj.cast::<PyByteArray>() {
        return Ok(b.to_vec());
    }
    if obj.is_instance_of::<PyMemoryView>() {
        // The buffer protocol is not in the 3.9 stable ABI; `tobytes()` is.
        let b = obj.call_method0("tobytes")?;
        return Ok(b.cast::<PyBytes>()?.as_bytes().to_vec());
    }
    Err(PyTypeError::new_err(format!(
        "items must be bytes, bytearray or memoryview, not {}",
        type_name(obj)
    )))
}

/// `(group, item)` pairs from any iterable of 2-tuples; every pair is converted before anything is
/// sent, so a bad pair means nothing is written.
pub fn pairs(obj: &Bound<'_, PyAny>) -> PyResult<Vec<(String, Vec<u8>)>> {
    let mut out = Vec::with_capacity(obj.len().unwrap_or(0));
    for pair in obj.try_iter()? {
        let pair = pair?;
        let tuple = pair
            .cast::<PyTuple>()
            .ok()
            .filter(|t| t.len() == 2)
            .ok_or_else(|| {
                PyTypeError::new_err(format!(
                    "push_many expects (group, item) tuples, not {}",
                    type_name(&pair)
                ))
            })?;
        let group: String = tuple.get_item(0)?.extract()?;
        out.push((group, item(&tuple.get_item(1)?)?));
    }
    Ok(out)
}

/// `repr()` of a str, for `__repr__` methods.
pub fn str_repr(py: Python<'_>, s: &str) -> String {
    pyo3::types::PyString::new(py, s)
        .repr()
        .map(|r| r.to_string())
        .unwrap_or_else(|_| format!("{s:?}"))
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into())
}

/// Float seconds to a `Duration`; negative, NaN or infinite is `InvalidArgumentError`.
pub fn duration(what: &str, secs: f64) -> PyResult<Duration> {
    Duration::try_from_secs_f64(secs).map_err(|_| {
        invalid(format!(
            "{what} must be a non-negative number of seconds, got {secs}"
        ))
    })
}

pub fn opt_duration(what: &str, secs: Option<f64>) -> PyResult<Option<Duration>> {
    secs.map(|s| duration(what, s)).transpose()
}

/// A count from a Python int; negative is `InvalidArgumentError` (zero is left to the core).
pub fn count(what: &str, n: i64) -> PyResult<usize> {
    usize::try_from(n).map_err(|_| invalid(format!("{what} must be a positive integer, got {n}")))
}

/// A batch of items, converted to `list[bytes]`.
pub struct Items(pub Vec<Vec<u8>>);

impl<'py> IntoPyObject<'py> for Items {
    type Target = PyList;
    type Output = Bound<'py, PyList>;
    type Error = PyErr;

    fn into_pyobject(self, py: Python<'py>) -> PyResult<Self::Output> {
        PyList::new(py, self.0.iter().map(|b| PyBytes::new(py, b)))
    }
}
