//! What a worker runs: the handler types, what a handler's `Ok` stores ([`IntoJobResult`]),
//! and how a batch fails ([`BatchError`]).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use crate::job::Job;

/// Why a handler's attempt failed: the handler's own error, its type kept (`downcast_ref` finds
/// it). Its text (`to_string`, capped in size) is what the job records as its error. Any
/// `std::error::Error + Send + Sync`, a `String` or a `&str` (and `anyhow::Error`) converts into it.
pub type HandlerError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// A handler's error with its trace (a traceback, a stack): its text is what the job records as
/// its error, as for any [`HandlerError`]; the trace is kept whole (within 8 KiB with the text)
/// in the attempt's record ([`JobInfo::attempt_history`](crate::JobInfo::attempt_history)). The
/// Python and Node runtimes fail attempts with it; a Rust handler's error needs none: the chain
/// of its sources (`{:#}`, as `anyhow` shows it) is kept as its trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TracedError {
    pub message: String,
    pub trace: String,
}

impl std::fmt::Display for TracedError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for TracedError {}

/// The trace kept with a failed attempt of `e`: a [`TracedError`]'s, or the chain of its
/// sources ("error: cause: cause", as `anyhow`'s `{:#}`) when it has any.
pub(crate) fn trace_of(e: &(dyn std::error::Error + 'static)) -> Option<String> {
    // A boxed one converted again is a box in a box.
    let traced = e
        .downcast_ref::<TracedError>()
        .or_else(|| e.downcast_ref::<Box<TracedError>>().map(|b| &**b));
    if let Some(t) = traced {
        return Some(t.trace.clone()).filter(|t| !t.is_empty());
    }
    let mut source = e.source()?;
    let mut chain = e.to_string();
    loop {
        chain.push_str(": ");
        chain.push_str(&source.to_string());
        match source.source() {
            Some(next) => source = next,
            None => return Some(chain),
        }
    }
}

/// The future a job handler returns: `Ok` with the result to store with the job (`None`:
/// nothing), or the error that fails the attempt.
pub type JobFuture = Pin<
    Box<dyn Future<Output = std::result::Result<Option<Vec<u8>>, HandlerError>> + Send + 'static>,
>;

/// What a job handler's `Ok` may hold: nothing (`()`), or a result stored with the completed job
/// (readable with `get` and `wait`, kept as long as the job is: `keep_completed`, `keep_for`):
/// bytes (`Vec<u8>`), text (`String`, stored as UTF-8), or JSON (`serde_json::Value`, stored
/// encoded, as the Python and Node bindings store their handlers' values). `Option<T>` stores
/// nothing for `None`. A result larger than the queue's `max_result_len` fails the attempt.
pub trait IntoJobResult {
    /// The bytes to store (`None`: nothing); `Err` fails the attempt with that text.
    fn into_job_result(self) -> std::result::Result<Option<Vec<u8>>, String>;
}

impl IntoJobResult for () {
    fn into_job_result(self) -> std::result::Result<Option<Vec<u8>>, String> {
        Ok(None)
    }
}

impl IntoJobResult for Vec<u8> {
    fn into_job_result(self) -> std::result::Result<Option<Vec<u8>>, String> {
        Ok(Some(self))
    }
}

impl IntoJobResult for String {
    fn into_job_result(self) -> std::result::Result<Option<Vec<u8>>, String> {
        Ok(Some(self.into_bytes()))
    }
}

impl IntoJobResult for serde_json::Value {
    fn into_job_result(self) -> std::result::Result<Option<Vec<u8>>, String> {
        serde_json::to_vec(&self)
            .map(Some)
            .map_err(|e| format!("the handler's result does not encode as JSON: {e}"))
    }
}

impl<T: IntoJobResult> IntoJobResult for Option<T> {
    fn into_job_result(self) -> std::result::Result<Option<Vec<u8>>, String> {
        self.map_or(Ok(None), T::into_job_result)
    }
}
/// A job handler, as the runtime stores it.
pub type JobHandler = Arc<dyn Fn(Job) -> JobFuture + Send + Sync + 'static>;

/// What a batch handler's future returns: `Ok` completes every job of the batch.
pub type BatchFuture =
    Pin<Box<dyn Future<Output = std::result::Result<(), BatchError>> + Send + 'static>>;
/// A batch handler, as the runtime stores it.
pub type JobBatchHandler = Arc<dyn Fn(Vec<Job>) -> BatchFuture + Send + Sync + 'static>;

/// How a batch failed: all of it, or some of its jobs (the others are completed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BatchError {
    /// Every job of the batch failed with this error (retried or dead-lettered, each by its own
    /// attempts).
    All(String),
    /// These jobs failed, as (job id, error); every other job of the batch is completed.
    Jobs(Vec<(String, String)>),
}

impl BatchError {
    /// Every job of the batch failed with `error`.
    pub fn all(error: impl std::fmt::Display) -> Self {
        BatchError::All(error.to_string())
    }

    /// These jobs failed; the rest of the batch succeeded.
    pub fn jobs<I, S, E>(failed: I) -> Self
    where
        I: IntoIterator<Item = (S, E)>,
        S: Into<String>,
        E: std::fmt::Display,
    {
        BatchError::Jobs(
            failed
                .into_iter()
                .map(|(id, e)| (id.into(), e.to_string()))
                .collect(),
        )
    }
}

impl std::fmt::Display for BatchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BatchError::All(e) => write!(f, "{e}"),
            BatchError::Jobs(failed) => write!(f, "{} job(s) of the batch failed", failed.len()),
        }
    }
}
