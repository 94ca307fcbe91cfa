//! Flows on `Queue` (core `workflow`): `FlowJob` (one job of a flow, with the jobs it waits for),
//! `enqueue_flow`, `children_results` and its `ChildResult` (`Job.children_results` is in
//! [`crate::job`]). Conversion only: the layout, the checks and the writes are the core's.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};
use tideq::{ChildOutcome, EnqueueOptions, OnChildFailure, PayloadFormat};

use crate::convert::{self, Int, Secs, Text};
use crate::error;
use crate::job::{Backoff, Enqueued};
use crate::jobs::QueueBase;
use crate::options::JobArgs;
use crate::task;

/// One job of a flow, and the jobs it waits for (``children``): give the root to
/// ``Queue.enqueue_flow``.
///
/// A job is a ``payload`` (bytes-like) or a ``task`` run by name with ``data`` as its arguments
/// (encoded as ``format`` says, as ``enqueue_task`` does), never both. It goes to ``queue`` (a
/// ``Queue`` or ``AsyncQueue`` of the same Redis), or else to its parent's (the root: the queue
/// ``enqueue_flow`` is called on). A parent runs once every one of its children finished, and
/// reads how they ended with ``job.children_results()``. ``on_failure`` is what this job's
/// failure (dead-lettered, expired, cancelled or lost) does to its parent: ``"fail"`` (the
/// default) dead-letters the parent at once, its error naming this job; ``"ignore"`` runs the
/// parent anyway, this job's result showing as ``"ignored"``; ``"continue"`` runs the parent
/// once all its children finished, this job's result showing as ``"failed"`` (or ``"expired"``,
/// ...). The other options are ``enqueue``'s, but no ``dedup`` or ``debounce``. A task without
/// ``data`` is a step: as a chain's link or a chord's callback (``chain``, ``chord``) it gets
/// its children's results as its argument (elsewhere, None). A FlowJob is a description
/// (nothing is written until ``enqueue_flow``) and may be reused.
#[pyclass(module = "tideq", frozen)]
pub struct FlowJob {
    /// The core's job, without its children (they are the Python objects of `children`,
    /// joined in by [`FlowJob::to_core`]).
    job: tideq::FlowJob,
    /// A tuple, not a `Vec`: a tuple's deallocation is deferred past a depth (CPython's
    /// "trashcan"), so a long chain of jobs is freed without overflowing the stack.
    children: Py<PyTuple>,
    id: Option<String>,
    queue: Option<String>,
    task: Option<String>,
    payload_len: usize,
    on_failure: &'static str,
}

impl FlowJob {
    /// The core's flow under this job. Built without recursion (a chain of jobs may be deep);
    /// past the root and `MAX_FLOW_JOBS` jobs (a job reused as a child of many) the rest is left
    /// out, since the core refuses the flow anyway.
    pub(crate) fn to_core(root: &Bound<'_, FlowJob>) -> PyResult<tideq::FlowJob> {
        enum Step<'py> {
            Enter(Bound<'py, FlowJob>),
            Leave(Bound<'py, FlowJob>, usize),
        }
        let py = root.py();
        let mut steps = vec![Step::Enter(root.clone())];
        let mut built: Vec<tideq::FlowJob> = Vec::new();
        let mut jobs = 0usize;
        while let Some(step) = steps.pop() {
            match step {
                Step::Enter(job) => {
                    jobs += 1;
                    let kids = job.get().children.bind(py).clone();
                    // The root and MAX_FLOW_JOBS jobs under it.
                    let take = if jobs > tideq::MAX_FLOW_JOBS + 1 {
                        0
                    } else {
                        kids.len()
                    };
                    steps.push(Step::Leave(job, take));
                    // Pushed last first, so they are built (and listed) in order.
                    for i in (0..take).rev() {
                        steps.push(Step::Enter(kids.get_item(i)?.cast_into::<FlowJob>()?));
                    }
                }
                Step::Leave(job, n) => {
                    let kids = built.split_off(built.len() - n);
                    built.push(job.get().job.clone().children(kids));
                }
            }
        }
        Ok(built.pop().expect("the root was built"))
    }
}

#[pymethods]
impl FlowJob {
    #[new]
    #[pyo3(signature = (payload=None, *, task=None, data=None, format=None, queue=None, children=None, on_failure=None, id=None, delay=None, run_at=None, max_attempts=None, backoff=None, timeout=None, priority=None, group=None, trace=None, expires_after=None, expires_at=None, cost=None))]
    #[allow(clippy::too_many_arguments)]
    fn new<'py>(
        py: Python<'py>,
        payload: Option<Bound<'py, PyAny>>,
        task: Option<Text>,
        data: Option<Bound<'py, PyAny>>,
        format: Option<Text>,
        queue: Option<Bound<'py, PyAny>>,
        children: Option<Bound<'py, PyAny>>,
        on_failure: Option<Text>,
        id: Option<Text>,
        delay: Option<Secs>,
        run_at: Option<Bound<'py, PyAny>>,
        max_attempts: Option<Int>,
        backoff: Option<Bound<'py, Backoff>>,
        timeout: Option<Secs>,
        priority: Option<Int>,
        group: Option<Text>,
        trace: Option<Bound<'py, PyAny>>,
        expires_after: Option<Secs>,
        expires_at: Option<Bound<'py, PyAny>>,
        cost: Option<Int>,
    ) -> PyResult<Self> {
        let (payload, task) = match (payload, task) {
            (Some(payload), None) => {
                if data.is_some() || format.is_some() {
                    return Err(PyTypeError::new_err(
                        "data and format are a task's arguments: give them with task=",
                    ));
                }
                (convert::bytes_like("payload", &payload)?, None)
            }
            (None, Some(name)) => {
                // A task without data is a step: a chain's link or a chord's callback gets its
                // arguments from its children's results (elsewhere, its data is None).
                let given = data.is_some();
                let (data, format) = task::task_data(data, format)?;
                let format = format.unwrap_or(PayloadFormat::Json);
                let bytes = if given {
                    tideq::task::encode_args(&data, format).map_err(error::to_py)?
                } else {
                    Vec::new()
                };
                (bytes, Some((name.0, format)))
            }
            _ => {
                return Err(PyTypeError::new_err(
                    "a FlowJob is a payload or a task: give exactly one of payload or task=",
                ))
            }
        };
        let queue = queue
            .map(|q| {
                q.cast::<QueueBase>()
                    .map(|q| q.get().queue.clone())
                    .map_err(|_| {
                        PyTypeError::new_err(format!(
                            "queue must be a Queue or an AsyncQueue, not {}",
                            convert::type_name(&q)
                        ))
                    })
            })
            .transpose()?;
        let children = match children {
            None => Vec::new(),
            Some(c) => c
                .try_iter()
                .map_err(|_| {
                    PyTypeError::new_err(format!(
                        "children must be an iterable of FlowJob, not {}",
                        convert::type_name(&c)
                    ))
                })?
                .map(|kid| {
                    let kid = kid?;
                    match kid.cast::<FlowJob>() {
                        Ok(_) => Ok(kid),
                        Err(_) => Err(PyTypeError::new_err(format!(
                            "children must be FlowJob objects, not {}",
                            convert::type_name(&kid)
                        ))),
                    }
                })
                .collect::<PyResult<Vec<_>>>()?,
        };
        let on_failure = match on_failure {
            None => OnChildFailure::default(),
            Some(t) => OnChildFailure::parse(&t.0).map_err(error::to_py)?,
        };
        let args = JobArgs {
            id,
            delay,
            run_at,
            max_attempts,
            backoff,
            timeout,
            priority,
            group,
            trace,
            expires_after,
            expires_at,
            cost,
            ..JobArgs::default()
        };
        let mut opts = args.convert_traced(py)?;
        if let Some((name, format)) = &task {
            opts = EnqueueOptions {
                task: Some(name.clone()),
                format: Some(*format),
                ..opts
            };
        }
        let id = opts.id.clone();
        let payload_len = payload.len();
        let mut job = tideq::FlowJob::new(payload)
            .options(opts)
            .on_failure(on_failure);
        let queue_name = queue.as_ref().map(|q| q.name().to_string());
        if let Some(q) = &queue {
            job = job.on(q);
        }
        Ok(FlowJob {
            job,
            children: PyTuple::new(py, children)?.unbind(),
            id,
            queue: queue_name,
            task: task.map(|(name, _)| name),
            payload_len,
            on_failure: on_failure_str(on_failure),
        })
    }

    /// The job's id, or None when it gets a random one (``enqueue_flow`` returns the root's).
    #[getter]
    fn id(&self) -> Option<&str> {
        self.id.as_deref()
    }
    /// The name of the queue given as ``queue=``, or None (its parent's).
    #[getter]
    fn queue(&self) -> Option<&str> {
        self.queue.as_deref()
    }
    /// The task's name, or None for a payload job.
    #[getter]
    fn task(&self) -> Option<&str> {
        self.task.as_deref()
    }
    /// The jobs this one waits for.
    #[getter]
    fn children(&self, py: Python<'_>) -> Py<PyTuple> {
        self.children.clone_ref(py)
    }
    /// What this job's failure does to its parent: ``"fail"``, ``"ignore"`` or ``"continue"``.
    #[getter]
    fn on_failure(&self) -> &'static str {
        self.on_failure
    }
    fn __repr__(&self, py: Python<'_>) -> String {
        let shown = |name: &str, v: &Option<String>| {
            v.as_deref().map_or(String::new(), |v| {
                format!(", {name}={}", convert::str_repr(py, v))
            })
        };
        format!(
            "FlowJob(id={}{}{}, payload=<{} bytes>, on_failure={}, children=<{} jobs>)",
            self.id
                .as_deref()
                .map_or("None".to_string(), |id| convert::str_repr(py, id)),
            shown("task", &self.task),
            shown("queue", &self.queue),
            self.payload_len,
            convert::str_repr(py, self.on_failure),
            self.children.bind(py).len()
        )
    }
}

impl FlowJob {
    /// A FlowJob for a flow the core built (a chain, a chord) whose root is `root`'s
    /// description: its children are inside the core's job.
    fn built(py: Python<'_>, root: &FlowJob, job: tideq::FlowJob) -> FlowJob {
        FlowJob {
            job,
            children: PyTuple::empty(py).unbind(),
            id: root.id.clone(),
            queue: root.queue.clone(),
            task: root.task.clone(),
            payload_len: 0,
            on_failure: root.on_failure,
        }
    }
}

/// A chain: ``links`` (``FlowJob``s) run one after another, each once the one before it
/// completed, each link after the first getting the previous link's result as its one argument
/// (a task's) or its payload (a raw job's). Returns the last link (the flow's root): give it to
/// ``enqueue_flow``, whose id is the last link's, and whose result is the chain's. A link
/// without ``queue=`` goes where the last link goes. A failed link fails the rest, unless its ``on_failure`` lets it through (then the next link gets None).
/// The first link may be any flow (a chord, say); the others are built with only a task name
/// (``FlowJob(task="parse")``): ``ValueError`` for no links, or a later link with ``data``, a
/// ``payload`` or ``children``.
#[pyfunction]
#[pyo3(signature = (*links))]
pub fn chain(py: Python<'_>, links: Vec<Bound<'_, FlowJob>>) -> PyResult<FlowJob> {
    let cores = links
        .iter()
        .map(FlowJob::to_core)
        .collect::<PyResult<Vec<_>>>()?;
    let job = tideq::FlowJob::chain(cores).map_err(error::to_py)?;
    let last = links.last().expect("the core refuses an empty chain");
    Ok(FlowJob::built(py, last.get(), job))
}

/// A chord: ``children`` (``FlowJob``s) run, then ``callback`` runs once, after the last of
/// them, with their results as its one argument: a list in the children's order (each a
/// completed child's result, None for one whose failure its ``on_failure`` let through). Returns
/// the callback (the flow's root). The callback is built with only a task name
/// (``FlowJob(task="total")``): ``ValueError`` if it has ``data``, a ``payload`` or ``children``.
#[pyfunction]
pub fn chord<'py>(
    py: Python<'py>,
    children: Vec<Bound<'py, FlowJob>>,
    callback: Bound<'py, FlowJob>,
) -> PyResult<FlowJob> {
    let cores = children
        .iter()
        .map(FlowJob::to_core)
        .collect::<PyResult<Vec<_>>>()?;
    let job = tideq::FlowJob::chord(cores, FlowJob::to_core(&callback)?).map_err(error::to_py)?;
    Ok(FlowJob::built(py, callback.get(), job))
}

/// How the bindings spell an [`OnChildFailure`] (the core's `parse` reads it back).
fn on_failure_str(f: OnChildFailure) -> &'static str {
    match f {
        OnChildFailure::FailParent => "fail",
        OnChildFailure::Ignore => "ignore",
        OnChildFailure::Continue => "continue",
    }
}

/// One finished child of a parent, as ``children_results`` lists it.
#[pyclass(module = "tideq", frozen, eq)]
#[derive(PartialEq)]
pub struct ChildResult(pub tideq::ChildResult);

#[pymethods]
impl ChildResult {
    /// The child's queue.
    #[getter]
    fn queue(&self) -> &str {
        &self.0.queue
    }
    /// The child's id.
    #[getter]
    fn id(&self) -> &str {
        &self.0.id
    }
    /// How it ended: ``"completed"``, ``"failed"`` (dead-lettered), ``"expired"`` (not started
    /// by its deadline), ``"cancelled"``, ``"lost"`` (its data went missing) or ``"ignored"``
    /// (failed, under ``on_failure="ignore"``).
    #[getter]
    fn outcome(&self) -> &'static str {
        self.0.outcome.as_str()
    }
    /// What a completed child's handler returned, as stored (JSON, or bytes returned as they
    /// are); None when it returned nothing or did not complete.
    #[getter]
    fn result<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyBytes>> {
        match &self.0.outcome {
            ChildOutcome::Completed(Some(r)) => Some(PyBytes::new(py, r)),
            _ => None,
        }
    }
    /// Why a child failed: its last error (``"failed"``, ``"expired"``), or for ``"ignored"``
    /// that error, ``"cancelled"`` or ``"lost"``; None otherwise.
    #[getter]
    fn error(&self) -> Option<&str> {
        match &self.0.outcome {
            ChildOutcome::Failed(e) | ChildOutcome::Expired(e) | ChildOutcome::Ignored(e) => {
                Some(e)
            }
            _ => None,
        }
    }
    /// The result parsed as JSON (``json.loads``); None without a result.
    fn json<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.result(py)
            .map(|r| py.import("json")?.call_method1("loads", (r,)))
            .transpose()
    }
    fn __repr__(&self, py: Python<'_>) -> String {
        let detail = match (&self.0.outcome, self.error()) {
            (ChildOutcome::Completed(Some(r)), _) => format!(", result=<{} bytes>", r.len()),
            (_, Some(e)) => format!(", error={}", convert::str_repr(py, e)),
            _ => String::new(),
        };
        format!(
            "ChildResult(queue={}, id={}, outcome={}{detail})",
            convert::str_repr(py, &self.0.queue),
            convert::str_repr(py, &self.0.id),
            convert::str_repr(py, self.0.outcome.as_str()),
        )
    }
}

crate::value::value_class! { ChildResult { queue, id, outcome, result, error } }

/// Children's results as Python gets them.
pub(crate) fn child_results(results: Vec<tideq::ChildResult>) -> Vec<ChildResult> {
    results.into_iter().map(ChildResult).collect()
}

#[pymethods]
impl QueueBase {
    /// Enqueue a flow: ``root`` and, to any depth, the jobs it waits for (``FlowJob``); returns
    /// the root's ``Enqueued``.
    ///
    /// The root goes to this queue unless its ``queue=`` says otherwise, each child to its
    /// parent's unless its own does. A parent waits (``get`` shows ``"waiting"`` and
    /// ``children_pending``) until every one of its children finished, then runs once, and
    /// reads how they ended with ``job.children_results()``; its ``on_failure`` says what a
    /// child's failure does to it. Workers of each queue of the flow relay its children's ends to
    /// their parents. The whole flow is written or none of it. A root ``id`` that exists already
    /// (or finished within the idempotency window) creates nothing (``created`` False). Refused
    /// with ``InvalidArgumentError``, nothing written: more than 100000 jobs under the root (a
    /// chord of 100000 children and its callback fits), two jobs with the same id, a child id
    /// that exists already (or finished within its queue's idempotency window), a queue of
    /// another key prefix, and what ``enqueue`` refuses. Cancelling a waiting parent
    /// (``cancel``) cancels its pending children, to any depth.
    fn enqueue_flow<'py>(
        &self,
        py: Python<'py>,
        root: &Bound<'py, FlowJob>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (q, flow) = (self.queue.clone(), FlowJob::to_core(root)?);
        self.api
            .call(py, async move { q.enqueue_flow(flow).await.map(Enqueued) })
    }

    /// How the children of job ``parent_id`` (of this queue) ended so far, as ``ChildResult``s,
    /// in no particular order (each once). Every child has finished when a parent runs; kept
    /// while the parent is.
    fn children_results<'py>(
        &self,
        py: Python<'py>,
        parent_id: Text,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (q, id) = (self.queue.clone(), parent_id.0);
        self.api.call(py, async move {
            q.children_results(&id).await.map(child_results)
        })
    }
}
