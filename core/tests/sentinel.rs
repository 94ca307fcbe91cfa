//! A Sentinel-managed primary with one replica and three Sentinels, all real processes.

mod common;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{unique, RedisServer, SentinelSetup, MASTER_NAME};
use tideq::{Client, Config, EnqueueOptions, Job, Queue, QueueOptions, WorkerOptions};

fn role_of(port: u16) -> String {
    redis::Client::open(format!("redis://127.0.0.1:{port}"))
        .and_then(|c| c.get_connection())
        .and_then(|mut c| redis::cmd("ROLE").query::<Vec<redis::Value>>(&mut c))
        .ok()
        .and_then(|v| v.first().cloned())
        .and_then(|v| redis::from_redis_value::<String>(v).ok())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn producers_and_workers_carry_on_after_a_sentinel_failover() {
    let setup = SentinelSetup::start();
    // Sentinel failovers are not coordinated: the old primary accepts writes until it is demoted,
    // and those writes vanish. With replica_ack an enqueue succeeds only once a replica has the
    // job, so every *acknowledged* job survives; the others fail with NOT_REPLICATED (or
    // CONNECTION) and the producer may retry them with the same id.
    let client = Client::new(
        Config::sentinel(setup.sentinels.clone(), MASTER_NAME)
            .with_response_timeout(Duration::from_secs(2))
            .with_replica_ack(1, Duration::from_millis(300)),
    )
    .unwrap();
    let q = Queue::new(&client, &unique("sent"), QueueOptions::default()).unwrap();
    let done = Arc::new(Mutex::new(HashSet::new()));
    let d2 = done.clone();
    let opts = WorkerOptions {
        concurrency: 1,
        poll_interval: Duration::from_millis(200),
        ..Default::default()
    };
    // A worker slower than the producer, so a backlog sits on the primary while it changes: jobs
    // written to the old primary after the switch would vanish when it is demoted.
    let w = q
        .work(opts, move |job: Job| {
            d2.lock().unwrap().insert(job.id.clone());
            async {
                tokio::time::sleep(Duration::from_millis(30)).await;
                Ok::<(), String>(())
            }
        })
        .unwrap();
    let before = setup.primary_port();
    let mut acked = Vec::new();
    let mut errors = 0;
    let t = Instant::now();
    let mut failed_over_at = None;
    let mut i = 0;
    while t.elapsed() < Duration::from_secs(40) {
        if i == 50 {
            let mut s = redis::Client::open(setup.sentinels[0].as_str())
                .unwrap()
                .get_connection()
                .unwrap();
            redis::cmd("SENTINEL")
                .arg("FAILOVER")
                .arg(MASTER_NAME)
                .exec(&mut s)
                .unwrap();
        }
        let id = format!("f{i}");
        match q
            .enqueue(
                b"x",
                EnqueueOptions {
                    id: Some(id.clone()),
                    ..Default::default()
                },
            )
            .await
        {
            Ok(_) => acked.push(id),
            Err(_) => errors += 1,
        }
        i += 1;
        if failed_over_at.is_none() && i > 50 && setup.primary_port() != before {
            failed_over_at = Some(i);
        }
        // Keep writing until the old primary has been demoted (seconds after the switch): writes
        // that reached it in between would be lost.
        if failed_over_at.is_some_and(|at| i > at + 50) && role_of(before) == "slave" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(failed_over_at.is_some(), "the Sentinels never failed over");
    assert_ne!(setup.primary_port(), before);
    // Every acknowledged job is processed, by the worker that ran through the failover.
    let deadline = Instant::now() + Duration::from_secs(40);
    while Instant::now() < deadline && acked.iter().any(|id| !done.lock().unwrap().contains(id)) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let missing: Vec<&String> = acked
        .iter()
        .filter(|id| !done.lock().unwrap().contains(*id))
        .collect();
    assert!(
        missing.is_empty(),
        "{} acknowledged jobs never processed: {missing:?}",
        missing.len()
    );
    eprintln!(
        "sentinel failover: {} enqueued, {errors} enqueue errors during the switch",
        acked.len()
    );
    w.shutdown().await;
}

#[tokio::test]
async fn replica_ack_confirms_enqueues_or_says_not_replicated() {
    let primary = RedisServer::start_private(common::free_port(), &[]);
    let q_name = unique("ack");
    // No replica: WAIT cannot be satisfied.
    let lonely =
        Client::new(Config::new(&primary.url).with_replica_ack(1, Duration::from_millis(100)))
            .unwrap();
    let q = Queue::new(&lonely, &q_name, QueueOptions::default()).unwrap();
    let err = q
        .enqueue(
            b"x",
            EnqueueOptions {
                id: Some("a".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), "NOT_REPLICATED");
    assert!(
        q.get("a").await.unwrap().is_some(),
        "the job is on the primary"
    );
    assert!(!q
        .enqueue(
            b"x",
            EnqueueOptions {
                id: Some("a".into()),
                ..Default::default()
            }
        )
        .await
        .is_ok_and(|r| r.created));
    // A waiting enqueue does not hold up the client's other commands (it has its own connection).
    let slow =
        Client::new(Config::new(&primary.url).with_replica_ack(1, Duration::from_millis(1500)))
            .unwrap();
    let sq = Queue::new(&slow, &q_name, QueueOptions::default()).unwrap();
    sq.stats().await.unwrap();
    let waiting = tokio::spawn({
        let sq = sq.clone();
        async move { sq.enqueue(b"w", EnqueueOptions::default()).await }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let t = Instant::now();
    sq.stats().await.unwrap();
    assert!(
        t.elapsed() < Duration::from_millis(1000),
        "stats() waited behind WAIT for {:?}",
        t.elapsed()
    );
    assert_eq!(waiting.await.unwrap().unwrap_err().code(), "NOT_REPLICATED");
    // With a replica attached, the same enqueue is confirmed.
    let _replica = RedisServer::start_private(
        common::free_port(),
        &["--replicaof", "127.0.0.1", &primary.port.to_string()],
    );
    let mut ok = false;
    for _ in 0..50 {
        if q.enqueue(b"y", EnqueueOptions::default()).await.is_ok() {
            ok = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(ok, "enqueue never confirmed by the replica");
    let zero = Client::new(Config::new(&primary.url).with_replica_ack(0, Duration::from_secs(1)));
    assert_eq!(zero.unwrap_err().code(), "INVALID_ARGUMENT");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acl_user_works_through_sentinel_and_a_wrong_password_never_leaks() {
    let setup = SentinelSetup::start();
    for server in [&setup.primary, &setup.replica] {
        redis::cmd("ACL")
            .arg(&[
                "SETUSER",
                "app",
                "on",
                ">sentinel-pass",
                "~tideq:*",
                "+@all",
            ])
            .exec(&mut server.conn())
            .unwrap();
    }
    let creds = |pass: &str| {
        Config::sentinel(setup.sentinels.clone(), MASTER_NAME)
            .with_credentials(Some("app".into()), Some(pass.into()))
    };
    let client = Client::new(creds("sentinel-pass")).unwrap();
    let q = Queue::new(&client, &unique("sacl"), QueueOptions::default()).unwrap();
    q.enqueue(b"x", EnqueueOptions::default()).await.unwrap();
    assert_eq!(common::drain_noop(&q).await, 1);
    let wrong =
        Client::new(creds("bad-sentinel-pass").with_connect_timeout(Duration::from_secs(2)))
            .unwrap();
    common::assert_enqueue_refused_without_leaking(&wrong, "bad-sentinel-pass").await;
}

/// A TLS-only primary, replica and three Sentinels (Sentinels talk TLS to clients and to the
/// servers), all trusting one private CA.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_flow_through_a_tls_only_sentinel_setup() {
    use std::process::{Command, Stdio};
    if common::tls_unavailable().is_some() {
        return;
    }
    let certs = common::make_certs();
    let tls = |port: u16| -> Vec<String> {
        let c = |f: &str| certs.join(f).display().to_string();
        [
            "--port",
            "0",
            "--tls-port",
            &port.to_string(),
            "--tls-replication",
            "yes",
            "--tls-auth-clients",
            "no",
            "--tls-cert-file",
            &c("cert.pem"),
            "--tls-key-file",
            &c("key.pem"),
            "--tls-ca-cert-file",
            &c("ca.pem"),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    let wait_port = |port: u16| {
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "port {port} never opened");
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    let mut children = Vec::new();
    let (p, r) = (common::free_port(), common::free_port());
    let dir = certs.clone();
    for (port, extra) in [
        (p, vec![]),
        (
            r,
            vec!["--replicaof".to_string(), "127.0.0.1".into(), p.to_string()],
        ),
    ] {
        let mut args = tls(port);
        args.extend(extra);
        args.extend([
            "--dir".to_string(),
            dir.display().to_string(),
            "--dbfilename".into(),
            format!("{port}.rdb"),
        ]);
        children.push(
            Command::new("redis-server")
                .args(&args)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        );
        wait_port(port);
    }
    let mut sentinels = Vec::new();
    for i in 0..3 {
        let port = common::free_port();
        let conf = dir.join(format!("s{i}.conf"));
        std::fs::write(&conf, format!("sentinel monitor {MASTER_NAME} 127.0.0.1 {p} 2\nsentinel down-after-milliseconds {MASTER_NAME} 1000\n")).unwrap();
        let mut args = vec![conf.display().to_string(), "--sentinel".to_string()];
        let all = tls(port);
        let cut = all.iter().position(|a| a == "--save").unwrap();
        args.extend(all[..cut].iter().cloned()); // sentinels take no persistence options
        children.push(
            Command::new("redis-server")
                .args(&args)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        );
        wait_port(port);
        sentinels.push(format!("rediss://127.0.0.1:{port}"));
    }
    let ca = std::fs::read(certs.join("ca.pem")).unwrap();
    let client = Client::new(Config::sentinel(sentinels, MASTER_NAME).with_tls_ca(ca)).unwrap();
    let q = Queue::new(&client, &unique("stls"), QueueOptions::default()).unwrap();
    let mut enqueued = false;
    for _ in 0..50 {
        if q.enqueue(b"x", EnqueueOptions::default()).await.is_ok() {
            enqueued = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let ok = enqueued && { common::drain_noop(&q).await == 1 };
    for c in &mut children {
        let _ = c.kill();
        let _ = c.wait();
    }
    let _ = std::fs::remove_dir_all(&certs);
    assert!(ok, "no job went through the TLS Sentinel setup");
}
