//! Tasks by name: a task enqueued with arguments runs on the worker's handler of that name with
//! those arguments (JSON or MessagePack); a job whose name no handler has, or that has no name,
//! goes to the dead letters at once instead of being retried; names are checked like ids.

mod common;

use std::sync::{Arc, Mutex};

use common::jobs::*;
use common::RedisServer;
use serde::{Deserialize, Serialize};
use tideq::{EnqueueOptions, Job, JobState, PayloadFormat, QueueOptions, Tasks};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Welcome {
    to: String,
    attempt_limit: u32,
}

#[tokio::test]
async fn a_task_runs_on_the_handler_of_its_name_with_its_arguments() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let args = Welcome {
        to: "ada@example.com".into(),
        attempt_limit: 3,
    };
    q.enqueue_task("send-welcome", &args, EnqueueOptions::default())
        .await
        .unwrap();
    let packed = EnqueueOptions {
        format: Some(PayloadFormat::Msgpack),
        ..Default::default()
    };
    q.enqueue_task("send-welcome", &args, packed).await.unwrap();
    q.enqueue_task("count", &[1, 2, 3], EnqueueOptions::default())
        .await
        .unwrap();
    type Seen = Vec<(Welcome, Option<PayloadFormat>)>;
    let got: Arc<Mutex<Seen>> = Default::default();
    let sums: Arc<Mutex<Vec<i64>>> = Default::default();
    let (g, s) = (got.clone(), sums.clone());
    let tasks = Tasks::new()
        .task("send-welcome", move |w: Welcome, job: Job| {
            g.lock().unwrap().push((w, job.format));
            async { Ok::<(), String>(()) }
        })
        .task("count", move |v: Vec<i64>, _job: Job| {
            s.lock().unwrap().push(v.iter().sum());
            async { Ok::<(), String>(()) }
        });
    let stats = q.work_tasks(drained(), tasks).unwrap().join().await;
    assert_eq!(stats.completed, 3);
    let got = got.lock().unwrap().clone();
    assert_eq!(got.len(), 2);
    assert!(got.iter().all(|(w, _)| *w == args));
    let formats: Vec<_> = got.iter().map(|(_, f)| *f).collect();
    assert!(
        formats.contains(&Some(PayloadFormat::Json))
            && formats.contains(&Some(PayloadFormat::Msgpack))
    );
    assert_eq!(*sums.lock().unwrap(), vec![6]);
}

#[tokio::test]
async fn an_unknown_task_goes_to_the_dead_letters_at_once_naming_the_tasks_the_worker_runs() {
    let server = RedisServer::start();
    let q = queue_with(
        &server.url,
        QueueOptions {
            max_attempts: 5,
            ..Default::default()
        },
    );
    q.enqueue_task("nobody-runs-this", &1, id("unknown"))
        .await
        .unwrap();
    q.enqueue(b"raw bytes", id("plain")).await.unwrap();
    // A job's record names its task (listings and the CLI show it); a raw payload has none.
    let queued = q.get("unknown").await.unwrap().unwrap();
    assert_eq!(queued.task.as_deref(), Some("nobody-runs-this"));
    assert_eq!(q.get("plain").await.unwrap().unwrap().task, None);
    let tasks = Tasks::new()
        .raw("a", |_job: Job| async { Ok::<(), String>(()) })
        .raw("b", |_job: Job| async { Ok::<(), String>(()) });
    q.work_tasks(drained(), tasks).unwrap().join().await;
    let unknown = q.get("unknown").await.unwrap().unwrap();
    assert_eq!(
        (unknown.state, unknown.attempts),
        (JobState::Dead, 1),
        "not retried"
    );
    let err = unknown.last_error.unwrap();
    assert!(
        err.contains("unknown task \"nobody-runs-this\"") && err.contains("a, b"),
        "{err}"
    );
    let plain = q.get("plain").await.unwrap().unwrap();
    assert_eq!(plain.state, JobState::Dead);
    assert!(plain.last_error.unwrap().contains("no task name"));
}

#[tokio::test]
async fn task_names_and_arguments_are_checked_before_anything_is_written() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    for bad in ["", "a\nb", &"x".repeat(257)] {
        let err = q
            .enqueue_task(bad, &1, EnqueueOptions::default())
            .await
            .unwrap_err();
        assert_eq!(err.code(), "INVALID_ARGUMENT", "{bad:?}");
    }
    let err = q.work_tasks(drained(), Tasks::new()).unwrap_err();
    assert_eq!(err.code(), "INVALID_ARGUMENT");
    // Arguments that do not decode as the handler's type fail the attempt with a clear error.
    q.enqueue_task("send-welcome", &"not a Welcome", id("bad-args"))
        .await
        .unwrap();
    let tasks = Tasks::new().task("send-welcome", |_w: Welcome, _job: Job| async {
        Ok::<(), String>(())
    });
    q.work_tasks(drained(), tasks).unwrap().join().await;
    let info = q.get("bad-args").await.unwrap().unwrap();
    assert!(info.last_error.unwrap().contains("do not decode"));
    assert_eq!(q.stats().await.unwrap().enqueued, 1);
}
