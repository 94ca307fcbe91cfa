//! Running recorded jobs: a drain, and inline mode's run at enqueue. Each attempt goes through
//! the worker's own code (`worker/attempt.rs`): the same handler lookup, call and reading of its
//! outcome; what differs is that a retry or a snooze runs again at once instead of after a delay.

use std::sync::atomic::AtomicBool;

use super::*;
use crate::job::{now_ms, Job};
use crate::worker::attempt::{self, Attempt};

/// Snoozes (or back-offs) of one job in a row before a drain leaves it recorded.
const MAX_SNOOZES: u32 = 100;

impl TestMode {
    /// Runs every recorded job not run yet, in enqueue order (delayed ones too, without waiting),
    /// then those their handlers enqueue, until none is left. A failed attempt is retried at once
    /// until the job's `max_attempts`, then the job is dead with the error a worker records;
    /// [`DontRetry`](crate::DontRetry) makes it dead at once; [`Snooze`](crate::Snooze) and
    /// [`BackOff`](crate::BackOff) run it again at once, the attempt uncounted. A job whose queue
    /// `handlers` has nothing for stays recorded (counted in [`DrainReport::left`]); inline
    /// mode's handlers count too.
    pub async fn drain(&self, handlers: &Handlers) -> Result<DrainReport> {
        let handlers = self.own_handlers().merged(handlers);
        for e in self.entries().iter_mut() {
            e.parked = false;
        }
        let mut report = DrainReport::default();
        loop {
            let next = self
                .entries()
                .iter()
                .find(|e| e.job.state == RecordedState::Enqueued && !e.parked)
                .map(|e| (e.queue.name().to_string(), e.job.id.clone(), e.job.attempts));
            let Some((queue, id, before)) = next else {
                break;
            };
            match Box::pin(self.run_recorded(&queue, &id, &handlers)).await {
                Some(job) => {
                    report.ran += (job.attempts - before) as usize;
                    match job.state {
                        RecordedState::Completed => report.completed += 1,
                        RecordedState::Dead => report.dead += 1,
                        RecordedState::Enqueued => report.left += 1,
                    }
                }
                None => report.left += 1,
            }
        }
        Ok(report)
    }

    fn update(&self, queue: &str, id: &str, f: impl FnOnce(&mut Entry)) -> Option<RecordedJob> {
        let mut entries = self.entries();
        let e = entries
            .iter_mut()
            .find(|e| e.job.id == id && *e.queue.name == *queue)?;
        f(e);
        Some(e.job.clone())
    }

    /// Runs recorded job `id` of `queue` until it completes or dies (or parks it: no handler,
    /// or it kept snoozing). The job as it ended; `None` when it is not recorded.
    pub(crate) async fn run_recorded(
        &self,
        queue: &str,
        id: &str,
        handlers: &Handlers,
    ) -> Option<RecordedJob> {
        let entry = self
            .entries()
            .iter()
            .find(|e| e.job.id == id && *e.queue.name == *queue)
            .cloned()?;
        let Some(run) = handlers.by_queue.get(queue) else {
            return self.update(queue, id, |e| e.parked = true);
        };
        let owner = Arc::new(entry.queue.clone());
        let env = &entry.env;
        let mut attempts = entry.job.attempts;
        let mut snoozes = 0;
        loop {
            let job = Job {
                id: env.id.clone(),
                payload: env.payload.clone(),
                attempt: attempts + 1,
                max_attempts: env.max_attempts,
                enqueued_at: env.created_at,
                started_at: now_ms(),
                queue: queue.to_string(),
                timeout: env.timeout_ms.map(Duration::from_millis),
                task: env.task.clone(),
                format: env.format,
                trace: env.trace.clone(),
                args_from: None,
                backoff: env.backoff,
                token: String::new(),
                shard: 0,
                cancel: Default::default(),
                owner: owner.clone(),
                cancel_requested: Arc::new(AtomicBool::new(false)),
                group_limit: None,
            };
            let outcome = match run.for_job(&job) {
                Ok(handler) => {
                    attempt::classify(&entry.queue, attempt::call(&handler, job).await.0)
                }
                Err(why) => Attempt::Failed {
                    error: why,
                    trace: None,
                    dead_now: true,
                },
            };
            let max_error_len = entry.queue.options().max_error_len;
            match outcome {
                Attempt::Done(result) => {
                    return self.update(queue, id, |e| {
                        e.job.attempts = attempts + 1;
                        e.job.state = RecordedState::Completed;
                        e.job.result = result;
                    });
                }
                Attempt::Later(..) => {
                    snoozes += 1;
                    if snoozes >= MAX_SNOOZES {
                        return self.update(queue, id, |e| e.parked = true);
                    }
                }
                Attempt::Failed {
                    error, dead_now, ..
                } => {
                    attempts += 1;
                    let error = crate::error::capped_text(&error, max_error_len);
                    let dead = dead_now || attempts >= env.max_attempts;
                    let job = self.update(queue, id, |e| {
                        e.job.attempts = attempts;
                        e.job.errors.push(error.clone());
                        e.job.error = Some(error);
                        if dead {
                            e.job.state = RecordedState::Dead;
                        }
                    });
                    if dead {
                        return job;
                    }
                }
            }
        }
    }
}
