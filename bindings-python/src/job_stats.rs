//! The value class `JobStats`: jobs per state and the queue's lifetime counters (`stats()`).

use pyo3::prelude::*;

/// Jobs per state, and lifetime counters of the queue (kept in Redis).
#[pyclass(module = "tideq", frozen, eq)]
#[derive(PartialEq)]
pub struct JobStats(pub tideq::JobStats);

#[pymethods]
impl JobStats {
    #[getter]
    fn delayed(&self) -> u64 {
        self.0.delayed
    }
    #[getter]
    fn ready(&self) -> u64 {
        self.0.ready
    }
    #[getter]
    fn active(&self) -> u64 {
        self.0.active
    }
    #[getter]
    fn dead(&self) -> u64 {
        self.0.dead
    }
    /// Completed jobs kept now (``keep_completed``, ``keep_for``): what
    /// ``jobs("completed")`` lists. ``completed`` counts every job ever completed.
    #[getter]
    fn completed_kept(&self) -> u64 {
        self.0.completed_kept
    }
    /// Flow jobs waiting for their children.
    #[getter]
    fn waiting(&self) -> u64 {
        self.0.waiting
    }
    /// Jobs created (an id that already existed is not counted).
    #[getter]
    fn enqueued(&self) -> u64 {
        self.0.enqueued
    }
    /// Jobs completed, ever (``completed_kept`` of them are kept).
    #[getter]
    fn completed(&self) -> u64 {
        self.0.completed
    }
    /// Jobs that exhausted their attempts (dead-lettered).
    #[getter]
    fn dead_lettered(&self) -> u64 {
        self.0.dead_lettered
    }
    /// Failed attempts scheduled for a retry.
    #[getter]
    fn retried(&self) -> u64 {
        self.0.retried
    }
    /// Expired leases recovered (a worker died or stalled).
    #[getter]
    fn recovered(&self) -> u64 {
        self.0.recovered
    }
    #[getter]
    fn cancelled(&self) -> u64 {
        self.0.cancelled
    }
    /// Deliveries whose handler raised ``Snooze`` or ``BackOff`` (not counted as attempts).
    #[getter]
    fn snoozed(&self) -> u64 {
        self.0.snoozed
    }
    /// Jobs not started by their deadline (``expires_after``, ``expires_at``): dead-lettered
    /// without running.
    #[getter]
    fn expired(&self) -> u64 {
        self.0.expired
    }
    /// Dead jobs deleted by the ``keep_dead`` / ``keep_dead_for`` bounds.
    #[getter]
    fn dead_trimmed(&self) -> u64 {
        self.0.dead_trimmed
    }
    /// Jobs found with their data missing (evicted by Redis, or deleted by hand) and removed,
    /// since they could not run. Unreadable ones are dead-lettered instead.
    #[getter]
    fn lost(&self) -> u64 {
        self.0.lost
    }
    /// True when the queue is paused (``pause()``): workers start nothing.
    #[getter]
    fn paused(&self) -> bool {
        self.0.paused
    }
    /// Seconds the job next in line that waited longest has been ready to start (0.0 when no
    /// job is ready): since its enqueue, or since it became ready later (a delayed job's or a
    /// retry's due time, a release, a requeue). Due delayed jobs count before a worker picks them
    /// up, so it grows with no worker running: the number to scale workers on. Read from the
    /// first jobs in line and the first 100 groups in turn; the longest over the shards.
    #[getter]
    fn latency(&self) -> f64 {
        self.0.latency.as_secs_f64()
    }
    fn __repr__(&self) -> String {
        let s = &self.0;
        format!(
            "JobStats(delayed={}, ready={}, active={}, dead={}, completed_kept={}, waiting={}, \
             enqueued={}, completed={}, dead_lettered={}, retried={}, recovered={}, cancelled={}, snoozed={}, expired={}, \
             dead_trimmed={}, lost={}, paused={}, latency={})",
            s.delayed,
            s.ready,
            s.active,
            s.dead,
            s.completed_kept,
            s.waiting,
            s.enqueued,
            s.completed,
            s.dead_lettered,
            s.retried,
            s.recovered,
            s.cancelled,
            s.snoozed,
            s.expired,
            s.dead_trimmed,
            s.lost,
            if s.paused { "True" } else { "False" },
            s.latency.as_secs_f64()
        )
    }
}

crate::value::value_class! {
    JobStats {
        delayed, ready, active, dead, completed_kept, waiting, enqueued, completed, dead_lettered, retried, recovered,
        cancelled, snoozed, expired, dead_trimmed, lost, paused, latency
    }
}
