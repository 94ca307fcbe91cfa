//! Shared limiters (core `limiter`): `Limiter` defines concurrency, window and token-bucket
//! limits by name and takes from them; `LimitSlot` is what an acquire took. Over its limit, the
//! native `acquire` resolves with the ms to wait, which `lib/index.js` turns into a thrown
//! `OverLimit` (a `Snooze`, lib/outcomes.js); `run` and `Symbol.asyncDispose` are added there too.

use std::sync::{Arc, Mutex};

use napi::bindgen_prelude::*;
use napi_derive::napi;

use crate::client::Client;
use crate::convert::{count1, describe, millis, read_value, string};
use crate::error::{spawn, throw, type_error, Res};

/// The shared limiters of a client's key prefix, by name, shared by every queue, worker and
/// process: define a limiter (`concurrent`, `window`, `bucket`; each definition is idempotent),
/// then take from it inside a handler with `acquire` (over the limit it throws `OverLimit`, a
/// `Snooze`: the job runs again later without using an attempt) or `run`. Every operation is
/// one atomic script on the limiter's own keys (one Redis Cluster slot), by the Redis clock.
#[napi]
pub struct Limiter {
    inner: tideq::Limiter,
}

fn u64_of(what: &str, v: &Unknown) -> Res<u64> {
    Ok(count1(what, v)? as u64)
}

#[napi]
impl Limiter {
    /// The shared limiters of `client`'s key prefix. Throws `INVALID_ARGUMENT` when `client` is
    /// not a `Client`.
    #[napi(constructor, ts_args_type = "client: Client")]
    pub fn new(env: &Env, client: Unknown) -> Result<Self> {
        let inner = throw(
            env,
            read_value::<ClassInstance<Client>>(&client)
                .map(|c| c.inner.limiter())
                .map_err(|_| {
                    type_error(format!(
                        "client must be a tideq Client; got {}",
                        describe(&client)
                    ))
                }),
        )?;
        Ok(Limiter { inner })
    }

    /// Defines `name` as a concurrency limit: at most `n` holders at once (1 to 100,000), each
    /// holding its slot until it releases it or for `leaseMs` at most (up to 7 days; default
    /// 60,000), so a holder that died gives its slot back. Redefining keeps the holders.
    #[napi(
        ts_args_type = "name: string, n: number, leaseMs?: number",
        ts_return_type = "Promise<void>"
    )]
    pub fn concurrent<'env>(
        &self,
        env: &'env Env,
        name: Unknown,
        n: Unknown,
        lease_ms: Option<Unknown>,
    ) -> Result<PromiseRaw<'env, ()>> {
        let l = self.inner.clone();
        let args = (|| -> Res<_> {
            let lease = match &lease_ms {
                Some(v) if v.get_type()? != ValueType::Undefined => millis("leaseMs", v)?,
                _ => std::time::Duration::from_secs(60),
            };
            Ok((string("name", &name)?, u64_of("n", &n)?, lease))
        })();
        spawn(
            env,
            args.map(|(name, n, lease)| async move { Ok(l.concurrent(&name, n, lease).await?) }),
        )
    }

    /// Defines `name` as a window limit: at most `n` acquisitions (1 to 100,000) in any span of
    /// `perMs` (a sliding window, up to 7 days).
    #[napi(
        ts_args_type = "name: string, n: number, perMs: number",
        ts_return_type = "Promise<void>"
    )]
    pub fn window<'env>(
        &self,
        env: &'env Env,
        name: Unknown,
        n: Unknown,
        per_ms: Unknown,
    ) -> Result<PromiseRaw<'env, ()>> {
        let l = self.inner.clone();
        let args = (|| -> Res<_> {
            Ok((
                string("name", &name)?,
                u64_of("n", &n)?,
                millis("perMs", &per_ms)?,
            ))
        })();
        spawn(
            env,
            args.map(|(name, n, per)| async move { Ok(l.window(&name, n, per).await?) }),
        )
    }

    /// Defines `name` as a token bucket: `capacity` tokens, refilled at `refillPerSecond` tokens
    /// a second (more than 0); an acquisition takes its `cost` in tokens, so a full bucket
    /// allows a burst of `capacity`, then `refillPerSecond` a second. A new bucket starts full.
    #[napi(
        ts_args_type = "name: string, capacity: number, refillPerSecond: number",
        ts_return_type = "Promise<void>"
    )]
    pub fn bucket<'env>(
        &self,
        env: &'env Env,
        name: Unknown,
        capacity: Unknown,
        refill_per_second: Unknown,
    ) -> Result<PromiseRaw<'env, ()>> {
        let l = self.inner.clone();
        let args = (|| -> Res<_> {
            let refill: f64 = read_value(&refill_per_second).map_err(|_| {
                type_error(format!(
                    "refillPerSecond must be a number; got {}",
                    describe(&refill_per_second)
                ))
            })?;
            Ok((
                string("name", &name)?,
                u64_of("capacity", &capacity)?,
                refill,
            ))
        })();
        spawn(
            env,
            args.map(|(name, c, refill)| async move { Ok(l.bucket(&name, c, refill).await?) }),
        )
    }

    /// Takes from `name` (a bucket: `cost` tokens, default 1; the other kinds take a cost of 1).
    /// Rejects with `OverLimit` (a `Snooze`: thrown out of a job handler, the job runs again
    /// when the limiter may have room, without using an attempt) when it is over its limit, and
    /// with `INVALID_ARGUMENT` for a limiter never defined. Release the slot with
    /// `slot.release()` (or `await using slot = ...`).
    #[napi(
        ts_args_type = "name: string, cost?: number",
        ts_return_type = "Promise<LimitSlot>"
    )]
    pub fn acquire<'env>(
        &self,
        env: &'env Env,
        name: Unknown,
        cost: Option<Unknown>,
    ) -> Result<PromiseRaw<'env, Either<LimitSlot, f64>>> {
        let l = self.inner.clone();
        let args = (|| -> Res<_> {
            let cost = match &cost {
                Some(v) if v.get_type()? != ValueType::Undefined => u64_of("cost", v)?,
                _ => 1,
            };
            Ok((string("name", &name)?, cost))
        })();
        spawn(
            env,
            args.map(|(name, cost)| async move {
                match l.acquire_cost(&name, cost).await {
                    Ok(g) => Ok(Either::A(LimitSlot {
                        guard: Arc::new(Mutex::new(Some(g))),
                    })),
                    Err(tideq::LimitError::Over(o)) => {
                        Ok(Either::B(o.retry_after.as_millis() as f64))
                    }
                    Err(tideq::LimitError::Failed(e)) => Err(e.into()),
                }
            }),
        )
    }
}

/// What `Limiter.acquire` took. A concurrency limiter's slot is given back by `release()` (or
/// leaving an `await using` scope), or when its lease runs out; a window's start and a bucket's
/// tokens are spent (`release()` does nothing).
#[napi]
pub struct LimitSlot {
    guard: Arc<Mutex<Option<tideq::LimitGuard>>>,
}

#[napi]
impl LimitSlot {
    /// When a concurrency limiter's slot is given back unless released or extended (ms since
    /// the epoch, by the Redis clock); `null` for a window or bucket.
    #[napi(getter)]
    pub fn lease_deadline_ms(&self) -> Option<f64> {
        let g = self.guard.lock().unwrap();
        g.as_ref()
            .and_then(|g| g.lease_deadline_ms())
            .map(|ms| ms as f64)
    }

    /// Gives a concurrency limiter's slot back: true when it was still held (false: its lease
    /// had run out).
    #[napi(ts_return_type = "Promise<boolean>")]
    pub fn release<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, bool>> {
        let guard = self.guard.lock().unwrap().take();
        spawn(
            env,
            Ok(async move {
                Ok(match guard {
                    Some(g) => g.release().await?,
                    None => true,
                })
            }),
        )
    }

    /// Holds a concurrency limiter's slot for `leaseMs` from now: false when it was no longer
    /// held.
    #[napi(ts_args_type = "leaseMs: number", ts_return_type = "Promise<boolean>")]
    pub fn extend<'env>(
        &self,
        env: &'env Env,
        lease_ms: Unknown,
    ) -> Result<PromiseRaw<'env, bool>> {
        let guard = self.guard.clone();
        spawn(
            env,
            millis("leaseMs", &lease_ms).map(|lease| async move {
                let g = guard.lock().unwrap().take();
                let Some(mut g) = g else {
                    return Ok(false);
                };
                let r = g.extend(lease).await;
                *guard.lock().unwrap() = Some(g);
                Ok(r?)
            }),
        )
    }
}
