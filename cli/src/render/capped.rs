//! A capped grouped queue: stats, groups, peeked items (the core's `capped` module).

use serde_json::{json, Value};
use tideq::{CappedGroupPage, CappedStats, Peeked};

use super::{kind, one_line, pairs, preview, when, Payload, Table, ITEM_WIDTH};

pub fn capped_stats_json(s: &CappedStats) -> Value {
    json!({
        "pushed": s.pushed,
        "dropped": s.dropped,
        "discarded": s.discarded,
        "delivered": s.delivered,
        "groups": s.groups,
        "unreadable": s.unreadable,
        "requeued": s.requeued,
    })
}

pub fn capped_stats(s: &CappedStats, json: bool) -> String {
    let v = capped_stats_json(s);
    if json {
        return v.to_string();
    }
    let items: Vec<(&str, String)> = [
        "pushed",
        "dropped",
        "discarded",
        "delivered",
        "groups",
        "unreadable",
        "requeued",
    ]
    .into_iter()
    .map(|k| (k, v[k].to_string()))
    .collect();
    pairs(&items)
}

/// A capped group's items as `peek` gave them, each shown as [`preview`] picks.
pub fn peeked_json(items: &[Peeked], how: Option<Payload>) -> Value {
    let all: Vec<Value> = items
        .iter()
        .map(|p| {
            let (k, v) = preview(&p.item, how);
            json!({
                "pushed_at_ms": p.pushed_at_ms,
                "item": v,
                "item_format": kind(k),
                "item_len": p.item.len(),
            })
        })
        .collect();
    Value::Array(all)
}

/// A capped group's items as `peek` gave them: each item shown as `how` (see [`preview`]).
pub fn peeked(items: &[Peeked], how: Option<Payload>, json: bool) -> String {
    if json {
        return peeked_json(items, how).to_string();
    }
    if items.is_empty() {
        return "(no items)".to_string();
    }
    let mut t = Table::new(&["PUSHED AT", "FORMAT", "BYTES", "ITEM"]);
    for p in items {
        let (k, v) = preview(&p.item, how);
        let text = match v {
            Value::String(s) => s,
            other => other.to_string(),
        };
        t.row(vec![
            when(p.pushed_at_ms),
            kind(k).to_string(),
            p.item.len().to_string(),
            one_line(&text, ITEM_WIDTH),
        ]);
    }
    t.render()
}

/// One page of a capped queue's groups, then where the next page starts.
pub fn names_page(page: &CappedGroupPage, json: bool) -> String {
    if json {
        return json!({"groups": page.groups, "cursor": page.cursor}).to_string();
    }
    names(&page.groups, false)
}

pub fn names(names: &[String], json: bool) -> String {
    if json {
        return json!(names).to_string();
    }
    if names.is_empty() {
        return "(no groups)".to_string();
    }
    names.join("\n")
}
