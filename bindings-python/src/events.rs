//! The event log on `Queue` (core `events`): `set_events`, `events`, the value class `Event`, and
//! the readers
//! `Queue.events` opens ([`open`]): the hidden base `_EventReader` (`next`, `commit`, written once
//! for both APIs through [`Api::call`]), `EventReader` (blocking: an iterator and a context
//! manager) and `AsyncEventReader` (asyncio: an async iterator and an async context manager).
//! Conversion only: where a reader starts, what it reads and when its place is stored are the
//! core's.

use std::sync::Arc;
use std::time::Instant;

use pyo3::prelude::*;
use pyo3::types::PyBytes;
use tokio::sync::Mutex;
use tokio::task::JoinHandle;

use crate::convert::{self, Int, Secs, Text};
use crate::jobs::QueueBase;
use crate::runtime::{self, Api};

/// One event of a queue's event log (see ``Queue.events``).
#[pyclass(module = "tideq", frozen, eq)]
#[derive(PartialEq)]
pub struct Event(pub tideq::Event);

#[pymethods]
impl Event {
    /// What happened: ``"enqueued"``, ``"active"``, ``"progress"``, ``"completed"``,
    /// ``"failed"``, ``"retried"``, ``"dead"``, ``"cancelled"``, ``"snoozed"`` (the handler raised
    /// ``Snooze`` or ``BackOff``), ``"expired"`` (not started by its deadline), or ``"lagged"``
    /// (not a job's event: the reader fell behind the log's length, ``data`` says how much it
    /// missed).
    #[getter]
    fn kind(&self) -> &'static str {
        self.0.kind.as_str()
    }
    /// The job's id (empty for ``"lagged"``).
    #[getter]
    fn job_id(&self) -> &str {
        &self.0.job_id
    }
    /// The event's raw data, or None: ``"active"`` the attempt number, ``"progress"`` the value
    /// reported, ``"completed"`` what the handler returned, ``"failed"``, ``"dead"`` and
    /// ``"expired"`` the error, ``"retried"`` and ``"snoozed"`` the delay in ms (``"retried"``: or why), ``"lagged"``
    /// how much was missed.
    #[getter]
    fn data<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyBytes>> {
        self.0.data.as_deref().map(|d| PyBytes::new(py, d))
    }
    /// When data over 1 KiB was left out of the log (``data`` is then None): its size in bytes.
    /// A completed job's result kept with the job is given in full instead; this is set when it
    /// was not kept or is gone (look it up with ``Queue.get``).
    #[getter]
    fn data_omitted_bytes(&self) -> Option<u64> {
        self.0.data_omitted_bytes
    }
    /// When it happened, epoch milliseconds by the Redis clock.
    #[getter]
    fn at_ms(&self) -> u64 {
        self.0.at_ms
    }
    /// ``data`` decoded as ``JobInfo.result`` is: the JSON value it holds, else the bytes
    /// themselves; None when there is no data.
    #[getter]
    fn value<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.0
            .data
            .as_deref()
            .map(|d| convert::json_or_bytes_value(py, d))
            .transpose()
    }
    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let e = &self.0;
        let data = match e.data.as_deref() {
            Some(d) => PyBytes::new(py, d).repr()?.to_string(),
            None => "None".to_string(),
        };
        Ok(format!(
            "Event(kind={}, job_id={}, data={data}, at_ms={})",
            convert::str_repr(py, e.kind.as_str()),
            convert::str_repr(py, &e.job_id),
            e.at_ms
        ))
    }
}

crate::value::value_class! { Event { kind, job_id, data, data_omitted_bytes, at_ms, value } }

/// A reader's core handle, once started.
enum State {
    /// The core's `Queue::events`, started on the runtime when the reader was made (asyncio
    /// API: `events()` is not a coroutine, yet "from now on" means from the call).
    Starting(JoinHandle<tideq::Result<tideq::Events>>),
    Ready(Box<tideq::Events>),
    /// The start failed: every use raises this.
    Failed(tideq::Error),
}

/// The core reader, waiting for its start the first time it is used.
async fn started(state: &mut State) -> tideq::Result<&mut tideq::Events> {
    if let State::Starting(start) = state {
        let outcome = match start.await {
            Ok(outcome) => outcome,
            // As if the core future had been awaited here.
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(e) => Err(tideq::Error::new(
                tideq::ErrorKind::Closed,
                format!("the event reader's start was cancelled: {e}"),
            )),
        };
        *state = match outcome {
            Ok(events) => State::Ready(Box::new(events)),
            Err(e) => State::Failed(e),
        };
    }
    match state {
        State::Ready(events) => Ok(events.as_mut()),
        State::Failed(e) => Err(e.clone()),
        State::Starting(_) => unreachable!("the start was awaited above"),
    }
}

type Shared = Arc<Mutex<State>>;

/// The next event, waiting without limit.
async fn next_event(state: Shared) -> tideq::Result<Event> {
    let mut state = state.lock().await;
    let events = started(&mut state).await?;
    loop {
        if let Some(e) = events.next(None).await? {
            return Ok(Event(e));
        }
    }
}

async fn commit(state: Shared) -> tideq::Result<()> {
    let mut state = state.lock().await;
    started(&mut state).await?.commit().await
}

/// Opens a reader of `queue`'s event log for `events()`: blocking, starts it (so errors raise
/// here) and returns an `EventReader`; asyncio, starts it on the runtime and returns an
/// `AsyncEventReader` that waits for the start when first used.
pub fn open<'py>(
    py: Python<'py>,
    api: Api,
    queue: &tideq::Queue,
    name: Option<String>,
    from_start: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let opts = tideq::EventsOptions {
        name: name.clone(),
        from_start,
    };
    let q = queue.clone();
    let state = match api {
        Api::Blocking => State::Ready(Box::new(runtime::block_on(py, q.events(opts))?)),
        Api::Async => State::Starting(runtime::get()?.spawn(async move { q.events(opts).await })),
    };
    let base = PyClassInitializer::from(ReaderBase {
        state: Arc::new(Mutex::new(state)),
        api,
        queue: queue.name().to_string(),
        name,
        from_start,
    });
    Ok(match api {
        Api::Blocking => Bound::new(py, base.add_subclass(EventReader))?.into_any(),
        Api::Async => Bound::new(py, base.add_subclass(AsyncEventReader))?.into_any(),
    })
}

/// A reader of a queue's event log; `EventReader` and `AsyncEventReader` differ in the API mode
/// and the protocols (iterator, context manager) of their mode.
#[pyclass(module = "tideq", name = "_EventReader", subclass, frozen)]
pub struct ReaderBase {
    state: Shared,
    api: Api,
    /// For `repr`: the queue's name and the reader's options.
    queue: String,
    name: Option<String>,
    from_start: bool,
}

#[pymethods]
impl ReaderBase {
    /// The next event, waiting up to ``timeout`` seconds (None: no limit); None when none came
    /// in time.
    ///
    /// A named reader's place is stored each time it reads more from Redis (the events it had
    /// taken so far), so one started again after a crash gets again at most what it took since.
    #[pyo3(signature = (timeout=None))]
    fn next<'py>(&self, py: Python<'py>, timeout: Option<Secs>) -> PyResult<Bound<'py, PyAny>> {
        // Too large to be a point in time: no limit.
        let timeout = convert::deadline("timeout", timeout)?
            .map(|d| d.saturating_duration_since(Instant::now()));
        let state = self.state.clone();
        self.api.call(py, async move {
            let mut state = state.lock().await;
            let event = started(&mut state).await?.next(timeout).await?;
            Ok(event.map(Event))
        })
    }

    /// Store a named reader's place (the events it has taken so far); nothing for an unnamed
    /// one.
    ///
    /// Each read stores it before reading more, so call this when you stop reading (leaving the
    /// reader's ``with`` block does).
    fn commit<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.api.call(py, commit(self.state.clone()))
    }

    fn __repr__(slf: &Bound<'_, Self>) -> PyResult<String> {
        let (this, py) = (slf.get(), slf.py());
        Ok(format!(
            "{}(queue={}, name={}, from_start={})",
            slf.get_type().name()?,
            convert::str_repr(py, &this.queue),
            this.name
                .as_deref()
                .map_or("None".to_string(), |n| convert::str_repr(py, n)),
            if this.from_start { "True" } else { "False" }
        ))
    }
}

/// A reader of a queue's event log, blocking API: ``for event in reader`` waits for each event
/// (the GIL released; Ctrl-C interrupts it).
///
/// Used as a context manager, it stores a named reader's place on leaving (``commit()``).
#[pyclass(module = "tideq", extends = ReaderBase, frozen)]
pub struct EventReader;

#[pymethods]
impl EventReader {
    fn __iter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    fn __next__(slf: &Bound<'_, Self>) -> PyResult<Event> {
        let state = slf.as_super().get().state.clone();
        runtime::block_on(slf.py(), next_event(state))
    }

    fn __enter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    /// Store a named reader's place (``commit()``); exceptions go on.
    fn __exit__(
        slf: &Bound<'_, Self>,
        exc_type: &Bound<'_, PyAny>,
        exc_value: &Bound<'_, PyAny>,
        traceback: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let _ = (exc_type, exc_value, traceback);
        let state = slf.as_super().get().state.clone();
        runtime::block_on(slf.py(), commit(state))
    }
}

/// A reader of a queue's event log, asyncio API: ``async for event in reader`` awaits each
/// event.
///
/// It started when ``events()`` was called; errors of the start (a bad name, Redis unreachable)
/// are raised by its first use. Used as an async context manager, it waits for the start on
/// entering and stores a named reader's place on leaving (``commit()``).
#[pyclass(module = "tideq", extends = ReaderBase, frozen)]
pub struct AsyncEventReader;

#[pymethods]
impl AsyncEventReader {
    fn __aiter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    fn __anext__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let state = slf.as_super().get().state.clone();
        runtime::awaitable(slf.py(), next_event(state))
    }

    /// Wait for the reader's start; returns the reader.
    fn __aenter__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let state = slf.as_super().get().state.clone();
        let reader = slf.clone().unbind();
        runtime::awaitable(slf.py(), async move {
            started(&mut *state.lock().await).await?;
            Ok(reader)
        })
    }

    /// Store a named reader's place (``commit()``); exceptions go on.
    fn __aexit__<'py>(
        slf: &Bound<'py, Self>,
        exc_type: &Bound<'py, PyAny>,
        exc_value: &Bound<'py, PyAny>,
        traceback: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let _ = (exc_type, exc_value, traceback);
        let state = slf.as_super().get().state.clone();
        runtime::awaitable(slf.py(), commit(state))
    }
}

#[pymethods]
impl QueueBase {
    /// Turn the queue's event log on, keeping about its newest ``max_len`` entries, or off (None).
    ///
    /// An entry holds one kind of event for a batch of jobs. Every producer and worker of the
    /// queue follows the setting at once; turning it off deletes the log. Events are off by
    /// default. ``max_len`` 0 raises ``InvalidArgumentError``.
    #[pyo3(signature = (max_len))]
    fn set_events<'py>(
        &self,
        py: Python<'py>,
        max_len: Option<Int>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let max_len = convert::opt_count("max_len", max_len)?;
        let q = self.queue.clone();
        self.api
            .call(py, async move { q.set_events(max_len).await })
    }

    /// A reader of the queue's event log: what happened to its jobs, in order, as ``Event``s.
    ///
    /// It reads from now on (from this call), or with ``from_start`` from the oldest event kept.
    /// A reader with a ``name`` keeps its place in Redis: started again with the same name (in
    /// any process), it resumes where it stopped (events it took but had not stored yet may come
    /// again), so one started ``from_start`` (the first time) misses nothing the log still holds
    /// even if it crashed; one that fell behind the log's length gets a ``"lagged"`` event first.
    /// The blocking API returns an ``EventReader`` (``for event in q.events(): ...``), the
    /// asyncio API an ``AsyncEventReader`` (``async for event in aq.events(): ...``; ``events()``
    /// itself is not awaited). Nothing is logged until ``set_events`` turns the log on.
    ///
    /// An ``AsyncEventReader`` starts at the call (so "from now on" means from the call) and is
    /// awaited on its first use (``async for``, ``await reader.next()``, ``async with``), which
    /// raises the start's errors.
    #[pyo3(signature = (name=None, from_start=false))]
    fn events<'py>(
        &self,
        py: Python<'py>,
        name: Option<Text>,
        from_start: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        open(py, self.api, &self.queue, name.map(|n| n.0), from_start)
    }
}
