//! Listing one state's jobs: a page by offset (`jobs`, and `dead_letters`: list_jobs.lua) or a
//! walk by cursor (`jobs_page`: page_jobs.lua), whose page reads the search (`find_jobs`,
//! search.rs) shares. Every script call here is bounded by the jobs, groups or index entries it
//! looks at, not only by what it returns; a user call makes a bounded number of them.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::job::{JobInfo, JobState, MAX_PAGE};
use crate::jobs::Queue;
use crate::scripts::{LIST_JOBS, PAGE_JOBS};

/// The most jobs one page_jobs.lua call looks at for grouped ready jobs: the ids it lists, and
/// the `route` entries it passes over (those of delayed or running grouped jobs).
const CALL_LOOK: usize = 500;
/// The most jobs one `jobs_page` call looks at for grouped ready jobs (512 calls) before it
/// returns what it found with the cursor to go on (a page may then hold fewer jobs than asked,
/// even none).
const PAGE_LOOK: usize = 512 * CALL_LOOK;
/// Active jobs' ids read per call while a page of them is chosen by id.
const ACTIVE_READ: usize = 1000;
/// The furthest offset of a page of ready jobs by offset: skipping jobs costs a look at every
/// group (or priority) they are in.
pub(crate) const MAX_READY_OFFSET: usize = 10_000;
/// The most groups (and priorities) one list_jobs.lua call counts.
const LIST_LOOK: usize = 1000;
/// The most list_jobs.lua calls a page by offset makes per shard (a rotation full of groups
/// without jobs could otherwise be walked to its end).
const LIST_CALLS: usize = 32;

/// One read of page_jobs.lua: the ids, the place after them (`None`: the state holds no more on
/// that shard), and how many jobs it looked at.
pub(crate) struct PageIds {
    /// As Redis holds them: an id that is not UTF-8 (written by something else than tideq) is
    /// still listed (its `JobInfo::id` shown with replacement characters), not an error.
    pub ids: Vec<Vec<u8>>,
    pub next: Option<String>,
    pub looked: usize,
}

impl Queue {
    /// The jobs in `state`, `limit` (at most [`MAX_PAGE`]; 0 gives none) from `offset`: delayed by
    /// due time, active by lease deadline, dead oldest death first, completed newest first,
    /// waiting (flow jobs waiting for their children) by id, ready
    /// in the order workers take them (plain, then by priority, then group by group: the
    /// rotation's groups in turn, then the held ones); a sharded queue lists shard by shard. A
    /// job that moves on while the page is read is reported as it is now.
    ///
    /// An offset is a snapshot's: while workers run, jobs move and the offsets with them, so a
    /// walk of pages by offset can list a job twice or skip one. To walk a state, page by cursor
    /// with [`jobs_page`](Self::jobs_page). Skipping ready jobs costs a look at each group they
    /// are in, so a page of ready jobs takes an offset of at most 10,000 (`INVALID_ARGUMENT`
    /// beyond, naming `jobs_page`).
    pub async fn jobs(&self, state: JobState, offset: usize, limit: usize) -> Result<Vec<JobInfo>> {
        self.op("jobs", async {
            listable(state)?;
            if limit > MAX_PAGE {
                return Err(Error::invalid(format!(
                    "limit is {limit}; a page holds at most {MAX_PAGE} jobs"
                )));
            }
            if state == JobState::Ready && offset > MAX_READY_OFFSET {
                return Err(Error::invalid(format!(
                    "offset {offset} is past {MAX_READY_OFFSET}: skipping ready jobs looks at \
                     every group they are in; walk further by cursor with jobs_page (Node: \
                     jobsPage)"
                )));
            }
            if state == JobState::Waiting && offset > MAX_READY_OFFSET {
                return Err(Error::invalid(format!(
                    "offset {offset} is past {MAX_READY_OFFSET}: skipping waiting flow jobs \
                     reads every one before; walk further by cursor with jobs_page (Node: \
                     jobsPage)"
                )));
            }
            self.list(state, offset, limit).await
        })
        .await
    }

    /// Up to `limit` (1 to [`MAX_PAGE`]) of the jobs in `state` after `cursor` (`None`: from
    /// the start), and the cursor of the next page (`None`: that was the last). A walk page by
    /// page while workers run never lists a job twice and never skips one that stayed in the
    /// state for the whole walk: the cursor is the last job's place in the state's own order
    /// (delayed by due time, dead by time of death, completed newest first, active and waiting by
    /// id, ready
    /// as workers take them: plain, then by priority, then the grouped jobs in no particular
    /// order), not a count. A job that left the state and came back (a retry, a requeue) may show
    /// again. A page may hold fewer than `limit` jobs, even none, before the end: grouped ready
    /// jobs are looked for among every grouped job, delayed and running ones too, and a call looks
    /// at no more than 256,000 of those (500 a Redis call); only a `None` cursor ends the walk. A
    /// sharded queue is walked shard by shard.
    pub async fn jobs_page(
        &self,
        state: JobState,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<JobPage> {
        self.op("jobs_page", async {
            listable(state)?;
            if limit == 0 || limit > MAX_PAGE {
                return Err(Error::invalid(format!(
                    "a page holds 1 to {MAX_PAGE} jobs, got {limit}"
                )));
            }
            let (mut shard, mut place) = match cursor {
                None => (0, String::new()),
                Some(c) => parse_job_cursor(c, state, self.shards.len())?,
            };
            let (mut jobs, mut looked) = (Vec::new(), 0);
            while shard < self.shards.len() && jobs.len() < limit {
                let asked = limit - jobs.len();
                let page = self
                    .page_ids(shard, state, &place, asked, CALL_LOOK)
                    .await?;
                looked += page.looked;
                let short = page.ids.len() < asked;
                jobs.extend(self.get_many(shard, &page.ids).await?.into_iter().flatten());
                match page.next {
                    // A short page with more to come: the grouped jobs' bounded look ended; look
                    // on while this call's budget lasts.
                    Some(p) if short => {
                        place = p;
                        if looked >= PAGE_LOOK {
                            break;
                        }
                    }
                    Some(p) => place = p,
                    None => (shard, place) = (shard + 1, String::new()),
                }
            }
            let cursor =
                (shard < self.shards.len()).then(|| format!("{}:{shard}:{place}", state.as_str()));
            Ok(JobPage { jobs, cursor })
        })
        .await
    }

    /// Up to `want` ids of `state` on `shard` after `place` (a place of [`Self::jobs_page`]'s
    /// cursors) in one call of page_jobs.lua, which looks at no more than `look` (at most
    /// [`CALL_LOOK`]) grouped ready jobs, listed or passed over (the ids of the ready lists, which
    /// come first, count too); or, for active jobs, the ids after `place` in id order (see
    /// [`Self::active_after`]).
    pub(crate) async fn page_ids(
        &self,
        shard: usize,
        state: JobState,
        place: &str,
        want: usize,
        look: usize,
    ) -> Result<PageIds> {
        if matches!(state, JobState::Active | JobState::Waiting) {
            return self.smallest_after(shard, state, place, want).await;
        }
        let look = look.min(CALL_LOOK);
        let mut cmd = self.script_cmd(shard, &PAGE_JOBS);
        cmd.arg(state.as_str()).arg(place).arg(want).arg(look);
        let (ids, next, looked): (Vec<Vec<u8>>, Option<Vec<u8>>, usize) =
            self.client.eval(&cmd, &PAGE_JOBS).await?;
        let next = next.map(|p| String::from_utf8_lossy(&p).into_owned());
        Ok(PageIds { ids, next, looked })
    }

    /// The first `want` ids of the jobs running (or waiting for their children) on `shard` that
    /// sort after `after` (byte order), and `after`'s successor place when more follow. The
    /// active zset is kept by lease deadline, which every renewal moves, so no place in it stays
    /// put, and the waiting flow jobs are a hash, in no order: the set is read whole, [`ACTIVE_READ`]
    /// ids a call (the active zset by deadline, each call O(log n + that); the hash by HSCAN),
    /// and the smallest ids after `after` kept. A renewal moves a deadline later, and HSCAN
    /// returns every entry present for the whole scan, so no job in the state for the whole read
    /// is missed (but a running one a manual `extend` gave less time than its lease had left, at
    /// that moment); one read twice is kept once. The cost of a page grows with the jobs in the
    /// state (1,000 per call), never in one call.
    async fn smallest_after(
        &self,
        shard: usize,
        state: JobState,
        after: &str,
        want: usize,
    ) -> Result<PageIds> {
        // The `want + 1` smallest ids after `after`: one more says whether another page follows.
        let mut best: BTreeSet<Vec<u8>> = BTreeSet::new();
        let mut place = String::new();
        loop {
            let (ids, next) = if state == JobState::Waiting {
                self.waiting_batch(shard, &place).await?
            } else {
                let mut cmd = self.script_cmd(shard, &PAGE_JOBS);
                cmd.arg("active")
                    .arg(&place)
                    .arg(ACTIVE_READ)
                    .arg(ACTIVE_READ);
                let (ids, next, _): (Vec<Vec<u8>>, Option<Vec<u8>>, usize) =
                    self.client.eval(&cmd, &PAGE_JOBS).await?;
                (ids, next)
            };
            for id in ids {
                let full = best.len() > want;
                if id.as_slice() > after.as_bytes()
                    && !(full && best.last().is_some_and(|l| &id >= l))
                {
                    best.insert(id);
                    if best.len() > want + 1 {
                        best.pop_last();
                    }
                }
            }
            match next {
                Some(p) => place = String::from_utf8_lossy(&p).into_owned(),
                None => break,
            }
        }
        let more = best.len() > want;
        let ids: Vec<Vec<u8>> = best.into_iter().take(want).collect();
        let next = more
            .then(|| ids.last().map(|l| String::from_utf8_lossy(l).into_owned()))
            .flatten();
        let looked = ids.len();
        Ok(PageIds { ids, next, looked })
    }

    /// One HSCAN batch (about [`ACTIVE_READ`] entries) of the flow jobs waiting for their
    /// children on `shard`, from `place` (an HSCAN cursor; empty: the start); the next cursor,
    /// `None` after the last batch.
    async fn waiting_batch(
        &self,
        shard: usize,
        place: &str,
    ) -> Result<(Vec<Vec<u8>>, Option<Vec<u8>>)> {
        let at = if place.is_empty() { "0" } else { place };
        let mut conn = self.client.conn().await?;
        let (next, fields): (String, Vec<Vec<u8>>) = redis::cmd("HSCAN")
            .arg(self.shards[shard].fwait())
            .arg(at)
            .arg("COUNT")
            .arg(ACTIVE_READ)
            .query_async(&mut conn)
            .await
            .map_err(|e| self.client.err(e))?;
        let ids = fields.into_iter().step_by(2).collect();
        Ok((ids, (next != "0").then(|| next.into_bytes())))
    }

    /// A page of one state's jobs, shard by shard: `list_jobs.lua` reads a shard's ids (and how
    /// many of `offset` it skipped), `get_jobs.lua` the jobs. For ready jobs a call counts at
    /// most [`LIST_LOOK`] groups and priorities and says where to go on; a shard gets at most
    /// [`LIST_CALLS`] calls.
    pub(crate) async fn list(
        &self,
        state: JobState,
        offset: usize,
        limit: usize,
    ) -> Result<Vec<JobInfo>> {
        if state == JobState::Waiting {
            return self.list_waiting(offset, limit).await;
        }
        let mut out = Vec::new();
        let mut skip = offset;
        'shards: for shard in 0..self.shards.len() {
            let mut resume = String::new();
            let mut calls = 0;
            loop {
                if out.len() >= limit {
                    break 'shards;
                }
                if calls == LIST_CALLS {
                    // The shard's groups were not all counted: what was found is the page.
                    break 'shards;
                }
                calls += 1;
                let mut cmd = self.script_cmd(shard, &LIST_JOBS);
                cmd.arg(state.as_str())
                    .arg(skip)
                    .arg(limit - out.len())
                    .arg(&resume)
                    .arg(LIST_LOOK);
                let (skipped, ids, next): (usize, Vec<Vec<u8>>, Option<String>) =
                    self.client.eval(&cmd, &LIST_JOBS).await?;
                skip -= skipped.min(skip);
                out.extend(self.get_many(shard, &ids).await?.into_iter().flatten());
                match next {
                    Some(r) => resume = r,
                    None => continue 'shards,
                }
            }
        }
        Ok(out)
    }
}

impl Queue {
    /// A page by offset of the flow jobs waiting for their children, by id, shard by shard.
    async fn list_waiting(&self, offset: usize, limit: usize) -> Result<Vec<JobInfo>> {
        let (mut out, mut skip) = (Vec::new(), offset);
        for shard in 0..self.shards.len() {
            if out.len() >= limit {
                break;
            }
            let want = skip + limit - out.len();
            let page = self
                .smallest_after(shard, JobState::Waiting, "", want)
                .await?;
            let n = page.ids.len();
            let ids: Vec<Vec<u8>> = page.ids.into_iter().skip(skip).collect();
            skip -= n.min(skip);
            out.extend(self.get_many(shard, &ids).await?.into_iter().flatten());
        }
        out.truncate(limit);
        Ok(out)
    }
}

/// Every state is listed (the flow jobs waiting for their children too, by id); kept as the one
/// place to refuse a state that could not be.
pub(crate) fn listable(_state: JobState) -> Result<()> {
    Ok(())
}

/// A page of one state's jobs, and where the next one starts (see [`Queue::jobs_page`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobPage {
    pub jobs: Vec<JobInfo>,
    /// Give it to the next call; `None` when this was the last page.
    pub cursor: Option<String>,
}

/// A cursor made by [`Queue::jobs_page`]: `state:shard:place`.
pub(crate) fn parse_job_cursor(c: &str, state: JobState, shards: usize) -> Result<(usize, String)> {
    let bad = || {
        Error::invalid(format!(
            "{c:?} is not a cursor of this queue's {} jobs: give back the cursor a page returned",
            state.as_str()
        ))
    };
    let mut parts = c.splitn(3, ':');
    let (Some(s), Some(shard), Some(place)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(bad());
    };
    let shard: usize = shard.parse().map_err(|_| bad())?;
    if s != state.as_str() || shard >= shards || place.chars().any(char::is_control) {
        return Err(bad());
    }
    // The place's shape (page_jobs.lua): "<score>|<id>", "<id>", or a ready list's segment.
    let number = |t: &str| !t.is_empty() && t.parse::<f64>().is_ok();
    let index = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    // "<index>|<id>": a list entry's place.
    let in_list = |t: &str| {
        t.split_once('|')
            .is_some_and(|(i, id)| index(i) && !id.is_empty())
    };
    // An empty place: a shard's start, after a page that ended with the shard before it (the
    // first shard's start is no cursor: the walk's start).
    let ok = (place.is_empty() && shard > 0)
        || match state {
            JobState::Delayed | JobState::Dead => place
                .split_once('|')
                .is_some_and(|(score, id)| number(score) && !id.is_empty()),
            JobState::Active | JobState::Waiting => !place.is_empty(),
            JobState::Completed => in_list(place),
            JobState::Ready => match place.split_once('|') {
                Some(("r", at)) => in_list(at),
                Some(("p", rest)) => rest
                    .split_once('|')
                    .is_some_and(|(l, at)| number(l) && in_list(at)),
                // "<HSCAN cursor>|<place in its batch>|<id>", or "<cursor>||" between batches.
                Some(("g", rest)) => rest.split_once('|').is_some_and(|(c, at)| {
                    index(c) && (at == "|" || at.split_once('|').is_some_and(|(i, _)| index(i)))
                }),
                _ => false,
            },
        };
    if !ok {
        return Err(bad());
    }
    Ok((shard, place.to_string()))
}
