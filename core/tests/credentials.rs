//! Credentials that rotate (issue 45, part 2): a credentials provider is asked on every
//! connection, connections re-authenticate after the ACL password changes while workers run,
//! and no job is lost; a failing provider is an `AUTH` error naming it, retried on the next
//! reconnection; a provider beside a password is refused.

mod common;

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::jobs::{id, info_u64, wait_for, wait_until};
use common::{unique, RedisCluster, RedisServer, SentinelSetup, MASTER_NAME};
use tideq::{Client, Config, Credentials, Job, Queue, QueueOptions, WorkerOptions};

/// What the tests' provider gives, and how often it was asked.
#[derive(Clone)]
struct Token {
    /// `Err` while the "token service" is down.
    current: Arc<Mutex<Result<String, String>>>,
    calls: Arc<AtomicUsize>,
}

impl Token {
    fn new(password: &str) -> Self {
        Token {
            current: Arc::new(Mutex::new(Ok(password.to_string()))),
            calls: Arc::default(),
        }
    }

    fn set(&self, v: Result<String, String>) {
        *self.current.lock().unwrap() = v;
    }

    fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    /// A config for `url` whose provider logs in as `user` with the current password.
    fn config(&self, url: &str, user: &str) -> Config {
        self.provide(Config::new(url), user)
    }

    fn provide(&self, cfg: Config, user: &str) -> Config {
        let t = self.clone();
        let user = user.to_string();
        cfg.with_credentials_provider(move || {
            let t = t.clone();
            let user = user.clone();
            async move {
                t.calls.fetch_add(1, Ordering::SeqCst);
                // A token service answers after a while.
                tokio::time::sleep(Duration::from_millis(5)).await;
                let pw = t.current.lock().unwrap().clone()?;
                Ok::<_, String>(Credentials::user(user, pw))
            }
        })
    }
}

fn acl(server: &RedisServer, args: &[&str]) {
    let mut cmd = redis::cmd("ACL");
    for a in args {
        cmd.arg(*a);
    }
    cmd.query::<()>(&mut server.conn()).unwrap();
}

fn kill_clients(server: &RedisServer) {
    redis::cmd("CLIENT")
        .arg("KILL")
        .arg("TYPE")
        .arg("normal")
        .query::<()>(&mut server.conn())
        .unwrap();
}

/// The error of the first command that fails otherwise than on the connection the kill closed.
async fn login_error(client: &Client) -> tideq::Error {
    for _ in 0..5 {
        match client.ping().await {
            Err(e) if e.code() == "CONNECTION" => continue,
            Err(e) => return e,
            Ok(()) => panic!("the login should fail"),
        }
    }
    panic!("only connection errors")
}

/// Enqueues job `job_id`, sending it again while it fails (the contract: an enqueue that failed
/// may be sent again with the same id, at most one job per id); returns how many retries.
async fn enqueue_until_taken(q: &Queue, job_id: &str) -> usize {
    let mut tries = 0;
    while let Err(e) = q.enqueue(b"x", id(job_id)).await {
        tries += 1;
        assert!(tries < 50, "enqueue keeps failing: {e}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tries
}

/// Every one of the `jobs` jobs completed, each seen by a handler, none left or dead.
async fn all_ran_once(q: &Queue, seen: &Mutex<HashSet<String>>, jobs: usize, within: Duration) {
    let all = wait_for(within, || async {
        q.stats().await.ok().map(|s| s.completed as usize) == Some(jobs)
    })
    .await;
    let stats = q.stats().await.unwrap();
    assert!(all, "{stats:?}");
    assert_eq!(seen.lock().unwrap().len(), jobs);
    assert_eq!(
        (stats.ready, stats.active, stats.dead),
        (0, 0, 0),
        "{stats:?}"
    );
}

async fn stop_all(workers: Vec<tideq::Worker>) {
    for w in &workers {
        w.stop();
    }
    for w in workers {
        w.join().await;
    }
}

fn server_with_user(user: &str, password: &str) -> RedisServer {
    let server = RedisServer::start_private(common::free_port(), &[]);
    let pw = format!(">{password}");
    acl(
        &server,
        &["SETUSER", user, "reset", "on", &pw, "~*", "&*", "+@all"],
    );
    server
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_provider_is_asked_on_each_new_connection() {
    let server = server_with_user("app", "p1");
    let token = Token::new("p1");
    let url = format!("redis://127.0.0.1:{}", server.port);
    let client = Client::new(token.config(&url, "app")).unwrap();
    assert_eq!(token.calls(), 0, "the client connects lazily");
    client.ping().await.unwrap();
    client.ping().await.unwrap();
    assert_eq!(token.calls(), 1, "one connection, one call");

    kill_clients(&server);
    // A command met by the kill may fail with CONNECTION (it may have been sent).
    while client.ping().await.is_err() {}
    assert_eq!(token.calls(), 2, "the reconnection asks again");

    // An idle worker's wake-up listener is a connection of its own.
    let q = Queue::new(&client, &unique("cred"), QueueOptions::default()).unwrap();
    let w = q.work(WorkerOptions::default(), |_j: Job| async {
        Ok::<(), String>(())
    });
    let w = w.unwrap();
    common::jobs::until_blocked(&server, 1).await;
    let after_worker = token.calls();
    assert!(after_worker >= 3, "{after_worker} calls");
    // Killing every connection makes each one that comes back ask once more.
    kill_clients(&server);
    // (An enqueue met by the kill may fail with CONNECTION: sent again with its id.)
    while q.enqueue(b"x", id("after-kill")).await.is_err() {}
    assert!(
        wait_until(Duration::from_secs(10), || token.calls()
            >= after_worker + 2)
        .await
    );
    w.stop();
    w.join().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rotated_password_reauthenticates_every_connection_and_loses_no_job() {
    const JOBS: usize = 1500;
    let server = server_with_user("app", "old-pass");
    let token = Token::new("old-pass");
    let url = format!("redis://127.0.0.1:{}", server.port);
    let client = Client::new(
        token
            .config(&url, "app")
            .with_response_timeout(Duration::from_secs(5)),
    )
    .unwrap();
    let q = Queue::new(&client, &unique("rot"), QueueOptions::default()).unwrap();
    let seen = Arc::new(Mutex::new(HashSet::new()));
    let s2 = seen.clone();
    // Two workers, each with its own connections.
    let workers: Vec<_> = (0..2)
        .map(|_| {
            let s2 = s2.clone();
            q.work(
                WorkerOptions {
                    concurrency: 4,
                    ..Default::default()
                },
                move |job: Job| {
                    s2.lock().unwrap().insert(job.id.clone());
                    async { Ok::<(), String>(()) }
                },
            )
            .unwrap()
        })
        .collect();

    let mut retried = 0;
    for i in 0..JOBS {
        if i == JOBS / 3 || i == 2 * JOBS / 3 {
            // Rotate: the new password first, then the provider, then the old one goes, and
            // every connection is dropped so all of them log in again.
            let (old, new) = if i == JOBS / 3 {
                ("old-pass", "new-pass")
            } else {
                ("new-pass", "newer-pass")
            };
            acl(&server, &["SETUSER", "app", &format!(">{new}")]);
            token.set(Ok(new.to_string()));
            acl(&server, &["SETUSER", "app", &format!("<{old}")]);
            kill_clients(&server);
        }
        retried += enqueue_until_taken(&q, &format!("j{i}")).await;
    }
    all_ran_once(&q, &seen, JOBS, Duration::from_secs(60)).await;
    stop_all(workers).await;
    // Every connection was made three times at least (3 passwords), the old passwords work no more.
    assert!(token.calls() >= 3 * 3, "{} calls", token.calls());
    let old = redis::Client::open(format!("redis://app:old-pass@127.0.0.1:{}", server.port))
        .unwrap()
        .get_connection();
    assert!(old.is_err());
    eprintln!(
        "{JOBS} jobs over two rotations: {} provider calls, {retried} enqueues retried",
        token.calls()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_provider_is_an_auth_error_naming_it_and_is_asked_again_on_reconnect() {
    let server = server_with_user("app", "p1");
    let token = Token::new("p1");
    token.set(Err("token service unreachable".into()));
    let url = format!("redis://127.0.0.1:{}", server.port);
    let client = Client::new(token.config(&url, "app")).unwrap();

    // The first connection.
    let err = client.ping().await.unwrap_err();
    assert_eq!(err.code(), "AUTH", "{err}");
    assert!(
        err.message()
            .contains("the credentials provider failed: token service unreachable"),
        "{err}"
    );
    token.set(Ok("p1".into()));
    client.ping().await.unwrap();

    // A reconnection: the provider fails, then recovers; the client does not stay stuck.
    token.set(Err("expired".into()));
    kill_clients(&server);
    let err = login_error(&client).await;
    assert_eq!(err.code(), "AUTH", "{err}");
    assert!(
        err.message()
            .contains("credentials provider failed: expired"),
        "{err}"
    );
    // Workers and consumers retry it (the provider is asked again), unlike a refused password.
    assert!(!err.is_fatal());
    token.set(Ok("p1".into()));
    client.ping().await.unwrap();

    // Redis refusing what the provider gave is WRONGPASS, and also retried.
    token.set(Ok("stale".into()));
    kill_clients(&server);
    let err = login_error(&client).await;
    assert_eq!(err.code(), "AUTH", "{err}");
    assert!(err.message().contains("WRONGPASS"), "{err}");
    assert!(!err.message().contains("stale"), "{err}");
    assert!(err.is_fatal());
    token.set(Ok("p1".into()));
    client.ping().await.unwrap();
}

#[test]
fn a_provider_beside_a_password_is_refused() {
    let token = Token::new("p");
    let refused = [
        token.config("redis://:pw@127.0.0.1:6379", "app"),
        token.config("redis://app:pw@127.0.0.1:6379", "app"),
        token.config("unix:///tmp/r.sock?pass=pw", "app"),
        token
            .config("redis://127.0.0.1:6379", "app")
            .with_credentials(None, Some("pw".into())),
        token.provide(
            Config::cluster(["redis://127.0.0.1:7000", "redis://:pw@127.0.0.1:7001"]),
            "app",
        ),
        token.provide(
            Config::sentinel(["redis://:pw@127.0.0.1:26379"], "m"),
            "app",
        ),
    ];
    for cfg in refused {
        let err = Client::new(cfg).unwrap_err();
        assert_eq!(err.code(), "INVALID_ARGUMENT", "{err}");
        assert!(err.message().contains("credentials provider"), "{err}");
        assert!(!err.to_string().contains("pw@"), "{err}");
    }
    // A user in the URL is fine: the provider's password goes with it.
    Client::new(token.config("redis://app@127.0.0.1:6379", "app")).unwrap();
    assert_eq!(token.calls(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_provider_logs_in_the_url_user_when_it_names_none() {
    let server = server_with_user("app", "p1");
    let url = format!("redis://app@127.0.0.1:{}", server.port);
    let calls = Arc::new(AtomicUsize::new(0));
    let c2 = calls.clone();
    let cfg = Config::new(url).with_credentials_provider(move || {
        c2.fetch_add(1, Ordering::SeqCst);
        async { Ok::<_, std::io::Error>(Credentials::password("p1")) }
    });
    let client = Client::new(cfg).unwrap();
    client.ping().await.unwrap();
    let who: String = redis::cmd("CLIENT")
        .arg("LIST")
        .query(&mut server.conn())
        .unwrap();
    assert!(who.contains("user=app"), "{who}");
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_node_and_sentinel_primary_connections_ask_the_provider() {
    // These servers have no password: the provider's token is accepted by `default`.
    let cluster = RedisCluster::start();
    let token = Token::new("anything");
    let client =
        Client::new(token.provide(Config::cluster(cluster.nodes.clone()), "default")).unwrap();
    client.ping().await.unwrap();
    assert!(
        token.calls() >= 3,
        "a connection per node: {}",
        token.calls()
    );
    let q = Queue::new(&client, &unique("cc"), QueueOptions::default()).unwrap();
    q.enqueue(b"x", id("a")).await.unwrap();
    assert_eq!(common::drain_noop(&q).await, 1);
    assert!(token.calls() >= 2, "{} calls", token.calls());
    drop(cluster);

    let setup = SentinelSetup::start();
    let token = Token::new("anything");
    let cfg = token.provide(
        Config::sentinel(setup.sentinels.clone(), MASTER_NAME),
        "default",
    );
    let client = Client::new(cfg).unwrap();
    client.ping().await.unwrap();
    assert_eq!(token.calls(), 1);
    let q = Queue::new(&client, &unique("sc"), QueueOptions::default()).unwrap();
    q.enqueue(b"x", id("a")).await.unwrap();
    assert_eq!(common::drain_noop(&q).await, 1);
    // An idle worker's wake-up listener: a blocking connection to the primary.
    let w = q
        .work(WorkerOptions::default(), |_j: Job| async {
            Ok::<(), String>(())
        })
        .unwrap();
    common::jobs::until_blocked(&setup.primary, 1).await;
    assert!(token.calls() >= 2, "{} calls", token.calls());
    w.stop();
    w.join().await;
    assert_eq!(info_u64(&setup.primary, "rejected_connections"), 0);
}

/// Issue 45, part 2, on a cluster: the ACL user's password is rotated on every node (ACLs are
/// per node) while two workers drain a queue sharded over the three masters, and every node
/// drops its clients. Every connection logs in again with the new password; no job is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_password_rotated_on_every_cluster_node_reauthenticates_and_loses_no_job() {
    const JOBS: usize = 600;
    let cluster = RedisCluster::start();
    let on_every_node = |args: &[&str]| {
        for i in 0..cluster.nodes.len() {
            let mut cmd = redis::cmd(args[0]);
            for a in &args[1..] {
                cmd.arg(*a);
            }
            cmd.query::<()>(&mut cluster.node(i)).unwrap();
        }
    };
    on_every_node(&[
        "ACL",
        "SETUSER",
        "app",
        "reset",
        "on",
        ">old-pass",
        "~*",
        "&*",
        "+@all",
    ]);
    let token = Token::new("old-pass");
    let cfg = token
        .provide(Config::cluster(cluster.nodes.clone()), "app")
        .with_response_timeout(Duration::from_secs(5));
    let client = Client::new(cfg).unwrap();
    let q = Queue::sharded(&client, &unique("crot"), 3, QueueOptions::default()).unwrap();
    let seen = Arc::new(Mutex::new(HashSet::new()));
    let workers: Vec<_> = (0..2)
        .map(|_| {
            let seen = seen.clone();
            q.work(
                WorkerOptions {
                    concurrency: 4,
                    ..Default::default()
                },
                move |job: Job| {
                    seen.lock().unwrap().insert(job.id.clone());
                    async { Ok::<(), String>(()) }
                },
            )
            .unwrap()
        })
        .collect();
    let asked_before = token.calls();
    for i in 0..JOBS {
        if i == JOBS / 2 {
            on_every_node(&["ACL", "SETUSER", "app", ">new-pass"]);
            token.set(Ok("new-pass".to_string()));
            on_every_node(&["ACL", "SETUSER", "app", "<old-pass"]);
            on_every_node(&["CLIENT", "KILL", "USER", "app"]);
        }
        enqueue_until_taken(&q, &format!("j{i}")).await;
    }
    all_ran_once(&q, &seen, JOBS, Duration::from_secs(90)).await;
    stop_all(workers).await;
    assert!(
        token.calls() > asked_before,
        "asked again after the rotation"
    );
    // The old password opens no node any more.
    for url in &cluster.nodes {
        let port = url.rsplit(':').next().unwrap();
        let old = redis::Client::open(format!("redis://app:old-pass@127.0.0.1:{port}"))
            .unwrap()
            .get_connection();
        assert!(old.is_err(), "{url}");
    }
}
