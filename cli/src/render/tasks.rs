//! A job queue's per-task metrics (the core's `Queue::task_metrics`): one row per task.

use serde_json::Value;

use super::{duration, Table};

/// How a task is shown: jobs without a task (a raw payload) as "(none)".
pub fn task_label(task: &str) -> &str {
    if task.is_empty() {
        "(none)"
    } else {
        task
    }
}

/// The tasks as the core's values (`task`, counts, `run_ms_sum`, `run_ms_avg`): a JSON array.
pub fn task_metrics_json(m: &[tideq::TaskMetrics]) -> Value {
    serde_json::to_value(m).unwrap_or(Value::Null)
}

pub fn task_metrics(m: &[tideq::TaskMetrics], json: bool) -> String {
    if json {
        return task_metrics_json(m).to_string();
    }
    if m.is_empty() {
        return "no task ran in this window".to_string();
    }
    let mut t = Table::new(&[
        "TASK",
        "COMPLETED",
        "FAILED",
        "DEAD",
        "RUNS",
        "AVG RUN",
        "TOTAL RUN",
    ]);
    for x in m {
        t.row(vec![
            task_label(&x.task).to_string(),
            x.completed.to_string(),
            x.failed.to_string(),
            x.dead_lettered.to_string(),
            x.runs.to_string(),
            x.run_ms_avg
                .map_or("-".to_string(), |ms| duration(ms.round() as u64)),
            duration(x.run_ms_sum.round() as u64),
        ]);
    }
    t.render()
}
