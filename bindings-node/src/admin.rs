//! `Queue`'s operator side (core `admin`): a job by id (`get`), one state's jobs by offset
//! (`jobs`) or by cursor (`jobsPage`, whose walks never list a job twice and never skip one that
//! stayed in the state, while workers move jobs), a search by task or group (`findJobs`),
//! `cancel`, `promote` (run a delayed job now), `delete` (a finished job), the dead letters
//! (list, requeue, purge) and `stats`.

use napi::bindgen_prelude::*;
use napi_derive::napi;

use crate::convert::{count, string, Options};
use crate::error::spawn;
use crate::jobs::{job_id, Queue};
use crate::results::{JobInfo, JobPage, JobSearch, JobStats};

#[napi]
impl Queue {
    /// A job's state, payload, attempts, last error and timestamps; `null` if the id is unknown
    /// (or the completed job is no longer retained).
    #[napi(
        ts_args_type = "id: string",
        ts_return_type = "Promise<JobInfo | null>"
    )]
    pub fn get<'env>(
        &self,
        env: &'env Env,
        id: Unknown,
    ) -> Result<PromiseRaw<'env, Option<JobInfo>>> {
        let q = self.inner.clone();
        spawn(
            env,
            job_id(&id).map(|id| async move { Ok(q.get(&id).await?.map(JobInfo::from)) }),
        )
    }

    /// Cancels a job: a delayed or ready one is removed; a running one is asked to stop: its
    /// worker aborts `job.signal` within a second, and the job ends cancelled when its handler
    /// settles, whatever the outcome, never retried (a handler that finished first completes
    /// it). Either way `get` then gives `null` and `stats().cancelled` counts it. Rejects with
    /// `JOB_NOT_CANCELLABLE` when it is dead or completed, and `JOB_NOT_FOUND` when there is no
    /// such job.
    #[napi(ts_args_type = "id: string", ts_return_type = "Promise<void>")]
    pub fn cancel<'env>(&self, env: &'env Env, id: Unknown) -> Result<PromiseRaw<'env, ()>> {
        let q = self.inner.clone();
        spawn(
            env,
            job_id(&id).map(|id| async move { Ok(q.cancel(&id).await?) }),
        )
    }

    /// Runs a delayed job now: a job waiting for its due time, a retry's backoff or a snooze
    /// becomes ready at once, with its priority and group (their limits apply when a worker
    /// fetches it), and idle workers are woken. Rejects with `JOB_WRONG_STATE` for a job in any
    /// other state, and `JOB_NOT_FOUND` when there is no such job.
    #[napi(ts_args_type = "id: string", ts_return_type = "Promise<void>")]
    pub fn promote<'env>(&self, env: &'env Env, id: Unknown) -> Result<PromiseRaw<'env, ()>> {
        let q = self.inner.clone();
        spawn(
            env,
            job_id(&id).map(|id| async move { Ok(q.promote(&id).await?) }),
        )
    }

    /// Deletes a finished (dead or completed) job and everything kept for it: its data, result
    /// and place in the dead letters or completed jobs go, and its id is forgotten, so `get`
    /// gives `null` and the id may be enqueued again; lifetime counters stay. Rejects with
    /// `JOB_WRONG_STATE` for a pending or running job (cancel it instead), and `JOB_NOT_FOUND`
    /// when there is no such job.
    #[napi(ts_args_type = "id: string", ts_return_type = "Promise<void>")]
    pub fn delete<'env>(&self, env: &'env Env, id: Unknown) -> Result<PromiseRaw<'env, ()>> {
        let q = self.inner.clone();
        spawn(
            env,
            job_id(&id).map(|id| async move { Ok(q.delete(&id).await?) }),
        )
    }

    /// Up to `limit` (1 to 1000, default 50) jobs of `task` and `group` (absent: any), whose
    /// payload holds `contains` (absent: any), after `cursor`, the cursor to go on with (`null`:
    /// the search is over) and how many jobs the call looked at (`scanned`). The search walks
    /// `state`'s jobs, or (absent) every state in turn (delayed, ready, active, dead, completed),
    /// as `jobsPage` does, and looks at no more than 2000 jobs a call however big the queue: a
    /// page may hold fewer than `limit` jobs, even none, before the end; only a `null` cursor
    /// ends the search. Give the cursor back with the same filter. Rejects with
    /// `INVALID_ARGUMENT` for an empty `task`, `group` or `contains`, an unknown state, a bad
    /// `limit` or a cursor not made by this search. Writes nothing.
    #[napi(
        ts_args_type = "options?: FindJobsOptions",
        ts_return_type = "Promise<JobSearch>"
    )]
    pub fn find_jobs<'env>(
        &self,
        env: &'env Env,
        options: Option<Unknown>,
    ) -> Result<PromiseRaw<'env, JobSearch>> {
        let q = self.inner.clone();
        let args = Options::new(
            "findJobs options",
            options.as_ref(),
            &["task", "group", "state", "contains", "cursor", "limit"],
        )
        .and_then(|o| {
            let state = match o.get("state", string)? {
                Some(s) => Some(tideq::JobState::parse(&s)?),
                None => None,
            };
            let filter = tideq::JobFilter {
                state,
                task: o.get("task", string)?,
                group: o.get("group", string)?,
                contains: o.get("contains", string)?,
            };
            Ok((
                filter,
                o.get("cursor", string)?,
                o.get("limit", count)?.unwrap_or(50),
            ))
        });
        spawn(
            env,
            args.map(|(filter, cursor, limit)| async move {
                let page = q.find_jobs(&filter, cursor.as_deref(), limit).await?;
                Ok(JobSearch {
                    jobs: page.jobs.into_iter().map(JobInfo::from).collect(),
                    cursor: page.cursor,
                    scanned: page.scanned as i64,
                })
            }),
        )
    }

    /// The jobs in one state, `limit` (default 100, at most 1000) from `offset` (default 0):
    /// `delayed` by due time, `ready` in the order workers take them (plain, then by priority,
    /// then group by group), `active` by lease deadline, `dead` oldest death first, `completed`
    /// newest first, `waiting` (flow jobs waiting for their children) by id; a sharded queue
    /// lists shard by shard. Rejects with `INVALID_ARGUMENT` for an unknown state, a `limit` over
    /// 1000 or an `offset` of ready or waiting jobs past 10,000 (skipping them looks at every
    /// group they are in, or reads every one before). Offsets shift as workers move jobs, so a walk of pages
    /// by offset can list a job twice or skip one: walk a state with `jobsPage`.
    #[napi(
        ts_args_type = "state: 'delayed' | 'ready' | 'active' | 'dead' | 'completed' | 'waiting', options?: JobsOptions",
        ts_return_type = "Promise<JobInfo[]>"
    )]
    pub fn jobs<'env>(
        &self,
        env: &'env Env,
        state: Unknown,
        options: Option<Unknown>,
    ) -> Result<PromiseRaw<'env, Vec<JobInfo>>> {
        let q = self.inner.clone();
        let args = string("state", &state).and_then(|state| {
            let state = tideq::JobState::parse(&state)?;
            let o = Options::new("jobs options", options.as_ref(), &["offset", "limit"])?;
            Ok((
                state,
                o.get("offset", count)?.unwrap_or(0),
                o.get("limit", count)?.unwrap_or(100),
            ))
        });
        spawn(
            env,
            args.map(|(state, offset, limit)| async move {
                Ok(q.jobs(state, offset, limit)
                    .await?
                    .into_iter()
                    .map(JobInfo::from)
                    .collect())
            }),
        )
    }

    /// Dead-lettered jobs, oldest death first: `limit` (default 100) from `offset` (default 0).
    #[napi(
        ts_args_type = "options?: DeadLettersOptions",
        ts_return_type = "Promise<JobInfo[]>"
    )]
    pub fn dead_letters<'env>(
        &self,
        env: &'env Env,
        options: Option<Unknown>,
    ) -> Result<PromiseRaw<'env, Vec<JobInfo>>> {
        let q = self.inner.clone();
        let args = Options::new(
            "deadLetters options",
            options.as_ref(),
            &["offset", "limit"],
        )
        .and_then(|o| {
            Ok((
                o.get("offset", count)?.unwrap_or(0),
                o.get("limit", count)?.unwrap_or(100),
            ))
        });
        spawn(
            env,
            args.map(|(offset, limit)| async move {
                Ok(q.dead_letters(offset, limit)
                    .await?
                    .into_iter()
                    .map(JobInfo::from)
                    .collect())
            }),
        )
    }

    /// Moves a dead job back to ready with its attempts reset. Rejects with `JOB_NOT_FOUND` if
    /// no dead job has this id.
    #[napi(ts_args_type = "id: string", ts_return_type = "Promise<void>")]
    pub fn requeue<'env>(&self, env: &'env Env, id: Unknown) -> Result<PromiseRaw<'env, ()>> {
        let q = self.inner.clone();
        spawn(
            env,
            job_id(&id).map(|id| async move { Ok(q.requeue(&id).await?) }),
        )
    }

    /// Requeues every dead job; resolves with how many.
    #[napi(ts_return_type = "Promise<number>")]
    pub fn requeue_all<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, i64>> {
        let q = self.inner.clone();
        spawn(env, Ok(async move { Ok(q.requeue_all().await? as i64) }))
    }

    /// Deletes every dead job; resolves with how many.
    #[napi(ts_return_type = "Promise<number>")]
    pub fn purge<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, i64>> {
        let q = self.inner.clone();
        spawn(env, Ok(async move { Ok(q.purge().await? as i64) }))
    }

    /// Jobs per state and the queue's lifetime counters.
    #[napi(ts_return_type = "Promise<JobStats>")]
    pub fn stats<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, JobStats>> {
        let q = self.inner.clone();
        spawn(env, Ok(async move { Ok(q.stats().await?.into()) }))
    }

    /// Up to `limit` (1 to 1000, default 100) of the jobs in `state` after `cursor` (absent or
    /// `null`: the start), and the cursor of the next page (`null` after the last). A walk page
    /// by page while workers run never lists a job twice and never skips one that stayed in the
    /// state for the whole walk: the cursor is the last job's place in the state's order
    /// (`delayed` by due time, `dead` by time of death, `completed` newest first, `active` and
    /// `waiting` by id, `ready` as workers take them with grouped jobs last in no particular order). A job
    /// that left the state and came back may show again. A page may hold fewer than `limit` jobs
    /// before the end; only a `null` cursor ends the walk. Rejects with `INVALID_ARGUMENT` for
    /// an unknown state, a bad `limit`, or a cursor not made by a walk of this queue's `state`.
    #[napi(
        ts_args_type = "state: 'delayed' | 'ready' | 'active' | 'dead' | 'completed' | 'waiting', options?: { cursor?: string | null; limit?: number }",
        ts_return_type = "Promise<JobPage>"
    )]
    pub fn jobs_page<'env>(
        &self,
        env: &'env Env,
        state: Unknown,
        options: Option<Unknown>,
    ) -> Result<PromiseRaw<'env, JobPage>> {
        let q = self.inner.clone();
        let args = string("state", &state).and_then(|state| {
            let state = tideq::JobState::parse(&state)?;
            let o = Options::new("jobsPage options", options.as_ref(), &["cursor", "limit"])?;
            Ok((
                state,
                o.get("cursor", string)?,
                o.get("limit", count)?.unwrap_or(100),
            ))
        });
        spawn(
            env,
            args.map(|(state, cursor, limit)| async move {
                let page = q.jobs_page(state, cursor.as_deref(), limit).await?;
                Ok(JobPage {
                    jobs: page.jobs.into_iter().map(JobInfo::from).collect(),
                    cursor: page.cursor,
                })
            }),
        )
    }
}

/// Options of `jobs(state, options)`.
// Declared for the TypeScript definitions only.
#[allow(dead_code)]
#[napi(object, object_from_js = false, object_to_js = false)]
pub struct JobsOptions {
    /// Jobs of the state to skip (in its order). Default 0.
    pub offset: Option<u32>,
    /// Most jobs returned, at most 1000. Default 100.
    pub limit: Option<u32>,
}

/// Options of `findJobs(options)`: the filter, and where the search goes on.
// Declared for the TypeScript definitions only.
#[allow(dead_code)]
#[napi(object, object_from_js = false, object_to_js = false)]
pub struct FindJobsOptions {
    /// Only jobs of this task (not empty). Default: any.
    pub task: Option<String>,
    /// Only jobs of this group (not empty). Default: any.
    pub group: Option<String>,
    /// Only jobs whose payload (a task's data, as JSON or MessagePack) holds this text, e.g. an
    /// address (not empty). Default: any.
    pub contains: Option<String>,
    /// Only jobs in this state (`waiting`: flow jobs waiting for their children). Default: the
    /// states delayed, ready, active, dead and completed in turn.
    #[napi(ts_type = "'delayed' | 'ready' | 'active' | 'dead' | 'completed' | 'waiting'")]
    pub state: Option<String>,
    /// The cursor a previous call returned, with the same filter; absent or `null`: the start.
    #[napi(ts_type = "string | null")]
    pub cursor: Option<String>,
    /// Most jobs returned, 1 to 1000. Default 50.
    pub limit: Option<u32>,
}

/// Options of `deadLetters(options)`.
// Declared for the TypeScript definitions only.
#[allow(dead_code)]
#[napi(object, object_from_js = false, object_to_js = false)]
pub struct DeadLettersOptions {
    /// Dead jobs to skip (oldest death first). Default 0.
    pub offset: Option<u32>,
    /// Most jobs returned. Default 100.
    pub limit: Option<u32>,
}
