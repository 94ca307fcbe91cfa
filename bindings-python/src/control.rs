//! Queue control on `Queue` (core `control`): pause/resume (the queue or one group), the queue's
//! limits and a group's own, what a group holds (`group`, `groups`, `groups_page`), and the value
//! classes `Rate`, `Limits`, `GroupInfo`, `GroupPage`. Every check is the core's.

use pyo3::prelude::*;

use crate::convert::{self, Int, Secs, Text};
use crate::jobs::QueueBase;

/// At most ``max`` job starts in any window of ``per_seconds``; with ``burst``, a token bucket
/// holding up to ``burst`` starts, refilled at ``max`` per ``per_seconds``.
#[pyclass(module = "tideq", frozen, eq)]
#[derive(PartialEq, Clone, Copy)]
pub struct Rate(pub tideq::Rate);

#[pymethods]
impl Rate {
    #[new]
    #[pyo3(signature = (max, per_seconds, burst=None))]
    fn new(max: Int, per_seconds: Secs, burst: Option<Int>) -> PyResult<Self> {
        let max = convert::count_u32("max", max)?;
        let per = convert::duration("per_seconds", per_seconds)?;
        let burst = burst.map(|b| convert::count_u32("burst", b)).transpose()?;
        Ok(Rate(tideq::Rate { max, per, burst }))
    }
    /// Most starts per window (a bucket: the starts it refills per window).
    #[getter]
    fn max(&self) -> u32 {
        self.0.max
    }
    /// The window, in seconds.
    #[getter]
    fn per_seconds(&self) -> f64 {
        self.0.per.as_secs_f64()
    }
    /// A token bucket's capacity: the most starts at once; None for a sliding window.
    #[getter]
    fn burst(&self) -> Option<u32> {
        self.0.burst
    }
    fn __repr__(&self) -> String {
        let burst = self
            .0
            .burst
            .map(|b| format!(", burst={b}"))
            .unwrap_or_default();
        format!(
            "Rate(max={}, per_seconds={:?}{burst})",
            self.0.max,
            self.0.per.as_secs_f64()
        )
    }
}

crate::value::value_class! { Rate { max, per_seconds, burst } }

fn rate_repr(r: Option<tideq::Rate>) -> String {
    r.map_or("None".into(), |r| Rate(r).__repr__())
}

fn opt_repr<T: ToString>(n: Option<T>) -> String {
    n.map_or("None".into(), |n| n.to_string())
}

/// A limit argument: a count of at least 1, or None (no limit). Zero is left to the core.
pub fn limit(what: &str, n: Option<Int>) -> PyResult<Option<u32>> {
    n.map(|n| convert::count_u32(what, n)).transpose()
}

/// The queue's limits, as ``limits()`` reads them (None: no limit).
#[pyclass(module = "tideq", frozen, eq)]
#[derive(PartialEq)]
pub struct Limits(pub tideq::Limits);

#[pymethods]
impl Limits {
    /// At most this many jobs of the queue running at once, across all workers.
    #[getter]
    fn max_active(&self) -> Option<u32> {
        self.0.max_active
    }
    /// At most this many job starts per window, across all workers.
    #[getter]
    fn rate(&self) -> Option<Rate> {
        self.0.rate.map(Rate)
    }
    /// Each group: at most this many of its jobs running at once (groups without their own).
    #[getter]
    fn group_concurrency(&self) -> Option<u32> {
        self.0.group_concurrency
    }
    /// Each group: at most this many starts per window (groups without their own).
    #[getter]
    fn group_rate(&self) -> Option<Rate> {
        self.0.group_rate.map(Rate)
    }
    fn __repr__(&self) -> String {
        let l = &self.0;
        format!(
            "Limits(max_active={}, rate={}, group_concurrency={}, group_rate={})",
            opt_repr(l.max_active),
            rate_repr(l.rate),
            opt_repr(l.group_concurrency),
            rate_repr(l.group_rate)
        )
    }
}

crate::value::value_class! { Limits { max_active, rate, group_concurrency, group_rate } }

/// What a group holds and obeys now.
#[pyclass(module = "tideq", frozen, eq)]
#[derive(PartialEq)]
pub struct GroupInfo(pub tideq::GroupInfo);

#[pymethods]
impl GroupInfo {
    /// The group's name.
    #[getter]
    fn group(&self) -> &str {
        &self.0.group
    }
    /// Jobs ready to start (not delayed).
    #[getter]
    fn ready(&self) -> u64 {
        self.0.ready
    }
    /// Jobs running.
    #[getter]
    fn active(&self) -> u64 {
        self.0.active
    }
    /// True when the group is paused (``pause_group``).
    #[getter]
    fn paused(&self) -> bool {
        self.0.paused
    }
    /// The concurrency limit in force (its own, else the queue's default), or None.
    #[getter]
    fn concurrency(&self) -> Option<u32> {
        self.0.concurrency
    }
    /// The start rate in force (its own, else the queue's default), or None.
    #[getter]
    fn rate(&self) -> Option<Rate> {
        self.0.rate.map(Rate)
    }
    /// Seconds the longest-ready of its next 10 jobs has been ready (0.0 when none is). Read by
    /// ``group(name)`` only: None in ``groups()`` and ``groups_page()``.
    #[getter]
    fn latency(&self) -> Option<f64> {
        self.0.latency.map(|d| d.as_secs_f64())
    }
    /// The shared limiter the group's starts take from (``set_group_limiter``), or None.
    #[getter]
    fn limiter(&self) -> Option<&str> {
        self.0.limiter.as_deref()
    }
    fn __repr__(&self, py: Python<'_>) -> String {
        let g = &self.0;
        format!(
            "GroupInfo(group={}, ready={}, active={}, paused={}, concurrency={}, rate={}, \
             latency={}, limiter={})",
            convert::str_repr(py, &g.group),
            g.ready,
            g.active,
            if g.paused { "True" } else { "False" },
            opt_repr(g.concurrency),
            rate_repr(g.rate),
            opt_repr(g.latency.map(|d| d.as_secs_f64())),
            match &g.limiter {
                Some(l) => convert::str_repr(py, l),
                None => "None".to_string(),
            }
        )
    }
}

crate::value::value_class! { GroupInfo { group, ready, active, paused, concurrency, rate, latency, limiter } }

/// A page of groups (``Queue.groups_page``) and the cursor of the next page.
#[pyclass(module = "tideq", frozen, eq)]
#[derive(PartialEq)]
pub struct GroupPage(pub tideq::GroupPage);

#[pymethods]
impl GroupPage {
    /// The page's groups, in no particular order.
    #[getter]
    fn groups(&self) -> Vec<GroupInfo> {
        self.0.groups.iter().cloned().map(GroupInfo).collect()
    }
    /// Give it to the next ``groups_page`` call; None when this was the last page.
    #[getter]
    fn cursor(&self) -> Option<&str> {
        self.0.cursor.as_deref()
    }
    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "GroupPage(groups=[{} groups], cursor={})",
            self.0.groups.len(),
            convert::cursor_repr(py, &self.0.cursor)
        )
    }
}

crate::value::value_class! { GroupPage { groups, cursor } }

#[pymethods]
impl QueueBase {
    /// Workers stop starting jobs of this queue (running ones finish; enqueues go on).
    fn pause<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let q = self.queue.clone();
        self.api.call(py, async move { q.pause().await })
    }

    /// Workers start jobs again; idle ones are woken at once.
    fn resume<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let q = self.queue.clone();
        self.api.call(py, async move { q.resume().await })
    }

    /// Stop starting jobs of ``group`` (other groups go on).
    fn pause_group<'py>(&self, py: Python<'py>, group: Text) -> PyResult<Bound<'py, PyAny>> {
        let q = self.queue.clone();
        self.api
            .call(py, async move { q.pause_group(&group.0).await })
    }

    /// Start jobs of ``group`` again.
    fn resume_group<'py>(&self, py: Python<'py>, group: Text) -> PyResult<Bound<'py, PyAny>> {
        let q = self.queue.clone();
        self.api
            .call(py, async move { q.resume_group(&group.0).await })
    }

    /// True when the queue is paused.
    fn is_paused<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let q = self.queue.clone();
        self.api.call(py, async move { q.is_paused().await })
    }

    /// Replace the queue's limits, kept in Redis for every worker (None: no limit):
    /// ``max_active`` jobs running at once, ``rate`` job starts per window, and per group
    /// (groups without limits of their own) ``group_concurrency`` running and ``group_rate``
    /// starts. Bad values raise ``InvalidArgumentError`` and change nothing.
    #[pyo3(signature = (*, max_active=None, rate=None, group_concurrency=None, group_rate=None))]
    fn set_limits<'py>(
        &self,
        py: Python<'py>,
        max_active: Option<Int>,
        rate: Option<Bound<'py, Rate>>,
        group_concurrency: Option<Int>,
        group_rate: Option<Bound<'py, Rate>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let limits = tideq::Limits {
            max_active: limit("max_active", max_active)?,
            rate: rate.map(|r| r.get().0),
            group_concurrency: limit("group_concurrency", group_concurrency)?,
            group_rate: group_rate.map(|r| r.get().0),
        };
        let q = self.queue.clone();
        self.api.call(py, async move { q.set_limits(limits).await })
    }

    /// The queue's limits.
    fn limits<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let q = self.queue.clone();
        self.api
            .call(py, async move { q.limits().await.map(Limits) })
    }

    /// Make every start of this queue's jobs take from the shared limiter ``name`` (defined
    /// with ``Limiter``), across its workers and every queue that names it; None stops it. A
    /// concurrency limiter's slot is held while the job runs. Jobs over the limit stay ready, in
    /// their place. A limiter never defined raises ``InvalidArgumentError``; nothing is written.
    fn set_limiter<'py>(&self, py: Python<'py>, name: Option<Text>) -> PyResult<Bound<'py, PyAny>> {
        let q = self.queue.clone();
        self.api.call(py, async move {
            q.set_limiter(name.as_ref().map(|n| n.0.as_str())).await
        })
    }

    /// The shared limiter this queue's starts take from, or None.
    fn limiter_name<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let q = self.queue.clone();
        self.api.call(py, async move { q.limiter_name().await })
    }

    /// Make every start of ``group``'s jobs take from the shared limiter ``name`` (defined with
    /// ``Limiter``), whichever queue the group is in; None stops it. A job over the limit is not
    /// run: it keeps its place in its group without using an attempt, and the group waits for
    /// room while the queue's other groups go on. A limiter never defined raises
    /// ``InvalidArgumentError``; nothing is written.
    fn set_group_limiter<'py>(
        &self,
        py: Python<'py>,
        group: Text,
        name: Option<Text>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let q = self.queue.clone();
        self.api.call(py, async move {
            q.set_group_limiter(&group.0, name.as_ref().map(|n| n.0.as_str()))
                .await
        })
    }

    /// Set ``group``'s own limits (None: the queue's defaults).
    #[pyo3(signature = (group, *, concurrency=None, rate=None))]
    fn set_group_limits<'py>(
        &self,
        py: Python<'py>,
        group: Text,
        concurrency: Option<Int>,
        rate: Option<Bound<'py, Rate>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let limits = tideq::GroupLimits {
            concurrency: limit("concurrency", concurrency)?,
            rate: rate.map(|r| r.get().0),
        };
        let q = self.queue.clone();
        self.api.call(
            py,
            async move { q.set_group_limits(&group.0, limits).await },
        )
    }

    /// What group ``name`` holds (ready, running) and obeys (paused, limits in force).
    fn group<'py>(&self, py: Python<'py>, name: Text) -> PyResult<Bound<'py, PyAny>> {
        let q = self.queue.clone();
        self.api
            .call(py, async move { q.group(&name.0).await.map(GroupInfo) })
    }

    /// Every group the queue knows (with jobs, running jobs or settings of its own), by name,
    /// each as ``group`` tells it. Reads every group (in short calls); to show some of many,
    /// read a page with ``groups_page``.
    fn groups<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let q = self.queue.clone();
        self.api.call(py, async move {
            let all = q.groups().await?;
            Ok(all.into_iter().map(GroupInfo).collect::<Vec<_>>())
        })
    }

    /// About ``count`` (1 to 250, default 100) of the groups ``groups`` lists, from ``cursor`` (None: the
    /// start), in no particular order, and the cursor of the next page (None after the last).
    /// Each call costs about ``count`` groups' work, however many the queue has.
    #[pyo3(signature = (cursor=None, count=None))]
    fn groups_page<'py>(
        &self,
        py: Python<'py>,
        cursor: Option<Text>,
        count: Option<Int>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let count = convert::page_count(count)?;
        let q = self.queue.clone();
        self.api.call(py, async move {
            let cursor = cursor.as_ref().map(|c| c.0.as_str());
            Ok(GroupPage(q.groups_page(cursor, count).await?))
        })
    }
}
