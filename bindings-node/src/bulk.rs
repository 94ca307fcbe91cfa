//! Bulk actions on `Queue` (core `bulk`, `obliterate`): retry, delete or cancel many ids
//! (`retryJobs`, `deleteJobs`, `cancelJobs`), every job a search finds (`retryFound`,
//! `deleteFound`, `cancelFound`, and a page at a time: `bulkFound`), `promoteAll`, `clean`,
//! `obliterate`.

use napi::bindgen_prelude::*;
use napi_derive::napi;

use crate::convert::{boolean, millis, string, strings, Options};
use crate::error::{spawn, Res};
use crate::jobs::Queue;

/// What a by-id bulk call did to one id.
#[napi(object, object_from_js = false, use_nullable = true)]
pub struct BulkItem {
    pub id: String,
    /// `done`, `wrong_state` (the job is in a state the action does not apply to: `state`) or
    /// `unknown` (no such job).
    #[napi(ts_type = "'done' | 'wrong_state' | 'unknown'")]
    pub outcome: String,
    /// For `wrong_state`, the job's state.
    pub state: Option<String>,
}

/// What a bulk action on a search did.
#[napi(object, object_from_js = false, use_nullable = true)]
pub struct BulkCounts {
    /// Jobs acted on.
    pub done: i64,
    /// Jobs found that had left the action's states (or the queue) before it reached them.
    pub skipped: i64,
}

/// One page of a bulk action on a search (`bulkFound`).
#[napi(object, object_from_js = false, use_nullable = true)]
pub struct BulkPage {
    pub done: i64,
    pub skipped: i64,
    /// Give it to the next `bulkFound` call (same action and filter); `null` when done.
    pub cursor: Option<String>,
}

/// Options of `retryFound`, `deleteFound`, `cancelFound` and `bulkFound`: the search's filter
/// (as `findJobs` takes it), and for `bulkFound` where it goes on.
// Declared for the TypeScript definitions only.
#[allow(dead_code)]
#[napi(object, object_from_js = false, object_to_js = false)]
pub struct BulkFoundOptions {
    pub task: Option<String>,
    pub group: Option<String>,
    pub contains: Option<String>,
    /// A state the action applies to; default: the action's own states.
    #[napi(ts_type = "'delayed' | 'ready' | 'active' | 'dead' | 'completed'")]
    pub state: Option<String>,
    /// `bulkFound` only: the cursor the previous page returned.
    #[napi(ts_type = "string | null")]
    pub cursor: Option<String>,
}

/// Options of `obliterate`.
// Declared for the TypeScript definitions only.
#[allow(dead_code)]
#[napi(object, object_from_js = false, object_to_js = false)]
pub struct ObliterateOptions {
    /// Even while workers are live (their running jobs are lost). Default false.
    pub force: Option<bool>,
}

fn items(items: Vec<tideq::BulkItem>) -> Vec<BulkItem> {
    items
        .into_iter()
        .map(|i| BulkItem {
            id: i.id,
            outcome: i.outcome.as_str().into(),
            state: i.state.map(|s| s.as_str().into()),
        })
        .collect()
}

/// The filter (and cursor) of a bulk search call.
fn found_options(what: &str, options: Option<&Unknown>) -> Res<(tideq::JobFilter, Option<String>)> {
    let o = Options::new(
        what,
        options,
        &["task", "group", "state", "contains", "cursor"],
    )?;
    let state = match o.get("state", string)? {
        Some(s) => Some(tideq::JobState::parse(&s)?),
        None => None,
    };
    Ok((
        tideq::JobFilter {
            state,
            task: o.get("task", string)?,
            group: o.get("group", string)?,
            contains: o.get("contains", string)?,
        },
        o.get("cursor", string)?,
    ))
}

#[napi]
impl Queue {
    /// Retries the dead jobs of `ids` (at most 1000): each back to ready, attempts reset.
    /// Resolves with, per id in order, what happened. More than 1000 ids or an invalid one
    /// rejects with `INVALID_ARGUMENT`, nothing done.
    #[napi(ts_args_type = "ids: string[]", ts_return_type = "Promise<BulkItem[]>")]
    pub fn retry_jobs<'env>(
        &self,
        env: &'env Env,
        ids: Unknown,
    ) -> Result<PromiseRaw<'env, Vec<BulkItem>>> {
        let q = self.inner.clone();
        let ids = strings("ids", &ids);
        spawn(
            env,
            ids.map(|ids| async move { Ok(items(q.retry_jobs(&ids).await?)) }),
        )
    }

    /// Deletes the finished (dead or completed) jobs of `ids` (at most 1000) and all kept for
    /// them; resolves with, per id, what happened.
    #[napi(ts_args_type = "ids: string[]", ts_return_type = "Promise<BulkItem[]>")]
    pub fn delete_jobs<'env>(
        &self,
        env: &'env Env,
        ids: Unknown,
    ) -> Result<PromiseRaw<'env, Vec<BulkItem>>> {
        let q = self.inner.clone();
        let ids = strings("ids", &ids);
        spawn(
            env,
            ids.map(|ids| async move { Ok(items(q.delete_jobs(&ids).await?)) }),
        )
    }

    /// Cancels the delayed, ready or active jobs of `ids` (at most 1000); resolves with, per
    /// id, what happened.
    #[napi(ts_args_type = "ids: string[]", ts_return_type = "Promise<BulkItem[]>")]
    pub fn cancel_jobs<'env>(
        &self,
        env: &'env Env,
        ids: Unknown,
    ) -> Result<PromiseRaw<'env, Vec<BulkItem>>> {
        let q = self.inner.clone();
        let ids = strings("ids", &ids);
        spawn(
            env,
            ids.map(|ids| async move { Ok(items(q.cancel_jobs(&ids).await?)) }),
        )
    }

    /// One page of `action` (`retry`, `delete`, `cancel` or `promote`) on the jobs a search
    /// finds; resolves with the counts and the cursor of the next page (`null`: done).
    #[napi(
        ts_args_type = "action: 'retry' | 'delete' | 'cancel' | 'promote', options?: BulkFoundOptions",
        ts_return_type = "Promise<BulkPage>"
    )]
    pub fn bulk_found<'env>(
        &self,
        env: &'env Env,
        action: String,
        options: Option<Unknown>,
    ) -> Result<PromiseRaw<'env, BulkPage>> {
        let q = self.inner.clone();
        let args = tideq::BulkAction::parse(&action)
            .map_err(Into::into)
            .and_then(|a| Ok((a, found_options("bulkFound options", options.as_ref())?)));
        spawn(
            env,
            args.map(|(action, (filter, cursor))| async move {
                let p = q.bulk_found(action, &filter, cursor.as_deref()).await?;
                Ok(BulkPage {
                    done: p.done as i64,
                    skipped: p.skipped as i64,
                    cursor: p.cursor,
                })
            }),
        )
    }

    /// Retries every dead job a search finds, a page at a time.
    #[napi(
        ts_args_type = "options?: BulkFoundOptions",
        ts_return_type = "Promise<BulkCounts>"
    )]
    pub fn retry_found<'env>(
        &self,
        env: &'env Env,
        options: Option<Unknown>,
    ) -> Result<PromiseRaw<'env, BulkCounts>> {
        self.found(env, tideq::BulkAction::Retry, options)
    }

    /// Deletes every finished job a search finds, a page at a time.
    #[napi(
        ts_args_type = "options?: BulkFoundOptions",
        ts_return_type = "Promise<BulkCounts>"
    )]
    pub fn delete_found<'env>(
        &self,
        env: &'env Env,
        options: Option<Unknown>,
    ) -> Result<PromiseRaw<'env, BulkCounts>> {
        self.found(env, tideq::BulkAction::Delete, options)
    }

    /// Cancels every delayed, ready or active job a search finds, a page at a time.
    #[napi(
        ts_args_type = "options?: BulkFoundOptions",
        ts_return_type = "Promise<BulkCounts>"
    )]
    pub fn cancel_found<'env>(
        &self,
        env: &'env Env,
        options: Option<Unknown>,
    ) -> Result<PromiseRaw<'env, BulkCounts>> {
        self.found(env, tideq::BulkAction::Cancel, options)
    }

    /// Runs every delayed job now; resolves with how many.
    #[napi(ts_return_type = "Promise<number>")]
    pub fn promote_all<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, i64>> {
        let q = self.inner.clone();
        spawn(env, Ok(async move { Ok(q.promote_all().await? as i64) }))
    }

    /// Deletes the `completed` or `dead` jobs that finished more than `olderThanMs`
    /// milliseconds ago (by the Redis clock), in calls of 1000; resolves with how many.
    #[napi(
        ts_args_type = "state: 'completed' | 'dead', olderThanMs: number",
        ts_return_type = "Promise<number>"
    )]
    pub fn clean<'env>(
        &self,
        env: &'env Env,
        state: String,
        older_than_ms: Unknown,
    ) -> Result<PromiseRaw<'env, i64>> {
        let q = self.inner.clone();
        let args = tideq::JobState::parse(&state)
            .map_err(Into::into)
            .and_then(|s| Ok((s, millis("olderThanMs", &older_than_ms)?)));
        spawn(
            env,
            args.map(|(state, older)| async move { Ok(q.clean(state, older).await? as i64) }),
        )
    }

    /// Deletes the queue: every key of every shard (jobs, data, schedules, groups, history,
    /// settings); resolves with how many keys. Rejects with `INVALID_ARGUMENT` (nothing
    /// written) while workers are live, unless `force`. Enqueues during the call are refused;
    /// afterwards they start a fresh queue.
    #[napi(
        ts_args_type = "options?: ObliterateOptions",
        ts_return_type = "Promise<number>"
    )]
    pub fn obliterate<'env>(
        &self,
        env: &'env Env,
        options: Option<Unknown>,
    ) -> Result<PromiseRaw<'env, i64>> {
        let q = self.inner.clone();
        let force = Options::new("obliterate options", options.as_ref(), &["force"])
            .and_then(|o| Ok(o.get("force", boolean)?.unwrap_or(false)));
        spawn(
            env,
            force.map(|force| async move { Ok(q.obliterate(force).await? as i64) }),
        )
    }
}

impl Queue {
    fn found<'env>(
        &self,
        env: &'env Env,
        action: tideq::BulkAction,
        options: Option<Unknown>,
    ) -> Result<PromiseRaw<'env, BulkCounts>> {
        let q = self.inner.clone();
        let args = found_options("options", options.as_ref());
        spawn(
            env,
            args.map(|(filter, _)| async move {
                let c = match action {
                    tideq::BulkAction::Retry => q.retry_found(&filter).await?,
                    tideq::BulkAction::Delete => q.delete_found(&filter).await?,
                    _ => q.cancel_found(&filter).await?,
                };
                Ok(BulkCounts {
                    done: c.done as i64,
                    skipped: c.skipped as i64,
                })
            }),
        )
    }
}
