//! Who may reach `tideq dashboard` and `tideq exporter`: a non-loopback dashboard without a token
//! is refused unless `--insecure`, a read token reads but changes nothing, host names outside
//! the loopback and `--allow-host` are refused by both (DNS rebinding), and the exporter answers
//! each scraper in the format it asked for.

mod common;

use common::dashboard::*;
use common::*;
use tideq::JobState;

#[test]
fn a_dashboard_on_a_non_loopback_address_without_a_token_is_refused_unless_insecure() {
    let redis = Redis::start();
    let port = free_port().to_string();
    let listen = format!("0.0.0.0:{port}");
    let out = redis.tideq(&["dashboard", "--listen", &listen]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("without a token") && err.contains("--insecure") && err.contains("--token"),
        "{err}"
    );
    // With --insecure it serves (and, listening everywhere with no --allow-host, answers any
    // host name: the operator asked for exactly that).
    let d = Dashboard::start_at("0.0.0.0", &["--url", &redis.url], &["--insecure"], &[]);
    let any = http(
        d.port,
        "GET",
        "/api/overview",
        &[("Host", "queues.example")],
    )
    .unwrap();
    assert_eq!(any.status, 200, "{}", any.body);
    // With a token it serves without --insecure.
    let d = Dashboard::start_at("0.0.0.0", &["--url", &redis.url], &["--token", "t0k"], &[]);
    assert_eq!(d.get("/").status, 200);
}

#[test]
fn a_read_token_reads_and_shows_no_actions_but_cannot_change_anything() {
    let rt = rt();
    let redis = Redis::start();
    let q = populated(&redis, &rt, "mail");
    let args = ["--token", "admin-t", "--read-token", "read-t"];
    let d = Dashboard::start(&["--url", &redis.url], &args, &[]);
    let as_reader = [("Authorization", "Bearer read-t")];
    let o = http(d.port, "GET", "/api/overview", &as_reader).unwrap();
    assert_eq!(o.status, 200, "{}", o.body);
    assert_eq!(o.json()["read_only"], true, "the page hides its actions");
    let dead = http(
        d.port,
        "GET",
        "/api/queues/mail/jobs?state=dead",
        &as_reader,
    )
    .unwrap();
    assert_eq!(dead.status, 200);
    let change = |token: &str| {
        let auth = format!("Bearer {token}");
        http(
            d.port,
            "POST",
            "/api/queues/mail/dead/d1/requeue",
            &[("X-Tideq-Request", "1"), ("Authorization", &auth)],
        )
        .unwrap()
    };
    assert!(change("read-t").refused(403).contains("only read"));
    assert_eq!(
        rt.block_on(q.get("d1")).unwrap().unwrap().state,
        JobState::Dead
    );
    let as_admin = [("Authorization", "Bearer admin-t")];
    let o = http(d.port, "GET", "/api/overview", &as_admin).unwrap();
    assert_eq!(o.json()["read_only"], false);
    assert_eq!(change("admin-t").status, 200);
    assert_eq!(
        rt.block_on(q.get("d1")).unwrap().unwrap().state,
        JobState::Ready
    );
    change("neither").refused(401);
    // The same token for both roles is a usage error.
    let out = redis.tideq(&["dashboard", "--token", "x", "--read-token", "x"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

#[test]
fn allowed_host_names_are_answered_and_a_rebound_name_is_refused() {
    let redis = Redis::start();
    let d = Dashboard::start(
        &["--url", &redis.url],
        &["--allow-host", "queues.example"],
        &[],
    );
    let named = http(
        d.port,
        "GET",
        "/api/overview",
        &[("Host", "queues.example:9465")],
    )
    .unwrap();
    assert_eq!(named.status, 200, "{}", named.body);
    let evil = http(d.port, "GET", "/", &[("Host", "attacker.example")]).unwrap();
    assert!(evil.refused(403).contains("queues.example"));
    let out = redis.tideq(&["dashboard", "--allow-host", "http://queues.example"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

#[test]
fn the_exporter_answers_openmetrics_when_asked_and_the_text_format_otherwise() {
    let redis = Redis::start();
    let rt = rt();
    let q = redis.queue("scraped");
    rt.block_on(q.enqueue(b"x", with_id("a"))).unwrap();
    let e = Exporter::start(&["--url", &redis.url], &[]);
    // What Prometheus sends first: OpenMetrics, labelled as such, ending in # EOF.
    let prom = "application/openmetrics-text;version=1.0.0;q=0.5,text/plain;version=0.0.4;q=0.3";
    let om = http(e.port, "GET", "/metrics", &[("Accept", prom)]).unwrap();
    assert_eq!(om.status, 200);
    assert!(
        om.headers["content-type"].starts_with("application/openmetrics-text; version=1.0.0"),
        "{:?}",
        om.headers
    );
    assert!(om.body.ends_with("# EOF\n"), "{}", om.body);
    assert!(
        om.body.contains("# TYPE tideq_jobs_enqueued counter\n"),
        "{}",
        om.body
    );
    // Anyone else (curl, an older scraper): the text format 0.0.4, as its header says.
    let text = http(e.port, "GET", "/metrics", &[]).unwrap();
    assert!(
        text.headers["content-type"].starts_with("text/plain; version=0.0.4"),
        "{:?}",
        text.headers
    );
    assert!(!text.body.contains("# EOF"), "{}", text.body);
    assert!(
        text.body
            .contains("# TYPE tideq_jobs_enqueued_total counter\n")
            && text
                .body
                .contains("tideq_jobs_enqueued_total{queue=\"scraped\"} 1\n"),
        "{}",
        text.body
    );
    // Names say what they count; histograms have a 5 s bucket.
    assert!(
        text.body
            .contains("# TYPE tideq_jobs_dead_lettered_total counter"),
        "{}",
        text.body
    );
    assert!(!text.body.contains("tideq_jobs_failed"), "{}", text.body);
    assert!(
        text.body
            .contains("tideq_job_run_seconds_bucket{le=\"5.0\",queue=\"scraped\"} 0"),
        "{}",
        text.body
    );
}

#[test]
fn the_exporter_refuses_a_rebound_host_name_and_answers_allowed_ones() {
    let redis = Redis::start();
    let e = Exporter::start(&["--url", &redis.url], &[]);
    let evil = http(e.port, "GET", "/metrics", &[("Host", "attacker.example")]).unwrap();
    assert_eq!(evil.status, 403, "{}", evil.body);
    assert!(evil.body.contains("localhost"), "{}", evil.body);
    let local = http(e.port, "GET", "/metrics", &[("Host", "localhost:9464")]).unwrap();
    assert_eq!(local.status, 200);
    let e = Exporter::start(
        &["--url", &redis.url],
        &["--allow-host", "metrics.internal"],
    );
    let named = http(
        e.port,
        "GET",
        "/metrics",
        &[("Host", "metrics.internal:9464")],
    )
    .unwrap();
    assert_eq!(named.status, 200, "{}", named.body);
    let evil = http(e.port, "GET", "/metrics", &[("Host", "attacker.example")]).unwrap();
    assert_eq!(evil.status, 403);
}

/// Issue 40, item 12: four read-token clients asking random queue names drove 575 SCAN calls a
/// second (each request waited ~1 s for a keyspace pass). A name not shown is now looked up by
/// its own key alone: one GET per request, never a SCAN.
#[test]
fn requests_for_unknown_queue_names_cost_one_get_each_and_never_a_scan() {
    let rt = rt();
    let redis = Redis::start();
    populated(&redis, &rt, "mail");
    // A keyspace worth scanning.
    let client = tideq::Client::open(&redis.url).unwrap();
    rt.block_on(async {
        for i in 0..20 {
            let q = tideq::Queue::new(&client, &format!("q{i}"), Default::default()).unwrap();
            q.enqueue(b"x", Default::default()).await.unwrap();
        }
    });
    let d = Dashboard::start(
        &["--url", &redis.url],
        &["--read-token", "look", "--refresh", "3600"],
        &[],
    );
    let auth = [("Authorization", "Bearer look")];
    let before = command_calls(&redis.url);
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let port = d.port;
            std::thread::spawn(move || {
                for i in 0..50 {
                    let path = format!("/api/queues/random-{t}-{i}");
                    let r = http(port, "GET", &path, &auth).unwrap();
                    assert_eq!(r.status, 404, "{}", r.body);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let after = command_calls(&redis.url);
    let delta = |c: &str| after.get(c).unwrap_or(&0) - before.get(c).unwrap_or(&0);
    assert_eq!(delta("scan"), 0, "{after:?}");
    assert_eq!(delta("get"), 200, "{after:?}");
    // A real queue is still found at once by its address.
    assert_eq!(
        http(d.port, "GET", "/api/queues/q7", &auth).unwrap().status,
        200
    );
}
