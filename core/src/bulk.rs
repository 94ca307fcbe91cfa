//! Bulk actions on a job queue: retry, delete or cancel many jobs by id (at most
//! [`MAX_BULK_IDS`] a call) or every job a [`find_jobs`](Queue::find_jobs) search finds (a page
//! a call, resumable by the search's cursor), promote every delayed job, and delete the finished
//! jobs older than a time (`clean`). Every step is one of the one-job scripts (`requeue_dead.lua`,
//! `delete_job.lua`, `cancel_job.lua`, `promote_job.lua`) or a bounded read, so no Redis call grows
//! with the queue. Deleting a whole queue (`obliterate`) is in `obliterate.rs`.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::{Error, ErrorKind, Result};
use crate::job::{validate_job_id, JobState, MAX_PAGE};
use crate::jobs::Queue;
use crate::scripts::{CLEAN_JOBS, DELETE_JOB, PROMOTE_JOB, REQUEUE_DEAD};
use crate::search::JobFilter;

/// The most ids one by-id bulk call takes ([`Queue::retry_jobs`], [`Queue::delete_jobs`],
/// [`Queue::cancel_jobs`]).
pub const MAX_BULK_IDS: usize = 1000;

/// One-job scripts in flight at a time in a bulk call.
const IN_FLIGHT: usize = 16;

/// Jobs `clean` deletes per script call (one call's cost stays well under 10 ms).
const CLEAN_CALL: usize = 250;

/// What a bulk call does to each job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BulkAction {
    /// A dead job back to ready, its attempts reset (as [`Queue::requeue`]).
    Retry,
    /// A finished (dead or completed) job deleted with its data (as [`Queue::delete`]).
    Delete,
    /// A delayed, ready or active job cancelled (as [`Queue::cancel`]).
    Cancel,
    /// A delayed job made ready now (as [`Queue::promote`]).
    Promote,
}

impl BulkAction {
    /// `retry`, `delete`, `cancel` or `promote`.
    pub fn as_str(self) -> &'static str {
        match self {
            BulkAction::Retry => "retry",
            BulkAction::Delete => "delete",
            BulkAction::Cancel => "cancel",
            BulkAction::Promote => "promote",
        }
    }

    /// The action named `name`; `INVALID_ARGUMENT` otherwise.
    pub fn parse(name: &str) -> Result<Self> {
        [Self::Retry, Self::Delete, Self::Cancel, Self::Promote]
            .into_iter()
            .find(|a| a.as_str() == name)
            .ok_or_else(|| {
                Error::invalid(format!(
                    "unknown bulk action {name:?}; actions: retry, delete, cancel, promote"
                ))
            })
    }

    /// The states a job must be in for the action to apply.
    pub fn states(self) -> &'static [JobState] {
        match self {
            BulkAction::Retry => &[JobState::Dead],
            BulkAction::Delete => &[JobState::Dead, JobState::Completed],
            BulkAction::Cancel => &[JobState::Delayed, JobState::Ready, JobState::Active],
            BulkAction::Promote => &[JobState::Delayed],
        }
    }
}

/// What a bulk action did to one job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BulkOutcome {
    /// Done.
    Done,
    /// The job is not in a state the action applies to ([`BulkItem::state`] says which).
    WrongState,
    /// No such job (or no longer retained).
    Unknown,
}

impl BulkOutcome {
    /// `done`, `wrong_state` or `unknown`.
    pub fn as_str(self) -> &'static str {
        match self {
            BulkOutcome::Done => "done",
            BulkOutcome::WrongState => "wrong_state",
            BulkOutcome::Unknown => "unknown",
        }
    }
}

/// One id of a by-id bulk call and what happened to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BulkItem {
    pub id: String,
    pub outcome: BulkOutcome,
    /// For [`BulkOutcome::WrongState`], the state the job is in.
    pub state: Option<JobState>,
}

/// One page of a bulk action on a search's jobs ([`Queue::bulk_found`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BulkPage {
    /// Jobs acted on.
    pub done: u64,
    /// Jobs found that had left the action's states (or the queue) before it reached them.
    pub skipped: u64,
    /// Give it to the next call (same action and filter); `None` when the search is over.
    pub cursor: Option<String>,
}

/// What a whole bulk action on a search did ([`Queue::retry_found`] and its kin).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BulkCounts {
    pub done: u64,
    pub skipped: u64,
}

impl Queue {
    /// Retries the dead jobs of `ids` (at most [`MAX_BULK_IDS`]): each back to ready with its
    /// attempts reset, as [`requeue`](Self::requeue) does. Returns, per id in order, what
    /// happened. Too many ids or an invalid one is `INVALID_ARGUMENT`, nothing done.
    pub async fn retry_jobs(&self, ids: &[String]) -> Result<Vec<BulkItem>> {
        self.op("retry_jobs", self.act_on_ids(BulkAction::Retry, ids))
            .await
    }

    /// Deletes the finished (dead or completed) jobs of `ids` (at most [`MAX_BULK_IDS`]) with
    /// everything kept for them, as [`delete`](Self::delete) does. Returns, per id in order, what
    /// happened. Too many ids or an invalid one is `INVALID_ARGUMENT`, nothing done.
    pub async fn delete_jobs(&self, ids: &[String]) -> Result<Vec<BulkItem>> {
        self.op("delete_jobs", self.act_on_ids(BulkAction::Delete, ids))
            .await
    }

    /// Cancels the delayed, ready or active jobs of `ids` (at most [`MAX_BULK_IDS`]), as
    /// [`cancel`](Self::cancel) does. Returns, per id in order, what happened. Too many ids or an
    /// invalid one is `INVALID_ARGUMENT`, nothing done.
    pub async fn cancel_jobs(&self, ids: &[String]) -> Result<Vec<BulkItem>> {
        self.op("cancel_jobs", self.act_on_ids(BulkAction::Cancel, ids))
            .await
    }

    /// One page of `action` on the jobs `filter` finds: the next page of
    /// [`find_jobs`](Self::find_jobs) after `cursor` (`None`: from the start; at most
    /// [`MAX_PAGE`] jobs, [`SEARCH_SCAN`](crate::SEARCH_SCAN) looked at) acted on, and the cursor
    /// to go on with (`None`: done). The filter's state must be one the action applies to; left
    /// out, the action's own state (or states) is searched. The job a list's cursor names (the
    /// last ready or completed job listed, the walk's place) is acted on by the next call.
    pub async fn bulk_found(
        &self,
        action: BulkAction,
        filter: &JobFilter,
        cursor: Option<&str>,
    ) -> Result<BulkPage> {
        self.op("bulk_found", self.found_page(action, filter, cursor))
            .await
    }

    /// Retries every dead job `filter` finds, a page at a time (see [`bulk_found`](Self::bulk_found)
    /// (Self::bulk_found)).
    pub async fn retry_found(&self, filter: &JobFilter) -> Result<BulkCounts> {
        self.op("retry_found", self.found_all(BulkAction::Retry, filter))
            .await
    }

    /// Deletes every finished job `filter` finds, a page at a time (see [`bulk_found`](Self::bulk_found)
    /// (Self::bulk_found)).
    pub async fn delete_found(&self, filter: &JobFilter) -> Result<BulkCounts> {
        self.op("delete_found", self.found_all(BulkAction::Delete, filter))
            .await
    }

    /// Cancels every delayed, ready or active job `filter` finds, a page at a time (see
    /// [`bulk_found`](Self::bulk_found)).
    pub async fn cancel_found(&self, filter: &JobFilter) -> Result<BulkCounts> {
        self.op("cancel_found", self.found_all(BulkAction::Cancel, filter))
            .await
    }

    /// Runs every delayed job now (as [`promote`](Self::promote), a page of the delayed jobs at
    /// a time); returns how many.
    pub async fn promote_all(&self) -> Result<u64> {
        self.op("promote_all", async {
            let filter = JobFilter::default();
            Ok(self.found_all(BulkAction::Promote, &filter).await?.done)
        })
        .await
    }

    /// Deletes up to `limit` (1 to [`MAX_PAGE`]) jobs of `state` (`Completed` or `Dead`) that
    /// finished (completed, or died) more than `older_than` ago by the Redis clock, oldest first,
    /// as [`delete`](Self::delete) does; returns how many. Fewer than `limit` means none older is
    /// left (but jobs a concurrent call took). Each Redis call reads at most `limit` jobs.
    pub async fn clean_page(
        &self,
        state: JobState,
        older_than: Duration,
        limit: usize,
    ) -> Result<u64> {
        self.op("clean", self.clean_some(state, older_than, limit))
            .await
    }

    /// Deletes every job of `state` (`Completed` or `Dead`) that finished more than `older_than`
    /// ago, in calls of [`clean_page`](Self::clean_page) of 1,000; returns how many.
    pub async fn clean(&self, state: JobState, older_than: Duration) -> Result<u64> {
        self.op("clean", async {
            let mut total = 0;
            loop {
                let n = self.clean_some(state, older_than, MAX_PAGE).await?;
                total += n;
                if n < MAX_PAGE as u64 {
                    return Ok(total);
                }
            }
        })
        .await
    }

    /// Acts on each of `ids`, [`IN_FLIGHT`] at a time, after checking them all.
    pub(crate) async fn act_on_ids(
        &self,
        action: BulkAction,
        ids: &[String],
    ) -> Result<Vec<BulkItem>> {
        if ids.len() > MAX_BULK_IDS {
            return Err(Error::invalid(format!(
                "a bulk {} takes at most {MAX_BULK_IDS} ids, got {}; split them in calls",
                action.as_str(),
                ids.len()
            )));
        }
        for id in ids {
            validate_job_id(id)?;
        }
        self.run_ids(action, ids).await
    }

    /// Acts on each of `ids` (checked), [`IN_FLIGHT`] at a time.
    async fn run_ids(&self, action: BulkAction, ids: &[String]) -> Result<Vec<BulkItem>> {
        let mut out = Vec::with_capacity(ids.len());
        for part in ids.chunks(IN_FLIGHT) {
            let steps: Vec<_> = part
                .iter()
                .map(|id| Box::pin(self.act_on_one(action, id)))
                .collect();
            out.extend(futures_util::future::try_join_all(steps).await?);
        }
        Ok(out)
    }

    async fn act_on_one(&self, action: BulkAction, id: &str) -> Result<BulkItem> {
        let done = match action {
            BulkAction::Retry => self.dead_op(&REQUEUE_DEAD, Some(id)).await? > 0,
            BulkAction::Delete => self.job_action(&DELETE_JOB, id).await? == "deleted",
            BulkAction::Promote => self.job_action(&PROMOTE_JOB, id).await? == "promoted",
            BulkAction::Cancel => match self.cancel_one(id).await {
                Ok(()) => true,
                Err(e)
                    if matches!(
                        e.kind(),
                        ErrorKind::JobNotFound | ErrorKind::JobNotCancellable
                    ) =>
                {
                    false
                }
                Err(e) => return Err(e),
            },
        };
        let state = if done { None } else { self.state_of(id).await? };
        let outcome = match (done, state) {
            (true, _) => BulkOutcome::Done,
            (false, Some(_)) => BulkOutcome::WrongState,
            (false, None) => BulkOutcome::Unknown,
        };
        Ok(BulkItem {
            id: id.to_string(),
            outcome,
            state,
        })
    }

    /// The state of job `id`, `None` if unknown.
    async fn state_of(&self, id: &str) -> Result<Option<JobState>> {
        Ok(self.info_of(id).await?.map(|j| j.state))
    }

    /// The search an action walks: `filter` with its state checked against the action's, or
    /// the action's own state when it has one.
    fn filter_for(action: BulkAction, filter: &JobFilter) -> Result<JobFilter> {
        let mut f = filter.clone();
        let states = action.states();
        match f.state {
            Some(s) if !states.contains(&s) => {
                let names: Vec<&str> = states.iter().map(|s| s.as_str()).collect();
                return Err(Error::invalid(format!(
                    "{} applies to {} jobs, not to {} ones",
                    action.as_str(),
                    names.join(" or "),
                    s.as_str()
                )));
            }
            None if states.len() == 1 => f.state = Some(states[0]),
            _ => {}
        }
        Ok(f)
    }

    async fn found_page(
        &self,
        action: BulkAction,
        filter: &JobFilter,
        cursor: Option<&str>,
    ) -> Result<BulkPage> {
        let filter = Self::filter_for(action, filter)?;
        let page = self.find_jobs(&filter, cursor, MAX_PAGE).await?;
        // A list's place names the last job listed, and a walk goes on after it only while that
        // job is still where it was: the job a page's cursor names is left for the next page,
        // which acts on it once its own jobs are read.
        let ahead = page.cursor.as_deref().and_then(held);
        let mut ids: Vec<String> = page
            .jobs
            .iter()
            .filter(|j| action.states().contains(&j.state) && Some(j.id.as_str()) != ahead)
            .map(|j| j.id.clone())
            .collect();
        if let Some(id) = cursor.and_then(held) {
            let info = self.info_of(id).await?;
            if info.is_some_and(|j| action.states().contains(&j.state) && matches(&filter, &j)) {
                ids.push(id.to_string());
            }
        }
        let items = self.run_ids(action, &ids).await?;
        let done = items
            .iter()
            .filter(|i| i.outcome == BulkOutcome::Done)
            .count() as u64;
        Ok(BulkPage {
            done,
            skipped: items.len() as u64 - done,
            cursor: page.cursor,
        })
    }

    /// Job `id`, `None` if unknown.
    async fn info_of(&self, id: &str) -> Result<Option<crate::JobInfo>> {
        for shard in self.shards_to_search(id) {
            if let Some(info) = self
                .get_many(shard, &[id.to_string()])
                .await?
                .pop()
                .flatten()
            {
                return Ok(Some(info));
            }
        }
        Ok(None)
    }

    /// Every page of `action` on what `filter` finds.
    async fn found_all(&self, action: BulkAction, filter: &JobFilter) -> Result<BulkCounts> {
        let mut total = BulkCounts::default();
        let mut cursor = None::<String>;
        loop {
            let page = self.found_page(action, filter, cursor.as_deref()).await?;
            total.done += page.done;
            total.skipped += page.skipped;
            match page.cursor {
                Some(c) => cursor = Some(c),
                None => return Ok(total),
            }
        }
    }

    async fn clean_some(&self, state: JobState, older_than: Duration, limit: usize) -> Result<u64> {
        if !matches!(state, JobState::Completed | JobState::Dead) {
            return Err(Error::invalid(format!(
                "clean deletes completed or dead jobs, not {} ones",
                state.as_str()
            )));
        }
        if limit == 0 || limit > MAX_PAGE {
            return Err(Error::invalid(format!(
                "clean deletes 1 to {MAX_PAGE} jobs a call, got {limit}"
            )));
        }
        let mut total = 0u64;
        for shard in 0..self.shards.len() {
            let want = limit - total as usize;
            if want == 0 {
                break;
            }
            let ids = self.old_ids(shard, state, older_than, want).await?;
            let code = if state == JobState::Dead { "x" } else { "c" };
            for part in ids.chunks(CLEAN_CALL) {
                let mut cmd = self.script_cmd(shard, &CLEAN_JOBS);
                cmd.arg(code).arg(part);
                total += self.client.eval::<u64>(&cmd, &CLEAN_JOBS).await?;
            }
        }
        Ok(total)
    }

    /// Up to `want` ids of `state` on `shard` that finished more than `older_than` ago, oldest
    /// first: dead ones by their time of death (the dead zset's score), completed ones from the
    /// front of the done list (oldest first) while their finish time (the meta's `x`) is old
    /// enough. One bounded read each.
    async fn old_ids(
        &self,
        shard: usize,
        state: JobState,
        older_than: Duration,
        want: usize,
    ) -> Result<Vec<String>> {
        let keys = &self.shards[shard];
        let mut conn = self.client.conn().await?;
        let (secs, micros): (u64, u64) = redis::cmd("TIME")
            .query_async(&mut conn)
            .await
            .map_err(|e| self.client.err(e))?;
        let now = secs * 1000 + micros / 1000;
        let cutoff = now.saturating_sub(older_than.as_millis() as u64);
        if state == JobState::Dead {
            return redis::cmd("ZRANGE")
                .arg(keys.dead())
                .arg("-inf")
                .arg(cutoff)
                .arg("BYSCORE")
                .arg("LIMIT")
                .arg(0)
                .arg(want)
                .query_async(&mut conn)
                .await
                .map_err(|e| self.client.err(e));
        }
        let ids: Vec<String> = redis::cmd("LRANGE")
            .arg(keys.done())
            .arg(0)
            .arg(want as i64 - 1)
            .query_async(&mut conn)
            .await
            .map_err(|e| self.client.err(e))?;
        if ids.is_empty() {
            return Ok(ids);
        }
        let metas: Vec<Option<String>> = redis::cmd("HMGET")
            .arg(keys.meta())
            .arg(&ids)
            .query_async(&mut conn)
            .await
            .map_err(|e| self.client.err(e))?;
        let finished = |m: &Option<String>| {
            m.as_deref()
                .and_then(crate::scripts::encoding::meta_fields)
                .and_then(|f| f[4].parse::<u64>().ok())
        };
        Ok(ids
            .into_iter()
            .zip(metas)
            .take_while(|(_, m)| finished(m).is_some_and(|x| x <= cutoff))
            .map(|(id, _)| id)
            .collect())
    }
}

/// The job a search cursor's place names in a list (ready: `r|<index>|<id>`,
/// `p|<priority>|<index>|<id>`; completed: `<index>|<id>`), which must stay in the list for the
/// walk to go on after it; `None` for other places (zsets by score, groups by HSCAN).
fn held(cursor: &str) -> Option<&str> {
    let mut parts = cursor.splitn(3, ':');
    let (state, _shard, place) = (parts.next()?, parts.next()?, parts.next()?);
    match state {
        "completed" => place.split_once('|').map(|x| x.1),
        "ready" if place.starts_with("r|") => place.splitn(3, '|').nth(2),
        "ready" if place.starts_with("p|") => place.splitn(4, '|').nth(3),
        _ => None,
    }
}

/// Whether job `j` is one `filter` finds (as [`Queue::find_jobs`] does).
fn matches(filter: &JobFilter, j: &crate::JobInfo) -> bool {
    filter.state.is_none_or(|s| s == j.state) && filter.finds(j)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_list_cursor_names_the_job_its_walk_goes_on_after() {
        use super::held;
        assert_eq!(held("ready:0:r|17|a|b"), Some("a|b"));
        assert_eq!(held("ready:2:p|3|5|x"), Some("x"));
        assert_eq!(held("completed:0:4|id:1"), Some("id:1"));
        assert_eq!(held("ready:0:g|1|2|x"), None);
        assert_eq!(held("delayed:0:123|x"), None);
        assert_eq!(held("ready:0:"), None);
    }
}
