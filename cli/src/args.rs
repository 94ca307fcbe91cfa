//! The command line's shape: every command, flag and help text, as clap reads them (the order
//! here is the order `--help` lists them in). What each command does is in the file named after
//! its role (see lib.rs).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::render::Payload;

#[derive(Parser)]
#[command(
    name = "tideq",
    version,
    about = "Inspect and operate tideq queues on Redis"
)]
pub(crate) struct Cli {
    #[command(flatten)]
    pub(crate) conn: Conn,
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// `tideq search ... --retry|--delete|--cancel`: act on every job the search finds.
#[derive(Args)]
pub(crate) struct SearchAction {
    /// Retry every dead job found (page by page; prints the counts).
    #[arg(long, group = "bulk")]
    pub(crate) retry: bool,
    /// Delete every finished job found.
    #[arg(long, group = "bulk")]
    pub(crate) delete: bool,
    /// Cancel every delayed, ready or active job found.
    #[arg(long, group = "bulk")]
    pub(crate) cancel: bool,
    /// Do not ask for confirmation.
    #[arg(long, short, requires = "bulk")]
    pub(crate) yes: bool,
}

/// How to reach Redis, as the libraries take it.
#[derive(Args)]
pub(crate) struct Conn {
    /// Redis URL (redis://, rediss://, redis://user:pass@host:port/db) [default: $TIDEQ_REDIS_URL,
    /// else redis://127.0.0.1:6379]
    #[arg(long, global = true, conflicts_with_all = ["cluster", "sentinel"])]
    pub(crate) url: Option<String>,
    /// A Redis Cluster seed node URL (repeatable).
    #[arg(long, global = true, value_name = "URL", conflicts_with = "sentinel")]
    pub(crate) cluster: Vec<String>,
    /// A Sentinel URL (repeatable); needs --master-name.
    #[arg(long, global = true, value_name = "URL", requires = "master_name")]
    pub(crate) sentinel: Vec<String>,
    /// The master name the Sentinels monitor.
    #[arg(long, global = true, value_name = "NAME")]
    pub(crate) master_name: Option<String>,
    /// PEM file of the CA to trust for rediss:// instead of the public roots.
    #[arg(long, global = true, value_name = "FILE")]
    pub(crate) tls_ca: Option<PathBuf>,
    /// Key prefix [default: tideq]
    #[arg(long, global = true)]
    pub(crate) prefix: Option<String>,
    /// Shards the queue is split in (as the application created it) [default: the count the
    /// queue recorded in Redis, else 1]. A count other than the recorded one is refused.
    #[arg(long, global = true, value_name = "N")]
    pub(crate) shards: Option<usize>,
    // Encryption at rest.
    /// A key file (`key_id=<64 hex digits or base64>` per line, the first key current) to open
    /// encrypted jobs and capped items with [default: $TIDEQ_KEY_FILE]; without one they show as "encrypted
    /// (key <id>)".
    #[arg(long, global = true, value_name = "FILE", env = "TIDEQ_KEY_FILE")]
    pub(crate) key_file: Option<PathBuf>,
}

#[derive(Subcommand)]
pub(crate) enum Command {
    /// The queues of both kinds under the key prefix (found with SCAN, on every primary of a
    /// cluster).
    Queues {
        #[arg(long)]
        json: bool,
    },
    /// A job queue's counts per state and lifetime counters.
    Stats {
        queue: String,
        /// Refresh in place every SECS seconds (default 2) until Ctrl-C.
        #[arg(long, value_name = "SECS", num_args = 0..=1, default_missing_value = "2")]
        watch: Option<f64>,
        #[arg(long)]
        json: bool,
    },
    /// The jobs in one state (delayed, ready, active, dead, completed), paged.
    Jobs {
        queue: String,
        state: String,
        #[command(flatten)]
        page: Page,
        #[arg(long)]
        json: bool,
    },
    /// One job: state, attempts, timestamps, last error, payload, result, progress; in a flow,
    /// its parent, and its first 20 children with how each ended and how many it has.
    Job {
        queue: String,
        id: String,
        /// How to show the payload (default: JSON if it parses, else text if UTF-8, else hex).
        #[arg(long, value_enum)]
        payload: Option<Payload>,
        #[arg(long)]
        json: bool,
    },
    /// Cancel jobs (one or up to 1000 ids): a delayed or ready one is removed, a running one is
    /// asked to stop.
    Cancel {
        queue: String,
        #[arg(required = true, num_args = 1..)]
        ids: Vec<String>,
    },
    /// Run a delayed job now (one waiting for its due time, a retry's backoff or a snooze).
    RunNow { queue: String, id: String },
    /// Retry dead jobs now (one or up to 1000 ids): back to ready, their attempts reset (as
    /// `dead requeue`).
    Retry {
        queue: String,
        #[arg(required = true, num_args = 1..)]
        ids: Vec<String>,
    },
    /// Delete finished (dead or completed) jobs (one or up to 1000 ids) and everything kept for
    /// them.
    Delete {
        queue: String,
        #[arg(required = true, num_args = 1..)]
        ids: Vec<String>,
        /// Do not ask for confirmation.
        #[arg(long, short)]
        yes: bool,
    },
    /// Find jobs by task or group, in one state or across the states (delayed, ready, active,
    /// dead, completed), a page at a time: each call looks at no more than 2000 jobs, so a page
    /// may hold fewer matches (even none) before the end; follow `--cursor` to go on.
    Search {
        queue: String,
        /// Only jobs of this task.
        #[arg(long)]
        task: Option<String>,
        /// Only jobs of this group.
        #[arg(long)]
        group: Option<String>,
        /// Only jobs in this state (default: every state in turn).
        #[arg(long)]
        state: Option<String>,
        /// Only jobs whose payload (a task's arguments) holds this text, e.g. an address.
        #[arg(long)]
        contains: Option<String>,
        /// Go on where an earlier page's cursor says (with the same filter).
        #[arg(long)]
        cursor: Option<String>,
        /// Most jobs shown (1 to 1000).
        #[arg(long, default_value_t = 50)]
        limit: usize,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        act: SearchAction,
    },
    // Bulk actions (bulk.rs).
    /// Run every delayed job of the queue now (--all).
    Promote {
        queue: String,
        /// Every delayed job (required: `run-now` runs one).
        #[arg(long, required = true)]
        all: bool,
        /// Do not ask for confirmation.
        #[arg(long, short)]
        yes: bool,
    },
    /// Delete the completed or dead jobs that finished more than --older-than ago.
    Clean {
        queue: String,
        /// completed or dead.
        state: String,
        /// How long ago at least: 30s, 15m, 1h, 7d (0: every one).
        #[arg(long, value_name = "AGE", value_parser = crate::bulk::age)]
        older_than: std::time::Duration,
        /// Do not ask for confirmation.
        #[arg(long, short)]
        yes: bool,
    },
    /// Delete the queue: every key of every shard (jobs in every state and their data,
    /// schedules, groups, history, settings). Refused while workers are live, unless --force.
    Obliterate {
        queue: String,
        /// Even while workers are live (their running jobs are lost).
        #[arg(long)]
        force: bool,
        /// Do not ask for confirmation (required when stdin is not a terminal).
        #[arg(long, short)]
        yes: bool,
    },
    /// Dead letters: list, requeue, purge.
    Dead {
        queue: String,
        #[command(subcommand)]
        action: Dead,
    },
    /// Stop starting jobs of the queue (or of one group).
    Pause {
        queue: String,
        #[arg(long)]
        group: Option<String>,
    },
    /// Start jobs of the queue (or of one group) again.
    Resume {
        queue: String,
        #[arg(long)]
        group: Option<String>,
    },
    /// The queue's limits (concurrency, rates, group defaults).
    Limits {
        queue: String,
        #[arg(long)]
        json: bool,
    },
    /// What a group holds and obeys.
    Group {
        queue: String,
        name: String,
        #[arg(long)]
        json: bool,
    },
    /// Every group the queue knows (with jobs, running jobs or settings of its own), by name;
    /// with --count or --cursor, one page of them and the cursor of the next.
    Groups {
        queue: String,
        /// Show one page of about this many groups (1-250).
        #[arg(long)]
        count: Option<usize>,
        /// Start the page where an earlier page's cursor says.
        #[arg(long)]
        cursor: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Enqueue one job (for testing).
    Enqueue {
        queue: String,
        #[command(flatten)]
        job: NewJob,
        #[arg(long)]
        json: bool,
    },
    /// The queue's schedules with their next slots, whether each is paused, and its last job's
    /// outcome; or an action on one of them (run, pause, resume, remove).
    Schedules {
        queue: String,
        #[command(subcommand)]
        action: Option<ScheduleAction>,
        #[arg(long, global = true)]
        json: bool,
    },
    /// The queue's live workers (seen in the last 45 s): host, pid, runtime, concurrency, running
    /// jobs, when each started and was last seen.
    Workers {
        queue: String,
        #[arg(long)]
        json: bool,
    },
    /// What the queue did in each step of a window (enqueued, completed, retried, dead-lettered,
    /// failed, cancelled, promotion lateness), from the snapshots its workers keep in Redis for
    /// 14 days; the last row is the step under way.
    History {
        queue: String,
        /// How far back: 90s, 30m, 1h, 14d (at most 14 days).
        #[arg(long, default_value = "1h", value_parser = crate::history::span)]
        window: std::time::Duration,
        /// One row per step, a whole number of minutes: 1m, 15m, 1h, 1d.
        #[arg(long, default_value = "1m", value_parser = crate::history::span)]
        step: std::time::Duration,
        #[arg(long)]
        json: bool,
    },
    /// Per task: jobs completed, failed attempts, jobs dead-lettered and handler run times
    /// (count, mean, total) over a window, from the counts the workers report (the first 100
    /// task names per queue; later ones count under "(other)", jobs without a task as "(none)").
    Tasks {
        queue: String,
        /// How far back: 1h, 1d, 14d (from 1 minute to 14 days).
        #[arg(long, default_value = "1h", value_parser = crate::history::span)]
        window: std::time::Duration,
        #[arg(long)]
        json: bool,
    },
    /// Follow the queue's event log (the queue's events must be on), until Ctrl-C.
    Events {
        queue: String,
        /// Keep this reader's place in Redis: started again, it resumes where it stopped.
        #[arg(long)]
        name: Option<String>,
        /// Start from the oldest event kept (default: from now on).
        #[arg(long)]
        from_start: bool,
        /// Stop after SECS seconds without an event.
        #[arg(long, value_name = "SECS")]
        idle: Option<f64>,
        /// One JSON object per line.
        #[arg(long)]
        json: bool,
    },
    /// A capped grouped queue: stats, groups, len, peek.
    Capped {
        queue: String,
        #[command(subcommand)]
        action: Capped,
    },
    /// Measure tideq against this Redis on a throwaway queue (tideq-bench-<random>): enqueue
    /// jobs, drain them with a worker (no-op handler), and compare with the raw Redis round-trip
    /// rate (pipelined PINGs) measured in the same run.
    Bench {
        /// Jobs to enqueue and process.
        #[arg(long, default_value_t = 20_000, value_name = "N")]
        jobs: usize,
        /// The worker's concurrency.
        #[arg(long, default_value_t = 100, value_name = "C")]
        concurrency: usize,
        /// One JSON object with the numbers.
        #[arg(long)]
        json: bool,
    },
    /// Serve Prometheus metrics of the queues at http://LISTEN/metrics until Ctrl-C.
    Exporter {
        /// Address to listen on.
        #[arg(long, default_value = "127.0.0.1:9464")]
        listen: String,
        /// Only these job queues (repeatable); default: every queue under the prefix.
        #[arg(long = "queue", value_name = "QUEUE")]
        queues: Vec<String>,
        /// Read the queues every SECS seconds (scrapes are answered from the last read).
        #[arg(long, default_value_t = 10.0, value_name = "SECS")]
        refresh: f64,
        /// Answer requests naming this host too (repeatable); loopback names always are.
        #[arg(long = "allow-host", value_name = "NAME")]
        allow_hosts: Vec<String>,
    },
    /// Serve a web dashboard of the queues at http://LISTEN/ until Ctrl-C: counts, throughput,
    /// history, jobs by state, search, a page per job with its actions (run now, cancel, retry,
    /// delete), dead letters (requeue, purge), pause/resume, workers, schedules, groups.
    Dashboard {
        /// Address to listen on.
        #[arg(long, default_value = "127.0.0.1:9465")]
        listen: String,
        /// Only these job queues (repeatable); default: every queue under the prefix.
        #[arg(long = "queue", value_name = "QUEUE")]
        queues: Vec<String>,
        /// Read the queues' counts every SECS seconds (the page is answered from the last read).
        #[arg(long, default_value_t = crate::dashboard::DEFAULT_REFRESH_SECS, value_name = "SECS")]
        refresh: f64,
        /// Show everything, change nothing (every POST is refused).
        #[arg(long)]
        read_only: bool,
        /// Require `Authorization: Bearer TOKEN` on the API (open the page as
        /// http://LISTEN/?token=TOKEN once).
        #[arg(long, env = "TIDEQ_DASHBOARD_TOKEN", hide_env_values = true)]
        token: Option<String>,
        /// A second token that may only read (its page shows no actions).
        #[arg(long, env = "TIDEQ_DASHBOARD_READ_TOKEN", hide_env_values = true)]
        read_token: Option<String>,
        /// Answer requests naming this host too (repeatable); loopback names always are.
        #[arg(long = "allow-host", value_name = "NAME")]
        allow_hosts: Vec<String>,
        /// Serve on a non-loopback address without a token (refused otherwise).
        #[arg(long)]
        insecure: bool,
    },
    /// Run the workers of a Python or Node target in supervised processes (restarted when they
    /// exit, recycled by jobs or memory), until SIGTERM or Ctrl-C. Comes with the Python and
    /// Node packages; Rust programs call `tideq::serve`.
    Worker(WorkerArgs),
    /// The Redis ACL rules of a role on a queue, as an ACL SETUSER line.
    Acl {
        queue: String,
        /// producer, worker, admin, capped-producer or capped-consumer.
        role: String,
        /// Print only the rules, not the ACL SETUSER line around them.
        #[arg(long)]
        rules_only: bool,
    },
}

/// One job for `tideq enqueue`: its payload (or task and arguments) and options.
#[derive(Args)]
pub(crate) struct NewJob {
    /// The payload as text.
    #[arg(conflicts_with = "data")]
    pub(crate) payload: Option<String>,
    /// Task name (the job's arguments are --data, as JSON).
    #[arg(long)]
    pub(crate) task: Option<String>,
    /// The payload (or the task's arguments) as JSON.
    #[arg(long, value_name = "JSON")]
    pub(crate) data: Option<String>,
    /// Job id (idempotent: an existing id is not enqueued again).
    #[arg(long)]
    pub(crate) id: Option<String>,
    /// Run no sooner than SECS seconds from now.
    #[arg(long, value_name = "SECS")]
    pub(crate) delay: Option<f64>,
    #[arg(long)]
    pub(crate) priority: Option<u32>,
    #[arg(long)]
    pub(crate) group: Option<String>,
}

/// A page of jobs: by default the first page of a walk by cursor (each page prints the cursor
/// of the next, and a walk never lists a job twice or skips one that stays put while workers
/// run); `--offset` reads a snapshot's page instead (offsets shift as jobs move).
#[derive(Args)]
pub(crate) struct Page {
    /// Start the page where an earlier page's cursor says.
    #[arg(long, conflicts_with = "offset")]
    pub(crate) cursor: Option<String>,
    /// Skip this many jobs of the state's order instead of walking by cursor.
    #[arg(long)]
    pub(crate) offset: Option<usize>,
    #[arg(long, default_value_t = 50)]
    pub(crate) limit: usize,
}

#[derive(Subcommand)]
pub(crate) enum Dead {
    /// The dead jobs, oldest death first.
    List {
        #[command(flatten)]
        page: Page,
        #[arg(long)]
        json: bool,
    },
    /// Move one dead job back to ready, its attempts reset.
    Requeue { id: String },
    /// Move every dead job back to ready.
    RequeueAll {
        /// Do not ask for confirmation.
        #[arg(long, short)]
        yes: bool,
    },
    /// Delete every dead job.
    Purge {
        /// Do not ask for confirmation.
        #[arg(long, short)]
        yes: bool,
    },
}

#[derive(Subcommand)]
pub(crate) enum Capped {
    /// Pushed, dropped, discarded, delivered, groups.
    Stats {
        #[arg(long)]
        json: bool,
    },
    /// Groups holding data, in round-robin order; with --count or --cursor, one page of them
    /// (in no particular order) and the cursor of the next.
    Groups {
        /// Show one page of about this many groups (1-250).
        #[arg(long)]
        count: Option<usize>,
        /// Start the page where an earlier page's cursor says.
        #[arg(long)]
        cursor: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Items queued in one group.
    Len { group: String },
    /// The oldest items of one group, oldest first, with when each was pushed; nothing is
    /// taken. (This command does not know the queue's max_age: items a consumer would discard
    /// as too old are shown too.) Encrypted items show as "encrypted (key <id>)" unless
    /// `--key-file` holds their key.
    Peek {
        group: String,
        /// Most items shown (1 to 1000).
        #[arg(long, default_value_t = tideq::capped::DEFAULT_PEEK, value_name = "N")]
        max: usize,
        /// How to show each item (default: JSON if it parses, else text if UTF-8, else hex).
        #[arg(long, value_enum)]
        payload: Option<Payload>,
        #[arg(long)]
        json: bool,
    },
}

/// `tideq worker`'s arguments (the URL is the global `--url`, else TIDEQ_REDIS_URL).
#[derive(Args)]
pub(crate) struct WorkerArgs {
    /// What to run: Python `module` or `module:attribute` (a Queue with tasks, a dict of
    /// handlers, or a function returning one); Node a module path exporting the same.
    pub(crate) target: String,
    /// Worker processes, or `auto` for one per core. SIGTTIN / SIGTTOU add / remove one.
    #[arg(long, value_name = "N|auto", default_value = "1", value_parser = crate::supervise::parse_processes)]
    pub(crate) processes: usize,
    /// Jobs run at the same time per process and queue [default: the library's, 10].
    #[arg(long, value_name = "C", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) concurrency: Option<u64>,
    /// The target's queues to serve, each with its own concurrency, e.g. emails=10,reports=2
    /// [default: every queue of the target].
    #[arg(long, value_name = "SPEC", value_parser = crate::supervise::parse_queues)]
    pub(crate) queues: Option<String>,
    /// Recycle a process after it has taken this many jobs (a fresh one starts first).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) max_jobs_per_process: Option<u64>,
    /// Recycle a process whose resident memory passes this size (e.g. 200MB, 1GiB, 500000K).
    #[arg(long, value_name = "SIZE", value_parser = crate::supervise::parse_size)]
    pub(crate) max_memory_per_process: Option<u64>,
    /// On SIGTERM or a recycling, how long running jobs may take [default: 10].
    #[arg(long, value_name = "SECONDS", value_parser = crate::supervise::parse_grace)]
    pub(crate) shutdown_grace: Option<f64>,
    /// Serve /livez and /readyz on this address (e.g. 127.0.0.1:8080) for probes.
    #[arg(long, value_name = "ADDR")]
    pub(crate) health: Option<std::net::SocketAddr>,
    /// The log lines' format: text or json (JSON lines) [default: text].
    #[arg(long, value_name = "FORMAT", value_parser = ["text", "json"])]
    pub(crate) log_format: Option<String>,
    /// The least level logged: error, warn, info or debug [default: info].
    #[arg(long, value_name = "LEVEL", value_parser = ["error", "warn", "info", "debug"])]
    pub(crate) log_level: Option<String>,
}

/// An action on one schedule (`tideq schedules QUEUE <action> NAME`).
#[derive(Subcommand)]
pub(crate) enum ScheduleAction {
    /// Enqueue one job of the schedule now; its next run stays as it was.
    Run { name: String },
    /// Pause the schedule: it keeps its definition and next run, and does not fire.
    Pause { name: String },
    /// Resume a paused schedule (a run missed while paused fires once, the latest).
    Resume { name: String },
    /// Remove the schedule: it fires no more.
    Remove { name: String },
}
