//! Graphs on `Queue` (core `workflow::graph`): `GraphNode` (a job, its id and the ids it runs
//! after) and `enqueue_graph`. Conversion only: the checks and the writes are the core's.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use tideq::OnChildFailure;

use crate::convert::{self, Text};
use crate::error;
use crate::job::Enqueued;
use crate::jobs::QueueBase;
use crate::workflow::FlowJob;

/// One job of a graph: ``id`` (its job id, unique in the graph), ``job`` (a ``FlowJob`` without
/// children) and ``after``, the ids of the jobs it runs after, each an id or an ``(id,
/// on_failure)`` pair whose ``on_failure`` ("fail", "ignore", "continue") is what that job's
/// failure does to this one (else that job's own ``on_failure``). Give a list of them to
/// ``Queue.enqueue_graph``.
#[pyclass(module = "tideq", frozen)]
pub struct GraphNode {
    node: tideq::GraphNode,
    id: String,
    after: Vec<String>,
}

#[pymethods]
impl GraphNode {
    #[new]
    #[pyo3(signature = (id, job, *, after=None))]
    fn new(id: Text, job: &Bound<'_, FlowJob>, after: Option<Bound<'_, PyAny>>) -> PyResult<Self> {
        let mut node = tideq::GraphNode::new(id.0.clone(), FlowJob::to_core(job)?);
        let mut ids = Vec::new();
        if let Some(after) = after {
            let bad = |v: &Bound<'_, PyAny>| {
                PyTypeError::new_err(format!(
                    "after must be an iterable of ids or (id, on_failure) pairs, not {}",
                    convert::type_name(v)
                ))
            };
            for item in after.try_iter().map_err(|_| bad(&after))? {
                let item = item?;
                if let Ok(pair) = item.cast::<PyTuple>() {
                    let (on, policy): (String, String) = pair.extract().map_err(|_| bad(&item))?;
                    let policy = OnChildFailure::parse(&policy).map_err(error::to_py)?;
                    node = node.after_with(on.clone(), policy);
                    ids.push(on);
                } else {
                    let on: String = item.extract().map_err(|_| bad(&item))?;
                    node = node.after(on.clone());
                    ids.push(on);
                }
            }
        }
        Ok(GraphNode {
            node,
            id: id.0,
            after: ids,
        })
    }

    /// The job's id.
    #[getter]
    fn id(&self) -> &str {
        &self.id
    }

    /// The ids of the jobs it runs after.
    #[getter]
    fn after(&self) -> Vec<String> {
        self.after.clone()
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        let after: Vec<String> = self
            .after
            .iter()
            .map(|a| convert::str_repr(py, a))
            .collect();
        format!(
            "GraphNode(id={}, after=[{}])",
            convert::str_repr(py, &self.id),
            after.join(", ")
        )
    }
}

#[pymethods]
impl QueueBase {
    /// Enqueue a graph of ``GraphNode``s: each job runs once every job it runs ``after``
    /// finished, and reads how they ended with ``job.children_results()``; a step
    /// (``FlowJob(task=...)`` without ``data``) gets their results as its argument, a list in its
    /// ``after`` order. Jobs go to this queue unless their ``queue=`` says otherwise. Written whole
    /// or not at all; returns the ``Enqueued`` of the last job declared that no job runs after (if
    /// it exists already, nothing is created: ``created`` False). Refused with
    /// ``InvalidArgumentError``, nothing written: no jobs, an id declared twice, an ``after``
    /// naming an id not declared, a cycle (the error names it), more than 1000 jobs after one
    /// job, a job with children, and what ``enqueue_flow`` refuses. Cancelling a job cancels the
    /// jobs it runs after that are still pending.
    fn enqueue_graph<'py>(
        &self,
        py: Python<'py>,
        nodes: Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let bad = |v: &Bound<'_, PyAny>| {
            PyTypeError::new_err(format!(
                "enqueue_graph takes an iterable of GraphNode, not {}",
                convert::type_name(v)
            ))
        };
        let mut graph = tideq::Graph::new();
        for item in nodes.try_iter().map_err(|_| bad(&nodes))? {
            let item = item?;
            let node = item.cast::<GraphNode>().map_err(|_| bad(&item))?;
            graph = graph.node(node.get().node.clone());
        }
        let q = self.queue.clone();
        self.api.call(
            py,
            async move { q.enqueue_graph(graph).await.map(Enqueued) },
        )
    }
}
