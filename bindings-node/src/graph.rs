//! Graphs (core `workflow::graph`): `enqueueGraph`, jobs that run after several others. Each
//! node is `{ id, job, after }`: `job` is read as a flow's job is ([`crate::workflow::flow`]),
//! `after` lists ids (or `{ id, onFailure }` edges). Conversion only: the checks (ids, cycles,
//! sizes) and the writes are the core's.
// napi registers the methods for JS only, so a test build sees the declarations unused.
#![cfg_attr(test, allow(dead_code))]

use napi::bindgen_prelude::*;
use napi_derive::napi;
use tideq::{Graph, GraphNode};

use crate::convert::{array, is_string, string, Options};
use crate::error::{spawn, Res};
use crate::jobs::Queue;
use crate::results::Enqueued;
use crate::workflow::{flow, on_failure_arg};

/// One job of a graph (`enqueueGraph(nodes)`): its id (its job id, unique in the graph), the
/// job (as a flow's job, without `children`) and the ids of the jobs it runs after.
// Declared for the TypeScript definitions only; `node` reads the fields one by one.
#[allow(dead_code)]
#[napi(object, object_from_js = false, object_to_js = false)]
pub struct GraphNodeSpec {
    /// The job's id, unique in the graph.
    pub id: String,
    /// The job: a task (`name`, `data`) or a raw `payload`, with its options.
    #[napi(ts_type = "FlowSpec")]
    pub job: (),
    /// The jobs it runs after: ids, or `{ id, onFailure }` to say what that job's failure does
    /// to this one (else that job's own `onFailure`).
    #[napi(ts_type = "Array<string | GraphEdge>")]
    pub after: Option<()>,
}

/// An edge of a graph: this job runs after job `id`, whose failure does `onFailure` to it.
#[allow(dead_code)]
#[napi(object, object_from_js = false, object_to_js = false)]
pub struct GraphEdge {
    pub id: String,
    #[napi(ts_type = "'fail' | 'ignore' | 'continue'")]
    pub on_failure: Option<String>,
}

const NODE_KEYS: &[&str] = &["id", "job", "after"];
const EDGE_KEYS: &[&str] = &["id", "onFailure"];

/// `nodes[i]`, read whole.
fn node(env: &Env, what: &str, v: &Unknown) -> Res<GraphNode> {
    let opts = Options::new(what, Some(v), NODE_KEYS)?;
    let id = opts.required("id", string)?;
    let job = opts.required("job", |_, v| Ok(*v))?;
    let mut node = GraphNode::new(id, flow(env, &job)?);
    let after = opts
        .get("after", |what, v| {
            array(what, v, |i, e| Ok((format!("{what}[{i}]"), *e)))
        })?
        .unwrap_or_default();
    for (what, e) in after {
        if is_string(&e) {
            node = node.after(string(&what, &e)?);
        } else {
            let edge = Options::new(what.as_str(), Some(&e), EDGE_KEYS)?;
            let id = edge.required("id", string)?;
            node = match edge.get("onFailure", on_failure_arg)? {
                Some(policy) => node.after_with(id, policy),
                None => node.after(id),
            };
        }
    }
    Ok(node)
}

#[napi]
impl Queue {
    /// Enqueues a graph: each job runs once every job it runs `after` finished, and reads how
    /// they ended with `job.childrenResults()`; a step (`{ name }` without `data`) gets their
    /// results as its `data`, an array in its `after` order. Jobs go to this queue unless their
    /// `queue` says otherwise. Written whole or not at all; resolves with the `Enqueued` of the
    /// last job declared that no job runs after (if it exists already, nothing is created:
    /// `created` false). Rejects with `INVALID_ARGUMENT`, nothing written: no jobs, an id
    /// declared twice, an `after` naming an id not declared, a cycle (the error names it), more
    /// than 1000 jobs after one job, a job with `children`, and what `enqueueFlow` refuses.
    /// Cancelling a job cancels the jobs it runs after that are still pending.
    #[napi(
        ts_args_type = "nodes: GraphNodeSpec[]",
        ts_return_type = "Promise<Enqueued>"
    )]
    pub fn enqueue_graph<'env>(
        &self,
        env: &'env Env,
        nodes: Unknown,
    ) -> Result<PromiseRaw<'env, Enqueued>> {
        let q = self.inner.clone();
        let graph = array("nodes", &nodes, |i, v| node(env, &format!("nodes[{i}]"), v))
            .map(|nodes| Graph::new().nodes(nodes));
        spawn(
            env,
            graph.map(|graph| async move { Ok(q.enqueue_graph(graph).await?.into()) }),
        )
    }
}
