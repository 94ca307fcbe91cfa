//! What `tideq enqueue` did (the core's `jobs` role).

use serde_json::json;
use tideq::Enqueued;

pub fn enqueued(e: &Enqueued, json: bool) -> String {
    if json {
        return json!({"id": e.id, "created": e.created}).to_string();
    }
    if e.created {
        format!("enqueued {}", e.id)
    } else {
        format!("{} already exists; nothing enqueued", e.id)
    }
}
