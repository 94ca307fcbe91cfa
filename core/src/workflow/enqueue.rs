//! Writing a flow: laying out its jobs, checking their ids, then held, root, release (see the
//! module docs). Every call is bounded: at most [`WRITE_COST`] worth of jobs and children's list
//! entries per script call, a parent's list of more than [`INLINE_KIDS`] children staged
//! beforehand in runs of [`CHUNK`].

use std::collections::HashMap;

use super::relay::release;
use super::*;
use crate::job::{ms, Enqueued};
use crate::scripts::{DROP_FLOW, ENQUEUE_FLOW};

/// What one enqueue_flow.lua call may write, in [`JOB_COST`]s and entries of a children's list
/// passed inline (each costs 1): a job's records cost about four such entries.
const WRITE_COST: usize = 400;

/// A job's share of [`WRITE_COST`].
const JOB_COST: usize = 4;

/// Most held jobs released (or settled) per call.
pub(super) const RELEASE_RUN: usize = WRITE_COST / JOB_COST;

/// Most children of a parent passed inline with it; a parent of more has its list staged in
/// `fs:<token>` first (runs of [`CHUNK`]), which its write renames.
const INLINE_KIDS: usize = 250;

/// How long a staged children's list lives unless its parent's write takes it (ms): a writer
/// that died leaves none behind for long. (A flow is written well within its hold's grace.)
const STAGED_TTL_MS: u64 = 10 * HOLD_GRACE_MS;

impl Queue {
    /// Enqueues a flow: `root` and, to any depth, the jobs it waits for. The root goes to this
    /// queue (unless [`FlowJob::on`] says otherwise), each child to its parent's unless it says
    /// otherwise. A parent runs only once every one of its children finished (completed, or
    /// failed in a way its [`OnChildFailure`] lets through), and reads how they ended with
    /// [`children_results`](Self::children_results) ([`Job::children_results`]). The whole
    /// flow is written or none of it: a writer that dies half-way leaves held jobs the workers
    /// drop (see the module docs). Returns the root's id; a root `id` that exists already (or
    /// finished within the idempotency window) creates nothing (`created` false).
    ///
    /// Refused (`INVALID_ARGUMENT`, nothing written): more than [`MAX_FLOW_JOBS`] jobs under the
    /// root, two jobs with the same id, a `dedup` or `debounce`, a queue of another client, a
    /// child id that exists already (or finished within its queue's idempotency window), and
    /// what [`enqueue`](Self::enqueue) refuses.
    pub async fn enqueue_flow(&self, root: FlowJob) -> Result<Enqueued> {
        self.op("enqueue_flow", self.enqueue_flow_inner(root)).await
    }

    async fn enqueue_flow_inner(&self, root: FlowJob) -> Result<Enqueued> {
        let nodes = self.lay_out(root)?;
        self.write_flow(nodes).await
    }

    /// Writes laid-out jobs (root first; a tree's or a graph's): held, root, release.
    pub(super) async fn write_flow(&self, nodes: Vec<Node>) -> Result<Enqueued> {
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
        let created = |created| Enqueued {
            id: root_id.clone(),
            created,
        };
        // A parent of many children has its list staged, under a token of its own.
        let staged: Vec<Option<String>> = nodes
            .iter()
            .map(|n| (n.kids.len() > INLINE_KIDS).then(crate::job::new_job_id))
            .collect();
        let calls = plan_calls(&nodes, &staged);
        let one_call = calls.is_empty();
        if one_call {
            let all: Vec<usize> = (0..nodes.len()).collect();
            return match self.write_nodes(&nodes, &all, false, &staged).await? {
                None => Ok(created(true)),
                Some(id) if id == root_id => Ok(created(false)),
                Some(id) => Err(exists(&id)),
            };
        }
        // Every id is looked up before anything is written: a flow refused for an id that
        // exists leaves nothing behind (a race with its writer leaves held jobs, then dropped).
        if let Some(i) = self.first_taken(&nodes).await? {
            return if i == 0 {
                Ok(created(false))
            } else {
                Err(exists(&nodes[i].env.id))
            };
        }
        if let Err(e) = self.stage_children(&nodes, &staged).await {
            self.drop_held(&nodes, &[], &staged).await;
            return Err(e);
        }
        // Held first, per queue (shard), in calls of bounded cost; then the root; then the
        // release.
        let mut written: Vec<&[usize]> = Vec::new();
        for call in &calls {
            match self.write_nodes(&nodes, call, true, &staged).await {
                Ok(None) => written.push(call),
                Ok(Some(id)) => {
                    self.drop_held(&nodes, &written, &staged).await;
                    return Err(exists(&id));
                }
                Err(e) => {
                    self.drop_held(&nodes, &written, &staged).await;
                    return Err(e);
                }
            }
        }
        match self.write_nodes(&nodes, &[0], false, &staged).await {
            Ok(None) => {}
            Ok(Some(_)) => {
                self.drop_held(&nodes, &written, &staged).await;
                return Ok(created(false));
            }
            Err(e) => {
                // Refused by Redis (say, the root's queue is being obliterated): the root was not
                // written, and its held jobs go now. With no answer, it may have been written all
                // the same (a reply lost): the workers settle the held jobs by whether it exists.
                if e.kind() != crate::error::ErrorKind::Connection {
                    self.drop_held(&nodes, &written, &staged).await;
                }
                return Err(e);
            }
        }
        for call in &written {
            let n = &nodes[call[0]];
            let ids: Vec<&str> = call.iter().map(|&i| nodes[i].env.id.as_str()).collect();
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
        Ok(created(true))
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
            // The root and at most MAX_FLOW_JOBS jobs under it.
            if nodes.len() > MAX_FLOW_JOBS {
                return Err(Error::invalid(format!(
                    "a flow may have at most {MAX_FLOW_JOBS} jobs under its root"
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
                parents: parent.map(|p| (p, job.on_failure)).into_iter().collect(),
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

    /// The first job of the flow (root first) whose id exists already, or finished within its
    /// queue's idempotency window: per queue shard, one pipeline of HMGET and ZMSCORE in runs of
    /// [`CHUNK`].
    async fn first_taken(&self, nodes: &[Node]) -> Result<Option<usize>> {
        let mut by_base: Vec<(&JobKeys, Vec<usize>)> = Vec::new();
        for (i, n) in nodes.iter().enumerate() {
            match by_base
                .iter_mut()
                .find(|(k, _)| k.base() == n.keys().base())
            {
                Some((_, v)) => v.push(i),
                None => by_base.push((n.keys(), vec![i])),
            }
        }
        let mut conn = self.client.conn().await?;
        let mut first: Option<usize> = None;
        for (keys, idx) in by_base {
            let mut pipe = redis::pipe();
            for run in idx.chunks(CHUNK) {
                let ids: Vec<&str> = run.iter().map(|&i| nodes[i].env.id.as_str()).collect();
                pipe.cmd("HMGET").arg(keys.meta()).arg(&ids);
                pipe.cmd("ZMSCORE").arg(keys.idem()).arg(&ids);
            }
            let replies: Vec<Vec<redis::Value>> = pipe
                .query_async(&mut conn)
                .await
                .map_err(|e| self.client.err(e))?;
            for (run, pair) in idx.chunks(CHUNK).zip(replies.chunks(2)) {
                for (j, &i) in run.iter().enumerate() {
                    let taken = pair.iter().any(|r| !matches!(r[j], redis::Value::Nil));
                    if taken && first.is_none_or(|f| i < f) {
                        first = Some(i);
                    }
                }
            }
        }
        Ok(first)
    }

    /// Writes the children's lists of the parents that have more than [`INLINE_KIDS`] to their
    /// `fs:<token>` (runs of [`CHUNK`] entries, one pipeline per parent), which the parents'
    /// writes rename.
    async fn stage_children(&self, nodes: &[Node], staged: &[Option<String>]) -> Result<()> {
        let mut conn = self.client.conn().await?;
        for (n, token) in nodes.iter().zip(staged) {
            let Some(token) = token else { continue };
            let key = format!("{}{token}", n.keys().fs());
            let mut pipe = redis::pipe();
            for run in n.kids.chunks(CHUNK) {
                let refs: Vec<String> = run.iter().map(|&k| child_ref(&nodes[k])).collect();
                pipe.cmd("RPUSH").arg(&key).arg(refs).ignore();
            }
            pipe.cmd("PEXPIRE").arg(&key).arg(STAGED_TTL_MS).ignore();
            pipe.query_async::<()>(&mut conn)
                .await
                .map_err(|e| self.client.err(e))?;
        }
        Ok(())
    }

    /// Writes the jobs `idx` (all of one queue shard) with enqueue_flow.lua; `Some(id)`: that id
    /// existed and nothing was written.
    async fn write_nodes(
        &self,
        nodes: &[Node],
        idx: &[usize],
        held: bool,
        staged: &[Option<String>],
    ) -> Result<Option<String>> {
        let first = &nodes[idx[0]];
        let root = &nodes[0];
        let mut cmd = ENQUEUE_FLOW.cmd(&first.keys().for_script(&ENQUEUE_FLOW));
        cmd.arg(idx.len());
        for &i in idx {
            let n = &nodes[i];
            let o = &n.opts;
            // One notice head per job that waits for this one, a line each.
            let parent_head = n
                .parents
                .iter()
                .map(|&(p, on_failure)| {
                    let p = &nodes[p];
                    format!(
                        "{}\t{}\t{}\t{}\t{}",
                        on_failure.code(),
                        p.keys().base(),
                        p.env.id,
                        p.queue.policy,
                        n.queue.name()
                    )
                })
                .collect::<Vec<_>>()
                .join("\n");
            let kids: Vec<String> = match staged[i] {
                Some(_) => Vec::new(),
                None => n.kids.iter().map(|&k| child_ref(&nodes[k])).collect(),
            };
            let is_held = held && i != 0;
            let remember = o.id.is_some()
                && n.queue
                    .opts
                    .idempotency_window
                    .is_some_and(|w| !w.is_zero());
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
                .arg(kids.join("\n"))
                .arg(staged[i].as_deref().unwrap_or(""))
                .arg(if remember { "1" } else { "0" })
                .arg(crate::jobs::cost_arg(o.cost));
        }
        let (ok, id): (i64, Option<String>) = self.client.eval(&cmd, &ENQUEUE_FLOW).await?;
        match ok {
            1 => Ok(None),
            0 => Ok(Some(id.unwrap_or_default())),
            _ => Err(Error::new(
                crate::error::ErrorKind::Redis,
                format!(
                    "the children's list staged for flow job {:?} is missing or incomplete (a \
                     staged list expires after {} s); the job was not written",
                    id.unwrap_or_default(),
                    STAGED_TTL_MS / 1000
                ),
            )),
        }
    }

    /// Drops held jobs already written (a flow refused half-way), and the children's lists
    /// staged for parents not written; what fails here the workers drop once the hold's grace
    /// is over (and the lists expire).
    async fn drop_held(&self, nodes: &[Node], written: &[&[usize]], staged: &[Option<String>]) {
        for (n, token) in nodes.iter().zip(staged) {
            let Some(token) = token else { continue };
            let key = format!("{}{token}", n.keys().fs());
            if let Ok(mut conn) = self.client.conn().await {
                let _ = redis::cmd("UNLINK")
                    .arg(&key)
                    .query_async::<i64>(&mut conn)
                    .await;
            }
        }
        for call in written {
            let n = &nodes[call[0]];
            let ids: Vec<&str> = call.iter().map(|&i| nodes[i].env.id.as_str()).collect();
            let mut cmd = DROP_FLOW.cmd(&n.keys().for_script(&DROP_FLOW));
            cmd.arg(&ids);
            if let Err(e) = self.client.eval::<i64>(&cmd, &DROP_FLOW).await {
                log::warn!("tideq: dropping the held jobs of a refused flow failed: {e}");
            }
        }
    }
}

/// How a flow's jobs are written: no calls when the whole flow is one call (all on the root's
/// queue shard, nothing staged, within [`WRITE_COST`]); else the held jobs (all but the root),
/// per queue shard, in calls of at most [`WRITE_COST`] (a job costs [`JOB_COST`], each entry of
/// a children's list passed inline 1; a staged list costs nothing here).
fn plan_calls(nodes: &[Node], staged: &[Option<String>]) -> Vec<Vec<usize>> {
    let cost = |i: usize| {
        JOB_COST
            + nodes[i].parents.len().saturating_sub(1)
            + if staged[i].is_some() {
                0
            } else {
                nodes[i].kids.len()
            }
    };
    let root_base = nodes[0].keys().base();
    if staged.iter().all(Option::is_none)
        && (0..nodes.len()).map(cost).sum::<usize>() <= WRITE_COST
        && nodes.iter().all(|n| n.keys().base() == root_base)
    {
        return Vec::new();
    }
    let mut by_base: Vec<(&str, Vec<usize>)> = Vec::new();
    for (i, n) in nodes.iter().enumerate().skip(1) {
        let base = n.keys().base();
        match by_base.iter_mut().find(|(b, _)| *b == base) {
            Some((_, v)) => v.push(i),
            None => by_base.push((base, vec![i])),
        }
    }
    let mut calls: Vec<Vec<usize>> = Vec::new();
    for (_, idx) in by_base {
        let mut call: Vec<usize> = Vec::new();
        let mut spent = 0;
        for i in idx {
            if !call.is_empty() && spent + cost(i) > WRITE_COST {
                calls.push(std::mem::take(&mut call));
                spent = 0;
            }
            call.push(i);
            spent += cost(i);
        }
        calls.push(call);
    }
    calls
}

/// A child's entry in its parent's list: `"<base>\t<id>\t<queue>"`.
fn child_ref(n: &Node) -> String {
    format!("{}\t{}\t{}", n.keys().base(), n.env.id, n.queue.name())
}

/// An id of the flow that exists already: nothing was written.
fn exists(id: &str) -> Error {
    Error::invalid(format!(
        "job id {id:?} exists already (or finished within its queue's idempotency window); a \
         flow's jobs must be new (nothing was written)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Client, QueueOptions};
    use tideq_testing::RedisServer;

    /// Issue 40, item 9: the parent of 99,999 children had its whole list written in one call.
    #[test]
    fn every_write_of_a_flow_of_100000_jobs_is_bounded_and_long_lists_are_staged() {
        let client = Client::open("redis://127.0.0.1:1").unwrap();
        let q = Queue::new(&client, "roots", QueueOptions::default()).unwrap();
        let parts = Queue::sharded(&client, "parts", 3, QueueOptions::default()).unwrap();
        let job = |i: usize| FlowJob::new(format!("{i}").into_bytes()).on(&parts);
        let mid = FlowJob::new(b"mid".to_vec()).children((0..1_500).map(job));
        let few = FlowJob::new(b"few".to_vec()).children((0..INLINE_KIDS).map(job));
        let root = FlowJob::new(b"root".to_vec())
            .children((0..MAX_FLOW_JOBS - 1_502 - INLINE_KIDS).map(job))
            .child(mid)
            .child(few);
        let nodes = q.lay_out(root).unwrap();
        assert_eq!(nodes.len(), MAX_FLOW_JOBS + 1);
        let staged: Vec<Option<String>> = nodes
            .iter()
            .map(|n| (n.kids.len() > INLINE_KIDS).then(crate::job::new_job_id))
            .collect();
        assert_eq!(
            staged.iter().flatten().count(),
            2,
            "the root's list and mid's"
        );
        let calls = plan_calls(&nodes, &staged);
        let mut seen = vec![0; nodes.len()];
        for call in &calls {
            let base = nodes[call[0]].keys().base();
            let cost: usize = call
                .iter()
                .map(|&i| {
                    JOB_COST
                        + if staged[i].is_some() {
                            0
                        } else {
                            nodes[i].kids.len()
                        }
                })
                .sum();
            assert!(cost <= WRITE_COST, "a call of cost {cost}");
            for &i in call {
                assert_eq!(nodes[i].keys().base(), base, "one shard per call");
                seen[i] += 1;
            }
        }
        assert_eq!(seen[0], 0, "the root is written on its own, last");
        assert!(seen[1..].iter().all(|&n| n == 1), "every other job once");
        // A small flow on one queue shard is one call.
        let small = FlowJob::new(b"r".to_vec()).children((0..50).map(|i| FlowJob::new(vec![i])));
        let nodes = q.lay_out(small).unwrap();
        assert!(plan_calls(&nodes, &vec![None; nodes.len()]).is_empty());
    }

    #[tokio::test]
    async fn a_parent_whose_staged_list_is_gone_or_short_is_not_written() {
        let s = RedisServer::start_private(tideq_testing::free_port(), &[]);
        let client = Client::open(&s.url).unwrap();
        let q = Queue::new(&client, "staged", QueueOptions::default()).unwrap();
        let kids = (0..INLINE_KIDS + 1).map(|i| FlowJob::new(format!("{i}").into_bytes()));
        let nodes = q
            .lay_out(FlowJob::new(b"root".to_vec()).children(kids))
            .unwrap();
        let token = crate::job::new_job_id();
        let mut staged = vec![None; nodes.len()];
        staged[0] = Some(token.clone());
        let root = nodes[0].env.id.clone();
        // Never staged, then staged short of one child.
        for short in [false, true] {
            if short {
                let mut conn = client.conn().await.unwrap();
                let refs: Vec<String> = nodes[0].kids[1..]
                    .iter()
                    .map(|&k| child_ref(&nodes[k]))
                    .collect();
                redis::cmd("RPUSH")
                    .arg(format!("{}{token}", nodes[0].keys().fs()))
                    .arg(refs)
                    .query_async::<()>(&mut conn)
                    .await
                    .unwrap();
            }
            let e = q
                .write_nodes(&nodes, &[0], false, &staged)
                .await
                .unwrap_err();
            assert!(e.message().contains("is missing or incomplete"), "{e}");
            assert!(q.get(&root).await.unwrap().is_none(), "nothing written");
        }
    }
}
