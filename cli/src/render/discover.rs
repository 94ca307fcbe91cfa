//! The queues under the prefix (`tideq queues`, the core's `discover` role): one line per queue
//! with what it holds now.

use serde_json::{json, Value};

use super::{duration, Table};

/// A queue found, with what `tideq queues` shows of it.
pub enum QueueLine {
    Jobs(tideq::QueueRef, Box<tideq::QueueMetrics>),
    Capped(tideq::QueueRef, tideq::CappedStats),
}

/// One line on the Redis server: version, memory against its limit and policy (with a warning
/// when the policy evicts keys, jobs with them), clients, commands per second.
pub fn server_line(s: &tideq::ServerInfo) -> String {
    let limit = if s.maxmemory == 0 {
        "no maxmemory".to_string()
    } else {
        format!("of {}", bytes(s.maxmemory))
    };
    let warn = if s.evicts {
        format!(
            "  WARNING: maxmemory-policy {} deletes keys (jobs) under memory pressure; set noeviction",
            s.maxmemory_policy
        )
    } else {
        String::new()
    };
    format!(
        "{} {}{}: {} used {limit} ({}), {} clients, {} ops/s{warn}",
        s.server,
        s.version,
        if s.nodes > 1 {
            format!(" ({} nodes)", s.nodes)
        } else {
            String::new()
        },
        bytes(s.used_memory),
        s.maxmemory_policy,
        s.connected_clients,
        s.ops_per_sec,
    )
}

/// Bytes as people read them: `812 B`, `1.4 MiB`, `2.0 GiB`.
pub fn bytes(n: u64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < units.len() {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", units[i])
    }
}

/// The server's info as JSON (the dashboard's Redis panel).
pub fn server_json(s: &tideq::ServerInfo) -> Value {
    json!({
        "server": s.server, "version": s.version, "used_memory": s.used_memory,
        "maxmemory": s.maxmemory, "maxmemory_policy": s.maxmemory_policy, "evicts": s.evicts,
        "connected_clients": s.connected_clients, "ops_per_sec": s.ops_per_sec,
        "uptime_secs": s.uptime_secs, "nodes": s.nodes,
    })
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
                "completed": s.completed, "completed_kept": s.completed_kept,
                "waiting": m.waiting, "paused": s.paused,
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
