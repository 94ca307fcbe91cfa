//! Encryption at rest (issue 45, part 1): Redis only ever holds ciphertext for payloads,
//! results, progress, log lines and error texts; a job sealed with a key a worker lacks is
//! dead-lettered naming the key; keys rotate without downtime; bad keys are refused at config.

mod common;

use std::time::Duration;

use common::scan::{every_byte, holds_marker, MARKER};
use common::{unique, RedisServer};
use tideq::{Client, Encryption, EnqueueOptions, Job, JobState, Queue, QueueOptions};

fn queue(url: &str, name: &str, enc: Encryption) -> Queue {
    let opts = QueueOptions {
        encryption: Some(enc),
        max_attempts: 1,
        ..Default::default()
    };
    Queue::new(&Client::open(url).unwrap(), name, opts).unwrap()
}

fn ring(current: &str, keys: &[(&str, u8)]) -> Encryption {
    Encryption::keyring(current, keys.iter().map(|(id, b)| (*id, [*b; 32]))).unwrap()
}

fn drained() -> tideq::WorkerOptions {
    tideq::WorkerOptions {
        stop_when_drained: true,
        poll_interval: Duration::from_millis(100),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_plaintext_in_redis_after_enqueue_result_progress_log_and_failure() {
    let server = RedisServer::start();
    let q = queue(&server.url, &unique("enc"), ring("k1", &[("k1", 1)]));
    let ok = q
        .enqueue(format!("{MARKER} payload"), EnqueueOptions::default())
        .await
        .unwrap();
    let bad = q
        .enqueue(format!("{MARKER} fails"), EnqueueOptions::default())
        .await
        .unwrap();
    assert!(!holds_marker(&every_byte(&server)), "after enqueue");
    let w = q
        .work(drained(), |job: Job| async move {
            let text = job.payload_str().unwrap().to_string();
            assert!(
                text.starts_with(MARKER),
                "the handler sees the plain payload"
            );
            job.progress(format!("{MARKER} progress")).await.unwrap();
            job.log(format!("{MARKER} log line")).await.unwrap();
            if text.ends_with("fails") {
                Err(format!("{MARKER} error text"))
            } else {
                Ok(format!("{MARKER} result"))
            }
        })
        .unwrap();
    w.join().await;
    assert!(
        !holds_marker(&every_byte(&server)),
        "after results, logs, failure"
    );

    // The queue's key reads it all back in clear.
    let done = q.get(&ok.id).await.unwrap().unwrap();
    assert_eq!(done.state, JobState::Completed);
    assert_eq!(done.payload, format!("{MARKER} payload").into_bytes());
    assert_eq!(
        done.result.unwrap(),
        format!("{MARKER} result").into_bytes()
    );
    assert_eq!(
        done.progress.unwrap(),
        format!("{MARKER} progress").into_bytes()
    );
    assert_eq!(done.logs[0].line, format!("{MARKER} log line"));
    let out = q.wait(&ok.id, None).await.unwrap();
    assert_eq!(out.result.unwrap(), format!("{MARKER} result").into_bytes());
    let dead = q.get(&bad.id).await.unwrap().unwrap();
    assert_eq!(dead.state, JobState::Dead);
    assert_eq!(dead.last_error.unwrap(), format!("{MARKER} error text"));
    let err = q.wait(&bad.id, None).await.unwrap_err();
    assert!(err.message().contains(MARKER), "{err}");
    assert_eq!(
        q.job_logs(&bad.id).await.unwrap()[0].line,
        format!("{MARKER} log line")
    );
    // The scan does see a clear value: the same payload on a queue without encryption.
    let clear = Queue::new(
        &Client::open(&server.url).unwrap(),
        &unique("clear"),
        QueueOptions::default(),
    )
    .unwrap();
    clear
        .enqueue(MARKER, EnqueueOptions::default())
        .await
        .unwrap();
    assert!(holds_marker(&every_byte(&server)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_sealed_with_a_key_the_worker_lacks_is_dead_lettered_naming_it() {
    let server = RedisServer::start();
    let name = unique("enc");
    let producer = queue(&server.url, &name, ring("k9", &[("k9", 9)]));
    let worker = queue(&server.url, &name, ring("k1", &[("k1", 1)]));
    let job = producer
        .enqueue(
            "secret",
            EnqueueOptions {
                max_attempts: Some(5),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let w = worker
        .work(drained(), |_job: Job| async { Ok::<(), String>(()) })
        .unwrap();
    let stats = w.join().await;
    assert_eq!(stats.completed, 0, "never run");
    let info = worker.get(&job.id).await.unwrap().unwrap();
    assert_eq!(
        info.state,
        JobState::Dead,
        "dead at once, no retries used up"
    );
    let why = info.last_error.unwrap();
    assert!(
        why.contains("\"k9\"") && why.contains("not available"),
        "{why}"
    );
    // Without the key, the payload stays sealed and `unreadable` names its key.
    assert!(info.unreadable.unwrap().contains("\"k9\""));
    assert_eq!(
        tideq::crypt::sealed_key_id(&info.payload).as_deref(),
        Some("k9")
    );
    // The producer (without k1) sees the reason as sealed, with its key named.
    let seen = producer.get(&job.id).await.unwrap().unwrap();
    assert_eq!(seen.last_error.unwrap(), "encrypted (key k1)");
    // A wrong key under the right id: dead too, the id named.
    let impostor = queue(&server.url, &name, ring("k9", &[("k9", 8)]));
    let job2 = producer
        .enqueue("secret", EnqueueOptions::default())
        .await
        .unwrap();
    impostor
        .work(drained(), |_job: Job| async { Ok::<(), String>(()) })
        .unwrap()
        .join()
        .await;
    let dead = impostor.get(&job2.id).await.unwrap().unwrap();
    assert_eq!(dead.state, JobState::Dead);
    assert!(dead.last_error.unwrap().contains("\"k9\""));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_sealed_under_k1_still_run_after_k2_becomes_current() {
    let server = RedisServer::start();
    let name = unique("enc");
    let before = queue(&server.url, &name, ring("k1", &[("k1", 1)]));
    let old = before
        .enqueue("under k1", EnqueueOptions::default())
        .await
        .unwrap();
    let after = queue(&server.url, &name, ring("k2", &[("k1", 1), ("k2", 2)]));
    let new = after
        .enqueue("under k2", EnqueueOptions::default())
        .await
        .unwrap();
    // The old handle cannot open what k2 sealed: rotation is really in effect.
    let seen = before.get(&new.id).await.unwrap().unwrap();
    assert!(seen.unreadable.unwrap().contains("\"k2\""));
    let w = after
        .work(drained(), |job: Job| async move {
            Ok::<Vec<u8>, String>(job.payload.clone())
        })
        .unwrap();
    assert_eq!(w.join().await.completed, 2);
    for (id, want) in [(old.id, "under k1"), (new.id, "under k2")] {
        let out = after.wait(&id, None).await.unwrap();
        assert_eq!(out.result.unwrap(), want.as_bytes());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_is_asked_once_per_key_and_bad_keys_write_nothing() {
    let server = RedisServer::start();
    let asked = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let log = asked.clone();
    let enc = Encryption::with_provider("t1", move |id| {
        log.lock().unwrap().push(id.to_string());
        (id == "t1").then(|| vec![7u8; 32])
    })
    .unwrap();
    let q = queue(&server.url, &unique("enc"), enc);
    for _ in 0..3 {
        q.enqueue("x", EnqueueOptions::default()).await.unwrap();
    }
    assert_eq!(*asked.lock().unwrap(), vec!["t1".to_string()]);
    // Refused at config: nothing reaches Redis.
    let mut c = server.conn();
    let _: () = redis::cmd("FLUSHALL").query(&mut c).unwrap();
    let short = Encryption::keyring("k1", [("k1", [0u8; 16])]).unwrap_err();
    assert!(short.message().contains("\"k1\"") && short.message().contains("32 bytes"));
    let missing = Encryption::with_provider("t2", |_| None).unwrap_err();
    assert!(missing.message().contains("\"t2\""), "{missing}");
    let dbsize: u64 = redis::cmd("DBSIZE").query(&mut c).unwrap();
    assert_eq!(dbsize, 0);
}

/// A schedule's payload is a job's payload in waiting: sealed when the schedule is set, opened
/// by the worker that fires it (each fired job sealed again, with its own nonce), and shown in
/// clear by `schedules` to a handle with the key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schedules_payload_is_sealed_in_redis_and_its_fired_jobs_run_in_clear() {
    let server = RedisServer::start();
    let q = queue(&server.url, &unique("enc-sched"), ring("k1", &[("k1", 1)]));
    q.upsert_schedule(
        "nightly",
        tideq::Every::Interval(Duration::from_secs(3600)),
        format!("{MARKER} scheduled"),
        EnqueueOptions::default(),
    )
    .await
    .unwrap();
    assert!(!holds_marker(&every_byte(&server)), "after upsert_schedule");
    let listed = q.schedules().await.unwrap();
    assert_eq!(
        listed[0].payload,
        format!("{MARKER} scheduled").into_bytes()
    );
    let id = q.run_schedule("nightly").await.unwrap();
    assert!(!holds_marker(&every_byte(&server)), "after run_schedule");
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let s = seen.clone();
    q.work(drained(), move |job: Job| {
        let s = s.clone();
        async move {
            s.lock().unwrap().push(job.payload.clone());
            Ok::<(), String>(())
        }
    })
    .unwrap()
    .join()
    .await;
    assert_eq!(
        *seen.lock().unwrap(),
        [format!("{MARKER} scheduled").into_bytes()]
    );
    assert_eq!(
        q.get(&id).await.unwrap().unwrap().state,
        JobState::Completed
    );
    // Without the key, the listing shows the sealed bytes, never the plain ones.
    let keyless = Queue::new(
        &Client::open(&server.url).unwrap(),
        q.name(),
        QueueOptions::default(),
    )
    .unwrap();
    let sealed = &keyless.schedules().await.unwrap()[0].payload;
    assert!(sealed.starts_with(b"TQE"), "{sealed:?}");
}

/// A key service reached asynchronously: the provider blocks its thread in place on the async
/// call (as docs/encryption.md shows), and `deferred` leaves the current key to its first use.
/// A current key the provider lacks fails that first enqueue naming it, writing nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_backed_by_an_async_key_service_and_a_deferred_current_key() {
    let server = RedisServer::start();
    async fn key_service(id: String) -> Option<Vec<u8>> {
        tokio::time::sleep(Duration::from_millis(20)).await;
        (id == "a1").then(|| vec![5u8; 32])
    }
    let provider = |id: &str| {
        let id = id.to_string();
        tokio::task::block_in_place(|| tokio::runtime::Handle::current().block_on(key_service(id)))
    };
    let enc = Encryption::deferred(
        "a1",
        Vec::<(String, Vec<u8>)>::new(),
        Some(Box::new(provider)),
    )
    .unwrap();
    let name = unique("enc");
    let q = queue(&server.url, &name, enc);
    let id = q.enqueue("x", EnqueueOptions::default()).await.unwrap().id;
    let w = q
        .work(drained(), |j: Job| async move {
            Ok::<Vec<u8>, String>(j.payload)
        })
        .unwrap();
    assert_eq!(w.join().await.completed, 1);
    assert_eq!(q.get(&id).await.unwrap().unwrap().result.unwrap(), b"x");
    // The same provider without the current key: refused at the first use, nothing written.
    let lacking = Encryption::deferred(
        "a9",
        Vec::<(String, Vec<u8>)>::new(),
        Some(Box::new(provider)),
    )
    .unwrap();
    let other = queue(&server.url, &unique("enc"), lacking);
    let e = other
        .enqueue("y", EnqueueOptions::default())
        .await
        .unwrap_err();
    assert_eq!(e.kind(), tideq::ErrorKind::InvalidArgument);
    assert!(e.message().contains("\"a9\" is not available"), "{e}");
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("*{}*", other.name()))
        .query(&mut server.conn())
        .unwrap();
    assert!(keys.iter().all(|k| k.ends_with(":shards")), "{keys:?}");
}

/// A chord's callback and a chain's next step read their children's results as arguments, and
/// `children_results` reports them: on a queue with encryption those results are sealed in
/// Redis, and each reader gets them in clear (a reader without the key sees them sealed, as `get`
/// shows a value it cannot open).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chords_callback_and_children_results_read_sealed_results_in_clear() {
    use serde_json::{json, Value};
    use tideq::{FlowJob, Tasks};
    let server = RedisServer::start();
    let name = unique("enc");
    let q = queue(&server.url, &name, ring("k1", &[("k1", 1)]));
    let kids: Vec<FlowJob> = (1..=3)
        .map(|i| FlowJob::task("double", &i).unwrap())
        .collect();
    let sum = FlowJob::step("sum").options(EnqueueOptions {
        id: Some("sum".into()),
        ..Default::default()
    });
    q.enqueue_flow(FlowJob::chord(kids, sum).unwrap())
        .await
        .unwrap();
    let tasks = Tasks::new()
        .task("double", |i: i64, _job: Job| async move {
            Ok::<Value, String>(json!({ "secret": format!("{MARKER}-{}", 2 * i) }))
        })
        .task("sum", |all: Vec<Value>, _job: Job| async move {
            Ok::<Value, String>(json!(all.len()))
        });
    let w = q.work_tasks(drained(), tasks).unwrap();
    assert_eq!(w.join().await.completed, 4);
    let done = q.get("sum").await.unwrap().unwrap();
    assert_eq!(done.state, JobState::Completed);
    assert_eq!(done.result.as_deref(), Some(b"3".as_slice()));
    assert!(
        !holds_marker(&every_byte(&server)),
        "a result in clear in Redis"
    );
    let results = q.children_results("sum").await.unwrap();
    assert_eq!(results.len(), 3);
    for r in &results {
        let tideq::ChildOutcome::Completed(Some(v)) = &r.outcome else {
            panic!("{r:?}")
        };
        assert!(String::from_utf8_lossy(v).contains(MARKER), "{r:?}");
    }
    // Without the key: the results stay sealed.
    let keyless = Queue::new(
        &Client::open(&server.url).unwrap(),
        &name,
        Default::default(),
    )
    .unwrap();
    for r in keyless.children_results("sum").await.unwrap() {
        let tideq::ChildOutcome::Completed(Some(v)) = &r.outcome else {
            panic!("{r:?}")
        };
        assert!(!String::from_utf8_lossy(v).contains(MARKER), "{r:?}");
    }
}
