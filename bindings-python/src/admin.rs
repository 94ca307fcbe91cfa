//! The operator's side of `Queue` (core `admin`): `get`, `cancel`, `promote`, `delete`, the jobs
//! in a state (`jobs`, `jobs_page` and its `JobPage`), the search (`find_jobs` and its
//! `JobSearch`), dead letters (`dead_letters`, `requeue`, `requeue_all`, `purge`) and `stats`.

use pyo3::prelude::*;

use crate::convert::{self, Text};
use crate::error;
use crate::job::{JobInfo, JobStats};
use crate::jobs::QueueBase;

/// A page of one state's jobs (``Queue.jobs_page``) and the cursor of the next page.
#[pyclass(module = "tideq", frozen, eq)]
#[derive(PartialEq)]
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

crate::value::value_class! { JobPage { jobs, cursor } }

/// A page of a search (``Queue.find_jobs``): the matching jobs, the cursor to go on with, and
/// how many jobs the call looked at.
#[pyclass(module = "tideq", frozen, eq)]
#[derive(PartialEq)]
pub struct JobSearch(pub tideq::JobSearch);

#[pymethods]
impl JobSearch {
    /// The matching jobs this call found (at most ``limit``).
    #[getter]
    fn jobs(&self) -> Vec<JobInfo> {
        self.0.jobs.iter().cloned().map(JobInfo).collect()
    }
    /// Give it to the next ``find_jobs`` call, with the same filter; None when the search is over.
    #[getter]
    fn cursor(&self) -> Option<&str> {
        self.0.cursor.as_deref()
    }
    /// How many jobs this call looked at (at most 2000), counting the delayed and running
    /// grouped jobs it passed over on the way to the ready ones.
    #[getter]
    fn scanned(&self) -> u64 {
        self.0.scanned
    }
    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "JobSearch(jobs=[{} jobs], cursor={}, scanned={})",
            self.0.jobs.len(),
            convert::cursor_repr(py, &self.0.cursor),
            self.0.scanned
        )
    }
}

crate::value::value_class! { JobSearch { jobs, cursor, scanned } }

#[pymethods]
impl QueueBase {
    /// A job's state, attempts, last error and times; None if unknown.
    ///
    /// None too once the job is no longer kept.
    fn get<'py>(&self, py: Python<'py>, id: Text) -> PyResult<Bound<'py, PyAny>> {
        let id = id.0;
        let q = self.queue.clone();
        self.api
            .call(py, async move { Ok(q.get(&id).await?.map(JobInfo)) })
    }

    /// Cancel a job: a delayed or ready one is removed; a running one is asked to stop.
    ///
    /// A running job's worker sets ``job.cancelled`` (and cancels an ``async def`` handler's
    /// task) within a second; the job ends cancelled when its handler returns, whatever it
    /// returns, and is never retried (a handler that finished first completes it). Either way
    /// ``get`` then gives ``None`` and ``stats().cancelled`` counts it.
    /// ``JobNotCancellableError`` for dead or completed jobs, ``JobNotFoundError`` for unknown ids.
    fn cancel<'py>(&self, py: Python<'py>, id: Text) -> PyResult<Bound<'py, PyAny>> {
        let id = id.0;
        let q = self.queue.clone();
        self.api.call(py, async move { q.cancel(&id).await })
    }

    /// Run a delayed job now.
    ///
    /// A job waiting for its due time, a retry's backoff or a snooze becomes ready at once, with
    /// its priority and group (their limits apply when a worker fetches it), and idle workers
    /// are woken. ``JobWrongStateError`` for a job in any other state, ``JobNotFoundError`` for
    /// unknown ids.
    fn promote<'py>(&self, py: Python<'py>, id: Text) -> PyResult<Bound<'py, PyAny>> {
        let id = id.0;
        let q = self.queue.clone();
        self.api.call(py, async move { q.promote(&id).await })
    }

    /// Delete a finished (dead or completed) job and everything kept for it.
    ///
    /// Its data, result and place in the dead letters or completed jobs go, and its id is
    /// forgotten, so ``get`` gives None and the id may be enqueued again; lifetime counters stay.
    /// ``JobWrongStateError`` for a pending or running job (cancel it instead),
    /// ``JobNotFoundError`` for unknown ids.
    fn delete<'py>(&self, py: Python<'py>, id: Text) -> PyResult<Bound<'py, PyAny>> {
        let id = id.0;
        let q = self.queue.clone();
        self.api.call(py, async move { q.delete(&id).await })
    }

    /// Up to ``limit`` (1 to 1000) jobs of ``task`` and ``group`` (None: any), after ``cursor``.
    ///
    /// ``contains`` keeps the jobs whose payload (a task's arguments, as JSON or MessagePack)
    /// holds that text, e.g. an address. The search walks ``state``'s jobs, or (None) every
    /// state in turn (delayed, ready, active, dead, completed), as ``jobs_page`` does, and looks
    /// at no more than 2000 jobs a call however big the queue: a page may hold fewer than
    /// ``limit`` jobs, even none, before the end; only a None cursor ends the search. Give the
    /// cursor back with the same filter. An empty ``task``, ``group`` or ``contains``, an
    /// unknown state, a bad ``limit`` or a cursor not made by this search raise
    /// ``InvalidArgumentError``. Writes nothing.
    #[pyo3(signature = (*, task=None, group=None, state=None, contains=None, cursor=None, limit=50))]
    #[allow(clippy::too_many_arguments)]
    fn find_jobs<'py>(
        &self,
        py: Python<'py>,
        task: Option<Text>,
        group: Option<Text>,
        state: Option<Text>,
        contains: Option<Text>,
        cursor: Option<Text>,
        #[pyo3(from_py_with = convert::int)] limit: i64,
    ) -> PyResult<Bound<'py, PyAny>> {
        let state = state
            .map(|s| tideq::JobState::parse(&s.0))
            .transpose()
            .map_err(error::to_py)?;
        let filter = tideq::JobFilter {
            state,
            task: task.map(|t| t.0),
            group: group.map(|g| g.0),
            contains: contains.map(|c| c.0),
        };
        let limit = convert::count("limit", limit)?;
        let q = self.queue.clone();
        self.api.call(py, async move {
            let cursor = cursor.as_ref().map(|c| c.0.as_str());
            Ok(JobSearch(q.find_jobs(&filter, cursor, limit).await?))
        })
    }

    /// The jobs in one state, ``limit`` (at most 1000) from ``offset``.
    ///
    /// ``state``: ``"delayed"`` (by due time), ``"ready"`` (in the order workers take them:
    /// plain, then by priority, then group by group), ``"active"`` (by lease deadline),
    /// ``"dead"`` (oldest death first), ``"completed"`` (newest first) or ``"waiting"`` (flow
    /// jobs waiting for their children, by id); a sharded queue lists shard by shard. An unknown
    /// state, a ``limit`` over 1000 or an ``offset`` of ready or waiting jobs past 10,000
    /// (skipping them looks at every group they are in, or reads every one before) raises
    /// ``InvalidArgumentError``.
    /// Offsets shift as workers move jobs, so a walk of pages by offset can list a job twice or
    /// skip one: walk a state with ``jobs_page``.
    #[pyo3(signature = (state, offset=0, limit=100))]
    fn jobs<'py>(
        &self,
        py: Python<'py>,
        state: Text,
        #[pyo3(from_py_with = convert::int)] offset: i64,
        #[pyo3(from_py_with = convert::int)] limit: i64,
    ) -> PyResult<Bound<'py, PyAny>> {
        let state = tideq::JobState::parse(&state.0).map_err(error::to_py)?;
        let (offset, limit) = (
            convert::count("offset", offset)?,
            convert::count("limit", limit)?,
        );
        let q = self.queue.clone();
        self.api.call(py, async move {
            let jobs = q.jobs(state, offset, limit).await?;
            Ok(jobs.into_iter().map(JobInfo).collect::<Vec<_>>())
        })
    }

    /// Up to ``limit`` (1 to 1000) of the jobs in ``state`` after ``cursor`` (None: the start),
    /// and the cursor of the next page (None after the last).
    ///
    /// A walk page by page while workers run never lists a job twice and never skips one that
    /// stayed in the state for the whole walk: the cursor is the last job's place in the state's
    /// order (delayed by due time, dead by time of death, completed newest first, active by id,
    /// ready as workers take them with grouped jobs last in no particular order). A job that left
    /// the state and came back may show again. A page may hold fewer than ``limit`` jobs before
    /// the end; only a None cursor ends the walk. A cursor not made by a walk of this queue's
    /// ``state`` raises ``InvalidArgumentError``.
    #[pyo3(signature = (state, cursor=None, limit=100))]
    fn jobs_page<'py>(
        &self,
        py: Python<'py>,
        state: Text,
        cursor: Option<Text>,
        #[pyo3(from_py_with = convert::int)] limit: i64,
    ) -> PyResult<Bound<'py, PyAny>> {
        let state = tideq::JobState::parse(&state.0).map_err(error::to_py)?;
        let limit = convert::count("limit", limit)?;
        let q = self.queue.clone();
        self.api.call(py, async move {
            let cursor = cursor.as_ref().map(|c| c.0.as_str());
            Ok(JobPage(q.jobs_page(state, cursor, limit).await?))
        })
    }

    /// Dead jobs, oldest death first.
    #[pyo3(signature = (offset=0, limit=100))]
    fn dead_letters<'py>(
        &self,
        py: Python<'py>,
        #[pyo3(from_py_with = convert::int)] offset: i64,
        #[pyo3(from_py_with = convert::int)] limit: i64,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (offset, limit) = (
            convert::count("offset", offset)?,
            convert::count("limit", limit)?,
        );
        let q = self.queue.clone();
        self.api.call(py, async move {
            let dead = q.dead_letters(offset, limit).await?;
            Ok(dead.into_iter().map(JobInfo).collect::<Vec<_>>())
        })
    }

    /// Move a dead job back to ready with its attempts reset.
    ///
    /// ``JobNotFoundError`` if it is not dead.
    fn requeue<'py>(&self, py: Python<'py>, id: Text) -> PyResult<Bound<'py, PyAny>> {
        let id = id.0;
        let q = self.queue.clone();
        self.api.call(py, async move { q.requeue(&id).await })
    }

    /// Requeue every dead job; returns how many.
    fn requeue_all<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let q = self.queue.clone();
        self.api.call(py, async move { q.requeue_all().await })
    }

    /// Delete every dead job; returns how many.
    fn purge<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let q = self.queue.clone();
        self.api.call(py, async move { q.purge().await })
    }

    /// Jobs per state and lifetime counters.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let q = self.queue.clone();
        self.api
            .call(py, async move { q.stats().await.map(JobStats) })
    }
}
