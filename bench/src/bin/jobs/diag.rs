//! Server-side measurements with their own connections (kept out of the timed parts).

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
    tideq_testing::command_calls(info)
        .into_iter()
        .filter(|(name, _)| !matches!(name.split('|').next(), Some("info" | "config")))
        .collect()
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
