//! What a test mode records: the enqueue hook (after the real path's validation and encoding),
//! the answers of `get`, `wait` and a job's progress from the record, and the record's queries
//! (`jobs`, `enqueued`, `assert_enqueued`).

use std::time::Duration;

use super::*;
use crate::job::{EnqueueOptions, Enqueued, JobInfo, JobOutcome, JobState};

/// One recorded job and what running it needs.
#[derive(Clone)]
pub(crate) struct Entry {
    pub(crate) job: RecordedJob,
    /// The queue it was enqueued on (its options: result and error caps; the job's owner).
    pub(crate) queue: Queue,
    pub(crate) env: Envelope,
    dedup: Option<String>,
    debounce: Option<String>,
    /// A drain left it (no handler, or it kept snoozing): skipped until the next drain.
    pub(crate) parked: bool,
}

/// JSON as a MessagePack value (how JSON task arguments compare with a filter's).
pub(crate) fn json_value(v: &serde_json::Value) -> Value {
    match v {
        serde_json::Value::Null => Value::Nil,
        serde_json::Value::Bool(b) => Value::Boolean(*b),
        serde_json::Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                Value::from(i)
            } else if let Some(u) = n.as_u64() {
                Value::from(u)
            } else {
                Value::from(n.as_f64().unwrap_or(f64::NAN))
            }
        }
        serde_json::Value::String(s) => Value::from(s.as_str()),
        serde_json::Value::Array(a) => Value::Array(a.iter().map(json_value).collect()),
        serde_json::Value::Object(o) => Value::Map(
            o.iter()
                .map(|(k, v)| (Value::from(k.as_str()), json_value(v)))
                .collect(),
        ),
    }
}

/// A job's decoded arguments (`None` for raw bytes or arguments that do not decode).
fn decode_args(env: &Envelope) -> Option<Value> {
    if env.task.is_some() && env.payload.is_empty() {
        return Some(Value::Nil);
    }
    match env.format? {
        PayloadFormat::Json => serde_json::from_slice::<serde_json::Value>(&env.payload)
            .ok()
            .map(|v| json_value(&v)),
        PayloadFormat::Msgpack => crate::task::decode_msgpack_value(&env.payload).ok(),
    }
}

impl JobFilter {
    pub(crate) fn matches(&self, j: &RecordedJob) -> bool {
        self.queue.as_ref().is_none_or(|q| *q == j.queue)
            && self
                .task
                .as_ref()
                .is_none_or(|t| Some(t) == j.task.as_ref())
            && self.id.as_ref().is_none_or(|i| *i == j.id)
            && self
                .args
                .as_ref()
                .is_none_or(|a| Some(a) == j.args.as_ref())
            && self
                .group
                .as_ref()
                .is_none_or(|g| Some(g) == j.group.as_ref())
            && self.priority.is_none_or(|p| Some(p) == j.priority)
            && self.delay.is_none_or(|d| Some(d) == j.delay)
    }

    /// What the filter looks for, in words.
    fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(t) = &self.task {
            parts.push(format!("task {t:?}"));
        }
        if let Some(a) = &self.args {
            parts.push(format!("args {a}"));
        }
        if let Some(q) = &self.queue {
            parts.push(format!("queue {q:?}"));
        }
        if let Some(i) = &self.id {
            parts.push(format!("id {i:?}"));
        }
        if let Some(g) = &self.group {
            parts.push(format!("group {g:?}"));
        }
        if let Some(p) = self.priority {
            parts.push(format!("priority {p}"));
        }
        if let Some(d) = self.delay {
            parts.push(format!("delay {:?}", d));
        }
        if parts.is_empty() {
            "any job".to_string()
        } else {
            format!("a job with {}", parts.join(", "))
        }
    }
}

impl RecordedJob {
    /// One line describing the job (assert_enqueued's listing).
    fn line(&self) -> String {
        let mut s = format!("queue {:?}", self.queue);
        match &self.task {
            Some(t) => s.push_str(&format!(" task {t:?}")),
            None => s.push_str(" (raw payload)"),
        }
        if let Some(a) = &self.args {
            s.push_str(&format!(" args {a}"));
        }
        if let Some(d) = self.delay {
            s.push_str(&format!(" delay {d:?}"));
        }
        if let Some(g) = &self.group {
            s.push_str(&format!(" group {g:?}"));
        }
        if let Some(p) = self.priority {
            s.push_str(&format!(" priority {p}"));
        }
        s.push_str(&format!(" id {:?} ({})", self.id, self.state.as_str()));
        s
    }
}

impl TestMode {
    pub(crate) fn entries(&self) -> std::sync::MutexGuard<'_, Vec<Entry>> {
        self.0.jobs.lock().unwrap()
    }

    /// Every recorded job that matches `filter`, in enqueue order (run or not).
    pub fn jobs(&self, filter: &JobFilter) -> Vec<RecordedJob> {
        self.entries()
            .iter()
            .filter(|e| filter.matches(&e.job))
            .map(|e| e.job.clone())
            .collect()
    }

    /// The recorded jobs that match `filter` and have not run yet.
    pub fn enqueued(&self, filter: &JobFilter) -> Vec<RecordedJob> {
        self.entries()
            .iter()
            .filter(|e| e.job.state == RecordedState::Enqueued && filter.matches(&e.job))
            .map(|e| e.job.clone())
            .collect()
    }

    /// The first recorded job (run or not) that matches `filter`; `Err` with a message saying
    /// what was looked for and listing what was recorded.
    pub fn assert_enqueued(&self, filter: &JobFilter) -> std::result::Result<RecordedJob, String> {
        let entries = self.entries();
        if let Some(e) = entries.iter().find(|e| filter.matches(&e.job)) {
            return Ok(e.job.clone());
        }
        let mut msg = format!("expected {} to be enqueued", filter.describe());
        if entries.is_empty() {
            msg.push_str(", but no job was enqueued");
        } else {
            msg.push_str(&format!(
                ", but the {} job(s) enqueued were:",
                entries.len()
            ));
            for e in entries.iter().take(20) {
                msg.push_str("\n  - ");
                msg.push_str(&e.job.line());
            }
            if entries.len() > 20 {
                msg.push_str(&format!("\n  ... and {} more", entries.len() - 20));
            }
        }
        Err(msg)
    }

    /// Records jobs enqueued on `queue` (validated and encoded: `prepared`), as the enqueue
    /// script would take them: an id already recorded on the queue, or a dedup key an unfinished
    /// job holds, creates nothing; a debounce key of a job not run yet replaces that job's
    /// payload and options. In inline mode, runs the jobs created.
    pub(crate) async fn enqueue(
        &self,
        queue: &Queue,
        opts: &[&EnqueueOptions],
        prepared: Vec<(Envelope, u64, u64)>,
    ) -> Result<Vec<Enqueued>> {
        let mut out = Vec::with_capacity(prepared.len());
        let mut created = Vec::new();
        {
            let mut entries = self.entries();
            for ((env, delay, run_at), o) in prepared.into_iter().zip(opts) {
                let same_queue = |e: &&Entry| *e.queue.name == *queue.name;
                if let Some(e) = entries
                    .iter()
                    .filter(same_queue)
                    .find(|e| e.job.id == env.id)
                {
                    out.push(Enqueued {
                        id: e.job.id.clone(),
                        created: false,
                    });
                    continue;
                }
                let dedup = o.dedup.as_ref().map(|d| d.key.clone());
                if let Some(key) = &dedup {
                    if let Some(e) = entries.iter().filter(same_queue).find(|e| {
                        e.dedup.as_ref() == Some(key) && e.job.state == RecordedState::Enqueued
                    }) {
                        out.push(Enqueued {
                            id: e.job.id.clone(),
                            created: false,
                        });
                        continue;
                    }
                }
                let debounce = o.debounce.as_ref().map(|d| d.key.clone());
                if let Some(key) = &debounce {
                    // A job of the key not run yet takes this one's payload and options, and
                    // waits its delay again (as `enqueue_debounced` replaces it in Redis).
                    if let Some(e) = entries.iter_mut().find(|e| {
                        *e.queue.name == *queue.name
                            && e.debounce.as_ref() == Some(key)
                            && e.job.state == RecordedState::Enqueued
                    }) {
                        let env = Envelope {
                            id: e.job.id.clone(),
                            ..env
                        };
                        e.job.payload = env.payload.clone();
                        e.job.envelope = env.encode();
                        e.job.args = decode_args(&env);
                        e.job.task = env.task.clone();
                        e.job.format = env.format;
                        e.job.max_attempts = env.max_attempts;
                        e.job.priority = o.priority;
                        e.job.group = o.group.clone();
                        e.job.cost = o.cost.unwrap_or(1);
                        e.job.delay = (delay > 0).then(|| Duration::from_millis(delay));
                        e.env = env;
                        out.push(Enqueued {
                            id: e.job.id.clone(),
                            created: true,
                        });
                        continue;
                    }
                }
                let job = RecordedJob {
                    id: env.id.clone(),
                    queue: queue.name().to_string(),
                    task: env.task.clone(),
                    format: env.format,
                    payload: env.payload.clone(),
                    envelope: env.encode(),
                    args: decode_args(&env),
                    delay: (delay > 0).then(|| Duration::from_millis(delay)),
                    run_at_ms: (run_at > 0).then_some(run_at),
                    priority: o.priority,
                    group: o.group.clone(),
                    cost: o.cost.unwrap_or(1),
                    max_attempts: env.max_attempts,
                    state: RecordedState::Enqueued,
                    attempts: 0,
                    result: None,
                    progress: None,
                    error: None,
                    errors: Vec::new(),
                    logs: Vec::new(),
                };
                out.push(Enqueued {
                    id: job.id.clone(),
                    created: true,
                });
                created.push(job.id.clone());
                entries.push(Entry {
                    job,
                    queue: queue.clone(),
                    env,
                    dedup,
                    debounce,
                    parked: false,
                });
            }
        }
        if self.mode() == Mode::Inline {
            let handlers = self.own_handlers();
            let mut first_err = None;
            for id in created {
                let ended = Box::pin(self.run_recorded(queue.name(), &id, &handlers)).await;
                if let Some(job) = ended {
                    if job.state == RecordedState::Dead && self.0.raise_errors {
                        first_err
                            .get_or_insert_with(|| queue.job_failed(&job.id, job.error.as_deref()));
                    }
                }
            }
            if let Some(e) = first_err {
                return Err(e);
            }
        }
        Ok(out)
    }

    fn find(&self, queue: &str, id: &str) -> Option<Entry> {
        self.entries()
            .iter()
            .find(|e| e.job.id == id && *e.queue.name == *queue)
            .cloned()
    }

    /// `get` from the record.
    pub(crate) fn get(&self, queue: &Queue, id: &str) -> Result<Option<JobInfo>> {
        crate::job::validate_job_id(id)?;
        Ok(self.find(queue.name(), id).map(|e| {
            let j = e.job;
            JobInfo {
                state: match j.state {
                    RecordedState::Enqueued if j.delay.is_some() || j.run_at_ms.is_some() => {
                        JobState::Delayed
                    }
                    RecordedState::Enqueued => JobState::Ready,
                    RecordedState::Completed => JobState::Completed,
                    RecordedState::Dead => JobState::Dead,
                },
                payload: j.payload,
                task: j.task,
                attempts: j.attempts,
                max_attempts: j.max_attempts,
                last_error: j.error,
                enqueued_at: e.env.created_at,
                state_since_or_until: None,
                priority: j.priority,
                group: j.group,
                cost: j.cost,
                unreadable: None,
                result: j.result,
                progress: j.progress,
                parent: None,
                parents: Vec::new(),
                children_pending: None,
                started_at: None,
                run_ms: None,
                worker: None,
                attempt_history: Vec::new(),
                logs: j.logs,
                id: j.id,
            }
        }))
    }

    /// `wait` from the record: a job not run yet gives `TIMEOUT` at once (nothing runs it until
    /// a drain).
    pub(crate) fn wait(&self, queue: &Queue, id: &str) -> Result<JobOutcome> {
        crate::job::validate_job_id(id)?;
        let Some(e) = self.find(queue.name(), id) else {
            return Err(queue.no_job(id));
        };
        match e.job.state {
            RecordedState::Completed => Ok(JobOutcome {
                id: e.job.id,
                result: e.job.result,
            }),
            RecordedState::Dead => Err(queue.job_failed(id, e.job.error.as_deref())),
            RecordedState::Enqueued => Err(Error::new(
                ErrorKind::Timeout,
                format!(
                    "job {id:?} of queue {:?} is recorded and has not run: in tideq's {} mode \
                     nothing runs it until drain()",
                    queue.name(),
                    self.mode().as_str()
                ),
            )),
        }
    }

    /// A running job's progress, into the record.
    /// A handler's log line, into the record (`Job::log` without Redis).
    pub(crate) fn log(&self, queue: &Queue, job: &crate::job::Job, line: &str) -> Result<()> {
        crate::attempts::check_log_line(line)?;
        let mut entries = self.entries();
        let Some(e) = entries
            .iter_mut()
            .find(|e| e.job.id == job.id && *e.queue.name == *queue.name)
        else {
            return Err(crate::error::Error::new(
                crate::error::ErrorKind::JobNotFound,
                format!("no job {:?} in queue {:?}", job.id, queue.name()),
            ));
        };
        let logs = &mut e.job.logs;
        logs.push(crate::attempts::LogLine {
            at_ms: crate::job::now_ms(),
            attempt: job.attempt,
            line: line.to_string(),
        });
        let over = logs.len().saturating_sub(crate::attempts::MAX_LOG_LINES);
        logs.drain(..over);
        Ok(())
    }

    /// `job_logs` from the record.
    pub(crate) fn logs(&self, queue: &Queue, id: &str) -> Result<Vec<crate::attempts::LogLine>> {
        crate::job::validate_job_id(id)?;
        self.find(queue.name(), id)
            .map(|e| e.job.logs)
            .ok_or_else(|| {
                crate::error::Error::new(
                    crate::error::ErrorKind::JobNotFound,
                    format!("no job {id:?} in queue {:?}", queue.name()),
                )
            })
    }

    pub(crate) fn progress(&self, queue: &Queue, id: &str, value: &[u8]) -> Result<()> {
        queue.check_result_len("progress", value.len())?;
        if let Some(e) = self
            .entries()
            .iter_mut()
            .find(|e| e.job.id == id && *e.queue.name == *queue.name)
        {
            e.job.progress = Some(value.to_vec());
        }
        Ok(())
    }
}
