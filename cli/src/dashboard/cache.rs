//! The dashboard's cache: what one refresh loop last read of every queue, and the throughput
//! series computed from the counters' deltas between refreshes. `/api/overview` is answered from
//! it alone, so Redis sees the loop's load however many pages poll.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};
use tideq::{
    CappedOptions, CappedQueue, CappedStats, Client, JobStats, Queue, QueueKind, QueueOptions,
    QueueRef,
};

use crate::exporter::{queue_list, DISCOVER_EVERY};
use crate::render;

/// Points kept per throughput series (20 minutes at the default refresh).
pub const SERIES_LEN: usize = 120;

/// What one read of a queue gave.
#[derive(Clone)]
enum Counts {
    Jobs(JobStats),
    Capped(CappedStats),
}

impl Counts {
    /// The counters throughput is computed from: (finished, added) — completed and enqueued
    /// jobs, or delivered and pushed items.
    fn counters(&self) -> (u64, u64) {
        match self {
            Counts::Jobs(s) => (s.completed, s.enqueued),
            Counts::Capped(s) => (s.delivered, s.pushed),
        }
    }
}

/// One throughput point: when (ms since the epoch) and per-second rates over the last interval.
#[derive(Clone, Copy, Default)]
struct Point {
    at_ms: u64,
    completed: f64,
    enqueued: f64,
}

impl Point {
    fn json(&self) -> Value {
        // Two decimals are plenty for a chart and keep the document small.
        let r = |v: f64| (v * 100.0).round() / 100.0;
        json!([self.at_ms, r(self.completed), r(self.enqueued)])
    }
}

struct Entry {
    queue: QueueRef,
    counts: Option<Counts>,
    error: Option<String>,
    /// The counters at the last refresh, to compute the next point from.
    last: Option<(Instant, u64, u64)>,
    series: VecDeque<Point>,
}

#[derive(Default)]
struct Snapshot {
    entries: Vec<Entry>,
    total: VecDeque<Point>,
    refreshed_at_ms: u64,
    refreshes: u64,
    error: Option<String>,
}

pub struct Cache {
    pub refresh: Duration,
    inner: Mutex<Snapshot>,
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

fn push(series: &mut VecDeque<Point>, p: Point) {
    if series.len() == SERIES_LEN {
        series.pop_front();
    }
    series.push_back(p);
}

/// Reads one queue's counts: `stats()` (which holds `paused` too, so `is_paused()` is not
/// called: one command less per refresh).
async fn read(client: &Client, r: &QueueRef) -> tideq::Result<Counts> {
    match r.kind {
        QueueKind::Jobs => {
            let q = Queue::sharded(client, &r.name, r.shards, QueueOptions::default())?;
            Ok(Counts::Jobs(q.stats().await?))
        }
        QueueKind::Capped => {
            let q = CappedQueue::sharded(client, &r.name, r.shards, CappedOptions::default())?;
            Ok(Counts::Capped(q.stats().await?))
        }
    }
}

impl Cache {
    pub fn new(refresh: Duration) -> Self {
        Cache {
            refresh,
            inner: Mutex::new(Snapshot::default()),
        }
    }

    /// The first discovery and read (before the server answers), giving the queue list.
    pub async fn first(&self, client: &Client, shards: usize, named: &[String]) -> Vec<QueueRef> {
        let queues = queue_list(client, shards, named, "dashboard").await;
        self.refresh_once(client, &queues).await;
        queues
    }

    /// The refresh loop, after [`first`](Self::first): reads the queues every `refresh`,
    /// discovers them again every minute (unless they are `named`).
    pub async fn run(
        &self,
        client: Client,
        shards: usize,
        named: Vec<String>,
        first: Vec<QueueRef>,
    ) {
        let mut queues = first;
        let mut last_discovery = Instant::now();
        loop {
            tokio::time::sleep(self.refresh).await;
            if named.is_empty() && last_discovery.elapsed() >= DISCOVER_EVERY {
                queues = queue_list(&client, shards, &named, "dashboard").await;
                last_discovery = Instant::now();
            }
            self.refresh_once(&client, &queues).await;
        }
    }

    /// Reads every queue once and folds the counts in (with a throughput point per queue once it
    /// has an earlier reading).
    async fn refresh_once(&self, client: &Client, queues: &[QueueRef]) {
        let mut read_now = Vec::with_capacity(queues.len());
        for r in queues {
            read_now.push((r.clone(), read(client, r).await));
        }
        let at = Instant::now();
        let at_ms = now_ms();
        let mut s = self.inner.lock().unwrap();
        let mut old: HashMap<(QueueKind, String), Entry> = s
            .entries
            .drain(..)
            .map(|e| ((e.queue.kind, e.queue.name.clone()), e))
            .collect();
        let mut total = Point {
            at_ms,
            ..Point::default()
        };
        let mut any_point = false;
        let mut error = None;
        for (r, got) in read_now {
            let mut e = old.remove(&(r.kind, r.name.clone())).unwrap_or(Entry {
                queue: r.clone(),
                counts: None,
                error: None,
                last: None,
                series: VecDeque::new(),
            });
            e.queue = r;
            match got {
                Ok(counts) => {
                    let (done, added) = counts.counters();
                    if let Some((t, done0, added0)) = e.last {
                        let secs = at.duration_since(t).as_secs_f64();
                        if secs > 0.0 {
                            let p = Point {
                                at_ms,
                                completed: done.saturating_sub(done0) as f64 / secs,
                                enqueued: added.saturating_sub(added0) as f64 / secs,
                            };
                            total.completed += p.completed;
                            total.enqueued += p.enqueued;
                            any_point = true;
                            push(&mut e.series, p);
                        }
                    }
                    e.last = Some((at, done, added));
                    e.counts = Some(counts);
                    e.error = None;
                }
                Err(err) => {
                    let text = format!("{} {:?}: {err}", e.queue.kind.as_str(), e.queue.name);
                    eprintln!("tideq dashboard: refresh: {text}");
                    e.error = Some(err.to_string());
                    error = Some(text);
                }
            }
            s.entries.push(e);
        }
        if any_point {
            push(&mut s.total, total);
        }
        s.refreshed_at_ms = at_ms;
        s.refreshes += 1;
        s.error = error;
    }

    /// The queue of `kind` named `name`, if the dashboard shows it.
    pub fn find(&self, kind: QueueKind, name: &str) -> Option<QueueRef> {
        let s = self.inner.lock().unwrap();
        s.entries
            .iter()
            .find(|e| e.queue.kind == kind && e.queue.name == name)
            .map(|e| e.queue.clone())
    }

    /// Reads one queue again after a change made through the dashboard, so the overview shows
    /// it at once (its throughput baseline is kept: the next point still spans a whole refresh).
    pub async fn reread(&self, client: &Client, r: &QueueRef) {
        if let Ok(counts) = read(client, r).await {
            let mut s = self.inner.lock().unwrap();
            if let Some(e) = s
                .entries
                .iter_mut()
                .find(|e| e.queue.kind == r.kind && e.queue.name == r.name)
            {
                e.counts = Some(counts);
                e.error = None;
            }
        }
    }

    /// The overview document: every queue with its counts and throughput, and the total.
    pub fn overview(&self, read_only: bool) -> Value {
        let s = self.inner.lock().unwrap();
        let queues: Vec<Value> = s
            .entries
            .iter()
            .map(|e| {
                let (stats, paused) = match &e.counts {
                    Some(Counts::Jobs(st)) => (render::stats_json(st), json!(st.paused)),
                    Some(Counts::Capped(st)) => (render::capped_stats_json(st), Value::Null),
                    None => (Value::Null, Value::Null),
                };
                json!({
                    "kind": e.queue.kind.as_str(),
                    "name": e.queue.name,
                    "shards": e.queue.shards,
                    "stats": stats,
                    "paused": paused,
                    "error": e.error,
                    "throughput": e.series.iter().map(Point::json).collect::<Vec<_>>(),
                })
            })
            .collect();
        json!({
            "queues": queues,
            "throughput": s.total.iter().map(Point::json).collect::<Vec<_>>(),
            "throughput_fields": ["at_ms", "completed_per_s", "enqueued_per_s"],
            "refreshed_at_ms": s.refreshed_at_ms,
            "refreshes": s.refreshes,
            "refresh_secs": self.refresh.as_secs_f64(),
            "error": s.error,
            "read_only": read_only,
        })
    }
}
