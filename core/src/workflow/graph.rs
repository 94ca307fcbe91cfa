//! Graphs: flows whose jobs may be waited for by several others (`A → (B, C, D) → E`). Each job
//! of a graph is declared with an id and the ids it runs after; the graph is checked (ids
//! unique, every id it runs after declared, no cycle, sizes) before anything is written, then
//! written as a flow is (held, root, release): a job that several wait for has one parent per
//! job waiting for it, each told how it ended.

use std::collections::HashMap;

use super::*;
use crate::envelope::ArgsFrom;
use crate::job::Enqueued;

/// Most jobs of one graph that may run after the same job (each is told how it ended, in the
/// call that ends it).
pub const MAX_GRAPH_DEPENDENTS: usize = 1000;

/// One job of a [`Graph`]: its id (its job id), the job, and the ids of the jobs it runs after.
#[derive(Debug, Clone)]
pub struct GraphNode {
    id: String,
    job: FlowJob,
    after: Vec<(String, Option<OnChildFailure>)>,
}

impl GraphNode {
    /// The job `job` (a [`FlowJob`] without children), under id `id` (its job id, unique in
    /// the graph and new in its queue). Its [`on_failure`](FlowJob::on_failure) is what its
    /// failure does to each job that runs after it, unless that job's
    /// [`after_with`](Self::after_with) says otherwise.
    pub fn new(id: impl Into<String>, job: FlowJob) -> Self {
        GraphNode {
            id: id.into(),
            job,
            after: Vec::new(),
        }
    }

    /// Runs after the job `id` finished (with its result among
    /// [`children_results`](Job::children_results)).
    pub fn after(mut self, id: impl Into<String>) -> Self {
        self.after.push((id.into(), None));
        self
    }

    /// Runs after each of `ids`.
    pub fn after_all(mut self, ids: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.after
            .extend(ids.into_iter().map(|id| (id.into(), None)));
        self
    }

    /// Runs after the job `id`, whose failure does `on_failure` to this job (on this edge only).
    pub fn after_with(mut self, id: impl Into<String>, on_failure: OnChildFailure) -> Self {
        self.after.push((id.into(), Some(on_failure)));
        self
    }
}

/// Jobs that run after others, each after every job it names: a directed acyclic graph, given
/// to [`Queue::enqueue_graph`].
///
/// ```no_run
/// # async fn f(q: &tideq::Queue) -> tideq::Result<()> {
/// use tideq::{FlowJob, Graph, GraphNode};
/// let graph = Graph::new()
///     .node(GraphNode::new("fetch", FlowJob::task("fetch", "https://example.com")?))
///     .node(GraphNode::new("words", FlowJob::step("words")).after("fetch"))
///     .node(GraphNode::new("links", FlowJob::step("links")).after("fetch"))
///     .node(GraphNode::new("report", FlowJob::step("report")).after_all(["words", "links"]));
/// q.enqueue_graph(graph).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default)]
pub struct Graph {
    nodes: Vec<GraphNode>,
}

impl Graph {
    /// An empty graph.
    pub fn new() -> Self {
        Graph::default()
    }

    /// Adds a job.
    pub fn node(mut self, node: GraphNode) -> Self {
        self.nodes.push(node);
        self
    }

    /// Adds jobs.
    pub fn nodes(mut self, nodes: impl IntoIterator<Item = GraphNode>) -> Self {
        self.nodes.extend(nodes);
        self
    }
}

impl Queue {
    /// Enqueues a graph: each job runs once every job it runs after finished (completed, or
    /// failed in a way its edge's [`OnChildFailure`] lets through), and reads how they ended
    /// with [`children_results`](Job::children_results). A task job built with
    /// [`FlowJob::step`] that runs after others gets their results as its arguments (a list, in
    /// its `after` order). Jobs go to this queue unless [`FlowJob::on`] says otherwise. Written
    /// whole or not at all, as [`enqueue_flow`](Self::enqueue_flow) writes a flow. Returns the
    /// id of the last job declared that no job runs after (the graph's root: if it exists
    /// already, nothing is created, `created` false).
    ///
    /// Refused (`INVALID_ARGUMENT`, nothing written): no jobs, more than [`MAX_FLOW_JOBS`] + 1,
    /// an id declared twice, an `after` naming an id not declared (or twice), a cycle (the
    /// error names it), more than [`MAX_GRAPH_DEPENDENTS`] jobs after one job, a job with
    /// children of its own (a chain or chord) or an `id` option other than its node's, and what
    /// [`enqueue_flow`](Self::enqueue_flow) refuses.
    pub async fn enqueue_graph(&self, graph: Graph) -> Result<Enqueued> {
        self.op("enqueue_graph", async {
            let nodes = self.lay_out_graph(graph)?;
            self.write_flow(nodes).await
        })
        .await
    }

    /// The graph's jobs, checked, root first.
    fn lay_out_graph(&self, graph: Graph) -> Result<Vec<Node>> {
        let g = graph.nodes;
        if g.is_empty() {
            return Err(Error::invalid("a graph needs at least one job"));
        }
        if g.len() > MAX_FLOW_JOBS + 1 {
            return Err(Error::invalid(format!(
                "a graph may have at most {} jobs, got {}",
                MAX_FLOW_JOBS + 1,
                g.len()
            )));
        }
        let mut index: HashMap<&str, usize> = HashMap::with_capacity(g.len());
        for (i, n) in g.iter().enumerate() {
            if index.insert(n.id.as_str(), i).is_some() {
                return Err(Error::invalid(format!(
                    "job id {:?} is declared twice in the graph",
                    n.id
                )));
            }
        }
        // Edges: prereqs[i] the jobs i runs after (its children), deps[j] those after j.
        let mut prereqs: Vec<Vec<usize>> = vec![Vec::new(); g.len()];
        let mut deps: Vec<Vec<(usize, OnChildFailure)>> = vec![Vec::new(); g.len()];
        for (i, n) in g.iter().enumerate() {
            for (id, policy) in &n.after {
                let Some(&j) = index.get(id.as_str()) else {
                    return Err(Error::invalid(format!(
                        "job {:?} runs after {id:?}, which is not in the graph",
                        n.id
                    )));
                };
                if prereqs[i].contains(&j) {
                    return Err(Error::invalid(format!(
                        "job {:?} names {id:?} twice in its after list",
                        n.id
                    )));
                }
                prereqs[i].push(j);
                deps[j].push((i, policy.unwrap_or(g[j].job.on_failure)));
            }
        }
        if let Some(j) = deps.iter().position(|d| d.len() > MAX_GRAPH_DEPENDENTS) {
            return Err(Error::invalid(format!(
                "{} jobs run after job {:?}: at most {MAX_GRAPH_DEPENDENTS} may run after one job",
                deps[j].len(),
                g[j].id
            )));
        }
        if let Some(cycle) = find_cycle(&prereqs) {
            let names: Vec<&str> = cycle.iter().map(|&i| g[i].id.as_str()).collect();
            return Err(Error::invalid(format!(
                "the graph has a cycle (each job runs after the next): {}",
                names.join(" → ")
            )));
        }
        // The root: the last job declared that no job runs after; it goes first.
        let root = (0..g.len())
            .rev()
            .find(|&i| deps[i].is_empty())
            .expect("an acyclic graph has a job no job runs after");
        let mut order: Vec<usize> = Vec::with_capacity(g.len());
        order.push(root);
        order.extend((0..g.len()).filter(|&i| i != root));
        let mut at = vec![0; g.len()];
        for (k, &i) in order.iter().enumerate() {
            at[i] = k;
        }
        let ambient = crate::otel::ambient(g.iter().map(|n| &n.job.opts));
        let mut nodes: Vec<Node> = Vec::with_capacity(g.len());
        for &i in &order {
            let n = &g[i];
            let job = &n.job;
            let what = |e: &str| Error::invalid(format!("graph job {:?}: {e}", n.id));
            if !job.children.is_empty() || job.args_from.is_some() {
                return Err(what(
                    "a graph's job has no children of its own (a chain or chord is a flow): \
                     name the jobs it runs after instead",
                ));
            }
            if job.opts.id.as_ref().is_some_and(|id| *id != n.id) {
                return Err(what("its id option differs from its id in the graph"));
            }
            if job.opts.dedup.is_some() || job.opts.debounce.is_some() {
                return Err(what("a graph's jobs take no dedup or debounce"));
            }
            let queue = job.queue.clone().unwrap_or_else(|| self.clone());
            if queue.client.config().prefix() != self.client.config().prefix() {
                return Err(what(
                    "its queue has another key prefix: a graph's queues share one Redis and one \
                     prefix",
                ));
            }
            let opts = EnqueueOptions {
                id: Some(n.id.clone()),
                ..job.opts.clone()
            };
            let (mut env, delay, run_at) =
                queue.envelope(&job.payload, &opts, None, ambient.as_ref())?;
            // A step after others gets their results as its arguments.
            let step = opts.task.is_some() && job.payload.is_empty();
            if step && !prereqs[i].is_empty() {
                env.args_from = Some(ArgsFrom::Children);
            }
            let shard = queue.shard_for_job(&env.id, &opts);
            nodes.push(Node {
                queue,
                shard,
                env,
                delay,
                run_at,
                opts,
                parents: deps[i].iter().map(|&(d, p)| (at[d], p)).collect(),
                kids: prereqs[i].iter().map(|&p| at[p]).collect(),
            });
        }
        Ok(nodes)
    }
}

/// A cycle of `prereqs` (each runs after the next, the first repeated last), if any: the jobs
/// left once those whose prerequisites all went are taken away (Kahn) each run after one of
/// them, so following such edges from any of them comes back round.
fn find_cycle(prereqs: &[Vec<usize>]) -> Option<Vec<usize>> {
    let n = prereqs.len();
    let mut pending: Vec<usize> = prereqs.iter().map(Vec::len).collect();
    let mut deps: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, p) in prereqs.iter().enumerate() {
        for &j in p {
            deps[j].push(i);
        }
    }
    let mut free: Vec<usize> = (0..n).filter(|&i| pending[i] == 0).collect();
    let mut gone = vec![false; n];
    while let Some(j) = free.pop() {
        gone[j] = true;
        for &i in &deps[j] {
            pending[i] -= 1;
            if pending[i] == 0 {
                free.push(i);
            }
        }
    }
    let start = (0..n).find(|&i| !gone[i])?;
    let mut seen = vec![usize::MAX; n];
    let mut path: Vec<usize> = Vec::new();
    let mut at = start;
    while seen[at] == usize::MAX {
        seen[at] = path.len();
        path.push(at);
        at = *prereqs[at]
            .iter()
            .find(|&&j| !gone[j])
            .expect("a job left runs after another left");
    }
    let mut cycle = path.split_off(seen[at]);
    cycle.push(at);
    Some(cycle)
}

#[cfg(test)]
mod tests {
    use super::find_cycle;

    #[test]
    fn a_cycle_is_found_and_named_in_order() {
        assert_eq!(find_cycle(&[vec![], vec![0], vec![0, 1]]), None);
        assert_eq!(find_cycle(&[vec![0]]), Some(vec![0, 0]));
        // 0 after 1 after 2 after 0, and 3 after 0 (not in the cycle).
        let c = find_cycle(&[vec![1], vec![2], vec![0], vec![0]]).unwrap();
        assert_eq!(c.len(), 4);
        assert_eq!(c.first(), c.last());
    }
}
