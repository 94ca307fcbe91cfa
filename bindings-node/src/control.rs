//! Queue control on `Queue` (core `control`): pause/resume (the queue or one group), the queue's
//! limits (running jobs, start rate, the groups' default concurrency and rate), one group's own
//! limits, and what a group holds. The settings live in Redis, so every worker of the queue, in
//! any process or runtime, obeys them, and they can change while workers run. Rates count job
//! starts in a sliding window (`{ max, perMs }`), or a token bucket (`{ max, perMs, burst }`);
//! `null` is no limit.

use napi::bindgen_prelude::*;
use napi_derive::napi;

use crate::convert::{count1, count1_u32, millis, opt_string, string, to_millis, Options};
use crate::error::{spawn, Res};
use crate::jobs::Queue;

/// A start rate: at most `max` job starts in any window of `perMs` milliseconds; with `burst`, a
/// token bucket holding up to `burst` starts, refilled at `max` per `perMs`.
#[napi(object, object_from_js = false)]
pub struct Rate {
    /// Most starts per window (at least 1); a bucket: the starts it refills per window.
    pub max: u32,
    /// The window, in ms (at least 1).
    pub per_ms: f64,
    /// A token bucket's capacity (the most starts at once); absent for a sliding window.
    pub burst: Option<u32>,
}

impl From<tideq::Rate> for Rate {
    fn from(r: tideq::Rate) -> Self {
        Rate {
            max: r.max,
            per_ms: to_millis(Some(r.per)).unwrap_or_default(),
            burst: r.burst,
        }
    }
}

/// The queue's limits, as `limits()` reports them; `null` is no limit.
#[napi(object, object_from_js = false, use_nullable = true)]
pub struct Limits {
    /// At most this many jobs of the queue running at once, across all workers.
    pub max_active: Option<u32>,
    /// At most this many job starts per window, across all workers.
    pub rate: Option<Rate>,
    /// Each group: at most this many of its jobs running at once (groups without their own
    /// `setGroupLimits`).
    pub group_concurrency: Option<u32>,
    /// Each group: at most this many starts per window (groups without their own).
    pub group_rate: Option<Rate>,
}

/// The queue's limits for `setLimits()`, which replaces all four: a key left out (or `null`)
/// is no limit.
// Declared for the TypeScript definitions only; `convert::Options` reads the fields one by one.
#[allow(dead_code)]
#[napi(object, object_from_js = false, object_to_js = false)]
pub struct LimitsOptions {
    /// At most this many jobs of the queue running at once, across all workers.
    #[napi(ts_type = "number | null")]
    pub max_active: Option<u32>,
    /// At most this many job starts per window, across all workers.
    #[napi(ts_type = "Rate | null")]
    pub rate: Option<()>,
    /// Each group: at most this many of its jobs running at once (groups without their own
    /// `setGroupLimits`).
    #[napi(ts_type = "number | null")]
    pub group_concurrency: Option<u32>,
    /// Each group: at most this many starts per window (groups without their own).
    #[napi(ts_type = "Rate | null")]
    pub group_rate: Option<()>,
}

const LIMITS_KEYS: &[&str] = &["maxActive", "rate", "groupConcurrency", "groupRate"];

/// One group's own limits (`setGroupLimits`); a key left out (or `null`) falls back to the
/// queue's default (`setLimits`' `groupConcurrency` / `groupRate`).
// Declared for the TypeScript definitions only; `convert::Options` reads the fields one by one.
#[allow(dead_code)]
#[napi(object, object_from_js = false, object_to_js = false)]
pub struct GroupLimits {
    /// At most this many of the group's jobs running at once.
    #[napi(ts_type = "number | null")]
    pub concurrency: Option<u32>,
    /// At most this many of the group's job starts per window.
    #[napi(ts_type = "Rate | null")]
    pub rate: Option<()>,
}

const GROUP_LIMITS_KEYS: &[&str] = &["concurrency", "rate"];

/// What a group holds and obeys now (`group(name)`).
#[napi(object, object_from_js = false, use_nullable = true)]
pub struct GroupInfo {
    /// The group's name.
    pub group: String,
    /// Jobs ready to start (not delayed).
    pub ready: i64,
    /// Jobs running.
    pub active: i64,
    /// The group is paused (`pauseGroup`).
    pub paused: bool,
    /// The concurrency limit in force: the group's own, else the queue's default; `null`: none.
    pub concurrency: Option<u32>,
    /// The start rate in force: the group's own, else the queue's default; `null`: none.
    pub rate: Option<Rate>,
    /// Milliseconds the longest-ready of its next 10 jobs has been ready (0 when none is). Read
    /// by `group(name)` only: `null` in `groups()` and `groupsPage()`.
    pub latency_ms: Option<f64>,
    /// The shared limiter the group's starts take from (`setGroupLimiter`), or `null`.
    pub limiter: Option<String>,
}

impl From<tideq::GroupInfo> for GroupInfo {
    fn from(g: tideq::GroupInfo) -> Self {
        GroupInfo {
            group: g.group,
            ready: g.ready as i64,
            active: g.active as i64,
            paused: g.paused,
            concurrency: g.concurrency,
            rate: g.rate.map(Rate::from),
            latency_ms: g.latency.map(|d| d.as_millis() as f64),
            limiter: g.limiter,
        }
    }
}

/// A rate argument `{ max, perMs, burst? }` (range checks are the core's: at least 1 start per
/// window of at least 1 ms, a burst of at least 1).
fn rate_arg(what: &str, v: &Unknown) -> Res<tideq::Rate> {
    let opts = Options::new(what, Some(v), &["max", "perMs", "burst"])?;
    Ok(tideq::Rate {
        max: opts.required("max", count1_u32)?,
        per: opts.required("perMs", millis)?,
        burst: opts.get("burst", count1_u32)?,
    })
}

fn limits_arg(v: Option<&Unknown>) -> Res<tideq::Limits> {
    let opts = Options::new("limits", v, LIMITS_KEYS)?;
    Ok(tideq::Limits {
        max_active: opts.get("maxActive", count1_u32)?,
        rate: opts.get("rate", rate_arg)?,
        group_concurrency: opts.get("groupConcurrency", count1_u32)?,
        group_rate: opts.get("groupRate", rate_arg)?,
    })
}

fn group_limits_arg(v: Option<&Unknown>) -> Res<tideq::GroupLimits> {
    let opts = Options::new("group limits", v, GROUP_LIMITS_KEYS)?;
    Ok(tideq::GroupLimits {
        concurrency: opts.get("concurrency", count1_u32)?,
        rate: opts.get("rate", rate_arg)?,
    })
}

fn group_name(v: &Unknown) -> Res<String> {
    string("group", v)
}

impl From<tideq::Limits> for Limits {
    fn from(l: tideq::Limits) -> Self {
        Limits {
            max_active: l.max_active,
            rate: l.rate.map(Rate::from),
            group_concurrency: l.group_concurrency,
            group_rate: l.group_rate.map(Rate::from),
        }
    }
}

#[napi]
impl Queue {
    /// Pauses the queue: workers (in every process) start none of its jobs until `resume()`.
    /// Running jobs finish; enqueues go on.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn pause<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, ()>> {
        let q = self.inner.clone();
        spawn(env, Ok(async move { Ok(q.pause().await?) }))
    }

    /// Resumes the queue; idle workers are woken at once.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn resume<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, ()>> {
        let q = self.inner.clone();
        spawn(env, Ok(async move { Ok(q.resume().await?) }))
    }

    /// Pauses one group: workers start none of its jobs (other groups go on) until
    /// `resumeGroup(group)`.
    #[napi(ts_args_type = "group: string", ts_return_type = "Promise<void>")]
    pub fn pause_group<'env>(
        &self,
        env: &'env Env,
        group: Unknown,
    ) -> Result<PromiseRaw<'env, ()>> {
        let q = self.inner.clone();
        spawn(
            env,
            group_name(&group).map(|g| async move { Ok(q.pause_group(&g).await?) }),
        )
    }

    /// Resumes one group.
    #[napi(ts_args_type = "group: string", ts_return_type = "Promise<void>")]
    pub fn resume_group<'env>(
        &self,
        env: &'env Env,
        group: Unknown,
    ) -> Result<PromiseRaw<'env, ()>> {
        let q = self.inner.clone();
        spawn(
            env,
            group_name(&group).map(|g| async move { Ok(q.resume_group(&g).await?) }),
        )
    }

    /// True when the queue is paused.
    #[napi(ts_return_type = "Promise<boolean>")]
    pub fn is_paused<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, bool>> {
        let q = self.inner.clone();
        spawn(env, Ok(async move { Ok(q.is_paused().await?) }))
    }

    /// Replaces the queue's limits, all four at once: a key left out (or `null`) removes that
    /// limit, so `setLimits({})` removes them all. To change one, pass the others as `limits()`
    /// returned them: `setLimits({ ...(await q.limits()), maxActive: 5 })`. Limited jobs wait
    /// where they are; idle workers wake exactly when the window allows the next start. Rejects
    /// with `INVALID_ARGUMENT` (nothing written) on a limit below 1 or a rate window below 1 ms.
    #[napi(
        ts_args_type = "limits: LimitsOptions",
        ts_return_type = "Promise<void>"
    )]
    pub fn set_limits<'env>(
        &self,
        env: &'env Env,
        limits: Unknown,
    ) -> Result<PromiseRaw<'env, ()>> {
        let q = self.inner.clone();
        spawn(
            env,
            limits_arg(Some(&limits)).map(|l| async move { Ok(q.set_limits(l).await?) }),
        )
    }

    /// The queue's limits (`null` fields: no limit).
    #[napi(ts_return_type = "Promise<Limits>")]
    pub fn limits<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, Limits>> {
        let q = self.inner.clone();
        spawn(env, Ok(async move { Ok(q.limits().await?.into()) }))
    }

    /// Makes every start of this queue's jobs take from the shared limiter `name` (defined with
    /// `Limiter`), across its workers and every queue that names it; `null` stops it. A
    /// concurrency limiter's slot is held while the job runs. Jobs over the limit stay ready, in
    /// their place. Rejects with `INVALID_ARGUMENT` (nothing written) for a limiter never
    /// defined.
    #[napi(ts_args_type = "name: string | null", ts_return_type = "Promise<void>")]
    pub fn set_limiter<'env>(&self, env: &'env Env, name: Unknown) -> Result<PromiseRaw<'env, ()>> {
        let q = self.inner.clone();
        spawn(
            env,
            opt_string("name", &name)
                .map(|n| async move { Ok(q.set_limiter(n.as_deref()).await?) }),
        )
    }

    /// The shared limiter this queue's starts take from, or `null`.
    #[napi(ts_return_type = "Promise<string | null>")]
    pub fn limiter_name<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, Option<String>>> {
        let q = self.inner.clone();
        spawn(env, Ok(async move { Ok(q.limiter_name().await?) }))
    }

    /// Makes every start of `group`'s jobs take from the shared limiter `name` (defined with
    /// `Limiter`), whichever queue the group is in; `null` stops it. A job over the limit is not
    /// run: it keeps its place in its group without using an attempt, and the group waits for
    /// room while the queue's other groups go on. Rejects with `INVALID_ARGUMENT` (nothing
    /// written) for a limiter never defined or a bad name.
    #[napi(
        ts_args_type = "group: string, name: string | null",
        ts_return_type = "Promise<void>"
    )]
    pub fn set_group_limiter<'env>(
        &self,
        env: &'env Env,
        group: Unknown,
        name: Unknown,
    ) -> Result<PromiseRaw<'env, ()>> {
        let q = self.inner.clone();
        let args = group_name(&group).and_then(|g| Ok((g, opt_string("name", &name)?)));
        spawn(
            env,
            args.map(|(g, n)| async move { Ok(q.set_group_limiter(&g, n.as_deref()).await?) }),
        )
    }

    /// Sets one group's own limits, replacing both: a key left out (or `null`) falls back to
    /// the queue's default (`groupConcurrency` / `groupRate` of `setLimits`). Rejects with
    /// `INVALID_ARGUMENT` (nothing written) on a bad group name or limit.
    #[napi(
        ts_args_type = "group: string, limits: GroupLimits",
        ts_return_type = "Promise<void>"
    )]
    pub fn set_group_limits<'env>(
        &self,
        env: &'env Env,
        group: Unknown,
        limits: Unknown,
    ) -> Result<PromiseRaw<'env, ()>> {
        let q = self.inner.clone();
        let args = group_name(&group).and_then(|g| Ok((g, group_limits_arg(Some(&limits))?)));
        spawn(
            env,
            args.map(|(g, l)| async move { Ok(q.set_group_limits(&g, l).await?) }),
        )
    }

    /// What group `name` holds (ready and running jobs) and obeys (paused, the limits in
    /// force).
    #[napi(ts_args_type = "name: string", ts_return_type = "Promise<GroupInfo>")]
    pub fn group<'env>(
        &self,
        env: &'env Env,
        name: Unknown,
    ) -> Result<PromiseRaw<'env, GroupInfo>> {
        let q = self.inner.clone();
        spawn(
            env,
            group_name(&name).map(|g| async move { Ok(q.group(&g).await?.into()) }),
        )
    }

    /// Every group the queue knows (with ready or running jobs, or settings of its own), by
    /// name, each as `group(name)` tells it.
    #[napi(ts_return_type = "Promise<GroupInfo[]>")]
    pub fn groups<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, Vec<GroupInfo>>> {
        let q = self.inner.clone();
        spawn(
            env,
            Ok(async move { Ok(q.groups().await?.into_iter().map(Into::into).collect()) }),
        )
    }

    /// About `count` (1 to 250, default 100) of the groups `groups()` lists, from `cursor`
    /// (absent or `null`: the start), in no particular order, and the cursor of the next page
    /// (`null` after the last). Each call costs about `count` groups' work, however many the
    /// queue has; `groups()` reads them all.
    #[napi(
        ts_args_type = "options?: { cursor?: string | null; count?: number }",
        ts_return_type = "Promise<GroupPage>"
    )]
    pub fn groups_page<'env>(
        &self,
        env: &'env Env,
        options: Option<Unknown>,
    ) -> Result<PromiseRaw<'env, GroupPage>> {
        let q = self.inner.clone();
        let args = page_args("groupsPage options", options.as_ref());
        spawn(
            env,
            args.map(|(cursor, count)| async move {
                let page = q.groups_page(cursor.as_deref(), count).await?;
                Ok(GroupPage {
                    groups: page.groups.into_iter().map(Into::into).collect(),
                    cursor: page.cursor,
                })
            }),
        )
    }
}

/// A page of groups (`groupsPage`) and the cursor of the next page.
#[napi(object, object_from_js = false, use_nullable = true)]
pub struct GroupPage {
    /// The page's groups, in no particular order.
    pub groups: Vec<GroupInfo>,
    /// Give it to the next `groupsPage` call; `null` when this was the last page.
    pub cursor: Option<String>,
}

/// `groupsPage` options: the cursor (`null`: the start) and the count (default 100).
pub(crate) fn page_args(what: &str, options: Option<&Unknown>) -> Res<(Option<String>, usize)> {
    let opts = Options::new(what, options, &["cursor", "count"])?;
    let cursor = opts.get("cursor", string)?;
    let count = opts
        .get("count", count1)?
        .unwrap_or(tideq::DEFAULT_GROUP_PAGE);
    Ok((cursor, count))
}
