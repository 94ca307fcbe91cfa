//! The HTTP server of `tideq exporter` and `tideq dashboard`: axum's router served over HTTP/1.1
//! by hyper, with two guards that `axum::serve` does not have.
//!
//! - A header-read timeout ([`HEADER_READ_TIMEOUT`]): a connection that does not send a whole
//!   request head within it, be it a new connection or an idle kept-alive one, is closed.
//! - A cap on open connections ([`MAX_CONNECTIONS`]): at the cap, a new connection closes the
//!   oldest one with no request in progress (an idle one, or one still sending its head), so
//!   idle connections can never keep a real request out, nor run the process out of file
//!   descriptors. When all are busy the new one is closed. When accepting fails for want of file
//!   descriptors, the oldest idle connection is closed too.

use std::collections::VecDeque;
use std::future::Future;
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tideq::CancellationToken;
use tokio::net::TcpListener;
use tower::ServiceExt;

/// A connection that has not sent a whole request head this long after it opened (or after its
/// last response) is closed.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// Most connections open at once; more close the oldest idle one.
pub const MAX_CONNECTIONS: usize = 512;

/// One open connection: how many of its requests are in progress, and how to close it.
struct Conn {
    id: u64,
    busy: AtomicUsize,
    close: CancellationToken,
}

/// The open connections, oldest first.
#[derive(Default)]
struct Open {
    next_id: u64,
    conns: VecDeque<Arc<Conn>>,
}

impl Open {
    /// Closes the oldest connection with no request in progress; false when there is none.
    fn close_oldest_idle(&mut self) -> bool {
        let idle = self
            .conns
            .iter()
            .position(|c| c.busy.load(Ordering::Acquire) == 0);
        match idle.and_then(|i| self.conns.remove(i)) {
            Some(c) => {
                c.close.cancel();
                true
            }
            None => false,
        }
    }
}

/// Counts a request in progress on its connection until dropped.
struct Busy(Arc<Conn>);

impl Busy {
    fn new(c: &Arc<Conn>) -> Self {
        c.busy.fetch_add(1, Ordering::AcqRel);
        Busy(c.clone())
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.busy.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Whether accepting failed for want of file descriptors (the process's or the system's).
fn out_of_fds(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(23 | 24)) // ENFILE, EMFILE
}

/// Serves `router` on `listener` until `shutdown` resolves, then lets the requests in progress
/// finish.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    shutdown: impl Future<Output = ()>,
) -> io::Result<()> {
    let open = Arc::new(Mutex::new(Open::default()));
    let stopping = CancellationToken::new();
    let mut tasks = tokio::task::JoinSet::new();
    tokio::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            _ = &mut shutdown => break,
            a = listener.accept() => a,
        };
        // Reap the tasks of closed connections.
        while tasks.try_join_next().is_some() {}
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(e) if out_of_fds(&e) => {
                if !open.lock().unwrap().close_oldest_idle() {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                continue;
            }
            // A connection reset before it was accepted, and the like: go on.
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let conn = {
            let mut o = open.lock().unwrap();
            if o.conns.len() >= MAX_CONNECTIONS && !o.close_oldest_idle() {
                // Every connection has a request in progress: refuse this one.
                continue;
            }
            o.next_id += 1;
            let c = Arc::new(Conn {
                id: o.next_id,
                busy: AtomicUsize::new(0),
                close: CancellationToken::new(),
            });
            o.conns.push_back(c.clone());
            c
        };
        let _ = stream.set_nodelay(true);
        let (open, stopping, router) = (open.clone(), stopping.clone(), router.clone());
        tasks.spawn(async move {
            let svc = {
                let conn = conn.clone();
                hyper::service::service_fn(move |req: Request<Incoming>| {
                    let busy = Busy::new(&conn);
                    let router = router.clone();
                    async move {
                        let resp = router.oneshot(req.map(Body::new)).await;
                        drop(busy);
                        resp
                    }
                })
            };
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_READ_TIMEOUT);
            let served = builder.serve_connection(TokioIo::new(stream), svc);
            tokio::pin!(served);
            tokio::select! {
                _ = served.as_mut() => {}
                // Closed to make room: drop the connection at once.
                _ = conn.close.cancelled() => {}
                _ = stopping.cancelled() => {
                    served.as_mut().graceful_shutdown();
                    let _ = served.await;
                }
            }
            let mut o = open.lock().unwrap();
            if let Some(i) = o.conns.iter().position(|c| c.id == conn.id) {
                o.conns.remove(i);
            }
        });
    }
    stopping.cancel();
    while tasks.join_next().await.is_some() {}
    Ok(())
}
