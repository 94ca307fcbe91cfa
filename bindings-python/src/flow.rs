//! Flow control's value classes (core `flow`): `Rate`, `Limits`, `GroupInfo`, `GroupPage`, and the
//! conversions of `set_limits` / `set_group_limits` arguments. Every check is the core's.

use pyo3::prelude::*;

use crate::convert::{self, Int, Secs};

/// At most ``max`` job starts in any window of ``per_seconds``.
#[pyclass(module = "tideq", frozen, eq)]
#[derive(PartialEq, Clone, Copy)]
pub struct Rate(pub tideq::Rate);

#[pymethods]
impl Rate {
    #[new]
    fn new(max: Int, per_seconds: Secs) -> PyResult<Self> {
        let max = convert::count_u32("max", max)?;
        let per = convert::duration("per_seconds", per_seconds)?;
        Ok(Rate(tideq::Rate::new(max, per)))
    }
    /// Most starts per window.
    #[getter]
    fn max(&self) -> u32 {
        self.0.max
    }
    /// The window, in seconds.
    #[getter]
    fn per_seconds(&self) -> f64 {
        self.0.per.as_secs_f64()
    }
    fn __repr__(&self) -> String {
        format!(
            "Rate(max={}, per_seconds={:?})",
            self.0.max,
            self.0.per.as_secs_f64()
        )
    }
}

fn rate_repr(r: Option<tideq::Rate>) -> String {
    r.map_or("None".into(), |r| Rate(r).__repr__())
}

fn opt_repr(n: Option<u32>) -> String {
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
    fn __repr__(&self, py: Python<'_>) -> String {
        let g = &self.0;
        format!(
            "GroupInfo(group={}, ready={}, active={}, paused={}, concurrency={}, rate={})",
            convert::str_repr(py, &g.group),
            g.ready,
            g.active,
            if g.paused { "True" } else { "False" },
            opt_repr(g.concurrency),
            rate_repr(g.rate)
        )
    }
}

/// A page of groups (``Queue.groups_page``) and the cursor of the next page.
#[pyclass(module = "tideq", frozen)]
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
