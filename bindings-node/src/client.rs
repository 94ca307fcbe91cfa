//! `Client`: wraps `tideq::Client` (one lazily opened, shared Redis connection) and reads its
//! options (`tideq::Config`).

use std::time::Duration;

use napi::bindgen_prelude::*;
use napi_derive::napi;

use crate::convert::{
    bytes, count1, describe, function, millis, read_value, string, strings, Options,
};
use crate::error::{invalid, spawn, throw, type_error, Res};

/// Options of `new Client(options)`. Every field is optional. Give at most one of `url`,
/// `cluster` and `sentinel`; with none, the client uses `process.env.TIDEQ_REDIS_URL`, else
/// `redis://127.0.0.1:6379`.
// Declared for the TypeScript definitions only; `convert::Options` reads the fields one by one.
#[allow(dead_code)]
#[napi(object, object_from_js = false, object_to_js = false)]
pub struct ClientOptions {
    /// One Redis server: a `redis://`, `rediss://` (TLS) or `unix://` URL.
    pub url: Option<String>,
    /// A Redis Cluster, reached through any of these seed nodes (`redis://host:port` or
    /// `rediss://` URLs, at least one). Topology changes, redirects and failovers are followed.
    /// Spread a queue over the masters with the queue option `shards`.
    pub cluster: Option<Vec<String>>,
    /// A primary managed by Redis Sentinel; the client asks the Sentinels for the current
    /// primary, and asks again after a failover.
    pub sentinel: Option<SentinelOptions>,
    /// ACL user, overriding one in the URL (for Sentinel: the primary's user).
    pub username: Option<String>,
    /// Password, overriding one in the URL (for Sentinel: the primary's). Never appears in
    /// error messages.
    pub password: Option<String>,
    /// First segment of every key. Default `tideq`.
    pub prefix: Option<String>,
    /// Largest item accepted, in bytes. Default 524288 (512 KiB).
    pub max_payload: Option<u32>,
    /// How long connecting may take before failing with `CONNECTION`. Default 5000.
    pub connect_timeout_ms: Option<u32>,
    /// How long a command may take before failing with `CONNECTION`. Default 30000.
    pub response_timeout_ms: Option<u32>,
    /// Make every job enqueue wait until this many replicas have it (Redis `WAIT`), so an
    /// acknowledged job survives the primary's death. When fewer confirm in time, the enqueue
    /// rejects with `NOT_REPLICATED`; the job is on the primary, so enqueuing again with the same
    /// `id` is safe. Applies to `Queue` enqueues only. Default: no waiting.
    pub replica_ack: Option<ReplicaAckOptions>,
    /// A private certificate authority to trust for `rediss://` connections: the PEM contents
    /// (one or more `-----BEGIN CERTIFICATE-----` blocks), as a string or `Buffer`, not a file
    /// path (like `tls.connect({ ca })`), e.g. `fs.readFileSync('ca.pem')`. It replaces the public
    /// roots; the server's certificate is still verified (name included). Applies to `url`,
    /// `cluster` and `sentinel` (Sentinels and primary). Anything that is not PEM certificates
    /// throws `INVALID_ARGUMENT`. Default: the public roots. For a queue, pass a `Client` built
    /// with it as `client` (the queues' `url` shorthand takes no other client option).
    #[napi(ts_type = "string | Buffer")]
    pub tls_ca: Option<String>,
    /// What to do when Redis may evict keys (its `maxmemory-policy` is not `noeviction`), which
    /// would lose jobs silently under memory pressure. Checked on the first command. `'warn'`:
    /// log a warning to stderr once per server (the default); `'refuse'`: every call rejects
    /// with `EVICTION_POLICY`; `'off'`: do not check.
    #[napi(ts_type = "'warn' | 'refuse' | 'off'")]
    pub eviction_check: Option<String>,
    /// Asked for the credentials each time a connection logs in (the first connection, every
    /// reconnection, each blocking connection, each cluster node and the primary the Sentinels
    /// name), for short-lived tokens (ElastiCache IAM, Entra ID): returns `{ username?, password
    /// }` (no `username`: the URL's user, else `default`) or a password, or a Promise of one.
    /// What it throws or rejects with becomes an `AUTH` error naming it, and it is asked again
    /// on the next reconnection. It gives the password: a password in the URL or `password` too
    /// throws `INVALID_ARGUMENT`. It does not keep the process alive.
    #[napi(ts_type = "() => Credentials | string | Promise<Credentials | string>")]
    pub credentials_provider: Option<String>,
}

/// What a `credentialsProvider` returns (or a password string).
// Declared for the TypeScript definitions only.
#[allow(dead_code)]
#[napi(object, object_from_js = false, object_to_js = false)]
pub struct Credentials {
    /// The ACL user; none: the URL's user, else `default`.
    pub username: Option<String>,
    /// The password or token.
    pub password: String,
}

/// `sentinel` option of `new Client(options)`.
// Declared for the TypeScript definitions only.
#[allow(dead_code)]
#[napi(object, object_from_js = false, object_to_js = false)]
pub struct SentinelOptions {
    /// The Sentinels' URLs (`redis://host:26379`), at least one. The client options
    /// `username`/`password` apply to the primary, not to the Sentinels.
    pub sentinels: Vec<String>,
    /// The name the Sentinels monitor the primary under.
    pub master_name: String,
}

/// `replicaAck` option of `new Client(options)`.
// Declared for the TypeScript definitions only.
#[allow(dead_code)]
#[napi(object, object_from_js = false, object_to_js = false)]
pub struct ReplicaAckOptions {
    /// Replicas that must confirm each enqueue. At least 1.
    pub replicas: u32,
    /// How long to wait for them, in ms. At least 1. Keep it below `responseTimeoutMs`, or an
    /// unconfirmed enqueue fails with `CONNECTION` instead of `NOT_REPLICATED`. The wait holds
    /// up the other commands of the same `Client` (workers' too), so give producers that use
    /// `replicaAck` a `Client` of their own.
    pub timeout_ms: f64,
}

const CLIENT_KEYS: &[&str] = &[
    "url",
    "cluster",
    "sentinel",
    "username",
    "password",
    "prefix",
    "maxPayload",
    "connectTimeoutMs",
    "responseTimeoutMs",
    "replicaAck",
    "tlsCa",
    "evictionCheck",
    "credentialsProvider",
];

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
/// `tideq::Config::env_url`). Both together are refused.
pub(crate) fn client_option(opts: &Options) -> Res<tideq::Client> {
    match (opts.get("client", client_arg)?, opts.get("url", string)?) {
        (Some(_), Some(_)) => Err(invalid("give either client or url, not both")),
        (Some(client), None) => Ok(client),
        (None, url) => Ok(tideq::Client::new(tideq::Config::new(
            url.unwrap_or_else(tideq::Config::env_url),
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
    pub(crate) fn from_options(env: &Env, opts: &Options) -> Res<tideq::Client> {
        let url = opts.get("url", string)?;
        let cluster = opts.get("cluster", non_empty_strings)?;
        let sentinel = opts.get("sentinel", sentinel_arg)?;
        let mut cfg = match (url, cluster, sentinel) {
            (url, None, None) => tideq::Config::new(url.unwrap_or_else(tideq::Config::env_url)),
            (None, Some(nodes), None) => tideq::Config::cluster(nodes),
            (None, None, Some((sentinels, master_name))) => {
                tideq::Config::sentinel(sentinels, master_name)
            }
            _ => {
                return Err(invalid(
                    "Client options: give one of url, cluster and sentinel, not several",
                ))
            }
        };
        cfg = cfg.with_credentials(opts.get("username", string)?, opts.get("password", string)?);
        if let Some(prefix) = opts.get("prefix", string)? {
            cfg = cfg.with_prefix(prefix);
        }
        if let Some(n) = opts.get("maxPayload", count1)? {
            cfg = cfg.with_max_payload(n);
        }
        if let Some(d) = opts.get("connectTimeoutMs", millis)? {
            cfg = cfg.with_connect_timeout(d);
        }
        if let Some(d) = opts.get("responseTimeoutMs", millis)? {
            cfg = cfg.with_response_timeout(d);
        }
        if let Some((replicas, timeout)) = opts.get("replicaAck", replica_ack_arg)? {
            cfg = cfg.with_replica_ack(replicas, timeout);
        }
        if let Some(pem) = opts.get("tlsCa", bytes)? {
            cfg = cfg.with_tls_ca(pem);
        }
        if let Some(check) = opts.get("evictionCheck", eviction_check_arg)? {
            cfg = cfg.with_eviction_check(check);
        }
        // Credentials that rotate.
        if let Some(f) = opts.get("credentialsProvider", function::<()>)? {
            cfg = cfg.with_credentials_provider(crate::credentials::provider(env, f)?);
        }
        Ok(tideq::Client::new(cfg)?)
    }
}

/// A list of URLs that must not be empty (cluster seeds, Sentinels): an empty list would
/// otherwise fall through to a confusing "unsupported Redis URL" from the core.
fn non_empty_strings(what: &str, v: &Unknown) -> Res<Vec<String>> {
    let list = strings(what, v)?;
    if list.is_empty() {
        return Err(invalid(format!("{what} must list at least one URL")));
    }
    Ok(list)
}

fn sentinel_arg(what: &str, v: &Unknown) -> Res<(Vec<String>, String)> {
    let opts = Options::new(what, Some(v), &["sentinels", "masterName"])?;
    Ok((
        opts.required("sentinels", non_empty_strings)?,
        opts.required("masterName", string)?,
    ))
}

fn eviction_check_arg(what: &str, v: &Unknown) -> Res<tideq::EvictionCheck> {
    use tideq::EvictionCheck::{Off, Refuse, Warn};
    match string(what, v)?.as_str() {
        "warn" => Ok(Warn),
        "refuse" => Ok(Refuse),
        "off" => Ok(Off),
        other => Err(invalid(format!(
            "{what} must be 'warn', 'refuse' or 'off'; got {other:?}"
        ))),
    }
}

fn replica_ack_arg(what: &str, v: &Unknown) -> Res<(usize, Duration)> {
    let opts = Options::new(what, Some(v), &["replicas", "timeoutMs"])?;
    Ok((
        opts.required("replicas", count1)?,
        opts.required("timeoutMs", millis)?,
    ))
}

#[napi]
impl Client {
    /// Validates the options; does not connect. Throws `INVALID_ARGUMENT` on a bad option.
    #[napi(constructor, ts_args_type = "options?: ClientOptions")]
    pub fn new(env: &Env, options: Option<Unknown>) -> Result<Self> {
        let res = Options::new("Client options", options.as_ref(), CLIENT_KEYS)
            .and_then(|opts| Client::from_options(env, &opts));
        Ok(Client {
            inner: throw(env, res)?,
        })
    }

    /// Round trip to Redis; rejects with `CONNECTION` when it cannot be reached (`AUTH` when it
    /// refuses the credentials).
    #[napi(ts_return_type = "Promise<void>")]
    pub fn ping<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, ()>> {
        let client = self.inner.clone();
        spawn(env, Ok(async move { Ok(client.ping().await?) }))
    }

    /// The URL with any password replaced by `***`. For a cluster, the first seed; for
    /// Sentinel, the first Sentinel.
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
