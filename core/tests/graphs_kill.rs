//! Issue 45, part 4: a random graph of 1,000 jobs (seeded) over two queues, run by worker
//! processes SIGKILLed every few hundred ms (their leases expire, their jobs run again) across a
//! Redis restart (AOF, fsync always): every job completes, each after all the jobs it runs after,
//! having read each of their results. SLOWLOG: no script call over 10 ms (the project's budget).

mod common;

use std::collections::HashSet;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::scale::{script_calls, slow_calls, slowlog_from_now};
use common::RedisServer;
use tideq::{
    ChildOutcome, Client, FlowJob, Graph, GraphNode, Job, JobState, Queue, QueueOptions,
    WorkerOptions,
};

const JOBS: usize = 1000;
const URL_ENV: &str = "TIDEQ_GRAPH_KILL_URL";
const QUEUES_ENV: &str = "TIDEQ_GRAPH_KILL_QUEUES";

/// A small seeded generator (xorshift64*): the same graph every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Job i runs after 0 to 4 of the 64 jobs before it; a third of the jobs go to the second queue.
fn random_graph(seed: u64) -> Vec<(bool, Vec<usize>)> {
    let mut rng = Rng(seed);
    (0..JOBS)
        .map(|i| {
            let mut after = Vec::new();
            if i > 0 {
                for _ in 0..rng.below(5) {
                    let j = i - 1 - rng.below(i.min(64) as u64) as usize;
                    if !after.contains(&j) {
                        after.push(j);
                    }
                }
            }
            (rng.below(3) == 0, after)
        })
        .collect()
}

fn queues(url: &str, names: &str) -> (Queue, Queue) {
    let client = Client::open(url).unwrap();
    let opts = || QueueOptions {
        keep_completed: JOBS * 2,
        // A job killed mid-run counts an attempt; a wrong result fails every attempt.
        max_attempts: 20,
        backoff: tideq::Backoff::fixed(50),
        ..Default::default()
    };
    let (a, b) = names.split_once(',').unwrap();
    (
        Queue::new(&client, a, opts()).unwrap(),
        Queue::new(&client, b, opts()).unwrap(),
    )
}

/// The handler: the job's payload lists the ids it runs after; each must have completed with
/// result "r:<id>" (else the attempt fails, and the job ends dead). Returns "r:<its id>".
async fn handle(job: Job) -> Result<String, String> {
    let want: HashSet<String> = String::from_utf8_lossy(&job.payload)
        .split(',')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    let results = job.children_results().await.map_err(|e| e.to_string())?;
    let mut got = HashSet::new();
    for r in results {
        match r.outcome {
            ChildOutcome::Completed(Some(v)) if v == format!("r:{}", r.id).as_bytes() => {
                got.insert(r.id);
            }
            other => return Err(format!("BAD {}: {} ended {other:?}", job.id, r.id)),
        }
    }
    if got != want {
        return Err(format!("BAD {}: saw {got:?}, runs after {want:?}", job.id));
    }
    // Long enough that kills land mid-job now and then.
    tokio::time::sleep(Duration::from_millis(job.id.len() as u64 * 3)).await;
    Ok(format!("r:{}", job.id))
}

/// A worker process of both queues (started by the test below, then SIGKILLed).
#[test]
#[ignore]
fn graph_kill_worker_process() {
    let (Ok(url), Ok(names)) = (std::env::var(URL_ENV), std::env::var(QUEUES_ENV)) else {
        return;
    };
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let (a, b) = queues(&url, &names);
        let opts = || WorkerOptions {
            lease: Duration::from_millis(1000),
            concurrency: 4,
            poll_interval: Duration::from_millis(100),
            ..Default::default()
        };
        let wa = a.work(opts(), handle).unwrap();
        let wb = b.work(opts(), handle).unwrap();
        println!("GRAPH-WORKER up");
        wa.join().await;
        wb.join().await;
    });
}

fn spawn_worker(url: &str, names: &str) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "graph_kill_worker_process",
            "--nocapture",
        ])
        .env(URL_ENV, url)
        .env(QUEUES_ENV, names)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Renices the server ahead of the test's threads (SLOWLOG times a call in wall-clock time).
fn renice(server: &RedisServer) {
    let info: String = redis::cmd("INFO")
        .arg("server")
        .query(&mut server.conn())
        .unwrap();
    if let Some(pid) = info.lines().find_map(|l| l.strip_prefix("process_id:")) {
        let _ = Command::new("renice")
            .args(["-n", "-10", "-p", pid.trim()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// The script calls over 10 ms since SLOWLOG was reset: none for a call slow by itself; on this
/// shared 2-core machine a stall may hit one call in a hundred (as core/tests/workflows_scale.rs
/// allows).
fn assert_calls_short(server: &RedisServer, what: &str, calls: u64) {
    let slow: Vec<String> = slow_calls(server, 10_000)
        .into_iter()
        .map(|c| c.chars().take(200).collect())
        .collect();
    eprintln!("{what}: {} of {calls} script calls over 10 ms", slow.len());
    assert!(
        slow.len() as u64 <= (calls / 100).max(1),
        "{what}: {} of {calls} script calls over 10 ms: {slow:#?}",
        slow.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_random_graph_of_1000_jobs_runs_each_after_its_prerequisites_under_worker_kills_and_a_redis_restart(
) {
    let mut server = RedisServer::start_private(
        common::free_port(),
        &["--appendonly", "yes", "--appendfsync", "always"],
    );
    renice(&server);
    let names = format!("{},{}", common::unique("ga"), common::unique("gb"));
    let (qa, qb) = queues(&server.url, &names);
    let spec = random_graph(45);
    let edges: usize = spec.iter().map(|(_, a)| a.len()).sum();
    let mut graph = Graph::new();
    for (i, (on_b, after)) in spec.iter().enumerate() {
        let payload: Vec<String> = after.iter().map(|j| format!("n{j}")).collect();
        let mut job = FlowJob::new(payload.join(",").into_bytes());
        if *on_b {
            job = job.on(&qb);
        }
        graph = graph.node(
            GraphNode::new(format!("n{i}"), job).after_all(after.iter().map(|j| format!("n{j}"))),
        );
    }
    slowlog_from_now(&server, 10_000);
    let before = script_calls(&server);
    let made = qa.enqueue_graph(graph).await.unwrap();
    assert!(made.created);
    let enqueue_calls = script_calls(&server) - before;
    eprintln!("{JOBS} jobs, {edges} edges: enqueued in {enqueue_calls} script calls");
    assert_calls_short(&server, "enqueue", enqueue_calls);
    let (waiting, ready) = {
        let mut w = 0;
        for (i, (on_b, _)) in spec.iter().enumerate() {
            let q = if *on_b { &qb } else { &qa };
            let info = q.get(&format!("n{i}")).await.unwrap().unwrap();
            if info.state == JobState::Waiting {
                w += 1;
            }
        }
        (w, JOBS - w)
    };
    let roots = spec.iter().filter(|(_, a)| a.is_empty()).count();
    assert_eq!(ready, roots, "only the jobs that run after none are ready");
    assert_eq!(waiting, JOBS - roots);

    // Workers, one SIGKILLed and replaced every 400 ms; Redis restarted once on the way.
    slowlog_from_now(&server, 10_000);
    let run_from = script_calls(&server);
    let mut workers: Vec<Child> = (0..3).map(|_| spawn_worker(&server.url, &names)).collect();
    let (mut kills, mut restarted) = (0, false);
    let started = Instant::now();
    let done = |a: &Queue, b: &Queue| {
        let (a, b) = (a.clone(), b.clone());
        async move {
            match (a.stats().await, b.stats().await) {
                (Ok(x), Ok(y)) => (x.completed + y.completed) as usize,
                _ => 0,
            }
        }
    };
    loop {
        let n = done(&qa, &qb).await;
        if n >= JOBS {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(240),
            "only {n} of {JOBS} jobs completed"
        );
        tokio::time::sleep(Duration::from_millis(400)).await;
        if !restarted && n >= JOBS / 2 {
            // Slow calls before the restart, counted before SLOWLOG goes with the process.
            let calls = script_calls(&server) - run_from;
            assert_calls_short(&server, "run, before the restart", calls);
            server.restart();
            restarted = true;
            renice(&server);
            slowlog_from_now(&server, 10_000);
            continue;
        }
        let k = kills % workers.len();
        let _ = workers[k].kill(); // SIGKILL
        let _ = workers[k].wait();
        workers[k] = spawn_worker(&server.url, &names);
        kills += 1;
    }
    let after_restart = script_calls(&server);
    for mut w in workers {
        let _ = w.kill();
        let _ = w.wait();
    }
    eprintln!(
        "{JOBS} jobs completed in {:?}, {kills} workers killed, Redis restarted: {restarted}",
        started.elapsed()
    );
    assert!(restarted && kills > 0);
    assert_calls_short(&server, "run, after the restart", after_restart);
    // Every job completed (a job that saw a wrong or missing result would have failed).
    for (i, (on_b, _)) in spec.iter().enumerate() {
        let q = if *on_b { &qb } else { &qa };
        let info = q.get(&format!("n{i}")).await.unwrap().unwrap();
        assert_eq!(
            info.state,
            JobState::Completed,
            "n{i}: {:?}",
            info.last_error
        );
        assert_eq!(info.result.as_deref(), Some(format!("r:n{i}").as_bytes()));
    }
    let dead = qa.stats().await.unwrap().dead + qb.stats().await.unwrap().dead;
    assert_eq!(dead, 0);
}
