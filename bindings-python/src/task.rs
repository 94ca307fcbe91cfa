//! Tasks by name on `Queue` (core `task`): `@queue.task` (registered in `tideq._tasks`, kept in
//! the queue's `_tasks` mapping), `enqueue_task(name, data)` (the data encoded as JSON or
//! MessagePack by the core) and the workers that run each job's task by name (`work_tasks`,
//! `run_tasks`).

use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::convert::{self, Int, Secs, Text};
use crate::error;
use crate::job::{Backoff, Enqueued};
use crate::jobs::QueueBase;
use crate::options::{worker_options, JobArgs};
use crate::signal;
use crate::worker::{self, Handlers};

/// Task arguments as a MessagePack value, the core then encodes (JSON or MessagePack).
fn args_value(obj: &Bound<'_, PyAny>) -> PyResult<tideq::envelope::Value> {
    convert::to_value(obj, args_value)
}

/// A task's `data=` and `format=` as the core encodes them: `enqueue_task`'s, and a flow's task
/// jobs' (`FlowJob(task=...)`, [`crate::workflow`]). No data: nil.
pub(crate) fn task_data(
    data: Option<Bound<'_, PyAny>>,
    format: Option<Text>,
) -> PyResult<(tideq::envelope::Value, Option<tideq::PayloadFormat>)> {
    let data = match data {
        Some(d) => convert::to_value(&d, args_value)?,
        None => tideq::envelope::Value::Nil,
    };
    let format = format
        .map(|f| tideq::PayloadFormat::parse(&f.0))
        .transpose()
        .map_err(error::to_py)?;
    Ok((data, format))
}

#[pymethods]
impl QueueBase {
    /// Register ``func`` as a task of this queue, named by ``name`` (default: the function's
    /// name), with default enqueue options (``priority``, ``group``, ``format``, ...); returns a
    /// ``Task``: call it to run the function here, ``.enqueue(*args, **kwargs)`` to enqueue it
    /// (arguments bound to the parameters by name), and ``work_tasks()`` runs it by name.
    #[pyo3(signature = (func=None, /, *, name=None, **defaults))]
    fn task<'py>(
        slf: &Bound<'py, Self>,
        func: Option<Bound<'py, PyAny>>,
        name: Option<Text>,
        defaults: Option<Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        py.import("tideq._tasks")?
            .getattr("task")?
            .call1((slf, func, name.map(|t| t.0), defaults))
    }

    /// The tasks registered with `@queue.task`, by name (the mapping itself).
    #[getter]
    fn _tasks(&self, py: Python<'_>) -> Py<PyDict> {
        self.tasks.clone_ref(py)
    }

    /// Enqueue task ``name`` with ``data`` as its arguments (a dict runs ``f(**data)``, a list
    /// ``f(*data)``, anything else ``f(data)``), encoded as ``format`` (``"json"``, the default,
    /// or ``"msgpack"``). The other options are ``enqueue``'s.
    #[pyo3(signature = (name, data=None, *, format=None, id=None, delay=None, run_at=None, max_attempts=None, backoff=None, timeout=None, priority=None, group=None, dedup=None, debounce=None, trace=None, expires_after=None, expires_at=None, cost=None))]
    #[allow(clippy::too_many_arguments)]
    fn enqueue_task<'py>(
        &self,
        py: Python<'py>,
        name: Text,
        data: Option<Bound<'py, PyAny>>,
        format: Option<Text>,
        id: Option<Text>,
        delay: Option<Secs>,
        run_at: Option<Bound<'py, PyAny>>,
        max_attempts: Option<Int>,
        backoff: Option<Bound<'py, Backoff>>,
        timeout: Option<Secs>,
        priority: Option<Int>,
        group: Option<Text>,
        dedup: Option<Bound<'py, PyAny>>,
        debounce: Option<Bound<'py, PyAny>>,
        trace: Option<Bound<'py, PyAny>>,
        expires_after: Option<Secs>,
        expires_at: Option<Bound<'py, PyAny>>,
        cost: Option<Int>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (data, format) = task_data(data, format)?;
        let args = JobArgs {
            id,
            delay,
            run_at,
            max_attempts,
            backoff,
            timeout,
            priority,
            group,
            dedup,
            debounce,
            trace,
            expires_after,
            expires_at,
            cost,
        };
        let mut opts = args.convert_traced(py)?;
        opts.format = format;
        let q = self.queue.clone();
        self.api.call(py, async move {
            q.enqueue_task(&name.0, &data, opts).await.map(Enqueued)
        })
    }

    /// Start a worker running each job's task by name: ``tasks`` maps names to functions
    /// (default: the tasks registered with ``@queue.task``), plain or ``async def``, called with
    /// the job's decoded arguments. A job with no task name, or one not in ``tasks``, is
    /// dead-lettered at once with an error naming the tasks this worker runs. The options are
    /// ``work``'s.
    #[pyo3(signature = (tasks=None, *, concurrency=None, batch_size=None, lease=None, poll_interval=None, grace=None, stop_when_drained=None, schedules=None, max_jobs=None))]
    #[allow(clippy::too_many_arguments)]
    fn work_tasks<'py>(
        &self,
        py: Python<'py>,
        tasks: Option<Bound<'py, PyAny>>,
        concurrency: Option<Int>,
        batch_size: Option<Int>,
        lease: Option<Secs>,
        poll_interval: Option<Secs>,
        grace: Option<Secs>,
        stop_when_drained: Option<bool>,
        schedules: Option<bool>,
        max_jobs: Option<Int>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let opts = worker_options(
            concurrency,
            batch_size,
            lease,
            poll_interval,
            grace,
            stop_when_drained,
            schedules,
            max_jobs,
        )?;
        let tasks = tasks.unwrap_or_else(|| self.tasks.bind(py).clone().into_any());
        let pairs: Vec<(String, Py<PyAny>)> = py
            .import("tideq._tasks")?
            .getattr("handlers")?
            .call1((tasks,))?
            .extract::<Vec<(Text, Py<PyAny>)>>()?
            .into_iter()
            .map(|(n, f)| (n.0, f))
            .collect();
        worker::start(py, self, opts, Handlers::Tasks(pairs))
    }

    /// ``work_tasks()`` and wait until it stops, as ``run()`` does.
    #[pyo3(signature = (tasks=None, *, concurrency=None, batch_size=None, lease=None, poll_interval=None, grace=None, stop_when_drained=None, schedules=None, max_jobs=None))]
    #[allow(clippy::too_many_arguments)]
    fn run_tasks<'py>(
        &self,
        py: Python<'py>,
        tasks: Option<Bound<'py, PyAny>>,
        concurrency: Option<Int>,
        batch_size: Option<Int>,
        lease: Option<Secs>,
        poll_interval: Option<Secs>,
        grace: Option<Secs>,
        stop_when_drained: Option<bool>,
        schedules: Option<bool>,
        max_jobs: Option<Int>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let worker = self.work_tasks(
            py,
            tasks,
            concurrency,
            batch_size,
            lease,
            poll_interval,
            grace,
            stop_when_drained,
            schedules,
            max_jobs,
        )?;
        signal::run(&worker)
    }
}
