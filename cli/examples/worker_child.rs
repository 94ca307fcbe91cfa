//! A worker child for the supervisor's tests (`tideq worker` with a test host): it follows the
//! child contract of the Python and Node children (argv, `TIDEQ_SUPERVISOR_FD`, `tideq::serve`),
//! with built-in targets instead of user code. Not a user-facing program.
//!
//! TARGET is a comma-separated list of:
//! - `queue=NAME` (repeatable): a queue the target declares (default: one queue, `work`);
//! - `sleep=MS`: each job takes this long (default 0);
//! - `leak=MB`: each job keeps this much memory (touched, so it counts in the RSS);
//! - `ledger=PATH`: each job appends `start <id> <pid>` and `end <id> <pid>` lines to PATH;
//! - `lease=MS`: the workers' lease (a killed child's jobs come back this long after);
//! - `fail-at-start`: exits 1 with an error on stderr before any status line (a broken target);
//! - `pid-file=DIR`: writes its pid to DIR/<pid> at start (the test finds its children there).

use std::io::Write;
use std::time::Duration;

use clap::Parser;

#[derive(Parser)]
#[command(name = "worker_child")]
struct Args {
    target: String,
    #[arg(long)]
    supervised: bool,
    #[arg(long)]
    url: Option<String>,
    #[arg(long)]
    queues: Option<String>,
    #[arg(long)]
    concurrency: Option<usize>,
    #[arg(long)]
    max_jobs: Option<u64>,
    #[arg(long)]
    shutdown_grace: Option<f64>,
    #[arg(long)]
    log_format: Option<String>,
    #[arg(long)]
    log_level: Option<String>,
}

#[derive(Default, Clone)]
struct Target {
    queues: Vec<String>,
    sleep_ms: u64,
    lease_ms: Option<u64>,
    leak_mb: usize,
    ledger: Option<String>,
    fail_at_start: bool,
    pid_dir: Option<String>,
}

fn parse_target(s: &str) -> Result<Target, String> {
    let mut t = Target::default();
    for part in s.split(',').filter(|p| !p.is_empty()) {
        let (k, v) = part.split_once('=').unwrap_or((part, ""));
        let num = |v: &str| {
            v.parse::<u64>()
                .map_err(|_| format!("bad number in {part:?}"))
        };
        match k {
            "queue" => t.queues.push(v.to_string()),
            "sleep" => t.sleep_ms = num(v)?,
            "lease" => t.lease_ms = Some(num(v)?),
            "leak" => t.leak_mb = num(v)? as usize,
            "ledger" => t.ledger = Some(v.to_string()),
            "fail-at-start" => t.fail_at_start = true,
            "pid-file" => t.pid_dir = Some(v.to_string()),
            _ => return Err(format!("unknown target part {part:?}")),
        }
    }
    if t.queues.is_empty() {
        t.queues.push("work".into());
    }
    Ok(t)
}

fn ledger(path: &str, line: String) {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    // One write per line: O_APPEND keeps lines of several processes whole.
    f.write_all(line.as_bytes()).unwrap();
}

fn main() -> std::process::ExitCode {
    let args = Args::parse();
    let target = match parse_target(&args.target) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("worker_child: {e}");
            return 1.into();
        }
    };
    if target.fail_at_start {
        eprintln!("worker_child: cannot load the target: fail-at-start asked for it");
        return 1.into();
    }
    if let Some(dir) = &target.pid_dir {
        let _ = std::fs::write(format!("{dir}/{}", std::process::id()), "");
    }
    // Which queues, each with its concurrency.
    let mut queues: Vec<(String, Option<usize>)> = Vec::new();
    match &args.queues {
        Some(spec) => {
            for item in spec.split(',') {
                let (name, c) = match item.split_once('=') {
                    Some((n, c)) => (n, Some(c.parse::<usize>().unwrap())),
                    None => (item, None),
                };
                if !target.queues.iter().any(|q| q == name) {
                    eprintln!(
                        "worker_child: no queue {name:?} in the target (it has {})",
                        target.queues.join(", ")
                    );
                    return 1.into();
                }
                queues.push((name.to_string(), c));
            }
        }
        None => queues = target.queues.iter().map(|q| (q.clone(), None)).collect(),
    }
    let url = args
        .url
        .clone()
        .or_else(|| std::env::var("TIDEQ_REDIS_URL").ok())
        .unwrap_or_else(|| "redis://127.0.0.1:6379".into());
    let rt = tideq::runtime_builder().build().unwrap();
    let result = rt.block_on(async move {
        let client = tideq::Client::open(&url)?;
        let mut workers = Vec::new();
        for (name, c) in queues {
            let q = tideq::Queue::new(&client, &name, Default::default())?;
            let mut opts = tideq::WorkerOptions {
                max_jobs: args.max_jobs,
                poll_interval: Duration::from_millis(200),
                ..Default::default()
            };
            if let Some(c) = c.or(args.concurrency) {
                opts.concurrency = c;
            }
            if let Some(l) = target.lease_ms {
                opts.lease = Duration::from_millis(l);
            }
            if let Some(g) = args.shutdown_grace {
                opts.grace = Duration::from_secs_f64(g);
            }
            let t = target.clone();
            workers.push(q.work(opts, move |job: tideq::Job| {
                let t = t.clone();
                async move {
                    let pid = std::process::id();
                    if let Some(l) = &t.ledger {
                        ledger(l, format!("start {} {pid}\n", job.id));
                    }
                    if t.leak_mb > 0 {
                        let v = vec![1u8; t.leak_mb << 20];
                        std::mem::forget(v);
                    }
                    if t.sleep_ms > 0 {
                        tokio::time::sleep(Duration::from_millis(t.sleep_ms)).await;
                    }
                    if let Some(l) = &t.ledger {
                        ledger(l, format!("end {} {pid}\n", job.id));
                    }
                    Ok::<(), String>(())
                }
            })?);
        }
        tideq::serve(
            workers,
            tideq::ServeOptions {
                max_jobs: args.max_jobs,
                ..Default::default()
            },
        )
        .await
    });
    match result {
        Ok(_) => 0.into(),
        Err(e) => {
            eprintln!("worker_child: {e}");
            1.into()
        }
    }
}
