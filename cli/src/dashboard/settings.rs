//! The dashboard's settings actions (POST, guarded as every change): a schedule's run now,
//! pause, resume and remove; the queue's limits and a group's limits; a group's pause and
//! resume. Bad input is 400 with nothing written (checked before any write).

use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde_json::{json, Value};
use tideq::{GroupLimits, Limits, Rate};

use super::api::{change, path, Answer};
use super::{error, ApiError, App};

/// `POST /api/queues/{q}/schedules/{name}/{action}`: `run`, `pause`, `resume` or `remove`. An
/// unknown schedule is 404, nothing written.
pub async fn schedule_action(
    State(app): State<App>,
    p: Result<Path<(String, String, String)>, PathRejection>,
) -> Answer {
    let (queue, name, action) = path(p)?;
    change(&app, &queue, |q| async move {
        let unknown = || {
            error(
                StatusCode::NOT_FOUND,
                format!("queue {:?} has no schedule named {name:?}", q.name()),
            )
        };
        let known = |e: tideq::Error| -> ApiError {
            if e.message().contains("has no schedule named") {
                unknown()
            } else {
                e.into()
            }
        };
        let mut out = json!({ "schedule": name, "done": action });
        match action.as_str() {
            "run" => out["job"] = json!(q.run_schedule(&name).await.map_err(known)?),
            "pause" => out["changed"] = json!(q.pause_schedule(&name).await.map_err(known)?),
            "resume" => out["changed"] = json!(q.resume_schedule(&name).await.map_err(known)?),
            "remove" => {
                if !q.remove_schedule(&name).await? {
                    return Err(unknown());
                }
            }
            other => {
                return Err(error(
                    StatusCode::NOT_FOUND,
                    format!("no schedule action {other:?} (run, pause, resume, remove)"),
                ))
            }
        }
        Ok(out)
    })
    .await
}

/// `POST /api/queues/{q}/limits` with the limits as `tideq limits --json` shows them:
/// `{"max_active": n|null, "rate": {"max": n, "per_ms": n}|null, "group_concurrency": n|null,
/// "group_rate": {...}|null}`. Every field replaces the current one (null or absent: none).
pub async fn set_limits(
    State(app): State<App>,
    p: Result<Path<String>, PathRejection>,
    body: String,
) -> Answer {
    let queue = path(p)?;
    let v = body_json(&body)?;
    only_fields(
        &v,
        &["max_active", "rate", "group_concurrency", "group_rate"],
    )?;
    let limits = Limits {
        max_active: count(&v, "max_active")?,
        rate: rate(&v, "rate")?,
        group_concurrency: count(&v, "group_concurrency")?,
        group_rate: rate(&v, "group_rate")?,
    };
    change(&app, &queue, |q| async move {
        q.set_limits(limits).await?;
        let (limits, limiter) = tokio::try_join!(q.limits(), q.limiter_name())?;
        Ok(json!({ "limits": crate::render::limits_json(&limits, limiter.as_deref()) }))
    })
    .await
}

/// `POST /api/queues/{q}/groups/{g}/limits` with `{"concurrency": n|null, "rate": {"max": n,
/// "per_ms": n}|null}` (null or absent: the queue's default).
pub async fn set_group_limits(
    State(app): State<App>,
    p: Result<Path<(String, String)>, PathRejection>,
    body: String,
) -> Answer {
    let (queue, group) = path(p)?;
    let v = body_json(&body)?;
    only_fields(&v, &["concurrency", "rate"])?;
    let limits = GroupLimits {
        concurrency: count(&v, "concurrency")?,
        rate: rate(&v, "rate")?,
    };
    change(&app, &queue, |q| async move {
        q.set_group_limits(&group, limits).await?;
        Ok(json!({ "group": crate::render::group_json(&q.group(&group).await?) }))
    })
    .await
}

/// `POST /api/queues/{q}/groups/{g}/{action}`: `pause` or `resume` one group.
pub async fn group_action(
    State(app): State<App>,
    p: Result<Path<(String, String, String)>, PathRejection>,
) -> Answer {
    let (queue, group, action) = path(p)?;
    change(&app, &queue, |q| async move {
        match action.as_str() {
            "pause" => q.pause_group(&group).await?,
            "resume" => q.resume_group(&group).await?,
            other => {
                return Err(error(
                    StatusCode::NOT_FOUND,
                    format!("no group action {other:?} (pause, resume)"),
                ))
            }
        }
        Ok(json!({ "group": group, "paused": action == "pause" }))
    })
    .await
}

fn bad(message: String) -> ApiError {
    error(StatusCode::BAD_REQUEST, message)
}

fn body_json(body: &str) -> Result<Value, ApiError> {
    let v: Value = serde_json::from_str(if body.trim().is_empty() { "{}" } else { body })
        .map_err(|e| bad(format!("the body is not JSON: {e}")))?;
    if !v.is_object() {
        return Err(bad("the body must be a JSON object".into()));
    }
    Ok(v)
}

fn only_fields(v: &Value, known: &[&str]) -> Result<(), ApiError> {
    let obj = v.as_object().expect("checked");
    match obj.keys().find(|k| !known.contains(&k.as_str())) {
        Some(k) => Err(bad(format!(
            "unknown field {k:?}; known: {}",
            known.join(", ")
        ))),
        None => Ok(()),
    }
}

/// A whole number from 1 to 4294967295 (`what` names it in the error).
fn whole(what: &str, v: &Value) -> Result<u32, ApiError> {
    v.as_u64()
        .filter(|n| *n >= 1)
        .and_then(|n| u32::try_from(n).ok())
        .ok_or_else(|| {
            bad(format!(
                "{what} must be a whole number from 1 to 4294967295, not {v}"
            ))
        })
}

fn count(v: &Value, field: &str) -> Result<Option<u32>, ApiError> {
    match &v[field] {
        Value::Null => Ok(None),
        n => whole(field, n).map(Some),
    }
}

fn rate(v: &Value, field: &str) -> Result<Option<Rate>, ApiError> {
    match &v[field] {
        Value::Null => Ok(None),
        Value::Object(r) => {
            if let Some(k) = r
                .keys()
                .find(|k| !["max", "per_ms", "burst"].contains(&k.as_str()))
            {
                return Err(bad(format!(
                    "unknown field {field}.{k}; known: max, per_ms, burst"
                )));
            }
            let max = whole(
                &format!("{field}.max"),
                r.get("max").unwrap_or(&Value::Null),
            )?;
            let per = whole(
                &format!("{field}.per_ms"),
                r.get("per_ms").unwrap_or(&Value::Null),
            )?;
            let burst = match r.get("burst").unwrap_or(&Value::Null) {
                Value::Null => None,
                b => Some(whole(&format!("{field}.burst"), b)?),
            };
            Ok(Some(Rate {
                max,
                per: std::time::Duration::from_millis(per.into()),
                burst,
            }))
        }
        other => Err(bad(format!(
            "{field} must be {{\"max\": n, \"per_ms\": n, \"burst\": n (optional)}} or null, \
             not {other}"
        ))),
    }
}
