//! Per-task metrics on `Queue` (core `task_metrics`): `taskMetrics`, per task name, jobs
//! completed, failed attempts, jobs dead-lettered and handler run times over a window.

use napi::bindgen_prelude::*;
use napi_derive::napi;

use crate::convert::{millis, Options};
use crate::error::spawn;
use crate::jobs::Queue;

/// Options of `taskMetrics(options)`. Every field is optional.
// Declared for the TypeScript definitions only; `taskMetrics` reads the fields itself.
#[allow(dead_code)]
#[napi(object, object_from_js = false, object_to_js = false)]
pub struct TaskMetricsOptions {
    /// How far back, in ms: from 60,000 (a minute) to 14 days. Default: since the queue's
    /// workers began counting.
    pub window_ms: Option<f64>,
}

/// One task's counts over a window, as `taskMetrics()` lists them.
#[napi(object, object_from_js = false, use_nullable = true)]
pub struct TaskMetrics {
    /// The task's name: `""` for jobs without one, `"(other)"` for names past the 100 tracked.
    pub task: String,
    /// Jobs completed.
    pub completed: f64,
    /// Attempts that failed (retried or dead-lettered).
    pub failed: f64,
    /// Jobs dead-lettered.
    pub dead_lettered: f64,
    /// Handler runs.
    pub runs: f64,
    /// Their run time, summed (ms).
    pub run_ms_sum: f64,
    /// Their mean run time (ms); `null` without runs.
    pub run_ms_avg: Option<f64>,
}

impl From<tideq::TaskMetrics> for TaskMetrics {
    fn from(t: tideq::TaskMetrics) -> Self {
        TaskMetrics {
            task: t.task,
            completed: t.completed as f64,
            failed: t.failed as f64,
            dead_lettered: t.dead_lettered as f64,
            runs: t.runs as f64,
            run_ms_sum: t.run_ms_sum,
            run_ms_avg: t.run_ms_avg,
        }
    }
}

#[napi]
impl Queue {
    /// Per task: jobs completed, failed attempts, jobs dead-lettered and handler run times over
    /// the last `windowMs` (from a minute to 14 days, else `INVALID_ARGUMENT`; without it, since
    /// the queue's workers began counting), by task name. Jobs without a task count under `""`;
    /// a queue tracks its first 100 task names, later ones count under `"(other)"`. Counted from
    /// the workers' periodic reports (every 15 s at most, and when a worker stops).
    #[napi(
        ts_args_type = "options?: TaskMetricsOptions",
        ts_return_type = "Promise<TaskMetrics[]>"
    )]
    pub fn task_metrics<'env>(
        &self,
        env: &'env Env,
        options: Option<Unknown>,
    ) -> Result<PromiseRaw<'env, Vec<TaskMetrics>>> {
        let q = self.inner.clone();
        let window = Options::new("taskMetrics options", options.as_ref(), &["windowMs"])
            .and_then(|o| o.get("windowMs", millis));
        spawn(
            env,
            window.map(|window| async move {
                Ok(q.task_metrics(window)
                    .await?
                    .into_iter()
                    .map(TaskMetrics::from)
                    .collect())
            }),
        )
    }
}
