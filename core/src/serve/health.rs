//! `serve`'s health endpoint: `/livez` and `/readyz` over HTTP/1.1 (hyper).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

use crate::error::{Error, ErrorKind, Result};

/// Most connections served at once (probes are few; more wait to be accepted).
const MAX_CONNECTIONS: usize = 64;

/// A connection that sends no whole request head within this is closed.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// The endpoint, served until dropped.
pub(super) struct Health {
    ready: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<()>,
}

impl Health {
    pub async fn start(addr: SocketAddr) -> Result<Health> {
        let listener = TcpListener::bind(addr).await.map_err(|e| {
            Error::new(
                ErrorKind::InvalidArgument,
                format!("cannot serve the health endpoint on {addr}: {e}"),
            )
        })?;
        let ready = Arc::new(AtomicBool::new(false));
        let task = tokio::spawn(accept(listener, ready.clone()));
        Ok(Health { ready, task })
    }

    /// Stops serving: once this returns, the address is free.
    pub async fn stop(mut self) {
        self.task.abort();
        let _ = (&mut self.task).await;
    }

    pub fn set_ready(&self, ready: bool) {
        self.ready.store(ready, Ordering::Relaxed);
    }
}

impl Drop for Health {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn accept(listener: TcpListener, ready: Arc<AtomicBool>) {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let mut conns = tokio::task::JoinSet::new();
    loop {
        let Ok(slot) = slots.clone().acquire_owned().await else {
            return;
        };
        let stream = match listener.accept().await {
            Ok((s, _)) => s,
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        while conns.try_join_next().is_some() {}
        let ready = ready.clone();
        conns.spawn(async move {
            let service = hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
                let ready = ready.load(Ordering::Relaxed);
                async move { Ok::<_, Infallible>(answer(req.uri().path(), ready)) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_READ_TIMEOUT)
                .serve_connection(TokioIo::new(stream), service)
                .await;
            drop(slot);
        });
    }
}

/// The response to a request for `path`.
fn answer(path: &str, ready: bool) -> Response<Full<Bytes>> {
    let (code, body) = match path {
        "/livez" => (StatusCode::OK, "ok\n"),
        "/readyz" if ready => (StatusCode::OK, "ready\n"),
        "/readyz" => (StatusCode::SERVICE_UNAVAILABLE, "not ready\n"),
        _ => (StatusCode::NOT_FOUND, "not found\n"),
    };
    let mut r = Response::new(Full::new(Bytes::from_static(body.as_bytes())));
    *r.status_mut() = code;
    r
}
