//! Python values to core arguments and back: items, durations, counts, batches, MessagePack
//! values, and keyword arguments that keep the core's defaults when not given ([`Opt`],
//! [`set_given!`]).

use std::time::Duration;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{
    PyBool, PyByteArray, PyBytes, PyDict, PyFloat, PyInt, PyList, PyMemoryView, PyString, PyTuple,
};
use pyo3::IntoPyObjectExt;
use tideq::envelope::Value;

use crate::error::invalid;

/// An item as bytes: `bytes`, `bytearray` or `memoryview`; anything else (`str` included) is a
/// `TypeError` naming the type.
pub fn item(obj: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    bytes_like("items", obj)
}

/// `what` (e.g. "payload") as bytes, accepting `bytes`, `bytearray` or `memoryview`; anything
/// else (`str` included) is a `TypeError` naming the type.
pub fn bytes_like(what: &str, obj: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
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
        "{what} must be bytes, bytearray or memoryview, not {}",
        type_name(obj)
    )))
}

/// `what` (`tls_ca`) as PEM bytes: `bytes` are the PEM itself; a `str` or `os.PathLike` is the
/// path of a PEM file, read here (unreadable: `InvalidArgumentError` naming the path). Anything
/// else is a `TypeError`. Whether it is PEM at all is the core's check.
pub fn pem(what: &str, obj: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(b.as_bytes().to_vec());
    }
    if let Ok(s) = obj.cast::<PyString>() {
        if s.to_cow()?.trim_start().starts_with("-----BEGIN") {
            return Err(invalid(format!(
                "{what} as a str is a file path; pass PEM contents as bytes"
            )));
        }
    }
    let path: std::path::PathBuf = obj.extract().map_err(|_| {
        PyTypeError::new_err(format!(
            "{what} must be bytes (PEM) or a file path (str or os.PathLike), not {}",
            type_name(obj)
        ))
    })?;
    std::fs::read(&path).map_err(|e| {
        invalid(format!(
            "{what}: cannot read the CA file {:?}: {e}",
            path.display().to_string()
        ))
    })
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

/// A duration as `repr()` shows it: float seconds, or `None`.
pub fn secs_repr(d: Option<Duration>) -> String {
    d.map_or("None".to_string(), |d| format!("{:?}", d.as_secs_f64()))
}

/// A count from a Python int; negative is `InvalidArgumentError` (zero is left to the core).
pub fn count(what: &str, n: i64) -> PyResult<usize> {
    usize::try_from(n).map_err(|_| invalid(format!("{what} must be a positive integer, got {n}")))
}

/// A count that must fit a `u32` (e.g. `max_attempts`); negative or too large is
/// `InvalidArgumentError` (zero is left to the core).
pub fn count_u32(what: &str, n: i64) -> PyResult<u32> {
    u32::try_from(n).map_err(|_| {
        invalid(format!(
            "{what} must be a positive integer below 2**32, got {n}"
        ))
    })
}

/// Whole milliseconds of a duration (saturating), as the core's wire types take them.
pub fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Milliseconds (Redis clock or epoch) to float seconds, as Python APIs report times.
pub fn secs(ms: u64) -> f64 {
    ms as f64 / 1000.0
}

/// A point in time as milliseconds since the epoch, rounded up (never early): a `datetime`
/// (aware, or naive meaning local time, as `datetime.timestamp()` reads it) or float/int epoch
/// seconds.
pub fn epoch_ms(what: &str, obj: &Bound<'_, PyAny>) -> PyResult<u64> {
    let py = obj.py();
    let datetime = py.import("datetime")?.getattr("datetime")?;
    let secs: f64 = if obj.is_instance(&datetime)? {
        obj.call_method0("timestamp")?.extract()?
    } else if obj.is_instance_of::<PyBool>()
        || !(obj.is_instance_of::<PyFloat>() || obj.is_instance_of::<PyInt>())
    {
        return Err(PyTypeError::new_err(format!(
            "{what} must be a datetime or epoch seconds (float), not {}",
            type_name(obj)
        )));
    } else {
        obj.extract()?
    };
    if !secs.is_finite() || secs < 0.0 {
        return Err(invalid(format!(
            "{what} must be a time after 1970-01-01 UTC, got {secs} epoch seconds"
        )));
    }
    Ok((secs * 1000.0).ceil() as u64)
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

/// A keyword argument whose `None` already means something (`ttl=None`: never expire), so "not
/// given" needs a value of its own: `Opt::Unset`, the signature's default (shown as `...`),
/// which keeps the core's default.
pub enum Opt<T> {
    Unset,
    Given(Option<T>),
}

impl<'a, 'py, T: FromPyObject<'a, 'py>> FromPyObject<'a, 'py> for Opt<T> {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        if obj.is_none() {
            return Ok(Opt::Given(None));
        }
        T::extract(obj)
            .map(|v| Opt::Given(Some(v)))
            .map_err(Into::into)
    }
}

/// A keyword argument that may be left out: an `Option` (None: not given) or an [`Opt`].
pub trait Given {
    type Value;
    fn given(self) -> Option<Self::Value>;
}

impl<T> Given for Option<T> {
    type Value = T;
    fn given(self) -> Option<T> {
        self
    }
}

impl<T> Given for Opt<T> {
    type Value = Option<T>;
    fn given(self) -> Option<Option<T>> {
        match self {
            Opt::Unset => None,
            Opt::Given(v) => Some(v),
        }
    }
}

/// `set_given!(opts, field: convert, ...)`: for each keyword argument given (a variable named
/// like the field, see [`Given`]), `opts.field = convert("field", value)?`, in the order listed.
/// Fields not given keep their value: start from the core's `Default`.
macro_rules! set_given {
    ($opts:ident, $($field:ident: $convert:path),* $(,)?) => {
        $(if let Some(value) = $crate::convert::Given::given($field) {
            $opts.$field = $convert(stringify!($field), value)?;
        })*
    };
}
pub(crate) use set_given;

/// The converter of [`set_given!`] for values taken as they are.
pub fn as_is<T>(_what: &str, value: T) -> PyResult<T> {
    Ok(value)
}

/// A MessagePack value as Python: maps as dicts, arrays as lists, binary as bytes, strings as
/// str (bytes when not UTF-8), integers, floats, booleans, nil as None.
pub fn from_value<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    match value {
        Value::Nil => Ok(py.None().into_bound(py)),
        Value::Boolean(b) => b.into_bound_py_any(py),
        Value::Integer(i) => match i.as_i64() {
            Some(i) => i.into_bound_py_any(py),
            None => i.as_u64().into_bound_py_any(py),
        },
        Value::F32(f) => f.into_bound_py_any(py),
        Value::F64(f) => f.into_bound_py_any(py),
        Value::String(s) => match s.as_str() {
            Some(s) => s.into_bound_py_any(py),
            None => PyBytes::new(py, s.as_bytes()).into_bound_py_any(py),
        },
        Value::Binary(b) => PyBytes::new(py, b).into_bound_py_any(py),
        Value::Array(items) => {
            let items: Vec<_> = items
                .iter()
                .map(|v| from_value(py, v))
                .collect::<PyResult<_>>()?;
            PyList::new(py, items)?.into_bound_py_any(py)
        }
        Value::Map(entries) => {
            let dict = PyDict::new(py);
            for (k, v) in entries {
                dict.set_item(from_value(py, k)?, from_value(py, v)?)?;
            }
            Ok(dict.into_any())
        }
        Value::Ext(..) => Err(invalid("MessagePack extension values are not supported")),
    }
}

/// The reverse of [`from_value`] (tuples as arrays, any bytes-like object as binary);
/// `child` converts what a dict, list or tuple holds, so a caller can add its own types.
pub fn to_value(
    obj: &Bound<'_, PyAny>,
    child: fn(&Bound<'_, PyAny>) -> PyResult<Value>,
) -> PyResult<Value> {
    if obj.is_none() {
        Ok(Value::Nil)
    } else if let Ok(b) = obj.cast::<PyBool>() {
        Ok(Value::Boolean(b.is_true()))
    } else if obj.is_instance_of::<PyInt>() {
        match obj.extract::<i64>() {
            Ok(i) => Ok(i.into()),
            Err(_) => Ok(obj.extract::<u64>()?.into()),
        }
    } else if let Ok(f) = obj.cast::<PyFloat>() {
        Ok(Value::F64(f.value()))
    } else if let Ok(s) = obj.cast::<PyString>() {
        Ok(s.to_cow()?.as_ref().into())
    } else if let Ok(d) = obj.cast::<PyDict>() {
        let entries = d.iter().map(|(k, v)| Ok((child(&k)?, child(&v)?)));
        Ok(Value::Map(entries.collect::<PyResult<_>>()?))
    } else if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
        let items = obj.try_iter()?.map(|v| child(&v?));
        Ok(Value::Array(items.collect::<PyResult<_>>()?))
    } else {
        bytes_like("a MessagePack value", obj)
            .map(Value::Binary)
            .map_err(|_| {
                PyTypeError::new_err(format!(
                    "{} cannot be converted to MessagePack",
                    type_name(obj)
                ))
            })
    }
}
