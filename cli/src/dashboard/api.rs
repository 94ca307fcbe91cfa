//! The dashboard's JSON API (under `/api/`). Values are rendered by `render.rs`, as the CLI's
//! `--json` prints them. Names and ids come percent-decoded from the path; a queue the dashboard
//! does not show is 404, bad input 400, every error `{"error": "..."}`.

use std::collections::HashMap;
use std::time::Duration;

use axum::extract::rejection::PathRejection;
use axum::extract::{Extension, Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use futures_util::future::try_join_all;
use serde_json::{json, Value};
use tideq::{JobFilter, JobState, Queue, QueueKind, QueueRef, MAX_PAGE};

use super::{error, json_response, ApiError, App, Role};
use crate::render;

/// Groups in one page of a queue's view (`?groups=CURSOR` for the next page).
const GROUPS_SHOWN: usize = 100;
/// Schedules, and live workers, in one page of a queue's view (`?schedules=OFFSET`,
/// `?workers=OFFSET` for the others): a queue may have thousands of either.
const LISTED: usize = 50;
/// A flow parent's children shown with it (the first ones; `children_total` says how many).
const CHILDREN_SHOWN: usize = 50;
/// Jobs in a page when `limit` is not given, and the most a page may hold (half the core's
/// [`MAX_PAGE`]).
const DEFAULT_LIMIT: usize = 50;
const MAX_LIMIT: usize = 500;
const _: () = assert!(MAX_LIMIT <= MAX_PAGE);

/// Characters of a job's arguments a list shows (the job's page shows them whole).
pub const ARGS_SHOWN: usize = 80;

pub(super) type Answer = Result<Response, ApiError>;

/// Jobs as a list shows them: each job's fields but its payload, result and progress, and its
/// arguments as one line of at most [`ARGS_SHOWN`] characters (`args_cut` when cut): JSON
/// compact, text as it is, anything else `(binary, N bytes)`. A page never carries whole
/// payloads.
pub fn job_rows(jobs: &[tideq::JobInfo]) -> Value {
    Value::Array(
        jobs.iter()
            .map(|j| {
                let mut v = render::job_json(j, None);
                let o = v.as_object_mut().expect("a job is an object");
                let format = o["payload_format"].as_str().unwrap_or_default().to_string();
                let line = match (format.as_str(), o.remove("payload")) {
                    ("json", Some(p)) => p.to_string(),
                    ("text", Some(Value::String(t))) => t,
                    _ => format!("(binary, {} bytes)", j.payload.len()),
                };
                for k in ["result", "result_format", "progress", "progress_format"] {
                    o.remove(k);
                }
                let cut = line.chars().count() > ARGS_SHOWN;
                let args: String = if cut {
                    line.chars().take(ARGS_SHOWN - 1).chain(['…']).collect()
                } else {
                    line
                };
                o.insert("args".into(), Value::String(args));
                o.insert("args_cut".into(), Value::Bool(cut));
                v
            })
            .collect(),
    )
}

pub(super) fn ok(v: Value) -> Answer {
    Ok(json_response(StatusCode::OK, v))
}

pub(super) fn path<T>(p: Result<Path<T>, PathRejection>) -> Result<T, ApiError> {
    p.map(|Path(v)| v)
        .map_err(|e| error(StatusCode::BAD_REQUEST, format!("bad path: {e}")))
}

/// The query string's parameters (percent-decoded; the last of a repeated one wins).
pub(super) fn params(q: Option<String>) -> HashMap<String, String> {
    form_urlencoded::parse(q.unwrap_or_default().as_bytes())
        .into_owned()
        .collect()
}

pub(super) fn number(
    params: &HashMap<String, String>,
    name: &str,
    default: usize,
) -> Result<usize, ApiError> {
    match params.get(name) {
        None => Ok(default),
        Some(v) => v.parse().map_err(|_| {
            error(
                StatusCode::BAD_REQUEST,
                format!("{name} must be a whole number >= 0, not {v:?}"),
            )
        }),
    }
}

/// A page's `limit` parameter: [`DEFAULT_LIMIT`] when not given, at most [`MAX_LIMIT`].
fn page_limit(params: &HashMap<String, String>) -> Result<usize, ApiError> {
    let limit = number(params, "limit", DEFAULT_LIMIT)?;
    if limit > MAX_LIMIT {
        return Err(error(
            StatusCode::BAD_REQUEST,
            format!("limit is {limit}; a page holds at most {MAX_LIMIT} jobs"),
        ));
    }
    Ok(limit)
}

impl App {
    /// The queue of `kind` named `name` that the dashboard shows (looked for at once when it is
    /// new), else 404.
    async fn known(&self, kind: QueueKind, name: &str) -> Result<QueueRef, ApiError> {
        let found = self.cache.find_or_look(&self.client, kind, name).await;
        found.ok_or_else(|| {
            let what = match kind {
                QueueKind::Jobs => "job queue",
                QueueKind::Capped => "capped queue",
            };
            error(StatusCode::NOT_FOUND, format!("no {what} {name:?} here"))
        })
    }

    pub(super) async fn job_queue(&self, name: &str) -> Result<(QueueRef, Queue), ApiError> {
        let r = self.known(QueueKind::Jobs, name).await?;
        let q = self.cache.handles.jobs(&self.client, &r.name, r.shards)?;
        Ok((r, q))
    }
}

/// The overview; `read_only` tells the page to show no actions (`--read-only`, or a request
/// with the read token).
pub async fn overview(State(app): State<App>, Extension(role): Extension<Role>) -> Response {
    json_response(StatusCode::OK, app.cache.overview(role == Role::Read))
}

/// A job queue: its counts, limits, a page of its schedules (by name) and of its live workers (in
/// the order they started), each with how many there are (`?schedules=OFFSET`,
/// `?workers=OFFSET` for the page from there), and a page of its groups (`?groups=CURSOR` for the
/// page after the one that gave that cursor).
pub async fn queue(
    State(app): State<App>,
    p: Result<Path<String>, PathRejection>,
    RawQuery(query): RawQuery,
) -> Answer {
    let (r, q) = app.job_queue(&path(p)?).await?;
    let params = params(query);
    let at = params.get("groups").map(String::as_str);
    let schedules_at = number(&params, "schedules", 0)?;
    let workers_at = number(&params, "workers", 0)?;
    let (stats, limits, limiter, schedules, workers, page) = tokio::try_join!(
        q.stats(),
        q.limits(),
        q.limiter_name(),
        q.schedules(),
        q.workers(),
        q.groups_page(at, GROUPS_SHOWN)
    )?;
    let shown: Vec<Value> = page.groups.iter().map(render::group_json).collect();
    ok(json!({
        "kind": "jobs",
        "name": r.name,
        "shards": r.shards,
        "stats": render::stats_json(&stats),
        "paused": stats.paused,
        "limits": render::limits_json(&limits, limiter.as_deref()),
        "schedules": render::schedules_json(listed(&schedules, schedules_at)),
        "schedules_total": schedules.len(),
        "schedules_offset": schedules_at,
        "workers": render::workers_json(listed(&workers, workers_at)),
        "workers_total": workers.len(),
        "workers_offset": workers_at,
        "groups": shown,
        "groups_cursor": page.cursor,
    }))
}

/// The page of [`LISTED`] items of `all` from `offset` (none past the end).
fn listed<T>(all: &[T], offset: usize) -> &[T] {
    let from = offset.min(all.len());
    &all[from..(from + LISTED).min(all.len())]
}

pub async fn jobs(
    State(app): State<App>,
    p: Result<Path<String>, PathRejection>,
    RawQuery(query): RawQuery,
) -> Answer {
    let name = path(p)?;
    let params = params(query);
    let state = params.get("state").map(String::as_str).unwrap_or("ready");
    let state = JobState::parse(state)?;
    let offset = number(&params, "offset", 0)?;
    let limit = page_limit(&params)?;
    let (_, q) = app.job_queue(&name).await?;
    // By cursor (a walk that neither repeats nor skips jobs while workers move them), unless an
    // offset is asked for (a snapshot's page).
    if params.contains_key("offset") {
        let jobs = q.jobs(state, offset, limit).await?;
        return ok(json!({
            "state": state.as_str(),
            "offset": offset,
            "limit": limit,
            "jobs": job_rows(&jobs),
        }));
    }
    let page = q
        .jobs_page(state, params.get("cursor").map(String::as_str), limit)
        .await?;
    ok(json!({
        "state": state.as_str(),
        "limit": limit,
        "jobs": job_rows(&page.jobs),
        "cursor": page.cursor,
    }))
}

/// One job, with its parent when it has one and its first children when it is a flow's parent.
pub async fn job(
    State(app): State<App>,
    p: Result<Path<(String, String)>, PathRejection>,
) -> Answer {
    let (name, id) = path(p)?;
    let (_, q) = app.job_queue(&name).await?;
    let (info, kids) = tokio::try_join!(q.get(&id), q.children(&id, 0, CHILDREN_SHOWN))?;
    match info {
        Some(info) => ok(render::job_and_children_json(&info, &kids, None)),
        None => Err(error(
            StatusCode::NOT_FOUND,
            format!("no job {id:?} in queue {name:?}"),
        )),
    }
}

/// Windows the history chart offers, with the step of each (points of a whole number of
/// minutes): an hour by the minute, a day by 15 minutes, 14 days by 3 hours.
const HISTORY_WINDOWS: [(u64, u64); 3] = [(3600, 60), (86_400, 900), (14 * 86_400, 10_800)];

/// The queue's history kept in Redis (`Queue::history`): `?window=SECS` (3600, 86400 or
/// 1209600; default 3600), in points of the window's step. Answered from the cache when read
/// in the last [`HISTORY_FRESH`](super::cache::HISTORY_FRESH).
pub async fn history(
    State(app): State<App>,
    p: Result<Path<String>, PathRejection>,
    RawQuery(query): RawQuery,
) -> Answer {
    let name = path(p)?;
    let params = params(query);
    let window = number(&params, "window", 3600)? as u64;
    let Some(&(window, step)) = HISTORY_WINDOWS.iter().find(|w| w.0 == window) else {
        return Err(error(
            StatusCode::BAD_REQUEST,
            format!("window must be 3600, 86400 or 1209600 (seconds), not {window}"),
        ));
    };
    let (_, q) = app.job_queue(&name).await?;
    // Read at most once per HISTORY_FRESH per queue and window, whatever the pages open.
    if let Some(v) = app.cache.history(&name, window) {
        return ok(v);
    }
    let points = q
        .history(Duration::from_secs(window), Duration::from_secs(step))
        .await?;
    let v = json!({
        "window_secs": window,
        "step_secs": step,
        "points": render::history_json(&points),
    });
    app.cache.keep_history(&name, window, v.clone());
    ok(v)
}

/// Jobs by task, group or a piece of their arguments (`Queue::find_jobs`):
/// `?task=&group=&contains=&state=&cursor=&limit=`. Each call
/// looks at a bounded number of jobs; `cursor` (null at the end) goes on where it stopped.
pub async fn search(
    State(app): State<App>,
    p: Result<Path<String>, PathRejection>,
    RawQuery(query): RawQuery,
) -> Answer {
    let name = path(p)?;
    let params = params(query);
    let text = |k: &str| params.get(k).filter(|v| !v.is_empty()).cloned();
    let state = match text("state") {
        Some(s) => Some(JobState::parse(&s)?),
        None => None,
    };
    let filter = JobFilter {
        state,
        task: text("task"),
        group: text("group"),
        contains: text("contains"),
    };
    let limit = page_limit(&params)?;
    let (_, q) = app.job_queue(&name).await?;
    let found = q
        .find_jobs(&filter, text("cursor").as_deref(), limit)
        .await?;
    ok(json!({
        "jobs": job_rows(&found.jobs),
        "cursor": found.cursor,
        "scanned": found.scanned,
    }))
}

/// One job's action, by the name in its path: `cancel`, `run-now` (a delayed job made ready),
/// `retry` (a dead job requeued) or `delete` (a finished job's record).
pub async fn job_action(
    State(app): State<App>,
    p: Result<Path<(String, String, String)>, PathRejection>,
) -> Answer {
    let (name, id, action) = path(p)?;
    change(&app, &name, |q| async move {
        match action.as_str() {
            "cancel" => q.cancel(&id).await?,
            "run-now" => q.promote(&id).await?,
            "retry" => q.requeue(&id).await?,
            "delete" => q.delete(&id).await?,
            other => {
                return Err(error(
                    StatusCode::NOT_FOUND,
                    format!("no job action {other:?} (cancel, run-now, retry, delete)"),
                ))
            }
        }
        Ok(json!({ "id": id, "done": action }))
    })
    .await
}

/// Runs a change on a job queue, reads its counts again for the overview, answers `done`.
pub(super) async fn change<F, Fut>(app: &App, name: &str, f: F) -> Answer
where
    F: FnOnce(Queue) -> Fut,
    Fut: std::future::Future<Output = Result<Value, ApiError>>,
{
    let (r, q) = app.job_queue(name).await?;
    let done = f(q).await?;
    app.cache.reread(&app.client, &r).await;
    ok(done)
}

pub async fn requeue(
    State(app): State<App>,
    p: Result<Path<(String, String)>, PathRejection>,
) -> Answer {
    let (name, id) = path(p)?;
    change(&app, &name, |q| async move {
        match q.requeue(&id).await {
            Ok(()) => Ok(json!({ "requeued": id })),
            Err(e) if e.kind() == tideq::ErrorKind::JobNotFound => Err(error(
                StatusCode::NOT_FOUND,
                format!("no dead job {id:?} in queue {:?}", q.name()),
            )),
            Err(e) => Err(e.into()),
        }
    })
    .await
}

pub async fn requeue_all(State(app): State<App>, p: Result<Path<String>, PathRejection>) -> Answer {
    change(&app, &path(p)?, |q| async move {
        let n = q.requeue_all().await?;
        Ok(json!({ "requeued": n }))
    })
    .await
}

pub async fn purge(State(app): State<App>, p: Result<Path<String>, PathRejection>) -> Answer {
    change(&app, &path(p)?, |q| async move {
        let n = q.purge().await?;
        Ok(json!({ "purged": n }))
    })
    .await
}

pub async fn pause(State(app): State<App>, p: Result<Path<String>, PathRejection>) -> Answer {
    change(&app, &path(p)?, |q| async move {
        q.pause().await?;
        Ok(json!({ "paused": true }))
    })
    .await
}

pub async fn resume(State(app): State<App>, p: Result<Path<String>, PathRejection>) -> Answer {
    change(&app, &path(p)?, |q| async move {
        q.resume().await?;
        Ok(json!({ "paused": false }))
    })
    .await
}

/// A capped queue: its counters, a page of its groups with their lengths (`?groups=CURSOR` for
/// the page after the one that gave that cursor), and with `?peek=GROUP` (and `max=N`, default
/// 10) that group's oldest items.
pub async fn capped(
    State(app): State<App>,
    p: Result<Path<String>, PathRejection>,
    RawQuery(query): RawQuery,
) -> Answer {
    let name = path(p)?;
    let params = params(query);
    let max = number(&params, "max", tideq::capped::DEFAULT_PEEK)?;
    let r = app.known(QueueKind::Capped, &name).await?;
    let q = app.cache.handles.capped(&app.client, &r.name, r.shards)?;
    let at = params.get("groups").map(String::as_str);
    let (stats, page) = tokio::try_join!(q.stats(), q.groups_page(at, GROUPS_SHOWN))?;
    let lens = try_join_all(page.groups.iter().map(|g| q.len(g))).await?;
    let listed: Vec<Value> = page
        .groups
        .iter()
        .zip(lens)
        .map(|(g, len)| json!({ "group": g, "len": len }))
        .collect();
    let peek = match params.get("peek") {
        None => Value::Null,
        Some(group) => {
            let items = q.peek(group, max).await?;
            json!({ "group": group, "items": render::peeked_json(&items, None) })
        }
    };
    ok(json!({
        "kind": "capped",
        "name": r.name,
        "shards": r.shards,
        "stats": render::capped_stats_json(&stats),
        "groups": listed,
        "groups_total": stats.groups,
        "groups_cursor": page.cursor,
        "peek": peek,
    }))
}
