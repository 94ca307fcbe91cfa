//! The tokio runtime every async method and every consumer or worker runs on: napi's, built with
//! the core's `tideq::runtime_builder` (one worker thread unless TOKIO_WORKER_THREADS says
//! otherwise). One runtime per binding: a connection is tied to the runtime that opened it.

/// Hands napi the core's runtime configuration before any async call creates the default one.
#[napi_derive::module_init]
fn init_runtime() {
    match tideq::runtime_builder().build() {
        Ok(rt) => napi::bindgen_prelude::create_custom_tokio_runtime(rt),
        // napi then builds its default runtime: slower, not wrong.
        Err(e) => eprintln!("tideq: could not build the tokio runtime ({e}); using napi's default"),
    }
}
