//! `tideq dashboard`: a web page of the queues under the prefix, served from the `tideq` binary
//! itself (axum, like the exporter). One HTML page, one script and one style sheet are compiled
//! in (`dashboard/`: no CDN, no build step); the page reads a JSON API under `/api/`.
//!
//! Redis load. One refresh loop (`cache.rs`) reads every queue each `--refresh` seconds: a job
//! queue's `stats()` (its counts, counters and pause flag: one pipeline of 6 commands per shard;
//! `is_paused()` is not called, as `stats()` holds the flag), a capped queue's `stats()` (an
//! HGETALL and a script making 2 calls: 4 commands per shard). Throughput is the counters' deltas
//! between refreshes. `/api/overview`, which the page polls every 2 s, is answered from that
//! cache alone, so however many pages are open Redis sees the same load. Measured with `INFO
//! commandstats` (`cli/tests/dashboard.rs`): 6 commands per job queue per refresh, so a 5 s
//! refresh would cost 1.2 commands per second per queue, over the budget of 1. The default is
//! therefore [`DEFAULT_REFRESH_SECS`] = 10 s: 0.6 commands per second per job queue, 0.4 per
//! capped queue. Queues are discovered again (one SCAN step per 1000 keys per primary) at every
//! refresh while a pass is quick, spaced to 20 times a pass's duration on a big keyspace
//! (`exporter::Discovery`), unless `--queue` names them; a request naming a queue not shown yet
//! reads that queue's own key recording its shard count (one GET, never a SCAN) and shows it at
//! once when it has one. The other endpoints (a queue's jobs, one job with a flow parent's first
//! page of children, a search, groups, schedules, workers, the changes) read or write Redis per
//! request only, when an operator clicks; a queue's history is read at most once per 30 s per
//! queue and window (`cache::HISTORY_FRESH`), however many pages show it.
//!
//! Security. With `--token` (or `TIDEQ_DASHBOARD_TOKEN`) every `/api/` request needs
//! `Authorization: Bearer <token>` (compared in constant time), else 401; `--read-token` (or
//! `TIDEQ_DASHBOARD_READ_TOKEN`) is a second token that may only read (its POSTs get 403, and its
//! page shows no actions). The page itself is served without a token and takes one from its
//! URL's `?token=` once. State changes are POST only, and need the header `X-Tideq-Request: 1` (a
//! cross-site page cannot send a custom header without a CORS preflight, and no CORS header is
//! ever sent) and, when the request has an `Origin`, one matching its `Host`; else 403.
//! `--read-only` refuses every POST (403). Requests must name a host the dashboard answers
//! (`hosts.rs`: loopback names, and `--allow-host` names), against DNS rebinding. Listening on a
//! non-loopback address without a token is refused unless `--insecure` is given. Responses forbid
//! framing and carry a strict Content-Security-Policy.

mod api;
mod bridge;
mod bulk;
mod cache;
mod health;
mod mount;
mod settings;
mod tasks;

pub use bridge::{BridgeRequest, Bridged};
pub use mount::{Action, Dashboard, MountOptions};

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{OriginalUri, Request, State};
use axum::http::header::{
    AUTHORIZATION, CACHE_CONTROL, CONTENT_SECURITY_POLICY, CONTENT_TYPE, HOST, ORIGIN,
    REFERRER_POLICY, X_CONTENT_TYPE_OPTIONS, X_FRAME_OPTIONS,
};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde_json::{json, Value};
use tideq::{Client, ErrorKind};

use crate::hosts::HostCheck;
use cache::Cache;

/// The default `--refresh`, in seconds: the smallest round value at which a job queue's
/// refresh costs at most 1 Redis command per second (see the module docs).
pub const DEFAULT_REFRESH_SECS: f64 = 10.0;

/// The header every state-changing request must carry (with the value `1`).
const REQUEST_HEADER: HeaderName = HeaderName::from_static("x-tideq-request");

const INDEX_HTML: &str = include_str!("dashboard/index.html");
/// The page's script, served whole as /app.js: one closure written in parts by view (state,
/// helpers and routing; the overview; a job queue and its actions; its settings; bulk actions; a
/// job's attempts and log; its per-task table; a capped queue and the start),
/// put together here in this order. The parts are fragments of that closure, not scripts.
const APP_JS: &str = concat!(
    include_str!("dashboard/app/base.js"),
    include_str!("dashboard/app/overview.js"),
    include_str!("dashboard/app/queue.js"),
    include_str!("dashboard/app/settings.js"),
    include_str!("dashboard/app/bulk.js"),
    include_str!("dashboard/app/jobpage.js"),
    include_str!("dashboard/app/tasks.js"),
    include_str!("dashboard/app/capped.js"),
);
const STYLE_CSS: &str = include_str!("dashboard/style.css");

const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
                   connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/// What `tideq dashboard` was asked for.
pub(crate) struct Options {
    /// Shards of the named queues (`None`: the count each recorded).
    pub shards: Option<usize>,
    /// Only these job queues (else every queue under the prefix).
    pub named: Vec<String>,
    pub refresh: Duration,
    pub read_only: bool,
    /// The token that may do everything the dashboard does.
    pub token: Option<String>,
    /// The token that may only read.
    pub read_token: Option<String>,
    /// `--allow-host` names.
    pub allow_hosts: Vec<String>,
    /// Serve on a non-loopback address without a token.
    pub insecure: bool,
}

/// What a request may do, by the token it carries (the guard puts it in the request).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    Admin,
    Read,
}

/// Who may do what: the standalone server's tokens, or the hook of the app it is mounted in.
#[derive(Clone)]
enum Auth {
    Tokens {
        token: Option<Arc<str>>,
        read_token: Option<Arc<str>>,
    },
    Hook(mount::Authorize),
}

/// What every handler shares.
#[derive(Clone)]
struct App {
    client: Client,
    cache: Arc<Cache>,
    read_only: bool,
    auth: Auth,
    /// The `Host` names answered.
    hosts: HostCheck,
    /// Mounted: starts the refresh loop on the first request (and stops it when the last router
    /// is dropped). The standalone server starts it itself.
    start: Option<Arc<mount::Start>>,
}

/// Runs the dashboard until Ctrl-C.
pub(crate) async fn run(client: Client, opts: Options, listen: &str) -> Result<(), String> {
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|e| format!("cannot listen on {listen}: {e}"))?;
    let addr: SocketAddr = listener.local_addr().map_err(|e| e.to_string())?;
    let hosts = HostCheck::new(addr, &opts.allow_hosts)?;
    let tokenless = opts.token.is_none() && opts.read_token.is_none();
    if !addr.ip().is_loopback() && tokenless && !opts.insecure {
        return Err(format!(
            "refusing to serve the dashboard on {addr}, not a loopback address, without a \
             token: anyone who can reach it could read the queues' jobs{}. Give --token (or \
             TIDEQ_DASHBOARD_TOKEN), or --insecure to serve it anyway",
            if opts.read_only {
                ""
            } else {
                " and requeue, purge or pause them"
            }
        ));
    }
    if !addr.ip().is_loopback() && tokenless {
        eprintln!(
            "tideq dashboard: WARNING: listening on {addr}, not a loopback address, without \
             --token: anyone who can reach it can read the queues' jobs{}",
            if opts.read_only {
                ""
            } else {
                " and requeue, purge or pause them"
            }
        );
    }
    let cache = Arc::new(Cache::new(opts.refresh, opts.shards, opts.named));
    // The first read before serving, so the first page has numbers (or the error).
    cache.first(&client).await;
    let app = App {
        client: client.clone(),
        cache: cache.clone(),
        read_only: opts.read_only,
        auth: Auth::Tokens {
            token: opts.token.map(Arc::from),
            read_token: opts.read_token.map(Arc::from),
        },
        hosts,
        start: None,
    };
    let has_token = !tokenless;
    let router = router(app);
    eprintln!(
        "tideq dashboard: serving http://{addr}/{} (refresh every {:?}{})",
        if has_token { "?token=<the token>" } else { "" },
        opts.refresh,
        if opts.read_only { ", read-only" } else { "" },
    );
    let refresher = {
        let cache = cache.clone();
        async move { cache.run(client).await }
    };
    let server = crate::http::serve(listener, router, async {
        let _ = tokio::signal::ctrl_c().await;
    });
    tokio::select! {
        r = server => r.map_err(|e| format!("the HTTP server stopped: {e}")),
        _ = refresher => Ok(()),
    }
}

fn router(app: App) -> Router {
    let api = Router::new()
        .route("/overview", get(api::overview))
        .route("/health", get(health::health))
        .route("/queues/{q}", get(api::queue))
        .route("/queues/{q}/jobs", get(api::jobs))
        .route("/queues/{q}/jobs/{id}", get(api::job))
        .route("/queues/{q}/jobs/{id}/{action}", post(api::job_action))
        .route("/queues/{q}/history", get(api::history))
        .route("/queues/{q}/tasks", get(tasks::tasks))
        .route("/queues/{q}/search", get(api::search))
        .route("/queues/{q}/dead/{id}/requeue", post(api::requeue))
        .route("/queues/{q}/dead/requeue-all", post(api::requeue_all))
        .route("/queues/{q}/dead/purge", post(api::purge))
        .route("/queues/{q}/pause", post(api::pause))
        .route("/queues/{q}/resume", post(api::resume))
        .route(
            "/queues/{q}/schedules/{name}/{action}",
            post(settings::schedule_action),
        )
        .route("/queues/{q}/limits", post(settings::set_limits))
        .route(
            "/queues/{q}/groups/{g}/limits",
            post(settings::set_group_limits),
        )
        .route(
            "/queues/{q}/groups/{g}/{action}",
            post(settings::group_action),
        )
        .route("/queues/{q}/bulk/{action}", post(bulk::by_ids))
        .route("/queues/{q}/bulk-found/{action}", post(bulk::found))
        .route("/queues/{q}/promote-all", post(bulk::promote_all))
        .route("/queues/{q}/clean", post(bulk::clean))
        .route("/queues/{q}/obliterate", post(bulk::obliterate))
        .route("/capped/{q}", get(api::capped))
        .fallback(|| async { error(StatusCode::NOT_FOUND, "no such API endpoint") });
    Router::new()
        .route("/", get(index))
        .route(
            "/app.js",
            get(|| async { asset("text/javascript; charset=utf-8", APP_JS) }),
        )
        .route(
            "/style.css",
            get(|| async { asset("text/css; charset=utf-8", STYLE_CSS) }),
        )
        .nest("/api", api)
        .layer(middleware::from_fn_with_state(app.clone(), guard))
        .with_state(app)
}

/// The page. Its links, script, style sheet and API calls are relative (`app.js`, `api/...`), so
/// it works under any prefix it is mounted at, as long as its address ends in `/`: asked
/// without it (`/admin/tideq`), it redirects there.
async fn index(OriginalUri(uri): OriginalUri) -> Response {
    let path = uri.path();
    if !path.ends_with('/') {
        let to = match uri.query() {
            Some(q) => format!("{path}/?{q}"),
            None => format!("{path}/"),
        };
        return mount::redirect(&to);
    }
    asset("text/html; charset=utf-8", INDEX_HTML)
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    ([(CONTENT_TYPE, content_type)], body).into_response()
}

/// A JSON response (never cached).
fn json_response(status: StatusCode, v: Value) -> Response {
    (
        status,
        [
            (CONTENT_TYPE, "application/json"),
            (CACHE_CONTROL, "no-store"),
        ],
        v.to_string(),
    )
        .into_response()
}

/// A refusal or a failure, answered as `{"error": message}` with its status.
struct ApiError {
    status: StatusCode,
    message: String,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        json_response(self.status, json!({ "error": self.message }))
    }
}

/// A core error: bad input 400, not found 404, a job in a state the action does not apply to
/// 409, Redis trouble 502.
impl From<tideq::Error> for ApiError {
    fn from(e: tideq::Error) -> Self {
        let status = match e.kind() {
            ErrorKind::InvalidArgument | ErrorKind::PayloadTooLarge => StatusCode::BAD_REQUEST,
            ErrorKind::JobNotFound => StatusCode::NOT_FOUND,
            ErrorKind::JobNotCancellable | ErrorKind::JobWrongState => StatusCode::CONFLICT,
            _ => StatusCode::BAD_GATEWAY,
        };
        error(status, e.to_string())
    }
}

fn error(status: StatusCode, message: impl Into<String>) -> ApiError {
    ApiError {
        status,
        message: message.into(),
    }
}

/// Equal strings, in time that does not depend on where they differ (nor on `given`'s length
/// beyond `expected`'s).
fn same_secret(given: &[u8], expected: &[u8]) -> bool {
    let mut diff = given.len() ^ expected.len();
    for (i, e) in expected.iter().enumerate() {
        diff |= usize::from(given.get(i).copied().unwrap_or(0) ^ e);
    }
    diff == 0
}

/// The `host[:port]` of an `Origin` header (`scheme://host[:port]`).
fn origin_authority(origin: &str) -> Option<&str> {
    origin.split_once("://").map(|(_, rest)| rest)
}

/// Every request passes here: the host check, then for `/api/` the token and the rules for
/// state changes; every response gets the security headers.
async fn guard(State(app): State<App>, mut req: Request, next: Next) -> Response {
    let checked = match &app.auth {
        Auth::Tokens { token, read_token } => check(
            &app,
            token,
            read_token,
            req.method(),
            req.uri().path(),
            req.headers(),
        )
        .map(|role| {
            req.extensions_mut().insert(role);
            req
        }),
        Auth::Hook(hook) => mount::check(&app, hook, req).await,
    };
    let mut resp = match checked {
        Ok(req) => next.run(req).await,
        Err(refused) => refused.into_response(),
    };
    let h = resp.headers_mut();
    h.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    h.insert(CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    resp
}

fn check(
    app: &App,
    token: &Option<Arc<str>>,
    read_token: &Option<Arc<str>>,
    method: &Method,
    path: &str,
    headers: &HeaderMap,
) -> Result<Role, ApiError> {
    let header = |name: HeaderName| headers.get(name).and_then(|v| v.to_str().ok());
    let host = header(HOST).unwrap_or("");
    if !app.hosts.allows(host) {
        return Err(error(StatusCode::FORBIDDEN, app.hosts.refusal("dashboard")));
    }
    let mut role = if app.read_only {
        Role::Read
    } else {
        Role::Admin
    };
    if !path.starts_with("/api/") {
        return Ok(role);
    }
    if token.is_some() || read_token.is_some() {
        let given = header(AUTHORIZATION)
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or("");
        let is = |t: &Option<Arc<str>>| {
            t.as_ref()
                .is_some_and(|t| same_secret(given.as_bytes(), t.as_bytes()))
        };
        if is(read_token) {
            role = Role::Read;
        } else if !is(token) {
            return Err(error(
                StatusCode::UNAUTHORIZED,
                "missing or wrong token (Authorization: Bearer <token>)",
            ));
        }
    }
    if method == Method::GET || method == Method::HEAD {
        return Ok(role);
    }
    if app.read_only {
        return Err(error(
            StatusCode::FORBIDDEN,
            "this dashboard is read-only (--read-only)",
        ));
    }
    if role == Role::Read {
        return Err(error(
            StatusCode::FORBIDDEN,
            "this token may only read (--read-token); changes need the --token one",
        ));
    }
    same_site_change(headers)?;
    Ok(role)
}

/// A state change's defence against cross-site requests: the header `X-Tideq-Request: 1` (a
/// cross-site page cannot send it without a CORS preflight, never answered), and an `Origin`,
/// when there is one, naming the `Host`.
fn same_site_change(headers: &HeaderMap) -> Result<(), ApiError> {
    let header = |name: HeaderName| headers.get(name).and_then(|v| v.to_str().ok());
    if header(REQUEST_HEADER) != Some("1") {
        return Err(error(
            StatusCode::FORBIDDEN,
            "a change needs the header X-Tideq-Request: 1",
        ));
    }
    if let Some(origin) = header(ORIGIN) {
        let host = header(HOST).unwrap_or("");
        let same = origin_authority(origin).is_some_and(|a| a.eq_ignore_ascii_case(host));
        if !same {
            return Err(error(
                StatusCode::FORBIDDEN,
                "cross-origin change refused (Origin does not match Host)",
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_compare_whole() {
        assert!(same_secret(b"s3cret", b"s3cret"));
        assert!(!same_secret(b"s3cre", b"s3cret"));
        assert!(!same_secret(b"s3cret!", b"s3cret"));
        assert!(!same_secret(b"", b"s3cret"));
        assert!(!same_secret(b"S3cret", b"s3cret"));
    }

    #[test]
    fn origins() {
        assert_eq!(
            origin_authority("http://127.0.0.1:9465"),
            Some("127.0.0.1:9465")
        );
        assert_eq!(origin_authority("null"), None);
    }

    /// The script's parts, put together, are one valid script (checked by `node --check`).
    #[test]
    fn the_script_parts_make_one_script() {
        let path = std::env::temp_dir().join(format!("tideq-app-{}.js", std::process::id()));
        std::fs::write(&path, APP_JS).unwrap();
        let out = std::process::Command::new("node")
            .arg("--check")
            .arg(&path)
            .output()
            .expect("node (scripts/ensure-deps.sh)");
        let _ = std::fs::remove_file(&path);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
