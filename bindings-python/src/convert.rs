//! Python values to core arguments and back: items, durations, counts, batches, MessagePack
//! values, and keyword arguments that keep the core's defaults when not given ([`Opt`],
//! [`set_given!`]).

use std::time::{Duration, Instant};

use pyo3::exceptions::{PyOverflowError, PyTypeError};
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

/// A job's result or progress value as stored: bytes-like values (`bytes`, `bytearray`,
/// `memoryview`) as they are, anything else as compact JSON (`json.dumps`, NaN refused); its
/// error (`TypeError`, `ValueError`) when `json.dumps` refuses the value.
pub fn json_or_bytes(obj: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    if obj.is_instance_of::<PyBytes>()
        || obj.is_instance_of::<PyByteArray>()
        || obj.is_instance_of::<PyMemoryView>()
    {
        return bytes_like("value", obj);
    }
    let py = obj.py();
    let kwargs = PyDict::new(py);
    kwargs.set_item("separators", (",", ":"))?;
    kwargs.set_item("allow_nan", false)?;
    let text = py
        .import("json")?
        .call_method("dumps", (obj,), Some(&kwargs))?;
    Ok(text.extract::<String>()?.into_bytes())
}

/// A stored result or progress value as Python reads it: the JSON value it holds, or the bytes
/// themselves when they are not JSON (a raw result, e.g. from a Rust handler).
pub fn json_or_bytes_value<'py>(py: Python<'py>, bytes: &[u8]) -> PyResult<Bound<'py, PyAny>> {
    let raw = PyBytes::new(py, bytes);
    match std::str::from_utf8(bytes) {
        Ok(text) => match py.import("json")?.call_method1("loads", (text,)) {
            Ok(value) => Ok(value),
            Err(_) => Ok(raw.into_any()),
        },
        Err(_) => Ok(raw.into_any()),
    }
}

/// `what` (`tls_ca`) as PEM bytes: `bytes` are the PEM itself; a `str` or `os.PathLike` is the
/// path of a PEM file, read here (unreadable: `InvalidArgumentError` naming the path). Anything
/// else is a `TypeError`. Whether it is PEM at all is the core's check.
pub fn pem(what: &str, obj: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(b.as_bytes().to_vec());
    }
    if let Ok(s) = obj.cast::<PyString>() {
        if s.to_cow()
            .is_ok_and(|t| t.trim_start().starts_with("-----BEGIN"))
        {
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
        let group: Text = tuple.get_item(0)?.extract()?;
        out.push((group.0, item(&tuple.get_item(1)?)?));
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

/// A page's cursor as Python shows it: `None` or the string's repr.
pub fn cursor_repr(py: Python<'_>, c: &Option<String>) -> String {
    c.as_deref()
        .map_or_else(|| "None".to_string(), |c| str_repr(py, c))
}

/// The name of `obj`'s type, for error messages.
pub fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into())
}

/// Float seconds to a `Duration`; negative, NaN, infinite or too large is
/// `InvalidArgumentError`.
pub fn duration(what: &str, secs: Secs) -> PyResult<Duration> {
    let secs = secs.0;
    Duration::try_from_secs_f64(secs).map_err(|_| {
        invalid(format!(
            "{what} must be a non-negative number of seconds, got {secs}"
        ))
    })
}

pub fn opt_duration(what: &str, secs: Option<Secs>) -> PyResult<Option<Duration>> {
    secs.map(|s| duration(what, s)).transpose()
}

/// A wait's deadline from float seconds: `None` (no deadline) when `timeout` is `None` or too
/// large to be a point in time; negative or NaN is `InvalidArgumentError`.
pub fn deadline(what: &str, timeout: Option<Secs>) -> PyResult<Option<Instant>> {
    let Some(Secs(secs)) = timeout else {
        return Ok(None);
    };
    if secs.is_nan() || secs < 0.0 {
        return Err(invalid(format!(
            "{what} must be a non-negative number of seconds, got {secs}"
        )));
    }
    Ok(Duration::try_from_secs_f64(secs)
        .ok()
        .and_then(|d| Instant::now().checked_add(d)))
}

/// Seconds as an argument: a number (float or int) or a `datetime.timedelta` (its
/// `total_seconds()`). An int too large for a float is kept as an infinity (so the conversion
/// reports it as `InvalidArgumentError`, not `OverflowError`).
#[derive(Clone, Copy)]
pub struct Secs(pub f64);

impl<'a, 'py> FromPyObject<'a, 'py> for Secs {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        match obj.extract::<f64>() {
            Ok(secs) => Ok(Secs(secs)),
            Err(e) if e.is_instance_of::<PyOverflowError>(obj.py()) => {
                let negative = obj.lt(0)?;
                Ok(Secs(if negative {
                    f64::NEG_INFINITY
                } else {
                    f64::INFINITY
                }))
            }
            Err(_) => {
                let timedelta = obj.py().import("datetime")?.getattr("timedelta")?;
                if obj.is_instance(&timedelta)? {
                    return Ok(Secs(obj.call_method0("total_seconds")?.extract()?));
                }
                Err(PyTypeError::new_err(format!(
                    "expected seconds (a number or a datetime.timedelta), not {}",
                    type_name(&obj)
                )))
            }
        }
    }
}

/// An int argument, kept even when it does not fit 64 bits, so the conversion that knows the
/// option's name ([`count`], [`count_u32`]) reports it as `InvalidArgumentError`, not
/// `OverflowError`.
pub struct Int(Result<i64, String>);

impl From<i64> for Int {
    fn from(n: i64) -> Self {
        Int(Ok(n))
    }
}

impl<'a, 'py> FromPyObject<'a, 'py> for Int {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        match obj.extract::<i64>() {
            Ok(n) => Ok(Int(Ok(n))),
            Err(e) if e.is_instance_of::<PyOverflowError>(obj.py()) => Ok(Int(Err(big_int(&obj)))),
            Err(e) => Err(e),
        }
    }
}

/// An int too large for 64 bits as an error message shows it: its digits, or its size when
/// they would be too many to read.
fn big_int(obj: &Bound<'_, PyAny>) -> String {
    let bits: u64 = obj
        .call_method0("bit_length")
        .and_then(|b| b.extract())
        .unwrap_or(0);
    match obj.str() {
        Ok(s) if bits <= 128 => s.to_string(),
        _ => {
            let sign = if obj.lt(0).unwrap_or(false) { "-" } else { "" };
            format!("{sign}an integer of {bits} bits")
        }
    }
}

/// An int argument that has a literal default (`shards=1`), for `#[pyo3(from_py_with)]`: one
/// that does not fit 64 bits is `InvalidArgumentError`, not `OverflowError`.
pub fn int(obj: &Bound<'_, PyAny>) -> PyResult<i64> {
    match Int::extract(obj.as_borrowed())?.0 {
        Ok(n) => Ok(n),
        Err(shown) => Err(invalid(format!(
            "integer out of range: {shown} does not fit 64 bits"
        ))),
    }
}

/// A duration as `repr()` shows it: float seconds, or `None`.
pub fn secs_repr(d: Option<Duration>) -> String {
    d.map_or("None".to_string(), |d| format!("{:?}", d.as_secs_f64()))
}

/// A count from a Python int; negative or too large is `InvalidArgumentError` (zero is left to
/// the core).
/// A `groups_page` count: the core's default when not given.
pub fn page_count(count: Option<Int>) -> PyResult<usize> {
    count.map_or(Ok(tideq::DEFAULT_GROUP_PAGE), |n| self::count("count", n))
}

pub fn count(what: &str, n: impl Into<Int>) -> PyResult<usize> {
    let shown = match n.into().0 {
        Ok(n) => match usize::try_from(n) {
            Ok(n) => return Ok(n),
            Err(_) => n.to_string(),
        },
        Err(shown) => shown,
    };
    Err(invalid(format!(
        "{what} must be a positive integer below 2**64, got {shown}"
    )))
}

/// A count that must fit a `u32` (e.g. `max_attempts`); negative or too large is
/// `InvalidArgumentError` (zero is left to the core).
pub fn count_u32(what: &str, n: impl Into<Int>) -> PyResult<u32> {
    let shown = match n.into().0 {
        Ok(n) => match u32::try_from(n) {
            Ok(n) => return Ok(n),
            Err(_) => n.to_string(),
        },
        Err(shown) => shown,
    };
    Err(invalid(format!(
        "{what} must be a positive integer below 2**32, got {shown}"
    )))
}

/// A count or `None` (no limit), for options where `None` means something.
pub fn opt_count(what: &str, n: Option<Int>) -> PyResult<Option<usize>> {
    n.map(|n| count(what, n)).transpose()
}

/// A name, id or other text argument. A `str` that is not valid UTF-8 (it holds a lone
/// surrogate, as `os.fsdecode` makes of undecodable bytes) is `InvalidArgumentError`, not
/// `UnicodeEncodeError`; the message shows the value (see [`Secret`] for one it must not show).
pub struct Text(pub String);

impl<'a, 'py> FromPyObject<'a, 'py> for Text {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        text(&obj, true).map(Text)
    }
}

/// A URL, user name or password: as [`Text`], but an error never shows the value.
pub struct Secret(pub String);

impl<'a, 'py> FromPyObject<'a, 'py> for Secret {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        text(&obj, false).map(Secret)
    }
}

fn text(obj: &Bound<'_, PyAny>, show: bool) -> PyResult<String> {
    let s = obj.cast::<PyString>()?;
    match s.to_cow() {
        Ok(text) => Ok(text.into_owned()),
        Err(_) if show => {
            let mut shown = s.repr().map(|r| r.to_string()).unwrap_or_default();
            if shown.chars().count() > 80 {
                shown = shown.chars().take(77).collect::<String>() + "...";
            }
            Err(invalid(format!(
                "{shown} is not valid UTF-8 text: it holds a lone surrogate"
            )))
        }
        Err(_) => Err(invalid(
            "a URL, user name or password is not valid UTF-8 text: it holds a lone surrogate",
        )),
    }
}

/// Names (`Vec<Text>`) as the core takes them.
pub fn texts(_what: &str, names: Vec<Text>) -> PyResult<Vec<String>> {
    Ok(names.into_iter().map(|t| t.0).collect())
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
        obj.extract::<Secs>()?.0
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
/// given" needs a value of its own: `Opt::Unset`, the signature's default, which keeps the core's
/// default. pyo3 writes it `...` in the text signature; [`crate::runtime::show_defaults`] puts the
/// core's value in the `__signature__` that `inspect.signature` and `help()` show instead.
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

/// A duration as the float seconds a signature shows (None: no bound).
pub fn secs_value(py: Python<'_>, d: Option<Duration>) -> PyResult<Bound<'_, PyAny>> {
    d.map(|d| d.as_secs_f64()).into_bound_py_any(py)
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
        match (obj.extract::<i64>(), obj.extract::<u64>()) {
            (Ok(i), _) => Ok(i.into()),
            (_, Ok(u)) => Ok(u.into()),
            _ => Err(invalid(format!(
                "integer out of range for MessagePack: {}",
                big_int(obj)
            ))),
        }
    } else if let Ok(f) = obj.cast::<PyFloat>() {
        Ok(Value::F64(f.value()))
    } else if obj.is_instance_of::<PyString>() {
        Ok(text(obj, true)?.as_str().into())
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
