//! Python binding of tideq (`tideq._tideq`): conversion and callback plumbing only. Every queue
//! operation, script, schema and default lives in the `tideq` core crate.
//!
//! Map. `Queue`'s methods are split by role, one file per role named as in the core and the Node
//! binding, each with its own `#[pymethods] impl QueueBase` block (pyo3's `multiple-pymethods`):
//! - [`jobs`]: `Queue`, `AsyncQueue` (the handle over the hidden `_Queue`) and the producer:
//!   `enqueue`, `enqueue_many`.
//! - [`outcome`]: `wait` (a job's outcome).
//! - [`admin`]: `get`, `cancel`, `promote`, `delete`, `jobs`, `jobs_page` (and its `JobPage`),
//!   `find_jobs` (and its `JobSearch`), dead letters, `stats`.
//! - [`worker`]: `work`, `run`, `work_batches`, `run_batches`; `Worker`, `AsyncWorker` (running
//!   handles), `WorkerStats`.
//! - [`serve`]: `serve`, `serve_async`: a worker process's `main` over started workers (core
//!   `serve`: signals, health endpoint, job limit, the `tideq worker` supervisor's status).
//! - [`verdict`]: what a job handler raises instead of failing (`Snooze`, `BackOff`,
//!   `DontRetry`, defined in `tideq/_outcomes.py`), as the core takes it.
//! - [`task`]: tasks by name: `task`, `enqueue_task`, `work_tasks`, `run_tasks`.
//! - [`schedule`]: `upsert_schedule`, `remove_schedule`, `schedules`; `ScheduleInfo`.
//! - [`registry`]: `workers` (the live workers); `WorkerInfo`.
//! - [`events`]: `set_events`, `events`; the readers `EventReader`, `AsyncEventReader`, `Event`.
//! - [`control`]: pause/resume, limits, groups; `Rate`, `Limits`, `GroupInfo`, `GroupPage`.
//! - [`lease`]: manual leasing: `lease_jobs`, `complete`, `fail`, `release`, `extend`.
//! - [`workflow`]: flows (a parent job waiting for its children): `enqueue_flow`,
//!   `children_results`; `FlowJob`, `ChildResult` (`Job.children_results` is in [`job`]).
//! - [`options`]: per-job options, `dedup`/`debounce`, `enqueue_many` items and worker options,
//!   read from Python arguments.
//! - [`job`]: value classes `Backoff`, `Enqueued`, `Job`, `JobInfo`; [`job_stats`]: `JobStats`.
//! - [`value`]: what every value class offers besides its properties (`to_dict`, hashing,
//!   pickling), written once ([`value::value_class!`]).
//!
//! The other classes and functions, and host plumbing:
//! - [`client`]: `Client` (one server, a Redis Cluster or a Sentinel-managed primary).
//! - [`server`]: `Client.server_info` (what the Redis server says of itself); `ServerInfo`.
//! - [`capped`]: `CappedQueue`, `AsyncCappedQueue`, `CappedStats`, `CappedGroupPage`, `Peeked`,
//!   `UnreadableItem`.
//! - [`consumer`]: `Consumer`, `AsyncConsumer` (running handles), `ConsumerStats`.
//! - [`acl`]: `acl_rules`, the Redis ACL rules of a role on a queue.
//! - [`cli`]: `_run_cli`, the `tideq` command (the CLI crate's `run_cli_with_host`: `tideq
//!   worker` starts `python -m tideq._worker` children).
//! - [`envelope`]: the job envelope as a dict (`decode_envelope`, `encode_envelope`).
//! - [`otel`]: trace context (`trace=`, `Job.trace`) and the OpenTelemetry hooks of
//!   `tideq._otel` (`_set_otel_hooks`).
//! - [`testing`]: the test modes under `tideq.testing` (`_testing_start`, `_TestMode`).
//! - [`error`]: `TideqError` and one subclass per core error code.
//! - [`convert`]: Python values to core arguments and back.
//! - [`handler`]: calling Python handlers, for consumers and workers alike.
//! - [`loop_task`]: an `async def` handler's coroutine as a cancellable task on an event loop.
//! - [`runtime`]: the one tokio runtime, fork detection, and [`runtime::Api`]: each method is
//!   written once, on a hidden base class, for both the blocking and the asyncio class.
//! - [`signal`]: the running handles' base class and `run()` (SIGINT/SIGTERM: graceful stop).
//!
//! The docs Python shows (`help()`) are the `///` comments of the `#[pymethods]`/`#[pyclass]`
//! items; `python/tideq/_tideq.pyi` is their source (`scripts/sync_py_docs.py` rewrites them from
//! it, `tests/python/test_docs.py` checks them whole).

use pyo3::prelude::*;

pub mod acl;
pub mod admin;
pub mod attempts;
pub mod bulk;
pub mod capped;
pub mod cli;
pub mod client;
pub mod consumer;
pub mod control;
pub mod convert;
pub mod credentials;
pub mod dashboard;
pub mod envelope;
pub mod error;
pub mod events;
pub mod handler;
pub mod history;
pub mod job;
pub mod job_stats;
pub mod jobs;
pub mod lease;
pub mod limiter; // shared limiters
pub mod loop_task;
pub mod options;
pub mod otel;
pub mod outcome;
pub mod registry;
pub mod runtime;
pub mod schedule;
pub mod serve;
pub mod server;
pub mod signal;
pub mod task;
pub mod task_metrics;
pub mod testing;
pub mod value;
pub mod verdict;
pub mod worker;
pub mod workflow;
// Graphs (flows whose jobs several others run after).
pub mod graph;
// Encryption at rest.
pub mod crypt;

/// mimalloc for small blocks, the system allocator for large ones (see `tideq::alloc`).
#[global_allocator]
static GLOBAL: tideq::alloc::Split = tideq::alloc::Split;

/// Sends the core's `log` warnings (fetch retries, lost leases, abandoned handlers, a cluster
/// failover waited out) to Python's `logging`, under `tideq.*` loggers, except handler failures
/// (target `tideq::HANDLER_LOG_TARGET`): the binding logs those itself, with the Python
/// traceback. The lines of the libraries under the core (redis-rs logs a line per node
/// connection and per retry while a cluster fails over) are left out: the core says what
/// matters, once per outage.
struct CoreLog(pyo3_log::Logger);

/// Whether a record is the core's own (and not a handler failure).
fn forwarded(target: &str) -> bool {
    (target == "tideq" || target.starts_with("tideq::")) && target != tideq::HANDLER_LOG_TARGET
}

impl log::Log for CoreLog {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        forwarded(metadata.target()) && self.0.enabled(metadata)
    }

    fn log(&self, record: &log::Record<'_>) {
        if forwarded(record.target()) {
            runtime::with_python(|_| self.0.log(record));
        }
    }

    fn flush(&self) {
        self.0.flush()
    }
}

fn init_logging(py: Python<'_>) -> PyResult<()> {
    let logger =
        pyo3_log::Logger::new(py, pyo3_log::Caching::Nothing)?.filter(log::LevelFilter::Warn);
    if log::set_boxed_logger(Box::new(CoreLog(logger))).is_ok() {
        log::set_max_level(log::LevelFilter::Warn);
    }
    Ok(())
}

#[pymodule]
fn _tideq(m: &Bound<'_, PyModule>) -> PyResult<()> {
    error::register(m)?;
    m.add_class::<client::Client>()?;
    m.add_class::<dashboard::Dashboard>()?;
    m.add_class::<capped::CappedQueue>()?;
    m.add_class::<capped::AsyncCappedQueue>()?;
    m.add_class::<capped::CappedStats>()?;
    m.add_class::<capped::CappedGroupPage>()?;
    m.add_class::<capped::Peeked>()?;
    m.add_class::<capped::UnreadableItem>()?;
    m.add_class::<consumer::Consumer>()?;
    m.add_class::<consumer::AsyncConsumer>()?;
    m.add_class::<consumer::ConsumerStats>()?;
    m.add_class::<jobs::Queue>()?;
    m.add_class::<jobs::AsyncQueue>()?;
    m.add_class::<job::Backoff>()?;
    m.add_class::<job::Enqueued>()?;
    m.add_class::<job::Job>()?;
    m.add_class::<job::JobInfo>()?;
    m.add_class::<attempts::Attempt>()?;
    m.add_class::<attempts::LogLine>()?;
    m.add_class::<admin::JobPage>()?;
    m.add_class::<admin::JobSearch>()?;
    m.add_class::<job::JobStats>()?;
    m.add_class::<schedule::ScheduleInfo>()?;
    m.add_class::<registry::WorkerInfo>()?;
    m.add_class::<history::HistoryPoint>()?;
    m.add_class::<task_metrics::TaskMetrics>()?;
    m.add_class::<server::ServerInfo>()?;
    m.add_class::<events::Event>()?;
    m.add_class::<events::EventReader>()?;
    m.add_class::<events::AsyncEventReader>()?;
    m.add_class::<control::Rate>()?;
    m.add_class::<control::Limits>()?;
    m.add_class::<control::GroupInfo>()?;
    m.add_class::<control::GroupPage>()?;
    m.add("MAX_PRIORITY", tideq::MAX_PRIORITY)?;
    m.add("MAX_COST", tideq::MAX_COST)?;
    m.add_class::<worker::Worker>()?;
    m.add_class::<worker::AsyncWorker>()?;
    m.add_class::<worker::WorkerStats>()?;
    m.add_class::<workflow::FlowJob>()?;
    m.add_class::<workflow::ChildResult>()?;
    m.add_function(wrap_pyfunction!(workflow::chain, m)?)?;
    m.add_function(wrap_pyfunction!(workflow::chord, m)?)?;
    m.add_class::<graph::GraphNode>()?;
    m.add_function(wrap_pyfunction!(acl::acl_rules, m)?)?;
    m.add_function(wrap_pyfunction!(cli::_run_cli, m)?)?;
    m.add_function(wrap_pyfunction!(serve::serve, m)?)?;
    m.add_function(wrap_pyfunction!(serve::serve_async, m)?)?;
    m.add_function(wrap_pyfunction!(envelope::decode_envelope, m)?)?;
    m.add_function(wrap_pyfunction!(envelope::encode_envelope, m)?)?;
    m.add_function(wrap_pyfunction!(otel::_set_otel_hooks, m)?)?;
    m.add_class::<testing::TestMode>()?;
    m.add_function(wrap_pyfunction!(testing::_testing_start, m)?)?;
    limiter::register(m)?; // shared limiters
    m.add_class::<crypt::Encryption>()?; // encryption at rest
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    let py = m.py();
    runtime::show_defaults(
        &m.getattr("Queue")?,
        py.get_type::<jobs::QueueBase>().as_any(),
        &jobs::QueueBase::unset_defaults(py)?,
    )?;
    runtime::show_defaults(
        &m.getattr("CappedQueue")?,
        py.get_type::<capped::CappedQueueBase>().as_any(),
        &capped::CappedQueueBase::unset_defaults(py)?,
    )?;
    init_logging(m.py())?;
    let at_exit = wrap_pyfunction!(runtime::at_exit, m)?;
    m.py()
        .import("atexit")?
        .call_method1("register", (at_exit,))?;
    Ok(())
}
