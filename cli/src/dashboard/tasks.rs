//! A job queue's per-task metrics for the queue page (`Queue::task_metrics`):
//! `GET /api/queues/{q}/tasks?window=SECS`.

use std::time::Duration;

use axum::extract::rejection::PathRejection;
use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use serde_json::json;

use super::api::{number, ok, params, path, Answer};
use super::{error, App};
use crate::render;

/// Windows the table offers: an hour, a day, 14 days (seconds).
const TASK_WINDOWS: [u64; 3] = [3600, 86_400, 14 * 86_400];

/// `?window=SECS` (3600, 86400 or 1209600; default 3600): per task, completed, failed,
/// dead-lettered, runs and run times over the window (at most 101 rows per queue shard).
pub async fn tasks(
    State(app): State<App>,
    p: Result<Path<String>, PathRejection>,
    RawQuery(query): RawQuery,
) -> Answer {
    let name = path(p)?;
    let window = number(&params(query), "window", 3600)? as u64;
    if !TASK_WINDOWS.contains(&window) {
        return Err(error(
            StatusCode::BAD_REQUEST,
            format!("window must be 3600, 86400 or 1209600 (seconds), not {window}"),
        ));
    }
    let (_, q) = app.job_queue(&name).await?;
    let m = q.task_metrics(Some(Duration::from_secs(window))).await?;
    ok(json!({
        "window_secs": window,
        "tasks": render::task_metrics_json(&m),
    }))
}
