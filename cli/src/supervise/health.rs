//! The supervisor's `--health` endpoint: `/livez` and `/readyz` (axum, served by `http.rs`).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use axum::http::StatusCode;
use axum::routing::get;
use axum::Router;
use tideq::CancellationToken;

/// What the probes answer, set by the supervisor's loop.
#[derive(Default)]
pub(crate) struct Probes {
    /// The supervisor runs and keeps its children (false once it is stopping).
    pub live: AtomicBool,
    /// Every child reported `ready 1` lately, and there are as many as asked.
    pub ready: AtomicBool,
}

/// Serves the probes on `addr` until `stop` is cancelled.
pub(crate) async fn start(
    addr: SocketAddr,
    probes: Arc<Probes>,
    stop: CancellationToken,
) -> Result<tokio::task::JoinHandle<()>, String> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| format!("cannot serve --health on {addr}: {e}"))?;
    let (l, r) = (probes.clone(), probes);
    let app =
        Router::new()
            .route(
                "/livez",
                get(
                    move || async move { answer(l.live.load(Ordering::Relaxed), "ok", "stopping") },
                ),
            )
            .route(
                "/readyz",
                get(move || async move {
                    answer(r.ready.load(Ordering::Relaxed), "ready", "not ready")
                }),
            );
    Ok(tokio::spawn(async move {
        let _ = crate::http::serve(listener, app, stop.cancelled_owned()).await;
    }))
}

fn answer(ok: bool, yes: &'static str, no: &'static str) -> (StatusCode, &'static str) {
    if ok {
        (StatusCode::OK, yes)
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, no)
    }
}
