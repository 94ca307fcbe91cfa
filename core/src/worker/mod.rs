//! The worker runtime for job queues. One fetch loop per worker keeps up to two fetches in
//! flight, each leasing up to half the concurrency and carrying the acks of the jobs that finished
//! since (one script call per batch), so Redis serves one fetch while this process runs the
//! other's jobs; the second goes out once a whole batch of slots is free. The shards of a sharded
//! queue are fetched in turn, each backing off on its own (`shards.rs`). Each job's handler runs on its own task. Leases are renewed from a thread of the
//! worker's own (see `spawn_renewer`), so a handler that holds the GIL, blocks the Node event loop
//! or blocks a runtime thread cannot let them lapse. Idle, the loop blocks on a wake-up list that
//! producers signal, for no longer than the time until the next delayed job or lease deadline
//! (Redis clock) or `poll_interval`.

mod acks;
pub(crate) mod attempt;
mod budget;
mod fetch;
mod handle;
mod handler;
mod options;
mod relay;
mod renew;
mod run;
mod shards;
mod verdict;

pub use handle::Worker;
pub(crate) use handle::{boxed, Handlers};
pub use handler::{
    BatchError, BatchFuture, HandlerError, IntoJobResult, JobBatchHandler, JobFuture, JobHandler,
    TracedError,
};
pub use options::{BatchOptions, WorkerOptions, WorkerStats};
pub(crate) use verdict::Verdict;
pub use verdict::{BackOff, BackOffScope, DontRetry, Snooze};

use acks::*;
use attempt::Attempt;
use budget::*;
use fetch::*;
use options::*;
use relay::*;
use renew::*;
use run::*;
