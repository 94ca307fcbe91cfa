//! A worker's per-task counts between two reports: what its handlers did per task name, kept in
//! memory and sent with the report it sends anyway (see docs/data-model.md, "Per-task metrics").
//! Nothing is sent per job.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::time::Duration;

/// Most task names a queue (shard) tracks; the others are counted under [`OTHER_TASK`] (the
/// fetch script enforces it: `lib/tasks.lua`, `TASKS_MAX`).
pub const TASKS_MAX: usize = 100;

/// The name the tasks past [`TASKS_MAX`] are counted under.
pub const OTHER_TASK: &str = "(other)";

/// Most task names a worker keeps between two reports (the rest go under [`OTHER_TASK`]), so a
/// flood of names costs it bounded memory and its report bounded size.
const WORKER_TASKS_MAX: usize = 2 * TASKS_MAX;

/// One task's counts: jobs completed, failed attempts, jobs dead-lettered, handler runs and their
/// summed run time (µs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TaskCounts {
    pub completed: u64,
    pub failed: u64,
    pub dead_lettered: u64,
    pub runs: u64,
    pub run_us: u64,
}

impl TaskCounts {
    pub(crate) fn add(&mut self, o: &TaskCounts) {
        self.completed += o.completed;
        self.failed += o.failed;
        self.dead_lettered += o.dead_lettered;
        self.runs += o.runs;
        self.run_us += o.run_us;
    }

    pub(crate) fn minus(&self, o: &TaskCounts) -> TaskCounts {
        TaskCounts {
            completed: self.completed.saturating_sub(o.completed),
            failed: self.failed.saturating_sub(o.failed),
            dead_lettered: self.dead_lettered.saturating_sub(o.dead_lettered),
            runs: self.runs.saturating_sub(o.runs),
            run_us: self.run_us.saturating_sub(o.run_us),
        }
    }

    fn is_zero(&self) -> bool {
        *self == TaskCounts::default()
    }
}

/// A task name as it travels in a report and sits in Redis: every byte outside
/// `[A-Za-z0-9._/@+-]` percent-encoded, so it holds no separator (`:`, `;`, `|`, `,`) and no
/// `(`: [`OTHER_TASK`] is never an encoded name. A job without a task is "".
pub fn encode_task(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for b in name.bytes() {
        if b.is_ascii_alphanumeric() || b"._/@+-".contains(&b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// The name [`encode_task`] encoded ([`OTHER_TASK`] as is); `None` if it is not such.
pub fn decode_task(enc: &str) -> Option<String> {
    if enc == OTHER_TASK {
        return Some(enc.to_string());
    }
    let b = enc.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Per-task counts in the report's (and the snapshots') encoding:
/// `"<encoded task>:<completed>:<failed>:<dead-lettered>:<runs>:<run µs>;..."`.
pub(crate) fn encode_counts<'a>(it: impl Iterator<Item = (&'a str, &'a TaskCounts)>) -> String {
    let mut out = String::new();
    for (enc, c) in it {
        if !out.is_empty() {
            out.push(';');
        }
        let _ = write!(
            out,
            "{enc}:{}:{}:{}:{}:{}",
            c.completed, c.failed, c.dead_lettered, c.runs, c.run_us
        );
    }
    out
}

/// The entries [`encode_counts`] wrote, by encoded name (malformed entries skipped).
pub(crate) fn parse_counts(s: &str) -> HashMap<String, TaskCounts> {
    let mut out: HashMap<String, TaskCounts> = HashMap::new();
    for entry in s.split(';').filter(|e| !e.is_empty()) {
        let mut parts = entry.split(':');
        let Some(name) = parts.next() else { continue };
        let n: Vec<u64> = parts.filter_map(|p| p.parse().ok()).collect();
        if n.len() != 5 {
            continue;
        }
        out.entry(name.to_string()).or_default().add(&TaskCounts {
            completed: n[0],
            failed: n[1],
            dead_lettered: n[2],
            runs: n[3],
            run_us: n[4],
        });
    }
    out
}

/// What a worker's handlers did per task since its last report (encoded names).
#[derive(Debug, Default)]
pub(crate) struct TaskTally {
    counts: Mutex<HashMap<String, TaskCounts>>,
}

impl TaskTally {
    fn with(&self, task: Option<&str>, f: impl FnOnce(&mut TaskCounts)) {
        let enc = encode_task(task.unwrap_or(""));
        let mut m = self.counts.lock().unwrap();
        let key = if m.contains_key(&enc) || m.len() < WORKER_TASKS_MAX {
            enc
        } else {
            OTHER_TASK.to_string()
        };
        f(m.entry(key).or_default());
    }

    /// A handler of `task` ran for `took`.
    pub fn ran(&self, task: Option<&str>, took: Duration) {
        let us = took.as_micros().min(u128::from(u64::MAX)) as u64;
        self.with(task, |c| {
            c.runs += 1;
            c.run_us += us;
        });
    }

    /// A job of `task` completed.
    pub fn completed(&self, task: Option<&str>) {
        self.with(task, |c| c.completed += 1);
    }

    /// An attempt of `task` failed (and the job was dead-lettered, when `dead`).
    pub fn failed(&self, task: Option<&str>, dead: bool) {
        self.with(task, |c| {
            c.failed += 1;
            c.dead_lettered += u64::from(dead);
        });
    }

    /// Whether nothing was counted since the last [`take`](Self::take).
    pub fn is_empty(&self) -> bool {
        self.counts
            .lock()
            .unwrap()
            .values()
            .all(TaskCounts::is_zero)
    }

    /// The counts so far, encoded for the report, and a fresh start.
    pub fn take(&self) -> String {
        let m = std::mem::take(&mut *self.counts.lock().unwrap());
        let mut v: Vec<(&String, &TaskCounts)> = m.iter().filter(|(_, c)| !c.is_zero()).collect();
        v.sort_by(|a, b| a.0.cmp(b.0));
        encode_counts(v.into_iter().map(|(k, c)| (k.as_str(), c)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_names_with_separators_round_trip_and_never_read_as_other() {
        for name in ["send:mail;x|y,z", "", "(other)", "é%20", "a.b/c@d+e-f_g"] {
            let enc = encode_task(name);
            assert!(!enc.contains([':', ';', '|', ',', '(', ' ']), "{enc}");
            assert_eq!(decode_task(&enc).as_deref(), Some(name));
        }
        assert_ne!(encode_task(OTHER_TASK), OTHER_TASK);
        assert_eq!(decode_task("%G1"), None);
    }

    #[test]
    fn a_tally_reports_and_restarts_and_caps_its_names() {
        let t = TaskTally::default();
        t.ran(Some("a"), Duration::from_micros(1500));
        t.completed(Some("a"));
        t.failed(None, true);
        assert_eq!(t.take(), ":0:1:1:0:0;a:1:0:0:1:1500");
        assert!(t.is_empty());
        for i in 0..WORKER_TASKS_MAX + 5 {
            t.completed(Some(&format!("t{i}")));
        }
        let got = parse_counts(&t.take());
        assert_eq!(got.len(), WORKER_TASKS_MAX + 1);
        assert_eq!(got[OTHER_TASK].completed, 5);
    }
}
