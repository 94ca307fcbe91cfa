//! Job-queue benchmark, Rust side: `cargo run --release -p tideq-bench --bin jobs -- URL N`.
//! Prints ONE JSON line in the format of `bench/jobs/run.py` (which runs it beside the Python,
//! Node, BullMQ and arq scripts against one private redis-server):
//!
//! - `enqueue_seq`: N/4 `enqueue` calls, each awaited before the next (jobs/s).
//! - `enqueue_bulk`: N jobs in one `enqueue_many` call (pipelined chunks of 500; jobs/s).
//! - `work_c1|c10|c100`: N no-op jobs enqueued first, then a worker with that concurrency and
//!   `stop_when_drained`; jobs/s from the first handler call until `join()` returns (every ack done).
//! - `lateness_p50_ms|p99_ms` (and `lateness_min_ms`, the first pickup): "2 000 jobs due in the
//!   same second": job i gets `run_at_ms` = start + i × 1000 / 2000 (whole ms, rounded down; start
//!   ~2 s ahead) and carries that due ms in its payload (`{"due":<ms>,...}`); a worker at
//!   concurrency 100 whose handler reads the clock, then the due ms from `job.payload`:
//!   lateness = handler start − that job's due time (ms, this machine's clock).
//! - `burst_p50_ms|p99_ms`: the same with all 2 000 jobs due at one instant.
//! - `rss_mb`: VmRSS of this process (producer and worker) after the work runs;
//!   `worker_rss_mb`: the peak RSS of a process that only runs a worker at concurrency 100 over N
//!   jobs (enqueued by this one).
//! - `idle_cmds_per_s`: one idle worker (concurrency 10, default poll interval) alone on the
//!   server: CONFIG RESETSTAT, 5 s, then the calls in INFO commandstats except info/config, / 5
//!   (script-internal calls included); `idle_client_cmds_per_s`: the commands clients sent in
//!   that window, counted with MONITOR.
//! - `work_prio_c100`: as `work_c100` with random priorities 1..=10; `work_groups1k_c100`: N jobs
//!   over 1,000 groups (job i in group i % 1000); `work_groups100k_c100`: at least 100,000 jobs,
//!   one per group (the per-fetch cost with many groups).
//! - `rate1000_achieved` / `rate1000_max_window`: a queue rate limit of 1,000 starts/s, 4,000 jobs,
//!   concurrency 100: starts per second achieved, and the most starts in any 1-s window.
//! - `JOBS_BENCH_LIFECYCLE=1` (its own run, one line): `work_c100` with the queue's event log off
//!   and on (`set_events`), alternated three times each (events cost), and schedule precision:
//!   an idle worker fires a 100 ms interval schedule for 5 s; lateness = handler start (this
//!   machine's clock) − the slot in the job's id, p50/p99.
//! - `diag`: Redis and client CPU, Redis calls and scripts per job, over each work run.
//!   `JOBS_BENCH_EXTRA_C=300,1000` adds work runs at those concurrencies (diagnosis only).
//!
//! Payload: a ~50-byte JSON object; queue defaults (5 attempts, keep_completed 1000). Runs on
//! `tideq::runtime_builder()` (one runtime worker thread), as the bindings do.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tideq::{Client, EnqueueOptions, Job, Queue, QueueOptions, WorkerOptions};

const PAYLOAD: &[u8] = br#"{"user_id":123456,"task":"send_welcome_email","n":1}"#;
const LATE_JOBS: usize = 2000;
const LATE_AHEAD_MS: f64 = 2000.0;
/// The main lateness run spreads the due times evenly over this window; the burst run uses 0.
const LATE_SPREAD_MS: u64 = 1000;

fn now_ms_f() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
        * 1000.0
}

fn fresh(client: &Client, what: &str) -> tideq::Result<Queue> {
    let name = format!("jb-rs-{what}-{}-{}", std::process::id(), fastrand::u32(..));
    Queue::new(client, &name, QueueOptions::default())
}

fn rate(n: usize, d: Duration) -> f64 {
    (n as f64 / d.as_secs_f64()).round()
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn rss_mb() -> f64 {
    status_mb("VmRSS:")
}

/// A field of /proc/self/status in MB (VmRSS: now, VmHWM: the peak).
fn status_mb(field: &str) -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map(|kb| (kb / 1024.0 * 10.0).round() / 10.0)
        .unwrap_or(f64::NAN)
}

/// `worker_rss_mb`: the peak RSS (VmHWM) of a process that only runs a worker at concurrency 100
/// over N jobs enqueued by this one (this binary again, as `jobs URL N worker QUEUE`), so the
/// producer's buffers are not counted.
async fn worker_rss(client: &Client, url: &str, n: usize) -> tideq::Result<f64> {
    let (q, _) = enqueue_bulk(client, n).await?;
    let exe = std::env::current_exe().expect("own path");
    let out = tokio::task::spawn_blocking({
        let (url, name) = (url.to_string(), q.name().to_string());
        move || {
            std::process::Command::new(exe)
                .args([url, n.to_string(), "worker".into(), name])
                .output()
                .expect("worker process")
        }
    })
    .await
    .expect("worker process");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .expect("worker RSS"))
}

/// The worker process of `worker_rss`: drains queue `name` at concurrency 100, prints its peak RSS.
async fn worker_only(url: &str, name: &str, n: usize) -> tideq::Result<()> {
    let q = Queue::new(&Client::open(url)?, name, QueueOptions::default())?;
    let w = q.work(
        WorkerOptions {
            concurrency: 100,
            stop_when_drained: true,
            ..Default::default()
        },
        |_job: Job| async { Ok::<(), String>(()) },
    )?;
    let stats = w.join().await;
    assert_eq!(stats.completed as usize, n, "worker stats {stats:?}");
    println!("{}", status_mb("VmHWM:"));
    Ok(())
}

async fn enqueue_seq(client: &Client, n: usize) -> tideq::Result<f64> {
    let q = fresh(client, "seq")?;
    let t = Instant::now();
    for _ in 0..n {
        q.enqueue(PAYLOAD, EnqueueOptions::default()).await?;
    }
    Ok(rate(n, t.elapsed()))
}

async fn enqueue_bulk(client: &Client, n: usize) -> tideq::Result<(Queue, f64)> {
    let q = fresh(client, "bulk")?;
    let jobs: Vec<(&[u8], EnqueueOptions)> = (0..n)
        .map(|_| (PAYLOAD, EnqueueOptions::default()))
        .collect();
    let t = Instant::now();
    let done = q.enqueue_many(&jobs).await?;
    let r = rate(n, t.elapsed());
    assert_eq!(done.len(), n);
    Ok((q, r))
}

async fn work(
    client: &Client,
    url: &str,
    n: usize,
    concurrency: usize,
) -> tideq::Result<(f64, String)> {
    let (q, _) = enqueue_bulk(client, n).await?;
    drain(&q, url, n, concurrency).await
}

/// How the flow-control runs enqueue their N jobs.
#[derive(Clone, Copy)]
enum Flow {
    /// Random priorities 1..=10.
    Priorities,
    /// Job i in group i % groups.
    Groups(usize),
}

/// `work` for prioritized or grouped jobs (concurrency 100); the run with 100,000 groups
/// enqueues (and drains) at least 100,000 jobs, one per group.
async fn work_flow(
    client: &Client,
    url: &str,
    n: usize,
    flow: Flow,
) -> tideq::Result<(f64, String)> {
    let q = fresh(client, "flow")?;
    let n = match flow {
        Flow::Groups(g) => n.max(g),
        Flow::Priorities => n,
    };
    let jobs: Vec<(&[u8], EnqueueOptions)> = (0..n)
        .map(|i| {
            let opts = match flow {
                Flow::Priorities => EnqueueOptions {
                    priority: Some(fastrand::u32(1..=10)),
                    ..Default::default()
                },
                Flow::Groups(g) => EnqueueOptions {
                    group: Some(format!("tenant-{}", i % g)),
                    ..Default::default()
                },
            };
            (PAYLOAD, opts)
        })
        .collect();
    for chunk in jobs.chunks(20_000) {
        q.enqueue_many(chunk).await?;
    }
    drain(&q, url, n, 100).await
}

/// A queue-wide start rate of 1,000/s over 4,000 jobs at concurrency 100: the starts per second
/// achieved (from the first start to the last) and the most starts in any one-second window
/// (Redis clock, `Job::started_at`).
async fn rate_limited(client: &Client) -> tideq::Result<(f64, u64)> {
    const JOBS: usize = 4000;
    let q = fresh(client, "rate")?;
    q.set_limits(tideq::Limits {
        rate: Some(tideq::Rate::new(1000, Duration::from_secs(1))),
        ..Default::default()
    })
    .await?;
    let jobs: Vec<(&[u8], EnqueueOptions)> = (0..JOBS)
        .map(|_| (PAYLOAD, EnqueueOptions::default()))
        .collect();
    q.enqueue_many(&jobs).await?;
    let starts = Arc::new(Mutex::new(Vec::with_capacity(JOBS)));
    let s = starts.clone();
    let w = q.work(
        WorkerOptions {
            concurrency: 100,
            stop_when_drained: true,
            ..Default::default()
        },
        move |job: Job| {
            s.lock().unwrap().push(job.started_at);
            async { Ok::<(), String>(()) }
        },
    )?;
    w.join().await;
    let mut t = starts.lock().unwrap().clone();
    t.sort();
    Ok(rate_summary(&t))
}

/// Starts per second from the first to the last start (the last window counted whole), and the
/// most starts in any one-second window.
fn rate_summary(t: &[u64]) -> (f64, u64) {
    let span = (t[t.len() - 1] - t[0]) as f64 / 1000.0;
    let achieved = (t.len() as f64 / (span.ceil().max(1.0))).round();
    let most = (0..t.len())
        .map(|i| (t.partition_point(|x| *x < t[i] + 1000) - i) as u64)
        .max()
        .unwrap_or(0);
    (achieved, most)
}

async fn drain(q: &Queue, url: &str, n: usize, concurrency: usize) -> tideq::Result<(f64, String)> {
    let first: Arc<OnceLock<Instant>> = Arc::new(OnceLock::new());
    let f = first.clone();
    let phase = tokio::task::block_in_place(|| diag::Phase::begin(url));
    let w = q.work(
        WorkerOptions {
            concurrency,
            stop_when_drained: true,
            ..Default::default()
        },
        move |_job: Job| {
            f.get_or_init(Instant::now);
            async { Ok::<(), String>(()) }
        },
    )?;
    let stats = w.join().await;
    let end = Instant::now();
    let diag = tokio::task::block_in_place(|| phase.end(n));
    assert_eq!(stats.completed as usize, n, "worker stats {stats:?}");
    Ok((rate(n, end - *first.get().expect("no job ran")), diag))
}

/// The due ms a lateness job carries: its payload starts `{"due":<ms>,` (written by `lateness`).
fn due_ms(payload: &[u8]) -> f64 {
    let digits = payload
        .strip_prefix(br#"{"due":"#)
        .expect("lateness payload starts with {\"due\":");
    let end = digits
        .iter()
        .position(|b| !b.is_ascii_digit())
        .unwrap_or(digits.len());
    std::str::from_utf8(&digits[..end])
        .ok()
        .and_then(|d| d.parse::<u64>().ok())
        .expect("due ms") as f64
}

/// One lateness run (p50, p99, min in ms): job i due at start + i × spread_ms / LATE_JOBS (whole
/// ms, rounded down), start ~2 s ahead, its due ms in its payload; spread_ms 0 is a burst.
async fn lateness(client: &Client, spread_ms: u64) -> tideq::Result<(f64, f64, f64)> {
    let q = fresh(client, "late")?;
    let start = (now_ms_f() + LATE_AHEAD_MS).round() as u64;
    let rest = std::str::from_utf8(&PAYLOAD[1..]).unwrap(); // the object without its `{`
    let jobs: Vec<(Vec<u8>, EnqueueOptions)> = (0..LATE_JOBS as u64)
        .map(|i| {
            let due = start + i * spread_ms / LATE_JOBS as u64;
            let opts = EnqueueOptions {
                run_at_ms: Some(due),
                ..Default::default()
            };
            (format!("{{\"due\":{due},{rest}").into_bytes(), opts)
        })
        .collect();
    q.enqueue_many(&jobs).await?;
    let late: Arc<Mutex<Vec<f64>>> = Arc::new(Mutex::new(Vec::with_capacity(LATE_JOBS)));
    let l = late.clone();
    let w = q.work(
        WorkerOptions {
            concurrency: 100,
            stop_when_drained: true,
            ..Default::default()
        },
        move |job: Job| {
            let now = now_ms_f();
            l.lock().unwrap().push(now - due_ms(&job.payload));
            async { Ok::<(), String>(()) }
        },
    )?;
    w.join().await;
    let mut v = late.lock().unwrap().clone();
    assert_eq!(v.len(), LATE_JOBS);
    v.sort_by(f64::total_cmp);
    let r = |x: f64| (x * 100.0).round() / 100.0;
    Ok((r(percentile(&v, 50.0)), r(percentile(&v, 99.0)), r(v[0])))
}

async fn idle(client: &Client, url: &str) -> tideq::Result<String> {
    let q = fresh(client, "idle")?;
    let w = q.work(
        WorkerOptions {
            concurrency: 10,
            ..Default::default()
        },
        |_job: Job| async { Ok::<(), String>(()) },
    )?;
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let url = url.to_string();
    // 5 s as the issue asks; JOBS_BENCH_IDLE_S (bench/jobs/run.py --idle-seconds) changes it.
    let secs = std::env::var("JOBS_BENCH_IDLE_S")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .unwrap_or(5.0);
    let res = tokio::task::spawn_blocking(move || {
        diag::measure_idle(&url, Duration::from_secs_f64(secs))
    })
    .await
    .expect("idle measurement");
    w.shutdown().await;
    Ok(res)
}

/// Server-side measurements with their own connections (kept out of the timed parts).
mod diag {
    use std::collections::BTreeMap;
    use std::io::{BufRead, BufReader, Write};
    use std::net::TcpStream;
    use std::time::{Duration, Instant};

    const START_MARK: &str = "tideq-bench-idle-start";

    fn conn(url: &str) -> redis::Connection {
        redis::Client::open(url)
            .and_then(|c| c.get_connection())
            .expect("measuring connection")
    }

    fn info(c: &mut redis::Connection, section: &str) -> String {
        redis::cmd("INFO").arg(section).query(c).expect("INFO")
    }

    /// calls per command from INFO commandstats, without the measuring connection's info/config.
    pub fn commandstats(info: &str) -> BTreeMap<String, u64> {
        let mut out = BTreeMap::new();
        for line in info.lines() {
            let Some((name, fields)) = line
                .strip_prefix("cmdstat_")
                .and_then(|r| r.split_once(':'))
            else {
                continue;
            };
            if matches!(name.split('|').next(), Some("info" | "config")) {
                continue;
            }
            if let Some(calls) = fields
                .split(',')
                .find_map(|f| f.strip_prefix("calls="))
                .and_then(|c| c.parse().ok())
            {
                out.insert(name.to_string(), calls);
            }
        }
        out
    }

    fn redis_cpu(info: &str) -> f64 {
        info.lines()
            .filter_map(|l| {
                l.strip_prefix("used_cpu_sys:")
                    .or_else(|| l.strip_prefix("used_cpu_user:"))
            })
            .filter_map(|v| v.trim().parse::<f64>().ok())
            .sum()
    }

    /// This process's CPU seconds (user + system) from /proc/self/stat (clock ticks of 1/100 s).
    fn own_cpu() -> f64 {
        let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
        let after = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
        let f: Vec<&str> = after.split_whitespace().collect();
        let tick = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
        (tick(11) + tick(12)) / 100.0 // utime, stime: fields 14 and 15 of the whole line
    }

    fn json_map(m: &BTreeMap<String, u64>) -> String {
        let body: Vec<String> = m.iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
        format!("{{{}}}", body.join(","))
    }

    /// ECHO mark + CONFIG RESETSTAT, wait, INFO commandstats; meanwhile MONITOR on a second
    /// connection counts the commands clients sent (script-internal calls say "lua" there).
    /// Returns the JSON fields idle_cmds_per_s, idle_client_cmds_per_s and idle_detail.
    pub fn measure_idle(url: &str, wait: Duration) -> String {
        let info_url = redis::Client::open(url).expect("url");
        let addr = info_url.get_connection_info().addr().to_string();
        let addr = addr.trim_start_matches("redis://").to_string();
        let mut mon = TcpStream::connect(&addr).expect("monitor connection");
        mon.write_all(b"*1\r\n$7\r\nMONITOR\r\n").unwrap();
        let reader = std::thread::spawn(move || {
            let mut lines = Vec::new();
            let mut r = BufReader::new(mon);
            let mut line = String::new();
            while r.read_line(&mut line).map(|n| n > 0).unwrap_or(false) {
                let l = std::mem::take(&mut line);
                let done = l.to_lowercase().contains("\"info\" \"commandstats\"");
                lines.push(l);
                if done {
                    break;
                }
            }
            lines
        });
        let mut c = conn(url);
        std::thread::sleep(Duration::from_millis(100)); // MONITOR is on before the mark
        let _: String = redis::cmd("ECHO").arg(START_MARK).query(&mut c).unwrap();
        let _: () = redis::cmd("CONFIG").arg("RESETSTAT").query(&mut c).unwrap();
        std::thread::sleep(wait);
        let calls = commandstats(&info(&mut c, "commandstats"));
        let lines = reader.join().unwrap_or_default();
        let mut client: BTreeMap<String, u64> = BTreeMap::new();
        let mut counting = false;
        for l in &lines {
            let low = l.to_lowercase();
            if low.contains(START_MARK) {
                counting = true;
                continue;
            }
            if low.contains("\"info\" \"commandstats\"") {
                break;
            }
            if !counting || low.contains(" lua]") {
                continue;
            }
            let cmd = low.split('"').nth(1).unwrap_or("?").to_string();
            *client.entry(cmd).or_default() += 1;
        }
        let secs = wait.as_secs_f64();
        let total: u64 = calls.values().sum();
        let from_clients: u64 = client.values().sum();
        let r2 = |x: f64| (x * 100.0).round() / 100.0;
        format!(
            "\"idle_cmds_per_s\":{},\"idle_client_cmds_per_s\":{},\"idle_detail\":{{\"commandstats\":{},\"client\":{}}}",
            r2(total as f64 / secs),
            r2(from_clients as f64 / secs),
            json_map(&calls),
            json_map(&client)
        )
    }

    /// Redis and client CPU over one work run (see `Phase` in bench/jobs/benchlib.py).
    pub struct Phase {
        c: redis::Connection,
        cpu0: f64,
        own0: f64,
        t0: Instant,
    }

    impl Phase {
        pub fn begin(url: &str) -> Phase {
            let mut c = conn(url);
            let _: () = redis::cmd("CONFIG").arg("RESETSTAT").query(&mut c).unwrap();
            let cpu0 = redis_cpu(&info(&mut c, "cpu"));
            Phase {
                c,
                cpu0,
                own0: own_cpu(),
                t0: Instant::now(),
            }
        }

        pub fn end(mut self, n: usize) -> String {
            let wall = self.t0.elapsed().as_secs_f64();
            let own = own_cpu() - self.own0;
            let cpu = redis_cpu(&info(&mut self.c, "cpu")) - self.cpu0;
            let stats = info(&mut self.c, "commandstats");
            // JOBS_BENCH_CMDSTATS=1: where Redis spent its time, per command (diagnosis).
            if std::env::var("JOBS_BENCH_CMDSTATS").is_ok() {
                let mut rows: Vec<(f64, &str)> = stats
                    .lines()
                    .filter_map(|l| {
                        let us = l.split([':', ',']).find_map(|f| f.strip_prefix("usec="))?;
                        Some((us.parse().ok()?, l))
                    })
                    .collect();
                rows.sort_by(|a, b| b.0.total_cmp(&a.0));
                for (_, l) in rows.iter().take(14) {
                    eprintln!("  {l}");
                }
            }
            let calls = commandstats(&stats);
            // Time Redis spent inside scripts (the rest of its CPU is I/O and protocol).
            let script_us: f64 = stats
                .lines()
                .filter(|l| l.starts_with("cmdstat_evalsha:"))
                .flat_map(|l| l.split([':', ',']))
                .filter_map(|f| f.strip_prefix("usec="))
                .filter_map(|v| v.parse::<f64>().ok())
                .sum();
            let all: u64 = calls.values().sum();
            let scripts: u64 = calls
                .iter()
                .filter(|(k, _)| {
                    matches!(
                        k.split('|').next(),
                        Some("evalsha" | "eval" | "fcall" | "evalsha_ro" | "eval_ro")
                    )
                })
                .map(|(_, v)| v)
                .sum();
            let r = |x: f64, d: i32| (x * 10f64.powi(d)).round() / 10f64.powi(d);
            let n = n as f64;
            format!(
                "{{\"redis_cpu\":{},\"client_cpu\":{},\"redis_us_per_job\":{},\"calls_per_job\":{},\"scripts_per_job\":{},\"script_us_per_job\":{}}}",
                r(cpu / wall, 2),
                r(own / wall, 2),
                r(cpu * 1e6 / n, 1),
                r(all as f64 / n, 2),
                r(scripts as f64 / n, 3),
                r(script_us / n, 1)
            )
        }
    }
}

// The runtime tideq recommends for worker processes (one worker thread; see runtime_builder).
/// `work` at concurrency 100 with the queue's event log on (`events` = its length) or off.
async fn work_events(
    client: &Client,
    url: &str,
    n: usize,
    events: Option<usize>,
) -> tideq::Result<f64> {
    let q = fresh(client, "ev")?;
    q.set_events(events).await?;
    let jobs: Vec<(&[u8], EnqueueOptions)> = (0..n)
        .map(|_| (PAYLOAD, EnqueueOptions::default()))
        .collect();
    q.enqueue_many(&jobs).await?;
    Ok(drain(&q, url, n, 100).await?.0)
}

/// Schedule precision: a 100 ms interval schedule fired by one idle worker for 5 s; the lateness
/// of each job's handler start after its slot (ms), p50 and p99.
async fn schedule_lateness(client: &Client) -> tideq::Result<(f64, f64, usize)> {
    let q = fresh(client, "sched")?;
    q.upsert_schedule(
        "tick",
        tideq::Every::interval(Duration::from_millis(100)),
        PAYLOAD,
        EnqueueOptions::default(),
    )
    .await?;
    let late: Arc<Mutex<Vec<f64>>> = Default::default();
    let l = late.clone();
    let w = q.work(WorkerOptions::default(), move |job: Job| {
        let now = now_ms_f();
        let slot: f64 = job.id.rsplit_once('@').unwrap().1.parse().unwrap();
        l.lock().unwrap().push(now - slot);
        async { Ok::<(), String>(()) }
    })?;
    tokio::time::sleep(Duration::from_secs(5)).await;
    w.shutdown().await;
    q.remove_schedule("tick").await?;
    let mut v = late.lock().unwrap().clone();
    // The first job may stand for slots missed before the worker started.
    if !v.is_empty() {
        v.remove(0);
    }
    v.sort_by(f64::total_cmp);
    let r = |x: f64| (x * 100.0).round() / 100.0;
    Ok((r(percentile(&v, 50.0)), r(percentile(&v, 99.0)), v.len()))
}

fn main() -> tideq::Result<()> {
    tideq::runtime_builder()
        .build()
        .expect("tokio runtime")
        .block_on(bench_main())
}

async fn bench_main() -> tideq::Result<()> {
    let mut args = std::env::args().skip(1);
    let (Some(url), Some(n)) = (
        args.next(),
        args.next().and_then(|s| s.parse::<usize>().ok()),
    ) else {
        eprintln!("usage: jobs URL N");
        std::process::exit(2);
    };
    let client = Client::open(&url)?;
    let rest: Vec<String> = std::env::args().skip(3).collect();
    if let [mode, name] = rest.as_slice() {
        if mode == "worker" {
            return worker_only(&url, name, n).await;
        }
    }
    // Diagnosis only (not used by run.py): JOBS_BENCH_QUICK=1 runs bulk enqueue, c100 and
    // both lateness runs (spread over 1 s, then burst) and prints them on one line.
    // JOBS_BENCH_QUICK_C=10 uses that concurrency instead of 100.
    // JOBS_BENCH_FLOW=1: plain c100 beside the flow-control runs, one line each (diagnosis).
    if std::env::var("JOBS_BENCH_LIFECYCLE").is_ok() {
        let (mut off, mut on) = (Vec::new(), Vec::new());
        for _ in 0..3 {
            off.push(work_events(&client, &url, n, None).await?);
            on.push(work_events(&client, &url, n, Some(10_000)).await?);
        }
        let best = |v: &[f64]| v.iter().copied().fold(0.0, f64::max);
        let (p50, p99, fired) = schedule_lateness(&client).await?;
        println!(
            "c100 events off {off:?} (best {}) on {on:?} (best {}): on/off {:.0}%; schedule \
             lateness p50/p99 {p50}/{p99} ms over {fired} slots",
            best(&off),
            best(&on),
            100.0 * best(&on) / best(&off)
        );
        return Ok(());
    }
    if std::env::var("JOBS_BENCH_FLOW").is_ok() {
        let (c100, d100) = work(&client, &url, n, 100).await?;
        println!("plain c100 {c100} {d100}");
        let (prio, dprio) = work_flow(&client, &url, n, Flow::Priorities).await?;
        println!("prio c100 {prio} {dprio}");
        let (g1k, dg1k) = work_flow(&client, &url, n, Flow::Groups(1000)).await?;
        println!("groups1k c100 {g1k} {dg1k}");
        let (g100k, dg100k) = work_flow(&client, &url, n, Flow::Groups(100_000)).await?;
        println!("groups100k c100 {g100k} {dg100k}");
        let (achieved, most) = rate_limited(&client).await?;
        println!("rate 1000/s: achieved {achieved}/s, most in a 1-s window {most}");
        return Ok(());
    }
    // JOBS_BENCH_WORKONLY=1: N jobs enqueued, then one worker at concurrency 100 (diagnosis).
    if std::env::var("JOBS_BENCH_WORKONLY").is_ok() {
        let (c100, d100) = work(&client, &url, n, 100).await?;
        println!("c100 {c100} {d100}");
        return Ok(());
    }
    if std::env::var("JOBS_BENCH_QUICK").is_ok() {
        let c = std::env::var("JOBS_BENCH_QUICK_C")
            .ok()
            .and_then(|c| c.parse::<usize>().ok())
            .unwrap_or(100);
        let (_, bulk) = enqueue_bulk(&client, n).await?;
        let (c100, d100) = work(&client, &url, n, c).await?;
        let (p50, p99, pmin) = lateness(&client, LATE_SPREAD_MS).await?;
        let (b50, b99, bmin) = lateness(&client, 0).await?;
        let wrss = worker_rss(&client, &url, n).await?;
        println!(
            "worker RSS {wrss} MB; bulk {bulk} c{c} {c100} {d100} lateness (2000 due within 1 s) p50/p99/min \
             {p50}/{p99}/{pmin} ms, burst (2000 due at one instant) p50/p99/min {b50}/{b99}/{bmin} ms"
        );
        return Ok(());
    }
    let seq = enqueue_seq(&client, (n / 4).max(1)).await?;
    let (_, bulk) = enqueue_bulk(&client, n).await?;
    let (c1, d1) = work(&client, &url, n, 1).await?;
    let (c10, d10) = work(&client, &url, n, 10).await?;
    let (c100, d100) = work(&client, &url, n, 100).await?;
    let rss = rss_mb();
    let wrss = worker_rss(&client, &url, n).await?;
    // Extra concurrency levels for diagnosis (not in run.py's table): JOBS_BENCH_EXTRA_C=300,1000
    let mut extra = String::new();
    for c in std::env::var("JOBS_BENCH_EXTRA_C")
        .unwrap_or_default()
        .split(',')
        .filter_map(|c| c.trim().parse::<usize>().ok())
    {
        let (r, d) = work(&client, &url, n, c).await?;
        extra.push_str(&format!("\"work_c{c}\":{r},\"diag_c{c}\":{d},"));
    }
    let (prio, dprio) = work_flow(&client, &url, n, Flow::Priorities).await?;
    let (g1k, dg1k) = work_flow(&client, &url, n, Flow::Groups(1000)).await?;
    let (g100k, dg100k) = work_flow(&client, &url, n, Flow::Groups(100_000)).await?;
    let (rate_achieved, rate_max) = rate_limited(&client).await?;
    extra.push_str(&format!(
        "\"work_prio_c100\":{prio},\"work_groups1k_c100\":{g1k},\"work_groups100k_c100\":{g100k},\
         \"rate1000_achieved\":{rate_achieved},\"rate1000_max_window\":{rate_max},"
    ));
    let (p50, p99, pmin) = lateness(&client, LATE_SPREAD_MS).await?;
    let (b50, b99, _) = lateness(&client, 0).await?;
    let idle = idle(&client, &url).await?;
    println!(
        "{{\"runtime\":\"rust\",\"lib\":\"tideq\",{extra}\"enqueue_seq\":{seq},\"enqueue_bulk\":{bulk},\
         \"work_c1\":{c1},\"work_c10\":{c10},\"work_c100\":{c100},\"lateness_p50_ms\":{p50},\
         \"lateness_p99_ms\":{p99},\"lateness_min_ms\":{pmin},\"burst_p50_ms\":{b50},\
         \"burst_p99_ms\":{b99},\"rss_mb\":{rss},\"worker_rss_mb\":{wrss},\
         \"diag\":{{\"c1\":{d1},\"c10\":{d10},\"c100\":{d100},\"prio_c100\":{dprio},\
         \"groups1k_c100\":{dg1k},\"groups100k_c100\":{dg100k}}},{idle}}}"
    );
    Ok(())
}
