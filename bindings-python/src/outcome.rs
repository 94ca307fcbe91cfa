//! `wait` on `Queue` (core `outcome`): a job's outcome, as soon as the job ends.

use pyo3::prelude::*;

use crate::convert::{self, Secs, Text};
use crate::jobs::QueueBase;

/// A waited-for job's result, decoded when delivered as `JobInfo.result` is (None: nothing).
struct Outcome(Option<Vec<u8>>);

impl<'py> IntoPyObject<'py> for Outcome {
    type Target = PyAny;
    type Output = Bound<'py, PyAny>;
    type Error = PyErr;

    fn into_pyobject(self, py: Python<'py>) -> PyResult<Self::Output> {
        match self.0 {
            None => Ok(py.None().into_bound(py)),
            Some(bytes) => convert::json_or_bytes_value(py, &bytes),
        }
    }
}

#[pymethods]
impl QueueBase {
    /// Wait until job ``id`` has finished and return its result.
    ///
    /// The result is decoded as ``JobInfo.result`` is (None when the handler returned nothing).
    /// Also answers for a job that finished before the call, while it is retained
    /// (``keep_completed``, ``keep_for``). A job that went to the dead letters (or was cancelled)
    /// raises ``JobFailedError`` with its last error; an unknown id ``JobNotFoundError``; no
    /// outcome within ``timeout`` seconds (None: no limit) ``TimeoutError`` (a subclass of the
    /// builtin one). Returns as soon as the job ends: the script finishing the job wakes it.
    #[pyo3(signature = (id, timeout=None))]
    fn wait<'py>(
        &self,
        py: Python<'py>,
        id: Text,
        timeout: Option<Secs>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let id = id.0;
        let timeout = convert::opt_duration("timeout", timeout)?;
        let q = self.queue.clone();
        self.api.call(py, async move {
            Ok(Outcome(q.wait(&id, timeout).await?.result))
        })
    }
}
