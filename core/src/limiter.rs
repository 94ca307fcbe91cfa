//! Shared limiters: a concurrency, window or token-bucket limit by any name, shared by every
//! queue, worker and process that takes from it ([`Client::limiter`]). Each operation is one
//! script on the limiter's own keys (`<prefix>:{#lim:<name>}:...`, one Cluster slot), by the
//! Redis clock. Taken inside a job handler, a limiter over its limit gives a [`LimitError::Over`]
//! whose source is a [`Snooze`]: returned by the handler (`?`), the job runs again
//! when the limiter may have room, without using an attempt.

use std::time::Duration;

use crate::client::Client;
use crate::error::{Error, ErrorKind, Result};
use crate::keys::LimiterKeys;
use crate::scripts::{LuaScript, ACQUIRE_LIMIT, EXTEND_LIMIT, RELEASE_LIMIT, SET_LIMITER};
use crate::worker::Snooze;

/// Largest `n` of a concurrency or window limiter (its holders or starts are a sorted set).
pub const MAX_LIMITER_N: u64 = 100_000;
/// Largest capacity of a bucket.
pub const MAX_BUCKET_CAPACITY: u64 = 1_000_000_000;
/// Longest lease of a concurrency limiter, and longest window.
pub const MAX_LIMITER_PERIOD: Duration = Duration::from_secs(7 * 24 * 3600);

/// The shared limiters of a client's key prefix: define them ([`concurrent`](Self::concurrent),
/// [`window`](Self::window), [`bucket`](Self::bucket)) and take from them by name
/// ([`acquire`](Self::acquire)). Cheap to clone.
///
/// ```no_run
/// # async fn charge(client: &tideq::Client) -> Result<Option<Vec<u8>>, tideq::HandlerError> {
/// let limiter = client.limiter();
/// // At most 5 calls to Stripe at once, over every queue and process.
/// limiter.concurrent("stripe", 5, std::time::Duration::from_secs(60)).await?;
/// let slot = limiter.acquire("stripe").await?; // over the limit: the job snoozes
/// // ... call Stripe ...
/// slot.release().await?;
/// # Ok(None)
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Limiter {
    client: Client,
}

impl Client {
    /// The shared limiters under this client's key prefix.
    pub fn limiter(&self) -> Limiter {
        Limiter {
            client: self.clone(),
        }
    }
}

fn period(what: &str, d: Duration) -> Result<u64> {
    if d.is_zero() || d > MAX_LIMITER_PERIOD {
        return Err(Error::invalid(format!(
            "{what} must be from 1 ms to 7 days, got {d:?}"
        )));
    }
    Ok(d.as_millis().max(1) as u64)
}

fn count(what: &str, n: u64, max: u64) -> Result<u64> {
    if n == 0 || n > max {
        return Err(Error::invalid(format!(
            "{what} must be 1 to {max}, got {n}"
        )));
    }
    Ok(n)
}

impl Limiter {
    fn keys(&self, name: &str) -> Result<LimiterKeys> {
        LimiterKeys::new(self.client.config().prefix(), name)
    }

    async fn run<T: redis::FromRedisValue>(
        &self,
        name: &str,
        op: &str,
        script: &LuaScript,
        keys: &LimiterKeys,
        args: &[String],
    ) -> Result<T> {
        let mut cmd = script.cmd(&keys.for_script(script));
        cmd.arg(args);
        // Boxed: a caller's future stays small (rustc's default query depth held a `main` that
        // awaited a limiter call and a worker at once).
        Box::pin(self.client.eval(&cmd, script))
            .await
            .map_err(|e| e.context(&format!("limiter {name:?}: {op}")))
    }

    async fn define(&self, name: &str, kind: &str, n: u64, ms: u64, refill: f64) -> Result<()> {
        let keys = self.keys(name)?;
        let args = [
            kind.to_string(),
            n.to_string(),
            ms.to_string(),
            refill.to_string(),
        ];
        self.run::<i64>(name, "define", &SET_LIMITER, &keys, &args)
            .await
            .map(drop)
    }

    /// Defines `name` as a concurrency limit: at most `n` holders at once (1 to 100,000), each
    /// holding its slot until it releases it or for `lease` at most (1 ms to 7 days), so a
    /// holder that died gives its slot back. Redefining keeps the current holders.
    pub async fn concurrent(&self, name: &str, n: u64, lease: Duration) -> Result<()> {
        let n = count("n", n, MAX_LIMITER_N)?;
        let ms = period("lease", lease)?;
        self.define(name, "concurrent", n, ms, 0.0).await
    }

    /// Defines `name` as a window limit: at most `n` acquisitions (1 to 100,000) in any span of
    /// `per` (1 ms to 7 days), a sliding window.
    pub async fn window(&self, name: &str, n: u64, per: Duration) -> Result<()> {
        let n = count("n", n, MAX_LIMITER_N)?;
        let ms = period("per", per)?;
        self.define(name, "window", n, ms, 0.0).await
    }

    /// Defines `name` as a token bucket: `capacity` tokens (1 to 10^9), refilled at `refill`
    /// tokens a second (more than 0, at most 10^9); an acquisition takes its cost in tokens, so
    /// a full bucket allows a burst of `capacity`, then `refill` a second. A new bucket starts
    /// full; redefining keeps its tokens (at most the new capacity).
    pub async fn bucket(&self, name: &str, capacity: u64, refill: f64) -> Result<()> {
        let capacity = count("capacity", capacity, MAX_BUCKET_CAPACITY)?;
        if !(refill.is_finite() && refill > 0.0 && refill <= MAX_BUCKET_CAPACITY as f64) {
            return Err(Error::invalid(format!(
                "refill must be more than 0 and at most {MAX_BUCKET_CAPACITY} tokens a second, \
                 got {refill}"
            )));
        }
        self.define(name, "bucket", capacity, 0, refill).await
    }

    /// Takes one from `name`: a concurrency limiter's slot (give it back with
    /// [`LimitGuard::release`], or by dropping the guard), a window's start, a bucket's token.
    /// Over the limit: [`LimitError::Over`], which a job handler returns (`?`) to snooze the job
    /// until the limiter may have room, without using an attempt.
    pub async fn acquire(&self, name: &str) -> std::result::Result<LimitGuard, LimitError> {
        self.acquire_cost(name, 1).await
    }

    /// [`acquire`](Self::acquire) taking `cost` tokens of a bucket (1 to its capacity); a
    /// concurrency or window limiter takes only a cost of 1.
    pub async fn acquire_cost(
        &self,
        name: &str,
        cost: u64,
    ) -> std::result::Result<LimitGuard, LimitError> {
        let keys = self.keys(name)?;
        let cost = count("cost", cost, MAX_BUCKET_CAPACITY)?;
        let token = format!("{:016x}{:016x}", fastrand::u64(..), fastrand::u64(..));
        let args = [token.clone(), cost.to_string()];
        let reply: Vec<redis::Value> = self
            .run(name, "acquire", &ACQUIRE_LIMIT, &keys, &args)
            .await?;
        let int = |i: usize| -> i64 {
            reply
                .get(i)
                .and_then(|v| redis::from_redis_value::<i64>(v.clone()).ok())
                .unwrap_or(0)
        };
        let text = |i: usize| -> String {
            reply
                .get(i)
                .and_then(|v| redis::from_redis_value(v.clone()).ok())
                .unwrap_or_default()
        };
        match int(0) {
            1 => Ok(LimitGuard {
                limiter: self.clone(),
                name: name.to_string(),
                deadline_ms: (int(1) > 0).then_some(int(1) as u64),
                token: (int(1) > 0).then_some(token),
            }),
            0 => {
                // Holders give slots back at any time: up to 250 ms, spread so that the jobs
                // told to wait do not all come back at once.
                let ms = int(1).max(1) as u64;
                let ms = if text(2) == "concurrent" {
                    ms + fastrand::u64(0..=ms / 2)
                } else {
                    ms
                };
                Err(LimitError::Over(OverLimit::new(
                    name,
                    Duration::from_millis(ms),
                )))
            }
            -1 => Err(Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "no limiter named {name:?}: define it first (concurrent, window or bucket)"
                ),
            )
            .into()),
            _ => {
                let kind = text(1);
                Err(Error::invalid(if kind == "bucket" {
                    format!(
                        "cost {cost} is more than the capacity of bucket {name:?} ({})",
                        int(2)
                    )
                } else {
                    format!("limiter {name:?} is a {kind} limiter: its cost is 1, got {cost}")
                })
                .into())
            }
        }
    }
}

/// What [`Limiter::acquire`] took. A concurrency limiter's slot is given back by
/// [`release`](Self::release), or on drop (in the background, inside a tokio runtime), or when
/// its lease runs out; a window's start and a bucket's tokens are spent and nothing is given back.
#[derive(Debug)]
pub struct LimitGuard {
    limiter: Limiter,
    name: String,
    token: Option<String>,
    deadline_ms: Option<u64>,
}

impl LimitGuard {
    /// The limiter's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// When a concurrency limiter's slot is given back unless released or extended before (ms
    /// since the Unix epoch, by the Redis clock); `None` for a window or bucket.
    pub fn lease_deadline_ms(&self) -> Option<u64> {
        self.deadline_ms
    }

    /// Gives a concurrency limiter's slot back. True when it was still held (false: its lease
    /// had run out; always true for a window or bucket, which give nothing back).
    pub async fn release(mut self) -> Result<bool> {
        match self.token.take() {
            None => Ok(true),
            Some(token) => release(&self.limiter, &self.name, token).await,
        }
    }

    /// Holds a concurrency limiter's slot for `lease` from now (1 ms to 7 days). False when it
    /// was no longer held (its lease had run out); always true for a window or bucket.
    pub async fn extend(&mut self, lease: Duration) -> Result<bool> {
        let Some(token) = &self.token else {
            return Ok(true);
        };
        let ms = period("lease", lease)?;
        let keys = self.limiter.keys(&self.name)?;
        let at: i64 = self
            .limiter
            .run(
                &self.name,
                "extend",
                &EXTEND_LIMIT,
                &keys,
                &[token.clone(), ms.to_string()],
            )
            .await?;
        if at > 0 {
            self.deadline_ms = Some(at as u64);
        }
        Ok(at > 0)
    }
}

async fn release(limiter: &Limiter, name: &str, token: String) -> Result<bool> {
    let keys = limiter.keys(name)?;
    let n: i64 = limiter
        .run(name, "release", &RELEASE_LIMIT, &keys, &[token])
        .await?;
    Ok(n == 1)
}

impl Drop for LimitGuard {
    fn drop(&mut self) {
        if let Some(token) = self.token.take() {
            if let Ok(rt) = tokio::runtime::Handle::try_current() {
                let (limiter, name) = (self.limiter.clone(), std::mem::take(&mut self.name));
                rt.spawn(async move {
                    if let Err(e) = release(&limiter, &name, token).await {
                        log::warn!("limiter {name:?}: a dropped slot was not given back: {e}");
                    }
                });
            }
        }
    }
}

/// A limiter over its limit: [`Limiter::acquire`]'s answer when nothing may be taken for
/// `retry_after`. Its [`source`](std::error::Error::source) is a [`Snooze`] of that long, so a
/// job handler returning it snoozes its job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OverLimit {
    pub name: String,
    /// How long until the limiter may have room (a concurrency limiter: at most 1 s, as a
    /// holder may give its slot back at any time).
    pub retry_after: Duration,
    snooze: Snooze,
}

impl OverLimit {
    pub fn new(name: &str, retry_after: Duration) -> Self {
        OverLimit {
            name: name.to_string(),
            retry_after,
            snooze: Snooze::new(retry_after),
        }
    }
}

impl std::fmt::Display for OverLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "limiter {:?} is over its limit; retry after {} ms",
            self.name,
            self.retry_after.as_millis()
        )
    }
}

impl std::error::Error for OverLimit {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.snooze)
    }
}

/// Why [`Limiter::acquire`] took nothing: the limiter is over its limit, or the call failed (bad
/// arguments, an unknown limiter, Redis).
#[derive(Debug, Clone)]
pub enum LimitError {
    Over(OverLimit),
    Failed(Error),
}

impl From<Error> for LimitError {
    fn from(e: Error) -> Self {
        LimitError::Failed(e)
    }
}

impl std::fmt::Display for LimitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LimitError::Over(o) => o.fmt(f),
            LimitError::Failed(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for LimitError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LimitError::Over(o) => Some(o),
            LimitError::Failed(e) => Some(e),
        }
    }
}

mod group;
mod queue;
pub(crate) use queue::LimitCache;

#[cfg(test)]
mod tests {
    use super::*;

    /// A worker's ACL user (`acl::rules`, role worker) may run every limiter script: with the
    /// limiter's key pattern added, nothing else is needed.
    #[test]
    fn the_worker_role_may_run_every_limiter_script() {
        let rules = crate::acl::rules("p", "q", 1, crate::acl::Role::Worker).unwrap();
        for s in [
            &*SET_LIMITER,
            &*ACQUIRE_LIMIT,
            &*RELEASE_LIMIT,
            &*EXTEND_LIMIT,
            &*crate::scripts::LIMIT_BATCH,
        ] {
            for c in crate::acl::script_commands(s) {
                assert!(rules.contains(&format!(" +{c}")), "{}: {c}", s.name);
            }
        }
    }
}
