//! Options as Python gives them, read into the core's: per-job options (`enqueue`'s keyword
//! arguments, an `enqueue_many` options dict, a schedule's and a task's job options), `dedup=` and
//! `debounce=`, `enqueue_many`'s items, and worker options (`work`, `work_batches`,
//! `work_tasks`). Conversion only: whether a value is acceptable is the core's check.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyTuple};
use tideq::{Debounce, Dedup, EnqueueOptions};

use crate::convert::{self, Int, Secs, Text};
use crate::job::Backoff;
use crate::otel;

/// Per-job options as keyword arguments (or an `enqueue_many` dict) before conversion.
#[derive(Default)]
pub(crate) struct JobArgs<'py> {
    pub(crate) id: Option<Text>,
    pub(crate) delay: Option<Secs>,
    pub(crate) run_at: Option<Bound<'py, PyAny>>,
    pub(crate) max_attempts: Option<Int>,
    pub(crate) backoff: Option<Bound<'py, Backoff>>,
    pub(crate) timeout: Option<Secs>,
    pub(crate) priority: Option<Int>,
    pub(crate) group: Option<Text>,
    pub(crate) dedup: Option<Bound<'py, PyAny>>,
    pub(crate) debounce: Option<Bound<'py, PyAny>>,
    pub(crate) trace: Option<Bound<'py, PyAny>>,
    pub(crate) expires_after: Option<Secs>,
    pub(crate) expires_at: Option<Bound<'py, PyAny>>,
    pub(crate) cost: Option<Int>,
}

impl<'py> JobArgs<'py> {
    /// From an `enqueue_many` options dict: the keys are `enqueue`'s keyword arguments.
    fn from_dict(dict: &Bound<'py, PyDict>) -> PyResult<Self> {
        let mut args = JobArgs::default();
        for (key, value) in dict.iter() {
            let Text(key) = key.extract()?;
            if value.is_none() {
                continue;
            }
            let shown = convert::str_repr(dict.py(), &key);
            // A value of the wrong type is a TypeError naming the option; other errors (an id
            // that is not valid UTF-8, an int out of range) keep their class.
            let py = dict.py();
            let named = |e: PyErr| {
                if e.is_instance_of::<PyTypeError>(py) {
                    PyTypeError::new_err(format!("option {shown}: {e}"))
                } else {
                    e
                }
            };
            match key.as_str() {
                "id" => args.id = Some(value.extract().map_err(named)?),
                "delay" => args.delay = Some(value.extract().map_err(named)?),
                "run_at" => args.run_at = Some(value),
                "max_attempts" => args.max_attempts = Some(value.extract().map_err(named)?),
                "backoff" => {
                    args.backoff = Some(value.cast_into::<Backoff>().map_err(|e| named(e.into()))?)
                }
                "timeout" => args.timeout = Some(value.extract().map_err(named)?),
                "priority" => args.priority = Some(value.extract().map_err(named)?),
                "group" => args.group = Some(value.extract().map_err(named)?),
                "dedup" => args.dedup = Some(value),
                "debounce" => args.debounce = Some(value),
                "trace" => args.trace = Some(value),
                "expires_after" => args.expires_after = Some(value.extract().map_err(named)?),
                "expires_at" => args.expires_at = Some(value),
                "cost" => args.cost = Some(value.extract().map_err(named)?),
                _ => {
                    return Err(PyTypeError::new_err(format!(
                        "unknown enqueue option {shown} (expected id, delay, run_at, \
                         max_attempts, backoff, timeout, priority, group, dedup, debounce, \
                         trace, expires_after, expires_at or cost)"
                    )))
                }
            }
        }
        Ok(args)
    }

    pub(crate) fn convert(self) -> PyResult<EnqueueOptions> {
        Ok(EnqueueOptions {
            id: self.id.map(|t| t.0),
            delay: convert::opt_duration("delay", self.delay)?,
            run_at_ms: self
                .run_at
                .map(|t| convert::epoch_ms("run_at", &t))
                .transpose()?,
            max_attempts: self
                .max_attempts
                .map(|n| convert::count_u32("max_attempts", n))
                .transpose()?,
            backoff: self.backoff.map(|b| b.get().0),
            timeout: convert::opt_duration("timeout", self.timeout)?,
            priority: self
                .priority
                .map(|n| convert::count_u32("priority", n))
                .transpose()?,
            group: self.group.map(|t| t.0),
            dedup: self.dedup.map(|d| dedup(&d)).transpose()?,
            debounce: self.debounce.map(|d| debounce(&d)).transpose()?,
            trace: self.trace.map(|t| otel::context(&t)).transpose()?,
            expires_after: convert::opt_duration("expires_after", self.expires_after)?,
            expires_at_ms: self
                .expires_at
                .map(|t| convert::epoch_ms("expires_at", &t))
                .transpose()?,
            cost: self
                .cost
                .map(|n| convert::count_u32("cost", n))
                .transpose()?,
            ..EnqueueOptions::default()
        })
    }

    /// [`convert`](Self::convert), the trace context defaulting to the caller's current span's
    /// (OpenTelemetry; see [`otel::current`]).
    pub(crate) fn convert_traced(self, py: Python<'_>) -> PyResult<EnqueueOptions> {
        let mut opts = self.convert()?;
        if opts.trace.is_none() {
            opts.trace = otel::current(py);
        }
        Ok(opts)
    }
}

/// `dedup=`: a key (held until its job finishes) or a `(key, ttl_seconds)` tuple (a `None` TTL:
/// until its job finishes). Whether the key and TTL are acceptable is the core's check.
fn dedup(obj: &Bound<'_, PyAny>) -> PyResult<Dedup> {
    let wrong = || {
        PyTypeError::new_err(format!(
            "dedup must be a key (str) or a (key, ttl_seconds) tuple, not {}",
            shown(obj)
        ))
    };
    if obj.is_instance_of::<PyString>() {
        return Ok(Dedup::new(obj.extract::<Text>()?.0));
    }
    let (key, ttl) = pair(obj).ok_or_else(wrong)?;
    let ttl: Option<Secs> = ttl.extract().map_err(|_| wrong())?;
    Ok(Dedup {
        key: key.extract::<Text>()?.0,
        ttl: convert::opt_duration("dedup ttl", ttl)?,
    })
}

/// `debounce=`: a `(key, delay_seconds)` tuple. Whether the key and delay are acceptable is the
/// core's check.
fn debounce(obj: &Bound<'_, PyAny>) -> PyResult<Debounce> {
    let wrong = || {
        PyTypeError::new_err(format!(
            "debounce must be a (key, delay_seconds) tuple, not {}",
            shown(obj)
        ))
    };
    let (key, delay) = pair(obj).ok_or_else(wrong)?;
    let delay: Secs = delay.extract().map_err(|_| wrong())?;
    Ok(Debounce::new(
        key.extract::<Text>()?.0,
        convert::duration("debounce delay", delay)?,
    ))
}

/// A wrong `dedup`/`debounce` value as an error shows it: a tuple by its `repr()`, anything else
/// by its type.
fn shown(obj: &Bound<'_, PyAny>) -> String {
    match obj.cast::<PyTuple>() {
        Ok(_) => obj
            .repr()
            .map(|r| r.to_string())
            .unwrap_or_else(|_| "a tuple".into()),
        Err(_) => convert::type_name(obj),
    }
}

/// The two items of a 2-tuple whose first item is a `str`.
fn pair<'py>(obj: &Bound<'py, PyAny>) -> Option<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    let t = obj.cast::<PyTuple>().ok().filter(|t| t.len() == 2)?;
    let (first, second) = (t.get_item(0).ok()?, t.get_item(1).ok()?);
    first
        .is_instance_of::<PyString>()
        .then_some((first, second))
}

/// `enqueue_many` items: each bytes-like, or a `(payload, options dict)` tuple. Everything is
/// converted before anything is sent. Items without a `trace` carry the caller's current span's
/// (looked up once per call).
pub(crate) fn jobs(items: &Bound<'_, PyAny>) -> PyResult<Vec<(Vec<u8>, EnqueueOptions)>> {
    let mut out = untraced_jobs(items)?;
    if out.iter().any(|(_, o)| o.trace.is_none()) {
        if let Some(current) = otel::current(items.py()) {
            for (_, o) in out.iter_mut().filter(|(_, o)| o.trace.is_none()) {
                o.trace = Some(current.clone());
            }
        }
    }
    Ok(out)
}

fn untraced_jobs(items: &Bound<'_, PyAny>) -> PyResult<Vec<(Vec<u8>, EnqueueOptions)>> {
    let mut out = Vec::with_capacity(items.len().unwrap_or(0));
    for item in items.try_iter()? {
        let item = item?;
        let Ok(tuple) = item.cast::<PyTuple>() else {
            out.push((
                convert::bytes_like("payload", &item)?,
                EnqueueOptions::default(),
            ));
            continue;
        };
        let options = tuple.get_item(1).ok().filter(|_| tuple.len() == 2);
        let options = options
            .as_ref()
            .and_then(|o| o.cast::<PyDict>().ok())
            .ok_or_else(|| {
                PyTypeError::new_err(
                    "enqueue_many items are payloads or (payload, options dict) tuples",
                )
            })?;
        let payload = convert::bytes_like("payload", &tuple.get_item(0)?)?;
        out.push((payload, JobArgs::from_dict(options)?.convert()?));
    }
    Ok(out)
}

/// A job limit (`max_jobs`): a count, 0 left to the core to refuse.
fn limit(what: &str, n: Int) -> PyResult<Option<u64>> {
    convert::count(what, n).map(|n| Some(n as u64))
}

/// Worker options from keyword arguments; those not given keep the core's defaults.
#[allow(clippy::too_many_arguments)]
pub(crate) fn worker_options(
    concurrency: Option<Int>,
    batch_size: Option<Int>,
    lease: Option<Secs>,
    poll_interval: Option<Secs>,
    grace: Option<Secs>,
    stop_when_drained: Option<bool>,
    schedules: Option<bool>,
    max_jobs: Option<Int>,
) -> PyResult<tideq::WorkerOptions> {
    let mut opts = tideq::WorkerOptions::default();
    convert::set_given!(
        opts,
        concurrency: convert::count,
        batch_size: convert::count,
        lease: convert::duration,
        poll_interval: convert::duration,
        grace: convert::duration,
        stop_when_drained: convert::as_is,
        schedules: convert::as_is,
        max_jobs: limit,
    );
    opts.runtime = "python";
    Ok(opts)
}
