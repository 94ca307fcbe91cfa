//! The test modes (core `testing`), for `tideq.testing` (python/tideq/testing/): a private
//! `_testing_start` that turns fake or inline mode on, and the private `_TestMode` handle the
//! Python module wraps. Recording, draining and running jobs are the core's; here only the
//! conversions: Python handlers to core handlers (as a worker wraps them, [`crate::handler`]),
//! filters from keyword arguments, recorded jobs to dicts.

use pyo3::exceptions::PyAssertionError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};
use tideq::testing::{self, DrainReport, Handlers, JobFilter, RecordedJob};
use tideq::Tasks;

use crate::convert;
use crate::error;
use crate::handler::{self, Calls, Loop};
use crate::runtime::{self, Api};

/// (queue, task name or None for the queue's one handler, `handler(job)`), as
/// `tideq.testing` resolves them (the `@queue.task` registry and the caller's handlers).
type HandlerList = Vec<(String, Option<String>, Py<PyAny>)>;

/// Core handlers of `list`; each call runs as a worker's would, awaitables on `event_loop`.
fn handlers(py: Python<'_>, list: HandlerList, event_loop: Loop) -> PyResult<Handlers> {
    let mut tasks: Vec<(String, Tasks)> = Vec::new();
    let mut out = Handlers::new();
    let calls = Calls::default();
    for (queue, name, func) in list {
        let h = handler::wrap::<tideq::Job>(py, func, event_loop.clone(), calls.clone())?;
        match name {
            None => out = out.raw_boxed(&queue, h),
            Some(name) => match tasks.iter_mut().find(|(q, _)| *q == queue) {
                Some((_, t)) => *t = std::mem::take(t).boxed(&name, h),
                None => tasks.push((queue, Tasks::new().boxed(&name, h))),
            },
        }
    }
    for (queue, t) in tasks {
        out = out.tasks(&queue, t);
    }
    Ok(out)
}

/// Turn test mode ``mode`` (``"fake"`` or ``"inline"``) on; ``tideq.testing`` wraps the handle
/// it returns (a private ``_TestMode``).
#[pyfunction]
#[pyo3(signature = (mode, handlers=None, raise_errors=true))]
pub fn _testing_start(
    py: Python<'_>,
    mode: &str,
    handlers: Option<HandlerList>,
    raise_errors: bool,
) -> PyResult<TestMode> {
    let started = match mode {
        "fake" => testing::fake(),
        "inline" => {
            let h = self::handlers(py, handlers.unwrap_or_default(), Loop::Private)?;
            testing::inline(h, raise_errors)
        }
        other => return Err(error::invalid(format!("unknown test mode {other:?}"))),
    };
    started.map(TestMode).map_err(error::to_py)
}

/// A test mode that is on (or was): `tideq.testing`'s handle on the core's.
#[pyclass(module = "tideq", name = "_TestMode", frozen)]
pub struct TestMode(testing::TestMode);

/// The filter of keyword arguments `kw` (only the keys given filter).
fn filter(kw: Option<&Bound<'_, PyDict>>) -> PyResult<JobFilter> {
    let mut f = JobFilter::default();
    let Some(kw) = kw else {
        return Ok(f);
    };
    for (k, v) in kw.iter() {
        let key: String = k.extract()?;
        match key.as_str() {
            "queue" => f.queue = Some(v.extract()?),
            "task" => f.task = Some(v.extract()?),
            "id" => f.id = Some(v.extract()?),
            "group" => f.group = Some(v.extract()?),
            "priority" => f.priority = Some(v.extract()?),
            "delay_ms" => f.delay = Some(std::time::Duration::from_millis(v.extract()?)),
            "args" => f.args = Some(crate::task::task_data(Some(v), None)?.0),
            other => return Err(error::invalid(format!("unknown filter {other:?}"))),
        }
    }
    Ok(f)
}

/// A recorded job as a dict of `tideq.testing.RecordedJob`'s fields.
fn job_dict<'py>(py: Python<'py>, j: &RecordedJob) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let decoded = |b: &Option<Vec<u8>>| -> PyResult<Option<Bound<'py, PyAny>>> {
        b.as_deref()
            .map(|r| convert::json_or_bytes_value(py, r))
            .transpose()
    };
    d.set_item("id", &j.id)?;
    d.set_item("queue", &j.queue)?;
    d.set_item("task", &j.task)?;
    d.set_item(
        "args",
        j.args
            .as_ref()
            .map(|a| convert::from_value(py, a))
            .transpose()?,
    )?;
    d.set_item("payload", PyBytes::new(py, &j.payload))?;
    d.set_item("delay", j.delay.map(|d| d.as_secs_f64()))?;
    d.set_item("priority", j.priority)?;
    d.set_item("group", &j.group)?;
    d.set_item("max_attempts", j.max_attempts)?;
    d.set_item("state", j.state.as_str())?;
    d.set_item("attempts", j.attempts)?;
    d.set_item("result", decoded(&j.result)?)?;
    d.set_item("progress", decoded(&j.progress)?)?;
    d.set_item("error", &j.error)?;
    d.set_item("errors", PyList::new(py, &j.errors)?)?;
    let logs: Vec<&str> = j.logs.iter().map(|l| l.line.as_str()).collect();
    d.set_item("logs", PyList::new(py, logs)?)?;
    Ok(d)
}

fn job_list<'py>(py: Python<'py>, jobs: &[RecordedJob]) -> PyResult<Bound<'py, PyList>> {
    PyList::new(
        py,
        jobs.iter()
            .map(|j| job_dict(py, j))
            .collect::<PyResult<Vec<_>>>()?,
    )
}

fn report(r: DrainReport) -> (usize, usize, usize, usize) {
    (r.ran, r.completed, r.dead, r.left)
}

#[pymethods]
impl TestMode {
    /// ``"fake"`` or ``"inline"``.
    #[getter]
    fn mode(&self) -> &'static str {
        self.0.mode().as_str()
    }

    /// Whether this mode is the one on.
    #[getter]
    fn is_on(&self) -> bool {
        self.0.is_on()
    }

    /// Turn the mode off (idempotent): queues use Redis again.
    fn stop(&self) {
        self.0.stop()
    }

    /// Replace the mode's own handlers (inline mode runs jobs with them).
    fn set_handlers(&self, py: Python<'_>, handlers: HandlerList) -> PyResult<()> {
        self.0
            .set_handlers(self::handlers(py, handlers, Loop::Private)?);
        Ok(())
    }

    /// Forget every recorded job.
    fn clear(&self) {
        self.0.clear()
    }

    /// The recorded jobs matching the filter, as dicts.
    #[pyo3(signature = (**kw))]
    fn jobs<'py>(
        &self,
        py: Python<'py>,
        kw: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyList>> {
        job_list(py, &self.0.jobs(&filter(kw)?))
    }

    /// The recorded jobs matching the filter not run yet, as dicts.
    #[pyo3(signature = (**kw))]
    fn enqueued<'py>(
        &self,
        py: Python<'py>,
        kw: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyList>> {
        job_list(py, &self.0.enqueued(&filter(kw)?))
    }

    /// The first recorded job matching the filter, as a dict; `AssertionError` otherwise.
    #[pyo3(signature = (**kw))]
    fn assert_enqueued<'py>(
        &self,
        py: Python<'py>,
        kw: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        match self.0.assert_enqueued(&filter(kw)?) {
            Ok(j) => job_dict(py, &j),
            Err(msg) => Err(PyAssertionError::new_err(msg)),
        }
    }

    /// Run the recorded jobs (blocking; awaitables on a private loop per call):
    /// (ran, completed, dead, left).
    fn drain(
        &self,
        py: Python<'_>,
        handlers: HandlerList,
    ) -> PyResult<(usize, usize, usize, usize)> {
        let h = self::handlers(py, handlers, Loop::Private)?;
        let mode = self.0.clone();
        let _in_runtime = runtime::get()?.enter();
        runtime::block_on(py, async move { mode.drain(&h).await.map(report) })
    }

    /// `drain` as an awaitable: `async def` handlers run on the running event loop.
    fn drain_async<'py>(
        &self,
        py: Python<'py>,
        handlers: HandlerList,
    ) -> PyResult<Bound<'py, PyAny>> {
        let event_loop = Loop::of(py, Api::Async, "drain_async() needs a running event loop")?;
        let h = self::handlers(py, handlers, event_loop)?;
        let mode = self.0.clone();
        Api::Async.call(py, async move { mode.drain(&h).await.map(report) })
    }
}
