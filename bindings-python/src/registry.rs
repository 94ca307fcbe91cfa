//! The worker registry on `Queue` (core `registry`): `workers` and the value class `WorkerInfo`.

use pyo3::prelude::*;

use crate::convert;
use crate::jobs::QueueBase;

#[pymethods]
impl QueueBase {
    /// The queue's live workers (seen in the last 45 s), in the order they started.
    ///
    /// A worker is seen when it fetches jobs and, while it runs jobs, each time it renews their
    /// leases, so a worker busy with long jobs stays listed. One that stops leaves the list.
    fn workers<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let q = self.queue.clone();
        self.api.call(py, async move {
            let listed = q.workers().await?;
            Ok(listed.into_iter().map(WorkerInfo).collect::<Vec<_>>())
        })
    }
}

/// A live worker as ``workers()`` lists it.
#[pyclass(module = "tideq", frozen, eq)]
#[derive(PartialEq)]
pub struct WorkerInfo(pub tideq::WorkerInfo);

#[pymethods]
impl WorkerInfo {
    /// The worker's id (random, new for each worker).
    #[getter]
    fn id(&self) -> &str {
        &self.0.id
    }
    /// The queue it works.
    #[getter]
    fn queue(&self) -> &str {
        &self.0.queue
    }
    /// The host name of its machine.
    #[getter]
    fn host(&self) -> &str {
        &self.0.host
    }
    /// Its process id.
    #[getter]
    fn pid(&self) -> u32 {
        self.0.pid
    }
    /// The runtime of its handlers: ``"python"``, ``"node"`` or ``"rust"``.
    #[getter]
    fn runtime(&self) -> &str {
        &self.0.runtime
    }
    /// The tideq version it runs.
    #[getter]
    fn version(&self) -> &str {
        &self.0.version
    }
    /// Jobs it runs at the same time, at most.
    #[getter]
    fn concurrency(&self) -> u64 {
        self.0.concurrency
    }
    /// Jobs it was running when last seen.
    #[getter]
    fn running(&self) -> u64 {
        self.0.running
    }
    /// The ids of up to 10 of them.
    #[getter]
    fn running_ids(&self) -> Vec<String> {
        self.0.running_ids.clone()
    }
    /// When it started, epoch milliseconds by its machine's clock.
    #[getter]
    fn started_at_ms(&self) -> u64 {
        self.0.started_at
    }
    /// When it was last seen, epoch milliseconds by the Redis clock.
    #[getter]
    fn last_seen_at_ms(&self) -> u64 {
        self.0.last_seen_at
    }
    fn __repr__(&self, py: Python<'_>) -> String {
        let w = &self.0;
        let ids: Vec<String> = w
            .running_ids
            .iter()
            .map(|i| convert::str_repr(py, i))
            .collect();
        format!(
            "WorkerInfo(id={}, queue={}, host={}, pid={}, runtime={}, version={}, concurrency={}, \
             running={}, running_ids=[{}], started_at_ms={}, last_seen_at_ms={})",
            convert::str_repr(py, &w.id),
            convert::str_repr(py, &w.queue),
            convert::str_repr(py, &w.host),
            w.pid,
            convert::str_repr(py, &w.runtime),
            convert::str_repr(py, &w.version),
            w.concurrency,
            w.running,
            ids.join(", "),
            w.started_at,
            w.last_seen_at
        )
    }
}

crate::value::value_class! { WorkerInfo { id, queue, host, pid, runtime, version, concurrency, running, running_ids, started_at_ms, last_seen_at_ms } }
