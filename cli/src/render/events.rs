//! One event of a queue's log, as a line (the core's `events` role).

use serde_json::{json, Value};

use super::{local_time, one_line, preview, ERROR_WIDTH};

pub fn event(e: &tideq::Event, json: bool) -> String {
    let data = e.data.as_deref().map(|d| preview(d, None).1);
    if json {
        return json!({"kind": e.kind.as_str(), "job_id": e.job_id, "data": data,
            "data_omitted_bytes": e.data_omitted_bytes, "at_ms": e.at_ms})
        .to_string();
    }
    let data = match data {
        None => match e.data_omitted_bytes {
            Some(n) => format!("({n} bytes, not kept in the log)"),
            None => String::new(),
        },
        Some(Value::String(s)) => one_line(&s, ERROR_WIDTH),
        Some(v) => one_line(&v.to_string(), ERROR_WIDTH),
    };
    format!(
        "{} {:<9} {} {data}",
        local_time(e.at_ms),
        e.kind.as_str(),
        e.job_id
    )
}
