//! The worker registry on `Queue` (core `registry`): `workers`, the live workers with who they
//! are and what they run.

use napi::bindgen_prelude::*;
use napi_derive::napi;

use crate::error::spawn;
use crate::jobs::Queue;

/// A live worker as `workers()` lists it.
#[napi(object, object_from_js = false)]
pub struct WorkerInfo {
    /// The worker's id (random, new for each worker).
    pub id: String,
    /// The queue it works.
    pub queue: String,
    /// The host name of its machine.
    pub host: String,
    /// Its process id.
    pub pid: u32,
    /// The runtime of its handlers: `'node'`, `'python'` or `'rust'`.
    pub runtime: String,
    /// The tideq version it runs.
    pub version: String,
    /// Jobs it runs at the same time, at most.
    pub concurrency: f64,
    /// Jobs it was running when last seen.
    pub running: f64,
    /// The ids of up to 10 of them.
    pub running_ids: Vec<String>,
    /// When it started: ms since the epoch, its machine's clock.
    pub started_at_ms: f64,
    /// When it was last seen: ms since the epoch, Redis clock.
    pub last_seen_at_ms: f64,
}

impl From<tideq::WorkerInfo> for WorkerInfo {
    fn from(w: tideq::WorkerInfo) -> Self {
        WorkerInfo {
            id: w.id,
            queue: w.queue,
            host: w.host,
            pid: w.pid,
            runtime: w.runtime,
            version: w.version,
            concurrency: w.concurrency as f64,
            running: w.running as f64,
            running_ids: w.running_ids,
            started_at_ms: w.started_at as f64,
            last_seen_at_ms: w.last_seen_at as f64,
        }
    }
}

#[napi]
impl Queue {
    /// The queue's live workers (seen in the last 45 s), in the order they started. A worker is
    /// seen when it fetches jobs and, while it runs jobs, each time it renews their leases, so a
    /// worker busy with long jobs stays listed; one that stops leaves the list.
    #[napi(ts_return_type = "Promise<WorkerInfo[]>")]
    pub fn workers<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, Vec<WorkerInfo>>> {
        let q = self.inner.clone();
        spawn(
            env,
            Ok(async move {
                Ok(q.workers()
                    .await?
                    .into_iter()
                    .map(WorkerInfo::from)
                    .collect())
            }),
        )
    }
}
