//! The queues under the prefix (`tideq queues`, the core's `discover` role): one line per queue
//! with what it holds now.

use serde_json::{json, Value};

use super::{duration, Table};

/// A queue found, with what `tideq queues` shows of it.
pub enum QueueLine {
    Jobs(tideq::QueueRef, Box<tideq::QueueMetrics>),
    Capped(tideq::QueueRef, tideq::CappedStats),
}

pub fn queues(list: &[QueueLine], json: bool) -> String {
    if json {
        let all: Vec<Value> = list.iter().map(line_json).collect();
        return Value::Array(all).to_string();
    }
    if list.is_empty() {
        return "(no queues)".to_string();
    }
    let mut t = Table::new(&[
        "KIND", "NAME", "SHARDS", "READY", "DELAYED", "ACTIVE", "DEAD", "WAITING", "LATENCY",
        "WORKERS", "",
    ]);
    for line in list {
        t.row(match line {
            QueueLine::Jobs(r, m) => {
                let s = &m.stats;
                vec![
                    r.kind.as_str().to_string(),
                    r.name.clone(),
                    r.shards.to_string(),
                    s.ready.to_string(),
                    s.delayed.to_string(),
                    s.active.to_string(),
                    s.dead.to_string(),
                    m.waiting.to_string(),
                    duration(s.latency.as_millis() as u64),
                    format!("{} ({} busy)", m.workers, m.busy_workers),
                    if s.paused { "paused" } else { "" }.to_string(),
                ]
            }
            QueueLine::Capped(r, s) => vec![
                r.kind.as_str().to_string(),
                r.name.clone(),
                r.shards.to_string(),
                format!("{} groups", s.groups),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                format!("{} pushed, {} delivered", s.pushed, s.delivered),
            ],
        });
    }
    t.render()
}

fn line_json(line: &QueueLine) -> Value {
    match line {
        QueueLine::Jobs(r, m) => {
            let s = &m.stats;
            json!({
                "kind": r.kind.as_str(), "name": r.name, "shards": r.shards,
                "ready": s.ready, "delayed": s.delayed, "active": s.active, "dead": s.dead,
                "completed": s.completed, "waiting": m.waiting, "paused": s.paused,
                "latency_ms": s.latency.as_millis() as u64,
                "workers": m.workers, "busy_workers": m.busy_workers,
            })
        }
        QueueLine::Capped(r, s) => json!({
            "kind": r.kind.as_str(), "name": r.name, "shards": r.shards,
            "groups": s.groups, "pushed": s.pushed, "delivered": s.delivered,
            "dropped": s.dropped, "discarded": s.discarded,
        }),
    }
}
