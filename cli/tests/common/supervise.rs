//! What the supervisor's tests share: `tideq worker` run through the `worker_host` example (its
//! children are the `worker_child` example), its log lines, its children, the jobs' ledger.

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tideq::{Client, Queue};

/// The examples' folder, with `worker_child`, `worker_host` and `dashboard_axum` built (`cargo
/// test --test X` does not build the examples; this builds them once per test binary, a no-op
/// when fresh).
pub fn examples() -> PathBuf {
    static BUILT: std::sync::Once = std::sync::Once::new();
    BUILT.call_once(|| {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut build = Command::new(cargo);
        // Without the variables cargo sets for a test run (a build script that watches one,
        // ring's CARGO_MANIFEST_DIR, would rebuild everything, twice per test run).
        for (k, _) in std::env::vars_os() {
            let k = k.to_string_lossy().to_string();
            let set_by_cargo = [
                "CARGO_PKG_",
                "CARGO_BIN_",
                "CARGO_MANIFEST_",
                "CARGO_CRATE_",
            ]
            .iter()
            .any(|p| k.starts_with(p))
                || k == "CARGO_PRIMARY_PACKAGE"
                || k == "CARGO_TARGET_TMPDIR";
            if set_by_cargo {
                build.env_remove(&k);
            }
        }
        let ok = build
            .args([
                "build",
                "-q",
                "-p",
                "tideq-cli",
                "--example",
                "worker_child",
            ])
            .args(["--example", "worker_host", "--example", "dashboard_axum"])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .unwrap()
            .success();
        assert!(ok, "building the examples");
    });
    let exe = std::env::current_exe().unwrap();
    exe.parent().unwrap().parent().unwrap().join("examples")
}

/// A running `tideq worker` (the test host's), its stderr collected.
pub struct Supervisor {
    pub child: Child,
    pub lines: Arc<Mutex<Vec<String>>>,
}

impl Supervisor {
    /// `tideq worker TARGET --url URL --log-format json ARGS...`.
    pub fn start(url: &str, target: &str, args: &[&str]) -> Self {
        let mut child = Command::new(examples().join("worker_host"))
            .args(["worker", target, "--url", url, "--log-format", "json"])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let (l, err) = (lines.clone(), child.stderr.take().unwrap());
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines() {
                let Ok(line) = line else { break };
                l.lock().unwrap().push(line);
            }
        });
        Supervisor { child, lines }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn signal(&self, sig: i32) {
        unsafe {
            libc::kill(self.child.id() as i32, sig);
        }
    }

    /// The supervisor's log events named `event` (JSON lines).
    pub fn events(&self, event: &str) -> Vec<serde_json::Value> {
        self.lines
            .lock()
            .unwrap()
            .iter()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter(|v| v["event"] == event)
            .collect()
    }

    pub fn log(&self) -> String {
        self.lines.lock().unwrap().join("\n")
    }

    /// Its exit code, waiting at most `secs`.
    pub fn wait(&mut self, secs: u64) -> Option<i32> {
        let t = Instant::now();
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                return s.code();
            }
            if t.elapsed() > Duration::from_secs(secs) {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The live children's pids (processes whose parent is the supervisor, zombies excluded).
    pub fn children(&self) -> Vec<u32> {
        children_of(self.pid())
    }
}

impl Drop for Supervisor {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            for pid in self.children() {
                unsafe {
                    libc::kill(pid as i32, libc::SIGKILL);
                }
            }
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        if std::thread::panicking() {
            eprintln!("--- supervisor log ---\n{}", self.log());
        }
    }
}

/// Processes whose parent is `pid` (from /proc), zombies excluded.
pub fn children_of(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(p) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else {
            continue;
        };
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r.to_string()) else {
            continue;
        };
        let f: Vec<&str> = rest.split_whitespace().collect();
        if f.len() > 1 && f[0] != "Z" && f[1].parse::<u32>() == Ok(pid) {
            out.push(p);
        }
    }
    out.sort();
    out
}

/// Waits until `f` holds, at most `secs` (panics with `what` otherwise).
pub fn until(what: &str, secs: u64, mut f: impl FnMut() -> bool) {
    let t = Instant::now();
    while !f() {
        assert!(t.elapsed() < Duration::from_secs(secs), "timed out: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

pub fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

pub fn queue(url: &str, name: &str) -> Queue {
    let _g = RT.enter();
    Queue::new(&Client::open(url).unwrap(), name, Default::default()).unwrap()
}

static RT: std::sync::LazyLock<tokio::runtime::Runtime> = std::sync::LazyLock::new(|| {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap()
});

/// Enqueues `n` jobs with ids `j0..j{n-1}`.
pub fn fill(q: &Queue, n: usize) {
    let jobs: Vec<(Vec<u8>, tideq::EnqueueOptions)> = (0..n)
        .map(|i| {
            (
                b"x".to_vec(),
                tideq::EnqueueOptions {
                    id: Some(format!("j{i}")),
                    ..Default::default()
                },
            )
        })
        .collect();
    for chunk in jobs.chunks(500) {
        RT.block_on(q.enqueue_many(chunk)).unwrap();
    }
}

/// Runs a no-op worker until the queue is drained (expired leases recovered); jobs completed.
pub fn drain(q: &Queue) -> u64 {
    RT.block_on(async {
        let w = q
            .work(
                tideq::WorkerOptions {
                    stop_when_drained: true,
                    poll_interval: Duration::from_millis(100),
                    ..Default::default()
                },
                |_j: tideq::Job| async { Ok::<(), String>(()) },
            )
            .unwrap();
        tokio::time::timeout(Duration::from_secs(60), w.join())
            .await
            .unwrap()
            .completed
    })
}

pub fn stats(q: &Queue) -> tideq::JobStats {
    RT.block_on(q.stats()).unwrap()
}

/// A fresh temporary folder.
pub fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(tideq_testing::unique(name));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The ledger's lines, as (start?, job id, pid).
pub fn ledger(path: &std::path::Path) -> Vec<(bool, String, u32)> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            (f[0] == "start", f[1].to_string(), f[2].parse().unwrap())
        })
        .collect()
}

/// Checks the ledger: no job ran twice at once (a job started again while a run of it had not
/// ended only when that run's process was killed, in `killed`), and every job in `ids` ended.
/// Returns the runs per pid.
pub fn check_ledger(
    path: &std::path::Path,
    ids: impl IntoIterator<Item = String>,
    killed: &HashSet<u32>,
) -> HashMap<u32, usize> {
    let mut open: HashMap<String, u32> = HashMap::new();
    let mut ended: HashSet<String> = HashSet::new();
    let mut per_pid: HashMap<u32, usize> = HashMap::new();
    for (start, id, pid) in ledger(path) {
        if start {
            if let Some(prev) = open.get(&id) {
                assert!(
                    killed.contains(prev),
                    "job {id} started in {pid} while its run in {prev} (not killed) had not ended"
                );
            }
            open.insert(id, pid);
            *per_pid.entry(pid).or_default() += 1;
        } else {
            assert_eq!(
                open.remove(&id),
                Some(pid),
                "job {id} ended in {pid}, not its runner"
            );
            ended.insert(id);
        }
    }
    for id in ids {
        assert!(ended.contains(&id), "job {id} never ended");
    }
    per_pid
}

/// The status code of `GET path` on `addr` (0: nothing listens).
pub fn http_get(addr: &str, path: &str) -> u16 {
    let Ok(mut s) = std::net::TcpStream::connect(addr) else {
        return 0;
    };
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let _ = write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    );
    let mut text = String::new();
    let _ = s.read_to_string(&mut text);
    text.split(' ').nth(1).unwrap_or("0").parse().unwrap_or(0)
}
