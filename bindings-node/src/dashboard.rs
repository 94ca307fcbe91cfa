//! `DashboardBridge`: the dashboard mounted in a Node web app (`tideq/express`,
//! `tideq/fastify`), the CLI crate's router called in-process on the binding's runtime
//! (`tideq_cli::dashboard::Dashboard`'s bridge). JS only passes requests and asks its app's
//! `authorize` hook when told to.

use napi::bindgen_prelude::*;
use napi_derive::napi;
use tideq_cli::dashboard::{Action, BridgeRequest, Bridged, Dashboard, MountOptions};

use crate::client::client_option;
use crate::convert::{boolean, count1, millis, strings, Options};
use crate::error::{spawn, throw};

/// Options of `dashboard(options)` in `tideq/express` and `tideq/fastify` (besides `authorize`).
// Declared for the TypeScript definitions only; `convert::Options` reads the fields one by one.
#[allow(dead_code)]
#[napi(object, object_from_js = false, object_to_js = false)]
pub struct DashboardOptions {
    /// Redis: a `redis://` URL (default `process.env.TIDEQ_REDIS_URL`, else
    /// `redis://127.0.0.1:6379`); or give `client`.
    pub url: Option<String>,
    #[napi(ts_type = "Client")]
    pub client: Option<Unknown<'static>>,
    /// Only these job queues (default: every queue under the client's prefix).
    pub queues: Option<Vec<String>>,
    /// The named queues' shard count (default: the count each recorded).
    pub shards: Option<u32>,
    /// Milliseconds between reads of the queues. Default 10000, as `tideq dashboard`.
    pub refresh_ms: Option<f64>,
    /// Refuse every change (the page shows no actions). Default false.
    pub read_only: Option<bool>,
    /// The `Host` names answered besides loopback ones, without scheme or port
    /// (`['queues.example.com']`), or `['*']` when the app or its proxy checks `Host` itself.
    /// Default: loopback names only, against DNS rebinding.
    pub allowed_hosts: Option<Vec<String>>,
}

const KEYS: &[&str] = &[
    "url",
    "client",
    "queues",
    "shards",
    "refreshMs",
    "readOnly",
    "allowedHosts",
];

/// One request, as the framework saw it.
#[napi(object)]
pub struct DashboardRequest {
    pub method: String,
    /// The mount prefix as the browser sees it (`/admin/tideq`).
    pub prefix: String,
    /// The path under the mount: `''` (the prefix itself), `/`, `/app.js`, `/api/...`.
    pub path: String,
    /// The query string without `?`.
    pub query: Option<String>,
    /// Names and values, flat (Node's `req.rawHeaders`).
    pub raw_headers: Vec<String>,
    pub body: Option<Buffer>,
    /// The app hook's answers so far.
    pub read: Option<bool>,
    pub act: Option<bool>,
}

/// The dashboard's answer: `ask` set (`'read'` or `'act'`) when the app's hook must decide
/// first; else the response.
#[napi(object)]
pub struct DashboardAnswer {
    #[napi(ts_type = "'read' | 'act'")]
    pub ask: Option<String>,
    pub status: u32,
    /// Names and values, flat.
    pub headers: Vec<String>,
    pub body: Buffer,
}

/// The dashboard for one app (`tideq/express` and `tideq/fastify` make it; not for direct use).
#[napi]
pub struct DashboardBridge {
    inner: Dashboard,
}

#[napi]
impl DashboardBridge {
    /// Throws `INVALID_ARGUMENT` on a bad option; reads nothing yet.
    #[napi(constructor, ts_args_type = "options?: DashboardOptions")]
    pub fn new(env: &Env, options: Option<Unknown>) -> Result<Self> {
        let res = (|| {
            let o = Options::new("dashboard options", options.as_ref(), KEYS)?;
            let client = client_option(&o)?;
            let mut opts = MountOptions::new()
                .queues(o.get("queues", strings)?.unwrap_or_default())
                .read_only(o.get("readOnly", boolean)?.unwrap_or(false))
                .allowed_hosts(o.get("allowedHosts", strings)?.unwrap_or_default());
            if let Some(n) = o.get("shards", count1)? {
                opts = opts.shards(n);
            }
            if let Some(every) = o.get("refreshMs", millis)? {
                opts = opts.refresh(every);
            }
            Ok(Dashboard::bridged(client, opts)?)
        })();
        Ok(DashboardBridge {
            inner: throw(env, res)?,
        })
    }

    /// Answers one request.
    #[napi(ts_return_type = "Promise<DashboardAnswer>")]
    pub fn handle<'env>(
        &self,
        env: &'env Env,
        request: DashboardRequest,
    ) -> Result<PromiseRaw<'env, DashboardAnswer>> {
        let mut granted = Vec::new();
        if let Some(ok) = request.read {
            granted.push((Action::Read, ok));
        }
        if let Some(ok) = request.act {
            granted.push((Action::Act, ok));
        }
        let headers = request
            .raw_headers
            .chunks(2)
            .filter(|kv| kv.len() == 2)
            .map(|kv| (kv[0].clone(), kv[1].as_bytes().to_vec()))
            .collect();
        let req = BridgeRequest {
            method: request.method,
            prefix: request.prefix,
            path: request.path,
            query: request.query,
            headers,
            body: request.body.map(|b| b.to_vec()).unwrap_or_default(),
        };
        let inner = self.inner.clone();
        spawn(
            env,
            Ok(async move {
                Ok(match inner.handle(req, &granted).await {
                    Bridged::Ask(a) => DashboardAnswer {
                        ask: Some(a.as_str().to_string()),
                        status: 0,
                        headers: Vec::new(),
                        body: Vec::new().into(),
                    },
                    Bridged::Response {
                        status,
                        headers,
                        body,
                    } => DashboardAnswer {
                        ask: None,
                        status: status.into(),
                        headers: headers
                            .into_iter()
                            .flat_map(|(k, v)| [k, String::from_utf8_lossy(&v).into_owned()])
                            .collect(),
                        body: body.into(),
                    },
                })
            }),
        )
    }
}
