//! Writing a flow: laying out its jobs, then held, root, release (see the module docs).

use std::collections::HashMap;

use super::relay::release;
use super::*;
use crate::job::{ms, Enqueued};
use crate::scripts::{DROP_FLOW, ENQUEUE_FLOW};

impl Queue {
    /// Enqueues a flow: `root` and, to any depth, the jobs it waits for. The root goes to this
    /// queue (unless [`FlowJob::on`] says otherwise), each child to its parent's unless it says
    /// otherwise. A parent runs only once every one of its children finished (completed, or
    /// failed in a way its [`OnChildFailure`] lets through), and reads how they ended with
    /// [`children_results`](Self::children_results) ([`Job::children_results`]). The whole
    /// flow is written or none of it: a writer that dies half-way leaves held jobs the workers
    /// drop (see the module docs). Returns the root's id; a root `id` that exists already
    /// creates nothing (`created` false).
    ///
    /// Refused (`INVALID_ARGUMENT`, nothing written): more than [`MAX_FLOW_JOBS`] jobs, two jobs
    /// with the same id, a `dedup` or `debounce`, a queue of another client, a child id that
    /// exists already, and what [`enqueue`](Self::enqueue) refuses.
    pub async fn enqueue_flow(&self, root: FlowJob) -> Result<Enqueued> {
        self.op("enqueue_flow", self.enqueue_flow_inner(root)).await
    }

    async fn enqueue_flow_inner(&self, root: FlowJob) -> Result<Enqueued> {
        let nodes = self.lay_out(root)?;
        // The shard count of every queue the flow writes to, once its input is checked: each
        // checked, then (none refused) recorded where it is not yet, before anything else is
        // written (`shards.rs`).
        let mut queues: Vec<&Queue> = Vec::new();
        for n in &nodes {
            if !queues.iter().any(|q| q.name == n.queue.name) {
                queues.push(&n.queue);
            }
        }
        for write in [false, true] {
            for q in &queues {
                q.check_shards(write).await?;
            }
        }
        let root_id = nodes[0].env.id.clone();
        // An idempotent root: nothing is written when it exists.
        if self.flow_job_exists(&nodes[0]).await? {
            return Ok(Enqueued {
                id: root_id,
                created: false,
            });
        }
        let root_base = nodes[0].keys().base().to_string();
        let one_call = nodes.len() <= CHUNK && nodes.iter().all(|n| n.keys().base() == root_base);
        if one_call {
            let all: Vec<usize> = (0..nodes.len()).collect();
            return match self.write_nodes(&nodes, &all, false).await? {
                None => Ok(Enqueued {
                    id: root_id,
                    created: true,
                }),
                Some(id) if id == root_id => Ok(Enqueued {
                    id: root_id,
                    created: false,
                }),
                Some(id) => Err(exists(&id)),
            };
        }
        // Held first, per queue (shard), then the root, then the release.
        let mut by_base: Vec<(String, Vec<usize>)> = Vec::new();
        for (i, n) in nodes.iter().enumerate().skip(1) {
            let base = n.keys().base();
            match by_base.iter_mut().find(|(b, _)| b == base) {
                Some((_, v)) => v.push(i),
                None => by_base.push((base.to_string(), vec![i])),
            }
        }
        let mut written: Vec<&[usize]> = Vec::new();
        for (_, idx) in &by_base {
            for chunk in idx.chunks(CHUNK) {
                match self.write_nodes(&nodes, chunk, true).await {
                    Ok(None) => written.push(chunk),
                    Ok(Some(id)) => {
                        self.drop_held(&nodes, &written).await;
                        return Err(exists(&id));
                    }
                    Err(e) => {
                        self.drop_held(&nodes, &written).await;
                        return Err(e);
                    }
                }
            }
        }
        match self.write_nodes(&nodes, &[0], false).await {
            Ok(None) => {}
            Ok(Some(_)) => {
                self.drop_held(&nodes, &written).await;
                return Ok(Enqueued {
                    id: root_id,
                    created: false,
                });
            }
            Err(e) => {
                // The root may have been written all the same (a reply lost): the workers settle
                // the held jobs by whether it exists.
                return Err(e);
            }
        }
        for chunk in &written {
            let n = &nodes[chunk[0]];
            let ids: Vec<&str> = chunk.iter().map(|&i| nodes[i].env.id.as_str()).collect();
            // A release that fails is done by the workers once the hold's grace is over.
            if let Err(e) = release(&self.client, n.keys(), &ids).await {
                log::warn!(
                    "tideq: flow {root_id:?}: releasing {} job(s) of queue {:?} failed (the \
                     workers release them within {} s): {e}",
                    ids.len(),
                    n.queue.name(),
                    HOLD_GRACE_MS / 1000
                );
            }
        }
        Ok(Enqueued {
            id: root_id,
            created: true,
        })
    }

    /// The flow's jobs, root first, each with its queue, shard, envelope and family.
    fn lay_out(&self, root: FlowJob) -> Result<Vec<Node>> {
        let mut nodes: Vec<Node> = Vec::new();
        let mut seen: HashMap<String, ()> = HashMap::new();
        // The caller's trace context, for the jobs that carry none (looked up once).
        let ambient = crate::otel::ambient(std::iter::once(&root.opts));
        // (job, the queue it inherits, its parent, its chain's queue when it is a chain's link
        // before the last)
        type Todo = (FlowJob, Queue, Option<usize>, Option<Queue>);
        let mut stack: Vec<Todo> = vec![(root, self.clone(), None, None)];
        while let Some((mut job, inherited, parent, chained)) = stack.pop() {
            if nodes.len() >= MAX_FLOW_JOBS {
                return Err(Error::invalid(format!(
                    "a flow may have at most {MAX_FLOW_JOBS} jobs"
                )));
            }
            // A chain's link without a queue goes where the chain's last link goes.
            let queue = job
                .queue
                .take()
                .unwrap_or(chained.clone().unwrap_or(inherited));
            if queue.client.config().prefix() != self.client.config().prefix() {
                return Err(Error::invalid(format!(
                    "queue {:?} of a flow has another key prefix: a flow's queues share one \
                     Redis and one prefix",
                    queue.name()
                )));
            }
            if job.opts.dedup.is_some() || job.opts.debounce.is_some() {
                return Err(Error::invalid(
                    "a flow's jobs take no dedup or debounce (each is written once)",
                ));
            }
            let (mut env, delay, run_at) =
                queue.envelope(&job.payload, &job.opts, None, ambient.as_ref())?;
            env.args_from = job.args_from;
            if seen.insert(env.id.clone(), ()).is_some() {
                return Err(Error::invalid(format!(
                    "job id {:?} appears twice in the flow",
                    env.id
                )));
            }
            let shard = queue.shard_for_job(&env.id, &job.opts);
            let me = nodes.len();
            if let Some(p) = parent {
                nodes[p].kids.push(me);
            }
            let children = std::mem::take(&mut job.children);
            nodes.push(Node {
                queue: queue.clone(),
                shard,
                env,
                delay,
                run_at,
                opts: job.opts,
                on_failure: job.on_failure,
                parent,
                kids: Vec::new(),
            });
            let chain = (nodes[me].env.args_from == Some(crate::envelope::ArgsFrom::Previous))
                .then(|| chained.unwrap_or_else(|| queue.clone()));
            for child in children.into_iter().rev() {
                stack.push((child, queue.clone(), Some(me), chain.clone()));
            }
        }
        Ok(nodes)
    }

    /// Whether the flow's root exists already (or finished within the idempotency window).
    async fn flow_job_exists(&self, n: &Node) -> Result<bool> {
        let mut conn = self.client.conn().await?;
        let (meta, idem): (bool, Option<String>) = redis::pipe()
            .hexists(n.keys().meta(), &n.env.id)
            .zscore(n.keys().idem(), &n.env.id)
            .query_async(&mut conn)
            .await
            .map_err(|e| self.client.err(e))?;
        Ok(meta || (idem.is_some() && n.opts.id.is_some()))
    }

    /// Writes the jobs `idx` (all of one queue shard) with enqueue_flow.lua; `Some(id)`: that id
    /// existed and nothing was written.
    async fn write_nodes(
        &self,
        nodes: &[Node],
        idx: &[usize],
        held: bool,
    ) -> Result<Option<String>> {
        let first = &nodes[idx[0]];
        let root = &nodes[0];
        let mut cmd = ENQUEUE_FLOW.cmd(&first.keys().for_script(&ENQUEUE_FLOW));
        cmd.arg(idx.len());
        for &i in idx {
            let n = &nodes[i];
            let o = &n.opts;
            let parent_head = match n.parent {
                None => String::new(),
                Some(p) => {
                    let p = &nodes[p];
                    format!(
                        "{}\t{}\t{}\t{}\t{}",
                        n.on_failure.code(),
                        p.keys().base(),
                        p.env.id,
                        p.queue.policy,
                        n.queue.name()
                    )
                }
            };
            let kids: Vec<String> = n
                .kids
                .iter()
                .map(|&k| {
                    let k = &nodes[k];
                    format!("{}\t{}\t{}", k.keys().base(), k.env.id, k.queue.name())
                })
                .collect();
            let is_held = held && i != 0;
            cmd.arg(&n.env.id)
                .arg(n.env.encode())
                .arg(n.env.max_attempts)
                .arg(n.delay)
                .arg(n.run_at)
                .arg(crate::scripts::encoding::route_arg(
                    o.priority,
                    o.group.as_deref(),
                ))
                .arg(crate::scripts::encoding::expiry_arg(
                    o.expires_after.map(ms),
                    o.expires_at_ms,
                ))
                .arg(if is_held { "1" } else { "0" })
                .arg(n.kids.len())
                .arg(parent_head)
                .arg(if is_held {
                    format!("{}\t{}", root.env.id, root.keys().base())
                } else {
                    String::new()
                })
                .arg(kids.join("\n"));
        }
        let (ok, id): (i64, Option<String>) = self.client.eval(&cmd, &ENQUEUE_FLOW).await?;
        Ok((ok == 0).then(|| id.unwrap_or_default()))
    }

    /// Drops held jobs already written (a flow refused half-way); what fails here the workers
    /// drop once the hold's grace is over.
    async fn drop_held(&self, nodes: &[Node], written: &[&[usize]]) {
        for chunk in written {
            let n = &nodes[chunk[0]];
            let ids: Vec<&str> = chunk.iter().map(|&i| nodes[i].env.id.as_str()).collect();
            let mut cmd = DROP_FLOW.cmd(&n.keys().for_script(&DROP_FLOW));
            cmd.arg(&ids);
            if let Err(e) = self.client.eval::<i64>(&cmd, &DROP_FLOW).await {
                log::warn!("tideq: dropping the held jobs of a refused flow failed: {e}");
            }
        }
    }

    /// How the children of job `parent_id` (of this queue) ended so far, in no particular order
    /// (each once). Read in pages, so a parent of many children does not block Redis.
    pub async fn children_results(&self, parent_id: &str) -> Result<Vec<ChildResult>> {
        self.op("children_results", async {
            crate::job::validate_job_id(parent_id)?;
            let mut out = Vec::new();
            for keys in self.shards.iter() {
                let key = format!("{}{parent_id}", keys.fk());
                let mut conn = self.client.conn().await?;
                let mut cursor = 0u64;
                loop {
                    let (next, page): (u64, Vec<(String, Vec<u8>)>) = redis::cmd("HSCAN")
                        .arg(&key)
                        .arg(cursor)
                        .arg("COUNT")
                        .arg(500)
                        .query_async(&mut conn)
                        .await
                        .map_err(|e| self.client.err(e))?;
                    for (field, value) in page {
                        let Some((queue, id)) = field.split_once('\t') else {
                            continue;
                        };
                        if let Some(outcome) = ChildOutcome::parse(&value) {
                            out.push(ChildResult {
                                queue: queue.to_string(),
                                id: id.to_string(),
                                outcome,
                            });
                        }
                    }
                    if next == 0 {
                        break;
                    }
                    cursor = next;
                }
            }
            Ok(out)
        })
        .await
    }
}

/// An id of the flow that exists already: nothing was written.
fn exists(id: &str) -> Error {
    Error::invalid(format!(
        "job id {id:?} exists already; a flow's jobs must be new (nothing was written)"
    ))
}
