//! The inline test mode (`tideq::testing`, issue 42 item 1): each enqueue runs its job at once,
//! in the caller, and raises its error; a job without a handler stays recorded until one is set.
//! Fake mode and what both modes answer: `testing.rs`.
//!
//! A mode is process-wide and cargo runs a file's tests on parallel threads: every test here
//! holds `SERIAL`.

mod common;

use common::testing::{offline, opts, SERIAL};
use tideq::testing::{self, Handlers, JobFilter, RecordedState};
use tideq::{EnqueueOptions, ErrorKind, Job, JobState, Tasks};

#[tokio::test]
async fn inline_mode_runs_the_job_in_the_enqueue_and_raises_its_error() {
    let _s = SERIAL.lock().await;
    let q = offline("inline");
    let tasks = Tasks::new()
        .task("double", |n: i64, _job: Job| async move {
            Ok::<_, String>(serde_json::json!(n * 2))
        })
        .task("fails", |_: i64, job: Job| async move {
            job.progress(b"half way").await.map_err(|e| e.to_string())?;
            Err::<(), _>("no luck".to_string())
        });
    let handlers = Handlers::new().tasks(q.name(), tasks);
    let inline = testing::inline_guard(handlers.clone(), true).unwrap();
    let done = q.enqueue_task("double", &21, opts()).await.unwrap();
    let out = q.wait(&done.id, None).await.unwrap();
    assert_eq!(out.result.as_deref(), Some(&b"42"[..]));
    let two = EnqueueOptions {
        max_attempts: Some(2),
        id: Some("fails-1".into()),
        ..opts()
    };
    let e = q.enqueue_task("fails", &1, two).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::JobFailed);
    assert!(
        e.to_string().ends_with("went to the dead letters: no luck"),
        "{e}"
    );
    let info = q.get("fails-1").await.unwrap().unwrap();
    assert_eq!((info.state, info.attempts), (JobState::Dead, 2));
    assert_eq!(info.progress.as_deref(), Some(&b"half way"[..]));
    drop(inline);
    // Without raise_errors the enqueue succeeds and the record tells.
    let quiet = testing::inline_guard(handlers, false).unwrap();
    let e = q.enqueue_task("fails", &1, opts()).await.unwrap();
    assert_eq!(quiet.jobs(&JobFilter::default())[0].id, e.id);
    assert_eq!(
        quiet.jobs(&JobFilter::default())[0].state,
        RecordedState::Dead
    );
}

#[tokio::test]
async fn inline_mode_leaves_a_job_without_handler_recorded_and_takes_handlers_set_later() {
    let _s = SERIAL.lock().await;
    let q = offline("late");
    let inline = testing::inline_guard(Handlers::new(), true).unwrap();
    let first = q.enqueue(b"early", opts()).await.unwrap();
    assert_eq!(inline.enqueued(&JobFilter::default())[0].id, first.id);
    inline.set_handlers(Handlers::new().raw(q.name(), |job: Job| async move {
        Ok::<_, String>(job.payload.clone())
    }));
    let second = q.enqueue(b"late", opts()).await.unwrap();
    let out = q.wait(&second.id, None).await.unwrap();
    assert_eq!(out.result.as_deref(), Some(&b"late"[..]));
}
