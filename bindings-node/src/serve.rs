//! `serve(workers, options)`: the core's `tideq::serve`, the `main` of a worker process (and of
//! each child of `npx tideq worker`, started by the package's `lib/worker.js`). The binding reads
//! the arguments; stopping on SIGINT/SIGTERM, the health endpoint, the job limit and the status
//! lines to a supervisor are the core's.
#![cfg_attr(test, allow(dead_code))]

use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi_derive::napi;

use crate::convert::{array, count1, describe, read_value, string, Options};
use crate::error::{invalid, spawn, type_error, Failure, Res};
use crate::results::WorkerStats;
use crate::worker::Worker;

/// Options of `serve(workers, options)`. Every field is optional.
// Declared for the TypeScript definitions only; `convert::Options` reads the fields one by one.
#[allow(dead_code)]
#[napi(object, object_from_js = false, object_to_js = false)]
pub struct ServeOptions {
    /// Serve `GET /livez` (200 while serving) and `GET /readyz` (200 while every worker
    /// `isReady()`, else 503) on this address, `'host:port'` (e.g. `'127.0.0.1:8080'`), for
    /// liveness and readiness probes. Default: none.
    pub health: Option<String>,
    /// Most jobs the process leases over all its workers: once they have leased that many
    /// together, every worker stops gracefully and `serve` resolves (a supervisor then starts a
    /// fresh process). Each worker may lease up to its own batch more before it sees it; for an
    /// exact limit give each worker `maxJobs` as well. Default: no limit.
    pub max_jobs: Option<f64>,
}

const SERVE_KEYS: &[&str] = &["health", "maxJobs"];

/// `options.health`: an address `host:port`.
fn address(what: &str, v: &Unknown) -> Res<SocketAddr> {
    let text = string(what, v)?;
    text.to_socket_addrs()
        .ok()
        .and_then(|mut addrs| addrs.next())
        .ok_or_else(|| {
            invalid(format!(
                "{what} must be an address 'host:port', e.g. '127.0.0.1:8080'; got {text:?}"
            ))
        })
}

/// The arguments of `serve`: the workers (shared with their JS handles) and the core's options.
fn serve_args(
    workers: &Unknown,
    options: Option<&Unknown>,
) -> Res<(Vec<Arc<tideq::Worker>>, tideq::ServeOptions)> {
    let workers = array("serve workers", workers, |i, v| {
        read_value::<ClassInstance<Worker>>(v)
            .map(|w| w.inner.clone())
            .map_err(|_| {
                type_error(format!(
                    "serve workers[{i}] must be a Worker (from queue.work(...)); got {}",
                    describe(v)
                ))
            })
    })?;
    let opts = Options::new("serve options", options, SERVE_KEYS)?;
    let serve_opts = tideq::ServeOptions {
        health: opts.get("health", address)?,
        max_jobs: opts.get("maxJobs", count1)?.map(|n| n as u64),
        ..Default::default()
    };
    Ok((workers, serve_opts))
}

/// Runs started workers (e.g. one per queue, each `queue.work(...)` with its own concurrency)
/// as the process's main loop, and resolves with their stats, in order, once they have all
/// stopped:
/// - on SIGINT or SIGTERM every worker stops leasing and its running jobs get its `graceMs`; a
///   second signal aborts them (their jobs go back to the queue by their leases, never lost).
///   `serve` handles these signals itself: do not add `process.on('SIGTERM')` listeners too;
/// - once every worker stopped by itself (its `maxJobs` reached, `stopWhenDrained`), or the
///   workers together leased `options.maxJobs`;
/// - with `options.health`, `/livez` and `/readyz` are served meanwhile.
///
/// Under `npx tideq worker` (the environment variable `TIDEQ_SUPERVISOR_FD` set) it also reports
/// to the supervisor. Rejects with `INVALID_ARGUMENT` for no workers, a bad option or a health
/// address that cannot be bound (before anything runs), and, once every worker stopped, with the
/// error one of them stopped on (see `Worker.error`).
#[napi(
    ts_args_type = "workers: Worker[], options?: ServeOptions",
    ts_return_type = "Promise<WorkerStats[]>"
)]
pub fn serve<'env>(
    env: &'env Env,
    workers: Unknown,
    options: Option<Unknown>,
) -> Result<PromiseRaw<'env, Vec<WorkerStats>>> {
    let args = serve_args(&workers, options.as_ref());
    if args.is_ok() {
        crate::signal::release_node_handlers();
    }
    spawn(
        env,
        args.map(|(workers, opts)| async move {
            match tideq::serve(workers, opts).await {
                Ok(stats) => Ok(stats.into_iter().map(WorkerStats::from).collect()),
                Err(e) => Err(Failure::Core(e)),
            }
        }),
    )
}
