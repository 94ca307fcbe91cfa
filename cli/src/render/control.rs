//! Limits and groups (`limits`, `group`, `groups`, the core's `control` role).

use serde_json::{json, Value};
use tideq::{GroupInfo, GroupPage, Limits, Rate};

use super::{opt, pairs, Table};

fn rate_json(r: &Option<Rate>) -> Value {
    match r {
        None => Value::Null,
        Some(r) => match r.burst {
            None => json!({"max": r.max, "per_ms": r.per.as_millis() as u64}),
            Some(b) => json!({"max": r.max, "per_ms": r.per.as_millis() as u64, "burst": b}),
        },
    }
}

fn rate_text(r: &Option<Rate>) -> String {
    match r {
        None => "-".to_string(),
        Some(r) => match r.burst {
            None => format!("{} per {} ms", r.max, r.per.as_millis()),
            Some(b) => format!("{} per {} ms, burst {b}", r.max, r.per.as_millis()),
        },
    }
}

/// A queue's limits, and the shared limiter its starts take from (`Queue::limiter_name`).
pub fn limits_json(l: &Limits, limiter: Option<&str>) -> Value {
    json!({
        "max_active": l.max_active,
        "rate": rate_json(&l.rate),
        "group_concurrency": l.group_concurrency,
        "group_rate": rate_json(&l.group_rate),
        "limiter": limiter,
    })
}

pub fn limits(l: &Limits, limiter: Option<&str>, json: bool) -> String {
    if json {
        return limits_json(l, limiter).to_string();
    }
    pairs(&[
        ("max_active", opt(l.max_active)),
        ("rate", rate_text(&l.rate)),
        ("group_concurrency", opt(l.group_concurrency)),
        ("group_rate", rate_text(&l.group_rate)),
        ("limiter", opt(limiter)),
    ])
}

pub fn group_json(g: &GroupInfo) -> Value {
    json!({
        "group": g.group,
        "ready": g.ready,
        "active": g.active,
        "paused": g.paused,
        "concurrency": g.concurrency,
        "rate": rate_json(&g.rate),
        "latency": g.latency.map(super::admin::secs),
        "limiter": g.limiter,
    })
}

pub fn group(g: &GroupInfo, json: bool) -> String {
    if json {
        return group_json(g).to_string();
    }
    pairs(&[
        ("group", g.group.clone()),
        ("ready", g.ready.to_string()),
        ("active", g.active.to_string()),
        ("paused", g.paused.to_string()),
        ("concurrency", opt(g.concurrency)),
        ("rate", rate_text(&g.rate)),
        ("latency", opt(g.latency.map(super::admin::latency_text))),
        ("limiter", opt(g.limiter.as_deref())),
    ])
}

/// A queue's groups (`Queue::groups`), one row each.
pub fn groups(list: &[GroupInfo], json: bool) -> String {
    if json {
        return Value::Array(list.iter().map(group_json).collect()).to_string();
    }
    if list.is_empty() {
        return "(no groups)".to_string();
    }
    let mut t = Table::new(&["GROUP", "READY", "ACTIVE", "PAUSED", "CONCURRENCY", "RATE"]);
    for g in list {
        t.row(vec![
            g.group.clone(),
            g.ready.to_string(),
            g.active.to_string(),
            g.paused.to_string(),
            opt(g.concurrency),
            rate_text(&g.rate),
        ]);
    }
    t.render()
}

/// One page of groups, then where the next page starts.
pub fn groups_page(page: &GroupPage, json: bool) -> String {
    if json {
        return json!({
            "groups": page.groups.iter().map(group_json).collect::<Vec<_>>(),
            "cursor": page.cursor,
        })
        .to_string();
    }
    groups(&page.groups, false)
}
