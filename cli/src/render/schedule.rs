//! A queue's schedules with their next slots (the core's `schedule` role).

use serde_json::{json, Value};

use super::{duration, preview, when, Table};

/// How often: the cron line, or the interval (`--json`: in ms; text: as people write it).
fn every(s: &tideq::ScheduleInfo, human: bool) -> String {
    match &s.every {
        tideq::Every::Cron { pattern, timezone } => match timezone {
            Some(tz) => format!("cron {pattern} ({tz})"),
            None => format!("cron {pattern}"),
        },
        tideq::Every::Interval(d) if human => format!("every {}", duration(d.as_millis() as u64)),
        tideq::Every::Interval(d) => format!("every {} ms", d.as_millis()),
    }
}

pub fn schedules_json(list: &[tideq::ScheduleInfo]) -> Value {
    let all: Vec<Value> = list
        .iter()
        .map(|s| {
            json!({
                "name": s.name,
                "every": every(s, false),
                "next_run_ms": s.next_run_ms,
                "paused": s.paused,
                "last_job_id": s.last_job_id,
                "last_job_state": s.last_job_state,
                "task": s.options.task,
                "priority": s.options.priority,
                "group": s.options.group,
                "payload": preview(&s.payload, None).1,
            })
        })
        .collect();
    Value::Array(all)
}

pub fn schedules(list: &[tideq::ScheduleInfo], json: bool) -> String {
    if json {
        return schedules_json(list).to_string();
    }
    if list.is_empty() {
        return "(no schedules)".to_string();
    }
    let mut t = Table::new(&["NAME", "WHEN", "NEXT RUN", "TASK", "LAST JOB", "OUTCOME"]);
    for s in list {
        let next = s.next_run_ms.map(when).unwrap_or_else(|| "-".to_string());
        t.row(vec![
            s.name.clone(),
            every(s, true),
            if s.paused {
                format!("paused (next {next})")
            } else {
                next
            },
            s.options.task.clone().unwrap_or_else(|| "-".to_string()),
            s.last_job_id.clone().unwrap_or_else(|| "-".to_string()),
            s.last_job_state.clone().unwrap_or_else(|| "-".to_string()),
        ]);
    }
    t.render()
}
