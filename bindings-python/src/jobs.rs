//! `tideq.Queue` (blocking) and `tideq.AsyncQueue` (asyncio) over one `tideq::Queue` (core
//! `jobs` and `admin`): both extend the hidden `_Queue`, which holds the API mode and has every
//! method. Conversion only: every operation, script and check is the core's.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use tideq::{EnqueueOptions, QueueOptions};

use crate::client::Client;
use crate::convert::{self, Int, Opt, Secret, Secs, Text};
use crate::error;
use crate::job::{Backoff, Enqueued, JobInfo, JobStats};
use crate::runtime::{self, Api};
use crate::signal;
use crate::worker;

/// Per-job options as keyword arguments (or an `enqueue_many` dict) before conversion.
#[derive(Default)]
struct JobArgs<'py> {
    id: Option<Text>,
    delay: Option<Secs>,
    run_at: Option<Bound<'py, PyAny>>,
    max_attempts: Option<Int>,
    backoff: Option<Bound<'py, Backoff>>,
    timeout: Option<Secs>,
}

impl<'py> JobArgs<'py> {
    /// From an `enqueue_many` options dict: the keys are `enqueue`'s keyword arguments.
    fn from_dict(dict: &Bound<'py, PyDict>) -> PyResult<Self> {
        let mut args = JobArgs::default();
        for (key, value) in dict.iter() {
            let Text(key) = key.extract()?;
            if value.is_none() {
                continue;
            }
            let shown = convert::str_repr(dict.py(), &key);
            // A value of the wrong type is a TypeError naming the option; other errors (an id
            // that is not valid UTF-8, an int out of range) keep their class.
            let py = dict.py();
            let named = |e: PyErr| {
                if e.is_instance_of::<PyTypeError>(py) {
                    PyTypeError::new_err(format!("option {shown}: {e}"))
                } else {
                    e
                }
            };
            match key.as_str() {
                "id" => args.id = Some(value.extract().map_err(named)?),
                "delay" => args.delay = Some(value.extract().map_err(named)?),
                "run_at" => args.run_at = Some(value),
                "max_attempts" => args.max_attempts = Some(value.extract().map_err(named)?),
                "backoff" => {
                    args.backoff = Some(value.cast_into::<Backoff>().map_err(|e| named(e.into()))?)
                }
                "timeout" => args.timeout = Some(value.extract().map_err(named)?),
                _ => {
                    return Err(PyTypeError::new_err(format!(
                        "unknown enqueue option {shown} (expected id, delay, run_at, \
                         max_attempts, backoff or timeout)"
                    )))
                }
            }
        }
        Ok(args)
    }

    fn convert(self) -> PyResult<EnqueueOptions> {
        Ok(EnqueueOptions {
            id: self.id.map(|t| t.0),
            delay: convert::opt_duration("delay", self.delay)?,
            run_at_ms: self
                .run_at
                .map(|t| convert::epoch_ms("run_at", &t))
                .transpose()?,
            max_attempts: self
                .max_attempts
                .map(|n| convert::count_u32("max_attempts", n))
                .transpose()?,
            backoff: self.backoff.map(|b| b.get().0),
            timeout: convert::opt_duration("timeout", self.timeout)?,
        })
    }
}

/// `enqueue_many` items: each bytes-like, or a `(payload, options dict)` tuple. Everything is
/// converted before anything is sent.
fn jobs(items: &Bound<'_, PyAny>) -> PyResult<Vec<(Vec<u8>, EnqueueOptions)>> {
    let mut out = Vec::with_capacity(items.len().unwrap_or(0));
    for item in items.try_iter()? {
        let item = item?;
        let Ok(tuple) = item.cast::<PyTuple>() else {
            out.push((
                convert::bytes_like("payload", &item)?,
                EnqueueOptions::default(),
            ));
            continue;
        };
        let options = tuple.get_item(1).ok().filter(|_| tuple.len() == 2);
        let options = options
            .as_ref()
            .and_then(|o| o.cast::<PyDict>().ok())
            .ok_or_else(|| {
                PyTypeError::new_err(
                    "enqueue_many items are payloads or (payload, options dict) tuples",
                )
            })?;
        let payload = convert::bytes_like("payload", &tuple.get_item(0)?)?;
        out.push((payload, JobArgs::from_dict(options)?.convert()?));
    }
    Ok(out)
}

/// A job queue; `Queue` and `AsyncQueue` differ only in the API mode they open it with.
#[pyclass(module = "tideq", name = "_Queue", subclass, frozen)]
pub struct QueueBase {
    queue: tideq::Queue,
    client: Py<Client>,
    api: Api,
}

runtime::api_classes!(
    /// A job queue with a blocking API (the GIL is released while waiting on Redis).
    pub struct Queue;
    /// A job queue with an asyncio API: every method returns an awaitable.
    pub struct AsyncQueue;
    impl QueueBase {
        #[pyo3(signature = (name, client=None, *, url=None, max_attempts=None, backoff=None, timeout=Opt::Unset, keep_completed=None, keep_for=Opt::Unset, max_error_len=None, keep_dead=Opt::Unset, keep_dead_for=Opt::Unset, idempotency_window=Opt::Unset, shards=1))]
        fn open(
            py: Python<'_>,
            api: Api,
            name: Text,
            client: Option<Py<Client>>,
            url: Option<Secret>,
            max_attempts: Option<Int>,
            backoff: Option<Bound<'_, Backoff>>,
            timeout: Opt<Secs>,
            keep_completed: Option<Int>,
            keep_for: Opt<Secs>,
            max_error_len: Option<Int>,
            keep_dead: Opt<Int>,
            keep_dead_for: Opt<Secs>,
            idempotency_window: Opt<Secs>,
            #[pyo3(from_py_with = convert::int)] shards: i64,
        ) -> PyResult<Self> {
            let mut opts = QueueOptions::default();
            let backoff = backoff.map(|b| b.get().0);
            convert::set_given!(
                opts,
                max_attempts: convert::count_u32,
                backoff: convert::as_is,
                timeout: convert::opt_duration,
                keep_completed: convert::count,
                keep_for: convert::opt_duration,
                max_error_len: convert::count,
                keep_dead: convert::opt_count,
                keep_dead_for: convert::opt_duration,
                idempotency_window: convert::opt_duration,
            );
            let client = Client::for_queue(py, client, url)?;
            let shards = convert::count("shards", shards)?;
            let queue = tideq::Queue::sharded(&client.get().inner, &name.0, shards, opts)
                .map_err(error::to_py)?;
            Ok(QueueBase { queue, client, api })
        }
    }
);

#[pymethods]
impl QueueBase {
    #[getter]
    fn name(&self) -> &str {
        self.queue.name()
    }

    #[getter]
    fn client(&self, py: Python<'_>) -> Py<Client> {
        self.client.clone_ref(py)
    }

    /// How many shards (hash tags) the queue is split into.
    #[getter]
    fn shards(&self) -> usize {
        self.queue.shard_count()
    }

    #[pyo3(signature = (payload, *, id=None, delay=None, run_at=None, max_attempts=None, backoff=None, timeout=None))]
    #[allow(clippy::too_many_arguments)]
    fn enqueue<'py>(
        &self,
        py: Python<'py>,
        payload: &Bound<'py, PyAny>,
        id: Option<Text>,
        delay: Option<Secs>,
        run_at: Option<Bound<'py, PyAny>>,
        max_attempts: Option<Int>,
        backoff: Option<Bound<'py, Backoff>>,
        timeout: Option<Secs>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let payload = convert::bytes_like("payload", payload)?;
        let args = JobArgs {
            id,
            delay,
            run_at,
            max_attempts,
            backoff,
            timeout,
        };
        let (q, opts) = (self.queue.clone(), args.convert()?);
        self.api.call(
            py,
            async move { q.enqueue(payload, opts).await.map(Enqueued) },
        )
    }

    fn enqueue_many<'py>(
        &self,
        py: Python<'py>,
        items: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (q, jobs) = (self.queue.clone(), jobs(items)?);
        self.api.call(py, async move {
            let done = q.enqueue_many(&jobs).await?;
            Ok(done.into_iter().map(Enqueued).collect::<Vec<_>>())
        })
    }

    fn get<'py>(&self, py: Python<'py>, id: Text) -> PyResult<Bound<'py, PyAny>> {
        let id = id.0;
        let q = self.queue.clone();
        self.api
            .call(py, async move { Ok(q.get(&id).await?.map(JobInfo)) })
    }

    fn cancel<'py>(&self, py: Python<'py>, id: Text) -> PyResult<Bound<'py, PyAny>> {
        let id = id.0;
        let q = self.queue.clone();
        self.api.call(py, async move { q.cancel(&id).await })
    }

    #[pyo3(signature = (offset=0, limit=100))]
    fn dead_letters<'py>(
        &self,
        py: Python<'py>,
        #[pyo3(from_py_with = convert::int)] offset: i64,
        #[pyo3(from_py_with = convert::int)] limit: i64,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (offset, limit) = (
            convert::count("offset", offset)?,
            convert::count("limit", limit)?,
        );
        let q = self.queue.clone();
        self.api.call(py, async move {
            let dead = q.dead_letters(offset, limit).await?;
            Ok(dead.into_iter().map(JobInfo).collect::<Vec<_>>())
        })
    }

    fn requeue<'py>(&self, py: Python<'py>, id: Text) -> PyResult<Bound<'py, PyAny>> {
        let id = id.0;
        let q = self.queue.clone();
        self.api.call(py, async move { q.requeue(&id).await })
    }

    fn requeue_all<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let q = self.queue.clone();
        self.api.call(py, async move { q.requeue_all().await })
    }

    fn purge<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let q = self.queue.clone();
        self.api.call(py, async move { q.purge().await })
    }

    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let q = self.queue.clone();
        self.api
            .call(py, async move { q.stats().await.map(JobStats) })
    }

    /// Starts a `Worker` (blocking API) or `AsyncWorker` (asyncio API: call it with the loop
    /// running; `async def` handlers run on that loop).
    #[pyo3(signature = (handler, *, concurrency=None, batch_size=None, lease=None, poll_interval=None, grace=None, stop_when_drained=None))]
    #[allow(clippy::too_many_arguments)]
    fn work<'py>(
        &self,
        py: Python<'py>,
        handler: Py<PyAny>,
        concurrency: Option<Int>,
        batch_size: Option<Int>,
        lease: Option<Secs>,
        poll_interval: Option<Secs>,
        grace: Option<Secs>,
        stop_when_drained: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let mut opts = tideq::WorkerOptions::default();
        convert::set_given!(
            opts,
            concurrency: convert::count,
            batch_size: convert::count,
            lease: convert::duration,
            poll_interval: convert::duration,
            grace: convert::duration,
            stop_when_drained: convert::as_is,
        );
        worker::start(py, self.api, &self.queue, opts, handler)
    }

    /// `work()`, then waits until the worker stops (see [`signal::run`]).
    #[pyo3(signature = (handler, *, concurrency=None, batch_size=None, lease=None, poll_interval=None, grace=None, stop_when_drained=None))]
    #[allow(clippy::too_many_arguments)]
    fn run<'py>(
        &self,
        py: Python<'py>,
        handler: Py<PyAny>,
        concurrency: Option<Int>,
        batch_size: Option<Int>,
        lease: Option<Secs>,
        poll_interval: Option<Secs>,
        grace: Option<Secs>,
        stop_when_drained: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let worker = self.work(
            py,
            handler,
            concurrency,
            batch_size,
            lease,
            poll_interval,
            grace,
            stop_when_drained,
        )?;
        signal::run(&worker)
    }

    fn __repr__(slf: &Bound<'_, Self>) -> PyResult<String> {
        let (this, py) = (slf.get(), slf.py());
        let o = this.queue.options();
        Ok(format!(
            "{}({}, max_attempts={}, backoff={}, timeout={}, keep_completed={}, keep_for={}, \
             keep_dead={}, keep_dead_for={}, idempotency_window={}, shards={}, client={})",
            slf.get_type().name()?,
            convert::str_repr(py, this.queue.name()),
            o.max_attempts,
            Backoff(o.backoff).__repr__(),
            convert::secs_repr(o.timeout),
            o.keep_completed,
            convert::secs_repr(o.keep_for),
            o.keep_dead.map_or("None".to_string(), |n| n.to_string()),
            convert::secs_repr(o.keep_dead_for),
            convert::secs_repr(o.idempotency_window),
            this.queue.shard_count(),
            convert::str_repr(py, &this.client.get().inner.config().redacted_url()),
        ))
    }
}
