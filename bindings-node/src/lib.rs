//! Node.js binding of tideq (napi-rs). Conversion and callback plumbing only: every queue
//! operation, the consumer runtime and the error codes live in the `tideq` core crate.
//!
//! Map (each file wraps the core module of the same name):
//! - [`client`]: `Client` (core `client` + `config`).
//! - [`capped`]: `CappedQueue` and its result objects (core `capped`).
//! - [`consumer`]: `Consumer`, `CappedQueue.consume`/`run`, the JS handler bridge (core `consumer`).
//! - [`jobs`]: `Queue` (the job queue) and its option and result objects (core `jobs`).
//! - [`worker`]: `Worker`, `Job`, `Queue.work`/`run`, the JS job-handler bridge (core `worker`).
//! - [`envelope`]: `decodeEnvelope`/`encodeEnvelope` (core `envelope`).
//! - [`signals`]: SIGINT/SIGTERM hooks of `run()` (no core counterpart).
//! - [`errors`]: core errors -> JS errors with `code` (core `error`).
//! - [`convert`]: reading JS arguments (no core counterpart).
//!
//! Every async method runs the core future on napi's tokio runtime (one runtime per binding:
//! connections are tied to the runtime that opened them), which is built by the core's
//! `tideq::runtime_builder` (one worker thread unless TOKIO_WORKER_THREADS says otherwise).

mod capped;
mod client;
mod consumer;
mod convert;
mod envelope;
mod errors;
mod jobs;
mod signals;
mod worker;

/// Hands napi the core's runtime configuration before any async call creates the default one.
#[napi_derive::module_init]
fn init_runtime() {
    match tideq::runtime_builder().build() {
        Ok(rt) => napi::bindgen_prelude::create_custom_tokio_runtime(rt),
        // napi then builds its default runtime: slower, not wrong.
        Err(e) => eprintln!("tideq: could not build the tokio runtime ({e}); using napi's default"),
    }
}

/// mimalloc for small blocks, the system allocator for large ones (see `tideq::alloc`).
#[global_allocator]
static GLOBAL: tideq::alloc::Split = tideq::alloc::Split;
