//! Flows: a parent job that runs once every one of its children finished, and reads their
//! results. Children may live on other queues (sharded ones included) and have children of their
//! own, to any depth.
//!
//! How it holds together across hash slots (docs/data-model.md, "Flows"): a flow is written in
//! three steps. Every job but the root is written *held* (it cannot run) on its own queue, then
//! the root, then the held jobs are released. A flow whose writer died half-way is finished by
//! the workers: a job held longer than [`HOLD_GRACE_MS`] is released when its root exists and
//! waits, and dropped otherwise, so a flow runs whole or not at all. A flow all of whose jobs
//! share one queue (shard) and that has at most 1000 jobs is written in one script call.
//!
//! When a child finishes for good (completed, dead-lettered, expired, cancelled, lost), the
//! script that ended it leaves a notice in its queue's outbox; a worker of that queue relays it
//! to the parent's queue, where it is recorded once (a notice relayed twice counts
//! once) and the parent, its last child done, becomes ready.

use std::collections::HashMap;

use serde::Serialize;

use crate::envelope::{Envelope, PayloadFormat};
use crate::error::{Error, Result};
use crate::job::{ms, EnqueueOptions, Enqueued, Job};
use crate::jobs::Queue;
use crate::keys::JobKeys;
use crate::scripts::{CANCEL_JOB, DROP_FLOW, ENQUEUE_FLOW, FLOW_NOTIFY, RELEASE_FLOW};
use crate::Client;

/// Most jobs one flow may have.
pub const MAX_FLOW_JOBS: usize = 100_000;

/// How long a flow's job may stay held before the workers settle it (ms): released if the
/// flow's root exists and waits, dropped if not.
pub const HOLD_GRACE_MS: u64 = 30_000;

/// Jobs written per script call.
const CHUNK: usize = 1000;

/// What a child's failure (dead-lettered, expired, cancelled or lost) does to its parent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnChildFailure {
    /// The parent fails at once: it is dead-lettered, its error naming the child and why (and
    /// its own parent is told in turn). The default. Its other children run on.
    #[default]
    FailParent,
    /// The parent runs once its other children finished; the failure is recorded as ignored
    /// ([`ChildOutcome::Ignored`]).
    Ignore,
    /// The parent runs once every child finished, and finds the failure among its children's
    /// results.
    Continue,
}

impl OnChildFailure {
    fn code(self) -> char {
        match self {
            OnChildFailure::FailParent => 'f',
            OnChildFailure::Ignore => 'i',
            OnChildFailure::Continue => 'c',
        }
    }

    /// `"fail"`, `"ignore"` or `"continue"` (how the bindings spell it).
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "fail" => Ok(OnChildFailure::FailParent),
            "ignore" => Ok(OnChildFailure::Ignore),
            "continue" => Ok(OnChildFailure::Continue),
            _ => Err(Error::invalid(format!(
                "on_failure must be \"fail\", \"ignore\" or \"continue\", got {s:?}"
            ))),
        }
    }
}

/// One job of a flow, with the jobs it waits for.
///
/// ```no_run
/// # async fn f(q: &tideq::Queue, parts: &tideq::Queue) -> tideq::Result<()> {
/// use tideq::FlowJob;
/// let flow = FlowJob::new(b"assemble the report".to_vec()).children([
///     FlowJob::new(b"part 1".to_vec()).on(parts),
///     FlowJob::new(b"part 2".to_vec()).on(parts),
/// ]);
/// let root = q.enqueue_flow(flow).await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct FlowJob {
    pub(crate) queue: Option<Queue>,
    pub(crate) payload: Vec<u8>,
    pub(crate) opts: EnqueueOptions,
    pub(crate) children: Vec<FlowJob>,
    pub(crate) on_failure: OnChildFailure,
}

impl std::fmt::Debug for FlowJob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FlowJob")
            .field("queue", &self.queue.as_ref().map(Queue::name))
            .field("payload_len", &self.payload.len())
            .field("opts", &self.opts)
            .field("children", &self.children)
            .field("on_failure", &self.on_failure)
            .finish()
    }
}

impl FlowJob {
    /// A job with this payload (raw bytes), on its parent's queue (the root: the queue
    /// [`enqueue_flow`](Queue::enqueue_flow) is called on) unless [`on`](Self::on) says otherwise.
    pub fn new(payload: impl Into<Vec<u8>>) -> Self {
        FlowJob {
            queue: None,
            payload: payload.into(),
            opts: EnqueueOptions::default(),
            children: Vec::new(),
            on_failure: OnChildFailure::default(),
        }
    }

    /// A task job: task `name` with `args` encoded as JSON (as [`Queue::enqueue_task`] does).
    pub fn task<T: Serialize + ?Sized>(name: &str, args: &T) -> Result<Self> {
        Self::task_as(name, args, PayloadFormat::Json)
    }

    /// A task job with `args` encoded as `format` (JSON or MessagePack).
    pub fn task_as<T: Serialize + ?Sized>(
        name: &str,
        args: &T,
        format: PayloadFormat,
    ) -> Result<Self> {
        let payload = crate::task::encode_args(args, format)?;
        Ok(FlowJob {
            opts: EnqueueOptions {
                task: Some(name.to_string()),
                format: Some(format),
                ..Default::default()
            },
            ..FlowJob::new(payload)
        })
    }

    /// The queue this job goes to (a queue of the same client).
    pub fn on(mut self, queue: &Queue) -> Self {
        self.queue = Some(queue.clone());
        self
    }

    /// Its options, as [`Queue::enqueue`] takes them (no `dedup` or `debounce`: a flow's jobs
    /// are each written once). The task name and format of a [`task`](Self::task) job are kept
    /// (its arguments are encoded already).
    pub fn options(mut self, opts: EnqueueOptions) -> Self {
        let (task, format) = (self.opts.task.take(), self.opts.format.take());
        let encoded = task.is_some();
        self.opts = EnqueueOptions {
            task: task.or(opts.task.clone()),
            format: if encoded { format } else { opts.format },
            ..opts
        };
        self
    }

    /// Adds a job this one waits for.
    pub fn child(mut self, child: FlowJob) -> Self {
        self.children.push(child);
        self
    }

    /// Adds jobs this one waits for.
    pub fn children(mut self, children: impl IntoIterator<Item = FlowJob>) -> Self {
        self.children.extend(children);
        self
    }

    /// What this job's failure does to its parent (default: fails it).
    pub fn on_failure(mut self, on_failure: OnChildFailure) -> Self {
        self.on_failure = on_failure;
        self
    }
}

/// How a child ended, as its parent sees it ([`Queue::children_results`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChildOutcome {
    /// Completed, with what its handler returned (`None`: nothing).
    Completed(Option<Vec<u8>>),
    /// Dead-lettered, with its last error.
    Failed(String),
    /// Not started by its deadline (`expires_after`, `expires_at_ms`).
    Expired(String),
    /// Cancelled.
    Cancelled,
    /// Its data went missing (evicted, or deleted by hand).
    Lost,
    /// Failed (dead-lettered, expired, cancelled or lost, as the text says) under
    /// [`OnChildFailure::Ignore`].
    Ignored(String),
}

impl ChildOutcome {
    /// From the record `flow_notify.lua` keeps: "c<result>", "x<error>", "e<error>", "n", "l",
    /// or "i" then one of those.
    fn parse(v: &[u8]) -> Option<ChildOutcome> {
        let (&kind, data) = v.split_first()?;
        let text = || String::from_utf8_lossy(data).into_owned();
        Some(match kind {
            b'c' => ChildOutcome::Completed((!data.is_empty()).then(|| data.to_vec())),
            b'x' => ChildOutcome::Failed(text()),
            b'e' => ChildOutcome::Expired(text()),
            b'n' => ChildOutcome::Cancelled,
            b'l' => ChildOutcome::Lost,
            b'i' => ChildOutcome::Ignored(match ChildOutcome::parse(data)? {
                ChildOutcome::Failed(e) | ChildOutcome::Expired(e) => e,
                ChildOutcome::Cancelled => "cancelled".into(),
                ChildOutcome::Lost => "lost".into(),
                other => format!("{other:?}"),
            }),
            _ => return None,
        })
    }

    /// `"completed"`, `"failed"`, `"expired"`, `"cancelled"`, `"lost"` or `"ignored"`.
    pub fn as_str(&self) -> &'static str {
        match self {
            ChildOutcome::Completed(_) => "completed",
            ChildOutcome::Failed(_) => "failed",
            ChildOutcome::Expired(_) => "expired",
            ChildOutcome::Cancelled => "cancelled",
            ChildOutcome::Lost => "lost",
            ChildOutcome::Ignored(_) => "ignored",
        }
    }
}

/// One finished child of a parent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChildResult {
    /// The child's queue.
    pub queue: String,
    pub id: String,
    pub outcome: ChildOutcome,
}

/// A job's place in a flow, as [`Queue::get`] shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowRef {
    pub queue: String,
    pub id: String,
}

/// One job of a flow once laid out: where it goes and how it is written.
struct Node {
    queue: Queue,
    shard: usize,
    env: Envelope,
    delay: u64,
    run_at: u64,
    opts: EnqueueOptions,
    on_failure: OnChildFailure,
    parent: Option<usize>,
    kids: Vec<usize>,
}

impl Node {
    fn keys(&self) -> &JobKeys {
        &self.queue.shards[self.shard]
    }
}

/// The queue name of a key base `"<prefix>:{<tag>}:"` (a shard's tag is `<queue>#<i>.<salt>`).
pub(crate) fn queue_of_base(base: &str) -> &str {
    let tag = base
        .split_once('{')
        .and_then(|(_, rest)| rest.split_once('}'))
        .map_or(base, |(tag, _)| tag);
    tag.split_once('#').map_or(tag, |(q, _)| q)
}

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
        // (job, its queue, its parent)
        let mut stack: Vec<(FlowJob, Queue, Option<usize>)> = vec![(root, self.clone(), None)];
        while let Some((mut job, inherited, parent)) = stack.pop() {
            if nodes.len() >= MAX_FLOW_JOBS {
                return Err(Error::invalid(format!(
                    "a flow may have at most {MAX_FLOW_JOBS} jobs"
                )));
            }
            let queue = job.queue.take().unwrap_or(inherited);
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
            let (env, delay, run_at) =
                queue.envelope(&job.payload, &job.opts, None, ambient.as_ref())?;
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
            for child in children.into_iter().rev() {
                stack.push((child, queue.clone(), Some(me)));
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

impl Job {
    /// How this job's children ended ([`Queue::children_results`]): every child has finished by
    /// the time a parent runs.
    pub async fn children_results(&self) -> Result<Vec<ChildResult>> {
        self.owner.children_results(&self.id).await
    }
}

/// An id of the flow that exists already: nothing was written.
fn exists(id: &str) -> Error {
    Error::invalid(format!(
        "job id {id:?} exists already; a flow's jobs must be new (nothing was written)"
    ))
}

/// Releases held jobs of one queue shard (release_flow.lua).
async fn release(client: &Client, keys: &JobKeys, ids: &[&str]) -> Result<i64> {
    let mut cmd = RELEASE_FLOW.cmd(&keys.for_script(&RELEASE_FLOW));
    cmd.arg(ids);
    client.eval(&cmd, &RELEASE_FLOW).await
}

/// Relays the notices in `keys`' outbox to their parents' queues (flow_notify.lua there), and
/// those their deliveries leave in turn (a parent that failed tells its own parent). One relayer
/// per outbox at a time (a short lock); a notice is removed only once delivered, and delivering
/// one twice records it once. Returns how many were delivered.
pub(crate) async fn relay(client: &Client, keys: &JobKeys) -> Result<usize> {
    let mut todo = vec![keys.clone()];
    let mut delivered = 0;
    while let Some(keys) = todo.pop() {
        let mut conn = client.conn().await?;
        let token = crate::job::new_job_id();
        let locked: Option<String> = redis::cmd("SET")
            .arg(keys.frelay())
            .arg(&token)
            .arg("NX")
            .arg("PX")
            .arg(10_000)
            .query_async(&mut conn)
            .await
            .map_err(|e| client.err(e))?;
        if locked.is_none() {
            continue;
        }
        loop {
            let notes: Vec<Vec<u8>> = redis::cmd("LRANGE")
                .arg(keys.fout())
                .arg(0)
                .arg(CHUNK - 1)
                .query_async(&mut conn)
                .await
                .map_err(|e| client.err(e))?;
            if notes.is_empty() {
                break;
            }
            // By parent queue (shard): (its keys, its policy, the notices' values).
            let mut by_base: Vec<(String, String, Vec<Vec<u8>>)> = Vec::new();
            for note in &notes {
                let Some(n) = Notice::parse(note) else {
                    log::warn!(
                        "tideq: dropping an unreadable flow notice in {}",
                        keys.fout()
                    );
                    continue;
                };
                let i = match by_base.iter().position(|(b, _, _)| b == n.base) {
                    Some(i) => i,
                    None => {
                        by_base.push((n.base.to_string(), n.policy.to_string(), Vec::new()));
                        by_base.len() - 1
                    }
                };
                let v = &mut by_base[i].2;
                v.push(n.parent.as_bytes().to_vec());
                v.push(vec![n.on_failure]);
                v.push(format!("{}\t{}", n.queue, n.child).into_bytes());
                v.push(n.outcome.to_vec());
            }
            for (base, policy, args) in by_base {
                let Some(parent) = JobKeys::from_base(&base) else {
                    log::warn!(
                        "tideq: dropping flow notices for an unknown queue key base {base:?}"
                    );
                    continue;
                };
                let mut cmd = FLOW_NOTIFY.cmd(&parent.for_script(&FLOW_NOTIFY));
                cmd.arg(&policy);
                for a in &args {
                    cmd.arg(a.as_slice());
                }
                let (_, more): (i64, i64) = client.eval(&cmd, &FLOW_NOTIFY).await?;
                if more == 1 && parent.base() != keys.base() {
                    todo.push(parent);
                }
            }
            delivered += notes.len();
            let _: () = redis::cmd("LTRIM")
                .arg(keys.fout())
                .arg(notes.len())
                .arg(-1)
                .query_async(&mut conn)
                .await
                .map_err(|e| client.err(e))?;
        }
        let _: () = redis::cmd("DEL")
            .arg(keys.frelay())
            .query_async(&mut conn)
            .await
            .map_err(|e| client.err(e))?;
    }
    Ok(delivered)
}

/// Settles the jobs of `keys` held longer than [`HOLD_GRACE_MS`] (a flow whose writer stopped
/// half-way): released when their root exists and waits, dropped otherwise. `now`: Redis time.
pub(crate) async fn settle_held(client: &Client, keys: &JobKeys, now: u64) -> Result<usize> {
    let mut conn = client.conn().await?;
    let old: Vec<String> = redis::cmd("ZRANGEBYSCORE")
        .arg(keys.fhold())
        .arg("-inf")
        .arg(now.saturating_sub(HOLD_GRACE_MS))
        .arg("LIMIT")
        .arg(0)
        .arg(CHUNK)
        .query_async(&mut conn)
        .await
        .map_err(|e| client.err(e))?;
    if old.is_empty() {
        return Ok(0);
    }
    let roots: Vec<Option<String>> = redis::cmd("HMGET")
        .arg(keys.froot())
        .arg(&old)
        .query_async(&mut conn)
        .await
        .map_err(|e| client.err(e))?;
    // Per root ("<id>\t<base>"), whether it exists and waits.
    let mut alive: HashMap<String, bool> = HashMap::new();
    let (mut keep, mut drop) = (Vec::new(), Vec::new());
    for (id, root) in old.iter().zip(roots) {
        let Some(root) = root else { continue };
        let mut parts = root.splitn(3, '\t');
        let (_due, rid, rbase) = (parts.next(), parts.next(), parts.next());
        let (Some(rid), Some(rbase)) = (rid, rbase) else {
            drop.push(id.as_str());
            continue;
        };
        let key = format!("{rid}\t{rbase}");
        let ok = match alive.get(&key) {
            Some(&ok) => ok,
            None => {
                let ok = match JobKeys::from_base(rbase) {
                    Some(rk) => {
                        let meta: Option<String> = redis::cmd("HGET")
                            .arg(rk.meta())
                            .arg(rid)
                            .query_async(&mut conn)
                            .await
                            .map_err(|e| client.err(e))?;
                        meta.is_some_and(|m| m.starts_with("q|"))
                    }
                    None => false,
                };
                alive.insert(key, ok);
                ok
            }
        };
        if ok {
            keep.push(id.as_str());
        } else {
            drop.push(id.as_str());
        }
    }
    let mut n = 0;
    if !keep.is_empty() {
        n += release(client, keys, &keep).await? as usize;
    }
    if !drop.is_empty() {
        let mut cmd = DROP_FLOW.cmd(&keys.for_script(&DROP_FLOW));
        cmd.arg(&drop);
        n += client.eval::<i64>(&cmd, &DROP_FLOW).await? as usize;
    }
    Ok(n)
}

/// One outbox notice: `"<policy>\t<parent base>\t<parent id>\t<parent queue policy>\t<child
/// queue>\t<child id>\t<outcome>"` (lib/parents.lua; the outcome is last, it may hold tabs).
struct Notice<'a> {
    on_failure: u8,
    base: &'a str,
    parent: &'a str,
    policy: &'a str,
    queue: &'a str,
    child: &'a str,
    outcome: &'a [u8],
}

impl<'a> Notice<'a> {
    fn parse(v: &'a [u8]) -> Option<Self> {
        let mut parts = v.splitn(7, |&b| b == b'\t');
        let text = |p: Option<&'a [u8]>| std::str::from_utf8(p?).ok();
        let on_failure = *parts.next()?.first()?;
        let base = text(parts.next())?;
        let parent = text(parts.next())?;
        let policy = text(parts.next())?;
        let queue = text(parts.next())?;
        let child = text(parts.next())?;
        let outcome = parts.next()?;
        Some(Notice {
            on_failure,
            base,
            parent,
            policy,
            queue,
            child,
            outcome,
        })
    }
}

/// A child's parent from its notice head (`"<policy>\t<parent base>\t<parent id>\t..."`).
pub(crate) fn parent_of(head: &str) -> Option<FlowRef> {
    let mut parts = head.splitn(4, '\t');
    let (_, base, id) = (parts.next()?, parts.next()?, parts.next()?);
    Some(FlowRef {
        queue: queue_of_base(base).to_string(),
        id: id.to_string(),
    })
}

/// Cancels the children `refs` (`"<base>\t<id>\t<queue>"`) of a cancelled flow job of `keys`'
/// queue, and theirs in turn: pending ones are removed, running ones asked to stop (as
/// [`Queue::cancel`]). Then relays the notices this left (the cancelled job's parent is told).
pub(crate) async fn cancel_children(
    client: &Client,
    keys: &JobKeys,
    refs: &[String],
) -> Result<()> {
    let mut touched: Vec<JobKeys> = vec![keys.clone()];
    let mut stack: Vec<String> = refs.to_vec();
    while let Some(r) = stack.pop() {
        let mut parts = r.splitn(3, '\t');
        let (Some(base), Some(id)) = (parts.next(), parts.next()) else {
            continue;
        };
        let Some(k) = JobKeys::from_base(base) else {
            continue;
        };
        let mut cmd = CANCEL_JOB.cmd(&k.for_script(&CANCEL_JOB));
        cmd.arg(id);
        let res: Vec<String> = client.eval(&cmd, &CANCEL_JOB).await?;
        if res.first().map(String::as_str) == Some("cancelled") {
            stack.extend(res.into_iter().skip(1));
        }
        if !touched.iter().any(|t| t.base() == k.base()) {
            touched.push(k);
        }
    }
    for k in &touched {
        relay(client, k).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scripts_hold_grace_is_the_rust_one() {
        let lib = crate::scripts::INCLUDES
            .iter()
            .find(|(f, _)| *f == "lib/parents.lua")
            .expect("lib/parents.lua")
            .1;
        assert!(lib.contains(&format!("local HOLD_GRACE_MS = {HOLD_GRACE_MS}\n")));
    }

    #[test]
    fn notices_and_outcomes_parse_and_bases_name_their_queue() {
        let n = Notice::parse(b"c\tt:{q#1.7}:\tp1\t1|0|-1|0|0|0\tkids\tk9\tcok\tthen").unwrap();
        assert_eq!(
            (n.on_failure, n.base, n.parent, n.queue, n.child, n.outcome),
            (b'c', "t:{q#1.7}:", "p1", "kids", "k9", &b"cok\tthen"[..])
        );
        assert_eq!(queue_of_base("t:{q#1.7}:"), "q");
        assert_eq!(queue_of_base("t:{orders}:"), "orders");
        assert_eq!(
            ChildOutcome::parse(b"ixboom"),
            Some(ChildOutcome::Ignored("boom".into()))
        );
        assert_eq!(
            ChildOutcome::parse(b"c"),
            Some(ChildOutcome::Completed(None))
        );
        assert!(JobKeys::from_base("t:{q}:").is_some());
        assert!(JobKeys::from_base("t:{q}").is_none() && JobKeys::from_base(":{q}:").is_none());
    }
}
