//! Manual leasing on `Queue` (core `lease`): lease ready jobs without a worker, then settle each
//! one yourself (`complete`, `fail`, `release`) and renew a long one (`extend`). Every call is
//! fenced by the job's lease: once it has expired and the job was delivered again, settling it
//! rejects with `LEASE_LOST`. Nothing renews these leases by itself.

use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi_derive::napi;

use crate::abort::JobSignal;
use crate::convert::{count1, millis, read_value, Options};
use crate::error::{spawn, type_error, Res};
use crate::handler::error_text;
use crate::job::Job;
use crate::jobs::Queue;

/// Options of `leaseJobs(max, options)`.
// Declared for the TypeScript definitions only; `convert::Options` reads the fields one by one.
#[allow(dead_code)]
#[napi(object, object_from_js = false, object_to_js = false)]
pub struct LeaseOptions {
    /// How long the jobs are leased: past it, a job not settled (or extended) is delivered
    /// again. Default: a worker's default lease (30000).
    pub lease_ms: Option<f64>,
}

/// The leased job of a `complete`/`fail`/`release`/`extend` call.
fn leased(v: &Unknown) -> Res<Arc<tideq::Job>> {
    let job = read_value::<ClassInstance<Job>>(v)
        .map_err(|_| type_error("job must be a Job (from leaseJobs or a handler)"))?;
    Ok(job.inner.clone())
}

#[napi]
impl Queue {
    /// Leases up to `max` (at most 1000) ready jobs (due delayed jobs are promoted first) for
    /// processing without a worker; resolves with them (empty when nothing is ready). Settle each with
    /// `complete`, `fail` or `release`, and renew a long one with `extend`: a job whose lease
    /// expires is delivered again. Their `signal` is never aborted.
    #[napi(
        ts_args_type = "max: number, options?: LeaseOptions",
        ts_return_type = "Promise<Job[]>"
    )]
    pub fn lease_jobs<'env>(
        &self,
        env: &'env Env,
        max: Unknown,
        options: Option<Unknown>,
    ) -> Result<PromiseRaw<'env, Vec<Job>>> {
        let q = self.inner.clone();
        let args = count1("max", &max).and_then(|max| {
            let opts = Options::new("leaseJobs options", options.as_ref(), &["leaseMs"])?;
            let lease = opts
                .get("leaseMs", millis)?
                .unwrap_or(tideq::WorkerOptions::default().lease);
            Ok((max, lease))
        });
        spawn(
            env,
            args.map(|(max, lease)| async move {
                Ok(q.lease_jobs(max, lease)
                    .await?
                    .into_iter()
                    .map(|j| Job::new(Arc::new(j), JobSignal::inert()))
                    .collect())
            }),
        )
    }

    /// Completes a leased job. Rejects with `LEASE_LOST` if its lease expired and it was
    /// delivered again.
    #[napi(ts_args_type = "job: Job", ts_return_type = "Promise<void>")]
    pub fn complete<'env>(&self, env: &'env Env, job: Unknown) -> Result<PromiseRaw<'env, ()>> {
        let q = self.inner.clone();
        spawn(
            env,
            leased(&job).map(|j| async move { Ok(q.complete(&j).await?) }),
        )
    }

    /// Fails a leased attempt with `error` (an `Error`, stored as `name: message`, or a string):
    /// the job is retried after its backoff, or dead-lettered once its attempts are used up.
    /// Resolves with true when it was dead-lettered. Rejects with `LEASE_LOST` like `complete`.
    #[napi(
        ts_args_type = "job: Job, error: Error | string",
        ts_return_type = "Promise<boolean>"
    )]
    pub fn fail<'env>(
        &self,
        env: &'env Env,
        job: Unknown,
        error: Unknown,
    ) -> Result<PromiseRaw<'env, bool>> {
        let q = self.inner.clone();
        let text = error_text(&error);
        spawn(
            env,
            leased(&job).map(|j| async move { Ok(q.fail(&j, &text).await?) }),
        )
    }

    /// Returns a leased job to the front of the queue without counting the attempt. Rejects with
    /// `LEASE_LOST` like `complete`.
    #[napi(ts_args_type = "job: Job", ts_return_type = "Promise<void>")]
    pub fn release<'env>(&self, env: &'env Env, job: Unknown) -> Result<PromiseRaw<'env, ()>> {
        let q = self.inner.clone();
        spawn(
            env,
            leased(&job).map(|j| async move { Ok(q.release(&j).await?) }),
        )
    }

    /// Pushes a leased job's lease deadline to `leaseMs` from now (Redis clock). Rejects with
    /// `LEASE_LOST` like `complete`.
    #[napi(
        ts_args_type = "job: Job, leaseMs: number",
        ts_return_type = "Promise<void>"
    )]
    pub fn extend<'env>(
        &self,
        env: &'env Env,
        job: Unknown,
        lease_ms: Unknown,
    ) -> Result<PromiseRaw<'env, ()>> {
        let q = self.inner.clone();
        let args = leased(&job).and_then(|j| Ok((j, millis("leaseMs", &lease_ms)?)));
        spawn(
            env,
            args.map(|(j, lease)| async move { Ok(q.extend(&j, lease).await?) }),
        )
    }
}
