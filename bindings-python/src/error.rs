//! The exception hierarchy: `TideqError(Exception)` with a `.code` attribute, and one subclass
//! per core error code. The `match` in [`class_of`] is the whole table: a new core code is one
//! more line there.

use pyo3::exceptions::{PyConnectionError, PyLookupError, PyTimeoutError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple, PyType};
use tideq::{Error, ErrorKind};

/// A builtin exception a class also derives from, so `except ValueError:` keeps working.
#[derive(Clone, Copy)]
enum Also {
    Nothing,
    ValueError,
    ConnectionError,
    LookupError,
    TimeoutError,
}

/// Python class name, extra builtin base and docstring for each core error kind.
#[rustfmt::skip]
fn class_of(kind: ErrorKind) -> Option<(&'static str, Also, &'static str)> {
    Some(match kind {
        ErrorKind::InvalidArgument => ("InvalidArgumentError", Also::ValueError, "A name, option or item was rejected; nothing was sent to Redis."),
        ErrorKind::PayloadTooLarge => ("PayloadTooLargeError", Also::ValueError, "An item is larger than the client's ``max_payload``; nothing was written."),
        ErrorKind::Connection => ("ConnectionError", Also::ConnectionError, "Redis could not be reached (refused, timed out, connection dropped)."),
        ErrorKind::Auth => ("AuthError", Also::Nothing, "Redis refused the user name or password, or needs one and none was given. Retrying cannot\nfix it: workers and consumers stop on it (``join()`` raises it)."),
        ErrorKind::Permission => ("PermissionDeniedError", Also::Nothing, "The Redis (ACL) user may not run a command tideq needs, or touch a key (the message names\nit). Retrying cannot fix it: workers and consumers stop on it (``join()`` raises it)."),
        ErrorKind::OutOfMemory => ("OutOfMemoryError", Also::Nothing, "Redis is at ``maxmemory`` with the ``noeviction`` policy and refuses writes; reads (``get``,\n``dead_letters``, ``stats``) still work."),
        ErrorKind::NotRedis => ("NotRedisError", Also::Nothing, "The server at the address did not answer as Redis does."),
        ErrorKind::EvictionPolicy => ("EvictionPolicyError", Also::Nothing, "Redis may evict keys (its ``maxmemory-policy`` is not ``noeviction``) and the client was\ncreated with ``eviction_check=\"refuse\"``."),
        ErrorKind::Redis => ("RedisError", Also::Nothing, "Redis answered with an error (including a script error)."),
        ErrorKind::Forked => ("ForkedError", Also::Nothing, "Used in a process forked after tideq started: create tideq objects after forking."),
        ErrorKind::Closed => ("ClosedError", Also::Nothing, "The consumer or worker was already stopped."),
        ErrorKind::JobNotFound => ("JobNotFoundError", Also::LookupError, "No job with that id (or it is no longer retained); for requeue, no dead job with that id."),
        ErrorKind::JobNotCancellable => ("JobNotCancellableError", Also::Nothing, "The job is active, dead or completed; only delayed or ready jobs can be cancelled."),
        ErrorKind::JobWrongState => ("JobWrongStateError", Also::Nothing, "The job is not in a state the operation applies to (``promote`` needs a delayed job,\n``delete`` a dead or completed one); the message names its state."),
        ErrorKind::LeaseLost => ("LeaseLostError", Also::Nothing, "The job's lease expired and it was redelivered: this worker may no longer settle it."),
        ErrorKind::NotReplicated => ("NotReplicatedError", Also::Nothing, "The enqueue reached the primary but fewer replicas than ``replica_ack`` asks confirmed it\nin time; the job exists, so enqueuing again with the same id is safe."),
        ErrorKind::JobFailed => ("JobFailedError", Also::Nothing, "The job waited for went to the dead letters (the message holds its last error) or was\ncancelled."),
        ErrorKind::Timeout => ("TimeoutError", Also::TimeoutError, "A wait ran out of time before the job finished; nothing was changed. Also a builtin\n``TimeoutError``."),
        ErrorKind::NotSupported => ("NotSupportedError", Also::Nothing, "The server is older than tideq supports (Redis 7.0, Valkey 7.2); the message names its\nversion."),
        _ => return None,
    })
}

struct Classes {
    base: Py<PyType>,
    by_kind: Vec<(ErrorKind, Py<PyType>)>,
}

static CLASSES: PyOnceLock<Classes> = PyOnceLock::new();

fn classes(py: Python<'_>) -> PyResult<&Classes> {
    CLASSES.get_or_try_init(py, || {
        let make = |name: &str, bases: Bound<'_, PyTuple>, code: Option<&str>, doc: &str| -> PyResult<Py<PyType>> {
            let ns = PyDict::new(py);
            ns.set_item("__module__", "tideq")?;
            ns.set_item("__doc__", doc)?;
            if let Some(code) = code {
                ns.set_item("code", code)?;
            }
            let cls = py.get_type::<PyType>().call1((name, bases, ns))?;
            Ok(cls.cast_into::<PyType>()?.unbind())
        };
        let exception = py.get_type::<pyo3::exceptions::PyException>();
        let base = make(
            "TideqError",
            PyTuple::new(py, [exception])?,
            None,
            "Base class of every tideq error.\n\n``code`` is the stable core error code (e.g. \"CONNECTION\").",
        )?;
        let mut by_kind = Vec::new();
        for &kind in ErrorKind::ALL {
            let Some((name, also, doc)) = class_of(kind) else { continue };
            let tideq_error = base.bind(py).clone().into_any();
            let bases = match also {
                Also::Nothing => PyTuple::new(py, [tideq_error])?,
                Also::ValueError => PyTuple::new(py, [tideq_error, py.get_type::<PyValueError>().into_any()])?,
                Also::ConnectionError => {
                    PyTuple::new(py, [tideq_error, py.get_type::<PyConnectionError>().into_any()])?
                }
                Also::LookupError => {
                    PyTuple::new(py, [tideq_error, py.get_type::<PyLookupError>().into_any()])?
                }
                Also::TimeoutError => {
                    PyTuple::new(py, [tideq_error, py.get_type::<PyTimeoutError>().into_any()])?
                }
            };
            by_kind.push((kind, make(name, bases, Some(kind.code()), doc)?));
        }
        Ok(Classes { base, by_kind })
    })
}

/// Adds `TideqError` and its subclasses to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    let classes = classes(py)?;
    m.add("TideqError", classes.base.bind(py))?;
    for (_, cls) in &classes.by_kind {
        let cls = cls.bind(py);
        m.add(cls.name()?, cls)?;
    }
    Ok(())
}

/// The Python exception for a core error: its class by kind, `str()` the message, `.code` set.
pub fn to_py(err: Error) -> PyErr {
    Python::attach(|py| {
        let build = || -> PyResult<PyErr> {
            let classes = classes(py)?;
            let cls = classes
                .by_kind
                .iter()
                .find(|(k, _)| *k == err.kind())
                .map_or(&classes.base, |(_, c)| c);
            let exc = cls.bind(py).call1((err.message(),))?;
            exc.setattr("code", err.code())?;
            Ok(PyErr::from_value(exc))
        };
        build().unwrap_or_else(|e| e)
    })
}

/// `InvalidArgumentError` raised by the binding itself (a conversion the core never sees).
pub fn invalid(message: impl Into<String>) -> PyErr {
    to_py(Error::new(ErrorKind::InvalidArgument, message))
}
