//! Errors that name their cause, whatever the call path, and the ones a worker or consumer
//! stops on instead of retrying forever: missing or wrong credentials (`AUTH`), an ACL user
//! without a command tideq needs (`PERMISSION`, naming the command), a full Redis
//! (`OUT_OF_MEMORY`, while reads keep working), something that is not Redis on the port
//! (`NOT_REDIS`), and an eviction policy that would lose jobs (`EVICTION_POLICY` when refused).

mod common;

use std::io::{Read, Write};
use std::time::Duration;

use common::jobs::*;
use common::{unique, RedisServer};
use tideq::{
    CappedOptions, CappedQueue, Client, Config, ConsumerOptions, EnqueueOptions, EvictionCheck,
    Job, Queue, QueueOptions, WorkerOptions,
};

fn with_password(password: &str) -> RedisServer {
    RedisServer::start_private(common::free_port(), &["--requirepass", password])
}

fn set_user(server: &RedisServer, rules: &[&str]) {
    let mut cmd = redis::cmd("ACL");
    cmd.arg("SETUSER")
        .arg("limited")
        .arg("reset")
        .arg("on")
        .arg(">pw");
    for r in rules {
        cmd.arg(*r);
    }
    cmd.query::<()>(&mut server.conn()).unwrap();
}

#[tokio::test]
async fn missing_and_wrong_passwords_are_auth_errors_with_one_message_per_cause() {
    let server = with_password("s3cret");
    let none = Queue::new(
        &Client::open(&format!("redis://127.0.0.1:{}", server.port)).unwrap(),
        "q",
        QueueOptions::default(),
    )
    .unwrap();
    // Every call path (a script, a pipelined bulk enqueue, a plain read) says the same.
    let jobs: Vec<(&[u8], EnqueueOptions)> =
        (0..20).map(|_| (&b"x"[..], Default::default())).collect();
    // Each message names the queue and the operation.
    for (op, err) in [
        (
            "enqueue",
            none.enqueue(b"x", Default::default()).await.unwrap_err(),
        ),
        ("enqueue", none.enqueue_many(&jobs).await.unwrap_err()),
        ("stats", none.stats().await.unwrap_err()),
        ("get", none.get("x").await.unwrap_err()),
    ] {
        assert_eq!(err.code(), "AUTH", "{err}");
        assert!(
            err.message()
                .starts_with(&format!("queue \"q\": {op}: Redis requires a password")),
            "{err}"
        );
    }
    let wrong = Queue::new(
        &Client::open(&format!("redis://:nope@127.0.0.1:{}", server.port)).unwrap(),
        "q",
        QueueOptions::default(),
    )
    .unwrap();
    let err = wrong.enqueue(b"x", Default::default()).await.unwrap_err();
    assert_eq!(err.code(), "AUTH", "{err}");
    assert!(
        err.message().contains("refused the username or password"),
        "{err}"
    );
    assert!(
        !err.message().contains("nope"),
        "the password is never echoed: {err}"
    );
}

#[tokio::test]
async fn a_worker_with_a_wrong_password_stops_with_auth_instead_of_retrying_forever() {
    let server = with_password("s3cret");
    let q = Queue::new(
        &Client::open(&format!("redis://:nope@127.0.0.1:{}", server.port)).unwrap(),
        &unique("q"),
        QueueOptions::default(),
    )
    .unwrap();
    let w = q
        .work(WorkerOptions::default(), |_job: Job| async {
            Ok::<(), String>(())
        })
        .unwrap();
    let stats = tokio::time::timeout(Duration::from_secs(10), w.join())
        .await
        .expect("the worker stopped by itself");
    assert!(!w.is_running());
    assert_eq!(w.error().map(|e| e.code()), Some("AUTH"), "{stats:?}");
}

#[tokio::test]
async fn a_worker_whose_user_may_not_run_a_command_stops_with_permission_naming_it() {
    let server = RedisServer::start_private(common::free_port(), &[]);
    let name = unique("perm");
    // Everything a worker needs but LPOP (which the fetch script runs).
    set_user(&server, &["~*", "+@all", "-lpop"]);
    let url = format!("redis://limited:pw@127.0.0.1:{}", server.port);
    let q = Queue::new(&Client::open(&url).unwrap(), &name, QueueOptions::default()).unwrap();
    q.enqueue(b"x", Default::default()).await.unwrap();
    let w = q
        .work(WorkerOptions::default(), |_job: Job| async {
            Ok::<(), String>(())
        })
        .unwrap();
    tokio::time::timeout(Duration::from_secs(10), w.join())
        .await
        .expect("the worker stopped by itself");
    let err = w.error().expect("stopped on an error");
    assert_eq!(err.code(), "PERMISSION", "{err}");
    assert!(err.message().contains("LPOP"), "names the command: {err}");
    assert!(
        err.message().contains("fetch_jobs"),
        "and the script: {err}"
    );
}

#[tokio::test]
async fn a_consumer_whose_user_may_not_pop_stops_with_permission() {
    let server = RedisServer::start_private(common::free_port(), &[]);
    set_user(&server, &["~*", "+@all", "-evalsha"]);
    let url = format!("redis://limited:pw@127.0.0.1:{}", server.port);
    let q = CappedQueue::new(
        &Client::open(&url).unwrap(),
        &unique("c"),
        CappedOptions::default(),
    )
    .unwrap();
    let c = q
        .consume(ConsumerOptions::default(), |_b| async {
            Ok::<(), String>(())
        })
        .unwrap();
    tokio::time::timeout(Duration::from_secs(10), c.join())
        .await
        .expect("the consumer stopped by itself");
    let err = c.error().expect("stopped on an error");
    assert_eq!(err.code(), "PERMISSION", "{err}");
    assert!(err.message().contains("evalsha"), "{err}");
}

#[tokio::test]
async fn something_that_is_not_redis_on_the_port_is_not_redis() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut s = stream;
            let mut buf = [0u8; 1024];
            let _ = s.read(&mut buf);
            let _ = s.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
        }
    });
    let config = Config::new(format!("redis://127.0.0.1:{port}"))
        .with_response_timeout(Duration::from_secs(2));
    let q = Queue::new(&Client::new(config).unwrap(), "q", QueueOptions::default()).unwrap();
    let err = q.enqueue(b"x", Default::default()).await.unwrap_err();
    assert_eq!(err.code(), "NOT_REDIS", "{err}");
    assert!(
        err.message()
            .contains("did not answer as Redis does: it answered as an HTTP server does"),
        "{err}"
    );
    assert!(!err.to_string().contains('\n'), "one line: {err}");
}

#[tokio::test]
async fn a_full_redis_refuses_writes_with_out_of_memory_and_every_read_still_works() {
    let server =
        RedisServer::start_private(common::free_port(), &["--maxmemory-policy", "noeviction"]);
    let q = queue_with(
        &server.url,
        QueueOptions {
            max_attempts: 1,
            ..Default::default()
        },
    );
    q.enqueue(b"x", id("kept")).await.unwrap();
    q.enqueue(b"x", id("dead")).await.unwrap();
    let fail = |_job: Job| async { Err::<(), String>("boom".into()) };
    q.work(
        WorkerOptions {
            concurrency: 1,
            batch_size: 1,
            ..drained()
        },
        fail,
    )
    .unwrap()
    .join()
    .await;
    // Fill Redis up to its limit.
    // Data well past the limit set afterwards: Redis is then over maxmemory for sure.
    let filler = "x".repeat(64 * 1024);
    for i in 0..64 {
        redis::cmd("SET")
            .arg(format!("filler{i}"))
            .arg(&filler)
            .query::<()>(&mut server.conn())
            .unwrap();
    }
    redis::cmd("CONFIG")
        .arg("SET")
        .arg("maxmemory")
        .arg("2mb")
        .query::<()>(&mut server.conn())
        .unwrap();
    let err = q.enqueue(b"x", Default::default()).await.unwrap_err();
    assert_eq!(err.code(), "OUT_OF_MEMORY", "{err}");
    assert!(
        q.get("dead").await.unwrap().is_some(),
        "get works on a full Redis"
    );
    assert_eq!(q.dead_letters(0, 10).await.unwrap().len(), 2);
    assert_eq!(q.stats().await.unwrap().dead, 2);
    let capped = CappedQueue::new(
        &Client::open(&server.url).unwrap(),
        &unique("full"),
        CappedOptions::default(),
    )
    .unwrap();
    assert!(capped.groups().await.unwrap().is_empty());
    assert_eq!(capped.stats().await.unwrap().groups, 0);
}

#[tokio::test]
async fn an_evicting_redis_is_refused_when_asked() {
    let server = RedisServer::start_private(
        common::free_port(),
        &["--maxmemory", "100mb", "--maxmemory-policy", "allkeys-lru"],
    );
    let refusing = Config::new(server.url.clone()).with_eviction_check(EvictionCheck::Refuse);
    let q = Queue::new(
        &Client::new(refusing).unwrap(),
        "q",
        QueueOptions::default(),
    )
    .unwrap();
    let err = q.enqueue(b"x", Default::default()).await.unwrap_err();
    assert_eq!(err.code(), "EVICTION_POLICY", "{err}");
    assert!(err.message().contains("allkeys-lru"), "{err}");
    // The default only warns (once per server): the enqueue goes through.
    let warns = Queue::new(
        &Client::open(&server.url).unwrap(),
        "q",
        QueueOptions::default(),
    )
    .unwrap();
    assert!(
        warns
            .enqueue(b"x", Default::default())
            .await
            .unwrap()
            .created
    );
}
