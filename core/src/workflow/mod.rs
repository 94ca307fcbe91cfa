//! Flows: a parent job that runs once every one of its children finished, and reads their
//! results. Children may live on other queues (sharded ones included) and have children of their
//! own, to any depth.
//!
//! How it holds together across hash slots (docs/data-model.md, "Flows"): a flow is written in
//! three steps. Every job but the root is written *held* (it cannot run) on its own queue, then
//! the root, then the held jobs are released. A flow whose writer died half-way is finished by
//! the workers: a job held longer than [`HOLD_GRACE_MS`] is released when its root exists and
//! waits, and dropped otherwise, so a flow runs whole or not at all. A small flow all of whose
//! jobs share one queue (shard) is written in one script call; a large one in calls of bounded
//! size (a parent's list of many children staged beforehand, in runs).
//!
//! When a child finishes for good (completed, dead-lettered, expired, cancelled, lost), the
//! script that ended it leaves a notice in its queue's outbox; a worker of that queue relays it
//! to the parent's queue, where it is recorded once (a notice relayed twice counts
//! once) and the parent, its last child done, becomes ready.

use serde::{Deserialize, Serialize};

use crate::envelope::{Envelope, PayloadFormat};
use crate::error::{Error, Result};
use crate::job::{EnqueueOptions, Job};
use crate::jobs::Queue;
use crate::keys::JobKeys;

mod children;
mod enqueue;
mod graph;
mod pipe;
mod relay;

pub use children::{ChildInfo, ChildPage};
pub use graph::{Graph, GraphNode, MAX_GRAPH_DEPENDENTS};
pub(crate) use relay::{cancel_children, relay, settle_held};

/// Most jobs one flow may have under its root, at any depth (so a chord of this many children
/// and its callback is a flow).
pub const MAX_FLOW_JOBS: usize = 100_000;

/// How long a flow's job may stay held before the workers settle it (ms): released if the
/// flow's root exists and waits, dropped if not.
pub const HOLD_GRACE_MS: u64 = 30_000;

/// Entries per page or run: notices relayed, held jobs settled, ids looked up, children staged
/// or cancelled.
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
    /// Filled from its children's results when it runs (a chain's link, a chord's callback).
    pub(crate) args_from: Option<crate::envelope::ArgsFrom>,
}

impl std::fmt::Debug for FlowJob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FlowJob")
            .field("queue", &self.queue.as_ref().map(Queue::name))
            .field("payload_len", &self.payload.len())
            .field("opts", &self.opts)
            .field("children", &self.children)
            .field("on_failure", &self.on_failure)
            .field("args_from", &self.args_from)
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
            args_from: None,
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
        // A step's arguments are not encoded yet: its format may still change.
        let encoded = task.is_some() && !self.payload.is_empty();
        self.opts = EnqueueOptions {
            task: task.or(opts.task.clone()),
            format: if encoded {
                format
            } else {
                opts.format.or(format)
            },
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ChildOutcome {
    /// Completed, with what its handler returned (`None`: nothing).
    Completed(#[serde(with = "serde_bytes")] Option<Vec<u8>>),
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChildResult {
    /// The child's queue.
    pub queue: String,
    pub id: String,
    pub outcome: ChildOutcome,
}

/// A job's place in a flow, as [`Queue::get`] shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
    /// The jobs that wait for this one, each with what this job's failure does to it (a tree's
    /// job has one, a graph's any number).
    parents: Vec<(usize, OnChildFailure)>,
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

impl Job {
    /// How this job's children ended ([`Queue::children_results`]): every child has finished by
    /// the time a parent runs.
    pub async fn children_results(&self) -> Result<Vec<ChildResult>> {
        self.owner.children_results(&self.id).await
    }
}

/// A child's parent from its notice head (`"<policy>\t<parent base>\t<parent id>\t..."`; a
/// graph's job that several wait for has one head per line: the first is shown).
pub(crate) fn parent_of(head: &str) -> Option<FlowRef> {
    parents_of(head).into_iter().next()
}

/// Every parent a child's notice heads name (one per line: a graph's job that others run after
/// reports to each of them).
pub(crate) fn parents_of(heads: &str) -> Vec<FlowRef> {
    heads.split('\n').filter_map(one_parent).collect()
}

fn one_parent(head: &str) -> Option<FlowRef> {
    let mut parts = head.splitn(4, '\t');
    let (_, base, id) = (parts.next()?, parts.next()?, parts.next()?);
    Some(FlowRef {
        queue: queue_of_base(base).to_string(),
        id: id.to_string(),
    })
}
