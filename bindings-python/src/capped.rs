//! `tideq.CappedQueue` (blocking) and `tideq.AsyncCappedQueue` (asyncio) over one
//! `tideq::CappedQueue` (core `capped`): both extend the hidden `_CappedQueue`, which holds the
//! API mode and has every method. Plus `tideq.CappedStats`, `tideq.Peeked` and
//! `tideq.UnreadableItem`. Conversion only:
//! every operation is the core's.

use pyo3::prelude::*;
use pyo3::types::PyBytes;
use tideq::{CappedOptions, ConsumerOptions};

use crate::client::Client;
use crate::consumer;
use crate::convert::{self, Int, Items, Opt, Secret, Secs, Text};
use crate::error;
use crate::runtime::{self, Api};
use crate::signal;

/// A page of a capped queue's groups (``CappedQueue.groups_page``) and the cursor of the next.
#[pyclass(module = "tideq", frozen, eq)]
#[derive(PartialEq)]
pub struct CappedGroupPage(pub tideq::CappedGroupPage);

#[pymethods]
impl CappedGroupPage {
    /// The page's groups, in no particular order.
    #[getter]
    fn groups(&self) -> Vec<String> {
        self.0.groups.clone()
    }
    /// Give it to the next ``groups_page`` call; None when this was the last page.
    #[getter]
    fn cursor(&self) -> Option<&str> {
        self.0.cursor.as_deref()
    }
    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "CappedGroupPage(groups=[{} groups], cursor={})",
            self.0.groups.len(),
            convert::cursor_repr(py, &self.0.cursor)
        )
    }
}

crate::value::value_class! { CappedGroupPage { groups, cursor } }

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
    /// Popped items that could not be opened (a missing or wrong key), kept in the unreadable
    /// list instead of being delivered (not counted in ``delivered``).
    #[getter]
    fn unreadable(&self) -> u64 {
        self.0.unreadable
    }
    /// Unreadable items pushed back by ``requeue_unreadable``.
    #[getter]
    fn requeued(&self) -> u64 {
        self.0.requeued
    }
    fn __repr__(&self) -> String {
        let s = &self.0;
        format!(
            "CappedStats(pushed={}, dropped={}, discarded={}, delivered={}, groups={}, \
             unreadable={}, requeued={})",
            s.pushed, s.dropped, s.discarded, s.delivered, s.groups, s.unreadable, s.requeued
        )
    }
}

crate::value::value_class! { CappedStats { pushed, dropped, discarded, delivered, groups, unreadable, requeued } }

/// An item still queued in a group, as ``peek`` shows it.
#[pyclass(module = "tideq", frozen, eq)]
#[derive(PartialEq)]
pub struct Peeked(tideq::Peeked);

#[pymethods]
impl Peeked {
    /// When it was pushed, epoch milliseconds by the Redis clock.
    #[getter]
    fn pushed_at_ms(&self) -> u64 {
        self.0.pushed_at_ms
    }
    /// The item's bytes (its sealed bytes when ``unreadable`` is set).
    #[getter]
    fn item<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.0.item)
    }
    /// None, or why this handle cannot open the item (it is encrypted with a key the handle
    /// lacks or that does not match, or the handle has no encryption), naming the key id.
    #[getter]
    fn unreadable(&self) -> Option<&str> {
        self.0.unreadable.as_deref()
    }
    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let unreadable = match &self.0.unreadable {
            Some(u) => format!(", unreadable={}", convert::str_repr(py, u)),
            None => String::new(),
        };
        Ok(format!(
            "Peeked(pushed_at_ms={}, item={}{unreadable})",
            self.0.pushed_at_ms,
            PyBytes::new(py, &self.0.item).repr()?
        ))
    }
}

crate::value::value_class! { Peeked { pushed_at_ms, item, unreadable } }

/// An item a pop took but could not open (its key was missing or did not match), kept in the
/// queue's unreadable list (``CappedQueue.unreadable``).
#[pyclass(module = "tideq", frozen, eq)]
#[derive(PartialEq)]
pub struct UnreadableItem(tideq::UnreadableItem);

#[pymethods]
impl UnreadableItem {
    /// The group it was popped from (and goes back to).
    #[getter]
    fn group(&self) -> &str {
        &self.0.group
    }
    /// The id of the key it is sealed with.
    #[getter]
    fn key_id(&self) -> &str {
        &self.0.key_id
    }
    /// Why it could not be opened (names the key id).
    #[getter]
    fn error(&self) -> &str {
        &self.0.error
    }
    /// When the pop found it unreadable, epoch milliseconds (the consumer's clock).
    #[getter]
    fn at_ms(&self) -> u64 {
        self.0.at_ms
    }
    /// The sealed bytes, as they were stored.
    #[getter]
    fn item<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.0.item)
    }
    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "UnreadableItem(group={}, key_id={}, error={}, at_ms={}, item=<{} bytes>)",
            convert::str_repr(py, &self.0.group),
            convert::str_repr(py, &self.0.key_id),
            convert::str_repr(py, &self.0.error),
            self.0.at_ms,
            self.0.item.len()
        )
    }
}

crate::value::value_class! { UnreadableItem { group, key_id, error, at_ms, item } }

/// A capped queue; `CappedQueue` and `AsyncCappedQueue` differ only in the API mode they open
/// it with.
#[pyclass(module = "tideq", name = "_CappedQueue", subclass, frozen)]
pub struct CappedQueueBase {
    queue: tideq::CappedQueue,
    client: Py<Client>,
    api: Api,
    /// The consumers started from this handle, which leaving its `with` block shuts down.
    started: signal::Started,
}

runtime::api_classes!(
    /// A capped grouped queue, blocking API (the GIL is released while waiting on Redis).
    ///
    /// Each group keeps its newest ``capacity`` items; a group idle for ``ttl`` seconds disappears
    /// (``None``: never); items older than ``max_age`` seconds are discarded when consumed
    /// (``None``: no limit). Pass a ``client`` or a ``url`` (neither: ``Client()``). Delivery is
    /// at-most-once. Options not given (or None where None has no meaning of its own) take the
    /// core's defaults: ``capacity`` 1000, ``ttl`` one day, no ``max_age``.
    ///
    /// ``shards`` (1 to 1024) splits the queue into that many hash tags, which a Redis Cluster
    /// spreads over its masters; a group's shard is fixed by its name, consumers serve every shard
    /// and ``stats`` adds them up. Every handle of a queue must use the same count: the first push
    /// records it in Redis, and a handle made with another count raises ``InvalidArgumentError``
    /// at its first call. Queue names may not contain ``#``.
    ///
    /// ``encryption`` (an ``Encryption``) seals each item before it reaches Redis and opens it
    /// when popped or peeked; items stored in clear read as they are. An item a pop cannot open
    /// (its key is missing or does not match) is not delivered: it is kept in the queue's
    /// unreadable list (``unreadable``, ``requeue_unreadable``).
    ///
    /// Used as a context manager (``with CappedQueue(...) as q:``, ``async with`` for
    /// ``AsyncCappedQueue``), leaving the block shuts down the consumers started from ``q``
    /// that still run, as leaving a consumer's own ``with`` block does; the queue stays usable.
    /// The Redis connections are its ``Client``'s (made on first use, shared by the queues on
    /// it): they stay open.
    pub struct CappedQueue;
    /// A capped grouped queue, asyncio API: same constructor and methods, all awaitable.
    pub struct AsyncCappedQueue;
    impl CappedQueueBase {
        #[pyo3(signature = (name, client=None, *, url=None, capacity=None, ttl=Opt::Unset, max_age=Opt::Unset, shards=1, encryption=None))]
        fn open(
            py: Python<'_>,
            api: Api,
            name: Text,
            client: Option<Py<Client>>,
            url: Option<Secret>,
            capacity: Option<Int>,
            ttl: Opt<Secs>,
            max_age: Opt<Secs>,
            #[pyo3(from_py_with = convert::int)] shards: i64,
            encryption: Option<Bound<'_, crate::crypt::Encryption>>,
        ) -> PyResult<Self> {
            let client = Client::for_queue(py, client, url)?;
            let mut opts = CappedOptions::default();
            convert::set_given!(
                opts,
                capacity: convert::count,
                ttl: convert::opt_duration,
                max_age: convert::opt_duration,
            );
            opts.encryption = encryption.map(|e| e.get().0.clone());
            let shards = convert::count("shards", shards)?;
            let queue = tideq::CappedQueue::sharded(&client.get().inner, &name.0, shards, opts)
                .map_err(error::to_py)?;
            Ok(CappedQueueBase {
                queue,
                client,
                api,
                started: signal::Started::default(),
            })
        }
    }
);

impl CappedQueueBase {
    /// The core's defaults of the constructor's [`Opt`] arguments, as its signature shows them
    /// ([`runtime::show_defaults`]).
    pub fn unset_defaults(py: Python<'_>) -> PyResult<Vec<(&'static str, Bound<'_, PyAny>)>> {
        let o = CappedOptions::default();
        Ok(vec![
            ("ttl", convert::secs_value(py, o.ttl)?),
            ("max_age", convert::secs_value(py, o.max_age)?),
        ])
    }

    /// Leaving a `with` / `async with` block: the consumers started from this handle shut down.
    pub fn exit<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.started.exit(py, self.api)
    }
}

signal::context_manager!(
    blocking CappedQueue,
    "Shut down the consumers started from this queue that still run (``consume``), as leaving a\n\
     consumer's own ``with`` block does: running handlers get the grace period. An exception\n\
     raised in the block goes on; the queue stays usable."
);
signal::context_manager!(
    asyncio AsyncCappedQueue,
    "Returns the queue itself.",
    "``await`` the shutdown of the consumers started from this queue that still run, as leaving\n\
     a consumer's own ``async with`` block does; an exception raised in the block goes on."
);

#[pymethods]
impl CappedQueueBase {
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

    /// Append ``item`` to ``group``; returns how many old items were dropped.
    fn push<'py>(
        &self,
        py: Python<'py>,
        group: Text,
        item: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (q, group, item) = (self.queue.clone(), group.0, convert::item(item)?);
        self.api.call(py, async move { q.push(&group, item).await })
    }

    /// Push ``(group, item)`` pairs in one round trip; drops per item.
    ///
    /// All-or-nothing validation.
    fn push_many<'py>(
        &self,
        py: Python<'py>,
        items: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (q, pairs) = (self.queue.clone(), convert::pairs(items)?);
        self.api.call(py, async move { q.push_many(&pairs).await })
    }

    /// Remove and return up to ``max`` items of ``group``, oldest first.
    #[pyo3(signature = (group, max=128))]
    fn pop_batch<'py>(
        &self,
        py: Python<'py>,
        group: Text,
        #[pyo3(from_py_with = convert::int)] max: i64,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (q, group, max) = (self.queue.clone(), group.0, convert::count("max", max)?);
        self.api
            .call(py, async move { q.pop_batch(&group, max).await.map(Items) })
    }

    /// Next ``(group, items)`` round-robin over groups with data, or ``None``.
    #[pyo3(signature = (max=128))]
    fn next_batch<'py>(
        &self,
        py: Python<'py>,
        #[pyo3(from_py_with = convert::int)] max: i64,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (q, max) = (self.queue.clone(), convert::count("max", max)?);
        self.api.call(py, async move {
            let batch = q.next_batch(max).await?;
            Ok(batch.map(|b| (b.group, Items(b.items))))
        })
    }

    /// The oldest ``max`` items of ``group`` (1 to 1000), oldest first, left in place.
    ///
    /// Items older than ``max_age`` are left out, as a pop would discard them, so fewer than
    /// ``max`` may come back. An encrypted item this handle cannot open comes back as stored
    /// (sealed), its ``unreadable`` naming the key id.
    #[pyo3(signature = (group, max=10))]
    fn peek<'py>(
        &self,
        py: Python<'py>,
        group: Text,
        #[pyo3(from_py_with = convert::int)] max: i64,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (q, group, max) = (self.queue.clone(), group.0, convert::count("max", max)?);
        self.api.call(py, async move {
            let peeked = q.peek(&group, max).await?;
            Ok(peeked.into_iter().map(Peeked).collect::<Vec<_>>())
        })
    }

    /// Up to ``max`` (1 to 1000) of the items pops could not open, newest first (``UnreadableItem``:
    /// group, key id, error, sealed bytes). They stay listed.
    ///
    /// The list keeps the newest 1000 per shard.
    #[pyo3(signature = (max=100))]
    fn unreadable<'py>(
        &self,
        py: Python<'py>,
        #[pyo3(from_py_with = convert::int)] max: i64,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (q, max) = (self.queue.clone(), convert::count("max", max)?);
        self.api.call(py, async move {
            let items = q.unreadable(max).await?;
            Ok(items.into_iter().map(UnreadableItem).collect::<Vec<_>>())
        })
    }

    /// Push the unreadable items this handle can now open back to their groups; returns how many.
    ///
    /// Once their key is restored (in this handle's ``encryption``) nothing is lost; the others
    /// stay listed.
    fn requeue_unreadable<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let q = self.queue.clone();
        self.api
            .call(py, async move { q.requeue_unreadable().await })
    }

    /// Items queued in ``group``.
    fn len<'py>(&self, py: Python<'py>, group: Text) -> PyResult<Bound<'py, PyAny>> {
        let (q, group) = (self.queue.clone(), group.0);
        self.api.call(py, async move { q.len(&group).await })
    }

    /// Groups holding data, in round-robin order. Reads the whole rotation; to show some of
    /// many, read a page with ``groups_page``.
    fn groups<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let q = self.queue.clone();
        self.api.call(py, async move { q.groups().await })
    }

    /// About ``count`` (1 to 250, default 100) of the groups holding data, from ``cursor`` (None: the
    /// start), in no particular order, and the cursor of the next page (None after the last).
    /// Each call costs about ``count`` groups' work, however many there are.
    #[pyo3(signature = (cursor=None, count=None))]
    fn groups_page<'py>(
        &self,
        py: Python<'py>,
        cursor: Option<Text>,
        count: Option<Int>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let count = convert::page_count(count)?;
        let q = self.queue.clone();
        self.api.call(py, async move {
            let cursor = cursor.as_ref().map(|c| c.0.as_str());
            Ok(CappedGroupPage(q.groups_page(cursor, count).await?))
        })
    }

    /// Queue-wide counters.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let q = self.queue.clone();
        self.api
            .call(py, async move { q.stats().await.map(CappedStats) })
    }

    /// Start consuming in the background.
    ///
    /// ``handler(group, items)`` per batch.
    ///
    /// Plain handlers run in worker threads; ``async def`` handlers on a private event loop per
    /// batch (``AsyncCappedQueue.consume`` is called from a running event loop, on which its
    /// ``async def`` handlers run). A handler exception is logged on the ``tideq`` logger and the batch is not
    /// redelivered. ``groups``: serve only these; ``exclude``: skip these. Options not given
    /// take the core's defaults: ``concurrency`` 1, ``batch_size`` 128, ``poll_interval`` 2 s,
    /// ``grace`` 10 s, ``stop_when_empty`` False.
    #[pyo3(signature = (handler, *, concurrency=None, batch_size=None, groups=None, exclude=None, poll_interval=None, grace=None, stop_when_empty=None))]
    #[allow(clippy::too_many_arguments)]
    fn consume<'py>(
        &self,
        py: Python<'py>,
        handler: Py<PyAny>,
        concurrency: Option<Int>,
        batch_size: Option<Int>,
        groups: Option<Vec<Text>>,
        exclude: Option<Vec<Text>>,
        poll_interval: Option<Secs>,
        grace: Option<Secs>,
        stop_when_empty: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let mut opts = ConsumerOptions::default();
        convert::set_given!(
            opts,
            concurrency: convert::count,
            batch_size: convert::count,
            groups: convert::texts,
            exclude: convert::texts,
            poll_interval: convert::duration,
            grace: convert::duration,
            stop_when_empty: convert::as_is,
        );
        consumer::start(py, self.api, &self.queue, &self.started, opts, handler)
    }

    /// ``consume()``, then wait until the consumer stops.
    ///
    /// ``consume()`` and block until SIGINT/SIGTERM (graceful stop) or ``stop_when_empty``;
    /// raises the error the consumer stopped on, if any. ``AsyncCappedQueue.run`` is awaited
    /// instead, and cancelling it stops the consumer gracefully too.
    #[pyo3(signature = (handler, *, concurrency=None, batch_size=None, groups=None, exclude=None, poll_interval=None, grace=None, stop_when_empty=None))]
    #[allow(clippy::too_many_arguments)]
    fn run<'py>(
        &self,
        py: Python<'py>,
        handler: Py<PyAny>,
        concurrency: Option<Int>,
        batch_size: Option<Int>,
        groups: Option<Vec<Text>>,
        exclude: Option<Vec<Text>>,
        poll_interval: Option<Secs>,
        grace: Option<Secs>,
        stop_when_empty: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let consumer = self.consume(
            py,
            handler,
            concurrency,
            batch_size,
            groups,
            exclude,
            poll_interval,
            grace,
            stop_when_empty,
        )?;
        signal::run(&consumer)
    }

    fn __repr__(slf: &Bound<'_, Self>) -> PyResult<String> {
        let (this, py) = (slf.get(), slf.py());
        let o = this.queue.options();
        Ok(format!(
            "{}({}, capacity={}, ttl={}, max_age={}, shards={}, client={})",
            slf.get_type().name()?,
            convert::str_repr(py, this.queue.name()),
            o.capacity,
            convert::secs_repr(o.ttl),
            convert::secs_repr(o.max_age),
            this.queue.shard_count(),
            convert::str_repr(py, &this.client.get().inner.config().redacted_url()),
        ))
    }
}
