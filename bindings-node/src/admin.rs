//! Walking a state's jobs by cursor on `Queue` (core `admin`): `jobsPage`, whose walks never list
//! a job twice and never skip one that stayed in the state, while workers move jobs.

use napi::bindgen_prelude::*;
use napi_derive::napi;

use crate::convert::{count, string, Options};
use crate::error::spawn;
use crate::job::JobInfo;
use crate::jobs::Queue;

#[napi]
impl Queue {
    /// Up to `limit` (1 to 1000, default 100) of the jobs in `state` after `cursor` (absent or
    /// `null`: the start), and the cursor of the next page (`null` after the last). A walk page
    /// by page while workers run never lists a job twice and never skips one that stayed in the
    /// state for the whole walk: the cursor is the last job's place in the state's order
    /// (`delayed` by due time, `dead` by time of death, `completed` newest first, `active` by
    /// id, `ready` as workers take them with grouped jobs last in no particular order). A job
    /// that left the state and came back may show again. A page may hold fewer than `limit` jobs
    /// before the end; only a `null` cursor ends the walk. Rejects with `INVALID_ARGUMENT` for
    /// an unknown state, a bad `limit`, or a cursor not made by a walk of this queue's `state`.
    #[napi(
        ts_args_type = "state: 'delayed' | 'ready' | 'active' | 'dead' | 'completed', options?: { cursor?: string | null; limit?: number }",
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

/// A page of one state's jobs (`jobsPage`) and the cursor of the next page.
#[napi(object, object_from_js = false, use_nullable = true)]
pub struct JobPage {
    /// The page's jobs, in the state's order.
    pub jobs: Vec<JobInfo>,
    /// Give it to the next `jobsPage` call; `null` when this was the last page.
    pub cursor: Option<String>,
}
