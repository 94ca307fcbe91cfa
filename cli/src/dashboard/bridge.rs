//! The mounted dashboard called in-process by the Python and Node bindings (ASGI, Express,
//! Fastify): one request in, one response out, through the same router and guards as the axum
//! mount, on the binding's tokio runtime. The bindings hold no dashboard logic: they pass the
//! request, and ask their app's `authorize(request, action)` hook only when the router asks
//! ([`Bridged::Ask`]), then call again with the answer.

use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::extract::OriginalUri;
use axum::http::{HeaderName, HeaderValue, Method, Request, StatusCode, Uri};
use axum::response::IntoResponse;
use futures_util::future::BoxFuture;
use tideq::Client;
use tower::ServiceExt;

use super::error;
use super::mount::{Action, Authorize, Dashboard, MountOptions};

/// One request to a mounted dashboard, as the host framework saw it.
#[derive(Clone, Debug, Default)]
pub struct BridgeRequest {
    pub method: String,
    /// The mount prefix as the browser sees it (`/admin/tideq`), for the redirect of the page's
    /// address without its `/`.
    pub prefix: String,
    /// The path under the mount: `""` (the prefix itself), `/`, `/app.js`, `/api/...`.
    pub path: String,
    /// The query string, without `?`.
    pub query: Option<String>,
    pub headers: Vec<(String, Vec<u8>)>,
    pub body: Vec<u8>,
}

/// What the dashboard answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Bridged {
    Response {
        status: u16,
        headers: Vec<(String, Vec<u8>)>,
        body: Vec<u8>,
    },
    /// Ask the app's hook whether this request may do this, then call again with the answer in
    /// `granted` (nothing was read nor changed yet).
    Ask(Action),
}

/// The hook's answers so far for one request, and the question it could not answer.
#[derive(Clone)]
struct Grants {
    known: Vec<(Action, bool)>,
    asked: Arc<Mutex<Option<Action>>>,
}

impl Dashboard {
    /// A dashboard for [`handle`](Self::handle): its hook answers from the `granted` decisions
    /// passed with each request (an `authorize` in `opts` is not used).
    pub fn bridged(client: Client, opts: MountOptions) -> tideq::Result<Self> {
        let hook: Authorize = Arc::new(|parts, action| {
            let answer = match parts.extensions.get::<Grants>() {
                Some(g) => match g.known.iter().find(|(a, _)| *a == action) {
                    Some((_, ok)) => *ok,
                    None => {
                        *g.asked.lock().unwrap() = Some(action);
                        false
                    }
                },
                None => false,
            };
            Box::pin(async move { answer }) as BoxFuture<'static, bool>
        });
        Self::with_hook(client, opts, hook)
    }

    /// Answers one request (a dashboard made by [`bridged`](Self::bridged)), given the app
    /// hook's decisions so far (empty at first). [`Bridged::Ask`] when the router needs one more.
    pub async fn handle(&self, req: BridgeRequest, granted: &[(Action, bool)]) -> Bridged {
        let grants = Grants {
            known: granted.to_vec(),
            asked: Arc::new(Mutex::new(None)),
        };
        let resp = match request(req, grants.clone()) {
            Ok(r) => match self.router().oneshot(r).await {
                Ok(r) => r,
                Err(never) => match never {},
            },
            Err(e) => e.into_response(),
        };
        if let Some(action) = grants.asked.lock().unwrap().take() {
            return Bridged::Ask(action);
        }
        let (parts, body) = resp.into_parts();
        let body = match axum::body::to_bytes(body, usize::MAX).await {
            Ok(b) => b.to_vec(),
            Err(e) => e.to_string().into_bytes(),
        };
        Bridged::Response {
            status: parts.status.as_u16(),
            headers: parts
                .headers
                .iter()
                .map(|(k, v)| (k.as_str().to_string(), v.as_bytes().to_vec()))
                .collect(),
            body,
        }
    }
}

fn bad(what: &str) -> super::ApiError {
    error(StatusCode::BAD_REQUEST, format!("bad request: {what}"))
}

/// The router's request: the path under the mount (`/` for the prefix itself, whose page then
/// redirects to the prefix with its `/`), with the full address as its `OriginalUri`.
fn request(req: BridgeRequest, grants: Grants) -> Result<Request<Body>, super::ApiError> {
    let method = Method::from_bytes(req.method.as_bytes()).map_err(|_| bad("method"))?;
    let query = req.query.filter(|q| !q.is_empty());
    let with_query = |path: &str| match &query {
        Some(q) => format!("{path}?{q}"),
        None => path.to_string(),
    };
    let inner = if req.path.is_empty() { "/" } else { &req.path };
    if !inner.starts_with('/') {
        return Err(bad("path"));
    }
    let uri: Uri = with_query(inner).parse().map_err(|_| bad("path"))?;
    let original: Uri = with_query(&format!("{}{}", req.prefix, req.path))
        .parse()
        .map_err(|_| bad("path"))?;
    let mut r = Request::builder().method(method).uri(uri);
    for (name, value) in &req.headers {
        let name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| bad("header name"))?;
        let value = HeaderValue::from_bytes(value).map_err(|_| bad("header value"))?;
        r = r.header(name, value);
    }
    let mut r = r.body(Body::from(req.body)).map_err(|_| bad("request"))?;
    r.extensions_mut().insert(OriginalUri(original));
    r.extensions_mut().insert(grants);
    Ok(r)
}
