//! The operator's value classes (core `admin`): `JobPage`, a page of a walk of one state's jobs by
//! cursor (``Queue.jobs_page``). The methods themselves are on `Queue` (jobs.rs).

use pyo3::prelude::*;

use crate::convert;
use crate::job::JobInfo;

/// A page of one state's jobs (``Queue.jobs_page``) and the cursor of the next page.
#[pyclass(module = "tideq", frozen)]
pub struct JobPage(pub tideq::JobPage);

#[pymethods]
impl JobPage {
    /// The page's jobs, in the state's order.
    #[getter]
    fn jobs(&self) -> Vec<JobInfo> {
        self.0.jobs.iter().cloned().map(JobInfo).collect()
    }
    /// Give it to the next ``jobs_page`` call; None when this was the last page.
    #[getter]
    fn cursor(&self) -> Option<&str> {
        self.0.cursor.as_deref()
    }
    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "JobPage(jobs=[{} jobs], cursor={})",
            self.0.jobs.len(),
            convert::cursor_repr(py, &self.0.cursor)
        )
    }
}
