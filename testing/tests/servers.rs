//! The harness's own servers answer as the tests expect them to: a plain one, one with a
//! password, and one speaking TLS only.

use std::process::Command;

use tideq_testing::{free_port, make_certs, tls_unavailable, RedisServer};

#[test]
fn a_private_server_answers_and_restarts_on_its_port() {
    let mut server = RedisServer::start_private(free_port(), &[]);
    let pong: String = redis::cmd("PING").query(&mut server.conn()).unwrap();
    assert_eq!(pong, "PONG");
    let port = server.port;
    server.restart();
    assert_eq!(server.port, port);
    let pong: String = redis::cmd("PING").query(&mut server.conn()).unwrap();
    assert_eq!(pong, "PONG");
}

#[test]
fn a_server_with_a_password_is_up_and_refuses_without_it() {
    let server = RedisServer::start_private(free_port(), &["--requirepass", "pw"]);
    let err = redis::cmd("PING")
        .query::<String>(&mut server.conn())
        .unwrap_err();
    assert_eq!(err.code(), Some("NOAUTH"));
}

#[test]
fn a_tls_server_speaks_tls_only() {
    if tls_unavailable().is_some() {
        return;
    }
    let certs = make_certs();
    let server = RedisServer::start_tls(free_port(), &certs, &[]);
    assert!(server.url.starts_with("rediss://127.0.0.1:"));
    let ping = |tls: bool| {
        let mut cmd = Command::new("redis-cli");
        if tls {
            cmd.arg("--tls").arg("--cacert").arg(certs.join("ca.pem"));
        }
        let out = cmd
            .args(["-p", &server.port.to_string(), "PING"])
            .output()
            .expect("redis-cli");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    assert_eq!(ping(true), "PONG");
    assert_ne!(ping(false), "PONG");
    let _ = std::fs::remove_dir_all(certs);
}
