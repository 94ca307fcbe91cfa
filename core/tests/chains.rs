//! Chains and chords: a chain's links run one after another, each getting the previous result
//! as its arguments; a chord's callback runs once, after the last of its children, with their
//! results. One test per promise, against a real redis-server; those named after a peer's
//! failure (Celery, Sidekiq) rule it out.

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::jobs::*;
use common::RedisServer;
use serde_json::{json, Value};
use tideq::{
    Backoff, EnqueueOptions, ErrorKind, FlowJob, Job, JobState, OnChildFailure, Queue,
    QueueOptions, Tasks, WorkerOptions,
};

fn results_kept(url: &str, shards: usize) -> Queue {
    sharded(
        url,
        shards,
        QueueOptions {
            backoff: Backoff::fixed(20),
            keep_completed: 100,
            ..Default::default()
        },
    )
}

fn sharded(url: &str, shards: usize, opts: QueueOptions) -> Queue {
    let client = tideq::Client::open(url).unwrap();
    Queue::sharded(&client, &common::unique("jq"), shards, opts).unwrap()
}

/// Runs `tasks` on `q` until it is drained.
async fn drain_tasks(q: &Queue, tasks: Tasks) -> tideq::WorkerStats {
    let w = q
        .work_tasks(
            WorkerOptions {
                concurrency: 8,
                ..drained()
            },
            tasks,
        )
        .unwrap();
    tokio::time::timeout(Duration::from_secs(60), w.join())
        .await
        .expect("the worker drains")
}

fn json_of(bytes: &Option<Vec<u8>>) -> Value {
    serde_json::from_slice(bytes.as_deref().unwrap_or(b"null")).unwrap()
}

#[tokio::test]
async fn a_chain_runs_its_links_in_order_each_getting_the_previous_result() {
    let server = RedisServer::start();
    let q = results_kept(&server.url, 1);
    // The middle link lives on a sharded queue: the chain crosses queues and hash slots.
    let other = results_kept(&server.url, 4);
    let chain = FlowJob::chain([
        FlowJob::task("add", &json!({"n": 1})).unwrap(),
        FlowJob::step("add").on(&other),
        FlowJob::step("add"),
    ])
    .unwrap();
    let last = q.enqueue_flow(chain).await.unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let tasks = |seen: Arc<Mutex<Vec<i64>>>| {
        Tasks::new().task("add", move |args: Value, _job: Job| {
            let seen = seen.clone();
            async move {
                let n = args["n"].as_i64().unwrap();
                seen.lock().unwrap().push(n);
                Ok::<Value, String>(json!({ "n": n + 1 }))
            }
        })
    };
    let here = q
        .work_tasks(WorkerOptions::default(), tasks(seen.clone()))
        .unwrap();
    let there = other
        .work_tasks(WorkerOptions::default(), tasks(seen.clone()))
        .unwrap();
    let out = q
        .wait(&last.id, Some(Duration::from_secs(30)))
        .await
        .unwrap();
    here.shutdown().await;
    there.shutdown().await;
    assert_eq!(json_of(&out.result), json!({"n": 4}));
    assert_eq!(
        *seen.lock().unwrap(),
        vec![1, 2, 3],
        "in order, each the previous result"
    );
}

#[tokio::test]
async fn a_chain_of_raw_jobs_passes_each_result_on_as_the_next_payload() {
    let server = RedisServer::start();
    let q = results_kept(&server.url, 1);
    let chain = FlowJob::chain([
        FlowJob::new(b"a".to_vec()),
        FlowJob::new(Vec::new()),
        FlowJob::new(Vec::new()),
    ])
    .unwrap();
    let last = q.enqueue_flow(chain).await.unwrap();
    let w = q
        .work(WorkerOptions::default(), |job: Job| async move {
            assert!(job.task.is_none());
            let mut out = job.payload.clone();
            out.push(b'+');
            Ok::<Vec<u8>, String>(out)
        })
        .unwrap();
    let out = q
        .wait(&last.id, Some(Duration::from_secs(30)))
        .await
        .unwrap();
    w.shutdown().await;
    assert_eq!(out.result.as_deref(), Some(&b"a+++"[..]));
}

#[tokio::test]
async fn a_failed_link_fails_the_rest_of_the_chain_instead_of_running_it() {
    let server = RedisServer::start();
    let q = results_kept(&server.url, 1);
    let chain = FlowJob::chain([
        FlowJob::task("ok", &1).unwrap(),
        FlowJob::step("broken").options(EnqueueOptions {
            id: Some("broken".into()),
            max_attempts: Some(2),
            ..Default::default()
        }),
        FlowJob::step("ok").options(id("last")),
    ])
    .unwrap();
    q.enqueue_flow(chain).await.unwrap();
    let runs = Arc::new(AtomicU64::new(0));
    let r = runs.clone();
    let tasks = Tasks::new()
        .task("ok", move |args: Value, _job: Job| {
            let r = r.clone();
            async move {
                r.fetch_add(1, Ordering::SeqCst);
                Ok::<Value, String>(args)
            }
        })
        .task("broken", |_: Value, _job: Job| async move {
            Err::<(), String>("no luck".into())
        });
    drain_tasks(&q, tasks).await;
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the last link never ran");
    let last = q.get("last").await.unwrap().unwrap();
    assert_eq!(last.state, JobState::Dead);
    let err = last.last_error.unwrap();
    assert!(err.contains("broken") && err.contains("no luck"), "{err}");
}

#[tokio::test]
async fn a_link_whose_failure_is_let_through_gets_null_from_it() {
    let server = RedisServer::start();
    let q = results_kept(&server.url, 1);
    let chain = FlowJob::chain([
        FlowJob::task("broken", &1)
            .unwrap()
            .options(EnqueueOptions {
                max_attempts: Some(1),
                ..Default::default()
            })
            .on_failure(OnChildFailure::Continue),
        FlowJob::step("echo").options(id("last")),
    ])
    .unwrap();
    q.enqueue_flow(chain).await.unwrap();
    let tasks = Tasks::new()
        .task("echo", |args: Value, _job: Job| async move {
            Ok::<Value, String>(json!({ "got": args }))
        })
        .task("broken", |_: Value, _job: Job| async move {
            Err::<(), String>("no luck".into())
        });
    drain_tasks(&q, tasks).await;
    let last = q.get("last").await.unwrap().unwrap();
    assert_eq!(last.state, JobState::Completed);
    assert_eq!(json_of(&last.result), json!({ "got": null }));
}

/// Celery #941 #1700 #3246 #9674, and #5237 with result expiry 0: the callback never runs, or
/// runs again and again. Here the children keep no results at all (`keep_completed: 0`), some
/// are retried, and the callback runs exactly once with every result in the children's order.
#[tokio::test]
async fn a_chord_callback_runs_exactly_once_with_every_result_even_when_results_are_not_kept() {
    let server = RedisServer::start();
    let q = results_kept(&server.url, 1);
    let parts = sharded(
        &server.url,
        4,
        QueueOptions {
            backoff: Backoff::fixed(10),
            keep_completed: 0,
            ..Default::default()
        },
    );
    let n = 200;
    let children: Vec<FlowJob> = (0..n)
        .map(|i| FlowJob::task("square", &i).unwrap().on(&parts))
        .collect();
    let chord = FlowJob::chord(children, FlowJob::step("sum").options(id("sum"))).unwrap();
    q.enqueue_flow(chord).await.unwrap();
    let tries = Arc::new(Mutex::new(std::collections::HashSet::new()));
    let square = Tasks::new().task("square", move |i: i64, _job: Job| {
        let tries = tries.clone();
        async move {
            // Every third child fails its first attempt.
            if i % 3 == 0 && tries.lock().unwrap().insert(i) {
                return Err(format!("{i}: not yet"));
            }
            Ok::<Value, String>(json!(i * i))
        }
    });
    let sums = Arc::new(AtomicU64::new(0));
    let s = sums.clone();
    let sum = Tasks::new().task("sum", move |all: Vec<i64>, _job: Job| {
        let s = s.clone();
        async move {
            s.fetch_add(1, Ordering::SeqCst);
            Ok::<Value, String>(
                json!({ "count": all.len(), "first": all[..3], "sum": all.iter().sum::<i64>() }),
            )
        }
    });
    drain_tasks(&parts, square).await;
    drain_tasks(&q, sum).await;
    assert_eq!(sums.load(Ordering::SeqCst), 1, "the callback ran once");
    let done = q.get("sum").await.unwrap().unwrap();
    let expect: i64 = (0..n).map(|i| i * i).sum();
    assert_eq!(
        json_of(&done.result),
        json!({ "count": n, "first": [0, 1, 4], "sum": expect })
    );
}

/// Sidekiq #2051 #4760 #5068: the batch callback fires early (when the jobs pushed so far have
/// finished, while more are still being added) or twice. A chord of 3,000 children is written
/// in several calls while workers already run; the callback runs once, after all 3,000.
#[tokio::test]
async fn a_chord_callback_never_fires_before_children_still_being_written_nor_twice() {
    let server = RedisServer::start();
    let q = results_kept(&server.url, 1);
    let parts = sharded(&server.url, 2, QueueOptions::default());
    let ran = Arc::new(Mutex::new(Vec::new()));
    let r = ran.clone();
    let callback = q
        .work_tasks(
            WorkerOptions::default(),
            Tasks::new().task("done", move |all: Vec<Value>, _job: Job| {
                let r = r.clone();
                async move {
                    r.lock().unwrap().push(all.len());
                    Ok::<(), String>(())
                }
            }),
        )
        .unwrap();
    let children = parts
        .work_tasks(
            WorkerOptions {
                concurrency: 16,
                ..Default::default()
            },
            Tasks::new().task("part", |i: u64, _job: Job| async move {
                Ok::<Value, String>(json!(i))
            }),
        )
        .unwrap();
    let n = 3000usize;
    let kids: Vec<FlowJob> = (0..n)
        .map(|i| FlowJob::task("part", &i).unwrap().on(&parts))
        .collect();
    let root = q
        .enqueue_flow(FlowJob::chord(kids, FlowJob::step("done")).unwrap())
        .await
        .unwrap();
    q.wait(&root.id, Some(Duration::from_secs(60)))
        .await
        .unwrap();
    // Time for a second (wrong) run to show.
    tokio::time::sleep(Duration::from_millis(500)).await;
    children.shutdown().await;
    callback.shutdown().await;
    assert_eq!(*ran.lock().unwrap(), vec![n]);
}

/// A chord whose child dead-letters fails its callback once, naming the child (no loop of
/// retries, no callback left waiting).
#[tokio::test]
async fn a_chord_with_a_dead_child_fails_its_callback_once_naming_the_child() {
    let server = RedisServer::start();
    let q = results_kept(&server.url, 1);
    let kids = vec![
        FlowJob::task("part", &1).unwrap(),
        FlowJob::task("part", &-1).unwrap().options(EnqueueOptions {
            id: Some("bad-part".into()),
            max_attempts: Some(2),
            ..Default::default()
        }),
    ];
    q.enqueue_flow(FlowJob::chord(kids, FlowJob::step("done").options(id("cb"))).unwrap())
        .await
        .unwrap();
    let calls = Arc::new(AtomicU64::new(0));
    let c = calls.clone();
    let tasks = Tasks::new()
        .task("part", |i: i64, _job: Job| async move {
            if i < 0 {
                return Err(format!("{i} is negative"));
            }
            Ok::<i64, String>(i).map(|i| json!(i))
        })
        .task("done", move |_: Value, _job: Job| {
            let c = c.clone();
            async move {
                c.fetch_add(1, Ordering::SeqCst);
                Ok::<(), String>(())
            }
        });
    drain_tasks(&q, tasks).await;
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    let cb = q.get("cb").await.unwrap().unwrap();
    assert_eq!(cb.state, JobState::Dead);
    assert_eq!(cb.attempts, 0, "failed at once, never retried");
    let err = cb.last_error.unwrap();
    assert!(
        err.contains("bad-part") && err.contains("negative"),
        "{err}"
    );
}

#[tokio::test]
async fn a_chord_callback_on_msgpack_gets_the_results_as_msgpack() {
    let server = RedisServer::start();
    let q = results_kept(&server.url, 1);
    let callback = FlowJob::step("total").options(EnqueueOptions {
        format: Some(tideq::PayloadFormat::Msgpack),
        ..id("total")
    });
    let kids = vec![
        FlowJob::task("part", &2).unwrap(),
        FlowJob::task("part", &3).unwrap(),
    ];
    q.enqueue_flow(FlowJob::chord(kids, callback).unwrap())
        .await
        .unwrap();
    let tasks = Tasks::new()
        .task("part", |i: i64, _job: Job| async move {
            Ok::<Value, String>(json!(i * 10))
        })
        .task("total", |all: Vec<i64>, job: Job| async move {
            assert_eq!(job.format, Some(tideq::PayloadFormat::Msgpack));
            assert_eq!(job.args_from, Some(tideq::ArgsFrom::Children));
            Ok::<Value, String>(json!(all.iter().sum::<i64>()))
        });
    drain_tasks(&q, tasks).await;
    let done = q.get("total").await.unwrap().unwrap();
    assert_eq!(json_of(&done.result), json!(50));
}

#[tokio::test]
async fn a_binary_result_handed_on_as_arguments_dead_letters_the_next_link_with_a_clear_error() {
    let server = RedisServer::start();
    let q = results_kept(&server.url, 1);
    let chain = FlowJob::chain([
        FlowJob::new(b"raw".to_vec()),
        FlowJob::step("parse").options(id("parse")),
    ])
    .unwrap();
    q.enqueue_flow(chain).await.unwrap();
    // One worker runs both: the raw first link returns bytes that are not text.
    let w = q
        .work(drained(), |job: Job| async move {
            if job.task.is_some() {
                return Err("the handler should not have run".to_string());
            }
            Ok::<Vec<u8>, String>(vec![0xff, 0xfe])
        })
        .unwrap();
    tokio::time::timeout(Duration::from_secs(30), w.join())
        .await
        .unwrap();
    let parse = q.get("parse").await.unwrap().unwrap();
    assert_eq!(parse.state, JobState::Dead);
    assert_eq!(parse.attempts, 1, "dead at once: retrying cannot help");
    let err = parse.last_error.unwrap();
    assert!(err.contains("binary"), "{err}");
}

#[tokio::test]
async fn chains_and_chords_refuse_links_that_would_lose_their_arguments() {
    let server = RedisServer::start();
    let q = results_kept(&server.url, 1);
    let refused = |r: tideq::Result<FlowJob>, text: &str| {
        let e = r.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        assert!(e.to_string().contains(text), "{e}");
    };
    refused(FlowJob::chain([]), "at least one link");
    refused(
        FlowJob::chain([FlowJob::step("a"), FlowJob::task("b", &1).unwrap()]),
        "chain link 2 (task \"b\") has arguments",
    );
    refused(
        FlowJob::chain([
            FlowJob::step("a"),
            FlowJob::step("b").child(FlowJob::step("c")),
        ]),
        "children of its own",
    );
    refused(
        FlowJob::chord([FlowJob::step("a")], FlowJob::new(b"x".to_vec())),
        "the chord's callback (a raw job) has arguments",
    );
    refused(
        FlowJob::chain([
            FlowJob::step("a"),
            FlowJob::chord([FlowJob::step("b")], FlowJob::step("c")).unwrap(),
        ]),
        "children of its own",
    );
    assert_eq!(q.stats().await.unwrap().enqueued, 0, "nothing written");
}
