//! # tideq
//!
//! Redis-backed queues with one implementation for Rust, Python and Node.
//!
//! Two queue kinds over one Redis (or a Redis Cluster, or a Sentinel-managed primary): a
//! [`CappedQueue`] (per-group FIFOs capped at N, newest data wins, at-most-once) and a job
//! [`Queue`] (delayed jobs, leases, retries, dead letters; at-least-once). The Python and Node
//! packages are thin bindings over this crate. `ARCHITECTURE.md` in the repository follows one job
//! through every file.
//!
//! ```no_run
//! use std::time::Duration;
//! use tideq::{Client, Config, EnqueueOptions, Job, Queue, QueueOptions, WorkerOptions};
//!
//! #[tokio::main]
//! async fn main() -> tideq::Result<()> {
//!     let client = Client::new(Config::from_env())?; // TIDEQ_REDIS_URL, else a local Redis
//!     let emails = Queue::new(&client, "emails", QueueOptions::default())?;
//!     let later = EnqueueOptions { delay: Some(Duration::from_secs(5)), ..Default::default() };
//!     emails.enqueue(br#"{"to":"ada@example.com"}"#, later).await?;
//!     let worker = emails.work(WorkerOptions::default(), |job: Job| async move {
//!         println!("sending {:?} (attempt {})", job.payload_str(), job.attempt);
//!         Ok::<(), String>(()) // Err -> retried after a backoff, dead-lettered after max_attempts
//!     })?;
//!     worker.run_until_signal().await; // until SIGINT/SIGTERM, then a graceful shutdown
//!     Ok(())
//! }
//! ```
//!
//! Map of the crate:
//! - [`config`]: connection settings (`redis://`, `rediss://`, ACL users, key prefix, payload limit).
//! - [`client`]: the shared connection, script execution with NOSCRIPT recovery.
//! - [`keys`]: every Redis key, with the queue name inside the Cluster hash tag; name validation.
//! - `scripts` + `src/lua/`: the Lua scripts, one file per operation, each stating its contract.
//! - [`capped`]: the capped grouped queue (drop-oldest, TTL, `max_age`, round-robin batches,
//!   `peek`).
//! - [`consumer`]: the consumer runtime for capped queues (concurrency, dedicated groups, shutdown).
//! - [`job`]: the job queue's value types (options, `Job`, `JobInfo`, `JobStats`).
//! - [`jobs`]: the job queue handle and its producer side (`enqueue`, `enqueue_many`).
//! - `admin`: inspecting and repairing a job queue (`get`, `jobs` by state, `cancel`,
//!   `promote`, `delete`, dead letters, `stats`).
//! - `search`: finding jobs by task or group (`find_jobs`), a bounded look per call.
//! - `outcome`: waiting for a job's outcome (`wait`), woken by the script that finishes it.
//! - [`control`]: queue control: pause/resume, concurrency caps and rate limits, per group too.
//! - [`workflow`]: flows: a parent job that runs once its children (on any queues) finished,
//!   and reads their results (`enqueue_flow`, `children_results`).
//! - `lease`: the worker's lease protocol (fetch, complete, fail, release, extend).
//! - `shards`: a queue's shard count, recorded in Redis by its first writer; every handle is
//!   checked against it, and operators' tools read it ([`Client::recorded_shards`]).
//! - [`history`]: the queue's per-minute history kept in Redis for 14 days ([`Queue::history`]).
//! - [`task_metrics`]: per-task counts and run times over a window ([`Queue::task_metrics`]).
//! - `registry`: the live workers, who they are and what they run ([`Queue::workers`]).
//! - [`worker`]: the worker runtime for job queues (concurrency, lease renewal, shutdown).
//! - [`task`]: tasks by name with structured arguments (JSON or MessagePack), and task workers.
//! - [`testing`]: test modes for the code that enqueues: fake (record, assert, drain) and inline
//!   (run at enqueue), with no Redis.
//! - [`envelope`]: the versioned MessagePack job envelope and backoff policy.
//! - [`error`]: one error type with stable codes.
//! - [`acl`]: the Redis ACL rules each role needs (least privilege), derived from the scripts.
//! - `wait`: idle consumers and workers block on producers' wake-up lists instead of polling.
//! - `background`: the stop/join/until-signal handle shared by consumers and workers.
//! - [`signal`]: waiting for SIGINT/SIGTERM.
//! - [`serve`]: the `main` of a worker process: runs its workers until SIGINT/SIGTERM, with
//!   a health endpoint (feature `health`, on by default), recycling by a job limit, and the status
//!   lines a supervisor (`tideq worker`) reads.
//! - [`runtime_builder`]: the tokio runtime the bindings use (one worker thread by default).
//! - `alloc` (feature `mimalloc`): the bindings' global allocator (binding plumbing, hidden from
//!   the docs and not part of the stable API, like `Queue::work_boxed` and
//!   `CappedQueue::consume_boxed`).

pub mod acl;
mod admin;
#[cfg(feature = "mimalloc")]
#[doc(hidden)]
pub mod alloc;
pub mod attempts;
mod background;
mod bulk;
pub mod capped;
pub mod client;
pub mod config;
pub mod consumer;
pub mod control;
pub mod discover;
pub mod envelope;
pub mod error;
pub mod events;
pub mod history;
mod hub;
pub mod job;
pub mod jobs;
pub mod keys;
mod lease;
mod listing;
pub mod metrics;
mod obliterate;
pub mod otel;
mod outcome;
mod registry;
mod runtime;
pub mod schedule;
mod scripts;
mod search;
mod serve;
mod shards;
pub mod signal;
pub mod task;
pub mod task_metrics;
pub mod testing;
mod wait;
pub mod worker;
pub mod workflow;

/// The `log` target of handler failures the runtimes report (a binding that reports them
/// itself, with the host's traceback, filters this target out).
pub const HANDLER_LOG_TARGET: &str = "tideq::handler";

pub use attempts::{AttemptInfo, LogLine};
pub use bulk::{BulkAction, BulkCounts, BulkItem, BulkOutcome, BulkPage, MAX_BULK_IDS};
pub use capped::{
    Batch, CappedGroupPage, CappedOptions, CappedQueue, CappedStats, Peeked, UnreadableItem,
    MAX_UNREADABLE,
};
pub use client::{Client, ServerInfo};
pub use config::{Config, EvictionCheck};
pub use consumer::{BatchHandler, Consumer, ConsumerOptions, ConsumerStats, HandlerFuture};
pub use control::{
    GroupInfo, GroupLimits, GroupPage, Limits, Rate, DEFAULT_GROUP_PAGE, MAX_GROUP_PAGE,
};
pub use discover::{QueueKind, QueueRef};
pub use envelope::{ArgsFrom, Backoff, BackoffKind, Envelope, PayloadFormat, TraceContext};
pub use error::{Error, ErrorKind, Result};
pub use events::{Event, EventKind, Events, EventsOptions};
pub use history::HistoryPoint;
pub use job::{
    Debounce, Dedup, EnqueueOptions, Enqueued, Job, JobInfo, JobOutcome, JobState, JobStats,
    QueueOptions, DEFAULT_MAX_RESULT_LEN, MAX_BATCH, MAX_COST, MAX_FETCH, MAX_PAGE, MAX_PRIORITY,
};
pub use jobs::Queue;
pub use listing::JobPage;
pub use metrics::{encode_prometheus, openmetrics_to_text_format, Histogram, QueueMetrics};
pub use registry::WorkerInfo;
pub use runtime::runtime_builder;
pub use schedule::{Every, ScheduleInfo};
pub use search::{JobFilter, JobSearch, SEARCH_SCAN};
pub use serve::{serve, ServeOptions, SUPERVISOR_FD_ENV};
pub use task::Tasks;
pub use task_metrics::TaskMetrics;
pub use tokio_util::sync::CancellationToken;
pub use worker::{
    BackOff, BackOffScope, BatchError, BatchFuture, BatchOptions, DontRetry, HandlerError,
    IntoJobResult, JobBatchHandler, JobFuture, JobHandler, Snooze, TracedError, Worker,
    WorkerOptions, WorkerStats,
};
pub use workflow::{
    ChildInfo, ChildOutcome, ChildPage, ChildResult, FlowJob, FlowRef, OnChildFailure,
    MAX_FLOW_JOBS,
};

// Shared limiters (concurrency, window, token bucket) by name, across queues.
pub mod limiter;
pub use limiter::{
    LimitError, LimitGuard, Limiter, OverLimit, MAX_BUCKET_CAPACITY, MAX_LIMITER_N,
    MAX_LIMITER_PERIOD,
};

// Graphs (flows whose jobs several others may run after).
pub use workflow::{Graph, GraphNode, MAX_GRAPH_DEPENDENTS};

// Credentials that rotate (a provider asked on every connection).
pub use client::{Credentials, CredentialsFuture, CredentialsProvider};

// Encryption at rest.
pub mod crypt;
pub use crypt::Encryption;
