//! Shared limiters (core `limiter`): the hidden `_Limiter` and `_LimitSlot` that
//! `tideq/_limiter.py` wraps as `Limiter`, `AsyncLimiter`, their slots and `OverLimit` (a
//! `Snooze`, so a handler that lets it propagate snoozes its job). Each method takes the mode
//! (`asyncio`): blocking, it waits; asyncio, it returns a coroutine. Every check is the core's.

use std::sync::{Arc, Mutex};

use pyo3::prelude::*;
use pyo3::IntoPyObjectExt;

use crate::client::Client;
use crate::convert::{self, Int, Secs, Text};
use crate::runtime::Api;

fn api(asyncio: bool) -> Api {
    if asyncio {
        Api::Async
    } else {
        Api::Blocking
    }
}

/// The shared limiters of a client (``tideq.Limiter`` and ``tideq.AsyncLimiter`` wrap it; not
/// for direct use).
#[pyclass(module = "tideq", name = "_Limiter", frozen)]
pub struct LimiterBase {
    inner: tideq::Limiter,
}

/// What an acquire took (``tideq.LimitSlot`` wraps it; not for direct use).
#[pyclass(module = "tideq", name = "_LimitSlot", frozen)]
pub struct LimitSlot {
    guard: Arc<Mutex<Option<tideq::LimitGuard>>>,
}

/// An acquire's answer: a slot, or the seconds until the limiter may have room.
enum Acquired {
    Slot(LimitSlot),
    Over(f64),
}

impl<'py> IntoPyObject<'py> for Acquired {
    type Target = PyAny;
    type Output = Bound<'py, PyAny>;
    type Error = PyErr;

    fn into_pyobject(self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        match self {
            Acquired::Slot(s) => s.into_bound_py_any(py),
            Acquired::Over(secs) => secs.into_bound_py_any(py),
        }
    }
}

#[pymethods]
impl LimiterBase {
    #[new]
    fn new(client: PyRef<'_, Client>) -> Self {
        LimiterBase {
            inner: client.inner.limiter(),
        }
    }

    /// Defines a concurrency limiter.
    fn concurrent<'py>(
        &self,
        py: Python<'py>,
        name: Text,
        n: Int,
        lease: Secs,
        asyncio: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let n = convert::count("n", n)? as u64;
        let lease = convert::duration("lease", lease)?;
        let l = self.inner.clone();
        api(asyncio).call(py, async move { l.concurrent(&name.0, n, lease).await })
    }

    /// Defines a window limiter.
    fn window<'py>(
        &self,
        py: Python<'py>,
        name: Text,
        n: Int,
        per: Secs,
        asyncio: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let n = convert::count("n", n)? as u64;
        let per = convert::duration("per", per)?;
        let l = self.inner.clone();
        api(asyncio).call(py, async move { l.window(&name.0, n, per).await })
    }

    /// Defines a token bucket.
    fn bucket<'py>(
        &self,
        py: Python<'py>,
        name: Text,
        capacity: Int,
        refill: f64,
        asyncio: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let capacity = convert::count("capacity", capacity)? as u64;
        let l = self.inner.clone();
        api(asyncio).call(py, async move { l.bucket(&name.0, capacity, refill).await })
    }

    /// Takes from a limiter: a slot, or the seconds until it may have room.
    fn acquire<'py>(
        &self,
        py: Python<'py>,
        name: Text,
        cost: Int,
        asyncio: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let cost = convert::count("cost", cost)? as u64;
        let l = self.inner.clone();
        api(asyncio).call(py, async move {
            match l.acquire_cost(&name.0, cost).await {
                Ok(guard) => Ok(Acquired::Slot(LimitSlot {
                    guard: Arc::new(Mutex::new(Some(guard))),
                })),
                Err(tideq::LimitError::Over(o)) => Ok(Acquired::Over(o.retry_after.as_secs_f64())),
                Err(tideq::LimitError::Failed(e)) => Err(e),
            }
        })
    }
}

#[pymethods]
impl LimitSlot {
    /// Gives the slot back; true when it was still held.
    fn release<'py>(&self, py: Python<'py>, asyncio: bool) -> PyResult<Bound<'py, PyAny>> {
        let guard = self.guard.lock().unwrap().take();
        api(asyncio).call(py, async move {
            match guard {
                Some(g) => g.release().await,
                None => Ok(true),
            }
        })
    }

    /// Holds the slot for `lease` from now; true when it was still held.
    fn extend<'py>(
        &self,
        py: Python<'py>,
        lease: Secs,
        asyncio: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let lease = convert::duration("lease", lease)?;
        let guard = self.guard.clone();
        api(asyncio).call(py, async move {
            let g = guard.lock().unwrap().take();
            let Some(mut g) = g else {
                return Ok(false);
            };
            let r = g.extend(lease).await;
            *guard.lock().unwrap() = Some(g);
            r
        })
    }

    /// When the slot is given back unless released or extended (Unix seconds, Redis clock).
    #[getter]
    fn lease_deadline(&self) -> Option<f64> {
        let g = self.guard.lock().unwrap();
        g.as_ref()
            .and_then(|g| g.lease_deadline_ms())
            .map(|ms| ms as f64 / 1000.0)
    }
}

/// Adds `_Limiter` and `_LimitSlot` to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<LimiterBase>()?;
    m.add_class::<LimitSlot>()
}
