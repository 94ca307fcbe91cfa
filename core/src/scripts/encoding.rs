//! The structured strings the Rust side writes for the scripts or reads back from them, each
//! defined here once; on the Lua side each has one include in `src/lua/lib/` (named below).
//! `docs/data-model.md` describes them, and `core/tests/encodings.rs` checks each against its Lua
//! twin through the scripts. The queue policy ("keep|keepfor|...", `lib/policy.lua`) is written by
//! `QueueOptions::policy` (job.rs).

/// A job's meta `"<state>|<attempts>|<max>|<enqueued ms>|<x>"` (`lib/meta.lua`: `parse_meta`,
/// `meta_of`; docs/data-model.md, "Job meta") -> its five fields; `None` unless it has five (a
/// completed job's may go on with its run, see [`meta_run`]).
pub(crate) fn meta_fields(meta: &str) -> Option<[&str; 5]> {
    let mut parts = meta.splitn(6, '|');
    let fields = [
        parts.next()?,
        parts.next()?,
        parts.next()?,
        parts.next()?,
        parts.next()?,
    ];
    match parts.next() {
        None => Some(fields),
        Some(run) if fields[0] == "c" && meta_run_of(run).is_some() => Some(fields),
        Some(_) => None,
    }
}

/// A completed job's last attempt's run, from its meta's tail `"|<start ms>|<worker id>"`
/// (`lib/acks.lua`): (start, worker, "" when unknown); `None` when the meta has none.
pub(crate) fn meta_run(meta: &str) -> Option<(u64, &str)> {
    let run = meta.splitn(6, '|').nth(5)?;
    meta_run_of(run)
}

fn meta_run_of(run: &str) -> Option<(u64, &str)> {
    let (start, worker) = run.split_once('|')?;
    Some((start.parse().ok()?, worker))
}

/// The lease token of a delivery, `"<enqueued>.<x>"` from its meta (`lib/meta.lua`: `token_of`).
pub(crate) fn lease_token(enqueued: &str, x: &str) -> String {
    format!("{enqueued}.{x}")
}

/// A job's route as `enqueue_jobs.lua` takes it: `"<priority>|<group>"` (priority 0 = none, group
/// "" = none), or "" for a job with neither (it waits in the ready list). The script stores it as
/// `"<priority>|<sequence>|<group>"` (`lib/route.lua`: `parse_route_arg`, `route_of`). The group is
/// last, so it may hold any character (`|` included).
pub(crate) fn route_arg(priority: Option<u32>, group: Option<&str>) -> String {
    match (priority, group) {
        (None, None) => String::new(),
        (p, g) => format!("{}|{}", p.unwrap_or(0), g.unwrap_or("")),
    }
}

/// A job's deadline to start by as `enqueue_jobs.lua` takes it (its `deadline`): "" none,
/// `"a<ms>"` that time (ms since the epoch), `"r<ms>"` that long after the job's due time.
pub(crate) fn expiry_arg(after_ms: Option<u64>, at_ms: Option<u64>) -> String {
    match (after_ms, at_ms) {
        (Some(ms), _) => format!("r{ms}"),
        (None, Some(ms)) => format!("a{ms}"),
        (None, None) => String::new(),
    }
}

/// A stored route `"<priority>|<sequence>|<group>"` (`lib/route.lua`: `parse_route`) -> its
/// priority (`None` for 0) and group (`None` for ""); `None` when it does not parse.
pub(crate) fn parse_route(route: &str) -> Option<(Option<u32>, Option<String>)> {
    let mut parts = route.splitn(3, '|');
    let (p, _seq, g) = (parts.next()?, parts.next()?, parts.next()?);
    let priority = p.parse().ok().filter(|p| *p > 0);
    let group = Some(g.to_string()).filter(|g| !g.is_empty());
    Some((priority, group))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_meta_has_five_fields_and_gives_the_lease_token() {
        assert_eq!(meta_fields("q|0|5|17|2"), Some(["q", "0", "5", "17", "2"]));
        assert_eq!(meta_fields("q|0|5|17"), None);
        assert_eq!(meta_fields("q|0|5|17|2|9"), None);
        assert_eq!(meta_fields("q|0|5|17|2|9|w"), None);
        // A completed job's run: its start and worker.
        assert_eq!(
            meta_fields("c|0|5|17|20|18|ab"),
            Some(["c", "0", "5", "17", "20"])
        );
        assert_eq!(meta_run("c|0|5|17|20|18|ab"), Some((18, "ab")));
        assert_eq!(meta_run("c|0|5|17|20|18|"), Some((18, "")));
        assert_eq!(meta_run("c|0|5|17|20"), None);
        assert_eq!(meta_fields("c|0|5|17|20|x|ab"), None);
        assert_eq!(lease_token("17", "2"), "17.2");
    }

    #[test]
    fn routes_round_trip_through_the_stored_form() {
        assert_eq!(route_arg(None, None), "");
        assert_eq!(route_arg(Some(3), None), "3|");
        assert_eq!(route_arg(None, Some("a|b")), "0|a|b");
        // What enqueue_jobs.lua stores for "3|a|b" with sequence 7.
        assert_eq!(
            parse_route("3|7|a|b"),
            Some((Some(3), Some("a|b".to_string())))
        );
        assert_eq!(parse_route("0|7|g"), Some((None, Some("g".to_string()))));
        assert_eq!(parse_route("5|1|"), Some((Some(5), None)));
        assert_eq!(parse_route("5"), None);
    }
}

/// A worker's entry in the `winfo` hash (docs/data-model.md, "Workers"): who it is and what it
/// runs. Written by the worker, stored as is by the scripts (`fetch_jobs.lua`,
/// `extend_lease.lua`: `lib/workers.lua` `worker_seen`), read back by `Queue::workers`.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub(crate) struct WorkerEntry {
    pub queue: String,
    pub host: String,
    pub pid: u32,
    pub runtime: String,
    pub version: String,
    pub concurrency: u64,
    /// When the worker started (ms, its own clock).
    pub started: u64,
    pub running: u64,
    /// Up to 10 of the running jobs' ids.
    pub ids: Vec<String>,
}

/// A worker's entry as the `winfo` hash keeps it: a JSON object (fields of [`WorkerEntry`]).
pub(crate) fn worker_entry(e: &WorkerEntry) -> String {
    serde_json::to_string(e).unwrap_or_default()
}

/// A `winfo` entry read back ([`worker_entry`]); `None` if it does not parse.
pub(crate) fn parse_worker_entry(s: &str) -> Option<WorkerEntry> {
    serde_json::from_str(s).ok()
}

/// One history snapshot (docs/data-model.md, "History"): the queue shard's totals at the first
/// worker report of a minute, as `fetch_jobs.lua` writes them (`lib/history.lua`:
/// `snapshot_history`) into the day's `hist:<day>` hash, and as `Queue::history` reads the live
/// counters (`stats` and `metrics` hashes) for the minute under way.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct HistorySnapshot {
    pub enqueued: u64,
    pub completed: u64,
    pub retried: u64,
    /// The `stats` hash's `failed`.
    pub dead_lettered: u64,
    pub cancelled: u64,
    /// The `metrics` hash's `lt:count` and `lt:sum_ms` (promotion lateness).
    pub lt_count: u64,
    pub lt_sum_ms: u64,
}

impl HistorySnapshot {
    /// The fields in their encoded order.
    pub fn fields(&self) -> [u64; 7] {
        [
            self.enqueued,
            self.completed,
            self.retried,
            self.dead_lettered,
            self.cancelled,
            self.lt_count,
            self.lt_sum_ms,
        ]
    }

    pub fn from_fields(f: [u64; 7]) -> Self {
        HistorySnapshot {
            enqueued: f[0],
            completed: f[1],
            retried: f[2],
            dead_lettered: f[3],
            cancelled: f[4],
            lt_count: f[5],
            lt_sum_ms: f[6],
        }
    }
}

/// A snapshot as the history hash keeps it:
/// `"<enqueued>,<completed>,<retried>,<dead_lettered>,<cancelled>,<lt_count>,<lt_sum_ms>"`.
#[cfg(test)]
pub(crate) fn history_snapshot(s: &HistorySnapshot) -> String {
    s.fields().map(|n| n.to_string()).join(",")
}

/// A history snapshot read back ([`history_snapshot`]); `None` unless it has seven counts. A
/// negative count (a counter decremented below zero) reads as 0.
pub(crate) fn parse_history_snapshot(s: &str) -> Option<HistorySnapshot> {
    let mut f = [0u64; 7];
    let mut parts = s.split(',');
    for slot in &mut f {
        let n: i64 = parts.next()?.trim().parse().ok()?;
        *slot = n.max(0) as u64;
    }
    parts
        .next()
        .is_none()
        .then_some(HistorySnapshot::from_fields(f))
}

#[cfg(test)]
mod history_tests {
    use super::*;

    #[test]
    fn a_history_snapshot_round_trips() {
        let s = HistorySnapshot::from_fields([1, 2, 3, 4, 5, 6, 7]);
        assert_eq!(history_snapshot(&s), "1,2,3,4,5,6,7");
        assert_eq!(parse_history_snapshot("1,2,3,4,5,6,7"), Some(s));
        assert_eq!(
            parse_history_snapshot("-1,0,0,0,0,0,0"),
            Some(HistorySnapshot::default())
        );
        assert_eq!(parse_history_snapshot("1,2,3,4,5,6"), None);
        assert_eq!(parse_history_snapshot("1,2,3,4,5,6,7,8"), None);
        assert_eq!(parse_history_snapshot("1,2,x,4,5,6,7"), None);
    }
}
