//! The test modes (core `tideq::testing`), for the package's `tideq/testing` (lib/testing.js):
//! `TestMode.fake()` and `TestMode.inline(handlers, raiseErrors)` start the core's fake or inline
//! mode for the whole process; the mode object reads the record (`jobs`, `enqueued`,
//! `assertEnqueued`), runs it (`drain`), forgets it (`clear`) and ends the mode (`stop`). What a
//! mode does to an enqueue, how a drained job is retried and what a dead one records are the
//! core's; this file converts filters, handlers and recorded jobs. lib/index.js turns
//! `assertEnqueued`'s miss into a `node:assert` `AssertionError` and adds `[Symbol.dispose]`.

use napi::bindgen_prelude::*;
use napi::ValueType;
use napi_derive::napi;
use tideq::envelope::Value;
use tideq::testing::{self, JobFilter as CoreFilter, RecordedJob as CoreJob};

use crate::convert::{
    boolean, count1_u32, from_msgpack, millis, string, to_millis, to_msgpack, Options,
};
use crate::error::{spawn, throw, Res};
use crate::results::{Bytes, Stored};
use crate::worker::test_handlers;

/// Which recorded jobs `jobs`, `enqueued` and `assertEnqueued` look at: every field given must
/// match. Every field is optional.
// Declared for the TypeScript definitions only; `filter` reads the fields one by one.
#[allow(dead_code)]
#[napi(object, object_from_js = false, object_to_js = false)]
pub struct JobFilter {
    /// The queue's name.
    pub queue: Option<String>,
    /// The task's name (`enqueueTask(name, ...)`).
    pub task: Option<String>,
    /// The job's id.
    pub id: Option<String>,
    /// The task's arguments, compared by value (an object's keys in any order).
    #[napi(ts_type = "unknown")]
    pub args: Option<()>,
    /// The job's group.
    pub group: Option<String>,
    /// The job's priority.
    pub priority: Option<u32>,
    /// The delay asked for at enqueue, in ms.
    pub delay_ms: Option<f64>,
}

const FILTER_KEYS: &[&str] = &[
    "queue", "task", "id", "args", "group", "priority", "delayMs",
];
const INLINE_KEYS: &[&str] = &["raiseErrors", "onError"];
const DRAIN_KEYS: &[&str] = &["onError"];

/// Options of `inline(handlers, options)`.
// Declared for the TypeScript definitions only; `TestMode::inline` reads the fields.
#[allow(dead_code)]
#[napi(object, object_from_js = false, object_to_js = false)]
pub struct InlineOptions {
    /// An enqueue whose job ends dead (its attempts used up, or `DontRetry`) rejects with
    /// `JOB_FAILED` and the job's error. Default true; false: it resolves, and the job is
    /// recorded dead.
    pub raise_errors: Option<bool>,
    /// Called with each failed attempt's error and job, as a worker's `onError`. By default
    /// failures are not printed: they are recorded with the job.
    #[napi(ts_type = "(err: unknown, job: Job) => void")]
    pub on_error: Option<()>,
}

/// Options of `drain(handlers, options)`.
// Declared for the TypeScript definitions only; `TestMode::drain` reads the fields.
#[allow(dead_code)]
#[napi(object, object_from_js = false, object_to_js = false)]
pub struct DrainOptions {
    /// As `InlineOptions.onError`.
    #[napi(ts_type = "(err: unknown, job: Job) => void")]
    pub on_error: Option<()>,
}

/// A filter from JS, and its arguments (compared here, by value, not by the core: JS objects
/// and JSON keep their keys in the order written, which the match should not depend on).
fn filter(v: Option<&Unknown>) -> Res<(CoreFilter, Option<Value>)> {
    let opts = Options::new("filter", v, FILTER_KEYS)?;
    let args = match opts.raw("args")? {
        Some(a) => Some(to_msgpack("filter.args", &a)?),
        None => None,
    };
    let f = CoreFilter {
        queue: opts.get("queue", string)?,
        task: opts.get("task", string)?,
        id: opts.get("id", string)?,
        args: None,
        group: opts.get("group", string)?,
        priority: opts.get("priority", count1_u32)?,
        delay: opts.get("delayMs", millis)?,
    };
    Ok((f, args))
}

/// `v` with every map's entries sorted by key, so two values equal but for key order compare
/// equal.
fn sorted(v: &Value) -> Value {
    match v {
        Value::Map(fields) => {
            let mut fields: Vec<(Value, Value)> =
                fields.iter().map(|(k, v)| (k.clone(), sorted(v))).collect();
            fields.sort_by_key(|a| a.0.to_string());
            Value::Map(fields)
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

/// The recorded jobs matching `f` and, when given, `args`.
fn matching(jobs: Vec<CoreJob>, args: &Option<Value>) -> Vec<RecordedJob> {
    let want = args.as_ref().map(sorted);
    jobs.into_iter()
        .filter(|j| match &want {
            None => true,
            Some(want) => j.args.as_ref().map(sorted).as_ref() == Some(want),
        })
        .map(RecordedJob::from)
        .collect()
}

/// A recorded task's arguments on their way to JS: JSON parsed as `job.data` parses it (so an
/// object keeps its keys' order), MessagePack decoded; `undefined` for a raw payload.
pub struct Args {
    json: Option<Vec<u8>>,
    value: Option<Value>,
}

impl ToNapiValue for Args {
    unsafe fn to_napi_value(
        raw_env: napi::sys::napi_env,
        val: Self,
    ) -> Result<napi::sys::napi_value> {
        let env = Env::from_raw(raw_env);
        if let Some(json) = val.json {
            if json.is_empty() {
                return unsafe { Null::to_napi_value(raw_env, Null) };
            }
            return unsafe { Stored::to_napi_value(raw_env, Stored(Some(json))) };
        }
        match val.value {
            Some(v) => match from_msgpack(&env, v) {
                Ok(value) => Ok(value.raw()),
                Err(_) => unsafe { Undefined::to_napi_value(raw_env, ()) },
            },
            None => unsafe { Undefined::to_napi_value(raw_env, ()) },
        }
    }
}

/// A job as a test mode recorded it (`fake.jobs()`, `fake.enqueued()`, `fake.assertEnqueued()`).
#[napi(object, object_from_js = false, use_nullable = true)]
pub struct RecordedJob {
    /// The job's id.
    pub id: String,
    /// Its queue's name.
    pub queue: String,
    /// The task's name; `null` for a raw payload.
    pub task: Option<String>,
    /// How the task's arguments are encoded; `null` for a raw payload.
    #[napi(ts_type = "'json' | 'msgpack' | null")]
    pub format: Option<String>,
    /// The payload as enqueued (a task's encoded arguments).
    #[napi(ts_type = "Buffer")]
    pub payload: Bytes,
    /// The task's arguments, decoded (as `job.data`); `undefined` for a raw payload.
    #[napi(ts_type = "unknown")]
    pub args: Args,
    /// The delay asked for at enqueue, in ms; `null` for none.
    pub delay_ms: Option<f64>,
    /// The `runAt` asked for at enqueue (ms since the epoch); `null` for none.
    pub run_at: Option<f64>,
    /// The priority asked for; `null` for none.
    pub priority: Option<u32>,
    /// The job's group; `null` for none.
    pub group: Option<String>,
    /// Attempts the job may make.
    pub max_attempts: u32,
    /// `'enqueued'` (not run yet, or left by `drain`: no handler for its queue), `'completed'`
    /// or `'dead'`.
    #[napi(ts_type = "'enqueued' | 'completed' | 'dead'")]
    pub state: String,
    /// Attempts made (snoozes not counted).
    pub attempts: u32,
    /// What the handler returned, read as `JobInfo.result` is; `null` when none.
    #[napi(ts_type = "unknown")]
    pub result: Stored,
    /// The last progress the handler reported, read as `result` is; `null` when none.
    #[napi(ts_type = "unknown")]
    pub progress: Stored,
    /// The last failed attempt's error (`name: message`), as a worker records it; `null` if none.
    pub error: Option<String>,
    /// Every failed attempt's error, in order.
    pub errors: Vec<String>,
    /// The lines its handlers logged (`job.log`), oldest first.
    pub logs: Vec<String>,
}

impl From<CoreJob> for RecordedJob {
    fn from(j: CoreJob) -> Self {
        let json = matches!(j.format, Some(tideq::PayloadFormat::Json)).then(|| j.payload.clone());
        RecordedJob {
            id: j.id,
            queue: j.queue,
            task: j.task,
            format: j.format.map(|f| f.as_str().to_string()),
            args: Args {
                json,
                value: j.args,
            },
            payload: Bytes(j.payload),
            delay_ms: to_millis(j.delay),
            run_at: j.run_at_ms.map(|t| t as f64),
            priority: j.priority,
            group: j.group,
            max_attempts: j.max_attempts,
            state: j.state.as_str().to_string(),
            attempts: j.attempts,
            result: Stored(j.result),
            progress: Stored(j.progress),
            error: j.error,
            errors: j.errors,
            logs: j.logs.into_iter().map(|l| l.line).collect(),
        }
    }
}

/// What `drain` ran.
#[napi(object, object_from_js = false)]
pub struct DrainReport {
    /// Attempts made (snoozes not counted).
    pub ran: u32,
    /// Jobs that completed.
    pub completed: u32,
    /// Jobs that went to the dead letters.
    pub dead: u32,
    /// Jobs left recorded, not run: no handler for their queue, or they kept snoozing.
    pub left: u32,
}

impl From<testing::DrainReport> for DrainReport {
    fn from(r: testing::DrainReport) -> Self {
        let n = |v: usize| u32::try_from(v).unwrap_or(u32::MAX);
        DrainReport {
            ran: n(r.ran),
            completed: n(r.completed),
            dead: n(r.dead),
            left: n(r.left),
        }
    }
}

/// A test mode, on for the whole process (every `Queue`) until `stop()`: made by `tideq/testing`'s
/// `fake()` and `inline(handlers)`. While it is on, an enqueue is checked and encoded as against
/// Redis (bad input still throws, and nothing is recorded), then recorded instead of sent; `get`
/// and `wait` answer from the record, and any other operation of a job queue (starting a worker
/// included) rejects with `NOT_SUPPORTED`. No Redis connection is made. Starting a mode while
/// one is on throws `INVALID_ARGUMENT`.
#[napi]
pub struct TestMode {
    inner: testing::TestMode,
}

#[napi]
impl TestMode {
    /// Fake mode: enqueues are recorded, not run (`tideq/testing`'s `fake()`).
    #[napi(factory)]
    pub fn fake(env: Env) -> Result<TestMode> {
        throw(&env, testing::fake().map_err(Into::into)).map(|inner| TestMode { inner })
    }

    /// Inline mode: each enqueue runs its job at once with `handlers` (`tideq/testing`'s
    /// `inline(handlers, options)`).
    #[napi(
        factory,
        ts_args_type = "handlers: TestHandlers, options?: InlineOptions"
    )]
    pub fn inline(env: Env, handlers: Unknown, options: Option<Unknown>) -> Result<TestMode> {
        let res = Options::new("inline options", options.as_ref(), INLINE_KEYS).and_then(|opts| {
            let raise_errors = opts.get("raiseErrors", boolean)?.unwrap_or(true);
            // The mode holds these handlers until it is dropped: they must not keep the process
            // alive (a test file that forgets `stop()` still ends).
            let h = test_handlers(&env, &handlers, opts.raw("onError")?.as_ref(), false)?;
            Ok(testing::inline(h, raise_errors)?)
        });
        throw(&env, res).map(|inner| TestMode { inner })
    }

    /// `'fake'` or `'inline'`.
    #[napi(getter, ts_return_type = "'fake' | 'inline'")]
    pub fn mode(&self) -> String {
        self.inner.mode().as_str().to_string()
    }

    /// Whether this mode is on (false once stopped).
    #[napi(getter)]
    pub fn is_on(&self) -> bool {
        self.inner.is_on()
    }

    /// Ends the mode: queues use Redis again. Idempotent; the record stays readable.
    #[napi]
    pub fn stop(&self) {
        self.inner.stop();
    }

    /// Forgets every recorded job.
    #[napi]
    pub fn clear(&self) {
        self.inner.clear();
    }

    /// Every recorded job matching `filter` (all when absent), run or not, in enqueue order.
    #[napi(ts_args_type = "filter?: JobFilter")]
    pub fn jobs(&self, env: Env, filter: Option<Unknown>) -> Result<Vec<RecordedJob>> {
        let res =
            self::filter(filter.as_ref()).map(|(f, args)| matching(self.inner.jobs(&f), &args));
        throw(&env, res)
    }

    /// The recorded jobs matching `filter` that have not run yet, in enqueue order.
    #[napi(ts_args_type = "filter?: JobFilter")]
    pub fn enqueued(&self, env: Env, filter: Option<Unknown>) -> Result<Vec<RecordedJob>> {
        let res =
            self::filter(filter.as_ref()).map(|(f, args)| matching(self.inner.enqueued(&f), &args));
        throw(&env, res)
    }

    /// The first recorded job (run or not) matching `filter`. When none does, throws a
    /// `node:assert` `AssertionError` saying what was looked for and listing what was recorded.
    #[napi(ts_args_type = "filter?: JobFilter", ts_return_type = "RecordedJob")]
    pub fn assert_enqueued(
        &self,
        env: Env,
        filter: Option<Unknown>,
    ) -> Result<Either<RecordedJob, String>> {
        let res = self::filter(filter.as_ref()).map(|(f, args)| {
            if let Some(found) = matching(self.inner.jobs(&f), &args).into_iter().next() {
                return Either::A(found);
            }
            // None: the core's message, with the arguments in the filter it shows.
            let shown = CoreFilter { args, ..f };
            match self.inner.assert_enqueued(&shown) {
                Ok(found) => Either::A(found.into()),
                Err(message) => Either::B(message),
            }
        });
        throw(&env, res)
    }

    /// Runs every recorded job not run yet, in enqueue order, and those their handlers enqueue,
    /// until none is left; a failed attempt is retried at once, up to the job's attempts, then
    /// the job is dead with the error a worker would record. `handlers`: by queue name, an object
    /// of task handlers (`{ 'send-email': (args, job) => ... }`, a `defineTasks` object) or one
    /// job handler `(job) => ...`; in inline mode, those given win over the mode's own.
    #[napi(
        ts_args_type = "handlers?: TestHandlers, options?: DrainOptions",
        ts_return_type = "Promise<DrainReport>"
    )]
    pub fn drain<'env>(
        &self,
        env: &'env Env,
        handlers: Option<Unknown>,
        options: Option<Unknown>,
    ) -> Result<PromiseRaw<'env, DrainReport>> {
        let mode = self.inner.clone();
        let handlers =
            Options::new("drain options", options.as_ref(), DRAIN_KEYS).and_then(|opts| {
                match handlers.filter(|h| h.get_type().ok() != Some(ValueType::Undefined)) {
                    // Held for the drain only (its Promise keeps Node running meanwhile).
                    Some(h) => test_handlers(env, &h, opts.raw("onError")?.as_ref(), true),
                    None => Ok(testing::Handlers::new()),
                }
            });
        spawn(
            env,
            handlers.map(|h| async move { Ok(mode.drain(&h).await?.into()) }),
        )
    }
}
