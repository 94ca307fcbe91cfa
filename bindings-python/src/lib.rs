//! Python binding of tideq (`tideq._tideq`): conversion and callback plumbing only. Every queue
//! operation, script and the consumer loop live in the `tideq` core crate.
//!
//! Map (files mirror the core's):
//! - [`client`]: `Client` (one server, a Redis Cluster or a Sentinel-managed primary; lazy
//!   connect).
//! - [`capped`]: `CappedQueue` (blocking), `AsyncCappedQueue` (asyncio), `CappedStats`.
//! - [`consumer`]: `Consumer`, `AsyncConsumer`, `ConsumerStats`, running batch handlers.
//! - [`jobs`]: `Queue` (blocking), `AsyncQueue` (asyncio), `Backoff`, `Enqueued`, `Job`,
//!   `JobInfo`, `JobStats`, `decode_envelope`/`encode_envelope`.
//! - [`worker`]: `Worker`, `AsyncWorker`, `WorkerStats`, running job handlers.
//! - [`handler`]: what both handler kinds share (where awaitables run, loop tasks, logging).
//! - [`running`]: `run()` for consumers and workers (SIGINT/SIGTERM as a graceful stop).
//! - [`errors`]: `TideqError` and one subclass per core error code.
//! - [`runtime`]: the one tokio runtime (shared by both APIs) and fork detection.
//! - [`convert`]: Python values to core arguments and back.

use pyo3::prelude::*;

pub mod capped;
pub mod client;
pub mod consumer;
pub mod convert;
pub mod errors;
pub mod handler;
pub mod jobs;
pub mod running;
pub mod runtime;
pub mod worker;

/// mimalloc for small blocks, the system allocator for large ones (see `tideq::alloc`).
#[global_allocator]
static GLOBAL: tideq::alloc::Split = tideq::alloc::Split;

/// Sends the core's `log` warnings (fetch retries, lost leases, abandoned handlers) to Python's
/// `logging`, under `tideq.*` loggers. The core's one-line "handler failed" warning is dropped:
/// the binding logs that failure itself, with the Python traceback.
struct CoreLog(pyo3_log::Logger);

impl log::Log for CoreLog {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        self.0.enabled(metadata)
    }

    fn log(&self, record: &log::Record<'_>) {
        let handler_failed = record.args().as_str().map_or_else(
            || {
                record
                    .args()
                    .to_string()
                    .starts_with("tideq: handler failed")
            },
            |s| s.starts_with("tideq: handler failed"),
        );
        if !handler_failed {
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
    errors::register(m)?;
    m.add_class::<client::Client>()?;
    m.add_class::<capped::CappedQueue>()?;
    m.add_class::<capped::AsyncCappedQueue>()?;
    m.add_class::<capped::CappedStats>()?;
    m.add_class::<consumer::Consumer>()?;
    m.add_class::<consumer::AsyncConsumer>()?;
    m.add_class::<consumer::ConsumerStats>()?;
    m.add_class::<jobs::Queue>()?;
    m.add_class::<jobs::AsyncQueue>()?;
    m.add_class::<jobs::Backoff>()?;
    m.add_class::<jobs::Enqueued>()?;
    m.add_class::<jobs::Job>()?;
    m.add_class::<jobs::JobInfo>()?;
    m.add_class::<jobs::JobStats>()?;
    m.add_class::<worker::Worker>()?;
    m.add_class::<worker::AsyncWorker>()?;
    m.add_class::<worker::WorkerStats>()?;
    m.add_function(wrap_pyfunction!(jobs::decode_envelope, m)?)?;
    m.add_function(wrap_pyfunction!(jobs::encode_envelope, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    init_logging(m.py())?;
    let at_exit = wrap_pyfunction!(runtime::at_exit, m)?;
    m.py()
        .import("atexit")?
        .call_method1("register", (at_exit,))?;
    Ok(())
}
