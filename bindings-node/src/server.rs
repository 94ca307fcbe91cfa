//! What the Redis server says of itself, on `Client` (core `Client::server_info`):
//! `serverInfo()` and the object `ServerInfo`.

use napi::bindgen_prelude::*;
use napi_derive::napi;

use crate::client::Client;
use crate::error::spawn;

/// The Redis server's state, as `client.serverInfo()` gives it.
#[napi(object, object_from_js = false)]
pub struct ServerInfo {
    /// `'redis'` or `'valkey'`.
    pub server: String,
    /// The server's version, e.g. `'7.0.15'`.
    pub version: String,
    /// Memory used, in bytes.
    pub used_memory: f64,
    /// The memory limit in bytes (`maxmemory`); 0: none.
    pub maxmemory: f64,
    /// `maxmemory-policy`.
    pub maxmemory_policy: String,
    /// True when that policy evicts keys (anything but `noeviction`): jobs can be lost.
    pub evicts: bool,
    /// Clients connected.
    pub connected_clients: f64,
    /// Commands per second, as the server measures it now.
    pub ops_per_sec: f64,
    /// Seconds since the server started.
    pub uptime_secs: f64,
    /// Nodes that answered (more than 1 on a cluster only).
    pub nodes: f64,
}

impl From<tideq::ServerInfo> for ServerInfo {
    fn from(s: tideq::ServerInfo) -> Self {
        ServerInfo {
            server: s.server,
            version: s.version,
            used_memory: s.used_memory as f64,
            maxmemory: s.maxmemory as f64,
            maxmemory_policy: s.maxmemory_policy,
            evicts: s.evicts,
            connected_clients: s.connected_clients as f64,
            ops_per_sec: s.ops_per_sec as f64,
            uptime_secs: s.uptime_secs as f64,
            nodes: s.nodes as f64,
        }
    }
}

#[napi]
impl Client {
    /// What the Redis server says of itself (one `INFO`): its version, memory used and limit,
    /// eviction policy (`evicts` is true for any policy but `noeviction`: jobs are keys, and
    /// such a policy deletes them under memory pressure), clients connected and commands per
    /// second. A cluster's primaries are summed. Rejects with `PERMISSION` for a user not
    /// allowed `INFO`.
    #[napi(ts_return_type = "Promise<ServerInfo>")]
    pub fn server_info<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, ServerInfo>> {
        let client = self.inner.clone();
        spawn(
            env,
            Ok(async move { Ok(ServerInfo::from(client.server_info().await?)) }),
        )
    }
}
