//! The queue's history on `Queue` (core `history`): `history` and the value class `HistoryPoint`.

use pyo3::prelude::*;

use crate::convert::{self, Secs};
use crate::jobs::QueueBase;

#[pymethods]
impl QueueBase {
    /// What the queue did in each ``step`` of the last ``window``, oldest first.
    ///
    /// Seconds (or ``timedelta``): ``step`` a whole number of minutes, ``window`` at least
    /// ``step`` and at most 14 days (else ``InvalidArgumentError``). The workers' reports leave a
    /// snapshot of the queue's totals in Redis once a minute, kept 14 days, so every reader sees
    /// the same history. Steps are aligned on multiples of ``step`` (UTC, the Redis clock); the
    /// last is the step under way, counted up to now. Minutes without any worker running are
    /// spread evenly over the gap once one reports again.
    #[pyo3(
        signature = (window=Secs(3600.0), step=Secs(60.0)),
        text_signature = "($self, window=3600.0, step=60.0)"
    )]
    fn history<'py>(
        &self,
        py: Python<'py>,
        window: Secs,
        step: Secs,
    ) -> PyResult<Bound<'py, PyAny>> {
        let window = convert::duration("window", window)?;
        let step = convert::duration("step", step)?;
        let q = self.queue.clone();
        self.api.call(py, async move {
            let points = q.history(window, step).await?;
            Ok(points.into_iter().map(HistoryPoint).collect::<Vec<_>>())
        })
    }
}

/// One step of a queue's history, as ``history()`` lists it.
#[pyclass(module = "tideq", frozen, eq)]
#[derive(PartialEq)]
pub struct HistoryPoint(pub tideq::HistoryPoint);

#[pymethods]
impl HistoryPoint {
    /// The start of the step, epoch milliseconds by the Redis clock (UTC).
    #[getter]
    fn at_ms(&self) -> u64 {
        self.0.at_ms
    }
    /// Jobs enqueued.
    #[getter]
    fn enqueued(&self) -> u64 {
        self.0.enqueued
    }
    /// Jobs completed.
    #[getter]
    fn completed(&self) -> u64 {
        self.0.completed
    }
    /// Failed attempts that were retried.
    #[getter]
    fn retried(&self) -> u64 {
        self.0.retried
    }
    /// Jobs dead-lettered.
    #[getter]
    fn dead_lettered(&self) -> u64 {
        self.0.dead_lettered
    }
    /// Attempts that failed: ``retried + dead_lettered``.
    #[getter]
    fn failed(&self) -> u64 {
        self.0.failed
    }
    /// Jobs cancelled.
    #[getter]
    fn cancelled(&self) -> u64 {
        self.0.cancelled
    }
    /// Mean lateness (ms) of the delayed jobs and retries promoted in the step; None if none.
    #[getter]
    fn lateness_ms(&self) -> Option<f64> {
        self.0.lateness_ms
    }
    fn __repr__(&self) -> String {
        let p = &self.0;
        format!(
            "HistoryPoint(at_ms={}, enqueued={}, completed={}, retried={}, dead_lettered={}, \
             failed={}, cancelled={}, lateness_ms={})",
            p.at_ms,
            p.enqueued,
            p.completed,
            p.retried,
            p.dead_lettered,
            p.failed,
            p.cancelled,
            p.lateness_ms
                .map_or("None".to_string(), |v| format!("{v:?}"))
        )
    }
}

crate::value::value_class! { HistoryPoint { at_ms, enqueued, completed, retried, dead_lettered, failed, cancelled, lateness_ms } }
