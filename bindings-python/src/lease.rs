//! Manual leasing on `Queue` (core `lease`): lease ready jobs without a worker (`lease_jobs`),
//! then settle each one yourself (`complete`, `fail`, `release`) and renew a long one (`extend`).
//! Every call is fenced by the job's lease: once it has expired and the job was delivered again,
//! settling it raises `LeaseLostError`. Nothing renews these leases by itself.

use pyo3::prelude::*;
use pyo3::types::PyList;

use crate::convert::{self, Int, Secs, Text};
use crate::handler;
use crate::job::Job;
use crate::jobs::QueueBase;

/// Jobs `lease_jobs` leased, converted to `list[Job]` when delivered.
struct Leased(Vec<tideq::Job>);

impl<'py> IntoPyObject<'py> for Leased {
    type Target = PyList;
    type Output = Bound<'py, PyList>;
    type Error = PyErr;

    fn into_pyobject(self, py: Python<'py>) -> PyResult<Self::Output> {
        PyList::new(py, self.0.into_iter().map(|j| Job::from_core(py, j)))
    }
}

#[pymethods]
impl QueueBase {
    /// Lease up to ``max`` (at most 1000) ready jobs for ``lease`` seconds, for processing without a worker
    /// (empty when nothing is ready). Settle each with ``complete``, ``fail`` or ``release``;
    /// nothing renews these leases but ``extend``: a job whose lease expires is delivered
    /// again.
    #[pyo3(signature = (max, *, lease))]
    fn lease_jobs<'py>(
        &self,
        py: Python<'py>,
        max: Int,
        lease: Secs,
    ) -> PyResult<Bound<'py, PyAny>> {
        let max = convert::count("max", max)?;
        let lease = convert::duration("lease", lease)?;
        let q = self.queue.clone();
        self.api.call(
            py,
            async move { Ok(Leased(q.lease_jobs(max, lease).await?)) },
        )
    }

    /// Mark a leased job done (``LeaseLostError`` if its lease expired and it was
    /// redelivered).
    fn complete<'py>(&self, py: Python<'py>, job: &Bound<'py, Job>) -> PyResult<Bound<'py, PyAny>> {
        let (q, job) = (self.queue.clone(), job.get().core().clone());
        self.api.call(py, async move { q.complete(&job).await })
    }

    /// Fail a leased attempt with ``error`` (a message, or an exception shown as
    /// ``"ExcType: message"``): retried after the job's backoff, or dead-lettered after
    /// ``max_attempts``. Returns True when dead-lettered.
    fn fail<'py>(
        &self,
        py: Python<'py>,
        job: &Bound<'py, Job>,
        error: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let text = if error.is_instance_of::<pyo3::exceptions::PyBaseException>() {
            handler::error_text(py, &PyErr::from_value(error.clone()))
        } else {
            error.extract::<Text>()?.0
        };
        let (q, job) = (self.queue.clone(), job.get().core().clone());
        self.api.call(py, async move { q.fail(&job, &text).await })
    }

    /// Return a leased job to the front of the queue without counting the attempt.
    fn release<'py>(&self, py: Python<'py>, job: &Bound<'py, Job>) -> PyResult<Bound<'py, PyAny>> {
        let (q, job) = (self.queue.clone(), job.get().core().clone());
        self.api.call(py, async move { q.release(&job).await })
    }

    /// Push a leased job's lease deadline to ``lease`` seconds from now.
    fn extend<'py>(
        &self,
        py: Python<'py>,
        job: &Bound<'py, Job>,
        lease: Secs,
    ) -> PyResult<Bound<'py, PyAny>> {
        let lease = convert::duration("lease", lease)?;
        let (q, job) = (self.queue.clone(), job.get().core().clone());
        self.api
            .call(py, async move { q.extend(&job, lease).await })
    }
}
