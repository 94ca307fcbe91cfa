//! Which `Host` names the dashboard and the exporter answer, against DNS rebinding: a page on an
//! attacker's domain that resolves to this machine would otherwise be same-origin with them.
//! Loopback names (`localhost`, `127.x.y.z`, `[::1]`) are always answered; other names only when
//! listed with `--allow-host`. Listening on a loopback address with no list, only loopback names
//! are answered; listening on another address with no list, every name is (the operator reaches
//! it by names this process cannot know), which the dashboard allows only with a token.

use std::net::SocketAddr;

/// The `Host` names a server answers.
#[derive(Clone, Debug)]
pub struct HostCheck {
    /// `--allow-host` names, lowercased, without ports.
    allowed: Vec<String>,
    /// Every name is answered (not loopback-bound, and no list; or `"*"` when mounted).
    any: bool,
    /// The option that lists names, for messages: `--allow-host`, or `allowed_hosts` when the
    /// dashboard is mounted in another app.
    option: &'static str,
}

impl HostCheck {
    pub fn new(bound: SocketAddr, allowed: &[String]) -> Result<Self, String> {
        let names = names(allowed, |a| {
            format!(
                "--allow-host {a:?}: give a host name or address without scheme or port \
                 (e.g. --allow-host queues.example.com)"
            )
        })?;
        Ok(HostCheck {
            any: names.is_empty() && !bound.ip().is_loopback(),
            allowed: names,
            option: "--allow-host",
        })
    }

    /// The names a dashboard mounted in another app answers: loopback names and `allowed`, or
    /// every name when `allowed` holds `"*"` (the app, or a proxy in front of it, checks `Host`
    /// itself). The app's own names cannot be known from inside it, hence the list.
    pub fn mounted(allowed: &[String]) -> Result<Self, String> {
        let any = allowed.iter().any(|a| a.trim() == "*");
        let listed: Vec<String> = allowed
            .iter()
            .filter(|a| a.trim() != "*")
            .cloned()
            .collect();
        let names = names(&listed, |a| {
            format!(
                "allowed_hosts {a:?}: give a host name or address without scheme or port \
                 (e.g. \"queues.example.com\"), or \"*\" to answer every name"
            )
        })?;
        Ok(HostCheck {
            any,
            allowed: names,
            option: "allowed_hosts",
        })
    }

    /// Whether a request naming `host` (its `Host` header, maybe with a port) is answered.
    pub fn allows(&self, host: &str) -> bool {
        if self.any || loopback_host(host) {
            return true;
        }
        let name = host_name(host).to_ascii_lowercase();
        self.allowed
            .iter()
            .any(|a| a.trim_matches(['[', ']']) == name)
    }

    /// Why a request was refused, for its answer.
    pub fn refusal(&self, what: &str) -> String {
        if self.option == "allowed_hosts" {
            let listed = if self.allowed.is_empty() {
                String::new()
            } else {
                format!(" and {}", self.allowed.join(", "))
            };
            format!(
                "this {what} answers only localhost{listed}: list the names the app is served \
                 under in allowed_hosts (or \"*\" when the app checks Host itself)"
            )
        } else if self.allowed.is_empty() {
            format!("this {what} listens on a loopback address: open it as localhost or 127.0.0.1 (or start it with --allow-host NAME)")
        } else {
            format!(
                "this {what} answers only localhost and {} (--allow-host)",
                self.allowed.join(", ")
            )
        }
    }
}

/// `allowed` checked and lowercased (`bad` says why one is refused).
fn names(allowed: &[String], bad: impl Fn(&str) -> String) -> Result<Vec<String>, String> {
    let mut names = Vec::with_capacity(allowed.len());
    for a in allowed {
        let name = a.trim().to_ascii_lowercase();
        if name.is_empty() || name.contains(['/', ' ', ':']) && !name.starts_with('[') {
            return Err(bad(a));
        }
        names.push(name);
    }
    Ok(names)
}

/// The name of a `host[:port]` (an IPv6 address without its brackets).
fn host_name(host: &str) -> &str {
    match host.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(h, _)| h),
    }
}

/// A loopback host name (`localhost`, `127.x.y.z`, `[::1]`), with or without a port.
pub fn loopback_host(host: &str) -> bool {
    let name = host_name(host);
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(bound: &str, allowed: &[&str]) -> HostCheck {
        let allowed: Vec<String> = allowed.iter().map(|s| s.to_string()).collect();
        HostCheck::new(bound.parse().unwrap(), &allowed).unwrap()
    }

    #[test]
    fn loopback_hosts() {
        for h in [
            "localhost",
            "localhost:9465",
            "127.0.0.1:80",
            "127.1.2.3",
            "[::1]:9465",
        ] {
            assert!(loopback_host(h), "{h}");
        }
        for h in ["evil.example:9465", "10.0.0.1:9465", "", "[::2]:1"] {
            assert!(!loopback_host(h), "{h}");
        }
    }

    #[test]
    fn a_rebound_name_is_refused_and_allowed_names_are_answered() {
        let local = check("127.0.0.1:9465", &[]);
        assert!(local.allows("localhost:9465"));
        assert!(!local.allows("attacker.example:9465"));
        let listed = check("0.0.0.0:9465", &["Queues.Example.com", "10.0.0.5"]);
        assert!(listed.allows("queues.example.com:9465"));
        assert!(listed.allows("10.0.0.5"));
        assert!(listed.allows("127.0.0.1:9465"));
        assert!(!listed.allows("attacker.example:9465"));
        assert!(!listed.allows(""));
        // Listening everywhere with no list: every name (the dashboard then needs a token).
        assert!(check("0.0.0.0:9465", &[]).allows("anything.example"));
    }

    #[test]
    fn an_allowed_host_with_a_scheme_or_port_is_refused() {
        for bad in ["http://queues.example.com", "queues.example.com:9465", ""] {
            let r = HostCheck::new("0.0.0.0:1".parse().unwrap(), &[bad.to_string()]);
            assert!(r.is_err(), "{bad}");
        }
    }

    #[test]
    fn a_mounted_dashboard_answers_loopback_and_listed_names_or_every_name_with_a_star() {
        let m = HostCheck::mounted(&[]).unwrap();
        assert!(m.allows("127.0.0.1:8000"));
        assert!(!m.allows("app.example.com"));
        assert!(m.refusal("dashboard").contains("allowed_hosts"));
        let m = HostCheck::mounted(&["App.Example.com".into()]).unwrap();
        assert!(m.allows("app.example.com:443"));
        assert!(!m.allows("attacker.example"));
        assert!(HostCheck::mounted(&["*".into()])
            .unwrap()
            .allows("any.example"));
        let e = HostCheck::mounted(&["https://app.example.com".into()]).unwrap_err();
        assert!(e.contains("allowed_hosts"), "{e}");
    }
}
