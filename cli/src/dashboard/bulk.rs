//! The dashboard's bulk actions (under `/api/queues/{q}/`, POST, guarded as every change:
//! the admin token, `X-Tideq-Request: 1`, refused read-only): the selected ids
//! (`bulk/{retry|delete|cancel}`, body `{"ids": [...]}`), one page of a search's jobs
//! (`bulk-found/{action}?task=&group=&state=&contains=&cursor=`: the page calls again with the
//! cursor), `promote-all`, `clean?state=completed|dead&older_than=SECS`, `obliterate[?force=1]`.

use axum::extract::rejection::PathRejection;
use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use serde_json::{json, Value};
use tideq::{BulkAction, JobFilter, JobState};

use super::api::{change, params, path, Answer};
use super::{error, App};

fn action(name: &str, allowed: &[BulkAction]) -> Result<BulkAction, super::ApiError> {
    BulkAction::parse(name)
        .ok()
        .filter(|a| allowed.contains(a))
        .ok_or_else(|| error(StatusCode::NOT_FOUND, format!("no bulk action {name:?}")))
}

/// `POST bulk/{action}` with `{"ids": [...]}`: per id, what happened.
pub async fn by_ids(
    State(app): State<App>,
    p: Result<Path<(String, String)>, PathRejection>,
    body: String,
) -> Answer {
    let (name, act) = path(p)?;
    let act = action(
        &act,
        &[BulkAction::Retry, BulkAction::Delete, BulkAction::Cancel],
    )?;
    let ids: Vec<String> = serde_json::from_str::<Value>(&body)
        .ok()
        .and_then(|v| serde_json::from_value(v.get("ids")?.clone()).ok())
        .ok_or_else(|| error(StatusCode::BAD_REQUEST, "the body must be {\"ids\": [...]}"))?;
    change(&app, &name, |q| async move {
        let items = match act {
            BulkAction::Retry => q.retry_jobs(&ids).await?,
            BulkAction::Delete => q.delete_jobs(&ids).await?,
            _ => q.cancel_jobs(&ids).await?,
        };
        let done = items
            .iter()
            .filter(|i| i.outcome == tideq::BulkOutcome::Done)
            .count();
        let items: Vec<Value> = items
            .iter()
            .map(|i| {
                json!({
                    "id": i.id,
                    "outcome": i.outcome.as_str(),
                    "state": i.state.map(|s| s.as_str()),
                })
            })
            .collect();
        Ok(json!({ "done": done, "items": items }))
    })
    .await
}

/// `POST bulk-found/{action}?filter&cursor=`: one page of a search acted on.
pub async fn found(
    State(app): State<App>,
    p: Result<Path<(String, String)>, PathRejection>,
    RawQuery(query): RawQuery,
) -> Answer {
    let (name, act) = path(p)?;
    let act = action(
        &act,
        &[BulkAction::Retry, BulkAction::Delete, BulkAction::Cancel],
    )?;
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
    let cursor = text("cursor");
    change(&app, &name, |q| async move {
        let page = q.bulk_found(act, &filter, cursor.as_deref()).await?;
        Ok(json!(page))
    })
    .await
}

/// `POST promote-all`.
pub async fn promote_all(State(app): State<App>, p: Result<Path<String>, PathRejection>) -> Answer {
    change(&app, &path(p)?, |q| async move {
        Ok(json!({ "promoted": q.promote_all().await? }))
    })
    .await
}

/// `POST clean?state=completed|dead&older_than=SECS`.
pub async fn clean(
    State(app): State<App>,
    p: Result<Path<String>, PathRejection>,
    RawQuery(query): RawQuery,
) -> Answer {
    let name = path(p)?;
    let params = params(query);
    let state = match params.get("state").map(String::as_str) {
        Some("completed") => JobState::Completed,
        Some("dead") => JobState::Dead,
        _ => {
            return Err(error(
                StatusCode::BAD_REQUEST,
                "state must be completed or dead",
            ))
        }
    };
    let secs: u64 = params
        .get("older_than")
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| {
            error(
                StatusCode::BAD_REQUEST,
                "older_than must be a whole number of seconds",
            )
        })?;
    change(&app, &name, |q| async move {
        let n = q.clean(state, std::time::Duration::from_secs(secs)).await?;
        Ok(json!({ "deleted": n }))
    })
    .await
}

/// `POST obliterate[?force=1]`.
pub async fn obliterate(
    State(app): State<App>,
    p: Result<Path<String>, PathRejection>,
    RawQuery(query): RawQuery,
) -> Answer {
    let name = path(p)?;
    let force = params(query).get("force").map(String::as_str) == Some("1");
    change(&app, &name, |q| async move {
        Ok(json!({ "keys": q.obliterate(force).await? }))
    })
    .await
}
