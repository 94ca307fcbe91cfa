//! Searching a job queue's jobs by task or group (`find_jobs`): a walk of the states with
//! [`Queue::jobs_page`]'s cursor, that looks at a bounded number of jobs per call.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::job::{JobInfo, JobState, MAX_PAGE};
use crate::jobs::Queue;
use crate::listing::{listable, parse_job_cursor};

impl Queue {
    /// Up to `limit` (1 to [`MAX_PAGE`]) jobs that match `filter`, after `cursor` (`None`: from
    /// the start), and the cursor to go on with (`None`: the search is over). The search walks
    /// the filter's state, or every state in turn (delayed, ready, active, dead, completed), as
    /// [`jobs_page`](Self::jobs_page) does, and keeps the jobs whose task and group are the
    /// filter's and whose payload holds its `contains` text. Each call looks at no more than [`SEARCH_SCAN`] jobs, however big the queue
    /// (grouped jobs passed over on the way to the ready ones count: a delayed or running
    /// grouped job is looked at to be passed over): a page may hold fewer than `limit` jobs
    /// (even none) before the end; only a `None` cursor ends the search. Writes nothing.
    pub async fn find_jobs(
        &self,
        filter: &JobFilter,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<JobSearch> {
        self.op("find_jobs", async {
            if limit == 0 || limit > MAX_PAGE {
                return Err(Error::invalid(format!(
                    "a search page holds 1 to {MAX_PAGE} jobs, got {limit}"
                )));
            }
            for (what, v) in [
                ("task", &filter.task),
                ("group", &filter.group),
                ("contains", &filter.contains),
            ] {
                if v.as_deref() == Some("") {
                    return Err(Error::invalid(format!(
                        "the filter's {what} is empty: leave it out to match any {what}"
                    )));
                }
            }
            let states: &[JobState] = match &filter.state {
                Some(s) => {
                    listable(*s)?;
                    std::slice::from_ref(s)
                }
                None => &JobState::ALL,
            };
            let (mut at, mut shard, mut place) = match cursor {
                None => (0, 0, String::new()),
                Some(c) => parse_search_cursor(c, states, self.shards.len())?,
            };
            let matches = |j: &JobInfo, state: JobState| j.state == state && filter.finds(j);
            let (mut jobs, mut scanned) = (Vec::new(), 0usize);
            // A page that held more matches than wanted is asked for again, only as far as
            // the last match wanted (its ids and jobs, read already, are reused).
            #[allow(clippy::type_complexity)]
            let mut again: Option<(usize, Vec<Vec<u8>>, Vec<Option<JobInfo>>, usize)> = None;
            while at < states.len()
                && jobs.len() < limit
                && (scanned < SEARCH_SCAN || again.is_some())
            {
                let state = states[at];
                let asked = match &again {
                    Some((n, ..)) => *n,
                    None => (SEARCH_SCAN - scanned).min(MAX_PAGE),
                };
                // The first read of a page looks at what the bound leaves; a page asked for
                // again (to stop at the last match wanted) looks at no more than it did.
                let look = match &again {
                    Some((_, _, _, looked)) => *looked,
                    None => SEARCH_SCAN - scanned,
                };
                let page = self.page_ids(shard, state, &place, asked, look).await?;
                let (ids, next) = (page.ids, page.next);
                let infos = match again.take() {
                    Some((_, seen, infos, _)) if seen.starts_with(&ids) => {
                        infos.into_iter().take(ids.len()).collect()
                    }
                    // Jobs moved since: read the page as it is now, if the bound allows.
                    Some(_) if scanned + page.looked > SEARCH_SCAN => break,
                    _ => {
                        scanned += page.looked;
                        self.get_many(shard, &ids).await?
                    }
                };
                let hits: Vec<usize> = (0..ids.len())
                    .filter(|&i| infos[i].as_ref().is_some_and(|j| matches(j, state)))
                    .collect();
                let want = limit - jobs.len();
                if hits.len() > want {
                    again = Some((hits[want - 1] + 1, ids, infos, page.looked));
                    continue;
                }
                jobs.extend(infos.into_iter().flatten().filter(|j| matches(j, state)));
                match next {
                    Some(p) => place = p,
                    None => {
                        place = String::new();
                        shard += 1;
                        if shard == self.shards.len() {
                            (at, shard) = (at + 1, 0);
                        }
                    }
                }
            }
            let cursor =
                (at < states.len()).then(|| format!("{}:{shard}:{place}", states[at].as_str()));
            Ok(JobSearch {
                jobs,
                cursor,
                scanned: scanned as u64,
            })
        })
        .await
    }
}

/// The most jobs one [`Queue::find_jobs`] call looks at.
pub const SEARCH_SCAN: usize = 2000;

/// What [`Queue::find_jobs`] looks for: jobs of a state (`None`: every state), of a task, of a
/// group, whose payload (a task's arguments, as JSON or MessagePack) contains a text. A field
/// left `None` matches any job.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobFilter {
    pub state: Option<JobState>,
    pub task: Option<String>,
    pub group: Option<String>,
    /// Jobs whose payload holds these bytes (`"ada@example.com"`, `"order-42"`), as stored: a
    /// JSON string's text, a MessagePack string's UTF-8.
    #[serde(default)]
    pub contains: Option<String>,
}

/// A page of a search (see [`Queue::find_jobs`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobSearch {
    /// The matching jobs found by this call.
    pub jobs: Vec<JobInfo>,
    /// Give it to the next call (with the same filter); `None` when the search is over.
    pub cursor: Option<String>,
    /// How many jobs this call looked at (at most [`SEARCH_SCAN`]), counting the delayed and
    /// running grouped jobs it passed over on the way to the ready ones.
    pub scanned: u64,
}

/// Whether `payload` holds `text` (a non-empty byte string).
fn holds(payload: &[u8], text: &[u8]) -> bool {
    payload.windows(text.len()).any(|w| w == text)
}

impl JobFilter {
    /// Whether `job` is one this filter finds, its state aside (the search walks one state at a
    /// time): its task, group and payload.
    pub(crate) fn finds(&self, job: &JobInfo) -> bool {
        self.task
            .as_ref()
            .is_none_or(|t| job.task.as_ref() == Some(t))
            && self
                .group
                .as_ref()
                .is_none_or(|g| job.group.as_ref() == Some(g))
            && self
                .contains
                .as_ref()
                .is_none_or(|t| !t.is_empty() && holds(&job.payload, t.as_bytes()))
    }
}

/// A cursor made by [`Queue::find_jobs`]: `state:shard:place`, `place` empty at a shard's
/// start, else a [`Queue::jobs_page`] cursor. Returns the state's index in `states`, the shard
/// and the place.
fn parse_search_cursor(
    c: &str,
    states: &[JobState],
    shards: usize,
) -> Result<(usize, usize, String)> {
    let bad = || {
        Error::invalid(format!(
            "{c:?} is not a cursor of this search: give back the cursor a search returned, \
             with the same filter"
        ))
    };
    let mut parts = c.splitn(3, ':');
    let (Some(s), Some(shard), Some(place)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(bad());
    };
    let at = states
        .iter()
        .position(|st| st.as_str() == s)
        .ok_or_else(bad)?;
    if place.is_empty() {
        let shard: usize = shard.parse().map_err(|_| bad())?;
        if shard >= shards {
            return Err(bad());
        }
        return Ok((at, shard, String::new()));
    }
    let (shard, place) = parse_job_cursor(c, states[at], shards).map_err(|_| bad())?;
    Ok((at, shard, place))
}
