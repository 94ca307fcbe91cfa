//! A job queue's history (the core's `Queue::history`): one row per step.

use serde_json::Value;

use super::{duration, local_time, Table};

/// The points as the core's values (`at_ms`, counts, `lateness_ms`): a JSON array.
pub fn history_json(points: &[tideq::HistoryPoint]) -> Value {
    serde_json::to_value(points).unwrap_or(Value::Null)
}

pub fn history(points: &[tideq::HistoryPoint], json: bool) -> String {
    if json {
        return history_json(points).to_string();
    }
    let mut t = Table::new(&[
        "TIME",
        "ENQUEUED",
        "COMPLETED",
        "RETRIED",
        "DEAD",
        "FAILED",
        "CANCELLED",
        "LATENESS",
    ]);
    for p in points {
        let mut at = local_time(p.at_ms);
        at.truncate(16); // to the minute: steps start on one
        t.row(vec![
            at,
            p.enqueued.to_string(),
            p.completed.to_string(),
            p.retried.to_string(),
            p.dead_lettered.to_string(),
            p.failed.to_string(),
            p.cancelled.to_string(),
            p.lateness_ms
                .map_or("-".to_string(), |ms| duration(ms.round() as u64)),
        ]);
    }
    t.render()
}
