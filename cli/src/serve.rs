//! The long-running commands: `tideq bench`, `tideq exporter` and `tideq dashboard`, their
//! flags checked here before bench.rs, exporter.rs and dashboard.rs run.

use std::time::Duration;

use crate::args::Conn;
use crate::connect::{client, named_queues_exist};
use crate::exit::{print, Failure, Outcome};
use crate::{bench, dashboard, exporter};

/// `tideq bench [--jobs N] [--concurrency C]`.
pub(crate) async fn bench(c: &Conn, jobs: usize, concurrency: usize, json: bool) -> Outcome {
    let client = client(c)?;
    let report = bench::run(&client, c.shards.unwrap_or(1), jobs, concurrency).await?;
    print(&report.render(json));
    Ok(())
}

/// `tideq exporter [--listen ADDR] [--queue Q]... [--refresh SECS]`.
pub(crate) async fn exporter(
    c: &Conn,
    listen: &str,
    queues: Vec<String>,
    refresh: f64,
    allow_hosts: Vec<String>,
) -> Outcome {
    let refresh = refresh_secs(refresh)?;
    let client = client(c)?;
    named_queues_exist(&client, &queues).await?;
    exporter::run(client, c.shards, queues, listen, refresh, allow_hosts)
        .await
        .map_err(Failure::Usage)
}

/// `tideq dashboard`'s arguments (but `--listen`).
pub(crate) struct DashboardArgs {
    pub queues: Vec<String>,
    pub refresh: f64,
    pub read_only: bool,
    pub token: Option<String>,
    pub read_token: Option<String>,
    pub allow_hosts: Vec<String>,
    pub insecure: bool,
}

/// `tideq dashboard [--listen ADDR] [--queue Q]... [--refresh SECS] [--read-only] [--token T]
/// [--read-token T] [--allow-host NAME]... [--insecure]`.
pub(crate) async fn dashboard(c: &Conn, listen: &str, a: DashboardArgs) -> Outcome {
    for (flag, t) in [("--token", &a.token), ("--read-token", &a.read_token)] {
        if t.as_deref() == Some("") {
            return Err(Failure::Usage(format!("{flag} must not be empty")));
        }
    }
    if a.token.is_some() && a.token == a.read_token {
        return Err(Failure::Usage(
            "--read-token must differ from --token".to_string(),
        ));
    }
    let opts = dashboard::Options {
        shards: c.shards,
        named: a.queues,
        refresh: refresh_secs(a.refresh)?,
        read_only: a.read_only,
        token: a.token,
        read_token: a.read_token,
        allow_hosts: a.allow_hosts,
        insecure: a.insecure,
    };
    let client = client(c)?;
    named_queues_exist(&client, &opts.named).await?;
    dashboard::run(client, opts, listen)
        .await
        .map_err(Failure::Usage)
}

/// `--refresh` of the exporter and the dashboard: at least 0.1 s.
fn refresh_secs(secs: f64) -> Result<Duration, Failure> {
    Duration::try_from_secs_f64(secs)
        .ok()
        .filter(|d| *d >= Duration::from_millis(100))
        .ok_or_else(|| {
            Failure::Usage(format!(
                "--refresh must be at least 0.1 seconds, not {secs}"
            ))
        })
}
