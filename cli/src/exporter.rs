//! `tideq exporter`: Prometheus metrics of the queues under the prefix, served at `/metrics`.
//! A refresh loop reads every queue's metrics (`Queue::metrics`, `CappedQueue::stats`) each
//! `--refresh` seconds and keeps the text; scrapes are answered from it, so however often
//! Prometheus scrapes, Redis sees the same load: per job queue (shard) and refresh, one pipeline
//! for its stats (6 commands) and one for its histograms, workers and flow parents waiting for
//! their children (3, the last `tideq_jobs{state="waiting"}`), and its per-task totals (one
//! HGETALL of at most 505 fields per shard): 1.0 commands per second per queue at the default
//! 10 s. Per-task series: at most 101 tasks per queue shard (see [`task_lines`]). Queues are discovered again (SCAN) at every refresh while a pass over the
//! keyspace is quick, less often on a big one (see [`Discovery`]), unless named.
//!
//! Formats: a scraper that accepts `application/openmetrics-text` (Prometheus does, first) gets
//! OpenMetrics; any other gets the Prometheus text format 0.0.4, each labelled as what it is.
//! Requests must name a host the exporter answers (`hosts.rs`: loopback names, `--allow-host`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::header::{ACCEPT, CONTENT_TYPE, HOST};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use tideq::{CappedOptions, CappedQueue, Client, Queue, QueueKind, QueueOptions, QueueRef};

use crate::hosts::HostCheck;

const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
const TEXT_FORMAT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Discovery passes (SCAN over the whole keyspace) take at most this share of the time: a pass
/// that took 0.2 s waits 4 s before the next; a quick one waits for the next refresh.
const DISCOVERY_SHARE: u32 = 20;

/// When to look for new queues again: at every refresh while a pass over the keyspace is quick
/// (a new queue shows within one refresh), spaced to [`DISCOVERY_SHARE`] times the last pass's
/// duration on a big keyspace (about 0.9 s per million keys: every 18 s there).
pub(crate) struct Discovery {
    at: Instant,
    took: Duration,
}

impl Discovery {
    /// Discovers the queue list now (see [`queue_list`]) and starts timing from it.
    pub(crate) async fn first(
        client: &Client,
        shards: Option<usize>,
        named: &[String],
        who: &str,
    ) -> (Self, Vec<QueueRef>) {
        let at = Instant::now();
        let queues = queue_list(client, shards, named, who).await;
        (
            Discovery {
                at,
                took: at.elapsed(),
            },
            queues,
        )
    }

    /// How long after the last pass the next one is due.
    pub(crate) fn every(&self, refresh: Duration) -> Duration {
        refresh.max(self.took * DISCOVERY_SHARE)
    }

    /// Whether a pass is due, `refresh` being the loop's interval.
    pub(crate) fn due(&self, refresh: Duration) -> bool {
        self.at.elapsed() >= self.every(refresh)
    }

    /// Discovers again.
    pub(crate) async fn again(
        &mut self,
        client: &Client,
        shards: Option<usize>,
        named: &[String],
        who: &str,
    ) -> Vec<QueueRef> {
        let (next, queues) = Self::first(client, shards, named, who).await;
        *self = next;
        queues
    }
}

/// The queue handles the refreshes (and the dashboard's requests) use, kept from one to the next:
/// a handle checks its shard count against the one the queue recorded once (a `GET`), not at
/// every refresh.
#[derive(Default)]
pub(crate) struct Handles {
    jobs: Mutex<HashMap<(String, usize), Queue>>,
    capped: Mutex<HashMap<(String, usize), CappedQueue>>,
}

impl Handles {
    /// The job queue `name` split in `shards`.
    pub(crate) fn jobs(&self, client: &Client, name: &str, shards: usize) -> tideq::Result<Queue> {
        let mut m = self.jobs.lock().unwrap();
        if let Some(q) = m.get(&(name.to_string(), shards)) {
            return Ok(q.clone());
        }
        let q = Queue::sharded(client, name, shards, QueueOptions::default())?;
        m.insert((name.to_string(), shards), q.clone());
        Ok(q)
    }

    /// The capped queue `name` split in `shards`.
    pub(crate) fn capped(
        &self,
        client: &Client,
        name: &str,
        shards: usize,
    ) -> tideq::Result<CappedQueue> {
        let mut m = self.capped.lock().unwrap();
        if let Some(q) = m.get(&(name.to_string(), shards)) {
            return Ok(q.clone());
        }
        let q = CappedQueue::sharded(client, name, shards, CappedOptions::default())?;
        m.insert((name.to_string(), shards), q.clone());
        Ok(q)
    }

    /// Forgets the handles of queues no longer shown.
    pub(crate) fn keep_only(&self, shown: &[QueueRef]) {
        let has = |kind, name: &str, shards| {
            shown
                .iter()
                .any(|r| r.kind == kind && r.name == name && r.shards == shards)
        };
        let mut jobs = self.jobs.lock().unwrap();
        jobs.retain(|(n, s), _| has(QueueKind::Jobs, n, *s));
        let mut capped = self.capped.lock().unwrap();
        capped.retain(|(n, s), _| has(QueueKind::Capped, n, *s));
    }
}

/// What the exporter serves: the last text, and whether the last refresh failed.
#[derive(Default)]
struct Served {
    text: String,
    error: Option<String>,
}

/// Runs the exporter until Ctrl-C.
pub async fn run(
    client: Client,
    shards: Option<usize>,
    named: Vec<String>,
    listen: &str,
    refresh: Duration,
    allow_hosts: Vec<String>,
) -> Result<(), String> {
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|e| format!("cannot listen on {listen}: {e}"))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let hosts = HostCheck::new(addr, &allow_hosts)?;
    let served = Arc::new(Mutex::new(Served::default()));
    // The first refresh before serving, so the first scrape has numbers (or the error).
    let (mut discovery, mut queues) = Discovery::first(&client, shards, &named, "exporter").await;
    let handles = Handles::default();
    refresh_once(&client, &handles, &queues, &served).await;
    let s = served.clone();
    let h = hosts.clone();
    let app = Router::new()
        .route(
            "/metrics",
            get(move |headers: HeaderMap| {
                let (s, h) = (s.clone(), h.clone());
                async move {
                    if let Some(refused) = refuse(&h, &headers) {
                        return refused;
                    }
                    let text = s.lock().unwrap().text.clone();
                    metrics_response(&headers, text)
                }
            }),
        )
        .route(
            "/",
            get(move |headers: HeaderMap| async move {
                match refuse(&hosts, &headers) {
                    Some(refused) => refused,
                    None => "tideq exporter: the metrics are at /metrics\n".into_response(),
                }
            }),
        );
    eprintln!("tideq exporter: serving http://{addr}/metrics (refresh every {refresh:?})");
    let refresher = {
        let (client, served) = (client.clone(), served.clone());
        async move {
            loop {
                tokio::time::sleep(refresh).await;
                if named.is_empty() && discovery.due(refresh) {
                    queues = discovery.again(&client, shards, &named, "exporter").await;
                    handles.keep_only(&queues);
                }
                refresh_once(&client, &handles, &queues, &served).await;
            }
        }
    };
    let server = crate::http::serve(listener, app, async {
        let _ = tokio::signal::ctrl_c().await;
    });
    tokio::select! {
        r = server => r.map_err(|e| format!("the HTTP server stopped: {e}")),
        _ = refresher => Ok(()),
    }
}

/// A refusal (403) for a request naming a host the exporter does not answer.
fn refuse(hosts: &HostCheck, headers: &HeaderMap) -> Option<Response> {
    let host = headers
        .get(HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    (!hosts.allows(host))
        .then(|| (StatusCode::FORBIDDEN, hosts.refusal("exporter") + "\n").into_response())
}

/// The metrics in the format the scraper asked for: OpenMetrics when its `Accept` names it,
/// else the text format 0.0.4 (`text` is OpenMetrics).
fn metrics_response(headers: &HeaderMap, text: String) -> Response {
    let accept = headers
        .get(ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if wants_openmetrics(accept) {
        ([(CONTENT_TYPE, OPENMETRICS)], text).into_response()
    } else {
        let text = tideq::openmetrics_to_text_format(&text);
        ([(CONTENT_TYPE, TEXT_FORMAT)], text).into_response()
    }
}

/// Whether an `Accept` header asks for OpenMetrics (and does not refuse it with `q=0`).
fn wants_openmetrics(accept: &str) -> bool {
    accept.split(',').any(|part| {
        let mut it = part.split(';').map(str::trim);
        it.next() == Some("application/openmetrics-text")
            && !it.any(|p| p.replace(' ', "") == "q=0" || p.replace(' ', "") == "q=0.0")
    })
}

/// The queues to show: the named job queues (split in `shards`, else in the count each
/// recorded, else 1), or every queue found under the prefix (an error is printed, prefixed by
/// `who`, and gives none). The dashboard's too.
pub(crate) async fn queue_list(
    client: &Client,
    shards: Option<usize>,
    named: &[String],
    who: &str,
) -> Vec<QueueRef> {
    if !named.is_empty() {
        let mut out = Vec::with_capacity(named.len());
        for n in named {
            let shards = match shards {
                Some(s) => s,
                None => match client.recorded_shards(QueueKind::Jobs, n).await {
                    Ok(s) => s.unwrap_or(1),
                    Err(e) => {
                        eprintln!("tideq {who}: queue {n:?}: cannot read its shard count: {e}");
                        1
                    }
                },
            };
            out.push(QueueRef {
                kind: QueueKind::Jobs,
                name: n.clone(),
                shards,
            });
        }
        return out;
    }
    match client.queues().await {
        Ok(q) => q,
        Err(e) => {
            eprintln!("tideq {who}: cannot list the queues: {e}");
            Vec::new()
        }
    }
}

async fn refresh_once(
    client: &Client,
    handles: &Handles,
    queues: &[QueueRef],
    served: &Mutex<Served>,
) {
    let mut jobs = Vec::new();
    let mut capped = Vec::new();
    let mut tasks = Vec::new();
    let mut error = None;
    for r in queues {
        let got = match r.kind {
            QueueKind::Jobs => match handles.jobs(client, &r.name, r.shards) {
                Ok(q) => match q.metrics().await {
                    Ok(m) => {
                        jobs.push(m);
                        q.task_metrics(None)
                            .await
                            .map(|t| tasks.push((r.name.clone(), t)))
                    }
                    Err(e) => Err(e),
                },
                Err(e) => Err(e),
            },
            QueueKind::Capped => match handles.capped(client, &r.name, r.shards) {
                Ok(q) => q.stats().await.map(|s| capped.push((r.name.clone(), s))),
                Err(e) => Err(e),
            },
        };
        if let Err(e) = got {
            error = Some(e.to_string());
        }
    }
    let mut text = tideq::encode_prometheus(&jobs, &capped);
    // The exporter's own health, after the queues' series (before the text's "# EOF").
    let body = text.trim_end().trim_end_matches("# EOF").to_string();
    let body = format!("{body}{}", task_lines(&tasks));
    text = format!(
        "{body}# HELP tideq_exporter_refresh_ok 1 when the last refresh read every queue.\n\
         # TYPE tideq_exporter_refresh_ok gauge\ntideq_exporter_refresh_ok {}\n# EOF\n",
        u8::from(error.is_none())
    );
    if let Some(e) = &error {
        eprintln!("tideq exporter: refresh: {e}");
    }
    let mut s = served.lock().unwrap();
    s.text = text;
    s.error = error;
}

/// A label value in the exposition format (backslash and double quote escaped; task names hold
/// no control characters).
fn label(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"")
}

/// The per-task series (OpenMetrics): `tideq_task_jobs_total{queue,task,outcome}` and
/// `tideq_task_run_seconds_sum/_count{queue,task}`, from each queue's per-task totals. At most
/// 101 tasks per queue shard (100 names and "(other)"; "(none)" for jobs without a task), so at
/// most 101 x 5 series per queue.
fn task_lines(queues: &[(String, Vec<tideq::TaskMetrics>)]) -> String {
    use std::fmt::Write as _;
    if queues.iter().all(|(_, t)| t.is_empty()) {
        return String::new();
    }
    let name = |t: &str| label(crate::render::task_label(t));
    let mut out = String::from(
        "# HELP tideq_task_jobs Per task: jobs completed, failed attempts, jobs dead-lettered.\n\
         # TYPE tideq_task_jobs counter\n",
    );
    for (q, ts) in queues {
        for t in ts {
            for (outcome, n) in [
                ("completed", t.completed),
                ("failed", t.failed),
                ("dead_lettered", t.dead_lettered),
            ] {
                let _ = writeln!(
                    out,
                    "tideq_task_jobs_total{{queue=\"{}\",task=\"{}\",outcome=\"{outcome}\"}} {n}",
                    label(q),
                    name(&t.task)
                );
            }
        }
    }
    out.push_str(
        "# HELP tideq_task_run_seconds Per task: handler run times.\n\
         # TYPE tideq_task_run_seconds summary\n# UNIT tideq_task_run_seconds seconds\n",
    );
    for (q, ts) in queues {
        for t in ts {
            let l = format!("queue=\"{}\",task=\"{}\"", label(q), name(&t.task));
            let _ = writeln!(
                out,
                "tideq_task_run_seconds_sum{{{l}}} {}\ntideq_task_run_seconds_count{{{l}}} {}",
                t.run_ms_sum / 1000.0,
                t.runs
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::wants_openmetrics;

    #[test]
    fn openmetrics_only_when_the_scraper_asks_for_it() {
        // What Prometheus sends (its default scrape protocols).
        assert!(wants_openmetrics(
            "application/openmetrics-text;version=1.0.0;q=0.5,application/openmetrics-text;\
             version=0.0.1;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2"
        ));
        assert!(!wants_openmetrics("text/plain;version=0.0.4"));
        assert!(!wants_openmetrics(""));
        assert!(!wants_openmetrics("*/*"));
        assert!(!wants_openmetrics("application/openmetrics-text; q=0"));
    }
}
