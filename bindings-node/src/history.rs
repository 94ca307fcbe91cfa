//! The queue's history on `Queue` (core `history`): `history`, what the queue did in each step
//! of a window, from the snapshots its workers keep in Redis.

use std::time::Duration;

use napi::bindgen_prelude::*;
use napi_derive::napi;

use crate::convert::{millis, Options};
use crate::error::spawn;
use crate::jobs::Queue;

/// Options of `history(options)`. Every field is optional.
// Declared for the TypeScript definitions only; `history` reads the fields itself.
#[allow(dead_code)]
#[napi(object, object_from_js = false, object_to_js = false)]
pub struct HistoryOptions {
    /// How far back, in ms: at least `stepMs`, at most 14 days. Default 3,600,000 (an hour).
    pub window_ms: Option<f64>,
    /// One point per step, in ms: a whole number of minutes. Default 60,000 (a minute).
    pub step_ms: Option<f64>,
}

/// One step of a queue's history, as `history()` lists it.
#[napi(object, object_from_js = false, use_nullable = true)]
pub struct HistoryPoint {
    /// The start of the step: ms since the epoch, Redis clock (UTC).
    pub at_ms: f64,
    /// Jobs enqueued.
    pub enqueued: f64,
    /// Jobs completed.
    pub completed: f64,
    /// Failed attempts that were retried.
    pub retried: f64,
    /// Jobs dead-lettered.
    pub dead_lettered: f64,
    /// Attempts that failed: `retried + deadLettered`.
    pub failed: f64,
    /// Jobs cancelled.
    pub cancelled: f64,
    /// Mean lateness (ms) of the delayed jobs and retries promoted in the step; `null` if none.
    pub lateness_ms: Option<f64>,
}

impl From<tideq::HistoryPoint> for HistoryPoint {
    fn from(p: tideq::HistoryPoint) -> Self {
        HistoryPoint {
            at_ms: p.at_ms as f64,
            enqueued: p.enqueued as f64,
            completed: p.completed as f64,
            retried: p.retried as f64,
            dead_lettered: p.dead_lettered as f64,
            failed: p.failed as f64,
            cancelled: p.cancelled as f64,
            lateness_ms: p.lateness_ms,
        }
    }
}

#[napi]
impl Queue {
    /// What the queue did in each step of the last `windowMs`, oldest first. The workers'
    /// reports leave a snapshot of the queue's totals in Redis once a minute, kept 14 days, so
    /// every reader sees the same history. Steps are aligned on multiples of `stepMs` (UTC, the
    /// Redis clock); the last is the step under way, counted up to now. Minutes without any
    /// worker running are spread evenly over the gap once one reports again. A step that is not
    /// a whole number of minutes, or a window under the step or over 14 days, rejects with
    /// `INVALID_ARGUMENT`.
    #[napi(
        ts_args_type = "options?: HistoryOptions",
        ts_return_type = "Promise<HistoryPoint[]>"
    )]
    pub fn history<'env>(
        &self,
        env: &'env Env,
        options: Option<Unknown>,
    ) -> Result<PromiseRaw<'env, Vec<HistoryPoint>>> {
        let q = self.inner.clone();
        let span = Options::new("history options", options.as_ref(), &["windowMs", "stepMs"])
            .and_then(|o| {
                let window = o.get("windowMs", millis)?;
                let step = o.get("stepMs", millis)?;
                Ok((
                    window.unwrap_or(Duration::from_secs(3600)),
                    step.unwrap_or(Duration::from_secs(60)),
                ))
            });
        spawn(
            env,
            span.map(|(window, step)| async move {
                Ok(q.history(window, step)
                    .await?
                    .into_iter()
                    .map(HistoryPoint::from)
                    .collect())
            }),
        )
    }
}
