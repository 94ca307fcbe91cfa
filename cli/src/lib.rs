//! `tideq`: the operator command line, as a library so that the Python and Node packages run the
//! same code as their `tideq` command ([`run_cli`]). Every operation is a call of the core crate's public API
//! (no key, script or queue rule lives here): this file parses the arguments, builds the
//! connection and runs the command; `render.rs` turns the core's values into aligned text or JSON.
//!
//! Exit codes: 0 ok, 1 a Redis/connection/auth error, 2 a usage error or bad input
//! (`INVALID_ARGUMENT`), 3 not found.

mod bench;
mod dashboard;
mod exporter;
mod render;

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use tideq::acl::{self, Role};
use tideq::{
    CappedOptions, CappedQueue, Client, Config, EnqueueOptions, ErrorKind, JobState, PayloadFormat,
    Queue, QueueOptions,
};

use render::Payload;

#[derive(Parser)]
#[command(
    name = "tideq",
    version,
    about = "Inspect and operate tideq queues on Redis"
)]
struct Cli {
    #[command(flatten)]
    conn: Conn,
    #[command(subcommand)]
    command: Command,
}

/// How to reach Redis, as the libraries take it.
#[derive(Args)]
struct Conn {
    /// Redis URL (redis://, rediss://, redis://user:pass@host:port/db) [default: $TIDEQ_REDIS_URL,
    /// else redis://127.0.0.1:6379]
    #[arg(long, global = true, conflicts_with_all = ["cluster", "sentinel"])]
    url: Option<String>,
    /// A Redis Cluster seed node URL (repeatable).
    #[arg(long, global = true, value_name = "URL", conflicts_with = "sentinel")]
    cluster: Vec<String>,
    /// A Sentinel URL (repeatable); needs --master-name.
    #[arg(long, global = true, value_name = "URL", requires = "master_name")]
    sentinel: Vec<String>,
    /// The master name the Sentinels monitor.
    #[arg(long, global = true, value_name = "NAME")]
    master_name: Option<String>,
    /// PEM file of the CA to trust for rediss:// instead of the public roots.
    #[arg(long, global = true, value_name = "FILE")]
    tls_ca: Option<PathBuf>,
    /// Key prefix [default: tideq]
    #[arg(long, global = true)]
    prefix: Option<String>,
    /// Shards the queue is split in (as the application created it).
    #[arg(long, global = true, default_value_t = 1, value_name = "N")]
    shards: usize,
}

#[derive(Subcommand)]
enum Command {
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
    /// One job: state, attempts, timestamps, last error, payload, result, progress.
    Job {
        queue: String,
        id: String,
        /// How to show the payload (default: JSON if it parses, else text if UTF-8, else hex).
        #[arg(long, value_enum)]
        payload: Option<Payload>,
        #[arg(long)]
        json: bool,
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
        /// The payload as text.
        #[arg(conflicts_with = "data")]
        payload: Option<String>,
        /// Task name (the job's arguments are --data, as JSON).
        #[arg(long)]
        task: Option<String>,
        /// The payload (or the task's arguments) as JSON.
        #[arg(long, value_name = "JSON")]
        data: Option<String>,
        /// Job id (idempotent: an existing id is not enqueued again).
        #[arg(long)]
        id: Option<String>,
        /// Run no sooner than SECS seconds from now.
        #[arg(long, value_name = "SECS")]
        delay: Option<f64>,
        #[arg(long)]
        priority: Option<u32>,
        #[arg(long)]
        group: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// The queue's schedules with their next slots.
    Schedules {
        queue: String,
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
    },
    /// Serve a web dashboard of the queues at http://LISTEN/ until Ctrl-C: counts, throughput,
    /// jobs by state, dead letters (requeue, purge), pause/resume, schedules, groups.
    Dashboard {
        /// Address to listen on.
        #[arg(long, default_value = "127.0.0.1:9465")]
        listen: String,
        /// Only these job queues (repeatable); default: every queue under the prefix.
        #[arg(long = "queue", value_name = "QUEUE")]
        queues: Vec<String>,
        /// Read the queues' counts every SECS seconds (the page is answered from the last read).
        #[arg(long, default_value_t = dashboard::DEFAULT_REFRESH_SECS, value_name = "SECS")]
        refresh: f64,
        /// Show everything, change nothing (every POST is refused).
        #[arg(long)]
        read_only: bool,
        /// Require `Authorization: Bearer TOKEN` on the API (open the page as
        /// http://LISTEN/?token=TOKEN once).
        #[arg(long, env = "TIDEQ_DASHBOARD_TOKEN", hide_env_values = true)]
        token: Option<String>,
    },
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

/// A page of jobs: by default the first page of a walk by cursor (each page prints the cursor
/// of the next, and a walk never lists a job twice or skips one that stays put while workers
/// run); `--offset` reads a snapshot's page instead (offsets shift as jobs move).
#[derive(Args)]
struct Page {
    /// Start the page where an earlier page's cursor says.
    #[arg(long, conflicts_with = "offset")]
    cursor: Option<String>,
    /// Skip this many jobs of the state's order instead of walking by cursor.
    #[arg(long)]
    offset: Option<usize>,
    #[arg(long, default_value_t = 50)]
    limit: usize,
}

/// Prints a page of `state`'s jobs (see [`Page`]).
async fn print_jobs(q: &Queue, state: JobState, page: Page, json: bool) -> Outcome {
    match page.offset {
        Some(offset) => {
            let jobs = q.jobs(state, offset, page.limit).await?;
            print(&render::job_list(&jobs, json));
        }
        None => {
            let p = q
                .jobs_page(state, page.cursor.as_deref(), page.limit)
                .await?;
            print(&render::job_page(&p, json));
        }
    }
    Ok(())
}

#[derive(Subcommand)]
enum Dead {
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
enum Capped {
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
    /// as too old are shown too.)
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

/// Why the command failed, and so its exit code.
enum Failure {
    /// An error of the core (its kind decides the code).
    Tideq(tideq::Error),
    /// Bad input found here (2).
    Usage(String),
    /// Nothing with that id (3).
    NotFound(String),
}

impl From<tideq::Error> for Failure {
    fn from(e: tideq::Error) -> Self {
        Failure::Tideq(e)
    }
}

impl Failure {
    fn code(&self) -> u8 {
        match self {
            Failure::Usage(_) => 2,
            Failure::NotFound(_) => 3,
            Failure::Tideq(e) => match e.kind() {
                ErrorKind::InvalidArgument | ErrorKind::PayloadTooLarge => 2,
                ErrorKind::JobNotFound => 3,
                _ => 1,
            },
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Tideq(e) => write!(f, "{e}"),
            Failure::Usage(m) | Failure::NotFound(m) => f.write_str(m),
        }
    }
}

type Outcome = Result<(), Failure>;

/// Runs the command line on `args` (the first one is the program name) and returns the exit
/// code (see the crate docs). Usage errors and `--help` print as clap prints them.
pub fn run_cli<I, T>(args: I) -> u8
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
    match rt.block_on(run(cli)) {
        Ok(()) => 0,
        Err(f) => {
            // Core errors never hold a password; nothing here prints the URL.
            eprintln!("tideq: {f}");
            f.code()
        }
    }
}

fn config(c: &Conn) -> Result<Config, Failure> {
    let mut cfg = if !c.cluster.is_empty() {
        Config::cluster(c.cluster.clone())
    } else if !c.sentinel.is_empty() {
        Config::sentinel(
            c.sentinel.clone(),
            c.master_name.clone().unwrap_or_default(),
        )
    } else {
        Config::new(c.url.clone().unwrap_or_else(Config::env_url))
    };
    if let Some(path) = &c.tls_ca {
        let pem = std::fs::read(path)
            .map_err(|e| Failure::Usage(format!("cannot read --tls-ca {}: {e}", path.display())))?;
        cfg = cfg.with_tls_ca(pem);
    }
    if let Some(p) = &c.prefix {
        cfg = cfg.with_prefix(p.clone());
    }
    Ok(cfg)
}

fn job_queue(c: &Conn, name: &str) -> Result<Queue, Failure> {
    let client = Client::new(config(c)?)?;
    Ok(Queue::sharded(
        &client,
        name,
        c.shards,
        QueueOptions::default(),
    )?)
}

async fn run(cli: Cli) -> Outcome {
    let c = &cli.conn;
    match cli.command {
        Command::Stats { queue, watch, json } => {
            let q = job_queue(c, &queue)?;
            match watch {
                None => print(&render::stats(&q.stats().await?, json)),
                Some(secs) => watch_stats(&q, secs, json).await?,
            }
        }
        Command::Jobs {
            queue,
            state,
            page,
            json,
        } => {
            let state = JobState::parse(&state)?;
            let q = job_queue(c, &queue)?;
            print_jobs(&q, state, page, json).await?;
        }
        Command::Job {
            queue,
            id,
            payload,
            json,
        } => {
            let q = job_queue(c, &queue)?;
            match q.get(&id).await? {
                Some(info) => print(&render::job(&info, payload, json)),
                None => return Err(not_found(&queue, &id)),
            }
        }
        Command::Dead { queue, action } => {
            let q = job_queue(c, &queue)?;
            dead(&q, action).await?;
        }
        Command::Pause { queue, group } => {
            let q = job_queue(c, &queue)?;
            match &group {
                Some(g) => q.pause_group(g).await?,
                None => q.pause().await?,
            }
            print(&format!("paused {}", target(&queue, &group)));
        }
        Command::Resume { queue, group } => {
            let q = job_queue(c, &queue)?;
            match &group {
                Some(g) => q.resume_group(g).await?,
                None => q.resume().await?,
            }
            print(&format!("resumed {}", target(&queue, &group)));
        }
        Command::Queues { json } => {
            let client = Client::new(config(c)?)?;
            print(&render::queues(&client.queues().await?, json));
        }
        Command::Schedules { queue, json } => {
            let q = job_queue(c, &queue)?;
            print(&render::schedules(&q.schedules().await?, json));
        }
        Command::Events {
            queue,
            name,
            from_start,
            idle,
            json,
        } => {
            let idle = match idle {
                None => None,
                Some(s) => Some(Duration::try_from_secs_f64(s).map_err(|_| {
                    Failure::Usage(format!("--idle must be a number of seconds >= 0, not {s}"))
                })?),
            };
            let q = job_queue(c, &queue)?;
            let mut ev = q.events(tideq::EventsOptions { name, from_start }).await?;
            let ctrl_c = tokio::signal::ctrl_c();
            tokio::pin!(ctrl_c);
            loop {
                tokio::select! {
                    next = ev.next(idle) => match next? {
                        Some(e) => println!("{}", render::event(&e, json)),
                        None => break,
                    },
                    _ = &mut ctrl_c => break,
                }
            }
            ev.commit().await?;
        }
        Command::Limits { queue, json } => {
            let q = job_queue(c, &queue)?;
            print(&render::limits(&q.limits().await?, json));
        }
        Command::Group { queue, name, json } => {
            let q = job_queue(c, &queue)?;
            print(&render::group(&q.group(&name).await?, json));
        }
        Command::Groups {
            queue,
            count,
            cursor,
            json,
        } => {
            let q = job_queue(c, &queue)?;
            if count.is_none() && cursor.is_none() {
                print(&render::groups(&q.groups().await?, json));
            } else {
                let page = q
                    .groups_page(
                        cursor.as_deref(),
                        count.unwrap_or(tideq::DEFAULT_GROUP_PAGE),
                    )
                    .await?;
                print(&render::groups_page(&page, json));
            }
        }
        Command::Enqueue {
            queue,
            payload,
            task,
            data,
            id,
            delay,
            priority,
            group,
            json,
        } => {
            let delay = match delay {
                None => None,
                Some(s) => Some(Duration::try_from_secs_f64(s).map_err(|_| {
                    Failure::Usage(format!("--delay must be a number of seconds >= 0, not {s}"))
                })?),
            };
            let opts = EnqueueOptions {
                id,
                delay,
                priority,
                group,
                ..Default::default()
            };
            let q = job_queue(c, &queue)?;
            let done = match (data, task) {
                (Some(text), task) => {
                    let value: serde_json::Value = serde_json::from_str(&text)
                        .map_err(|e| Failure::Usage(format!("--data is not JSON: {e}")))?;
                    match task {
                        Some(name) => q.enqueue_task(&name, &value, opts).await?,
                        None => {
                            let opts = EnqueueOptions {
                                format: Some(PayloadFormat::Json),
                                ..opts
                            };
                            q.enqueue(value.to_string(), opts).await?
                        }
                    }
                }
                (None, task) => {
                    let opts = EnqueueOptions { task, ..opts };
                    q.enqueue(payload.unwrap_or_default(), opts).await?
                }
            };
            print(&render::enqueued(&done, json));
        }
        Command::Capped { queue, action } => {
            let client = Client::new(config(c)?)?;
            let q = CappedQueue::sharded(&client, &queue, c.shards, CappedOptions::default())?;
            match action {
                Capped::Stats { json } => print(&render::capped_stats(&q.stats().await?, json)),
                Capped::Groups {
                    count,
                    cursor,
                    json,
                } => {
                    if count.is_none() && cursor.is_none() {
                        print(&render::names(&q.groups().await?, json));
                    } else {
                        let page = q
                            .groups_page(
                                cursor.as_deref(),
                                count.unwrap_or(tideq::DEFAULT_GROUP_PAGE),
                            )
                            .await?;
                        print(&render::names_page(&page, json));
                    }
                }
                Capped::Len { group } => print(&q.len(&group).await?.to_string()),
                Capped::Peek {
                    group,
                    max,
                    payload,
                    json,
                } => print(&render::peeked(&q.peek(&group, max).await?, payload, json)),
            }
        }
        Command::Bench {
            jobs,
            concurrency,
            json,
        } => {
            let client = Client::new(config(c)?)?;
            let report = bench::run(&client, c.shards, jobs, concurrency).await?;
            print(&report.render(json));
        }
        Command::Exporter {
            listen,
            queues,
            refresh,
        } => {
            let refresh = refresh_secs(refresh)?;
            let client = Client::new(config(c)?)?;
            exporter::run(client, c.shards, queues, &listen, refresh)
                .await
                .map_err(Failure::Usage)?;
        }
        Command::Dashboard {
            listen,
            queues,
            refresh,
            read_only,
            token,
        } => {
            if token.as_deref() == Some("") {
                return Err(Failure::Usage(
                    "--token (or TIDEQ_DASHBOARD_TOKEN) must not be empty".to_string(),
                ));
            }
            let opts = dashboard::Options {
                shards: c.shards,
                named: queues,
                refresh: refresh_secs(refresh)?,
                read_only,
                token,
            };
            let client = Client::new(config(c)?)?;
            dashboard::run(client, opts, &listen)
                .await
                .map_err(Failure::Usage)?;
        }
        Command::Acl {
            queue,
            role,
            rules_only,
        } => {
            let prefix = config(c)?.prefix().to_string();
            let role = Role::parse(&role)?;
            let rules = acl::rules(&prefix, &queue, c.shards, role)?;
            if rules_only {
                print(&rules);
            } else {
                print(&format!(
                    "ACL SETUSER {queue}-{} on >{} {rules}",
                    role.as_str(),
                    render::PASSWORD_PLACEHOLDER
                ));
            }
        }
    }
    Ok(())
}

async fn dead(q: &Queue, action: Dead) -> Outcome {
    match action {
        Dead::List { page, json } => print_jobs(q, JobState::Dead, page, json).await?,
        Dead::Requeue { id } => {
            match q.requeue(&id).await {
                Err(e) if e.kind() == ErrorKind::JobNotFound => {
                    return Err(Failure::NotFound(format!(
                        "no dead job {id:?} in queue {:?}",
                        q.name()
                    )))
                }
                other => other?,
            }
            print(&format!("requeued {id}"));
        }
        Dead::RequeueAll { yes } => {
            let dead = q.stats().await?.dead;
            confirm(
                yes,
                &format!("requeue all {dead} dead jobs of {:?}?", q.name()),
            )?;
            print(&format!("requeued {}", q.requeue_all().await?));
        }
        Dead::Purge { yes } => {
            let dead = q.stats().await?.dead;
            confirm(
                yes,
                &format!("delete all {dead} dead jobs of {:?} for good?", q.name()),
            )?;
            print(&format!("purged {}", q.purge().await?));
        }
    }
    Ok(())
}

/// Asks on a terminal; refuses (exit 2) when stdin is not one and `--yes` was not given.
fn confirm(yes: bool, question: &str) -> Outcome {
    if yes {
        return Ok(());
    }
    if !std::io::stdin().is_terminal() {
        return Err(Failure::Usage(
            "refusing to change dead letters without confirmation: stdin is not a terminal; \
             pass --yes"
                .to_string(),
        ));
    }
    eprint!("{question} [y/N] ");
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    std::io::stdin()
        .read_line(&mut answer)
        .map_err(|e| Failure::Usage(format!("cannot read the answer: {e}")))?;
    match answer.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => Ok(()),
        _ => Err(Failure::Usage("not confirmed; nothing changed".to_string())),
    }
}

async fn watch_stats(q: &Queue, secs: f64, json: bool) -> Outcome {
    let every = Duration::try_from_secs_f64(secs)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| Failure::Usage(format!("--watch takes seconds > 0, not {secs}")))?;
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    loop {
        let stats = q.stats().await?;
        // Clear the screen and go home, then reprint.
        print!("\x1b[2J\x1b[H");
        if !json {
            println!("{}  (every {secs} s; Ctrl-C stops)\n", q.name());
        }
        print(&render::stats(&stats, json));
        let _ = std::io::stdout().flush();
        tokio::select! {
            _ = &mut ctrl_c => return Ok(()),
            _ = tokio::time::sleep(every) => {}
        }
    }
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

fn print(text: &str) {
    println!("{text}");
}

fn target(queue: &str, group: &Option<String>) -> String {
    match group {
        Some(g) => format!("group {g:?} of {queue:?}"),
        None => format!("{queue:?}"),
    }
}

fn not_found(queue: &str, id: &str) -> Failure {
    Failure::NotFound(format!("no job {id:?} in queue {queue:?}"))
}
