//! Scale-out and the bytes a job holds. `make bench-scaleout`, or
//! `cargo run --release -p tideq-bench --bin scaleout -- [throughput|memory|all] [--jobs N]
//! [--primaries 1,2,3] [--shards 6] [--workers 3] [--repeat R]`. Starts its own servers.
//!
//! throughput: the same queue (6 shards) and the same workers (3 Rust workers at concurrency
//! 100, in this process) on a local Redis Cluster of 1, 2 and 3 masters with no replicas (a
//! replica only copies writes: it changes no primary's work per job, and leaves the cores to the
//! primaries). The shards split evenly over the masters, checked by the slot of each shard. N
//! jobs of 100 bytes enqueued with `enqueue_many`, then drained. Per count of primaries: jobs/s
//! overall and per primary, the ratio to one primary, and each primary's Redis CPU (`INFO cpu`,
//! user + sys) per job it held, for the enqueue and the drain, and its jobs per script call. On
//! a small machine the primaries and the client share the cores, so jobs/s stops growing with
//! the primaries long before Redis CPU per job does: that one is what plans a cluster.
//!
//! memory: on one plain redis-server, `used_memory` before and after each of: N waiting jobs,
//! N delayed jobs, N completed jobs kept, N jobs in N groups (one each), N/10 schedules; and the
//! Redis CPU per job of draining the plain queue and the one with N groups, and of an enqueue
//! one at a time against `enqueue_many`.

use std::time::{Duration, Instant};

use tideq::keys::{key_slot, shard_tags};
use tideq::{Client, Config, EnqueueOptions, Every, Job, Queue, QueueOptions, WorkerOptions};
use tideq_testing::{RedisCluster, RedisServer};

const PAYLOAD: &[u8; 100] = &[b'x'; 100];

struct Args {
    mode: String,
    jobs: usize,
    primaries: Vec<usize>,
    /// Shards of the queue, the same for every count of primaries (a multiple of each).
    shards: usize,
    repeat: usize,
    /// Workers in all, at concurrency 100 each, the same for every count of primaries.
    workers: usize,
}

fn args() -> Args {
    let mut a = Args {
        mode: "all".into(),
        jobs: 100_000,
        primaries: vec![1, 2, 3],
        shards: 6,
        repeat: 1,
        workers: 3,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = || it.next().expect("a value after the flag");
        match arg.as_str() {
            "--jobs" => a.jobs = value().parse().expect("--jobs N"),
            "--primaries" => {
                a.primaries = value()
                    .split(',')
                    .map(|p| p.parse().expect("--primaries 1,2,3"))
                    .collect()
            }
            "--shards" => a.shards = value().parse().expect("--shards N"),
            "--repeat" => a.repeat = value().parse().expect("--repeat R"),
            "--workers" => a.workers = value().parse().expect("--workers N"),
            "throughput" | "memory" | "all" => a.mode = arg,
            other => panic!("unknown argument {other:?}"),
        }
    }
    a
}

/// used_cpu_sys + used_cpu_user of one server, in seconds.
fn redis_cpu(conn: &mut redis::Connection) -> f64 {
    let info: String = redis::cmd("INFO").arg("cpu").query(conn).unwrap();
    info_field(&info, "used_cpu_sys") + info_field(&info, "used_cpu_user")
}

fn info_field(info: &str, name: &str) -> f64 {
    info.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("INFO has no {name}"))
}

/// Script calls (EVALSHA) a server has run.
fn script_calls(conn: &mut redis::Connection) -> u64 {
    let info: String = redis::cmd("INFO").arg("commandstats").query(conn).unwrap();
    tideq_testing::command_calls(&info)
        .get("evalsha")
        .copied()
        .unwrap_or(0)
}

fn used_memory(conn: &mut redis::Connection) -> i64 {
    let info: String = redis::cmd("INFO").arg("memory").query(conn).unwrap();
    info_field(&info, "used_memory") as i64
}

/// This process's CPU (user + sys), in seconds, from /proc/self/stat (clock ticks of 10 ms).
fn own_cpu() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // Fields 14 and 15 of the file (utime, stime), 12 and 13 after the command's ')'.
    (ticks(11) + ticks(12)) / 100.0
}

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

fn jobs(n: usize, opts: impl Fn(usize) -> EnqueueOptions) -> Vec<(&'static [u8], EnqueueOptions)> {
    (0..n).map(|i| (&PAYLOAD[..], opts(i))).collect()
}

async fn enqueue_all(q: &Queue, jobs: &[(&[u8], EnqueueOptions)]) -> Vec<String> {
    let mut ids = Vec::with_capacity(jobs.len());
    for chunk in jobs.chunks(5000) {
        ids.extend(
            q.enqueue_many(chunk)
                .await
                .unwrap()
                .into_iter()
                .map(|e| e.id),
        );
    }
    ids
}

/// `workers` workers at concurrency 100 each on `q`, until it is drained; jobs completed.
async fn drain(q: &Queue, workers: usize) -> u64 {
    let running: Vec<_> = (0..workers)
        .map(|_| {
            q.work(
                WorkerOptions {
                    concurrency: 100,
                    stop_when_drained: true,
                    ..Default::default()
                },
                |_j: Job| async { Ok::<(), String>(()) },
            )
            .unwrap()
        })
        .collect();
    let mut done = 0;
    for w in running {
        done += w.join().await.completed;
    }
    done
}

/// One primary's drain: jobs its shards held, its Redis CPU seconds, its busy share of the drain,
/// its script calls.
type PerPrimary = (u64, f64, f64, u64);

struct Row {
    primaries: usize,
    shards: usize,
    enqueue_rate: f64,
    enqueue_us: f64,
    drain_rate: f64,
    per: Vec<PerPrimary>,
    client_us: f64,
}

async fn throughput_one(p: usize, a: &Args) -> Row {
    let (shards, n) = (a.shards, a.jobs);
    assert!(
        shards % p == 0,
        "{shards} shards do not split evenly over {p} primaries"
    );
    let per_primary = shards / p;
    let cluster = RedisCluster::start_sized(p, 0);
    let mut masters: Vec<u16> = cluster
        .topology()
        .iter()
        .filter(|c| c.master)
        .map(|c| c.port)
        .collect();
    masters.sort();
    assert_eq!(masters.len(), p, "the cluster has {p} primaries");
    let mut conns: Vec<_> = masters.iter().map(|&port| cluster.conn_to(port)).collect();
    let client = Client::new(Config::cluster(cluster.nodes.clone())).unwrap();

    let name = format!("scale{p}");
    // Which primary holds each shard: every primary must hold `per_primary` of them.
    let owner: Vec<usize> = shard_tags(client.config().prefix(), &name, shards)
        .unwrap()
        .iter()
        .map(|tag| {
            let at = cluster.master_of_slot(key_slot(&format!("{{{tag}}}")));
            let port: u16 = at.rsplit(':').next().unwrap().parse().unwrap();
            masters.iter().position(|&m| m == port).unwrap()
        })
        .collect();
    for i in 0..p {
        let held = owner.iter().filter(|&&o| o == i).count();
        assert_eq!(
            held, per_primary,
            "primary {i} holds {held} of {shards} shards"
        );
    }
    let q = Queue::sharded(
        &client,
        &name,
        shards,
        QueueOptions {
            keep_completed: 0,
            ..Default::default()
        },
    )
    .unwrap();
    let batch = jobs(n, |_| EnqueueOptions::default());

    let before: Vec<f64> = conns.iter_mut().map(redis_cpu).collect();
    let t = Instant::now();
    let ids = enqueue_all(&q, &batch).await;
    let enqueue_rate = n as f64 / t.elapsed().as_secs_f64();
    let mid: Vec<f64> = conns.iter_mut().map(redis_cpu).collect();
    let enqueue_cpu: f64 = mid.iter().zip(&before).map(|(a, b)| a - b).sum();

    // Jobs per primary: a job's shard is the CRC16 slot of its id modulo the shard count.
    let mut held = vec![0u64; p];
    for id in &ids {
        held[owner[key_slot(id) as usize % shards]] += 1;
    }

    let calls: Vec<u64> = conns.iter_mut().map(script_calls).collect();
    let client_before = own_cpu();
    let t = Instant::now();
    let done = drain(&q, a.workers).await;
    let wall = t.elapsed().as_secs_f64();
    let client_cpu = own_cpu() - client_before;
    let after: Vec<f64> = conns.iter_mut().map(redis_cpu).collect();
    let calls: Vec<u64> = conns
        .iter_mut()
        .zip(calls)
        .map(|(c, before)| script_calls(c) - before)
        .collect();
    assert_eq!(done as usize, n, "every job completed");
    Row {
        primaries: p,
        shards,
        enqueue_rate,
        enqueue_us: enqueue_cpu * 1e6 / n as f64,
        drain_rate: done as f64 / wall,
        per: (0..p)
            .map(|i| {
                (
                    held[i],
                    after[i] - mid[i],
                    (after[i] - mid[i]) / wall,
                    calls[i],
                )
            })
            .collect(),
        client_us: client_cpu * 1e6 / n as f64,
    }
}

async fn throughput(a: &Args) {
    let cores = std::thread::available_parallelism().map_or(0, |c| c.get());
    println!(
        "\nscale-out: {} jobs of 100 bytes, a queue of {} shards, {} Rust workers at concurrency \
         100; {cores} cores, load {}",
        a.jobs,
        a.shards,
        a.workers,
        load()
    );
    println!(
        "caveat: the primaries and this client share the machine's {cores} cores, so jobs/s \
         is capped by the machine; Redis CPU per job per primary is not"
    );
    for run in 1..=a.repeat {
        let mut rows = Vec::new();
        for &p in &a.primaries {
            rows.push(throughput_one(p, a).await);
        }
        print_rows(run, &rows);
    }
    println!(
        "(enq µs/job: Redis CPU of all primaries per job enqueued; drain µs/job: each primary's \
         Redis CPU over the jobs it held; busy %: its CPU over the drain's wall time; jobs/call: \
         jobs it held over the script calls it ran in the drain; client: this process's CPU)"
    );
}

fn print_rows(run: usize, rows: &[Row]) {
    println!(
        "\nrun {run}, load {}\n{:>2} {:>6} {:>10} {:>8} {:>9} {:>11} {:>7} {:>20} {:>14} {:>14} {:>9}",
        load(),
        "P",
        "shards",
        "enqueue/s",
        "enq µs",
        "drain/s",
        "per primary",
        "vs P=1",
        "drain µs/job",
        "busy %",
        "jobs/call",
        "client µs"
    );
    let base = rows[0].drain_rate / rows[0].primaries as f64;
    let each = |r: &Row, f: &dyn Fn(&PerPrimary) -> String| {
        r.per.iter().map(f).collect::<Vec<_>>().join("/")
    };
    for r in rows {
        println!(
            "{:>2} {:>6} {:>10.0} {:>8.1} {:>9.0} {:>11.0} {:>6.2}x {:>20} {:>14} {:>14} {:>9.1}",
            r.primaries,
            r.shards,
            r.enqueue_rate,
            r.enqueue_us,
            r.drain_rate,
            r.drain_rate / r.primaries as f64,
            r.drain_rate / base,
            each(r, &|(jobs, cpu, _, _)| format!(
                "{:.1}",
                cpu * 1e6 / *jobs as f64
            )),
            each(r, &|(_, _, busy, _)| format!("{:.0}", busy * 100.0)),
            each(r, &|(jobs, _, _, calls)| format!(
                "{:.0}",
                *jobs as f64 / (*calls).max(1) as f64
            )),
            r.client_us
        );
    }
    for r in rows {
        println!(
            "P={}: jobs per primary {}",
            r.primaries,
            each(r, &|(jobs, _, _, _)| jobs.to_string())
        );
    }
}

struct Measure {
    conn: redis::Connection,
}

impl Measure {
    /// Drains `q` with one worker at concurrency 100: Redis CPU per job (µs), jobs per script
    /// call, the slowest call (µs, and its first key) and the calls over 1 ms (SLOWLOG).
    async fn drain(&mut self, q: &Queue) -> (f64, f64, (u64, String), usize) {
        let c = &mut self.conn;
        let _: () = redis::cmd("CONFIG")
            .arg("SET")
            .arg("slowlog-log-slower-than")
            .arg(1000)
            .query(c)
            .unwrap();
        let _: () = redis::cmd("CONFIG")
            .arg("SET")
            .arg("slowlog-max-len")
            .arg(10_000)
            .query(c)
            .unwrap();
        let _: () = redis::cmd("SLOWLOG").arg("RESET").query(c).unwrap();
        let (cpu, calls) = (redis_cpu(c), script_calls(c));
        let done = drain(q, 1).await as f64;
        let c = &mut self.conn;
        let us = (redis_cpu(c) - cpu) * 1e6 / done;
        let per_call = done / (script_calls(c) - calls).max(1) as f64;
        // Each entry: id, time, duration (µs), arguments; told by the command and its first key.
        let log: Vec<(u64, String)> = redis::cmd("SLOWLOG")
            .arg("GET")
            .arg(10_000)
            .query::<Vec<redis::Value>>(c)
            .unwrap()
            .into_iter()
            .filter_map(|e| {
                let redis::Value::Array(f) = e else {
                    return None;
                };
                let args: Vec<String> = redis::from_redis_value(f[3].clone()).ok()?;
                let what = match args.as_slice() {
                    [cmd, _, _, key, ..] if cmd.eq_ignore_ascii_case("evalsha") => key.clone(),
                    _ => args.first().cloned().unwrap_or_default(),
                };
                Some((redis::from_redis_value(f[2].clone()).ok()?, what))
            })
            .collect();
        let slowest = log.iter().max().cloned().unwrap_or_default();
        let over = log.len();
        (us, per_call, slowest, over)
    }

    fn reset(&mut self) -> (i64, u64) {
        let _: () = redis::cmd("FLUSHALL").query(&mut self.conn).unwrap();
        std::thread::sleep(Duration::from_millis(200));
        (used_memory(&mut self.conn), self.dbsize())
    }

    fn dbsize(&mut self) -> u64 {
        redis::cmd("DBSIZE").query(&mut self.conn).unwrap()
    }

    fn report(&mut self, what: &str, n: usize, base: (i64, u64)) -> f64 {
        let bytes = (used_memory(&mut self.conn) - base.0) as f64 / n as f64;
        let keys = (self.dbsize() - base.1) as f64 / n as f64;
        println!("{what:<44} {bytes:>10.0} {keys:>10.2}");
        bytes
    }
}

async fn memory(a: &Args) {
    let server = RedisServer::start_announced();
    let client = Client::open(&server.url).unwrap();
    let mut m = Measure {
        conn: redis::Client::open(server.url.as_str())
            .unwrap()
            .get_connection()
            .unwrap(),
    };
    let n = a.jobs;
    let plain = |keep| QueueOptions {
        keep_completed: keep,
        ..Default::default()
    };
    println!(
        "\nbytes Redis holds (used_memory delta over the count; payload 100 bytes), load {}",
        load()
    );
    println!("{:<44} {:>10} {:>10}", "item", "bytes", "keys");

    let base = m.reset();
    let q = Queue::new(&client, "waiting", plain(0)).unwrap();
    enqueue_all(&q, &jobs(n, |_| EnqueueOptions::default())).await;
    let waiting = m.report(&format!("a waiting job ({n})"), n, base);
    let plain_cost = m.drain(&q).await;
    // An enqueue at a time (a request handler's), against `enqueue_many`'s batches of 5,000.
    let count = (n / 10).max(1);
    let t0 = redis_cpu(&mut m.conn);
    for _ in 0..count {
        q.enqueue(PAYLOAD, EnqueueOptions::default()).await.unwrap();
    }
    let single_us = (redis_cpu(&mut m.conn) - t0) * 1e6 / count as f64;
    let batch = jobs(count, |_| EnqueueOptions::default());
    let t0 = redis_cpu(&mut m.conn);
    enqueue_all(&q, &batch).await;
    let many_us = (redis_cpu(&mut m.conn) - t0) * 1e6 / count as f64;

    let base = m.reset();
    let q = Queue::new(&client, "delayed", plain(0)).unwrap();
    let later = |_| EnqueueOptions {
        delay: Some(Duration::from_secs(3600)),
        ..Default::default()
    };
    enqueue_all(&q, &jobs(n, later)).await;
    m.report(&format!("a delayed job ({n})"), n, base);

    let base = m.reset();
    let q = Queue::new(&client, "kept", plain(n + n / 10)).unwrap();
    enqueue_all(&q, &jobs(n, |_| EnqueueOptions::default())).await;
    let done = drain(&q, 1).await as usize;
    m.report(&format!("a completed job kept ({done})"), done, base);

    let base = m.reset();
    let q = Queue::new(&client, "groups", plain(0)).unwrap();
    let grouped = |i| EnqueueOptions {
        group: Some(format!("tenant-{i}")),
        ..Default::default()
    };
    enqueue_all(&q, &jobs(n, grouped)).await;
    let in_group = m.report(
        &format!("a waiting job in its own group ({n} groups)"),
        n,
        base,
    );
    println!(
        "{:<44} {:>10.0}",
        "  of which the group, beyond the job",
        in_group - waiting
    );
    let group_cost = m.drain(&q).await;
    m.report(&format!("a drained group ({n}, after its job)"), n, base);

    let base = m.reset();
    let q = Queue::new(&client, "schedules", plain(0)).unwrap();
    let count = (n / 10).max(1);
    for i in 0..count {
        q.upsert_schedule(
            &format!("report-{i}"),
            Every::Interval(Duration::from_secs(3600)),
            PAYLOAD,
            EnqueueOptions::default(),
        )
        .await
        .unwrap();
    }
    m.report(&format!("a schedule ({count}, hourly)"), count, base);

    println!("\ndraining, one worker at concurrency 100:");
    for (what, (us, per_call, (slowest, key), over)) in [
        ("plain", plain_cost),
        (&format!("{n} groups, a job each"), group_cost),
    ] {
        println!(
            "{what:<26} Redis CPU {us:>5.1} µs/job, {per_call:>5.1} jobs/script call, \
             {over} calls over 1 ms, the slowest {:.1} ms ({key})",
            slowest as f64 / 1000.0
        );
    }
    println!(
        "Redis CPU per enqueue: one at a time {single_us:.1} µs, enqueue_many (5,000 a call) \
         {many_us:.1} µs"
    );
}

#[tokio::main]
async fn main() {
    let a = args();
    if a.mode != "memory" {
        throughput(&a).await;
    }
    if a.mode != "throughput" {
        memory(&a).await;
    }
}
