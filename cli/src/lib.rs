//! `tideq`: the operator command line, as a library so that the Python and Node packages run the
//! same code as their `tideq` command ([`run_cli`]). Every operation is a call of the core crate's public API
//! (no key, script or queue rule lives here). This file runs the command line and maps each
//! command to the file named after its role, as in the core:
//!
//! - `args.rs`: the commands and flags (clap); `connect.rs`: the connection they describe;
//!   `exit.rs`: output, failures and exit codes.
//! - `jobs.rs` (enqueue), `admin.rs` (stats, jobs, job, search, cancel, run-now, retry, delete,
//!   dead letters), `control.rs` (pause, resume, limits, groups), `schedule.rs`, `workers.rs`, `history.rs`, `tasks.rs`, `events.rs`, `capped.rs`, `discover.rs` (queues), `acl.rs`.
//! - `serve.rs`: bench, exporter and dashboard (`bench.rs`, `exporter.rs`, `dashboard.rs`; `http.rs`
//!   the HTTP server both use: a header-read timeout and a cap on connections).
//! - `supervise/`: `tideq worker`, the supervisor of the Python and Node packages' worker
//!   children ([`run_cli_with_host`], [`Host`]).
//! - `render/`: the core's values as aligned text or JSON, by the same roles.
//!
//! Exit codes: 0 ok, 1 a Redis/connection/auth error, 2 a usage error or bad input
//! (`INVALID_ARGUMENT`), 3 not found.

mod acl;
mod admin;
mod args;
mod bench;
mod bulk;
mod capped;
mod connect;
mod control;
pub mod dashboard;
mod discover;
mod events;
mod exit;
mod exporter;
mod history;
mod hosts;
mod http;
mod jobs;
mod render;
mod schedule;
mod serve;
mod supervise;
mod tasks;
mod workers;

pub use supervise::Host;

use clap::Parser;

use args::{Cli, Command};
use exit::Outcome;

/// Runs the command line on `args` (the first one is the program name) and returns the exit
/// code (see the crate docs). Usage errors and `--help` print as clap prints them.
pub fn run_cli<I, T>(args: I) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    run_cli_inner(args, None)
}

/// [`run_cli`] for a package that can start worker children: `tideq worker` runs `host.child`
/// (see [`Host`]) under a supervisor. The standalone binary has no host; its `tideq worker`
/// names the packages and exits 2.
pub fn run_cli_with_host<I, T>(args: I, host: Host) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    run_cli_inner(args, Some(host))
}

fn run_cli_inner<I, T>(args: I, host: Option<Host>) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return e.exit_code().clamp(0, 255) as u8;
        }
    };
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("tideq: cannot start the runtime: {e}");
            return 1;
        }
    };
    let cli = match cli.command {
        Command::Worker(w) => {
            let Some(host) = host else {
                eprintln!("{}", supervise::NO_HOST);
                return 2;
            };
            return rt.block_on(supervise::run(&host, &cli.conn, w));
        }
        command => Cli { command, ..cli },
    };
    let result = rt.block_on(run(cli));
    // A reader that closed stdout (`| head -1`) ends the command, quietly and successfully.
    if exit::stdout_closed() {
        return 0;
    }
    match result {
        Ok(()) => 0,
        Err(f) => {
            // Core errors never hold a password; nothing here prints the URL.
            eprintln!("tideq: {f}");
            f.code()
        }
    }
}

/// One command, run by the file of its role.
async fn run(cli: Cli) -> Outcome {
    let c = &cli.conn;
    match cli.command {
        Command::Queues { json } => discover::queues(c, json).await,
        Command::Stats { queue, watch, json } => admin::stats(c, &queue, watch, json).await,
        Command::Jobs {
            queue,
            state,
            page,
            json,
        } => admin::jobs(c, &queue, &state, page, json).await,
        Command::Job {
            queue,
            id,
            payload,
            json,
        } => admin::job(c, &queue, &id, payload, json).await,
        Command::Cancel { queue, ids } => bulk::cancel(c, &queue, ids).await,
        Command::RunNow { queue, id } => admin::run_now(c, &queue, &id).await,
        Command::Retry { queue, ids } => bulk::retry(c, &queue, ids).await,
        Command::Delete { queue, ids, yes } => bulk::delete(c, &queue, ids, yes).await,
        Command::Search {
            queue,
            task,
            group,
            state,
            contains,
            cursor,
            limit,
            json,
            act,
        } => {
            let filter = admin::filter(task, group, state, contains)?;
            match bulk::search_action(&act) {
                Some(action) => bulk::found(c, &queue, action, &filter, cursor, act.yes).await,
                None => admin::search(c, &queue, &filter, cursor, limit, json).await,
            }
        }
        Command::Promote { queue, all: _, yes } => bulk::promote_all(c, &queue, yes).await,
        Command::Clean {
            queue,
            state,
            older_than,
            yes,
        } => bulk::clean(c, &queue, &state, older_than, yes).await,
        Command::Obliterate { queue, force, yes } => bulk::obliterate(c, &queue, force, yes).await,
        Command::Dead { queue, action } => admin::dead(c, &queue, action).await,
        Command::Pause { queue, group } => control::pause(c, &queue, group).await,
        Command::Resume { queue, group } => control::resume(c, &queue, group).await,
        Command::Limits { queue, json } => control::limits(c, &queue, json).await,
        Command::Group { queue, name, json } => control::group(c, &queue, &name, json).await,
        Command::Groups {
            queue,
            count,
            cursor,
            json,
        } => control::groups(c, &queue, count, cursor, json).await,
        Command::Enqueue { queue, job, json } => jobs::enqueue(c, &queue, job, json).await,
        Command::Schedules {
            queue,
            action,
            json,
        } => match action {
            None => schedule::schedules(c, &queue, json).await,
            Some(a) => schedule::action(c, &queue, a, json).await,
        },
        Command::Workers { queue, json } => workers::workers(c, &queue, json).await,
        Command::History {
            queue,
            window,
            step,
            json,
        } => history::history(c, &queue, window, step, json).await,
        Command::Tasks {
            queue,
            window,
            json,
        } => tasks::tasks(c, &queue, window, json).await,
        Command::Events {
            queue,
            name,
            from_start,
            idle,
            json,
        } => events::events(c, &queue, name, from_start, idle, json).await,
        Command::Capped { queue, action } => capped::capped(c, &queue, action).await,
        Command::Bench {
            jobs,
            concurrency,
            json,
        } => serve::bench(c, jobs, concurrency, json).await,
        Command::Exporter {
            listen,
            queues,
            refresh,
            allow_hosts,
        } => serve::exporter(c, &listen, queues, refresh, allow_hosts).await,
        Command::Dashboard {
            listen,
            queues,
            refresh,
            read_only,
            token,
            read_token,
            allow_hosts,
            insecure,
        } => {
            let opts = serve::DashboardArgs {
                queues,
                refresh,
                read_only,
                token,
                read_token,
                allow_hosts,
                insecure,
            };
            serve::dashboard(c, &listen, opts).await
        }
        Command::Acl {
            queue,
            role,
            rules_only,
        } => acl::acl(c, &queue, &role, rules_only),
        Command::Worker(_) => unreachable!("run_cli_inner runs `worker`"),
    }
}
