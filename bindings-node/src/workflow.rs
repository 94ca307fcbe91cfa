//! Flows (core `workflow`): `enqueueFlow`, a parent job that runs once every one of its
//! children finished (children may live on other queues and have children of their own), and
//! `childrenResults`, how a parent's children ended (`job.childrenResults()` is in
//! [`crate::job`]). Each job of a flow is read as one job of `enqueueMany` is
//! ([`crate::options::job_spec`]), plus its `queue`, `children` and `onFailure`; the whole flow
//! is read before anything is written, and the core writes it whole or not at all. `chain` and
//! `chord` build a `Flow` with the core's `FlowJob::chain`/`chord`.
// napi registers the free functions for JS only, so a test build sees them unused.
#![cfg_attr(test, allow(dead_code))]

use napi::bindgen_prelude::*;
use napi::ValueType;
use napi_derive::napi;
use tideq::{FlowJob, OnChildFailure};

use crate::convert::{array, describe, is_typed_array, read_value, string, Options};
use crate::error::{invalid, spawn, throw, type_error, Failure, Res};
use crate::jobs::{job_id, Queue};
use crate::options::{job_spec, BackoffOptions, FLOW_KEYS};
use crate::results::{ChildResult, Enqueued};

/// One job of a flow (`enqueueFlow(root)`): a task (`name`, `data`) or a raw `payload`, the
/// options of `enqueue` (but `dedup` and `debounce`: a flow's jobs are each written once), the
/// queue it goes to, the jobs it waits for, and what its failure does to its parent.
// Declared for the TypeScript definitions only; `flow_job` reads the fields one by one.
#[allow(dead_code)]
#[napi(object, object_from_js = false, object_to_js = false)]
pub struct FlowSpec {
    /// As in `JobSpec`: the task's name. Not with `payload`.
    pub name: Option<String>,
    /// As in `JobSpec`: the task's data (with `name`).
    #[napi(ts_type = "unknown")]
    pub data: Option<()>,
    /// As in `JobSpec`: raw bytes (not with `name`).
    #[napi(ts_type = "Buffer | Uint8Array")]
    pub payload: Option<()>,
    /// As in `EnqueueOptions`. Every id of a flow must be new: a root whose id exists creates
    /// nothing (`created: false`); another job's refuses the flow (`INVALID_ARGUMENT`).
    pub id: Option<String>,
    /// As in `EnqueueOptions`: a child due later holds its parent back until it ran.
    pub delay_ms: Option<f64>,
    /// As in `EnqueueOptions`.
    #[napi(ts_type = "Date | number")]
    pub run_at: Option<f64>,
    /// As in `EnqueueOptions`.
    pub max_attempts: Option<u32>,
    /// As in `EnqueueOptions`.
    pub backoff: Option<BackoffOptions>,
    /// As in `EnqueueOptions`.
    pub timeout_ms: Option<f64>,
    /// As in `EnqueueOptions`.
    pub priority: Option<u32>,
    /// As in `EnqueueOptions`.
    pub group: Option<String>,
    /// As in `EnqueueOptions` (tasks only).
    #[napi(ts_type = "'json' | 'msgpack'")]
    pub format: Option<String>,
    /// As in `EnqueueOptions`.
    #[napi(ts_type = "Record<string, string>")]
    pub trace: Option<()>,
    /// As in `EnqueueOptions`.
    pub expires_after_ms: Option<f64>,
    /// As in `EnqueueOptions`.
    #[napi(ts_type = "Date | number")]
    pub expires_at: Option<f64>,
    /// As in `EnqueueOptions`.
    pub cost: Option<u32>,
    /// The queue this job goes to (its key prefix must be the flow's). Default: its parent's;
    /// the root's, the queue `enqueueFlow` is called on.
    #[napi(ts_type = "Queue")]
    pub queue: Option<()>,
    /// The jobs this one waits for: it runs once every one of them finished, and reads how
    /// they ended with `job.childrenResults()`.
    #[napi(ts_type = "Array<FlowSpec | Flow>")]
    pub children: Option<()>,
    /// What this job's failure (dead-lettered, expired, cancelled or lost) does to its parent:
    /// `'fail'` dead-letters the parent at once, its error naming this job (the default);
    /// `'ignore'` lets the parent run once its other children finished, this one reported as
    /// `'ignored'`; `'continue'` lets it run once every child finished, this one reported as
    /// it ended.
    #[napi(ts_type = "'fail' | 'ignore' | 'continue'")]
    pub on_failure: Option<String>,
}

/// The `queue` of a flow job: a tideq `Queue`.
fn queue_arg(what: &str, v: &Unknown) -> Res<tideq::Queue> {
    read_value::<ClassInstance<Queue>>(v)
        .map(|q| q.inner.clone())
        .map_err(|_| type_error(format!("{what} must be a tideq Queue; got {}", describe(v))))
}

/// The `onFailure` of a flow job: `'fail'`, `'ignore'` or `'continue'` (the names are the
/// core's).
pub(crate) fn on_failure_arg(what: &str, v: &Unknown) -> Res<OnChildFailure> {
    let name = string(what, v)?;
    OnChildFailure::parse(&name).map_err(|_| {
        invalid(format!(
            "{what} must be 'fail', 'ignore' or 'continue'; got {name:?}"
        ))
    })
}

/// One job of a flow (named `what`, e.g. `root.children[1]`), without its children, and the
/// JS values of its children.
fn flow_job<'env>(env: &Env, what: &str, v: &Unknown<'env>) -> Res<(FlowJob, Vec<Unknown<'env>>)> {
    // A chain or chord built already: whole, children included.
    if let Ok(built) = read_value::<ClassInstance<Flow>>(v) {
        return Ok((built.inner.clone(), Vec::new()));
    }
    if v.get_type()? != ValueType::Object || v.is_array()? || is_typed_array(v) {
        return Err(type_error(format!(
            "{what} must be an object {{ name, data, ...options }} or {{ payload, ...options }}, \
             or a chain or chord; got {}",
            if is_typed_array(v) {
                "raw bytes (a raw job of a flow is { payload })".to_string()
            } else {
                describe(v)
            }
        )));
    }
    let opts = Options::new(what, Some(v), FLOW_KEYS)?;
    let (payload, options) = job_spec(env, what, &opts)?;
    // A task without data is a step: a chain's link or a chord's callback gets its arguments
    // from its children's results (elsewhere, its data is null).
    let stepping = opts.raw("name")?.is_some() && opts.raw("data")?.is_none();
    let payload = if stepping { Vec::new() } else { payload };
    let mut job = FlowJob::new(payload).options(options);
    if let Some(queue) = opts.get("queue", queue_arg)? {
        job = job.on(&queue);
    }
    if let Some(on_failure) = opts.get("onFailure", on_failure_arg)? {
        job = job.on_failure(on_failure);
    }
    let children = opts
        .get("children", |what, v| array(what, v, |_, child| Ok(*child)))?
        .unwrap_or_default();
    Ok((job, children))
}

/// How deep a flow job's name spells its whole path (`root.children[0].children[2]`); deeper
/// ones keep the path's head and their own place (`root.children[0]…children[2] (depth 90)`),
/// so names stay short however deep the flow.
const NAMED_DEPTH: usize = 8;

/// The flow whose root is `root`, read whole (without recursion, so a deep flow cannot
/// overflow the stack; a cycle stops at the core's most jobs per flow).
pub(crate) fn flow(env: &Env, root: &Unknown) -> Res<FlowJob> {
    struct Todo<'env> {
        /// Its name in messages.
        what: String,
        /// The name of its ancestor at `NAMED_DEPTH` (itself above it).
        head: String,
        depth: usize,
        value: Unknown<'env>,
        /// Its parent's index in `jobs`.
        parent: Option<usize>,
    }
    // Pre-order, so each job's children come after it.
    let mut todo = vec![Todo {
        what: "root".into(),
        head: "root".into(),
        depth: 0,
        value: *root,
        parent: None,
    }];
    let mut jobs: Vec<Option<FlowJob>> = Vec::new();
    let mut kids: Vec<Vec<usize>> = Vec::new();
    while let Some(t) = todo.pop() {
        // The root and at most MAX_FLOW_JOBS jobs under it.
        if jobs.len() > tideq::MAX_FLOW_JOBS {
            return Err(invalid(format!(
                "a flow may have at most {} jobs under its root",
                tideq::MAX_FLOW_JOBS
            )));
        }
        let (job, children) = flow_job(env, &t.what, &t.value)?;
        let me = jobs.len();
        if let Some(p) = t.parent {
            kids[p].push(me);
        }
        jobs.push(Some(job));
        kids.push(Vec::new());
        let depth = t.depth + 1;
        for (i, value) in children.into_iter().enumerate().rev() {
            let (what, head) = if depth <= NAMED_DEPTH {
                let what = format!("{}.children[{i}]", t.what);
                (what.clone(), what)
            } else {
                let what = format!("{}…children[{i}] (depth {depth})", t.head);
                (what, t.head.clone())
            };
            todo.push(Todo {
                what,
                head,
                depth,
                value,
                parent: Some(me),
            });
        }
    }
    // Last to first: a job's children are whole by the time it is reached.
    for at in (0..jobs.len()).rev() {
        if kids[at].is_empty() {
            continue;
        }
        let children: Vec<FlowJob> = kids[at].iter().filter_map(|&k| jobs[k].take()).collect();
        jobs[at] = jobs[at].take().map(|job| job.children(children));
    }
    jobs.first_mut()
        .and_then(Option::take)
        .ok_or_else(|| invalid("a flow needs a root job"))
}

#[napi]
impl Queue {
    /// Enqueues a flow: `root` and, to any depth, the jobs it waits for (`children`). The root
    /// goes to this queue, each child to its parent's unless its `queue` says otherwise. A
    /// parent runs only once every one of its children finished (completed, or failed in a way
    /// its `onFailure` lets through), and reads how they ended with `job.childrenResults()`;
    /// meanwhile `get` shows it `'waiting'`. The whole flow is written or none of it. Resolves
    /// with the root's id; a root `id` that exists already (or finished within the idempotency
    /// window) creates nothing (`created` false). Rejects with `INVALID_ARGUMENT`, nothing
    /// written, for more than 100000 jobs under the root (a chord of 100000 children and its
    /// callback fits), two jobs with the same id, a child id that exists already (or finished
    /// within its queue's idempotency window), a `dedup`, a `queue` with another key prefix,
    /// and what `enqueueMany` refuses.
    #[napi(
        ts_args_type = "root: FlowSpec | Flow",
        ts_return_type = "Promise<Enqueued>"
    )]
    pub fn enqueue_flow<'env>(
        &self,
        env: &'env Env,
        root: Unknown,
    ) -> Result<PromiseRaw<'env, Enqueued>> {
        let q = self.inner.clone();
        let root = flow(env, &root);
        spawn(
            env,
            root.map(|root| async move { Ok(q.enqueue_flow(root).await?.into()) }),
        )
    }

    /// How the children of job `parentId` (of this queue) ended so far, in no particular order
    /// (each once). A parent's handler reads its own with `job.childrenResults()`.
    #[napi(
        ts_args_type = "parentId: string",
        ts_return_type = "Promise<ChildResult[]>"
    )]
    pub fn children_results<'env>(
        &self,
        env: &'env Env,
        parent_id: Unknown,
    ) -> Result<PromiseRaw<'env, Vec<ChildResult>>> {
        let q = self.inner.clone();
        spawn(
            env,
            job_id(&parent_id).map(|id| async move {
                let children = q.children_results(&id).await?;
                Ok(children.into_iter().map(ChildResult::from).collect())
            }),
        )
    }
}

/// A chain or a chord, built by `chain` or `chord`: give it to `enqueueFlow`, or use it as a
/// child (or a chain's first link) in another flow.
#[napi]
pub struct Flow {
    inner: FlowJob,
    kind: &'static str,
}

#[napi]
impl Flow {
    /// What built it: `'chain'` or `'chord'`.
    #[napi(getter, ts_return_type = "'chain' | 'chord'")]
    pub fn kind(&self) -> &'static str {
        self.kind
    }
}

/// `failure` of a flow read as a root, named as `what` in its message.
fn named(failure: Failure, what: &str) -> Failure {
    match failure {
        Failure::Core(e) => Failure::Core(tideq::Error::new(
            e.kind(),
            e.message().replacen("root", what, 1),
        )),
        Failure::Type(msg) => Failure::Type(msg.replacen("root", what, 1)),
    }
}

/// Each of `flows` (flow specs or built flows), read whole.
fn flows(env: &Env, what: &str, list: &Unknown) -> Res<Vec<FlowJob>> {
    let items = array(what, list, |_, v| Ok(*v))?;
    items
        .iter()
        .enumerate()
        .map(|(i, v)| flow(env, v).map_err(|e| named(e, &format!("{what}[{i}]"))))
        .collect()
}

/// A chain: `links` run one after another, each once the one before it completed, each link
/// after the first getting the previous link's result as its `data` (a task's) or `payload` (a
/// raw job's). Its last link is the flow's root: `enqueueFlow(chain([...]))` resolves with its
/// id, and its result is the chain's. A link without a `queue` goes where the last link goes.
/// A failed link fails the rest (unless its `onFailure` lets
/// it through; then the next link gets `null`). Throws `INVALID_ARGUMENT` for no links, or a
/// link after the first with `data`, a `payload` or `children` (give it only a `name`).
#[napi(
    ts_args_type = "links: Array<FlowSpec | Flow>",
    ts_return_type = "Flow"
)]
pub fn chain(env: &Env, links: Unknown) -> napi::Result<Flow> {
    let built = flows(env, "links", &links).and_then(|links| Ok(FlowJob::chain(links)?));
    throw(env, built).map(|inner| Flow {
        inner,
        kind: "chain",
    })
}

/// A chord: `children` run, then `callback` runs once, after the last of them, with their
/// results as its `data`: an array in the children's order (each a completed child's result,
/// `null` for one whose failure its `onFailure` let through). The callback is the flow's root.
/// Throws `INVALID_ARGUMENT` for a callback with `data`, a `payload` or `children` (give it
/// only a `name`).
#[napi(
    ts_args_type = "children: Array<FlowSpec | Flow>, callback: FlowSpec",
    ts_return_type = "Flow"
)]
pub fn chord(env: &Env, children: Unknown, callback: Unknown) -> napi::Result<Flow> {
    let built = flows(env, "children", &children).and_then(|children| {
        let callback = flow(env, &callback).map_err(|e| named(e, "callback"))?;
        Ok(FlowJob::chord(children, callback)?)
    });
    throw(env, built).map(|inner| Flow {
        inner,
        kind: "chord",
    })
}
