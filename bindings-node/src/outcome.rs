//! `Queue.wait` (core `outcome`): a job's outcome, resolved when the script that finishes the
//! job wakes the wait (no polling).

use napi::bindgen_prelude::*;
use napi_derive::napi;

use crate::convert::Options;
use crate::error::spawn;
use crate::jobs::{job_id, Queue};
use crate::results::Stored;

#[napi]
impl Queue {
    /// Waits until job `id` has finished and resolves with its result (read as `JobInfo.result`
    /// is; `null` when the handler returned nothing), also when it finished before the call,
    /// while it is retained (`keepCompleted`, `keepForMs`). Rejects with `JOB_FAILED` (its last
    /// error in the message) when the job went to the dead letters or was cancelled,
    /// `JOB_NOT_FOUND` when there is no such job, and `TIMEOUT` after `timeoutMs`. Resolves as
    /// soon as the job ends: the script that finishes it wakes the wait (no polling). The
    /// result's type is the handler's to say and nothing checks it: `unknown` unless given,
    /// `wait<Receipt>(id)`.
    #[napi(
        ts_generic_types = "T = unknown",
        ts_args_type = "id: string, options?: WaitOptions",
        ts_return_type = "Promise<NoInfer<T>>"
    )]
    pub fn wait<'env>(
        &self,
        env: &'env Env,
        id: Unknown,
        options: Option<Unknown>,
    ) -> Result<PromiseRaw<'env, Stored>> {
        let q = self.inner.clone();
        let args = job_id(&id).and_then(|id| {
            let o = Options::new("wait options", options.as_ref(), &["timeoutMs"])?;
            Ok((id, o.nullable_millis("timeoutMs", None)?))
        });
        spawn(
            env,
            args.map(|(id, timeout)| async move { Ok(Stored(q.wait(&id, timeout).await?.result)) }),
        )
    }
}

/// Options of `wait(id, options)`.
// Declared for the TypeScript definitions only; the method reads the field itself.
#[allow(dead_code)]
#[napi(object, object_from_js = false, object_to_js = false)]
pub struct WaitOptions {
    /// Longest wait in ms, then the Promise rejects with `TIMEOUT`. `null` or absent: no limit.
    #[napi(ts_type = "number | null")]
    pub timeout_ms: Option<f64>,
}
