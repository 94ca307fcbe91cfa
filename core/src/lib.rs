//! # tideq
//!
//! Redis-backed queues with one implementation for Rust, Python and Node.
//!
//! Map of the crate:
//! - [`config`]: connection settings (`redis://`, `rediss://`, ACL users, key prefix, payload limit).
//! - [`client`]: the shared connection, script execution with NOSCRIPT recovery.
//! - [`keys`]: every Redis key, with the queue name inside the Cluster hash tag; name validation.
//! - `scripts` + `src/lua/`: the Lua scripts, one file per operation, each stating its contract.
//! - [`capped`]: the capped grouped queue (drop-oldest, TTL, `max_age`, round-robin batches).
//! - [`consumer`]: the consumer runtime for capped queues (concurrency, dedicated groups, shutdown).
//! - [`job`]: the job queue's value types (options, `Job`, `JobInfo`, `JobStats`).
//! - [`jobs`]: the job queue handle and its producer side (`enqueue`, `enqueue_many`).
//! - `admin`: inspecting and repairing a job queue (`get`, `cancel`, dead letters, `stats`).
//! - `lease`: the worker's lease protocol (fetch, complete, fail, release, extend).
//! - [`worker`]: the worker runtime for job queues (concurrency, lease renewal, shutdown).
//! - [`envelope`]: the versioned MessagePack job envelope and backoff policy.
//! - [`error`]: one error type with stable codes.
//!
//! ```no_run
//! # async fn demo() -> tideq::Result<()> {
//! use tideq::{CappedOptions, CappedQueue, Client};
//! let client = Client::open("redis://127.0.0.1:6379")?;
//! let q = CappedQueue::new(&client, "events", CappedOptions { capacity: 1000, ..Default::default() })?;
//! q.push("game:1", b"player joined").await?;
//! if let Some(batch) = q.next_batch(128).await? {
//!     println!("{} items from {}", batch.items.len(), batch.group);
//! }
//! # Ok(()) }
//! ```

mod admin;
#[cfg(feature = "mimalloc")]
pub mod alloc;
mod background;
pub mod capped;
pub mod client;
pub mod config;
pub mod consumer;
pub mod envelope;
pub mod error;
pub mod job;
pub mod jobs;
pub mod keys;
mod lease;
mod runtime;
mod scripts;
pub mod signal;
mod wait;
pub mod worker;

/// The `log` target of handler failures the runtimes report (a binding that reports them
/// itself, with the host's traceback, filters this target out).
pub const HANDLER_LOG_TARGET: &str = "tideq::handler";

pub use capped::{Batch, CappedOptions, CappedQueue, CappedStats};
pub use client::Client;
pub use config::Config;
pub use consumer::{BatchHandler, Consumer, ConsumerOptions, ConsumerStats, HandlerFuture};
pub use envelope::{Backoff, BackoffKind, Envelope};
pub use error::{Error, ErrorKind, Result};
pub use job::{EnqueueOptions, Enqueued, Job, JobInfo, JobState, JobStats, QueueOptions};
pub use jobs::Queue;
pub use runtime::runtime_builder;
pub use worker::{JobFuture, JobHandler, Worker, WorkerOptions, WorkerStats};
