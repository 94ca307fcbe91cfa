//! Bulk actions on `Queue` (core `bulk`, `obliterate`): retry, delete or cancel many ids
//! (`retry_jobs`, `delete_jobs`, `cancel_jobs`), every job a search finds (`retry_found`,
//! `delete_found`, `cancel_found`, and one page at a time: `bulk_found`), `promote_all`,
//! `clean`, `obliterate`. Results are plain dicts.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::convert::{self, Secs, Text};
use crate::error;
use crate::jobs::QueueBase;

/// Per id: `{"id", "outcome": "done" | "wrong_state" | "unknown", "state": str | None}`.
pub struct Items(Vec<tideq::BulkItem>);

impl<'py> IntoPyObject<'py> for Items {
    type Target = PyList;
    type Output = Bound<'py, PyList>;
    type Error = PyErr;

    fn into_pyobject(self, py: Python<'py>) -> PyResult<Self::Output> {
        let rows = self
            .0
            .iter()
            .map(|i| {
                let d = PyDict::new(py);
                d.set_item("id", &i.id)?;
                d.set_item("outcome", i.outcome.as_str())?;
                d.set_item("state", i.state.map(|s| s.as_str()))?;
                Ok(d)
            })
            .collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, rows)
    }
}

/// `{"done", "skipped"}`, and `"cursor"` for one page.
pub struct Counts(u64, u64, Option<Option<String>>);

impl<'py> IntoPyObject<'py> for Counts {
    type Target = PyDict;
    type Output = Bound<'py, PyDict>;
    type Error = PyErr;

    fn into_pyobject(self, py: Python<'py>) -> PyResult<Self::Output> {
        let d = PyDict::new(py);
        d.set_item("done", self.0)?;
        d.set_item("skipped", self.1)?;
        if let Some(cursor) = self.2 {
            d.set_item("cursor", cursor)?;
        }
        Ok(d)
    }
}

fn filter(
    task: Option<Text>,
    group: Option<Text>,
    state: Option<Text>,
    contains: Option<Text>,
) -> PyResult<tideq::JobFilter> {
    let state = state
        .map(|s| tideq::JobState::parse(&s.0))
        .transpose()
        .map_err(error::to_py)?;
    Ok(tideq::JobFilter {
        state,
        task: task.map(|t| t.0),
        group: group.map(|g| g.0),
        contains: contains.map(|c| c.0),
    })
}

fn ids(ids: Vec<Text>) -> Vec<String> {
    ids.into_iter().map(|t| t.0).collect()
}

#[pymethods]
impl QueueBase {
    /// Retry the dead jobs of ``ids`` (at most 1000): each back to ready, attempts reset.
    ///
    /// Returns, per id in order, ``{"id", "outcome", "state"}``: outcome ``"done"``,
    /// ``"wrong_state"`` (``state`` names the job's state) or ``"unknown"``. More than 1000 ids
    /// or an invalid one: ``InvalidArgumentError``, nothing done.
    fn retry_jobs<'py>(&self, py: Python<'py>, ids: Vec<Text>) -> PyResult<Bound<'py, PyAny>> {
        let (q, ids) = (self.queue.clone(), self::ids(ids));
        self.api
            .call(py, async move { Ok(Items(q.retry_jobs(&ids).await?)) })
    }

    /// Delete the finished (dead or completed) jobs of ``ids`` (at most 1000) and all kept for
    /// them; per id, what happened (as ``retry_jobs``).
    fn delete_jobs<'py>(&self, py: Python<'py>, ids: Vec<Text>) -> PyResult<Bound<'py, PyAny>> {
        let (q, ids) = (self.queue.clone(), self::ids(ids));
        self.api
            .call(py, async move { Ok(Items(q.delete_jobs(&ids).await?)) })
    }

    /// Cancel the delayed, ready or active jobs of ``ids`` (at most 1000); per id, what
    /// happened (as ``retry_jobs``).
    fn cancel_jobs<'py>(&self, py: Python<'py>, ids: Vec<Text>) -> PyResult<Bound<'py, PyAny>> {
        let (q, ids) = (self.queue.clone(), self::ids(ids));
        self.api
            .call(py, async move { Ok(Items(q.cancel_jobs(&ids).await?)) })
    }

    /// One page of ``action`` (``"retry"``, ``"delete"``, ``"cancel"`` or ``"promote"``) on the
    /// jobs a search finds (the filter of ``find_jobs``).
    ///
    /// Returns ``{"done", "skipped", "cursor"}``: pass ``cursor`` to the next call; None when
    /// the search is over. A state the action does not apply to is ``InvalidArgumentError``.
    #[pyo3(signature = (action, *, task=None, group=None, state=None, contains=None, cursor=None))]
    #[allow(clippy::too_many_arguments)]
    fn bulk_found<'py>(
        &self,
        py: Python<'py>,
        action: Text,
        task: Option<Text>,
        group: Option<Text>,
        state: Option<Text>,
        contains: Option<Text>,
        cursor: Option<Text>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let action = tideq::BulkAction::parse(&action.0).map_err(error::to_py)?;
        let filter = filter(task, group, state, contains)?;
        let q = self.queue.clone();
        self.api.call(py, async move {
            let cursor = cursor.as_ref().map(|c| c.0.as_str());
            let p = q.bulk_found(action, &filter, cursor).await?;
            Ok(Counts(p.done, p.skipped, Some(p.cursor)))
        })
    }

    /// Retry every dead job a search finds, a page at a time; returns ``{"done", "skipped"}``.
    #[pyo3(signature = (*, task=None, group=None, contains=None))]
    fn retry_found<'py>(
        &self,
        py: Python<'py>,
        task: Option<Text>,
        group: Option<Text>,
        contains: Option<Text>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let filter = filter(task, group, None, contains)?;
        let q = self.queue.clone();
        self.api.call(py, async move {
            let c = q.retry_found(&filter).await?;
            Ok(Counts(c.done, c.skipped, None))
        })
    }

    /// Delete every finished job a search finds (``state``: ``"dead"``, ``"completed"`` or
    /// None for both), a page at a time; returns ``{"done", "skipped"}``.
    #[pyo3(signature = (*, task=None, group=None, state=None, contains=None))]
    fn delete_found<'py>(
        &self,
        py: Python<'py>,
        task: Option<Text>,
        group: Option<Text>,
        state: Option<Text>,
        contains: Option<Text>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let filter = filter(task, group, state, contains)?;
        let q = self.queue.clone();
        self.api.call(py, async move {
            let c = q.delete_found(&filter).await?;
            Ok(Counts(c.done, c.skipped, None))
        })
    }

    /// Cancel every delayed, ready or active job a search finds, a page at a time; returns
    /// ``{"done", "skipped"}``.
    #[pyo3(signature = (*, task=None, group=None, state=None, contains=None))]
    fn cancel_found<'py>(
        &self,
        py: Python<'py>,
        task: Option<Text>,
        group: Option<Text>,
        state: Option<Text>,
        contains: Option<Text>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let filter = filter(task, group, state, contains)?;
        let q = self.queue.clone();
        self.api.call(py, async move {
            let c = q.cancel_found(&filter).await?;
            Ok(Counts(c.done, c.skipped, None))
        })
    }

    /// Run every delayed job now; returns how many.
    fn promote_all<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let q = self.queue.clone();
        self.api.call(py, async move { q.promote_all().await })
    }

    /// Delete the ``"completed"`` or ``"dead"`` jobs that finished more than ``older_than``
    /// seconds ago (by the Redis clock), in calls of 1000; returns how many.
    fn clean<'py>(
        &self,
        py: Python<'py>,
        state: Text,
        older_than: Secs,
    ) -> PyResult<Bound<'py, PyAny>> {
        let state = tideq::JobState::parse(&state.0).map_err(error::to_py)?;
        let older_than = convert::duration("older_than", older_than)?;
        let q = self.queue.clone();
        self.api
            .call(py, async move { q.clean(state, older_than).await })
    }

    /// Delete the queue: every key of every shard (jobs, data, schedules, groups, history,
    /// settings); returns how many keys.
    ///
    /// Refused (``InvalidArgumentError``, nothing written) while workers are live, unless
    /// ``force``. Enqueues during the call are refused; afterwards they start a fresh queue.
    #[pyo3(signature = (*, force=false))]
    fn obliterate<'py>(&self, py: Python<'py>, force: bool) -> PyResult<Bound<'py, PyAny>> {
        let q = self.queue.clone();
        self.api.call(py, async move { q.obliterate(force).await })
    }
}
