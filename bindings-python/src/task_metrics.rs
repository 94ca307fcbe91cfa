//! Per-task metrics on `Queue` (core `task_metrics`): `task_metrics` and the value class
//! `TaskMetrics`.

use pyo3::prelude::*;

use crate::convert::{self, Secs};
use crate::jobs::QueueBase;

#[pymethods]
impl QueueBase {
    /// Per task: jobs completed, failed attempts, jobs dead-lettered and handler run times over
    /// the last ``window``, by task name.
    ///
    /// Seconds (or ``timedelta``), from 60 s to 14 days (else ``InvalidArgumentError``); ``None``
    /// (the default): since the queue's workers began counting. Jobs without a task count under
    /// ``""``; a queue tracks its first 100 task names, later ones count under ``"(other)"``.
    /// Counted from the workers' periodic reports (every 15 s at most, and when a worker stops).
    #[pyo3(signature = (window=None), text_signature = "($self, window=None)")]
    fn task_metrics<'py>(
        &self,
        py: Python<'py>,
        window: Option<Secs>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let window = window.map(|w| convert::duration("window", w)).transpose()?;
        let q = self.queue.clone();
        self.api.call(py, async move {
            let m = q.task_metrics(window).await?;
            Ok(m.into_iter().map(TaskMetrics).collect::<Vec<_>>())
        })
    }
}

/// One task's counts over a window, as ``task_metrics()`` lists them.
#[pyclass(module = "tideq", frozen, eq)]
#[derive(PartialEq)]
pub struct TaskMetrics(pub tideq::TaskMetrics);

#[pymethods]
impl TaskMetrics {
    /// The task's name: ``""`` for jobs without one, ``"(other)"`` for names past the 100 tracked.
    #[getter]
    fn task(&self) -> &str {
        &self.0.task
    }
    /// Jobs completed.
    #[getter]
    fn completed(&self) -> u64 {
        self.0.completed
    }
    /// Attempts that failed (retried or dead-lettered).
    #[getter]
    fn failed(&self) -> u64 {
        self.0.failed
    }
    /// Jobs dead-lettered.
    #[getter]
    fn dead_lettered(&self) -> u64 {
        self.0.dead_lettered
    }
    /// Handler runs.
    #[getter]
    fn runs(&self) -> u64 {
        self.0.runs
    }
    /// Their run time, summed (ms).
    #[getter]
    fn run_ms_sum(&self) -> f64 {
        self.0.run_ms_sum
    }
    /// Their mean run time (ms); None without runs.
    #[getter]
    fn run_ms_avg(&self) -> Option<f64> {
        self.0.run_ms_avg
    }
    fn __repr__(&self, py: Python<'_>) -> String {
        let t = &self.0;
        format!(
            "TaskMetrics(task={}, completed={}, failed={}, dead_lettered={}, runs={}, \
             run_ms_sum={:?}, run_ms_avg={})",
            convert::str_repr(py, &t.task),
            t.completed,
            t.failed,
            t.dead_lettered,
            t.runs,
            t.run_ms_sum,
            t.run_ms_avg
                .map_or("None".to_string(), |v| format!("{v:?}"))
        )
    }
}

crate::value::value_class! { TaskMetrics { task, completed, failed, dead_lettered, runs, run_ms_sum, run_ms_avg } }
