//! Node.js binding of tideq (napi-rs). Conversion and callback plumbing only: every queue
//! operation, the consumer and worker runtimes, the envelope schema and the error codes live in
//! the `tideq` core crate.
//!
//! Map (each file wraps the core module of the same name; the last seven are host plumbing):
//! - [`client`]: `Client` and its options (core `client` + `config`).
//! - [`server`]: `Client.serverInfo()`, what the Redis server says of itself (core
//!   `client::info`).
//! - [`capped`]: `CappedQueue` and its result objects (core `capped`).
//! - [`consumer`]: `Consumer`, `CappedQueue.consume`/`run` (core `consumer`).
//! - The job queue's `Queue`, one file per role, as in the core:
//!   - [`jobs`]: the handle (constructor, getters) and its producer side: `enqueue`,
//!     `enqueueTask`, `enqueueMany` (core `jobs`).
//!   - [`admin`]: `get`, `jobs`, `jobsPage`, `cancel`, dead letters, `stats` (core `admin`).
//!   - [`outcome`]: `wait`, a job's outcome (core `outcome`).
//!   - [`lease`]: `leaseJobs`/`complete`/`fail`/`release`/`extend`, manual leasing (core
//!     `lease`).
//!   - [`control`]: queue control: pause/resume, limits, groups (core `control`).
//!   - [`schedule`]: `upsertSchedule`/`removeSchedule`/`schedules`, jobs on a cron pattern or
//!     an interval (core `schedule`).
//!   - [`registry`]: `workers`, the live workers (`WorkerInfo`) (core `registry`).
//!   - [`events`]: `setEvents`/`events`/`eventEmitter`, the event log and its readers
//!     (`EventReader`, `for await`, a Node `EventEmitter`) (core `events`).
//!   - [`workflow`]: flows, jobs that wait for other jobs: `enqueueFlow`, `childrenResults`
//!     (core `workflow`).
//!   - [`task`]: tasks by name: task data to payload and back, `work({ name: handler })`'s
//!     handlers (core `task`).
//!   - [`worker`]: `Worker`, `work`/`workBatches`/`run`/`runBatches`; `worker/run.rs` the
//!     handler calls and their cancellation (core `worker`).
//!   - [`serve`]: `serve(workers, options)`, a worker process's main loop (core `serve`).
//!   - [`testing`]: `TestMode`, the fake and inline test modes of `tideq/testing` (core
//!     `testing`).
//!   - [`job`]: `Job`, what a worker's handler receives (core `job`'s `Job`; its
//!     `childrenResults` is core `workflow`'s).
//!   - [`options`]: the job queue's and the worker's options: TypeScript declarations and
//!     readers (core `job`'s and `worker`'s option types).
//!   - [`results`]: what the job queue's methods resolve with (`Enqueued`, `JobInfo`,
//!     `JobPage`, `JobStats`, `BackoffInfo`, `WorkerStats`, `ChildResult`, `FlowRef`) and
//!     stored values both ways.
//! - [`envelope`]: `decodeEnvelope`/`encodeEnvelope` (core `envelope`).
//! - [`acl`]: `aclRules`, the Redis ACL rules of each role (core `acl`).
//! - [`cli`]: `runCli`, the package's `tideq` command (the CLI crate's `run_cli`).
//! - [`error`]: core errors -> JS errors with `code` and the caller's stack (core `error`).
//! - [`handler`]: calling JS handlers from the core's tasks and reporting their failures.
//! - [`abort`]: `job.signal`, an `AbortSignal` fired by the core's cancellation of an attempt.
//! - [`logger`]: the core's log lines on stderr (`TIDEQ_LOG`), rate-limited.
//! - [`runtime`]: napi's tokio runtime, built by the core's `tideq::runtime_builder`.
//! - [`signal`]: SIGINT/SIGTERM hooks of `run()`.
//! - [`convert`]: JS values <-> Rust values (arguments, options, MessagePack values).
//!
//! OpenTelemetry is not here: the host's OpenTelemetry lives in JS, so the package's `lib/otel.js`
//! (applied by `lib/index.js`, the package's entry) wraps `Queue`'s enqueue and worker methods
//! when `@opentelemetry/api` is installed; this crate only carries `trace` (the envelope's W3C
//! trace context) in `EnqueueOptions` and on `Job`.

mod abort;
mod acl;
mod admin;
mod attempts;
mod bulk;
mod capped;
mod cli;
mod client;
mod consumer;
mod control;
mod convert;
mod credentials;
mod dashboard;
mod envelope;
mod error;
mod events;
mod handler;
mod history;
mod job;
mod jobs;
mod lease;
mod limiter; // shared limiters
mod logger;
mod options;
mod outcome;
mod registry;
mod results;
mod runtime;
mod schedule;
mod serve;
mod server;
mod settle;
mod signal;
mod task;
mod task_metrics;
mod testing;
mod worker;
mod workflow;
// Graphs (flows whose jobs several others run after).
mod graph;
// Encryption at rest.
mod crypt;

/// mimalloc for small blocks, the system allocator for large ones (see `tideq::alloc`).
#[global_allocator]
static GLOBAL: tideq::alloc::Split = tideq::alloc::Split;
