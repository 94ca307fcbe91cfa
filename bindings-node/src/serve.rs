//! `serve(workers, options)`: the core's `tideq::serve`, the `main` of a worker process (and of
//! each child of `npx tideq worker`, started by the package's `worker.js`). The binding reads the
//! arguments; stopping on SIGINT/SIGTERM, the health endpoint, the job limit and the status lines
//! to a supervisor are the core's.
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

/// Node's own SIGINT and SIGTERM handlers are released to the default before the core listens to
/// these signals. Node installs them at startup, one-shot (`SA_RESETHAND`): they reset the
/// terminal and raise the signal again, to die of it. The core's signal listener calls the
/// handler it found, so that raise would come back to the listener, which would call it again:
/// an endless storm of signals (seen: the first SIGTERM read as thousands). A handler without
/// `SA_RESETHAND` (the core's own from an earlier `serve`, or libuv's for `process.on`) is left.
#[cfg(unix)]
fn release_node_signal_handlers() {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: sigaction reads the current disposition into a zeroed struct we own; signal
        // sets the default one. No handler of ours runs meanwhile.
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(sig, std::ptr::null(), &mut old) == 0
                && old.sa_flags & libc::SA_RESETHAND != 0
                && old.sa_sigaction != libc::SIG_DFL
                && old.sa_sigaction != libc::SIG_IGN
            {
                libc::signal(sig, libc::SIG_DFL);
            }
        }
    }
}

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
    #[cfg(unix)]
    if args.is_ok() {
        release_node_signal_handlers();
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
