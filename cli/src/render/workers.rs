//! A queue's live workers (the core's worker registry).

use serde_json::Value;

use super::{local_time, Table};

pub fn workers_json(list: &[tideq::WorkerInfo]) -> Value {
    serde_json::to_value(list).unwrap_or(Value::Null)
}

pub fn workers(list: &[tideq::WorkerInfo], json: bool) -> String {
    if json {
        return workers_json(list).to_string();
    }
    if list.is_empty() {
        return "(no workers seen in the last 45 s)".to_string();
    }
    let mut t = Table::new(&[
        "ID",
        "HOST",
        "PID",
        "RUNTIME",
        "CONCURRENCY",
        "RUNNING",
        "STARTED",
        "LAST SEEN",
    ]);
    for w in list {
        t.row(vec![
            w.id.clone(),
            w.host.clone(),
            w.pid.to_string(),
            w.runtime.clone(),
            w.concurrency.to_string(),
            w.running.to_string(),
            local_time(w.started_at),
            local_time(w.last_seen_at),
        ]);
    }
    t.render()
}
