//! What every value class (the read-only results and small values: `JobInfo`, `JobStats`,
//! `Rate`, ...) offers besides its properties and `repr`, written once: [`value_class!`] gives a
//! class `to_dict()`, `__hash__` and pickling; its `__eq__` is pyo3's `eq` (the core value's
//! `PartialEq`).
//!
//! A value class wraps one core value (`.0`), which the core makes serde data: the pickled state
//! is that value as MessagePack, and the hash is the hash of those bytes, so values that compare
//! equal hash alike, and every value class is hashable (a `JobInfo`'s `result` counts by its
//! stored bytes, not by the dict or list it decodes to). `to_dict()` reads the properties the
//! class lists (each property once, in the order of its `repr` and stub).

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::error::invalid;

/// `value_class!(Class { property, ... })` after a value class's `#[pymethods]`: `to_dict()`
/// (the listed properties, which must be all of its properties: `tests/python` checks it),
/// `__hash__`, and `__reduce__` with the hidden `_from_state` it names, for `pickle` and `copy`.
/// The class is a `frozen` tuple struct over a core value that is serde data and `PartialEq`,
/// declared with pyo3's `eq`.
macro_rules! value_class {
    ($class:ident { $($field:ident),+ $(,)? }) => {
        #[pyo3::pymethods]
        impl $class {
            /// The fields as a plain ``dict``, one key per property (value objects in them, or in
            /// a list in them, as dicts too).
            ///
            /// Value objects compare equal when they are of the same class with equal fields, and
            /// then hash alike: every value class is hashable (a stored result or progress counts
            /// by its bytes). They pickle and copy by value.
            fn to_dict<'py>(
                slf: &pyo3::Bound<'py, Self>,
            ) -> pyo3::PyResult<pyo3::Bound<'py, pyo3::types::PyDict>> {
                $crate::value::to_dict(slf.as_any(), &[$(stringify!($field)),+])
            }

            fn __hash__(slf: &pyo3::Bound<'_, Self>) -> pyo3::PyResult<isize> {
                $crate::value::hash(slf.py(), &slf.get().0)
            }

            fn __reduce__<'py>(
                slf: &pyo3::Bound<'py, Self>,
            ) -> pyo3::PyResult<$crate::value::Reduced<'py>> {
                $crate::value::reduce(slf.as_any(), &slf.get().0)
            }

            /// Rebuilds a pickled value (see ``__reduce__``).
            #[classmethod]
            fn _from_state(
                _cls: &pyo3::Bound<'_, pyo3::types::PyType>,
                state: &[u8],
            ) -> pyo3::PyResult<Self> {
                $crate::value::from_state(stringify!($class), state).map($class)
            }
        }
    };
}
pub(crate) use value_class;

/// What `__reduce__` gives `pickle`: the class's `_from_state` and the state.
pub type Reduced<'py> = (Bound<'py, PyAny>, (Bound<'py, PyBytes>,));

/// The properties `fields` of `obj` as a dict; a value object among them, or in a list among
/// them, as its own `to_dict()`.
pub fn to_dict<'py>(obj: &Bound<'py, PyAny>, fields: &[&str]) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(obj.py());
    for field in fields {
        let value = obj.getattr(*field)?;
        let value = if value.is_instance_of::<PyList>() {
            let items = value.try_iter()?.map(|v| plain(v?));
            PyList::new(obj.py(), items.collect::<PyResult<Vec<_>>>()?)?.into_any()
        } else {
            plain(value)?
        };
        dict.set_item(*field, value)?;
    }
    Ok(dict)
}

/// A value object as its `to_dict()`; anything else as it is.
fn plain(value: Bound<'_, PyAny>) -> PyResult<Bound<'_, PyAny>> {
    if value.get_type().hasattr("_from_state")? {
        value.call_method0("to_dict")
    } else {
        Ok(value)
    }
}

/// A core value as the bytes pickling carries and hashing reads (MessagePack, by field name).
fn state<T: Serialize>(value: &T) -> PyResult<Vec<u8>> {
    rmp_serde::to_vec_named(value)
        .map_err(|e| pyo3::exceptions::PyValueError::new_err(format!("cannot encode: {e}")))
}

pub fn hash<T: Serialize>(py: Python<'_>, value: &T) -> PyResult<isize> {
    PyBytes::new(py, &state(value)?).hash()
}

pub fn reduce<'py, T: Serialize>(obj: &Bound<'py, PyAny>, value: &T) -> PyResult<Reduced<'py>> {
    let rebuild = obj.get_type().getattr("_from_state")?;
    Ok((rebuild, (PyBytes::new(obj.py(), &state(value)?),)))
}

/// The core value of a pickled `class` (`InvalidArgumentError` for bytes that are not one).
pub fn from_state<T: DeserializeOwned>(class: &str, state: &[u8]) -> PyResult<T> {
    rmp_serde::from_slice(state)
        .map_err(|e| invalid(format!("not the pickled state of a {class}: {e}")))
}
