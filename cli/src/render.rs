//! The core's values as aligned text or as one JSON document. Field names are the core's.

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};
use tideq::{
    CappedGroupPage, CappedStats, Enqueued, GroupInfo, GroupPage, JobInfo, JobStats, Limits,
    Peeked, Rate,
};

/// The password `tideq acl` prints in the ACL SETUSER line, to be replaced.
pub const PASSWORD_PLACEHOLDER: &str = "CHANGE-ME";

/// Longest last error shown in a job table, in characters.
const ERROR_WIDTH: usize = 60;
/// Longest item shown in a `capped peek` table, in characters.
const ITEM_WIDTH: usize = 100;

/// How to show a payload (and a result or progress value).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Payload {
    Json,
    Text,
    Hex,
}

/// `bytes` shown as `how`, or the first of JSON, text, hex that fits; with the way chosen.
/// A forced form that does not fit falls back to hex (a forced `hex` always fits).
pub fn preview(bytes: &[u8], how: Option<Payload>) -> (Payload, Value) {
    let as_json = || serde_json::from_slice::<Value>(bytes).ok();
    let as_text = || std::str::from_utf8(bytes).ok().map(|s| s.to_string());
    match how {
        Some(Payload::Json) | None => {
            if let Some(v) = as_json() {
                return (Payload::Json, v);
            }
            if let Some(t) = as_text() {
                if how.is_none() {
                    return (Payload::Text, Value::String(t));
                }
            }
        }
        Some(Payload::Text) => {
            if let Some(t) = as_text() {
                return (Payload::Text, Value::String(t));
            }
        }
        Some(Payload::Hex) => {}
    }
    (Payload::Hex, Value::String(hex(bytes)))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn kind(p: Payload) -> &'static str {
    match p {
        Payload::Json => "json",
        Payload::Text => "text",
        Payload::Hex => "hex",
    }
}

/// Aligned columns: a header row and rows, two spaces apart.
pub struct Table {
    rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(header: &[&str]) -> Self {
        Table {
            rows: vec![header.iter().map(|s| s.to_string()).collect()],
        }
    }

    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    pub fn render(&self) -> String {
        let cols = self.rows[0].len();
        let widths: Vec<usize> = (0..cols)
            .map(|c| {
                self.rows
                    .iter()
                    .map(|r| r[c].chars().count())
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let lines: Vec<String> = self
            .rows
            .iter()
            .map(|r| {
                let cells: Vec<String> = r
                    .iter()
                    .enumerate()
                    .map(|(i, cell)| {
                        let pad = widths[i] - cell.chars().count();
                        format!("{cell}{}", " ".repeat(pad))
                    })
                    .collect();
                cells.join("  ").trim_end().to_string()
            })
            .collect();
        lines.join("\n")
    }
}

/// `name  value` lines, names padded to one width.
pub fn pairs(items: &[(&str, String)]) -> String {
    let w = items.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    items
        .iter()
        .map(|(k, v)| format!("{k:<w$}  {v}"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_default()
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map(|v| v.to_string()).unwrap_or_else(|| "-".to_string())
}

pub fn stats_json(s: &JobStats) -> Value {
    json!({
        "delayed": s.delayed,
        "ready": s.ready,
        "active": s.active,
        "dead": s.dead,
        "enqueued": s.enqueued,
        "completed": s.completed,
        "dead_lettered": s.dead_lettered,
        "retried": s.retried,
        "recovered": s.recovered,
        "cancelled": s.cancelled,
        "dead_trimmed": s.dead_trimmed,
        "lost": s.lost,
        "paused": s.paused,
    })
}

pub fn stats(s: &JobStats, json: bool) -> String {
    let v = stats_json(s);
    if json {
        return v.to_string();
    }
    let items: Vec<(&str, String)> = [
        "delayed",
        "ready",
        "active",
        "dead",
        "enqueued",
        "completed",
        "dead_lettered",
        "retried",
        "recovered",
        "cancelled",
        "dead_trimmed",
        "lost",
        "paused",
    ]
    .into_iter()
    .map(|k| (k, v[k].to_string()))
    .collect();
    pairs(&items)
}

pub fn job_json(j: &JobInfo, how: Option<Payload>) -> Value {
    let shown = |b: &Option<Vec<u8>>| match b {
        None => (Value::Null, Value::Null),
        Some(b) => {
            let (k, v) = preview(b, how);
            (Value::String(kind(k).to_string()), v)
        }
    };
    let (payload_kind, payload) = preview(&j.payload, how);
    let (result_kind, result) = shown(&j.result);
    let (progress_kind, progress) = shown(&j.progress);
    json!({
        "id": j.id,
        "state": j.state.as_str(),
        "attempts": j.attempts,
        "max_attempts": j.max_attempts,
        "last_error": j.last_error,
        "enqueued_at": j.enqueued_at,
        "state_since_or_until": j.state_since_or_until,
        "priority": j.priority,
        "group": j.group,
        "unreadable": j.unreadable,
        "payload": payload,
        "payload_format": kind(payload_kind),
        "payload_len": j.payload.len(),
        "result": result,
        "result_format": result_kind,
        "progress": progress,
        "progress_format": progress_kind,
    })
}

fn one_line(s: &str, max: usize) -> String {
    let flat: String = s
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if flat.chars().count() <= max {
        return flat;
    }
    let cut: String = flat.chars().take(max.saturating_sub(1)).collect();
    format!("{cut}…")
}

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

fn every(s: &tideq::ScheduleInfo) -> String {
    match &s.every {
        tideq::Every::Cron { pattern, timezone } => match timezone {
            Some(tz) => format!("cron {pattern} ({tz})"),
            None => format!("cron {pattern}"),
        },
        tideq::Every::Interval(d) => format!("every {} ms", d.as_millis()),
    }
}

pub fn schedules_json(list: &[tideq::ScheduleInfo]) -> Value {
    let all: Vec<Value> = list
        .iter()
        .map(|s| {
            json!({
                "name": s.name,
                "every": every(s),
                "next_run_ms": s.next_run_ms,
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
    let mut t = Table::new(&["NAME", "WHEN", "NEXT RUN", "TASK"]);
    for s in list {
        t.row(vec![
            s.name.clone(),
            every(s),
            s.next_run_ms.map(when).unwrap_or_else(|| "-".to_string()),
            s.options.task.clone().unwrap_or_else(|| "-".to_string()),
        ]);
    }
    t.render()
}

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
    format!("{} {:<9} {} {data}", e.at_ms, e.kind.as_str(), e.job_id)
}

pub fn job_list_json(jobs: &[JobInfo]) -> Value {
    Value::Array(jobs.iter().map(|j| job_json(j, None)).collect())
}

pub fn job_list(jobs: &[JobInfo], json: bool) -> String {
    if json {
        return job_list_json(jobs).to_string();
    }
    if jobs.is_empty() {
        return "(no jobs)".to_string();
    }
    let mut t = Table::new(&["ID", "STATE", "ATTEMPTS", "PRIORITY", "GROUP", "LAST ERROR"]);
    for j in jobs {
        t.row(vec![
            j.id.clone(),
            j.state.as_str().to_string(),
            format!("{}/{}", j.attempts, j.max_attempts),
            opt(j.priority),
            j.group.clone().unwrap_or_else(|| "-".to_string()),
            j.last_error
                .as_deref()
                .map(|e| one_line(e, ERROR_WIDTH))
                .unwrap_or_else(|| "-".to_string()),
        ]);
    }
    t.render()
}

/// A timestamp (ms since the epoch) with how far it is from now.
fn when(ms: u64) -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i128)
        .unwrap_or(0);
    let delta = (ms as i128 - now) as f64 / 1000.0;
    if delta >= 0.0 {
        format!("{ms} (in {delta:.1} s)")
    } else {
        format!("{ms} ({:.1} s ago)", -delta)
    }
}

pub fn job(j: &JobInfo, how: Option<Payload>, json: bool) -> String {
    let v = job_json(j, how);
    if json {
        return v.to_string();
    }
    let show = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => pretty(other),
    };
    let since = match j.state {
        tideq::JobState::Delayed => "due_at",
        tideq::JobState::Active => "lease_until",
        _ => "state_since",
    };
    let mut items: Vec<(&str, String)> = vec![
        ("id", j.id.clone()),
        ("state", j.state.as_str().to_string()),
        ("attempts", format!("{}/{}", j.attempts, j.max_attempts)),
        ("enqueued_at", when(j.enqueued_at)),
        (
            since,
            j.state_since_or_until.map(when).unwrap_or("-".into()),
        ),
        ("priority", opt(j.priority)),
        ("group", opt(j.group.as_ref())),
        ("last_error", opt(j.last_error.as_ref())),
    ];
    if let Some(why) = &j.unreadable {
        items.push(("unreadable", why.clone()));
    }
    items.push((
        "payload",
        format!(
            "({}, {} bytes)\n{}",
            v["payload_format"].as_str().unwrap_or(""),
            j.payload.len(),
            show(&v["payload"])
        ),
    ));
    for (name, fmt) in [("result", "result_format"), ("progress", "progress_format")] {
        if !v[name].is_null() {
            items.push((
                name,
                format!("({})\n{}", v[fmt].as_str().unwrap_or(""), show(&v[name])),
            ));
        }
    }
    pairs(&items)
}

fn rate_json(r: &Option<Rate>) -> Value {
    match r {
        None => Value::Null,
        Some(r) => json!({"max": r.max, "per_ms": r.per.as_millis() as u64}),
    }
}

fn rate_text(r: &Option<Rate>) -> String {
    match r {
        None => "-".to_string(),
        Some(r) => format!("{} per {} ms", r.max, r.per.as_millis()),
    }
}

pub fn limits_json(l: &Limits) -> Value {
    json!({
        "max_active": l.max_active,
        "rate": rate_json(&l.rate),
        "group_concurrency": l.group_concurrency,
        "group_rate": rate_json(&l.group_rate),
    })
}

pub fn limits(l: &Limits, json: bool) -> String {
    if json {
        return limits_json(l).to_string();
    }
    pairs(&[
        ("max_active", opt(l.max_active)),
        ("rate", rate_text(&l.rate)),
        ("group_concurrency", opt(l.group_concurrency)),
        ("group_rate", rate_text(&l.group_rate)),
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
    with_cursor(groups(&page.groups, false), &page.cursor)
}

pub fn job_page(page: &tideq::JobPage, json: bool) -> String {
    if json {
        return json!({"jobs": job_list_json(&page.jobs), "cursor": page.cursor}).to_string();
    }
    with_cursor(job_list(&page.jobs, false), &page.cursor)
}

fn with_cursor(text: String, cursor: &Option<String>) -> String {
    match cursor {
        Some(c) => format!("{text}\nnext page: --cursor {c}"),
        None => text,
    }
}

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

pub fn capped_stats_json(s: &CappedStats) -> Value {
    json!({
        "pushed": s.pushed,
        "dropped": s.dropped,
        "discarded": s.discarded,
        "delivered": s.delivered,
        "groups": s.groups,
    })
}

pub fn capped_stats(s: &CappedStats, json: bool) -> String {
    let v = capped_stats_json(s);
    if json {
        return v.to_string();
    }
    let items: Vec<(&str, String)> = ["pushed", "dropped", "discarded", "delivered", "groups"]
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
    with_cursor(names(&page.groups, false), &page.cursor)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preview_picks_json_then_text_then_hex() {
        assert_eq!(
            preview(br#"{"a":1}"#, None),
            (Payload::Json, json!({"a": 1}))
        );
        assert_eq!(
            preview(b"hi there", None),
            (Payload::Text, json!("hi there"))
        );
        assert_eq!(preview(&[0xff, 0x00], None), (Payload::Hex, json!("ff00")));
        assert_eq!(
            preview(b"12", Some(Payload::Text)),
            (Payload::Text, json!("12"))
        );
        assert_eq!(
            preview(b"hi", Some(Payload::Hex)),
            (Payload::Hex, json!("6869"))
        );
    }

    #[test]
    fn tables_align_and_errors_are_cut() {
        let mut t = Table::new(&["A", "BB"]);
        t.row(vec!["long".into(), "x".into()]);
        assert_eq!(t.render(), "A     BB\nlong  x");
        assert_eq!(one_line("a\nb", 10), "a b");
        assert_eq!(one_line("abcdef", 4), "abc…");
    }
}
