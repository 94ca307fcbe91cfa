//! The tokio runtime tideq's bindings run on, and a good default for a Rust worker process.

/// A multi-thread tokio runtime builder (I/O and timers enabled) with **one** worker thread,
/// unless the `TOKIO_WORKER_THREADS` environment variable asks for more.
///
/// Why one: a worker's own work per job is a few microseconds around Redis round trips, so a
/// second runtime thread mostly adds cross-thread wake-ups (a few per job), which cost more than
/// the thread gains. Measured with `bench/jobs` on its 2-vCPU machine, a worker at concurrency
/// 100 ran 84k jobs/s on two runtime threads and 150k–168k on one; the Node binding went from
/// 78k to 96k and the Python one from 27k to 33k. Python and Node handlers run on their own
/// threads either way, and the lease renewer has a thread of its own.
///
/// Multi-thread with one worker rather than current-thread, so that `block_on` from many host
/// threads, `spawn_blocking` and `block_in_place` keep working.
///
/// ```
/// let rt = tideq::runtime_builder().build().unwrap();
/// rt.block_on(async { /* Queue::work(...) */ });
/// ```
pub fn runtime_builder() -> tokio::runtime::Builder {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder.enable_all();
    // Without an explicit count, tokio reads TOKIO_WORKER_THREADS itself.
    if std::env::var_os("TOKIO_WORKER_THREADS").is_none() {
        builder.worker_threads(1);
    }
    builder
}
