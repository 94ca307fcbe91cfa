//! A job's attempts and its log, as `tideq job` and the dashboard's job page show them: the
//! text table and lines, and their JSON (tracebacks whole).

use serde_json::{json, Value};
use tideq::{AttemptInfo, JobInfo, LogLine};

use super::{duration, local_time, one_line, opt, Table, ERROR_WIDTH};

pub fn attempt_json(a: &AttemptInfo) -> Value {
    json!({
        "attempt": a.attempt,
        "started_at": a.started_at,
        "ended_at": a.ended_at,
        "duration_ms": a.duration_ms,
        "worker": a.worker,
        "outcome": a.outcome,
        "error": a.error,
        "trace": a.trace,
    })
}

pub fn log_json(l: &LogLine) -> Value {
    json!({"at_ms": l.at_ms, "attempt": l.attempt, "line": l.line})
}

/// The job's run (`started_at`, `run_ms`, `worker`), its attempts and its log, added to its
/// JSON (`tideq job --json`, the dashboard's job).
pub fn add_attempts_json(v: &mut Value, j: &JobInfo) {
    v["attempt_history"] = j.attempt_history.iter().map(attempt_json).collect();
    v["logs"] = j.logs.iter().map(log_json).collect();
}

/// The job's run as `name  value` rows: when its last attempt started, how long it ran.
pub fn run_rows(j: &JobInfo) -> Vec<(&'static str, String)> {
    let mut rows = Vec::new();
    if let Some(at) = j.started_at {
        rows.push(("started_at", local_time(at)));
    }
    if let Some(ms) = j.run_ms {
        rows.push(("run_time", duration(ms)));
    }
    if let Some(w) = &j.worker {
        rows.push(("worker", w.clone()));
    }
    rows
}

/// The attempts table and the log's lines, after the job's rows ("" when it has neither).
pub fn attempts_text(j: &JobInfo) -> String {
    let mut out = String::new();
    if !j.attempt_history.is_empty() {
        let mut t = Table::new(&[
            "N", "STARTED", "ENDED", "DURATION", "WORKER", "OUTCOME", "ERROR",
        ]);
        for a in &j.attempt_history {
            t.row(vec![
                a.attempt.to_string(),
                opt(a.started_at.map(local_time)),
                opt(a.ended_at.map(local_time)),
                opt(a.duration_ms.map(duration)),
                opt(a.worker.as_ref()),
                a.outcome.clone(),
                a.error
                    .as_deref()
                    .and_then(|e| e.lines().next())
                    .map(|e| one_line(e, ERROR_WIDTH))
                    .unwrap_or_else(|| "-".to_string()),
            ]);
        }
        out.push_str(&format!(
            "\n\nattempts: {}\n{}",
            j.attempt_history.len(),
            t.render()
        ));
    }
    if !j.logs.is_empty() {
        out.push_str(&format!("\n\nlogs: {}", j.logs.len()));
        for l in &j.logs {
            let line: String = l
                .line
                .chars()
                .map(|c| if c.is_control() && c != '\t' { ' ' } else { c })
                .collect();
            out.push_str(&format!(
                "\n{}  #{}  {line}",
                local_time(l.at_ms),
                l.attempt
            ));
        }
    }
    out
}
