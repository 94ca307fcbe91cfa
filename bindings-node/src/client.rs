//! `Client`: wraps `tideq::Client` (one lazily opened, shared Redis connection) and reads its
//! options (`tideq::Config`).

use napi::bindgen_prelude::*;
use napi_derive::napi;

use crate::convert::{count, describe, millis, read_value, string, Options};
use crate::errors::{invalid, spawn, throw, type_error, Res};

/// Options of `new Client(options)`. Every field is optional.
// Declared for the TypeScript definitions only; `convert::Options` reads the fields one by one.
#[allow(dead_code)]
#[napi(object, object_from_js = false, object_to_js = false)]
pub struct ClientOptions {
    /// `redis://`, `rediss://` (TLS) or `unix://` URL. Default: `process.env.TIDEQ_REDIS_URL`,
    /// else `redis://127.0.0.1:6379`.
    pub url: Option<String>,
    /// ACL user, overriding one in the URL.
    pub username: Option<String>,
    /// Password, overriding one in the URL. Never appears in error messages.
    pub password: Option<String>,
    /// First segment of every key. Default `tideq`.
    pub prefix: Option<String>,
    /// Largest item accepted, in bytes. Default 524288 (512 KiB).
    pub max_payload: Option<u32>,
    /// How long connecting may take before failing with `CONNECTION`. Default 5000.
    pub connect_timeout_ms: Option<u32>,
    /// How long a command may take before failing with `CONNECTION`. Default 30000.
    pub response_timeout_ms: Option<u32>,
}

const CLIENT_KEYS: &[&str] = &[
    "url",
    "username",
    "password",
    "prefix",
    "maxPayload",
    "connectTimeoutMs",
    "responseTimeoutMs",
];

/// The default URL: `TIDEQ_REDIS_URL`, else a local Redis.
pub(crate) fn default_url() -> String {
    std::env::var("TIDEQ_REDIS_URL")
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| "redis://127.0.0.1:6379".to_string())
}

fn client_arg(what: &str, v: &Unknown) -> Res<tideq::Client> {
    match read_value::<ClassInstance<Client>>(v) {
        Ok(c) => Ok(c.inner.clone()),
        Err(_) => Err(type_error(format!(
            "{what} must be a tideq Client; got {}",
            describe(v)
        ))),
    }
}

/// The connection a queue's options name: `client` (a `Client`), or a new one on `url` (default
/// [`default_url`]). Both together are refused.
pub(crate) fn client_option(opts: &Options) -> Res<tideq::Client> {
    match (opts.get("client", client_arg)?, opts.get("url", string)?) {
        (Some(_), Some(_)) => Err(invalid("give either client or url, not both")),
        (Some(client), None) => Ok(client),
        (None, url) => Ok(tideq::Client::new(tideq::Config::new(
            url.unwrap_or_else(default_url),
        ))?),
    }
}

/// A connection to one Redis deployment, shared by the queues built on it. Connects lazily, on
/// the first command.
#[napi]
pub struct Client {
    pub(crate) inner: tideq::Client,
}

impl Client {
    pub(crate) fn from_options(opts: &Options) -> Res<tideq::Client> {
        let url = opts.get("url", string)?.unwrap_or_else(default_url);
        let mut cfg = tideq::Config::new(url)
            .with_credentials(opts.get("username", string)?, opts.get("password", string)?);
        if let Some(prefix) = opts.get("prefix", string)? {
            cfg = cfg.with_prefix(prefix);
        }
        if let Some(n) = opts.get("maxPayload", count)? {
            cfg = cfg.with_max_payload(n);
        }
        if let Some(d) = opts.get("connectTimeoutMs", millis)? {
            cfg = cfg.with_connect_timeout(d);
        }
        if let Some(d) = opts.get("responseTimeoutMs", millis)? {
            cfg = cfg.with_response_timeout(d);
        }
        Ok(tideq::Client::new(cfg)?)
    }
}

#[napi]
impl Client {
    /// Validates the options; does not connect. Throws `INVALID_ARGUMENT` on a bad option.
    #[napi(constructor, ts_args_type = "options?: ClientOptions")]
    pub fn new(env: &Env, options: Option<Unknown>) -> Result<Self> {
        let res = Options::new("Client options", options.as_ref(), CLIENT_KEYS)
            .and_then(|opts| Client::from_options(&opts));
        Ok(Client {
            inner: throw(env, res)?,
        })
    }

    /// Round trip to Redis; rejects with `CONNECTION` when it cannot be reached.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn ping<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, ()>> {
        let client = self.inner.clone();
        spawn(env, Ok(async move { Ok(client.ping().await?) }))
    }

    /// The URL with any password replaced by `***`.
    #[napi(getter)]
    pub fn url(&self) -> String {
        self.inner.config().redacted_url()
    }

    /// The key prefix.
    #[napi(getter)]
    pub fn prefix(&self) -> String {
        self.inner.config().prefix().to_string()
    }
}
