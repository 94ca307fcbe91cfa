//! One attempt of one job, as every runner makes it: the worker's run (`run.rs`) and the test
//! modes' drain and inline runs (`crate::testing`) pick the handler, call it and classify its
//! outcome here, so a job retries, snoozes or dies the same way under both.

use std::time::Duration;

use futures_util::FutureExt;

use crate::job::Job;
use crate::jobs::Queue;

use super::*;

/// How an attempt ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Attempt {
    /// Completed, with what the handler returned (`None`: nothing).
    Done(Option<Vec<u8>>),
    /// Run again after this long, the attempt uncounted (a [`Snooze`] or a [`BackOff`]).
    Later(Duration, Option<BackOffScope>),
    /// Failed with this error (and the handler's trace, when it has one): retried by the job's
    /// attempts, or (`dead_now`) dead at once.
    Failed {
        error: String,
        trace: Option<String>,
        dead_now: bool,
    },
}

impl Handlers {
    /// The handler that runs `job`, or why it can never run here (it is dead-lettered at once).
    pub(crate) fn for_job(&self, job: &Job) -> std::result::Result<JobHandler, String> {
        match self {
            Handlers::One(h) => Ok(h.clone()),
            Handlers::Batch(..) => unreachable!("a batch worker runs jobs in batches"),
            Handlers::Tasks(tasks) => match tasks.unknown(job) {
                None => Ok(tasks.handlers[job.task.as_deref().unwrap_or_default()].clone()),
                Some(why) => Err(why),
            },
        }
    }
}

/// Calls `handler` on `job` inline (no extra task), under the job's timeout; a panic fails the
/// attempt. The handler's result, and whether the timeout fired (its text is then the result).
pub(crate) async fn call(
    handler: &JobHandler,
    job: Job,
) -> (std::result::Result<Option<Vec<u8>>, HandlerError>, bool) {
    let timeout = job.timeout;
    let cancel = job.cancel.clone();
    let handled = std::panic::AssertUnwindSafe(crate::otel::run(handler, job)).catch_unwind();
    tokio::pin!(handled);
    let mut timed_out = None;
    let outcome = match timeout {
        Some(t) => tokio::select! {
            r = &mut handled => r,
            _ = tokio::time::sleep(t) => {
                timed_out = Some(t);
                cancel.cancel();
                handled.await
            }
        },
        None => handled.await,
    };
    let mut result = outcome.unwrap_or_else(|_| Err("handler panicked".into()));
    if let Some(t) = timed_out {
        result = Err(format!("timed out after {} ms", t.as_millis()).into());
    }
    (result, timed_out.is_some())
}

/// What a handler's result makes of its attempt on `queue`: a result over the queue's
/// `max_result_len` fails it; an error asks for what its type says ([`Verdict`]).
pub(crate) fn classify(
    queue: &Queue,
    result: std::result::Result<Option<Vec<u8>>, HandlerError>,
) -> Attempt {
    match result {
        Ok(None) => Attempt::Done(None),
        Ok(Some(bytes)) => match queue.check_result_len("result", bytes.len()) {
            Ok(()) => Attempt::Done(Some(bytes)),
            Err(e) => Attempt::Failed {
                error: e.message().to_string(),
                trace: None,
                dead_now: false,
            },
        },
        Err(e) => match Verdict::of(&*e) {
            Verdict::Later(delay, scope) => Attempt::Later(delay, scope),
            Verdict::DontRetry => Attempt::Failed {
                error: e.to_string(),
                trace: handler::trace_of(&*e),
                dead_now: true,
            },
            Verdict::Fail => Attempt::Failed {
                error: e.to_string(),
                trace: handler::trace_of(&*e),
                dead_now: false,
            },
        },
    }
}
