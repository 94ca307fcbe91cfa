//! The dashboard's cache: what one refresh loop last read of every queue, and the throughput
//! series computed from the counters' deltas between refreshes. `/api/overview` is answered from
//! it alone, so Redis sees the loop's load however many pages poll.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};
use tideq::{CappedStats, Client, JobStats, QueueKind, QueueRef};

use crate::exporter::{Discovery, Handles};
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
    /// Shards of the named queues (`None`: the count each recorded), and the named queues
    /// (none: every queue found).
    shards: Option<usize>,
    named: Vec<String>,
    /// The queues shown, as last discovered (or named).
    queues: Mutex<Vec<QueueRef>>,
    /// When queues were last discovered (None before the first pass).
    discovery: tokio::sync::Mutex<Option<Discovery>>,
    /// Wakes the refresh loop early (a queue was found on a request's behalf).
    wake: tokio::sync::Notify,
    /// The queue handles, kept from one refresh (and request) to the next.
    pub handles: Handles,
    /// The history documents read lately, by queue and window: when, and the document.
    histories: Mutex<HashMap<(String, u64), (Instant, Value)>>,
    /// The health panel's document, as last read.
    pub health: super::health::Health,
}

/// A queue's history (which gains a point a minute) is read from Redis at most this often per
/// window, however many pages show it.
pub const HISTORY_FRESH: Duration = Duration::from_secs(30);

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
/// called: one command less per refresh), without the latency, which a queue's page reads (the
/// queue's API) when it is open: no script call per queue and refresh.
async fn read(client: &Client, handles: &Handles, r: &QueueRef) -> tideq::Result<Counts> {
    match r.kind {
        QueueKind::Jobs => {
            let q = handles.jobs(client, &r.name, r.shards)?;
            Ok(Counts::Jobs(q.stats_counts().await?))
        }
        QueueKind::Capped => {
            let q = handles.capped(client, &r.name, r.shards)?;
            Ok(Counts::Capped(q.stats().await?))
        }
    }
}

impl Cache {
    pub fn new(refresh: Duration, shards: Option<usize>, named: Vec<String>) -> Self {
        Cache {
            refresh,
            inner: Mutex::new(Snapshot::default()),
            shards,
            named,
            queues: Mutex::new(Vec::new()),
            discovery: tokio::sync::Mutex::new(None),
            wake: tokio::sync::Notify::new(),
            handles: Handles::default(),
            histories: Mutex::new(HashMap::new()),
            health: Default::default(),
        }
    }

    /// The first discovery and read (before the server answers).
    pub async fn first(&self, client: &Client) {
        self.discover(client).await;
        let queues = self.queues.lock().unwrap().clone();
        self.refresh_once(client, &queues).await;
    }

    /// Discovers the queues (or takes the named ones) and keeps the list.
    async fn discover(&self, client: &Client) {
        let mut d = self.discovery.lock().await;
        self.discover_with(client, &mut d).await;
    }

    async fn discover_with(&self, client: &Client, d: &mut Option<Discovery>) {
        let queues = match d.as_mut() {
            Some(d) => d.again(client, self.shards, &self.named, "dashboard").await,
            None => {
                let (first, queues) =
                    Discovery::first(client, self.shards, &self.named, "dashboard").await;
                *d = Some(first);
                queues
            }
        };
        self.handles.keep_only(&queues);
        *self.queues.lock().unwrap() = queues;
    }

    /// The refresh loop, after [`first`](Self::first): reads the queues every `refresh`, and
    /// discovers them again when a pass is due ([`Discovery`]: every refresh on a small
    /// keyspace), unless they are named.
    pub async fn run(&self, client: Client) {
        loop {
            tokio::select! {
                _ = tokio::time::sleep(self.refresh) => {}
                _ = self.wake.notified() => {}
            }
            let due = self
                .discovery
                .lock()
                .await
                .as_ref()
                .is_none_or(|d| d.due(self.refresh));
            if self.named.is_empty() && due {
                self.discover(&client).await;
            }
            let queues = self.queues.lock().unwrap().clone();
            self.refresh_once(&client, &queues).await;
        }
    }

    /// Reads every queue once and folds the counts in (with a throughput point per queue once it
    /// has an earlier reading).
    async fn refresh_once(&self, client: &Client, queues: &[QueueRef]) {
        let mut read_now = Vec::with_capacity(queues.len());
        for r in queues {
            read_now.push((r.clone(), read(client, &self.handles, r).await));
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

    /// The history document of `queue` over `window` seconds, if read in the last
    /// [`HISTORY_FRESH`].
    pub fn history(&self, queue: &str, window: u64) -> Option<Value> {
        let h = self.histories.lock().unwrap();
        h.get(&(queue.to_string(), window))
            .filter(|(at, _)| at.elapsed() < HISTORY_FRESH)
            .map(|(_, v)| v.clone())
    }

    /// Keeps a history document just read (and forgets the stale ones).
    pub fn keep_history(&self, queue: &str, window: u64, v: Value) {
        let mut h = self.histories.lock().unwrap();
        h.retain(|_, (at, _)| at.elapsed() < HISTORY_FRESH);
        h.insert((queue.to_string(), window), (Instant::now(), v));
    }

    /// The queues shown (as last discovered, or named).
    pub fn shown(&self) -> Vec<QueueRef> {
        self.queues.lock().unwrap().clone()
    }

    /// The queue of `kind` named `name`, if the dashboard shows it.
    fn find(&self, kind: QueueKind, name: &str) -> Option<QueueRef> {
        self.queues
            .lock()
            .unwrap()
            .iter()
            .find(|q| q.kind == kind && q.name == name)
            .cloned()
    }

    /// The queue of `kind` named `name`; one not shown yet is looked for at once (a new queue
    /// opened by its address) by its own key only, the one recording its shard count (one `GET`:
    /// requests for names that are no queue cost Redis no more than that, and never a SCAN).
    /// A queue found so is shown from then on, and the refresh loop is woken to read it. A queue
    /// that recorded no count (last written by a tideq that did not) shows at the next
    /// discovery pass.
    pub async fn find_or_look(
        &self,
        client: &Client,
        kind: QueueKind,
        name: &str,
    ) -> Option<QueueRef> {
        if let Some(r) = self.find(kind, name) {
            return Some(r);
        }
        if !self.named.is_empty() {
            return None;
        }
        let shards = client.recorded_shards(kind, name).await.ok().flatten()?;
        let r = QueueRef {
            kind,
            name: name.to_string(),
            shards,
        };
        {
            let mut queues = self.queues.lock().unwrap();
            if !queues.iter().any(|q| q.kind == kind && q.name == name) {
                queues.push(r.clone());
                queues.sort();
            }
        }
        self.wake.notify_one();
        Some(r)
    }

    /// Reads one queue again after a change made through the dashboard, so the overview shows
    /// it at once (its throughput baseline is kept: the next point still spans a whole refresh).
    pub async fn reread(&self, client: &Client, r: &QueueRef) {
        if let Ok(counts) = read(client, &self.handles, r).await {
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
                    Some(Counts::Jobs(st)) => {
                        // Not read by the refresh (see `read`): the queue's API has it.
                        let mut v = render::stats_json(st);
                        v.as_object_mut().map(|o| o.remove("latency"));
                        (v, json!(st.paused))
                    }
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
