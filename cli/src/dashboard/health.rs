//! The overview's health panel (`/api/health`): each job queue's latency (how long its oldest
//! ready job has waited) and failed attempts in the last hour (from its history in Redis), and
//! the Redis server's own state (`Client::server_info`), with whether its eviction policy can
//! lose jobs. Read at most once per [`HEALTH_FRESH`] however many pages poll, and for at most
//! [`HEALTH_QUEUES`] queues.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use futures_util::future::join_all;
use serde_json::{json, Value};
use tideq::QueueKind;

use super::{json_response, App};
use crate::render;

/// The health document is read from Redis at most this often.
pub const HEALTH_FRESH: Duration = Duration::from_secs(10);
/// Job queues whose latency and failures are read (the first ones by name); the overview says
/// when there are more.
pub const HEALTH_QUEUES: usize = 200;

const HOUR: Duration = Duration::from_secs(3600);

/// The last health document, and when it was read.
#[derive(Default)]
pub struct Health(Mutex<Option<(Instant, Value)>>);

pub async fn health(State(app): State<App>) -> Response {
    if let Some((at, v)) = app.cache.health.0.lock().unwrap().as_ref() {
        if at.elapsed() < HEALTH_FRESH {
            return json_response(StatusCode::OK, v.clone());
        }
    }
    let v = read(&app).await;
    *app.cache.health.0.lock().unwrap() = Some((Instant::now(), v.clone()));
    json_response(StatusCode::OK, v)
}

async fn read(app: &App) -> Value {
    let all: Vec<_> = app
        .cache
        .shown()
        .into_iter()
        .filter(|r| r.kind == QueueKind::Jobs)
        .collect();
    let more = all.len().saturating_sub(HEALTH_QUEUES);
    let per_queue = all.iter().take(HEALTH_QUEUES).map(|r| async move {
        let q = app.cache.handles.jobs(&app.client, &r.name, r.shards)?;
        let (stats, hour) = tokio::try_join!(q.stats(), q.history(HOUR, HOUR))?;
        let failed: u64 = hour.iter().map(|p| p.failed).sum();
        let dead: u64 = hour.iter().map(|p| p.dead_lettered).sum();
        Ok::<_, tideq::Error>(json!({
            "name": r.name,
            "latency": render::secs(stats.latency),
            "failed_last_hour": failed,
            "dead_lettered_last_hour": dead,
        }))
    });
    let queues: Vec<Value> = join_all(per_queue)
        .await
        .into_iter()
        .zip(&all)
        .map(|(got, r)| got.unwrap_or_else(|e| json!({ "name": r.name, "error": e.to_string() })))
        .collect();
    let redis = match app.client.server_info().await {
        Ok(info) => render::server_json(&info),
        Err(e) => json!({ "error": e.to_string() }),
    };
    json!({ "queues": queues, "queues_not_read": more, "redis": redis })
}
