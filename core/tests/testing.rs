//! The test modes (`tideq::testing`, issue 42 item 1): fake mode records enqueues with the real
//! validation and encoding, drains them through the worker's own attempt code, inline mode runs
//! them at once; `get` and `wait` answer from the record, every other operation is refused, no
//! connection is made; and the same scenario ends the same way inline, fake-drained and on a
//! real worker.
//!
//! A mode is process-wide and cargo runs a file's tests on parallel threads: every test here
//! holds `SERIAL` (each test file is its own process: inline mode's tests, in
//! `testing_inline.rs`, hold their own).

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::testing::{offline, opts, SERIAL};
use common::{free_port, unique, RedisServer};
use serde_json::json;
use tideq::testing::{self, Handlers, JobFilter, RecordedState};
use tideq::{
    Backoff, Client, Config, Debounce, Dedup, DontRetry, EnqueueOptions, Envelope, ErrorKind,
    Every, FlowJob, Job, JobState, PayloadFormat, Queue, QueueOptions, Snooze, Tasks,
    WorkerOptions,
};

#[tokio::test]
async fn fake_mode_records_jobs_with_the_real_encoding() {
    let _s = SERIAL.lock().await;
    let fake = testing::fake_guard().unwrap();
    let q = offline("emails");
    let a = q
        .enqueue_task("welcome", &json!({"to": "ada"}), opts())
        .await
        .unwrap();
    assert!(a.created);
    let packed = EnqueueOptions {
        format: Some(PayloadFormat::Msgpack),
        delay: Some(Duration::from_secs(60)),
        group: Some("tenant-1".into()),
        priority: Some(3),
        ..opts()
    };
    q.enqueue_task("welcome", &json!({"to": "bob"}), packed)
        .await
        .unwrap();
    q.enqueue(b"raw bytes", opts()).await.unwrap();

    let jobs = fake.jobs(&JobFilter::default());
    assert_eq!(jobs.len(), 3);
    let env = Envelope::decode(&jobs[0].envelope).unwrap();
    assert_eq!(env.id, a.id);
    assert_eq!(env.task.as_deref(), Some("welcome"));
    assert_eq!(env.payload, br#"{"to":"ada"}"#);
    assert_eq!(jobs[0].payload, env.payload);
    assert_eq!(env.max_attempts, 5);
    assert_eq!(
        jobs[0].args,
        JobFilter::default().args(json!({"to": "ada"})).args
    );
    assert_eq!(jobs[1].format, Some(PayloadFormat::Msgpack));
    assert_eq!(
        jobs[1].args,
        JobFilter::default().args(json!({"to": "bob"})).args
    );
    assert_eq!(jobs[1].delay, Some(Duration::from_secs(60)));
    assert_eq!(
        (jobs[1].group.as_deref(), jobs[1].priority),
        (Some("tenant-1"), Some(3))
    );
    assert_eq!((jobs[2].task.as_ref(), jobs[2].args.as_ref()), (None, None));
    assert!(jobs.iter().all(|j| j.state == RecordedState::Enqueued));
    // The same id again creates nothing, as on Redis.
    let again = q
        .enqueue_task(
            "welcome",
            &json!({}),
            EnqueueOptions {
                id: Some(a.id.clone()),
                ..opts()
            },
        )
        .await
        .unwrap();
    assert!(!again.created);
    assert_eq!(fake.jobs(&JobFilter::default()).len(), 3);
}

/// A queue with encryption in fake mode: the records hold the arguments in clear (nothing
/// reaches Redis), so `assert_enqueued` matches them and `drain` runs the job.
#[tokio::test]
async fn fake_mode_records_a_queue_with_encryption_in_clear() {
    let _s = SERIAL.lock().await;
    let fake = testing::fake_guard().unwrap();
    let client = Client::new(Config::new(format!("redis://127.0.0.1:{}", free_port()))).unwrap();
    let enc = tideq::Encryption::keyring("k1", [("k1", [1u8; 32])]).unwrap();
    let q = Queue::new(
        &client,
        &unique("sealed"),
        QueueOptions {
            encryption: Some(enc),
            ..Default::default()
        },
    )
    .unwrap();
    q.enqueue_task("welcome", &json!({"to": "ada"}), opts())
        .await
        .unwrap();
    let jobs = fake.jobs(&JobFilter::default());
    assert_eq!(jobs[0].payload, br#"{"to":"ada"}"#);
    assert_eq!(
        jobs[0].args,
        JobFilter::default().args(json!({"to": "ada"})).args
    );
}

#[tokio::test]
async fn fake_mode_keeps_dedup_and_debounce_keys_as_redis_does() {
    let _s = SERIAL.lock().await;
    let fake = testing::fake_guard().unwrap();
    let q = offline("keys");
    let dedup = || EnqueueOptions {
        dedup: Some(Dedup::new("report-7")),
        ..opts()
    };
    let a = q.enqueue(b"first", dedup()).await.unwrap();
    let b = q.enqueue(b"second", dedup()).await.unwrap();
    assert_eq!((b.id.as_str(), b.created), (a.id.as_str(), false));
    let debounce = || EnqueueOptions {
        debounce: Some(Debounce::new("search", Duration::from_millis(300))),
        ..opts()
    };
    let c = q.enqueue(b"sea", debounce()).await.unwrap();
    let d = q.enqueue(b"search", debounce()).await.unwrap();
    assert_eq!(c.id, d.id, "the waiting job was replaced");
    let jobs = fake.jobs(&JobFilter::default());
    assert_eq!(jobs.len(), 2);
    assert_eq!(jobs[1].payload, b"search");
    assert_eq!(jobs[1].delay, Some(Duration::from_millis(300)));
    assert_eq!(
        Envelope::decode(&jobs[1].envelope).unwrap().payload,
        b"search"
    );
}

#[tokio::test]
async fn bad_input_raises_in_fake_mode_and_records_nothing() {
    let _s = SERIAL.lock().await;
    let fake = testing::fake_guard().unwrap();
    let q = offline("bad");
    let bad_priority = EnqueueOptions {
        priority: Some(0),
        ..opts()
    };
    let e = q.enqueue_task("t", &1, bad_priority).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    let e = q.enqueue_task("bad\nname", &1, opts()).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    // One bad job of a batch: nothing of the batch is recorded.
    let batch = vec![
        (b"ok".to_vec(), opts()),
        (
            b"bad".to_vec(),
            EnqueueOptions {
                max_attempts: Some(0),
                ..opts()
            },
        ),
    ];
    let e = q.enqueue_many(&batch).await.unwrap_err();
    assert!(e.to_string().contains("job 1"), "{e}");
    assert!(fake.jobs(&JobFilter::default()).is_empty());
}

#[tokio::test]
async fn assert_enqueued_says_what_it_looked_for_and_lists_what_was_recorded() {
    let _s = SERIAL.lock().await;
    let fake = testing::fake_guard().unwrap();
    let q = offline("assert");
    let none = fake
        .assert_enqueued(&JobFilter::task("welcome"))
        .unwrap_err();
    assert_eq!(
        none,
        "expected a job with task \"welcome\" to be enqueued, but no job was enqueued"
    );
    q.enqueue_task("welcome", &json!({"to": "ada"}), opts())
        .await
        .unwrap();
    let found = fake
        .assert_enqueued(&JobFilter::task("welcome").args(json!({"to": "ada"})))
        .unwrap();
    assert_eq!(found.queue, q.name());
    let msg = fake
        .assert_enqueued(&JobFilter::task("welcome").args(json!({"to": "bob"})))
        .unwrap_err();
    assert!(
        msg.starts_with(
            "expected a job with task \"welcome\", args {\"to\": \"bob\"} to be enqueued, but \
             the 1 job(s) enqueued were:\n  - queue \""
        ),
        "{msg}"
    );
    assert!(
        msg.contains("task \"welcome\" args {\"to\": \"ada\"}"),
        "{msg}"
    );
    assert_eq!(fake.enqueued(&JobFilter::queue(q.name())).len(), 1);
    fake.clear();
    assert!(fake.jobs(&JobFilter::default()).is_empty());
}

#[tokio::test]
async fn drain_runs_recorded_jobs_and_what_their_handlers_enqueue() {
    let _s = SERIAL.lock().await;
    let fake = testing::fake_guard().unwrap();
    let q = offline("signup");
    let mail = offline("mail");
    q.enqueue_task("signup", &json!({"user": "ada"}), opts())
        .await
        .unwrap();
    let m = mail.clone();
    let signup = Tasks::new().task("signup", move |args: serde_json::Value, _j: Job| {
        let m = m.clone();
        async move {
            m.enqueue_task("welcome", &json!({"to": args["user"]}), opts())
                .await
                .map_err(|e| e.to_string())?;
            Ok::<_, String>(())
        }
    });
    let sent: Arc<Mutex<Vec<String>>> = Default::default();
    let s = sent.clone();
    let welcome = Tasks::new().task("welcome", move |args: serde_json::Value, _j: Job| {
        s.lock()
            .unwrap()
            .push(args["to"].as_str().unwrap().to_string());
        async { Ok::<_, String>("sent".to_string()) }
    });
    let handlers = Handlers::new()
        .tasks(q.name(), signup)
        .tasks(mail.name(), welcome);
    let report = fake.drain(&handlers).await.unwrap();
    assert_eq!((report.ran, report.completed, report.dead), (2, 2, 0));
    assert_eq!(*sent.lock().unwrap(), ["ada"]);
    let welcome = fake
        .assert_enqueued(&JobFilter::task("welcome").in_queue(mail.name()))
        .unwrap();
    assert_eq!(welcome.state, RecordedState::Completed);
    assert_eq!(welcome.result.as_deref(), Some(&b"sent"[..]));
    assert!(fake.enqueued(&JobFilter::default()).is_empty());
    // A job of a queue the handlers do not cover stays recorded.
    offline("other").enqueue(b"x", opts()).await.unwrap();
    let report = fake.drain(&handlers).await.unwrap();
    assert_eq!((report.ran, report.left), (0, 1));
}

#[tokio::test]
async fn drain_retries_to_max_attempts_then_the_job_is_dead_with_the_workers_error_text() {
    let _s = SERIAL.lock().await;
    let fake = testing::fake_guard().unwrap();
    let q = offline("retries");
    let three = EnqueueOptions {
        max_attempts: Some(3),
        ..opts()
    };
    let doomed = q.enqueue_task("doomed", &1, three.clone()).await.unwrap();
    let unknown = q
        .enqueue_task("nobody-runs-this", &1, opts())
        .await
        .unwrap();
    let panics = q.enqueue_task("panics", &1, three).await.unwrap();
    let tasks = Tasks::new()
        .task("doomed", |_: i64, job: Job| async move {
            Err::<(), _>(format!("attempt {} failed", job.attempt))
        })
        .task("panics", |_: i64, _job: Job| async move {
            if true {
                panic!("boom");
            }
            Ok::<(), String>(())
        });
    let report = fake
        .drain(&Handlers::new().tasks(q.name(), tasks))
        .await
        .unwrap();
    assert_eq!((report.ran, report.dead), (7, 3));
    let get = |id: &str| {
        fake.jobs(&JobFilter {
            id: Some(id.into()),
            ..Default::default()
        })[0]
            .clone()
    };
    let d = get(&doomed.id);
    assert_eq!((d.state, d.attempts), (RecordedState::Dead, 3));
    assert_eq!(
        d.errors,
        ["attempt 1 failed", "attempt 2 failed", "attempt 3 failed"]
    );
    let u = get(&unknown.id);
    assert_eq!((u.state, u.attempts), (RecordedState::Dead, 1));
    assert_eq!(
        u.error.as_deref(),
        Some(
            "unknown task \"nobody-runs-this\": this worker runs doomed, panics (dead-lettered, \
             not retried)"
        )
    );
    let p = get(&panics.id);
    assert_eq!(
        (p.attempts, p.error.as_deref()),
        (3, Some("handler panicked"))
    );
}

#[tokio::test]
async fn dont_retry_is_dead_at_once_and_a_snooze_runs_again_uncounted() {
    let _s = SERIAL.lock().await;
    let fake = testing::fake_guard().unwrap();
    let q = offline("outcomes");
    let refused = q.enqueue_task("refuse", &1, opts()).await.unwrap();
    let snoozy = q.enqueue_task("snoozy", &1, opts()).await.unwrap();
    let runs = Arc::new(Mutex::new(0));
    let r = runs.clone();
    let tasks = Tasks::new()
        .task("refuse", |_: i64, _job: Job| async move {
            Err::<(), _>(DontRetry::new("card declined"))
        })
        .task("snoozy", move |_: i64, job: Job| {
            let mut n = r.lock().unwrap();
            *n += 1;
            let n = *n;
            async move {
                if n < 3 {
                    return Err(Snooze::new(Duration::from_secs(3600)).into());
                }
                Ok::<_, tideq::HandlerError>(format!("attempt {}", job.attempt))
            }
        });
    fake.drain(&Handlers::new().tasks(q.name(), tasks))
        .await
        .unwrap();
    let info = q.get(&refused.id).await.unwrap().unwrap();
    assert_eq!(
        (info.state, info.attempts, info.last_error.as_deref()),
        (JobState::Dead, 1, Some("card declined"))
    );
    let info = q.get(&snoozy.id).await.unwrap().unwrap();
    assert_eq!((info.state, info.attempts), (JobState::Completed, 1));
    assert_eq!(info.result.as_deref(), Some(&b"attempt 1"[..]));
    assert_eq!(*runs.lock().unwrap(), 3);
}

#[tokio::test]
async fn get_and_wait_answer_from_the_record() {
    let _s = SERIAL.lock().await;
    let fake = testing::fake_guard().unwrap();
    let q = offline("answers");
    let later = EnqueueOptions {
        delay: Some(Duration::from_secs(5)),
        ..opts()
    };
    let j = q.enqueue(b"p", later).await.unwrap();
    let info = q.get(&j.id).await.unwrap().unwrap();
    assert_eq!(
        (info.state, info.payload.as_slice()),
        (JobState::Delayed, &b"p"[..])
    );
    assert!(q.get("missing").await.unwrap().is_none());
    let e = q.wait(&j.id, None).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Timeout, "{e}");
    assert!(e.to_string().contains("drain()"), "{e}");
    let e = q.wait("missing", None).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::JobNotFound);
    let handlers = Handlers::new().raw(q.name(), |job: Job| async move {
        Ok::<_, String>(job.payload.clone())
    });
    fake.drain(&handlers).await.unwrap();
    let out = q.wait(&j.id, Some(Duration::from_millis(1))).await.unwrap();
    assert_eq!(out.result.as_deref(), Some(&b"p"[..]));
}

#[tokio::test]
async fn other_operations_are_not_supported_in_a_test_mode() {
    let _s = SERIAL.lock().await;
    let _fake = testing::fake_guard().unwrap();
    let q = offline("refused");
    let check = |e: tideq::Error, op: &str| {
        assert_eq!(e.kind(), ErrorKind::NotSupported, "{e}");
        assert!(e.to_string().contains(op), "{e}");
        assert!(e.to_string().contains("real Redis"), "{e}");
    };
    check(q.stats().await.unwrap_err(), "stats");
    check(q.cancel("x").await.unwrap_err(), "cancel");
    let flow = FlowJob::task("parent", &1).unwrap();
    check(q.enqueue_flow(flow).await.unwrap_err(), "enqueue_flow");
    let every = Every::interval(Duration::from_secs(60));
    check(
        q.upsert_schedule("s", every, b"x", opts())
            .await
            .unwrap_err(),
        "upsert_schedule",
    );
    let w = q.work(WorkerOptions::default(), |_j: Job| async {
        Ok::<(), String>(())
    });
    check(w.unwrap_err(), "a worker");
}

#[tokio::test]
async fn a_recording_queue_connects_to_nothing_and_stop_returns_to_redis() {
    let _s = SERIAL.lock().await;
    let q = offline("offline");
    let fake = testing::fake().unwrap();
    assert_eq!(testing::current().unwrap().mode(), testing::Mode::Fake);
    // A second mode while one is on is refused.
    let e = testing::inline(Handlers::new(), true).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    q.enqueue(b"x", opts()).await.unwrap();
    q.get("x").await.unwrap();
    fake.stop();
    fake.stop();
    assert!(testing::current().is_none() && !fake.is_on());
    // Off: the same queue goes to its Redis again (here a closed port).
    let e = q.enqueue(b"x", opts()).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Connection, "{e}");
    // And with a real Redis, the job is there.
    let server = RedisServer::start();
    let real = Queue::new(
        &Client::open(&server.url).unwrap(),
        "after",
        QueueOptions::default(),
    )
    .unwrap();
    {
        let _g = testing::fake_guard().unwrap();
        real.enqueue(b"recorded", opts()).await.unwrap();
    }
    real.enqueue(b"sent", opts()).await.unwrap();
    assert_eq!(real.stats().await.unwrap().ready, 1);
}

/// What a job ended as, as `get` reports it.
type Ending = (JobState, u32, Option<Vec<u8>>, Option<String>);

/// The agreement scenario: a task succeeding with a result, one failing twice then succeeding,
/// one failing to its limit (3 attempts) and one refusing with DontRetry.
fn agreement_tasks() -> Tasks {
    Tasks::new()
        .task("add", |args: (i64, i64), _job: Job| async move {
            Ok::<_, String>(json!({"sum": args.0 + args.1}))
        })
        .task("flaky", |_: i64, job: Job| async move {
            if job.attempt < 3 {
                return Err(format!("flaky attempt {}", job.attempt));
            }
            Ok(format!("done at attempt {}", job.attempt))
        })
        .task("doomed", |_: i64, job: Job| async move {
            Err::<(), _>(format!("doomed attempt {}", job.attempt))
        })
        .task("refuse", |_: i64, _job: Job| async move {
            Err::<(), _>(DontRetry::new("card declined: retrying cannot help"))
        })
}

async fn agreement_enqueue(q: &Queue) -> Vec<String> {
    let three = EnqueueOptions {
        max_attempts: Some(3),
        ..opts()
    };
    let mut ids = Vec::new();
    ids.push(q.enqueue_task("add", &(2, 3), opts()).await.unwrap().id);
    ids.push(q.enqueue_task("flaky", &1, opts()).await.unwrap().id);
    ids.push(q.enqueue_task("doomed", &1, three).await.unwrap().id);
    ids.push(q.enqueue_task("refuse", &1, opts()).await.unwrap().id);
    ids
}

async fn endings(q: &Queue, ids: &[String]) -> Vec<Ending> {
    let mut out = Vec::new();
    for id in ids {
        let i = q.get(id).await.unwrap().unwrap();
        out.push((i.state, i.attempts, i.result, i.last_error));
    }
    out
}

#[tokio::test]
async fn the_same_tasks_end_the_same_inline_fake_drained_and_on_a_real_worker() {
    let _s = SERIAL.lock().await;
    let server = RedisServer::start();
    let fast = QueueOptions {
        backoff: Backoff::fixed(10),
        ..Default::default()
    };
    let client = Client::open(&server.url).unwrap();
    let queue = |name: &str| Queue::new(&client, &unique(name), fast.clone()).unwrap();

    let q = queue("agree-inline");
    let handlers = Handlers::new().tasks(q.name(), agreement_tasks());
    let inline = testing::inline_guard(handlers, false).unwrap();
    let ids = agreement_enqueue(&q).await;
    let inline_end = endings(&q, &ids).await;
    drop(inline);

    let q = queue("agree-fake");
    let fake = testing::fake_guard().unwrap();
    let ids = agreement_enqueue(&q).await;
    fake.drain(&Handlers::new().tasks(q.name(), agreement_tasks()))
        .await
        .unwrap();
    let fake_end = endings(&q, &ids).await;
    drop(fake);

    let q = queue("agree-real");
    let ids = agreement_enqueue(&q).await;
    let drained = WorkerOptions {
        stop_when_drained: true,
        poll_interval: Duration::from_millis(50),
        ..Default::default()
    };
    q.work_tasks(drained, agreement_tasks())
        .unwrap()
        .join()
        .await;
    let real_end = endings(&q, &ids).await;

    assert_eq!(
        real_end[0],
        (JobState::Completed, 1, Some(br#"{"sum":5}"#.to_vec()), None)
    );
    assert_eq!(
        (real_end[1].0, real_end[1].1, real_end[1].2.clone()),
        (JobState::Completed, 3, Some(b"done at attempt 3".to_vec()))
    );
    assert_eq!(
        real_end[2],
        (JobState::Dead, 3, None, Some("doomed attempt 3".into()))
    );
    assert_eq!(
        real_end[3],
        (
            JobState::Dead,
            1,
            None,
            Some("card declined: retrying cannot help".into())
        )
    );
    assert_eq!(inline_end, real_end, "inline");
    assert_eq!(fake_end, real_end, "fake-drained");
}

#[tokio::test]
async fn job_log_records_into_the_recorded_job_in_both_modes_without_a_connection() {
    let _s = SERIAL.lock().await;
    let q = offline("logs");
    let handlers = Handlers::new().raw(q.name(), |job: Job| async move {
        job.log(format!("attempt {}", job.attempt))
            .await
            .map_err(|e| e.to_string())?;
        // Refused as against Redis, and nothing recorded.
        assert!(job.log("y".repeat(4097)).await.is_err());
        Ok::<(), String>(())
    });
    let inline = testing::inline_guard(handlers.clone(), true).unwrap();
    let e = q.enqueue(b"x", opts()).await.unwrap();
    let rec = &inline.jobs(&JobFilter::default())[0];
    let lines: Vec<&str> = rec.logs.iter().map(|l| l.line.as_str()).collect();
    assert_eq!(lines, vec!["attempt 1"]);
    assert_eq!(rec.logs[0].attempt, 1);
    assert_eq!(q.job_logs(&e.id).await.unwrap(), rec.logs);
    assert_eq!(q.get(&e.id).await.unwrap().unwrap().logs, rec.logs);
    let missing = q.job_logs("nobody").await.unwrap_err();
    assert_eq!(missing.kind(), ErrorKind::JobNotFound);
    drop(inline);
    let fake = testing::fake_guard().unwrap();
    let e = q.enqueue(b"x", opts()).await.unwrap();
    fake.drain(&handlers).await.unwrap();
    let rec = &fake.jobs(&JobFilter::default())[0];
    assert_eq!(rec.id, e.id);
    assert_eq!(rec.logs.len(), 1);
}
