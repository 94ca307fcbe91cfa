//! `tideq.CappedQueue` (blocking) and `tideq.AsyncCappedQueue` (asyncio) over one
//! `tideq::CappedQueue`, plus `tideq.CappedStats`. Conversion only: every operation is the core's.

use pyo3::prelude::*;
use tideq::CappedOptions;

use crate::client::Client;
use crate::consumer::{self, AsyncConsumer, Consumer, ConsumerStats, Options};
use crate::convert::{self, Items};
use crate::errors::{self, invalid};
use crate::runtime;

/// Queue-wide counters kept in Redis.
#[pyclass(module = "tideq", frozen, eq)]
#[derive(PartialEq)]
pub struct CappedStats(tideq::CappedStats);

#[pymethods]
impl CappedStats {
    /// Items accepted by push/push_many.
    #[getter]
    fn pushed(&self) -> u64 {
        self.0.pushed
    }
    /// Items dropped because their group was over capacity.
    #[getter]
    fn dropped(&self) -> u64 {
        self.0.dropped
    }
    /// Items discarded when consumed because they were older than max_age.
    #[getter]
    fn discarded(&self) -> u64 {
        self.0.discarded
    }
    /// Items handed out by pop_batch/next_batch/consumers.
    #[getter]
    fn delivered(&self) -> u64 {
        self.0.delivered
    }
    /// Groups currently holding data.
    #[getter]
    fn groups(&self) -> u64 {
        self.0.groups
    }
    fn __repr__(&self) -> String {
        let s = &self.0;
        format!(
            "CappedStats(pushed={}, dropped={}, discarded={}, delivered={}, groups={})",
            s.pushed, s.dropped, s.discarded, s.delivered, s.groups
        )
    }
}

/// What both queue classes hold: the core queue and the Python client it was opened with.
struct Handle {
    queue: tideq::CappedQueue,
    client: Py<Client>,
}

impl Handle {
    #[allow(clippy::too_many_arguments)]
    fn open(
        py: Python<'_>,
        name: &str,
        client: Option<Py<Client>>,
        url: Option<String>,
        capacity: i64,
        ttl: Option<f64>,
        max_age: Option<f64>,
        shards: i64,
    ) -> PyResult<Self> {
        let client = match (client, url) {
            (Some(_), Some(_)) => return Err(invalid("pass either client or url, not both")),
            (Some(client), None) => client,
            (None, url) => Py::new(py, Client::from_url(url)?)?,
        };
        let opts = CappedOptions {
            capacity: convert::count("capacity", capacity)?,
            ttl: convert::opt_duration("ttl", ttl)?,
            max_age: convert::opt_duration("max_age", max_age)?,
        };
        let shards = convert::count("shards", shards)?;
        let queue = tideq::CappedQueue::sharded(&client.get().inner, name, shards, opts)
            .map_err(errors::to_py)?;
        Ok(Handle { queue, client })
    }

    fn repr(&self, py: Python<'_>, class: &str) -> String {
        let o = self.queue.options();
        let secs = |d: Option<std::time::Duration>| {
            d.map_or("None".to_string(), |d| format!("{:?}", d.as_secs_f64()))
        };
        format!(
            "{class}({}, capacity={}, ttl={}, max_age={}, shards={}, client={})",
            convert::str_repr(py, self.queue.name()),
            o.capacity,
            secs(o.ttl),
            secs(o.max_age),
            self.queue.shard_count(),
            convert::str_repr(py, &self.client.get().inner.config().redacted_url()),
        )
    }
}

/// A capped grouped queue with a blocking API (the GIL is released while waiting on Redis).
#[pyclass(module = "tideq", frozen)]
pub struct CappedQueue(Handle);

#[pymethods]
impl CappedQueue {
    #[new]
    #[pyo3(signature = (name, client=None, *, url=None, capacity=1000, ttl=Some(86400.0), max_age=None, shards=1))]
    #[pyo3(
        text_signature = "(name, client=None, *, url=None, capacity=1000, ttl=86400.0, max_age=None, shards=1)"
    )]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        name: &str,
        client: Option<Py<Client>>,
        url: Option<String>,
        capacity: i64,
        ttl: Option<f64>,
        max_age: Option<f64>,
        shards: i64,
    ) -> PyResult<Self> {
        Handle::open(py, name, client, url, capacity, ttl, max_age, shards).map(CappedQueue)
    }

    #[getter]
    fn name(&self) -> &str {
        self.0.queue.name()
    }

    #[getter]
    fn client(&self, py: Python<'_>) -> Py<Client> {
        self.0.client.clone_ref(py)
    }

    /// How many shards (hash tags) the queue is split into.
    #[getter]
    fn shards(&self) -> usize {
        self.0.queue.shard_count()
    }

    fn push(&self, py: Python<'_>, group: String, item: &Bound<'_, PyAny>) -> PyResult<u64> {
        let item = convert::item(item)?;
        runtime::block_on(py, self.0.queue.push(&group, item))
    }

    fn push_many(&self, py: Python<'_>, items: &Bound<'_, PyAny>) -> PyResult<Vec<u64>> {
        let pairs = convert::pairs(items)?;
        runtime::block_on(py, self.0.queue.push_many(&pairs))
    }

    #[pyo3(signature = (group, max=128))]
    fn pop_batch(&self, py: Python<'_>, group: String, max: i64) -> PyResult<Items> {
        let max = convert::count("max", max)?;
        runtime::block_on(py, self.0.queue.pop_batch(&group, max)).map(Items)
    }

    #[pyo3(signature = (max=128))]
    fn next_batch(&self, py: Python<'_>, max: i64) -> PyResult<Option<(String, Items)>> {
        let max = convert::count("max", max)?;
        let batch = runtime::block_on(py, self.0.queue.next_batch(max))?;
        Ok(batch.map(|b| (b.group, Items(b.items))))
    }

    fn len(&self, py: Python<'_>, group: String) -> PyResult<u64> {
        runtime::block_on(py, self.0.queue.len(&group))
    }

    fn groups(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        runtime::block_on(py, self.0.queue.groups())
    }

    fn stats(&self, py: Python<'_>) -> PyResult<CappedStats> {
        runtime::block_on(py, self.0.queue.stats()).map(CappedStats)
    }

    #[pyo3(signature = (handler, *, concurrency=1, batch_size=128, groups=None, exclude=None, poll_interval=2.0, grace=10.0, stop_when_empty=false))]
    #[allow(clippy::too_many_arguments)]
    fn consume(
        &self,
        py: Python<'_>,
        handler: Py<PyAny>,
        concurrency: i64,
        batch_size: i64,
        groups: Option<Vec<String>>,
        exclude: Option<Vec<String>>,
        poll_interval: f64,
        grace: f64,
        stop_when_empty: bool,
    ) -> PyResult<Consumer> {
        let opts = Options::new(
            concurrency,
            batch_size,
            groups,
            exclude,
            poll_interval,
            grace,
            stop_when_empty,
        )?;
        Consumer::start(py, &self.0.queue, opts, handler)
    }

    #[pyo3(signature = (handler, *, concurrency=1, batch_size=128, groups=None, exclude=None, poll_interval=2.0, grace=10.0, stop_when_empty=false))]
    #[allow(clippy::too_many_arguments)]
    fn run(
        &self,
        py: Python<'_>,
        handler: Py<PyAny>,
        concurrency: i64,
        batch_size: i64,
        groups: Option<Vec<String>>,
        exclude: Option<Vec<String>>,
        poll_interval: f64,
        grace: f64,
        stop_when_empty: bool,
    ) -> PyResult<ConsumerStats> {
        let opts = Options::new(
            concurrency,
            batch_size,
            groups,
            exclude,
            poll_interval,
            grace,
            stop_when_empty,
        )?;
        let consumer = Consumer::start(py, &self.0.queue, opts, handler)?;
        consumer::run_blocking(py, &consumer)
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        self.0.repr(py, "CappedQueue")
    }
}

/// A capped grouped queue with an asyncio API: every method returns an awaitable.
#[pyclass(module = "tideq", frozen)]
pub struct AsyncCappedQueue(Handle);

#[pymethods]
impl AsyncCappedQueue {
    #[new]
    #[pyo3(signature = (name, client=None, *, url=None, capacity=1000, ttl=Some(86400.0), max_age=None, shards=1))]
    #[pyo3(
        text_signature = "(name, client=None, *, url=None, capacity=1000, ttl=86400.0, max_age=None, shards=1)"
    )]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        name: &str,
        client: Option<Py<Client>>,
        url: Option<String>,
        capacity: i64,
        ttl: Option<f64>,
        max_age: Option<f64>,
        shards: i64,
    ) -> PyResult<Self> {
        Handle::open(py, name, client, url, capacity, ttl, max_age, shards).map(AsyncCappedQueue)
    }

    #[getter]
    fn name(&self) -> &str {
        self.0.queue.name()
    }

    #[getter]
    fn client(&self, py: Python<'_>) -> Py<Client> {
        self.0.client.clone_ref(py)
    }

    /// How many shards (hash tags) the queue is split into.
    #[getter]
    fn shards(&self) -> usize {
        self.0.queue.shard_count()
    }

    fn push<'py>(
        &self,
        py: Python<'py>,
        group: String,
        item: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let item = convert::item(item)?;
        let q = self.0.queue.clone();
        runtime::awaitable(py, async move { q.push(&group, item).await })
    }

    fn push_many<'py>(
        &self,
        py: Python<'py>,
        items: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let pairs = convert::pairs(items)?;
        let q = self.0.queue.clone();
        runtime::awaitable(py, async move { q.push_many(&pairs).await })
    }

    #[pyo3(signature = (group, max=128))]
    fn pop_batch<'py>(
        &self,
        py: Python<'py>,
        group: String,
        max: i64,
    ) -> PyResult<Bound<'py, PyAny>> {
        let max = convert::count("max", max)?;
        let q = self.0.queue.clone();
        runtime::awaitable(py, async move { q.pop_batch(&group, max).await.map(Items) })
    }

    #[pyo3(signature = (max=128))]
    fn next_batch<'py>(&self, py: Python<'py>, max: i64) -> PyResult<Bound<'py, PyAny>> {
        let max = convert::count("max", max)?;
        let q = self.0.queue.clone();
        runtime::awaitable(py, async move {
            let batch = q.next_batch(max).await?;
            Ok(batch.map(|b| (b.group, Items(b.items))))
        })
    }

    fn len<'py>(&self, py: Python<'py>, group: String) -> PyResult<Bound<'py, PyAny>> {
        let q = self.0.queue.clone();
        runtime::awaitable(py, async move { q.len(&group).await })
    }

    fn groups<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let q = self.0.queue.clone();
        runtime::awaitable(py, async move { q.groups().await })
    }

    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let q = self.0.queue.clone();
        runtime::awaitable(py, async move { q.stats().await.map(CappedStats) })
    }

    /// Must be called with an asyncio loop running: `async def` handlers run on that loop.
    #[pyo3(signature = (handler, *, concurrency=1, batch_size=128, groups=None, exclude=None, poll_interval=2.0, grace=10.0, stop_when_empty=false))]
    #[allow(clippy::too_many_arguments)]
    fn consume(
        &self,
        py: Python<'_>,
        handler: Py<PyAny>,
        concurrency: i64,
        batch_size: i64,
        groups: Option<Vec<String>>,
        exclude: Option<Vec<String>>,
        poll_interval: f64,
        grace: f64,
        stop_when_empty: bool,
    ) -> PyResult<AsyncConsumer> {
        let opts = Options::new(
            concurrency,
            batch_size,
            groups,
            exclude,
            poll_interval,
            grace,
            stop_when_empty,
        )?;
        AsyncConsumer::start(py, &self.0.queue, opts, handler)
    }

    #[pyo3(signature = (handler, *, concurrency=1, batch_size=128, groups=None, exclude=None, poll_interval=2.0, grace=10.0, stop_when_empty=false))]
    #[allow(clippy::too_many_arguments)]
    fn run<'py>(
        &self,
        py: Python<'py>,
        handler: Py<PyAny>,
        concurrency: i64,
        batch_size: i64,
        groups: Option<Vec<String>>,
        exclude: Option<Vec<String>>,
        poll_interval: f64,
        grace: f64,
        stop_when_empty: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let opts = Options::new(
            concurrency,
            batch_size,
            groups,
            exclude,
            poll_interval,
            grace,
            stop_when_empty,
        )?;
        let consumer = AsyncConsumer::start(py, &self.0.queue, opts, handler)?;
        consumer::run_async(py, consumer)
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        self.0.repr(py, "AsyncCappedQueue")
    }
}
