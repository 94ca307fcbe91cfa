//! One handler call of a worker (core `worker`'s per-job running): the core's `JobHandler` and
//! `JobBatchHandler` that call the JS handler with the leased job(s) ([`crate::handler`]), read
//! what it resolved with (the job's result, or a batch's failures), and abort the jobs'
//! `signal`s when the core cancels the attempt (timeout, cancel request, end of the shutdown
//! grace) while waiting for the handler all the same.

use std::sync::Arc;
use std::time::{Duration, Instant};

use napi::bindgen_prelude::*;
use napi::{JsValue, ValueType};
use tideq::CancellationToken;

use crate::abort::{Aborter, JobSignal, Reason};
use crate::convert::{describe, entries, read_value};
use crate::error::Failure;
use crate::handler::{error_text, JsHandler, Reply, Running, RunningCall, Subject, Thrown};
use crate::job::Job;
use crate::results::stored_bytes;

/// A leased job on its way to the handler (and, if it fails, to `onError`).
#[derive(Clone)]
pub(crate) struct Leased {
    job: Arc<tideq::Job>,
    stop: Arc<JobSignal>,
}

/// A failed job is reported with the job itself: `onError(err, job)`.
impl Subject for Leased {
    type Js = Job;

    fn into_js(self) -> Job {
        Job::new(self.job, self.stop)
    }

    /// A handler that stops when told the worker is shutting down hands its job back to the
    /// queue, and one stopped by a cancel ends its job cancelled: not failures.
    fn reported(&self) -> bool {
        !self.stop.stopped_for_shutdown() && !self.job.cancel_requested()
    }

    fn headline(&self) -> String {
        let j = &self.job;
        format!(
            "tideq: handler failed on job {:?} of queue {:?} (attempt {} of {}):",
            j.id, j.queue, j.attempt, j.max_attempts
        )
    }
}

/// A batch of leased jobs on its way to a batch handler (and, if it throws, to `onError`).
#[derive(Clone)]
pub(crate) struct LeasedBatch(pub(crate) Vec<Leased>);

/// A failed batch is reported with its jobs: `onError(err, jobs)`.
impl Subject for LeasedBatch {
    type Js = Vec<Job>;

    fn into_js(self) -> Vec<Job> {
        self.0.into_iter().map(Leased::into_js).collect()
    }

    fn reported(&self) -> bool {
        !self
            .0
            .iter()
            .any(|l| l.stop.stopped_for_shutdown() || l.job.cancel_requested())
    }

    fn headline(&self) -> String {
        let queue = self.0.first().map(|l| l.job.queue.as_str()).unwrap_or("");
        format!(
            "tideq: batch handler failed on {} job(s) of queue {queue:?}:",
            self.0.len()
        )
    }
}

/// What a batch handler resolved with: nothing (all done), `{ [jobId]: error }` or a `Map` of
/// the same (those failed, the rest done), or something else (the whole batch fails, saying so).
enum BatchReply {
    Done,
    Failed(Vec<(String, String)>),
    Bad(String),
}

impl Reply for BatchReply {
    fn read(v: &Unknown) -> Self {
        match batch_failures(v) {
            Ok(None) => BatchReply::Done,
            Ok(Some(failed)) => BatchReply::Failed(failed),
            Err(why) => BatchReply::Bad(why),
        }
    }
}

/// The failures a batch handler reported, `None` for none (`undefined` or `null`).
fn batch_failures(v: &Unknown) -> std::result::Result<Option<Vec<(String, String)>>, String> {
    let bad = || {
        format!(
            "the batch handler resolved with {}: expected undefined (every job done) or an \
             object or Map of {{ [jobId]: error }} (those jobs failed)",
            describe(v)
        )
    };
    match v.get_type().map_err(|e| e.reason)? {
        ValueType::Undefined | ValueType::Null => return Ok(None),
        ValueType::Object if !v.is_array().unwrap_or(true) => {}
        _ => return Err(bad()),
    }
    let env = Env::from_raw(v.value().env);
    let read = || -> Result<Object> {
        let global = env.get_global()?;
        let map: Function<(), Unknown> = global.get_named_property("Map")?;
        if v.instanceof(map)? {
            // A Map's entries as an object's (keys become strings, as job ids are).
            let object: Function<(), Unknown> = global.get_named_property("Object")?;
            let from_entries: Function<Unknown, Object> =
                object.get_named_property("fromEntries")?;
            return from_entries.call(*v);
        }
        read_value(v).map_err(|_| napi::Error::from_reason(bad()))
    };
    let obj = read().map_err(|e| e.reason)?;
    let mut failed = Vec::new();
    entries("the batch handler's failures", &obj, None, |id, error| {
        failed.push((id, error_text(&error)));
        Ok(())
    })
    .map_err(|e| match e {
        Failure::Core(e) => e.message().to_string(),
        Failure::Type(m) => m,
    })?;
    Ok(Some(failed))
}

/// One handler call (of one job, or of a batch): fires the jobs' signals when the core cancels
/// the attempt, and when the call is abandoned (dropped before it settled: `abort()`).
struct Attempt {
    stops: Vec<Arc<JobSignal>>,
    /// The jobs (as the core sees them), in the order of `stops`: whether a cancel was requested.
    jobs: Vec<Arc<tideq::Job>>,
    timeout: Option<Duration>,
    /// Taken before the core starts the attempt's timer, so a timeout is never mistaken for a
    /// shutdown.
    started: Instant,
    settled: bool,
    _running: RunningCall,
}

impl Attempt {
    /// The core cancelled the attempt: its timeout passed, its job's cancel was requested, or
    /// the shutdown grace is over.
    fn cancelled(&self) {
        let reason = match self.timeout {
            Some(t) if self.started.elapsed() >= t => Reason::Timeout(t),
            _ if self.jobs.iter().any(|j| j.cancel_requested()) => Reason::Cancelled,
            _ => Reason::Shutdown,
        };
        for stop in &self.stops {
            stop.fire(reason.clone());
        }
    }

    fn settled(mut self) {
        self.settled = true;
        for stop in &self.stops {
            stop.settle();
        }
    }
}

impl Drop for Attempt {
    fn drop(&mut self) {
        if !self.settled {
            for stop in &self.stops {
                stop.fire(Reason::Abandoned);
            }
        }
    }
}

/// Runs `call` (a handler call for the jobs `stops` belong to) until it settles; when `token`
/// fires first (timeout, end of the shutdown grace), aborts the jobs' signals and keeps waiting.
async fn attempt<T>(
    call: impl std::future::Future<Output = T>,
    token: CancellationToken,
    attempt: Attempt,
) -> T {
    tokio::pin!(call);
    let res = tokio::select! {
        biased;
        res = &mut call => res,
        _ = token.cancelled() => {
            // Told to stop: abort `job.signal` and wait for the handler all the same.
            attempt.cancelled();
            call.await
        }
    };
    attempt.settled();
    res
}

/// What a job handler returned (or its Promise resolved with), as the job's result: none for
/// `undefined` or `null`, a `Buffer`'s bytes as they are, anything else its JSON. A value with no
/// JSON form fails the attempt with the error text.
struct JobReply(std::result::Result<Option<Vec<u8>>, String>);

impl Reply for JobReply {
    fn read(v: &Unknown) -> Self {
        let env = Env::from_raw(v.value().env);
        JobReply(
            stored_bytes(
                &env,
                "the handler's return value (stored as the job's result)",
                v,
            )
            .map_err(|e| match e {
                Failure::Core(e) => e.message().to_string(),
                Failure::Type(m) => format!("TypeError: {m}"),
            }),
        )
    }
}

/// The core's handler for one job: calls the JS handler `js` with the job and waits for it
/// (its `signal` aborted when the core cancels the attempt); what it returns is the job's
/// result.
pub(crate) fn job_handler(
    js: JsHandler<Leased, FnArgs<(Job,)>, Leased>,
    aborter: Arc<Aborter>,
    running: Running,
) -> tideq::JobHandler {
    // The closure owns the JS functions for as long as the core's worker runs.
    Arc::new(move |job: tideq::Job| -> tideq::JobFuture {
        let job = Arc::new(job);
        let stop = JobSignal::new(&aborter);
        let token = job.cancellation().clone();
        let started = Attempt {
            stops: vec![stop.clone()],
            jobs: vec![job.clone()],
            timeout: job.timeout,
            started: Instant::now(),
            settled: false,
            _running: running.enter(),
        };
        let leased = Leased { job, stop };
        let call = js.call_job::<JobReply>(leased.clone(), leased);
        Box::pin(async move {
            match attempt(call, token, started).await {
                Ok(JobReply(result)) => result.map_err(tideq::HandlerError::from),
                Err(Thrown {
                    text,
                    verdict: Some(v),
                    ..
                }) => Err(v.into_error(text)),
                // The text as before, the stack kept with the attempt's record.
                Err(Thrown { text, trace, .. }) => {
                    let traced: tideq::HandlerError = Box::new(tideq::TracedError {
                        message: text,
                        trace,
                    });
                    Err(traced)
                }
            }
        })
    })
}

/// The core's handler for a batch: calls the JS handler with the jobs, and maps what it
/// resolved with (or threw) to the core's batch outcome.
pub(crate) fn batch_handler(
    js: JsHandler<LeasedBatch, FnArgs<(Vec<Job>,)>, LeasedBatch>,
    aborter: Arc<Aborter>,
    running: Running,
) -> tideq::JobBatchHandler {
    Arc::new(move |jobs: Vec<tideq::Job>| -> tideq::BatchFuture {
        // The core cancels a batch's jobs together (its timeout is the smallest of theirs).
        let token = jobs
            .first()
            .map(|j| j.cancellation().clone())
            .unwrap_or_default();
        let timeout = jobs.iter().filter_map(|j| j.timeout).min();
        let batch = LeasedBatch(
            jobs.into_iter()
                .map(|job| Leased {
                    job: Arc::new(job),
                    stop: JobSignal::new(&aborter),
                })
                .collect(),
        );
        let started = Attempt {
            stops: batch.0.iter().map(|l| l.stop.clone()).collect(),
            jobs: batch.0.iter().map(|l| l.job.clone()).collect(),
            timeout,
            started: Instant::now(),
            settled: false,
            _running: running.enter(),
        };
        let call = js.call_for::<BatchReply>(batch.clone(), batch);
        Box::pin(async move {
            match attempt(call, token, started).await {
                Ok(BatchReply::Done) => Ok(()),
                Ok(BatchReply::Failed(failed)) => Err(tideq::BatchError::Jobs(failed)),
                Ok(BatchReply::Bad(why)) => Err(tideq::BatchError::All(why)),
                Err(error) => Err(tideq::BatchError::All(error)),
            }
        })
    })
}
