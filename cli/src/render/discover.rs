//! The queues under the prefix (`tideq queues`, the core's `discover` role).

use serde_json::{json, Value};

use super::Table;

pub fn queues(list: &[tideq::QueueRef], json: bool) -> String {
    if json {
        let all: Vec<Value> = list
            .iter()
            .map(|q| json!({"kind": q.kind.as_str(), "name": q.name, "shards": q.shards}))
            .collect();
        return Value::Array(all).to_string();
    }
    if list.is_empty() {
        return "(no queues)".to_string();
    }
    let mut t = Table::new(&["KIND", "NAME", "SHARDS"]);
    for q in list {
        t.row(vec![
            q.kind.as_str().to_string(),
            q.name.clone(),
            q.shards.to_string(),
        ]);
    }
    t.render()
}
