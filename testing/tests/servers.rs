//! The harness's own servers answer as the tests expect them to: a plain one, one with a
//! password, one speaking TLS only, and clusters of other sizes than the default.

use std::process::Command;

use tideq_testing::{free_port, make_certs, tls_unavailable, RedisCluster, RedisServer};

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

#[test]
fn a_sized_cluster_has_the_masters_and_replicas_asked_with_the_slots_split_evenly() {
    for (primaries, replicas) in [(1, 0), (2, 0), (2, 1)] {
        let cluster = RedisCluster::start_sized(primaries, replicas);
        assert_eq!(cluster.nodes.len(), primaries * (1 + replicas));
        let nodes = cluster.topology();
        let masters: Vec<_> = nodes.iter().filter(|n| n.master).collect();
        assert_eq!(masters.len(), primaries, "{nodes:?}");
        assert_eq!(
            nodes.len() - masters.len(),
            primaries * replicas,
            "{nodes:?}"
        );
        // Slot i * 16384 / primaries opens master i's range: each on a master of its own.
        let mut owners: Vec<String> = (0..primaries)
            .map(|i| cluster.master_of_slot((i * 16384 / primaries) as u16))
            .collect();
        owners.sort();
        owners.dedup();
        assert_eq!(owners.len(), primaries);
        let info: String = redis::cmd("CLUSTER")
            .arg("INFO")
            .query(&mut cluster.node(0))
            .unwrap();
        assert!(info.contains("cluster_state:ok"), "{info}");
        assert!(info.contains("cluster_slots_assigned:16384"), "{info}");
    }
}
