//! `tideq worker`: runs worker children of the Python or Node package and keeps them going
//! (restarts with backoff, recycling by jobs or memory, signals, health). The children are the
//! host's (`Host::child`); each runs `tideq::serve` and tells its readiness through a pipe on
//! fd 3 (`TIDEQ_SUPERVISOR_FD`). Files: `child.rs` one child, `supervisor.rs` the loop,
//! `health.rs` the probes, `log.rs` the log lines, `size.rs` sizes on the command line.

mod child;
mod health;
mod log;
mod size;
mod supervisor;

use std::ffi::OsString;
use std::net::SocketAddr;
use std::time::Duration;

use crate::args::{Conn, WorkerArgs};

pub(crate) use size::parse_size;

/// What runs one worker child, given by the package that runs the command line
/// ([`run_cli_with_host`](crate::run_cli_with_host)).
#[derive(Debug, Clone)]
pub struct Host {
    /// "python" or "node".
    pub runtime: &'static str,
    /// The argv prefix that starts one child, e.g. `[python, -m, tideq._worker]`; the target
    /// and the per-child flags follow.
    pub child: Vec<OsString>,
}

/// What the standalone binary answers to `tideq worker` (it has no host).
pub(crate) const NO_HOST: &str = "tideq worker: this command runs Python or Node workers and \
comes with their packages:
  pip install tideq     then  tideq worker app.tasks:queue
  npm install tideq     then  npx tideq worker ./tasks.mjs
A Rust program runs its workers with tideq::serve (signals, health endpoint, recycling): see \
the \"Running workers\" page of the docs.";

/// How processes are counted: a number, or `auto` (one per core).
pub(crate) fn parse_processes(s: &str) -> Result<usize, String> {
    if s == "auto" {
        return Ok(std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1));
    }
    match s.parse::<usize>() {
        Ok(n) if (1..=1024).contains(&n) => Ok(n),
        _ => Err(format!(
            "{s:?}: expected a number of processes from 1 to 1024, or auto (one per core)"
        )),
    }
}

/// `--queues emails=10,reports=2` (or names alone: the concurrency is then `--concurrency`'s).
pub(crate) fn parse_queues(s: &str) -> Result<String, String> {
    let mut seen = std::collections::HashSet::new();
    for item in s.split(',') {
        let (name, c) = match item.split_once('=') {
            Some((n, c)) => (n.trim(), Some(c.trim())),
            None => (item.trim(), None),
        };
        if name.is_empty() {
            return Err(format!(
                "{s:?}: expected queue names, each with an optional concurrency, e.g. \
                 emails=10,reports=2"
            ));
        }
        if let Some(c) = c {
            if !matches!(c.parse::<usize>(), Ok(n) if n >= 1) {
                return Err(format!(
                    "{s:?}: the concurrency of {name:?} must be a whole number of at least 1"
                ));
            }
        }
        if !seen.insert(name.to_string()) {
            return Err(format!("{s:?}: queue {name:?} is named twice"));
        }
    }
    Ok(s.split(',')
        .map(|i| i.trim().replace(' ', ""))
        .collect::<Vec<_>>()
        .join(","))
}

/// `--shutdown-grace SECONDS`.
pub(crate) fn parse_grace(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(g) if g.is_finite() && (0.0..=86_400.0).contains(&g) => Ok(g),
        _ => Err(format!(
            "{s:?}: expected seconds from 0 to 86400, e.g. 30 or 2.5"
        )),
    }
}

/// The supervisor's plan, from the command line.
pub(crate) struct Plan {
    pub runtime: &'static str,
    pub argv: Vec<OsString>,
    pub processes: usize,
    pub max_memory: Option<u64>,
    pub grace: Duration,
    pub health: Option<SocketAddr>,
    pub log: log::Logger,
}

/// `tideq worker ...` with a host: supervises the children until a signal stops it; returns
/// the exit code.
pub(crate) async fn run(host: &Host, conn: &Conn, a: WorkerArgs) -> u8 {
    if !conn.cluster.is_empty()
        || !conn.sentinel.is_empty()
        || conn.tls_ca.is_some()
        || conn.prefix.is_some()
        || conn.shards.is_some()
    {
        eprintln!(
            "tideq worker: --cluster, --sentinel, --tls-ca, --prefix and --shards are not \
             supported here: the target opens its queues with its own client (or the child \
             reads --url / TIDEQ_REDIS_URL)"
        );
        return 2;
    }
    if host.child.is_empty() {
        eprintln!("tideq worker: the host gave no child command");
        return 2;
    }
    let mut argv = host.child.clone();
    argv.push(a.target.clone().into());
    argv.push("--supervised".into());
    let mut flag = |name: &str, v: Option<String>| {
        if let Some(v) = v {
            argv.push(name.into());
            argv.push(v.into());
        }
    };
    flag("--url", conn.url.clone());
    flag("--queues", a.queues.clone());
    flag("--concurrency", a.concurrency.map(|c| c.to_string()));
    flag("--max-jobs", a.max_jobs_per_process.map(|n| n.to_string()));
    flag("--shutdown-grace", a.shutdown_grace.map(|g| g.to_string()));
    flag("--log-format", a.log_format.clone());
    flag("--log-level", a.log_level.clone());
    let plan = Plan {
        runtime: host.runtime,
        argv,
        processes: a.processes,
        max_memory: a.max_memory_per_process,
        grace: Duration::from_secs_f64(a.shutdown_grace.unwrap_or(10.0)),
        health: a.health,
        log: log::Logger {
            json: a.log_format.as_deref() == Some("json"),
            level: log::level_of(a.log_level.as_deref().unwrap_or("info")),
        },
    };
    supervisor::supervise(plan).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_flag_values_get_clear_errors() {
        assert_eq!(parse_processes("3"), Ok(3));
        assert!(parse_processes("auto").unwrap() >= 1);
        for bad in ["0", "-1", "two", "", "5000"] {
            assert!(
                parse_processes(bad).unwrap_err().contains("or auto"),
                "{bad}"
            );
        }
        assert_eq!(
            parse_queues("emails=10, reports=2"),
            Ok("emails=10,reports=2".into())
        );
        assert_eq!(parse_queues("emails"), Ok("emails".into()));
        assert!(parse_queues("emails=0").unwrap_err().contains("at least 1"));
        assert!(parse_queues("emails=x").unwrap_err().contains("at least 1"));
        assert!(parse_queues("=3").unwrap_err().contains("e.g. emails=10"));
        assert!(parse_queues("a,a=2").unwrap_err().contains("named twice"));
        assert_eq!(parse_grace("2.5"), Ok(2.5));
        for bad in ["-1", "NaN", "inf", "soon"] {
            assert!(parse_grace(bad).unwrap_err().contains("seconds"), "{bad}");
        }
    }
}
