//! The dashboard mounted in another app: the `dashboard_axum` example (an axum app nesting it
//! under `/admin/tideq` behind its own "login") against a private redis-server, and the bridge
//! the Python and Node bindings call. The app's hook decides read and act; the Host and CSRF
//! guards refuse as the standalone server's do; the page's links and API calls carry the prefix.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use common::dashboard::{count, http, populated, Resp};
use common::supervise::examples;
use common::*;
use tideq_cli::dashboard::{Action, BridgeRequest, Bridged, Dashboard, MountOptions};

/// The example app on a free port, killed on drop.
struct App {
    port: u16,
    child: Child,
}

impl App {
    fn start(redis: &Redis) -> Self {
        let port = free_port();
        let mut child = Command::new(examples().join("dashboard_axum"))
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .env("TIDEQ_REDIS_URL", &redis.url)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        // It prints its address once it listens.
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert!(line.starts_with("listening on"), "{line:?}");
        App { port, child }
    }

    fn get(&self, path: &str, user: Option<&str>) -> Resp {
        let h: Vec<(&str, &str)> = user.map(|u| ("X-User", u)).into_iter().collect();
        http(self.port, "GET", path, &h).unwrap()
    }

    /// A POST as the page sends it (the custom header, a same-origin Origin).
    fn post(&self, path: &str, user: &str) -> Resp {
        let origin = format!("http://127.0.0.1:{}", self.port);
        let h = [
            ("X-User", user),
            ("X-Tideq-Request", "1"),
            ("Origin", origin.as_str()),
        ];
        http(self.port, "POST", path, &h).unwrap()
    }
}

impl Drop for App {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const PAUSE: &str = "/admin/tideq/api/queues/mail/pause";

fn paused(redis: &Redis, rt: &tokio::runtime::Runtime) -> bool {
    rt.block_on(redis.queue("mail").stats()).unwrap().paused
}

#[test]
fn the_app_hook_decides_who_reads_and_who_acts() {
    let (rt, redis) = (rt(), Redis::start());
    populated(&redis, &rt, "mail");
    let app = App::start(&redis);
    // No user: the page, its assets and its API are refused.
    for path in [
        "/admin/tideq/",
        "/admin/tideq/app.js",
        "/admin/tideq/api/overview",
    ] {
        let e = app.get(path, None).refused(403);
        assert!(e.contains("authorize hook"), "{path}: {e}");
    }
    assert_eq!(
        app.get("/", None).body,
        "the app",
        "the host app's own route"
    );
    // bob reads, and his page shows no actions; his changes are refused.
    let o = app.get("/admin/tideq/api/overview", Some("bob")).json();
    assert_eq!(o["read_only"], true, "{o}");
    let mail = o["queues"]
        .as_array()
        .unwrap()
        .iter()
        .find(|q| q["name"] == "mail");
    assert_eq!(count(&mail.unwrap()["stats"], "ready"), 3);
    app.post(PAUSE, "bob").refused(403);
    assert!(!paused(&redis, &rt));
    // alice acts.
    let o = app.get("/admin/tideq/api/overview", Some("alice")).json();
    assert_eq!(o["read_only"], false);
    let r = app.post(PAUSE, "alice");
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(paused(&redis, &rt));
}

#[test]
fn a_mounted_dashboard_refuses_a_foreign_host_and_cross_site_changes() {
    let (rt, redis) = (rt(), Redis::start());
    populated(&redis, &rt, "mail");
    let app = App::start(&redis);
    let h = [("X-User", "alice"), ("Host", "attacker.example")];
    let e = http(app.port, "GET", "/admin/tideq/api/overview", &h)
        .unwrap()
        .refused(403);
    assert!(e.contains("allowed_hosts"), "{e}");
    // Without the custom header (a form or a plain fetch from another site).
    let h = [("X-User", "alice")];
    let e = http(app.port, "POST", PAUSE, &h).unwrap().refused(403);
    assert!(e.contains("X-Tideq-Request"), "{e}");
    // With it, from another origin.
    let h = [
        ("X-User", "alice"),
        ("X-Tideq-Request", "1"),
        ("Origin", "http://attacker.example"),
    ];
    let e = http(app.port, "POST", PAUSE, &h).unwrap().refused(403);
    assert!(e.contains("cross-origin"), "{e}");
    assert!(!paused(&redis, &rt), "nothing changed");
    // The security headers come with every answer.
    let r = app.get("/admin/tideq/", Some("bob"));
    assert_eq!(r.headers["x-frame-options"], "DENY");
    assert!(r.headers["content-security-policy"].contains("default-src 'none'"));
}

/// The `href` and `src` attributes of a page.
fn references(html: &str) -> Vec<String> {
    let mut out = Vec::new();
    for attr in ["href=\"", "src=\""] {
        for part in html.split(attr).skip(1) {
            out.push(part.split('"').next().unwrap().to_string());
        }
    }
    out
}

#[test]
fn every_link_and_api_call_of_the_mounted_page_carries_the_prefix() {
    let (rt, redis) = (rt(), Redis::start());
    populated(&redis, &rt, "mail");
    let app = App::start(&redis);
    // The prefix without its '/' redirects to the page's address (relative links need it).
    let r = app.get("/admin/tideq?x=1", Some("bob"));
    assert_eq!(r.status, 308, "{}", r.body);
    assert_eq!(r.headers["location"], "/admin/tideq/?x=1");
    let page = app.get("/admin/tideq/", Some("bob"));
    assert_eq!(page.status, 200);
    let refs = references(&page.body);
    assert!(refs.len() >= 3, "{refs:?}");
    for r in refs {
        if r.starts_with('#') || r.starts_with("data:") {
            continue;
        }
        assert!(!r.starts_with('/') && !r.contains("//"), "absolute: {r}");
        let got = app.get(&format!("/admin/tideq/{r}"), Some("bob"));
        assert_eq!(got.status, 200, "{r}");
    }
    // The script calls the API relatively (`api/...`), nothing from the server's root.
    let js = app.get("/admin/tideq/app.js", Some("bob")).body;
    assert!(js.contains("fetch(`api/${path}`"));
    for absolute in [
        "fetch('/",
        "fetch(\"/",
        "fetch(`/",
        "'/api",
        "\"/api",
        "`/api",
    ] {
        assert!(!js.contains(absolute), "{absolute}");
    }
    for path in [
        "queues/mail",
        "queues/mail/jobs?state=ready",
        "queues/mail/jobs/r1",
    ] {
        let r = app.get(&format!("/admin/tideq/api/{path}"), Some("bob"));
        assert_eq!(r.status, 200, "{path}: {}", r.body);
    }
}

fn bridge_get(path: &str) -> BridgeRequest {
    BridgeRequest {
        method: "GET".into(),
        prefix: "/tideq".into(),
        path: path.into(),
        headers: vec![("host".into(), b"127.0.0.1:8000".to_vec())],
        ..Default::default()
    }
}

#[test]
fn the_bridge_asks_the_app_hook_only_what_the_request_needs() {
    let (rt, redis) = (rt(), Redis::start());
    populated(&redis, &rt, "mail");
    rt.block_on(async {
        let client = tideq::Client::open(&redis.url).unwrap();
        let d = Dashboard::bridged(client, MountOptions::new()).unwrap();
        let overview = bridge_get("/api/overview");
        assert_eq!(
            d.handle(overview.clone(), &[]).await,
            Bridged::Ask(Action::Read)
        );
        let read = [(Action::Read, true)];
        // The overview asks whether the page may show actions.
        assert_eq!(
            d.handle(overview.clone(), &read).await,
            Bridged::Ask(Action::Act)
        );
        let both = [(Action::Read, true), (Action::Act, false)];
        let Bridged::Response { status, body, .. } = d.handle(overview, &both).await else {
            panic!("no response");
        };
        assert_eq!(status, 200);
        let o: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(o["read_only"], true);
        // Refused by the hook: 403, nothing read.
        let Bridged::Response { status, .. } = d
            .handle(bridge_get("/api/queues/mail"), &[(Action::Read, false)])
            .await
        else {
            panic!("no response");
        };
        assert_eq!(status, 403);
        // The prefix itself redirects to the page's address.
        let Bridged::Response {
            status, headers, ..
        } = d.handle(bridge_get(""), &read).await
        else {
            panic!("no response");
        };
        assert_eq!(status, 308);
        let location = headers.iter().find(|(k, _)| k == "location").unwrap();
        assert_eq!(location.1, b"/tideq/");
        // A foreign Host is refused before the hook is asked.
        let mut foreign = bridge_get("/api/overview");
        foreign.headers = vec![("host".into(), b"attacker.example".to_vec())];
        let Bridged::Response { status, .. } = d.handle(foreign, &[]).await else {
            panic!("asked the hook for a foreign host");
        };
        assert_eq!(status, 403);
    });
}

#[test]
fn a_mounted_dashboard_without_an_authorize_hook_or_with_a_bad_host_name_is_refused() {
    let client = tideq::Client::open("redis://127.0.0.1:1").unwrap();
    let e = Dashboard::new(client.clone(), MountOptions::new())
        .err()
        .unwrap();
    assert_eq!(e.kind(), tideq::ErrorKind::InvalidArgument);
    assert!(e.to_string().contains("authorize"), "{e}");
    let opts = MountOptions::new()
        .authorize(|_, _| async { true })
        .allowed_hosts(["https://app.example.com"]);
    let e = Dashboard::new(client, opts).err().unwrap();
    assert!(e.to_string().contains("allowed_hosts"), "{e}");
}
