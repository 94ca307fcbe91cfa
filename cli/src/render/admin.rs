//! A job queue read by `stats`, `jobs`, `job`, `search` and `dead list` (the core's `admin`
//! role), and a flow job's place in its flow: its parent, its children and how each ended.

use serde_json::{json, Value};
use tideq::{ChildInfo, ChildOutcome, ChildPage, JobInfo, JobState, JobStats};

use super::{
    kind, local_time, one_line, opt, pairs, pretty, preview, when, Payload, Table, ERROR_WIDTH,
};

pub fn stats_json(s: &JobStats) -> Value {
    json!({
        "delayed": s.delayed,
        "ready": s.ready,
        "active": s.active,
        "dead": s.dead,
        "waiting": s.waiting,
        "completed_kept": s.completed_kept,
        "enqueued": s.enqueued,
        "completed": s.completed,
        "dead_lettered": s.dead_lettered,
        "retried": s.retried,
        "recovered": s.recovered,
        "cancelled": s.cancelled,
        "snoozed": s.snoozed,
        "expired": s.expired,
        "dead_trimmed": s.dead_trimmed,
        "lost": s.lost,
        "paused": s.paused,
        "latency": secs(s.latency),
    })
}

/// A duration as seconds to the ms (JSON), the unit the exporter's gauge uses.
pub fn secs(d: std::time::Duration) -> f64 {
    d.as_millis() as f64 / 1000.0
}

/// A latency as text: seconds to the ms, with its unit.
pub fn latency_text(d: std::time::Duration) -> String {
    format!("{:.3}s", secs(d))
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
        "waiting",
        "completed_kept",
        "enqueued",
        "completed",
        "dead_lettered",
        "retried",
        "recovered",
        "cancelled",
        "snoozed",
        "expired",
        "dead_trimmed",
        "lost",
        "paused",
    ]
    .into_iter()
    .map(|k| {
        // Completed jobs kept (what `jobs QUEUE completed` lists) and the lifetime counter,
        // each said for what it is.
        let label = match k {
            "completed_kept" => "completed (kept)",
            "completed" => "completed (in all)",
            k => k,
        };
        (label, v[k].to_string())
    })
    .chain([("latency", latency_text(s.latency))])
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
        "task": j.task,
        "state": j.state.as_str(),
        "attempts": j.attempts,
        "max_attempts": j.max_attempts,
        "last_error": j.last_error,
        "enqueued_at": j.enqueued_at,
        "state_since_or_until": j.state_since_or_until,
        "priority": j.priority,
        "group": j.group,
        "cost": j.cost,
        "unreadable": j.unreadable,
        "payload": payload,
        "payload_format": kind(payload_kind),
        "payload_len": j.payload.len(),
        "result": result,
        "result_format": result_kind,
        "progress": progress,
        "progress_format": progress_kind,
        "parent": j.parent.as_ref().map(|p| json!({"queue": p.queue, "id": p.id})),
        "parents": j.parents.iter().map(|p| json!({"queue": p.queue, "id": p.id})).collect::<Vec<_>>(),
        "children_pending": j.children_pending,
        "started_at": j.started_at,
        "run_ms": j.run_ms,
        "worker": j.worker,
    })
}

pub fn job_list_json(jobs: &[JobInfo]) -> Value {
    Value::Array(jobs.iter().map(|j| job_json(j, None)).collect())
}

/// What a job's `state_since_or_until` is, by state (`None`: ready and waiting jobs have none).
fn since_or_until(state: JobState) -> Option<(&'static str, &'static str)> {
    match state {
        JobState::Delayed => Some(("due_at", "DUE")),
        JobState::Active => Some(("lease_until", "LEASE UNTIL")),
        JobState::Dead => Some(("died_at", "DIED")),
        JobState::Completed => Some(("finished_at", "FINISHED")),
        JobState::Ready | JobState::Waiting => None,
    }
}

pub fn job_list(jobs: &[JobInfo], json: bool) -> String {
    if json {
        return job_list_json(jobs).to_string();
    }
    if jobs.is_empty() {
        return "(no jobs)".to_string();
    }
    // One state per listing: its time column (a delayed job's due time, a dead one's time of
    // death, ...), or when the job was enqueued.
    let when_column = since_or_until(jobs[0].state)
        .filter(|_| jobs.iter().all(|j| j.state == jobs[0].state))
        .map_or("ENQUEUED", |(_, header)| header);
    let mut t = Table::new(&[
        "ID",
        "TASK",
        "STATE",
        "ATTEMPTS",
        "PRIORITY",
        "GROUP",
        when_column,
        "LAST ERROR",
    ]);
    for j in jobs {
        let at = match when_column {
            "ENQUEUED" => Some(j.enqueued_at),
            _ => j.state_since_or_until,
        };
        t.row(vec![
            j.id.clone(),
            opt(j.task.as_ref()),
            j.state.as_str().to_string(),
            format!("{}/{}", j.attempts, j.max_attempts),
            opt(j.priority),
            opt(j.group.as_ref()),
            at.map(local_time).unwrap_or_else(|| "-".to_string()),
            j.last_error
                .as_deref()
                .map(|e| one_line(e, ERROR_WIDTH))
                .unwrap_or_else(|| "-".to_string()),
        ]);
    }
    t.render()
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
    let mut items: Vec<(&str, String)> = vec![
        ("id", j.id.clone()),
        ("task", opt(j.task.as_ref())),
        ("state", j.state.as_str().to_string()),
        ("attempts", format!("{}/{}", j.attempts, j.max_attempts)),
        ("enqueued_at", when(j.enqueued_at)),
    ];
    if let (Some((name, _)), Some(at)) = (since_or_until(j.state), j.state_since_or_until) {
        items.push((name, when(at)));
    }
    items.extend(super::run_rows(j));
    items.extend([
        ("priority", opt(j.priority)),
        ("group", opt(j.group.as_ref())),
        ("last_error", opt(j.last_error.as_ref())),
    ]);
    if j.cost != 1 {
        items.push(("cost", j.cost.to_string()));
    }
    if j.parents.len() > 1 {
        let all: Vec<String> = j
            .parents
            .iter()
            .map(|p| format!("{} (queue {})", p.id, p.queue))
            .collect();
        items.push(("parents", all.join(", ")));
    } else if let Some(p) = &j.parent {
        items.push(("parent", format!("{} (queue {})", p.id, p.queue)));
    }
    if let Some(n) = j.children_pending {
        items.push(("children_pending", n.to_string()));
    }
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

pub fn job_page(page: &tideq::JobPage, json: bool) -> String {
    if json {
        return json!({"jobs": job_list_json(&page.jobs), "cursor": page.cursor}).to_string();
    }
    if page.jobs.is_empty() && page.cursor.is_some() {
        // A page that found none yet, with more to look at (grouped ready jobs are looked for
        // among the delayed and running ones, a bounded number a call): not "no jobs".
        return "(none found yet; more to look at)".to_string();
    }
    job_list(&page.jobs, false)
}

/// A page of `tideq search`: the jobs as `tideq jobs` lists them, how many jobs the call looked
/// at, and the cursor to go on with.
pub fn search_page(page: &tideq::JobSearch, json: bool) -> String {
    if json {
        return json!({
            "jobs": job_list_json(&page.jobs),
            "cursor": page.cursor,
            "scanned": page.scanned,
        })
        .to_string();
    }
    let text = format!(
        "{}\n({} found among {} jobs looked at{})",
        job_list(&page.jobs, false),
        page.jobs.len(),
        page.scanned,
        if page.cursor.is_some() {
            "; more to search"
        } else {
            "; search done"
        }
    );
    text
}

/// A flow child: its queue, id, how it ended (`"pending"` until it has) and the error of one that
/// failed, expired or was ignored (a completed child's result is on its own job page).
pub fn child_json(c: &ChildInfo) -> Value {
    let error = match &c.outcome {
        Some(ChildOutcome::Failed(e) | ChildOutcome::Expired(e) | ChildOutcome::Ignored(e)) => {
            Some(e.as_str())
        }
        _ => None,
    };
    json!({
        "queue": c.queue,
        "id": c.id,
        "outcome": c.outcome.as_ref().map_or("pending", ChildOutcome::as_str),
        "error": error,
    })
}

pub fn children_json(page: &ChildPage) -> Value {
    Value::Array(page.children.iter().map(child_json).collect())
}

/// A job's fields, `children` (the page of its children shown) and `children_total` (how many it
/// has): `tideq job --json` and the dashboard's job.
pub fn job_and_children_json(j: &JobInfo, kids: &ChildPage, how: Option<Payload>) -> Value {
    let mut v = job_json(j, how);
    super::add_attempts_json(&mut v, j);
    v["children"] = children_json(kids);
    v["children_total"] = kids.total.into();
    v
}

/// `tideq job`: the job, then the page of its children shown and how many it has.
pub fn job_and_children(j: &JobInfo, kids: &ChildPage, how: Option<Payload>, json: bool) -> String {
    if json {
        return job_and_children_json(j, kids, how).to_string();
    }
    let text = job(j, how, false) + &super::attempts_text(j);
    if kids.total == 0 {
        return text;
    }
    let shown = kids.children.len() as u64;
    let count = if shown < kids.total {
        format!("{} (the first {shown} shown)", kids.total)
    } else {
        kids.total.to_string()
    };
    let mut t = Table::new(&["QUEUE", "ID", "OUTCOME", "ERROR"]);
    for c in &kids.children {
        let v = child_json(c);
        t.row(vec![
            c.queue.clone(),
            c.id.clone(),
            v["outcome"].as_str().unwrap_or("").to_string(),
            v["error"]
                .as_str()
                .map(|e| one_line(e, ERROR_WIDTH))
                .unwrap_or_else(|| "-".to_string()),
        ]);
    }
    format!("{text}\n\nchildren: {count}\n{}", t.render())
}
