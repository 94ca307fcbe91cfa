//! The dashboard mounted in another app: an axum [`Router`] to `nest_service` (and, through
//! [`bridge`](super::bridge), the same router called by the Python and Node bindings). The host
//! app's own login decides through an `authorize(request, action)` hook instead of the standalone
//! server's tokens; the Host and CSRF guards are the same.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::Request;
use axum::http::header::{HOST, LOCATION};
use axum::http::request::Parts;
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use futures_util::future::BoxFuture;
use tideq::{Client, Error, ErrorKind};

use super::cache::Cache;
use super::{error, ApiError, App, Auth, Role, DEFAULT_REFRESH_SECS};
use crate::hosts::HostCheck;

/// What a request to a mounted dashboard asks to do, for the `authorize` hook.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// See the page and read the queues, their jobs and workers (`GET`).
    Read,
    /// Change something: requeue, retry, cancel or delete jobs, purge dead letters, pause and
    /// resume queues (`POST`).
    Act,
}

impl Action {
    /// `"read"` or `"act"`, as the Python and Node hooks receive it.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Read => "read",
            Action::Act => "act",
        }
    }
}

/// The hook deciding each request: given the request's method, URI, headers and extensions (what
/// the host app's session or auth middleware put there) and what it asks to do.
pub(crate) type Authorize = Arc<dyn Fn(&Parts, Action) -> BoxFuture<'static, bool> + Send + Sync>;

/// How a mounted [`Dashboard`] behaves.
#[derive(Clone)]
pub struct MountOptions {
    pub(super) queues: Vec<String>,
    pub(super) shards: Option<usize>,
    pub(super) refresh: Duration,
    pub(super) read_only: bool,
    pub(super) allowed_hosts: Vec<String>,
    pub(super) authorize: Option<Authorize>,
}

impl Default for MountOptions {
    fn default() -> Self {
        MountOptions {
            queues: Vec::new(),
            shards: None,
            refresh: Duration::from_secs_f64(DEFAULT_REFRESH_SECS),
            read_only: false,
            allowed_hosts: Vec::new(),
            authorize: None,
        }
    }
}

impl MountOptions {
    pub fn new() -> Self {
        Self::default()
    }

    /// Show only these job queues (default: every queue under the client's prefix, discovered
    /// as `tideq dashboard` does).
    pub fn queues<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.queues = names.into_iter().map(Into::into).collect();
        self
    }

    /// The named queues' shard count (default: the count each queue recorded).
    pub fn shards(mut self, shards: usize) -> Self {
        self.shards = Some(shards);
        self
    }

    /// How often the queues are read (default 10 s, as `tideq dashboard --refresh`).
    pub fn refresh(mut self, every: Duration) -> Self {
        self.refresh = every;
        self
    }

    /// Refuse every change (the page shows no actions), whatever `authorize` says.
    pub fn read_only(mut self, read_only: bool) -> Self {
        self.read_only = read_only;
        self
    }

    /// The `Host` names answered besides loopback ones (`localhost`, `127.0.0.1`, `[::1]`):
    /// the names the app is served under, without scheme or port (`"queues.example.com"`), or
    /// `"*"` for every name when the app or a proxy in front of it checks `Host` itself. Default:
    /// loopback names only, against DNS rebinding (a page on an attacker's domain resolving to
    /// the app would otherwise be same-origin with the dashboard).
    pub fn allowed_hosts<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.allowed_hosts = names.into_iter().map(Into::into).collect();
        self
    }

    /// The hook deciding every request (the page, its assets and its API): `true` lets it
    /// through, `false` answers 403. It gets the request's parts (method, URI, headers, and the
    /// extensions the host app's middleware added, such as its session or user) and the
    /// [`Action`] asked. `GET /api/overview` also asks [`Action::Act`], to show the page's
    /// actions only to whom may use them. Required.
    pub fn authorize<F, Fut>(mut self, hook: F) -> Self
    where
        F: Fn(&Parts, Action) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = bool> + Send + 'static,
    {
        self.authorize = Some(Arc::new(move |parts: &Parts, action: Action| {
            Box::pin(hook(parts, action)) as BoxFuture<'static, bool>
        }));
        self
    }
}

/// The dashboard, mounted in another app: [`router`](Self::router) gives the axum router to
/// nest (`Router::new().nest_service("/admin/tideq", dashboard.router())`: `nest_service`, which
/// answers the prefix with and without its `/`; `nest` would not answer `/admin/tideq/`). The page, its assets and
/// its API calls are relative, so any prefix works. The queues are read (one refresh loop, as
/// `tideq dashboard`) from the first request on, until the last router is dropped.
///
/// ```no_run
/// # async fn f() -> tideq::Result<()> {
/// use tideq_cli::dashboard::{Action, Dashboard, MountOptions};
///
/// let client = tideq::Client::new(tideq::Config::default())?;
/// let dashboard = Dashboard::new(
///     client,
///     MountOptions::new().authorize(|parts, action| {
///         let admin = parts.headers.get("x-user-role").is_some_and(|v| v == "admin");
///         async move { action == Action::Read || admin }
///     }),
/// )?;
/// let app: axum::Router = axum::Router::new().nest_service("/admin/tideq", dashboard.router());
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Dashboard {
    pub(super) app: App,
}

impl Dashboard {
    /// Checks the options (`INVALID_ARGUMENT`: no `authorize` hook, a bad allowed host name);
    /// reads nothing yet.
    pub fn new(client: Client, opts: MountOptions) -> tideq::Result<Self> {
        let Some(hook) = opts.authorize.clone() else {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                "a mounted dashboard needs an authorize hook, the host app's login deciding who \
                 may read and act (MountOptions::authorize; |_, _| async { true } lets everyone)",
            ));
        };
        Self::with_hook(client, opts, hook)
    }

    pub(super) fn with_hook(
        client: Client,
        opts: MountOptions,
        hook: Authorize,
    ) -> tideq::Result<Self> {
        let hosts = HostCheck::mounted(&opts.allowed_hosts)
            .map_err(|e| Error::new(ErrorKind::InvalidArgument, e))?;
        if opts.refresh.is_zero() {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                "refresh must be longer than 0 s",
            ));
        }
        Ok(Dashboard {
            app: App {
                client,
                cache: Arc::new(Cache::new(opts.refresh, opts.shards, opts.queues)),
                read_only: opts.read_only,
                auth: Auth::Hook(hook),
                hosts,
                start: Some(Arc::new(Start::default())),
            },
        })
    }

    /// The router to mount with `Router::nest_service(prefix, ...)`.
    pub fn router(&self) -> Router {
        super::router(self.app.clone())
    }
}

/// Starts the refresh loop once, on the first request; stops it when dropped (with the last
/// router).
#[derive(Default)]
pub(crate) struct Start {
    once: tokio::sync::OnceCell<()>,
    task: Mutex<Option<tokio::task::AbortHandle>>,
}

impl Start {
    async fn ensure(&self, cache: &Arc<Cache>, client: &Client) {
        self.once
            .get_or_init(|| async {
                cache.first(client).await;
                let (cache, client) = (cache.clone(), client.clone());
                let task = tokio::spawn(async move { cache.run(client).await });
                *self.task.lock().unwrap() = Some(task.abort_handle());
            })
            .await;
    }
}

impl Drop for Start {
    fn drop(&mut self) {
        if let Some(task) = self.task.lock().unwrap().take() {
            task.abort();
        }
    }
}

/// A mounted dashboard's guard: the host check, the read-only and cross-site rules for changes,
/// then the hook; puts the request's [`Role`] in it (for the overview's actions).
pub(super) async fn check(app: &App, hook: &Authorize, req: Request) -> Result<Request, ApiError> {
    let (mut parts, body) = req.into_parts();
    let host = parts
        .headers
        .get(HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if !app.hosts.allows(host) {
        return Err(error(StatusCode::FORBIDDEN, app.hosts.refusal("dashboard")));
    }
    let change = parts.method != Method::GET && parts.method != Method::HEAD;
    if change {
        if app.read_only {
            return Err(error(
                StatusCode::FORBIDDEN,
                "this dashboard is read-only (read_only)",
            ));
        }
        super::same_site_change(&parts.headers)?;
    }
    let action = if change { Action::Act } else { Action::Read };
    if !hook(&parts, action).await {
        return Err(error(
            StatusCode::FORBIDDEN,
            format!(
                "not allowed to {} (the app's authorize hook said no)",
                match action {
                    Action::Read => "see this dashboard",
                    Action::Act => "change queues or jobs here",
                }
            ),
        ));
    }
    let role = if change
        || parts.uri.path() == "/api/overview" && !app.read_only && hook(&parts, Action::Act).await
    {
        Role::Admin
    } else {
        Role::Read
    };
    parts.extensions.insert(role);
    if let Some(start) = &app.start {
        start.ensure(&app.cache, &app.client).await;
    }
    Ok(Request::from_parts(parts, body))
}

/// A permanent redirect keeping the method (to the page's address with its `/`).
pub(super) fn redirect(to: &str) -> Response {
    match axum::http::HeaderValue::from_str(to) {
        Ok(v) => (StatusCode::PERMANENT_REDIRECT, [(LOCATION, v)]).into_response(),
        Err(_) => error(StatusCode::BAD_REQUEST, "bad path").into_response(),
    }
}
