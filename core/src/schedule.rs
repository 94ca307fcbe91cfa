//! Schedules: jobs enqueued on a cron pattern (with a time zone) or at a fixed interval, driven by
//! every worker of the queue (no leader, no extra process). Each slot produces exactly one job:
//! whoever sees a slot due fires it through the enqueue script with a guard (the schedule's
//! version and slot), so the job (id `<name>@<slot ms>`) is written and the slot moves on in one
//! atomic step, and every other process's guard fails. After an outage a schedule runs once for
//! the slots it missed (the latest of them), then goes on from the next slot to come.

use std::collections::HashMap;
use std::str::FromStr;
use std::time::Duration;

use chrono::{DateTime, TimeZone, Utc};
use croner::parser::{CronParser, Seconds, Year};
use croner::Cron;
use redis::Value;
use serde::{Deserialize, Serialize};

use crate::envelope::{Backoff, PayloadFormat};
use crate::error::{Error, ErrorKind, Result};
use crate::job::{ms, validate_label, EnqueueOptions};
use crate::jobs::{Queue, Reply};
use crate::keys::shard_of;
use crate::scripts::{DUE_SCHEDULES, LIST_SCHEDULES, REMOVE_SCHEDULE, UPSERT_SCHEDULE};

/// Most due schedules one read returns (a firing pass reads again for the next ones).
const DUE_PAGE: usize = 500;
/// Most reads of due schedules one firing pass makes per shard (then it goes on at once).
const DUE_PASSES: usize = 40;
/// About how many schedules one call reads (`schedules()` reads every page).
const SCHEDULE_PAGE: usize = 200;

/// When a schedule's slots come.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Every {
    /// A standard cron pattern: 5 fields (minute hour day-of-month month day-of-week) or 6 (with
    /// seconds first), in `timezone` (an IANA name such as `Europe/Paris`; `None`: UTC). Local
    /// times a DST change skips run at the next valid time; repeated ones run once.
    Cron {
        pattern: String,
        timezone: Option<String>,
    },
    /// A fixed interval (at least 10 ms): slots at the multiples of the interval since the Unix
    /// epoch, so every process computes the same ones.
    Interval(Duration),
}

impl Every {
    /// A cron pattern in UTC.
    pub fn cron(pattern: impl Into<String>) -> Self {
        Every::Cron {
            pattern: pattern.into(),
            timezone: None,
        }
    }

    /// A cron pattern in a time zone (an IANA name).
    pub fn cron_in(pattern: impl Into<String>, timezone: impl Into<String>) -> Self {
        Every::Cron {
            pattern: pattern.into(),
            timezone: Some(timezone.into()),
        }
    }

    /// A fixed interval (at least 10 ms).
    pub fn interval(every: Duration) -> Self {
        Every::Interval(every)
    }
}

/// A schedule as [`Queue::schedules`] lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScheduleInfo {
    pub name: String,
    pub every: Every,
    #[serde(with = "serde_bytes")]
    pub payload: Vec<u8>,
    /// The options each job gets (task, priority, group, max attempts, backoff, timeout).
    pub options: EnqueueOptions,
    /// The next slot (ms since the epoch, Redis clock); `None` when the pattern has no more. A
    /// paused schedule keeps it (a slot it passes while paused fires once at resume).
    pub next_run_ms: Option<u64>,
    /// Paused ([`Queue::pause_schedule`]): it keeps its definition and next slot, and does not
    /// fire.
    #[serde(default)]
    pub paused: bool,
    /// The id of the last job the schedule enqueued (a slot fired, or
    /// [`Queue::run_schedule`]); `None` before its first.
    #[serde(default)]
    pub last_job_id: Option<String>,
    /// That job's state: `delayed`, `ready`, `active`, `completed`, `dead`, or `gone` once the
    /// queue no longer keeps it (past `keep_completed`, deleted, cancelled).
    #[serde(default)]
    pub last_job_state: Option<String>,
}

/// The stored form of a schedule (MessagePack, in the `sched` hash).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Stored {
    cron: Option<String>,
    tz: Option<String>,
    every_ms: Option<u64>,
    #[serde(with = "serde_bytes")]
    payload: Vec<u8>,
    task: Option<String>,
    format: Option<PayloadFormat>,
    priority: Option<u32>,
    group: Option<String>,
    max_attempts: Option<u32>,
    backoff: Option<Backoff>,
    timeout_ms: Option<u64>,
}

/// A parsed schedule: computes its slots.
enum Slots {
    Cron(Box<Cron>, chrono_tz::Tz),
    Interval(u64),
}

impl Slots {
    fn of(every: &Every) -> Result<Self> {
        match every {
            Every::Cron { pattern, timezone } => {
                let fields = pattern.split_whitespace().count();
                if !pattern.trim_start().starts_with('@') && !(5..=6).contains(&fields) {
                    return Err(Error::invalid(format!(
                        "cron pattern {pattern:?} has {fields} fields; give 5 (minute hour \
                         day-of-month month day-of-week) or 6 (seconds first)"
                    )));
                }
                let cron = CronParser::builder()
                    .seconds(Seconds::Optional)
                    .year(Year::Disallowed)
                    .build()
                    .parse(pattern)
                    .map_err(|e| {
                        Error::invalid(format!("cron pattern {pattern:?}: {e}")).with_source(e)
                    })?;
                let tz = match timezone {
                    None => chrono_tz::UTC,
                    Some(name) => chrono_tz::Tz::from_str(name).map_err(|_| {
                        Error::invalid(format!(
                            "unknown time zone {name:?}; give an IANA name such as \"Europe/Paris\""
                        ))
                    })?,
                };
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, ms);
                let never = utc(now)
                    .map(|t| tz.from_utc_datetime(&t.naive_utc()))
                    .is_some_and(|t| cron.find_next_occurrence(&t, false).is_err());
                if never {
                    return Err(Error::invalid(format!(
                        "cron pattern {pattern:?} never occurs (no date matches it)"
                    )));
                }
                Ok(Slots::Cron(Box::new(cron), tz))
            }
            Every::Interval(d) => {
                if *d < Duration::from_millis(10) {
                    return Err(Error::invalid(
                        "a schedule's interval must be at least 10 ms",
                    ));
                }
                Ok(Slots::Interval(ms(*d)))
            }
        }
    }

    /// The first slot after `now` (ms), if any.
    fn next_after(&self, now: u64) -> Option<u64> {
        match self {
            Slots::Interval(every) => Some((now / every + 1) * every),
            Slots::Cron(cron, tz) => {
                let t = tz.from_utc_datetime(&utc(now)?.naive_utc());
                let next = cron.find_next_occurrence(&t, false).ok()?;
                u64::try_from(next.timestamp_millis()).ok()
            }
        }
    }

    /// The latest slot at or before `now` (ms), if any.
    fn latest_until(&self, now: u64) -> Option<u64> {
        match self {
            Slots::Interval(every) => Some(now / every * every),
            Slots::Cron(cron, tz) => {
                let t = tz.from_utc_datetime(&utc(now)?.naive_utc());
                let prev = cron.find_previous_occurrence(&t, true).ok()?;
                u64::try_from(prev.timestamp_millis()).ok()
            }
        }
    }
}

fn utc(ms: u64) -> Option<DateTime<Utc>> {
    DateTime::from_timestamp_millis(i64::try_from(ms).ok()?)
}

impl Stored {
    fn every(&self) -> Every {
        match (&self.cron, self.every_ms) {
            (Some(p), _) => Every::Cron {
                pattern: p.clone(),
                timezone: self.tz.clone(),
            },
            (None, ms) => Every::Interval(Duration::from_millis(ms.unwrap_or(0))),
        }
    }

    fn options(&self) -> EnqueueOptions {
        EnqueueOptions {
            task: self.task.clone(),
            format: self.format,
            priority: self.priority,
            group: self.group.clone(),
            max_attempts: self.max_attempts,
            backoff: self.backoff,
            timeout: self.timeout_ms.map(Duration::from_millis),
            ..Default::default()
        }
    }

    fn decode(stored: &[u8]) -> Result<(String, Stored)> {
        let bad = || Error::new(ErrorKind::Redis, "a stored schedule could not be read");
        let bar = stored.iter().position(|&b| b == b'|').ok_or_else(bad)?;
        let version = std::str::from_utf8(&stored[..bar]).map_err(|_| bad())?;
        let spec = rmp_serde::from_slice(&stored[bar + 1..]).map_err(|_| bad())?;
        Ok((version.to_string(), spec))
    }
}

/// A schedule as a read returns it: its name, next slot (0: none), stored spec, and (listing
/// only) whether it is paused and its last job.
struct Row {
    name: String,
    next: u64,
    stored: Vec<u8>,
    paused: bool,
    last_id: Option<String>,
    last_state: Option<String>,
}

impl Queue {
    /// The shard a schedule lives on (its jobs' group's, so a group stays on one shard).
    fn schedule_shard(&self, name: &str, group: Option<&str>) -> usize {
        shard_of(group.unwrap_or(name), self.shards.len())
    }

    /// Creates the schedule `name`, or changes it: from its next slot on, each slot enqueues one
    /// job with `payload` and `opts` (a task, priority, group, max attempts, backoff, timeout;
    /// not an id, delay or dedup: the schedule sets those). Declaring the same schedule again
    /// (every process at start, say) changes nothing. Returns the next slot (ms, Redis clock).
    pub async fn upsert_schedule(
        &self,
        name: &str,
        every: Every,
        payload: impl AsRef<[u8]>,
        opts: EnqueueOptions,
    ) -> Result<Option<u64>> {
        validate_label("schedule name", name)?;
        if name.len() > 200 {
            return Err(Error::invalid(
                "schedule name must be at most 200 bytes (its jobs' ids add the slot to it)",
            ));
        }
        if opts.id.is_some()
            || opts.delay.is_some()
            || opts.run_at_ms.is_some()
            || opts.dedup.is_some()
            || opts.debounce.is_some()
        {
            return Err(Error::invalid(
                "a schedule sets its jobs' ids and times: give no id, delay, run_at, dedup or \
                 debounce",
            ));
        }
        let slots = Slots::of(&every)?;
        // A task's jobs carry arguments: JSON unless another format is given (as
        // `enqueue_task`), and the payload must decode in it, or every fired job would fail.
        let mut opts = opts;
        if opts.task.is_some() {
            let format = *opts.format.get_or_insert(PayloadFormat::Json);
            check_task_args(payload.as_ref(), format)?;
        }
        // Every other option is checked as an enqueue would check it.
        self.envelope(payload.as_ref(), &opts, None, None)?;
        let stored = Stored {
            cron: match &every {
                Every::Cron { pattern, .. } => Some(pattern.clone()),
                Every::Interval(_) => None,
            },
            tz: match &every {
                Every::Cron { timezone, .. } => timezone.clone(),
                Every::Interval(_) => None,
            },
            every_ms: match &every {
                Every::Interval(d) => Some(ms(*d)),
                Every::Cron { .. } => None,
            },
            // Sealed like a job's payload on a queue with encryption (opened when it fires).
            payload: self.seal_bytes(payload.as_ref())?.into_owned(),
            task: opts.task.clone(),
            format: opts.format,
            priority: opts.priority,
            group: opts.group.clone(),
            max_attempts: opts.max_attempts,
            backoff: opts.backoff,
            timeout_ms: opts.timeout.map(ms),
        };
        let spec = rmp_serde::to_vec(&stored).expect("a schedule encodes");
        let shard = self.schedule_shard(name, opts.group.as_deref());
        self.op("upsert_schedule", async {
            let mut conn = self.client.conn().await?;
            let (s, us): (u64, u64) = redis::cmd("TIME")
                .query_async(&mut conn)
                .await
                .map_err(|e| self.client.err(e))?;
            let now = s * 1000 + us / 1000;
            let next = slots.next_after(now).unwrap_or(0);
            let mut cmd = self.script_cmd(shard, &UPSERT_SCHEDULE);
            cmd.arg(name).arg(spec).arg(next);
            let (_, next): (i64, String) = self
                .client
                .eval_on(&mut conn, &cmd, &UPSERT_SCHEDULE)
                .await?;
            Ok(next.parse().ok())
        })
        .await
    }

    /// Removes the schedule `name` (no slot of it fires after this). Returns whether it existed.
    pub async fn remove_schedule(&self, name: &str) -> Result<bool> {
        validate_label("schedule name", name)?;
        self.op("remove_schedule", async {
            let mut removed = false;
            // A schedule with a group lives on its group's shard: look on every shard.
            for shard in 0..self.shards.len() {
                let mut cmd = self.script_cmd(shard, &REMOVE_SCHEDULE);
                cmd.arg(name);
                let n: i64 = self.client.eval(&cmd, &REMOVE_SCHEDULE).await?;
                removed |= n > 0;
            }
            Ok(removed)
        })
        .await
    }

    /// The queue's schedules with their next slots, by name.
    pub async fn schedules(&self) -> Result<Vec<ScheduleInfo>> {
        self.op("schedules", async {
            // Read in pages (HSCAN), so no call grows with the number of schedules; a name a page
            // repeats (SCAN may) is listed once.
            let mut out = std::collections::BTreeMap::new();
            for shard in 0..self.shards.len() {
                let mut cursor = "0".to_string();
                loop {
                    let (_, _, next_cursor, listed) =
                        self.read_schedules(shard, "all", &cursor).await?;
                    for row in listed {
                        let (_, spec) = Stored::decode(&row.stored)?;
                        let info = ScheduleInfo {
                            name: row.name.clone(),
                            every: spec.every(),
                            options: spec.options(),
                            next_run_ms: (row.next > 0).then_some(row.next),
                            // Opened when the queue has its key; else as stored (sealed).
                            payload: self
                                .open_bytes(spec.payload.clone())
                                .unwrap_or(spec.payload),
                            paused: row.paused,
                            last_job_id: row.last_id,
                            last_job_state: row.last_state,
                        };
                        out.insert(row.name, info);
                    }
                    if next_cursor == "0" {
                        break;
                    }
                    cursor = next_cursor;
                }
            }
            Ok(out.into_values().collect())
        })
        .await
    }

    /// One shard's schedules (`mode` "due", or "all": a page of them from `cursor`): Redis now,
    /// the earliest next slot, the cursor of the next page ("0": none), and a row each (its
    /// pause and last job read in "all" mode only).
    async fn read_schedules(
        &self,
        shard: usize,
        mode: &str,
        cursor: &str,
    ) -> Result<(u64, Option<u64>, String, Vec<Row>)> {
        let (script, most) = if mode == "all" {
            (&*LIST_SCHEDULES, SCHEDULE_PAGE)
        } else {
            (&*DUE_SCHEDULES, DUE_PAGE)
        };
        let mut cmd = self.script_cmd(shard, script);
        cmd.arg(most);
        if mode == "all" {
            cmd.arg(cursor);
        }
        let reply: Vec<Value> = self.client.eval(&cmd, script).await?;
        let err = |e: redis::RedisError| self.client.err(e);
        let mut it = reply.into_iter();
        let now: u64 =
            redis::from_redis_value(it.next().unwrap_or(Value::Nil)).map_err(|e| err(e.into()))?;
        let first: i64 =
            redis::from_redis_value(it.next().unwrap_or(Value::Nil)).map_err(|e| err(e.into()))?;
        let next_cursor: String =
            redis::from_redis_value(it.next().unwrap_or(Value::Nil)).map_err(|e| err(e.into()))?;
        let text = |v: Option<Value>| -> Result<String> {
            redis::from_redis_value(v.unwrap_or(Value::Nil)).map_err(|e| err(e.into()))
        };
        let mut listed = Vec::new();
        while let (Some(name), Some(next), Some(spec)) = (it.next(), it.next(), it.next()) {
            let name: String = redis::from_redis_value(name).map_err(|e| err(e.into()))?;
            let next: String = redis::from_redis_value(next).map_err(|e| err(e.into()))?;
            let stored: Vec<u8> = redis::from_redis_value(spec).map_err(|e| err(e.into()))?;
            let mut row = Row {
                name,
                next: next.parse::<f64>().map_or(0, |f| f as u64),
                stored,
                paused: false,
                last_id: None,
                last_state: None,
            };
            if mode == "all" {
                row.paused = text(it.next())? == "1";
                row.last_id = Some(text(it.next())?).filter(|s| !s.is_empty());
                row.last_state = Some(text(it.next())?).filter(|s| !s.is_empty());
            }
            listed.push(row);
        }
        Ok((now, u64::try_from(first).ok(), next_cursor, listed))
    }

    /// Fires every due slot of the queue's schedules once. Returns how long until the next slot
    /// is due (`None`: no schedule has one). Workers call it in a loop (see `drive_schedules`).
    pub(crate) async fn fire_due_schedules(&self) -> Result<Option<Duration>> {
        let mut soonest: Option<u64> = None;
        for shard in 0..self.shards.len() {
            let (mut now, mut first, _, mut due) = self.read_schedules(shard, "due", "0").await?;
            // Firing moves slots on; read again while new ones are due (a page at a time). A slot
            // tried already and still due could not be fired: look again in a second.
            let mut tried: HashMap<String, u64> = HashMap::new();
            for pass in 0..=DUE_PASSES {
                let stuck = due.iter().any(|r| tried.get(&r.name) == Some(&r.next));
                due.retain(|r| tried.get(&r.name) != Some(&r.next));
                if due.is_empty() {
                    if stuck {
                        first = Some(now + 1000);
                    }
                    break;
                }
                if pass == DUE_PASSES {
                    // More are due than this pass fires: the next pass goes on at once.
                    first = Some(now);
                    break;
                }
                for Row {
                    name,
                    next: slot,
                    stored,
                    ..
                } in due
                {
                    if let Err(e) = self.fire(shard, &name, slot, &stored, now).await {
                        log::warn!(
                            "tideq: queue {:?}: schedule {name:?} could not fire: {e}",
                            self.name()
                        );
                    }
                    tried.insert(name, slot);
                }
                (now, first, _, due) = self.read_schedules(shard, "due", "0").await?;
            }
            if let Some(f) = first {
                let wait = f.saturating_sub(now);
                soonest = Some(soonest.map_or(wait, |s| s.min(wait)));
            }
        }
        Ok(soonest.map(Duration::from_millis))
    }

    /// Fires one due slot: one job, id `<name>@<slot>`, written only if the schedule is still at
    /// this version and slot (which moves to the next slot after `now`).
    async fn fire(
        &self,
        shard: usize,
        name: &str,
        slot: u64,
        stored: &[u8],
        now: u64,
    ) -> Result<()> {
        let (version, spec) = Stored::decode(stored)?;
        let slots = Slots::of(&spec.every())?;
        // Slots missed during an outage: the latest of them runs, once.
        let fired = slots.latest_until(now).unwrap_or(slot).max(slot);
        let next = slots.next_after(now).unwrap_or(0);
        let opts = EnqueueOptions {
            id: Some(format!("{name}@{fired}")),
            ..spec.options()
        };
        let payload = self.open_bytes(spec.payload)?;
        let prepared = vec![self.envelope(&payload, &opts, None, None)?];
        let guard = format!("{version}|{slot}|{next}|{name}");
        let reply = self
            .send(shard, &[&opts], &prepared, &[0], &guard, "")
            .await?;
        if reply.first().map(|r| &r.1) == Some(&Reply::Stale) {
            log::debug!("tideq: schedule {name:?} slot {slot}: fired elsewhere");
        }
        Ok(())
    }
}

/// Whether a worker's scheduler runs: the fetch loop wakes it when a fetch reports that the queue
/// has schedules (one flag in a reply the worker gets anyway), so a queue without schedules costs
/// nothing.
#[derive(Default)]
pub(crate) struct SchedulerWake {
    running: std::sync::atomic::AtomicBool,
    notify: tokio::sync::Notify,
}

impl SchedulerWake {
    /// A fetch found that the queue has schedules.
    pub fn schedules_seen(&self) {
        if !self.running.swap(true, std::sync::atomic::Ordering::AcqRel) {
            self.notify.notify_one();
        }
    }
}

/// Fires the queue's schedules until `stop` turns true: while the queue has some, sleeps until
/// the next slot is due (at most `idle`, the worker's poll interval, so new and changed schedules
/// are seen), fires it, and so on; without any, waits for `wake`. Errors (Redis away) are logged
/// and retried after `idle`.
pub(crate) async fn drive_schedules(
    queue: Queue,
    idle: Duration,
    wake: std::sync::Arc<SchedulerWake>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    use std::sync::atomic::Ordering;
    loop {
        if !wake.running.load(Ordering::Acquire) {
            tokio::select! {
                _ = wake.notify.notified() => {}
                _ = stop.changed() => return,
            }
        }
        let wait = match queue.fire_due_schedules().await {
            Ok(Some(next)) => next.min(idle),
            Ok(None) => {
                // No schedule has a next slot (none left, or every one paused): sleep until a
                // fetch sees schedules again, at most once per `idle` (a queue whose schedules
                // are all paused still reports schedules with every fetch).
                tokio::select! {
                    _ = tokio::time::sleep(idle) => {}
                    _ = stop.changed() => return,
                }
                wake.running.store(false, Ordering::Release);
                continue;
            }
            Err(e) => {
                log::debug!("tideq: queue {:?}: schedules: {e}", queue.name());
                idle
            }
        };
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = stop.changed() => return,
        }
        if *stop.borrow() {
            return;
        }
    }
}

mod actions;
mod args;
use args::check_task_args;
#[cfg(test)]
mod tests;
