//! The server check on a client's first connection: a supported version, and an eviction
//! policy that cannot lose jobs.

use redis::Value;

use super::*;
use crate::config::EvictionCheck;
use crate::error::{Error, ErrorKind, Result};

impl Client {
    /// The first command on a new shared connection, once per client: checks that Redis
    /// answers and accepts the credentials (so a missing password is `AUTH` whatever the first
    /// real command, not a connection Redis dropped), and reads its `maxmemory-policy` (from
    /// `INFO memory`, which works where `CONFIG GET` is not allowed): any policy but
    /// `noeviction` lets Redis delete queue keys under memory pressure, losing jobs silently.
    /// Warns once per server, or refuses to work with [`EvictionCheck::Refuse`]. A user not
    /// allowed `INFO` skips the policy check.
    pub(super) async fn check_server(&self, conn: &mut Conn) -> Result<()> {
        let check = self.inner.config.eviction_check;
        // One round trip: the server's version, and its eviction policy when that is checked.
        let mut probe = redis::pipe();
        probe.cmd("INFO").arg("server");
        if check != EvictionCheck::Off {
            probe.cmd("INFO").arg("memory");
        }
        let info: Vec<Value> = match probe.query_async(conn).await.map_err(|e| self.err(e)) {
            Ok(v) => v,
            Err(e) if e.kind() == ErrorKind::Permission => {
                log::debug!("tideq: could not read the server's version and eviction policy: {e}");
                return Ok(());
            }
            Err(e) => return Err(e),
        };
        let server = info.first().map(info_text).unwrap_or_default();
        if let Err(why) = supported_server(&server) {
            let to = self.inner.config.redacted_url();
            return Err(Error::new(
                ErrorKind::NotSupported,
                format!("the server at {to} is {why}"),
            ));
        }
        let info = info.get(1).cloned().unwrap_or(Value::Nil);
        if check == EvictionCheck::Off {
            return Ok(());
        }
        let text = format!("{info:?}");
        let policies: Vec<&str> = text
            .split("maxmemory_policy:")
            .skip(1)
            .filter_map(|rest| rest.split(['\\', '\r', '\n', '"']).next())
            .filter(|p| *p != "noeviction")
            .collect();
        let Some(policy) = policies.first() else {
            return Ok(());
        };
        let to = self.inner.config.redacted_url();
        let message = format!(
            "Redis at {to} has maxmemory-policy {policy}: under memory pressure it deletes keys, \
             and jobs with them, without any error; set maxmemory-policy noeviction"
        );
        if check == EvictionCheck::Refuse {
            return Err(Error::new(ErrorKind::EvictionPolicy, message));
        }
        static WARNED: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
        let mut warned = WARNED.lock().unwrap();
        if !warned.contains(&to) {
            warned.push(to);
            log::warn!("tideq: {message}");
        }
        Ok(())
    }
}

/// The text of an `INFO` reply.
pub(super) fn info_text(v: &Value) -> String {
    match v {
        Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        Value::VerbatimString { text, .. } => text.clone(),
        Value::SimpleString(s) => s.clone(),
        // A cluster answers a routed INFO per node.
        Value::Map(m) => m
            .iter()
            .map(|(_, v)| info_text(v))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The oldest servers tideq runs on: its scripts declare flags (`#!lua flags=`, Redis 7.0).
pub(crate) const MIN_REDIS: (u32, u32) = (7, 0);
pub(crate) const MIN_VALKEY: (u32, u32) = (7, 2);

/// Whether `INFO server` names a supported server; if not, what it is and what is needed.
/// A server that names no version (a proxy, say) is given the benefit of the doubt.
pub(crate) fn supported_server(info: &str) -> std::result::Result<(), String> {
    let field = |name: &str| {
        info.lines()
            .find_map(|l| l.trim().strip_prefix(name)?.strip_prefix(':'))
            .map(str::trim)
    };
    let parse = |v: &str| -> Option<(u32, u32)> {
        let mut parts = v.split('.').map(|p| p.parse::<u32>().ok());
        Some((parts.next()??, parts.next().flatten().unwrap_or(0)))
    };
    let need = format!(
        "tideq needs Redis {}.{} or later, or Valkey {}.{} or later",
        MIN_REDIS.0, MIN_REDIS.1, MIN_VALKEY.0, MIN_VALKEY.1
    );
    if let Some(v) = field("valkey_version") {
        return match parse(v) {
            Some(got) if got < MIN_VALKEY => Err(format!("Valkey {v}: {need}")),
            _ => Ok(()),
        };
    }
    match field("redis_version") {
        Some(v) => match parse(v) {
            Some(got) if got < MIN_REDIS => Err(format!("Redis {v}: {need}")),
            _ => Ok(()),
        },
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_older_than_redis_7_or_valkey_7_2_are_refused_naming_their_version() {
        let redis = |v: &str| format!("# Server\r\nredis_version:{v}\r\nredis_mode:standalone\r\n");
        let valkey = |v: &str| {
            format!(
                "# Server\r\nredis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:{v}\r\n"
            )
        };
        for ok in [
            redis("7.0.15"),
            redis("7.2.4"),
            redis("8.0.0"),
            valkey("7.2.5"),
            valkey("8.1.8"),
        ] {
            assert_eq!(supported_server(&ok), Ok(()), "{ok}");
        }
        let old = supported_server(&redis("6.2.14")).unwrap_err();
        assert!(
            old.starts_with("Redis 6.2.14: tideq needs Redis 7.0 or later"),
            "{old}"
        );
        let old = supported_server(&redis("5.0.7")).unwrap_err();
        assert!(old.contains("Redis 5.0.7"), "{old}");
        // A Valkey too old is named as Valkey, whatever Redis version it claims to be.
        let vk = "redis_version:7.0.0\r\nserver_name:valkey\r\nvalkey_version:7.0.1\r\n";
        assert!(supported_server(vk)
            .unwrap_err()
            .starts_with("Valkey 7.0.1"));
        // A server that names no version (a proxy) is not refused.
        assert_eq!(supported_server("# Server\r\n"), Ok(()));
    }
}
