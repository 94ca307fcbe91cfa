//! Schedules on `Queue` (core `schedule`): `upsertSchedule`, `removeSchedule`, `schedules`. A
//! schedule enqueues one job per slot of a cron pattern (in a time zone) or of a fixed interval;
//! every worker of the queue drives them (`WorkerOptions.schedules`), and each slot still makes
//! exactly one job (id `<name>@<slot ms>`). This file reads the arguments and shapes the listing.

use napi::bindgen_prelude::*;
use napi_derive::napi;
use tideq::{Every, PayloadFormat};

use crate::convert::{count1_u32, millis, payload, string, to_millis, Options};
use crate::error::{invalid, spawn, type_error, Failure, Res};
use crate::jobs::Queue;
use crate::options::{backoff_arg, BackoffOptions};
use crate::results::{BackoffInfo, Bytes};
use crate::task::{encode_data, format_arg};

/// Options of `upsertSchedule(name, payload, options)`: when its slots come (`cron` or `everyMs`,
/// exactly one) and the options of the job each slot enqueues.
// Declared for the TypeScript definitions only; `schedule_args` reads the fields one by one.
#[allow(dead_code)]
#[napi(object, object_from_js = false, object_to_js = false)]
pub struct ScheduleOptions {
    /// A cron pattern: 5 fields (minute hour day-of-month month day-of-week) or 6 (seconds
    /// first), e.g. `'0 9 * * 1-5'`. Not with `everyMs`.
    pub cron: Option<String>,
    /// The time zone of `cron`, an IANA name such as `'Europe/Paris'`. Default UTC. Local times a
    /// DST change skips run at the next valid time; repeated ones run once. Only with `cron`.
    pub timezone: Option<String>,
    /// A fixed interval in ms (at least 10): slots at its multiples since the Unix epoch, so
    /// every process computes the same ones. Not with `cron`.
    pub every_ms: Option<f64>,
    /// Each job is this task, for a worker started with `work({ [task]: handler })`; the second
    /// argument of `upsertSchedule` is then the task's data (encoded as `format` says). Without
    /// it, the second argument is a raw payload.
    pub task: Option<String>,
    /// With `task`: how its data is encoded, `'json'` (the default) or `'msgpack'`.
    #[napi(ts_type = "'json' | 'msgpack'")]
    pub format: Option<String>,
    /// Each job's priority, as in `EnqueueOptions`.
    pub priority: Option<u32>,
    /// Each job's group, as in `EnqueueOptions`.
    pub group: Option<String>,
    /// Overrides the queue's `maxAttempts` for each job.
    pub max_attempts: Option<u32>,
    /// Overrides the queue's `backoff` for each job.
    pub backoff: Option<BackoffOptions>,
    /// Overrides the queue's `timeoutMs` for each job.
    pub timeout_ms: Option<f64>,
}

const SCHEDULE_KEYS: &[&str] = &[
    "cron",
    "timezone",
    "everyMs",
    "task",
    "format",
    "priority",
    "group",
    "maxAttempts",
    "backoff",
    "timeoutMs",
];

/// A schedule as `schedules()` lists it: its name, when it fires (`cron` and `timezone`, or
/// `everyMs`), what each job gets, and its next slot.
#[napi(object, object_from_js = false)]
pub struct ScheduleInfo {
    /// The schedule's name (its jobs' ids are `<name>@<slot ms>`).
    pub name: String,
    /// The cron pattern, for a cron schedule.
    pub cron: Option<String>,
    /// The cron pattern's time zone, when one was given (UTC otherwise).
    pub timezone: Option<String>,
    /// The interval in ms, for an interval schedule.
    pub every_ms: Option<f64>,
    /// Each job's payload: raw bytes, or the task's encoded data.
    #[napi(ts_type = "Buffer")]
    pub payload: Bytes,
    /// The next slot: ms since the epoch, Redis clock; `null` when the cron pattern has no more.
    #[napi(ts_type = "number | null")]
    pub next_run_ms: Either<f64, Null>,
    /// Whether it is paused (`pauseSchedule`): it keeps its next slot and does not fire.
    pub paused: bool,
    /// The id of the last job it enqueued (a slot fired, or `runSchedule`); `null` before its
    /// first.
    #[napi(ts_type = "string | null")]
    pub last_job_id: Either<String, Null>,
    /// That job's state: `delayed`, `ready`, `active`, `completed`, `dead`, or `gone` once the
    /// queue no longer keeps it; `null` before its first job.
    #[napi(ts_type = "'delayed' | 'ready' | 'active' | 'completed' | 'dead' | 'gone' | null")]
    pub last_job_state: Either<String, Null>,
    /// Each job's task name, for a task schedule.
    pub task: Option<String>,
    /// How a task schedule's data is encoded.
    #[napi(ts_type = "'json' | 'msgpack'")]
    pub format: Option<String>,
    /// Each job's priority, when it has one.
    pub priority: Option<u32>,
    /// Each job's group, when it has one.
    pub group: Option<String>,
    /// Each job's `maxAttempts`, when it overrides the queue's.
    pub max_attempts: Option<u32>,
    /// Each job's `backoff`, when it overrides the queue's.
    pub backoff: Option<BackoffInfo>,
    /// Each job's `timeoutMs`, when it overrides the queue's.
    pub timeout_ms: Option<f64>,
}

impl From<tideq::ScheduleInfo> for ScheduleInfo {
    fn from(s: tideq::ScheduleInfo) -> Self {
        let (cron, timezone, every_ms) = match s.every {
            Every::Cron { pattern, timezone } => (Some(pattern), timezone, None),
            Every::Interval(d) => (None, None, to_millis(Some(d))),
        };
        let o = s.options;
        ScheduleInfo {
            name: s.name,
            cron,
            timezone,
            every_ms,
            payload: Bytes(s.payload),
            next_run_ms: match s.next_run_ms {
                Some(ms) => Either::A(ms as f64),
                None => Either::B(Null),
            },
            paused: s.paused,
            last_job_id: s.last_job_id.map_or(Either::B(Null), Either::A),
            last_job_state: s.last_job_state.map_or(Either::B(Null), Either::A),
            task: o.task,
            format: o.format.map(|f| f.as_str().to_string()),
            priority: o.priority,
            group: o.group,
            max_attempts: o.max_attempts,
            backoff: o.backoff.as_ref().map(BackoffInfo::from),
            timeout_ms: to_millis(o.timeout),
        }
    }
}

/// An `INVALID_ARGUMENT` error about `upsertSchedule`'s options.
fn bad(message: &str) -> Failure {
    invalid(format!("upsertSchedule options: {message}"))
}

/// What `upsertSchedule` hands the core: the name, when, the payload and each job's options.
type ScheduleArgs = (String, Every, Vec<u8>, tideq::EnqueueOptions);

/// Reads `upsertSchedule`'s arguments. Which of `cron`/`everyMs` is given picks the kind of
/// schedule; the pattern, zone, interval and job options are checked by the core.
fn schedule_args(
    env: &Env,
    name: &Unknown,
    data: Option<&Unknown>,
    options: Option<&Unknown>,
) -> Res<ScheduleArgs> {
    let name = string("schedule name", name)?;
    let opts = Options::new("upsertSchedule options", options, SCHEDULE_KEYS)?;
    let timezone = opts.get("timezone", string)?;
    let every = match (
        opts.get("cron", string)?,
        opts.get("everyMs", millis)?,
        timezone,
    ) {
        (Some(pattern), None, timezone) => Every::Cron { pattern, timezone },
        (None, Some(every), None) => Every::Interval(every),
        (None, Some(_), Some(_)) => return Err(bad("timezone goes with cron, not everyMs")),
        (Some(_), Some(_), _) => return Err(bad("give cron or everyMs, not both")),
        (None, None, _) => return Err(bad("need cron (a pattern) or everyMs (an interval)")),
    };
    let task = opts.get("task", string)?;
    let (bytes, format) = match (&task, opts.get("format", format_arg)?) {
        (Some(_), format) => {
            let format = format.unwrap_or(PayloadFormat::Json);
            (encode_data(env, "data", data, format)?, Some(format))
        }
        (None, Some(_)) => return Err(bad("format applies to tasks (with task), not raw bytes")),
        (None, None) => match data {
            Some(data) => (payload("payload", data)?, None),
            None => {
                return Err(type_error(
                    "payload is required: a Buffer or Uint8Array, or task data with task",
                ))
            }
        },
    };
    let job = tideq::EnqueueOptions {
        task,
        format,
        priority: opts.get("priority", count1_u32)?,
        group: opts.get("group", string)?,
        max_attempts: opts.get("maxAttempts", count1_u32)?,
        backoff: opts.get("backoff", backoff_arg)?,
        timeout: opts.get("timeoutMs", millis)?,
        ..Default::default()
    };
    Ok((name, every, bytes, job))
}

#[napi]
impl Queue {
    /// Creates the task schedule `name`, or changes it: from its next slot on, each slot of
    /// `options.cron` (in `options.timezone`) or of `options.everyMs` enqueues one job of task
    /// `options.task` with `data`, id `<name>@<slot ms>`. Workers of the queue fire the slots
    /// (`WorkerOptions.schedules`); any number of them may, each slot still makes one job, and
    /// slots missed while none ran make one job. Declaring the same schedule again (every process
    /// at start, say) changes nothing. Resolves with the next slot (ms since the epoch, Redis
    /// clock; `null` when the pattern has no more). Rejects with `INVALID_ARGUMENT`, writing
    /// nothing, for a bad pattern, time zone or interval, or both or neither of `cron` and
    /// `everyMs`.
    #[napi(
        ts_args_type = "name: string, data: unknown, options: ScheduleOptions & { task: string }): Promise<number | null>\n/**\n * Creates the schedule `name`, or changes it: as above, each job with the raw `payload` (a\n * `Buffer` or `Uint8Array`), for a handler that reads `job.payload`.\n */\nupsertSchedule(name: string, payload: Buffer | Uint8Array, options: ScheduleOptions",
        ts_return_type = "Promise<number | null>"
    )]
    pub fn upsert_schedule<'env>(
        &self,
        env: &'env Env,
        name: Unknown,
        data: Option<Unknown>,
        options: Option<Unknown>,
    ) -> Result<PromiseRaw<'env, Option<f64>>> {
        let q = self.inner.clone();
        let args = schedule_args(env, &name, data.as_ref(), options.as_ref());
        spawn(
            env,
            args.map(|(name, every, bytes, opts)| async move {
                let next = q.upsert_schedule(&name, every, bytes, opts).await?;
                Ok(next.map(|ms| ms as f64))
            }),
        )
    }

    /// Removes the schedule `name`: no slot of it fires after this (jobs it already enqueued
    /// stay). Resolves with whether it existed.
    #[napi(ts_args_type = "name: string", ts_return_type = "Promise<boolean>")]
    pub fn remove_schedule<'env>(
        &self,
        env: &'env Env,
        name: Unknown,
    ) -> Result<PromiseRaw<'env, bool>> {
        let q = self.inner.clone();
        spawn(
            env,
            string("schedule name", &name)
                .map(|name| async move { Ok(q.remove_schedule(&name).await?) }),
        )
    }

    /// Enqueues one job of the schedule `name` now, as its next slot would (same payload and
    /// options), without moving its slots: the next one still fires when due. The job's id is
    /// `<name>@run-<ms>` (the current second of the Redis clock), so a second call within that
    /// second enqueues nothing more and resolves with the same id. Resolves with the job's id; an
    /// unknown name rejects with `INVALID_ARGUMENT`, nothing written.
    #[napi(ts_args_type = "name: string", ts_return_type = "Promise<string>")]
    pub fn run_schedule<'env>(
        &self,
        env: &'env Env,
        name: Unknown,
    ) -> Result<PromiseRaw<'env, String>> {
        let q = self.inner.clone();
        spawn(
            env,
            string("schedule name", &name)
                .map(|name| async move { Ok(q.run_schedule(&name).await?) }),
        )
    }

    /// Pauses the schedule `name`: it keeps its definition and next slot and does not fire until
    /// `resumeSchedule`. Resolves with false if it was paused already; an unknown name rejects
    /// with `INVALID_ARGUMENT`, nothing written.
    #[napi(ts_args_type = "name: string", ts_return_type = "Promise<boolean>")]
    pub fn pause_schedule<'env>(
        &self,
        env: &'env Env,
        name: Unknown,
    ) -> Result<PromiseRaw<'env, bool>> {
        let q = self.inner.clone();
        spawn(
            env,
            string("schedule name", &name)
                .map(|name| async move { Ok(q.pause_schedule(&name).await?) }),
        )
    }

    /// Resumes the paused schedule `name`. Slots passed while paused are not all run: as after an
    /// outage, the latest of them fires once, then the schedule goes on. Resolves with false if it
    /// was not paused; an unknown name rejects with `INVALID_ARGUMENT`, nothing written.
    #[napi(ts_args_type = "name: string", ts_return_type = "Promise<boolean>")]
    pub fn resume_schedule<'env>(
        &self,
        env: &'env Env,
        name: Unknown,
    ) -> Result<PromiseRaw<'env, bool>> {
        let q = self.inner.clone();
        spawn(
            env,
            string("schedule name", &name)
                .map(|name| async move { Ok(q.resume_schedule(&name).await?) }),
        )
    }

    /// The queue's schedules, by name, with their next slots.
    #[napi(ts_return_type = "Promise<ScheduleInfo[]>")]
    pub fn schedules<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, Vec<ScheduleInfo>>> {
        let q = self.inner.clone();
        spawn(
            env,
            Ok(async move {
                Ok(q.schedules()
                    .await?
                    .into_iter()
                    .map(ScheduleInfo::from)
                    .collect())
            }),
        )
    }
}
