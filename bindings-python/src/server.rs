//! What the Redis server says of itself, on `Client` (core `Client::server_info`):
//! `server_info` and the value class `ServerInfo`.

use pyo3::prelude::*;

use crate::client::Client;

#[pymethods]
impl Client {
    /// What the Redis server says of itself (one ``INFO``; blocking, the GIL released): its
    /// version, memory used and limit, eviction policy (``evicts`` is true for any policy but
    /// ``noeviction``: jobs are keys, and such a policy deletes them under memory pressure),
    /// clients connected and commands per second. A cluster's primaries are summed. Raises
    /// ``PermissionError`` for a user not allowed ``INFO``.
    ///
    /// In asyncio code: ``await asyncio.to_thread(client.server_info)``.
    fn server_info<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let client = self.inner.clone();
        crate::runtime::Api::Blocking.call(
            py,
            async move { client.server_info().await.map(ServerInfo) },
        )
    }
}

/// The Redis server's state, as ``Client.server_info()`` gives it.
#[pyclass(module = "tideq", frozen, eq)]
#[derive(PartialEq)]
pub struct ServerInfo(pub tideq::ServerInfo);

#[pymethods]
impl ServerInfo {
    /// ``"redis"`` or ``"valkey"``.
    #[getter]
    fn server(&self) -> &str {
        &self.0.server
    }
    /// The server's version, e.g. ``"7.0.15"``.
    #[getter]
    fn version(&self) -> &str {
        &self.0.version
    }
    /// Memory used, in bytes.
    #[getter]
    fn used_memory(&self) -> u64 {
        self.0.used_memory
    }
    /// The memory limit in bytes (``maxmemory``); 0: none.
    #[getter]
    fn maxmemory(&self) -> u64 {
        self.0.maxmemory
    }
    /// ``maxmemory-policy``.
    #[getter]
    fn maxmemory_policy(&self) -> &str {
        &self.0.maxmemory_policy
    }
    /// True when that policy evicts keys (anything but ``noeviction``): jobs can be lost.
    #[getter]
    fn evicts(&self) -> bool {
        self.0.evicts
    }
    /// Clients connected.
    #[getter]
    fn connected_clients(&self) -> u64 {
        self.0.connected_clients
    }
    /// Commands per second, as the server measures it now.
    #[getter]
    fn ops_per_sec(&self) -> u64 {
        self.0.ops_per_sec
    }
    /// Seconds since the server started.
    #[getter]
    fn uptime_secs(&self) -> u64 {
        self.0.uptime_secs
    }
    /// Nodes that answered (more than 1 on a cluster only).
    #[getter]
    fn nodes(&self) -> u64 {
        self.0.nodes
    }
    fn __repr__(&self) -> String {
        let s = &self.0;
        format!(
            "ServerInfo(server={:?}, version={:?}, used_memory={}, maxmemory={}, \
             maxmemory_policy={:?}, evicts={}, connected_clients={}, ops_per_sec={}, \
             uptime_secs={}, nodes={})",
            s.server,
            s.version,
            s.used_memory,
            s.maxmemory,
            s.maxmemory_policy,
            if s.evicts { "True" } else { "False" },
            s.connected_clients,
            s.ops_per_sec,
            s.uptime_secs,
            s.nodes
        )
    }
}

crate::value::value_class! {
    ServerInfo {
        server, version, used_memory, maxmemory, maxmemory_policy, evicts, connected_clients,
        ops_per_sec, uptime_secs, nodes
    }
}
