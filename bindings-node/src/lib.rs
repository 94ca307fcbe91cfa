//! Node.js binding of tideq (napi-rs). Conversion and callback plumbing only: every queue
//! operation, the consumer and worker runtimes, the envelope schema and the error codes live in
//! the `tideq` core crate.
//!
//! Map (each file wraps the core module of the same name; the last six are host plumbing):
//! - [`client`]: `Client` and its options (core `client` + `config`).
//! - [`capped`]: `CappedQueue` and its result objects (core `capped`).
//! - [`consumer`]: `Consumer`, `CappedQueue.consume`/`run` (core `consumer`).
//! - [`job`]: `Job` (what a worker's handler receives) and the job queue's result objects and
//!   backoff option (core `job`).
//! - [`jobs`]: `Queue`, the job queue, and its options (core `jobs` + `admin`).
//! - [`flow`]: `Queue` flow control: pause/resume, limits, groups (core `flow`).
//! - [`lease`]: `Queue.leaseJobs`/`complete`/`fail`/`release`/`extend`, manual leasing (core
//!   `lease`).
//! - [`task`]: tasks by name: task data to payload and back, `work({ name: handler })`'s
//!   handlers (core `task`).
//! - [`worker`]: `Worker`, `Queue.work`/`workBatches`/`run` (core `worker`).
//! - [`envelope`]: `decodeEnvelope`/`encodeEnvelope` (core `envelope`).
//! - [`acl`]: `aclRules`, the Redis ACL rules of each role (core `acl`).
//! - [`error`]: core errors -> JS errors with `code` and the caller's stack (core `error`).
//! - [`handler`]: calling JS handlers from the core's tasks and reporting their failures.
//! - [`abort`]: `job.signal`, an `AbortSignal` fired by the core's cancellation of an attempt.
//! - [`logger`]: the core's log lines on stderr (`TIDEQ_LOG`), rate-limited.
//! - [`runtime`]: napi's tokio runtime, built by the core's `tideq::runtime_builder`.
//! - [`signal`]: SIGINT/SIGTERM hooks of `run()`.
//! - [`convert`]: JS values <-> Rust values (arguments, options, MessagePack values).

mod abort;
mod acl;
mod capped;
mod client;
mod consumer;
mod convert;
mod envelope;
mod error;
mod flow;
mod handler;
mod job;
mod jobs;
mod lease;
mod logger;
mod runtime;
mod signal;
mod task;
mod worker;

/// mimalloc for small blocks, the system allocator for large ones (see `tideq::alloc`).
#[global_allocator]
static GLOBAL: tideq::alloc::Split = tideq::alloc::Split;
