//! TLS (`rediss://`) with an ACL user, against a real redis-server serving TLS only.

mod common;

use std::time::Duration;

use common::{free_port, RedisServer};
use tideq::{CappedOptions, CappedQueue, Client, Config, EnqueueOptions, Queue, QueueOptions};

/// A redis-server serving TLS only (certificates from a private CA), with an ACL user for the
/// test.
fn start_tls_server() -> (RedisServer, std::path::PathBuf) {
    let certs = common::make_certs();
    let acl_user = ["--user", "app", "on", ">tls-pass", "~tideq:*", "+@all"];
    (
        RedisServer::start_tls(free_port(), &certs, &acl_user),
        certs,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_queue_kinds_work_over_tls_with_an_acl_user() {
    if common::tls_unavailable().is_some() {
        return;
    }
    let (server, certs) = start_tls_server();
    // The server's certificate comes from a private CA: trust that CA (verification stays on).
    let ca = std::fs::read(certs.join("ca.pem")).unwrap();
    let url = format!("rediss://127.0.0.1:{}", server.port);
    let tls = |user: &str, pass: &str| {
        Config::new(&url)
            .with_tls_ca(ca.clone())
            .with_credentials(Some(user.into()), Some(pass.into()))
    };
    let client = Client::new(tls("app", "tls-pass")).unwrap();
    client.ping().await.unwrap();
    let capped = CappedQueue::new(&client, "tls", CappedOptions::default()).unwrap();
    capped.push("g", b"over tls").await.unwrap();
    assert_eq!(
        capped.pop_batch("g", 10).await.unwrap(),
        vec![b"over tls".to_vec()]
    );
    let q = Queue::new(&client, "tls-jobs", QueueOptions::default()).unwrap();
    q.enqueue(b"job", EnqueueOptions::default()).await.unwrap();
    assert_eq!(common::drain_noop(&q).await, 1);
    // Plain redis:// to a TLS-only port is a CONNECTION error; a wrong password never leaks.
    let plain = Client::new(
        Config::new(format!("redis://127.0.0.1:{}", server.port))
            .with_connect_timeout(Duration::from_secs(1)),
    )
    .unwrap();
    assert_eq!(plain.ping().await.unwrap_err().code(), "CONNECTION");
    let wrong = Client::new(tls("app", "nope-pass")).unwrap();
    let err = wrong.ping().await.unwrap_err();
    assert!(!err.to_string().contains("nope-pass"), "{err}");
    // Without the CA, the certificate is rejected: verification is really on.
    let untrusted = Client::new(
        Config::new(&url).with_credentials(Some("app".into()), Some("tls-pass".into())),
    )
    .unwrap();
    assert_eq!(untrusted.ping().await.unwrap_err().code(), "CONNECTION");
}

#[test]
fn a_certificate_authority_that_is_not_pem_is_invalid_argument() {
    let err =
        Client::new(Config::new("rediss://127.0.0.1:1").with_tls_ca(b"not a certificate".to_vec()))
            .unwrap_err();
    assert_eq!(err.code(), "INVALID_ARGUMENT", "{err}");
}

#[test]
fn a_certificate_authority_with_a_damaged_body_is_invalid_argument() {
    let certs = common::make_certs();
    let pem = std::fs::read_to_string(certs.join("ca.pem")).unwrap();
    // Valid armour, broken contents: one base64 line cut short, and a body of valid base64 that
    // is not a certificate.
    let mut lines: Vec<&str> = pem.lines().collect();
    lines[3] = &lines[3][..10];
    let cut = lines.join("\n");
    let not_der = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
    for bad in [cut.as_str(), not_der] {
        let err = Client::new(Config::new("rediss://127.0.0.1:1").with_tls_ca(bad.as_bytes()))
            .unwrap_err();
        assert_eq!(err.code(), "INVALID_ARGUMENT", "{err}");
    }
    // The intact file is accepted.
    Client::new(Config::new("rediss://127.0.0.1:1").with_tls_ca(pem.as_bytes())).unwrap();
}
