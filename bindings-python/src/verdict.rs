//! The exceptions a job handler raises to ask for something else than a failure (`Snooze`,
//! `BackOff`, `DontRetry`, defined in `tideq/_outcomes.py`) as the core's `tideq::Snooze`,
//! `tideq::BackOff` and `tideq::DontRetry`.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;

use crate::convert::{self, Secs};

/// `tideq._outcomes`' `Snooze`, `BackOff`, `DontRetry`.
static CLASSES: PyOnceLock<[Py<PyType>; 3]> = PyOnceLock::new();

fn classes(py: Python<'_>) -> PyResult<&[Py<PyType>; 3]> {
    CLASSES.get_or_try_init(py, || {
        let m = py.import("tideq._outcomes")?;
        let get = |name: &str| -> PyResult<Py<PyType>> {
            Ok(m.getattr(name)?.cast_into::<PyType>()?.unbind())
        };
        Ok([get("Snooze")?, get("BackOff")?, get("DontRetry")?])
    })
}

/// What a job handler's exception asks of the core, if it is one of these: `None` for any other
/// exception. `failed` logs a `DontRetry` and gives its text.
pub fn outcome(
    py: Python<'_>,
    err: &PyErr,
    failed: impl FnOnce() -> String,
) -> Option<tideq::HandlerError> {
    let [snooze, back_off, dont_retry] = classes(py).ok()?;
    let value = err.value(py);
    let delay = || -> Option<std::time::Duration> {
        convert::duration(
            "delay",
            value.getattr("delay").ok()?.extract::<Secs>().ok()?,
        )
        .ok()
    };
    if value.is_instance(snooze.bind(py)).unwrap_or(false) {
        return Some(Box::new(tideq::Snooze::new(delay()?)));
    }
    if value.is_instance(back_off.bind(py)).unwrap_or(false) {
        let group = value.getattr("group").and_then(|g| g.is_truthy()).ok()?;
        let delay = delay()?;
        return Some(Box::new(if group {
            tideq::BackOff::group(delay)
        } else {
            tideq::BackOff::queue(delay)
        }));
    }
    if value.is_instance(dont_retry.bind(py)).unwrap_or(false) {
        return Some(Box::new(tideq::DontRetry::new(failed())));
    }
    None
}
