//! Trace context across the queue, the Python side (core `otel`): `trace=` on enqueue (a
//! `dict[str, str]` of W3C Trace Context headers, checked by the core) and `Job.trace`, plus the
//! two hooks `tideq/_otel.py` registers when OpenTelemetry is installed
//! (`_set_otel_hooks(inject, wrap)`):
//! - `inject()`, called on every enqueue that gives no `trace` (once per `enqueue_many`): the
//!   caller's current span's context as `{"traceparent": ..., "tracestate": ...}`, or None;
//! - `wrap(handler, queue_name)`, called once per handler when a worker starts (`work`, `run`,
//!   `work_tasks`, `run_tasks`; not batch handlers): the handler to run instead, inside a
//!   consumer span that continues the job's trace.
//!
//! The core's own `opentelemetry` feature (Rust `tracing` spans) is not used here: Python
//! services trace with the Python OpenTelemetry API, whose context (contextvars) and SDK are the
//! ones their other spans use. Without the hooks (OpenTelemetry not installed) nothing here
//! calls into Python: a lock-free check of an empty slot per enqueue.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::RwLock;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyMapping, PyString};
use tideq::TraceContext;

use crate::convert::{self, Text};

/// The registered hooks (see the module doc).
struct Hooks {
    inject: Py<PyAny>,
    wrap: Py<PyAny>,
}

/// Whether [`HOOKS`] holds hooks: the one load an enqueue pays when none are registered.
static REGISTERED: AtomicBool = AtomicBool::new(false);
static HOOKS: RwLock<Option<Hooks>> = RwLock::new(None);

/// Register the OpenTelemetry hooks (``tideq._otel`` does, on import), or remove them (both
/// None). ``inject()`` returns the current span's W3C headers (or None) for enqueues that give no
/// ``trace``; ``wrap(handler, queue_name)`` returns the handler a worker runs instead of
/// ``handler``.
#[pyfunction]
#[pyo3(signature = (inject, wrap))]
pub fn _set_otel_hooks(
    py: Python<'_>,
    inject: Option<Py<PyAny>>,
    wrap: Option<Py<PyAny>>,
) -> PyResult<()> {
    let hooks = match (inject, wrap) {
        (Some(inject), Some(wrap)) => {
            if !(inject.bind(py).is_callable() && wrap.bind(py).is_callable()) {
                return Err(PyTypeError::new_err(
                    "the OpenTelemetry hooks must be callable",
                ));
            }
            Some(Hooks { inject, wrap })
        }
        (None, None) => None,
        _ => {
            return Err(PyTypeError::new_err(
                "give both OpenTelemetry hooks (inject, wrap), or neither (None, None)",
            ))
        }
    };
    let mut slot = HOOKS.write().unwrap_or_else(|e| e.into_inner());
    REGISTERED.store(hooks.is_some(), Ordering::SeqCst);
    // The old hooks are dropped with the GIL held (the caller's).
    *slot = hooks;
    Ok(())
}

/// A hook, when registered.
fn hook(py: Python<'_>, which: impl Fn(&Hooks) -> &Py<PyAny>) -> Option<Py<PyAny>> {
    if !REGISTERED.load(Ordering::Relaxed) {
        return None;
    }
    let slot = HOOKS.read().unwrap_or_else(|e| e.into_inner());
    slot.as_ref().map(|h| which(h).clone_ref(py))
}

/// The trace context of the caller's current span, for an enqueue that gives none: what the
/// `inject` hook returns, if it is a context the envelope may carry. None without hooks, without
/// a current span, and when the hook fails (reported as unraisable: tracing never fails an
/// enqueue).
pub fn current(py: Python<'_>) -> Option<TraceContext> {
    let inject = hook(py, |h| &h.inject)?;
    let res = inject.bind(py).call0().and_then(|carrier| {
        if carrier.is_none() {
            return Ok(None);
        }
        Ok(Some(context(&carrier)?))
    });
    match res {
        Ok(t) => t.filter(|t| tideq::envelope::validate_trace_context(t).is_ok()),
        Err(e) => {
            e.write_unraisable(py, Some(inject.bind(py)));
            None
        }
    }
}

/// `handler` as a worker runs it: wrapped by the `wrap` hook (its consumer span), or as it is
/// without hooks. A handler that is not callable is left as it is, for the worker's own error.
pub fn wrap(py: Python<'_>, handler: Py<PyAny>, queue: &str) -> PyResult<Py<PyAny>> {
    match hook(py, |h| &h.wrap) {
        Some(wrap) if handler.bind(py).is_callable() => {
            Ok(wrap.bind(py).call1((handler, queue))?.unbind())
        }
        _ => Ok(handler),
    }
}

/// `trace=`: a mapping of str to str (the W3C headers; which keys and values are acceptable is
/// the core's check, `InvalidArgumentError`); anything else is a `TypeError`.
pub fn context(obj: &Bound<'_, PyAny>) -> PyResult<TraceContext> {
    let wrong = |what: String| {
        PyTypeError::new_err(format!(
            "trace must be a dict of str to str (the W3C traceparent and tracestate headers), \
             not {what}"
        ))
    };
    let mapping = obj
        .cast::<PyMapping>()
        .map_err(|_| wrong(convert::type_name(obj)))?;
    let mut out = TraceContext::new();
    for item in mapping.items()?.try_iter()? {
        let (key, value): (Bound<'_, PyAny>, Bound<'_, PyAny>) = item?.extract()?;
        for v in [&key, &value] {
            if !v.is_instance_of::<PyString>() {
                return Err(wrong(format!("one holding {}", convert::type_name(v))));
            }
        }
        out.insert(key.extract::<Text>()?.0, value.extract::<Text>()?.0);
    }
    Ok(out)
}
