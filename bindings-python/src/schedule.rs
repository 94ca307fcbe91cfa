//! Schedules on `Queue` (core `schedule`): `upsert_schedule` (a cron pattern in a time zone, or
//! a fixed interval), `remove_schedule`, `schedules` and the value class `ScheduleInfo`. Every
//! worker started with ``schedules`` drives them; each slot still makes exactly one job.

use pyo3::prelude::*;
use pyo3::types::PyBytes;
use tideq::Every;

use crate::convert::{self, Int, Secs, Text};
use crate::error;
use crate::job::Backoff;
use crate::jobs::QueueBase;
use crate::options::JobArgs;

/// When a schedule's slots come, from `upsert_schedule`'s `cron`, `timezone` and `every`
/// (seconds): exactly one of `cron` and `every`, and a time zone only with `cron`.
fn every_of(cron: Option<Text>, timezone: Option<Text>, every: Option<Secs>) -> PyResult<Every> {
    match (cron, every) {
        (Some(Text(pattern)), None) => Ok(Every::Cron {
            pattern,
            timezone: timezone.map(|t| t.0),
        }),
        (None, Some(secs)) if timezone.is_none() => {
            Ok(Every::Interval(convert::duration("every", secs)?))
        }
        (None, Some(_)) => Err(error::invalid(
            "timezone applies to a cron pattern: give cron with it, not every",
        )),
        (Some(_), Some(_)) => Err(error::invalid("give a schedule cron or every, not both")),
        (None, None) => Err(error::invalid(
            "give a schedule cron (a pattern) or every (seconds)",
        )),
    }
}

#[pymethods]
impl QueueBase {
    /// Create the schedule ``name``, or change it; returns its next slot (epoch ms, Redis clock).
    ///
    /// Each slot enqueues one job with ``payload`` and the options given, id
    /// ``"<name>@<slot ms>"``, whichever workers (started with ``schedules``, the default) see it
    /// due: exactly one of ``cron`` (a cron pattern, 5 fields or 6 with seconds first, in
    /// ``timezone``, an IANA name such as ``"Europe/Paris"``; default UTC) or ``every`` (seconds,
    /// at least 0.01: slots at the multiples of the interval since the epoch). Declaring the same
    /// schedule again changes nothing (its next slot stays); after an outage a schedule runs once
    /// for the slots it missed. ``priority``, ``group``, ``max_attempts``, ``backoff`` and
    /// ``timeout`` are given to each job as ``enqueue`` takes them; ``task`` makes each job a run
    /// of that task, ``payload`` then holding its arguments encoded as ``format`` says
    /// (``"json"``, the default with a task, or ``"msgpack"``): arguments that do not decode so
    /// raise ``InvalidArgumentError``, as does any other bad input, and nothing is written.
    /// None when the pattern has no slot to come.
    #[pyo3(
        signature = (name, payload=None, *, cron=None, every=None, timezone=None, task=None, format=None, priority=None, group=None, max_attempts=None, backoff=None, timeout=None),
        text_signature = "($self, name, payload=b'', *, cron=None, every=None, timezone=None, task=None, format=None, priority=None, group=None, max_attempts=None, backoff=None, timeout=None)"
    )]
    #[allow(clippy::too_many_arguments)]
    fn upsert_schedule<'py>(
        &self,
        py: Python<'py>,
        name: Text,
        payload: Option<Bound<'py, PyAny>>,
        cron: Option<Text>,
        every: Option<Secs>,
        timezone: Option<Text>,
        task: Option<Text>,
        format: Option<Text>,
        priority: Option<Int>,
        group: Option<Text>,
        max_attempts: Option<Int>,
        backoff: Option<Bound<'py, Backoff>>,
        timeout: Option<Secs>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let payload = match payload {
            Some(p) => convert::bytes_like("payload", &p)?,
            None => Vec::new(),
        };
        let slots = every_of(cron, timezone, every)?;
        let args = JobArgs {
            max_attempts,
            backoff,
            timeout,
            priority,
            group,
            ..JobArgs::default()
        };
        let mut opts = args.convert()?;
        opts.task = task.map(|t| t.0);
        opts.format = format
            .map(|f| tideq::PayloadFormat::parse(&f.0))
            .transpose()
            .map_err(error::to_py)?;
        let q = self.queue.clone();
        self.api.call(py, async move {
            q.upsert_schedule(&name.0, slots, payload, opts).await
        })
    }

    /// Remove the schedule ``name`` (no slot of it fires after this); True if it existed.
    fn remove_schedule<'py>(&self, py: Python<'py>, name: Text) -> PyResult<Bound<'py, PyAny>> {
        let q = self.queue.clone();
        self.api
            .call(py, async move { q.remove_schedule(&name.0).await })
    }

    /// Enqueue one job of the schedule ``name`` now, as its next slot would (same payload and
    /// options), without moving its slots: the next one still fires when due. The job's id is
    /// ``"<name>@run-<ms>"`` (the current second of the Redis clock), so a second call within
    /// that second enqueues nothing more and returns the same id. Returns the job's id; an unknown
    /// name raises ``InvalidArgumentError``, nothing written.
    fn run_schedule<'py>(&self, py: Python<'py>, name: Text) -> PyResult<Bound<'py, PyAny>> {
        let q = self.queue.clone();
        self.api
            .call(py, async move { q.run_schedule(&name.0).await })
    }

    /// Pause the schedule ``name``: it keeps its definition and next slot and does not fire until
    /// ``resume_schedule``. False if it was paused already; an unknown name raises
    /// ``InvalidArgumentError``, nothing written.
    fn pause_schedule<'py>(&self, py: Python<'py>, name: Text) -> PyResult<Bound<'py, PyAny>> {
        let q = self.queue.clone();
        self.api
            .call(py, async move { q.pause_schedule(&name.0).await })
    }

    /// Resume the paused schedule ``name``. Slots passed while paused are not all run: as after
    /// an outage, the latest of them fires once, then the schedule goes on. False if it was not
    /// paused; an unknown name raises ``InvalidArgumentError``, nothing written.
    fn resume_schedule<'py>(&self, py: Python<'py>, name: Text) -> PyResult<Bound<'py, PyAny>> {
        let q = self.queue.clone();
        self.api
            .call(py, async move { q.resume_schedule(&name.0).await })
    }

    /// The queue's schedules with their next slots, by name.
    fn schedules<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let q = self.queue.clone();
        self.api.call(py, async move {
            let listed = q.schedules().await?;
            Ok(listed.into_iter().map(ScheduleInfo).collect::<Vec<_>>())
        })
    }
}

/// A schedule as ``schedules()`` lists it.
#[pyclass(module = "tideq", frozen, eq)]
#[derive(PartialEq)]
pub struct ScheduleInfo(pub tideq::ScheduleInfo);

#[pymethods]
impl ScheduleInfo {
    #[getter]
    fn name(&self) -> &str {
        &self.0.name
    }
    /// The cron pattern, or None for an interval schedule.
    #[getter]
    fn cron(&self) -> Option<&str> {
        match &self.0.every {
            Every::Cron { pattern, .. } => Some(pattern),
            Every::Interval(_) => None,
        }
    }
    /// The cron pattern's time zone (an IANA name), or None (UTC, or an interval schedule).
    #[getter]
    fn timezone(&self) -> Option<&str> {
        match &self.0.every {
            Every::Cron { timezone, .. } => timezone.as_deref(),
            Every::Interval(_) => None,
        }
    }
    /// The interval in seconds, or None for a cron schedule.
    #[getter]
    fn every(&self) -> Option<f64> {
        match &self.0.every {
            Every::Interval(d) => Some(d.as_secs_f64()),
            Every::Cron { .. } => None,
        }
    }
    /// The payload each job gets.
    #[getter]
    fn payload<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.0.payload)
    }
    /// The next slot, epoch milliseconds by the Redis clock; None when the pattern has no more.
    #[getter]
    fn next_run_ms(&self) -> Option<u64> {
        self.0.next_run_ms
    }
    /// True while paused (``pause_schedule``): it keeps its next slot and does not fire.
    #[getter]
    fn paused(&self) -> bool {
        self.0.paused
    }
    /// The id of the last job the schedule enqueued (a slot fired, or ``run_schedule``); None
    /// before its first.
    #[getter]
    fn last_job_id(&self) -> Option<&str> {
        self.0.last_job_id.as_deref()
    }
    /// That job's state: ``"delayed"``, ``"ready"``, ``"active"``, ``"completed"``, ``"dead"``,
    /// or ``"gone"`` once the queue no longer keeps it; None before its first job.
    #[getter]
    fn last_job_state(&self) -> Option<&str> {
        self.0.last_job_state.as_deref()
    }
    /// The task each job runs (its name), or None.
    #[getter]
    fn task(&self) -> Option<&str> {
        self.0.options.task.as_deref()
    }
    /// How the payload encodes the task's arguments: ``"json"``, ``"msgpack"``, or None.
    #[getter]
    fn format(&self) -> Option<&'static str> {
        self.0.options.format.map(|f| f.as_str())
    }
    /// Each job's priority, or None.
    #[getter]
    fn priority(&self) -> Option<u32> {
        self.0.options.priority
    }
    /// Each job's group, or None.
    #[getter]
    fn group(&self) -> Option<&str> {
        self.0.options.group.as_deref()
    }
    /// Each job's ``max_attempts``, or None (the queue's).
    #[getter]
    fn max_attempts(&self) -> Option<u32> {
        self.0.options.max_attempts
    }
    /// Each job's backoff, or None (the queue's).
    #[getter]
    fn backoff(&self) -> Option<Backoff> {
        self.0.options.backoff.map(Backoff)
    }
    /// Each job's timeout in seconds, or None (the queue's).
    #[getter]
    fn timeout(&self) -> Option<f64> {
        self.0.options.timeout.map(|d| d.as_secs_f64())
    }
    fn __repr__(&self, py: Python<'_>) -> String {
        let s = &self.0;
        let text = |t: Option<&str>| t.map_or("None".to_string(), |t| convert::str_repr(py, t));
        let when = match &s.every {
            Every::Cron { pattern, timezone } => format!(
                "cron={}, timezone={}",
                convert::str_repr(py, pattern),
                text(timezone.as_deref())
            ),
            Every::Interval(d) => format!("every={:?}", d.as_secs_f64()),
        };
        let o = &s.options;
        let mut options = String::new();
        if let Some(t) = &o.task {
            options += &format!(", task={}", convert::str_repr(py, t));
        }
        if let Some(f) = o.format {
            options += &format!(", format={}", convert::str_repr(py, f.as_str()));
        }
        if let Some(p) = o.priority {
            options += &format!(", priority={p}");
        }
        if let Some(g) = &o.group {
            options += &format!(", group={}", convert::str_repr(py, g));
        }
        if let Some(n) = o.max_attempts {
            options += &format!(", max_attempts={n}");
        }
        if let Some(b) = o.backoff {
            options += &format!(", backoff={}", Backoff(b).__repr__());
        }
        if o.timeout.is_some() {
            options += &format!(", timeout={}", convert::secs_repr(o.timeout));
        }
        format!(
            "ScheduleInfo(name={}, {when}, next_run_ms={}, payload=<{} bytes>{options})",
            convert::str_repr(py, &s.name),
            s.next_run_ms.map_or("None".to_string(), |n| n.to_string()),
            s.payload.len(),
        )
    }
}

crate::value::value_class! {
    ScheduleInfo {
        name, cron, timezone, every, payload, next_run_ms, paused, last_job_id, last_job_state,
        task, format, priority, group, max_attempts, backoff, timeout
    }
}
