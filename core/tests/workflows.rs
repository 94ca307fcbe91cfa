//! Flows: a parent runs once, after every one of its children finished, and reads their results;
//! children may live on other queues and shards. One test per promise, against a real
//! redis-server; those named after a peer's failure (BullMQ, Oban) rule it out.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::jobs::*;
use common::{unique, RedisServer};
use tideq::{
    ChildOutcome, Client, EnqueueOptions, ErrorKind, EventKind, EventsOptions, FlowJob, Job,
    JobState, OnChildFailure, Queue, QueueOptions, WorkerOptions,
};

/// A flow job with this id and payload.
fn node(id: &str) -> FlowJob {
    FlowJob::new(id.as_bytes().to_vec()).options(EnqueueOptions {
        id: Some(id.into()),
        ..Default::default()
    })
}

/// What each run saw: (job id, its children's results as "queue/id=outcome[:data]", sorted).
type Runs = Arc<Mutex<Vec<(String, Vec<String>)>>>;

/// A worker on `q` until drained: fails the jobs whose payload starts with "fail", sleeps
/// for those starting with "slow", returns "<id>!" as each job's result, and records what each
/// run saw of its children.
async fn drain(q: &Queue, runs: &Runs) -> tideq::WorkerStats {
    let runs = runs.clone();
    let w = q
        .work(
            WorkerOptions {
                concurrency: 4,
                ..drained()
            },
            move |job: Job| {
                let runs = runs.clone();
                async move {
                    let mut kids: Vec<String> = job
                        .children_results()
                        .await
                        .map_err(|e| e.to_string())?
                        .into_iter()
                        .map(|c| {
                            let data = match &c.outcome {
                                ChildOutcome::Completed(Some(r)) => {
                                    format!(":{}", String::from_utf8_lossy(r))
                                }
                                ChildOutcome::Failed(e) | ChildOutcome::Ignored(e) => {
                                    format!(":{e}")
                                }
                                _ => String::new(),
                            };
                            format!("{}/{}={}{data}", c.queue, c.id, c.outcome.as_str())
                        })
                        .collect();
                    kids.sort();
                    runs.lock().unwrap().push((job.id.clone(), kids));
                    if job.payload.starts_with(b"slow") {
                        tokio::time::sleep(Duration::from_millis(500)).await;
                    }
                    if job.payload.starts_with(b"fail") {
                        return Err(format!("{} broke", job.id));
                    }
                    Ok::<String, String>(format!("{}!", job.id))
                }
            },
        )
        .unwrap();
    tokio::time::timeout(Duration::from_secs(30), w.join())
        .await
        .expect("the worker drains")
}

fn runs_of(runs: &Runs, id: &str) -> Vec<Vec<String>> {
    runs.lock()
        .unwrap()
        .iter()
        .filter(|r| r.0 == id)
        .map(|r| r.1.clone())
        .collect()
}

fn order(runs: &Runs) -> Vec<String> {
    runs.lock().unwrap().iter().map(|r| r.0.clone()).collect()
}

#[tokio::test]
async fn a_parent_runs_once_after_all_its_children_and_reads_their_results() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let flow = node("parent").children([node("a"), node("b"), node("c")]);
    let made = q.enqueue_flow(flow).await.unwrap();
    assert_eq!((made.id.as_str(), made.created), ("parent", true));
    let info = q.get("parent").await.unwrap().unwrap();
    assert_eq!(
        (info.state, info.children_pending),
        (JobState::Waiting, Some(3))
    );
    let child = q.get("a").await.unwrap().unwrap();
    assert_eq!(child.parent.map(|p| p.id), Some("parent".into()));
    let runs: Runs = Default::default();
    let stats = drain(&q, &runs).await;
    assert_eq!(stats.completed, 4);
    assert_eq!(order(&runs).last().map(String::as_str), Some("parent"));
    let name = q.name().to_string();
    assert_eq!(
        runs_of(&runs, "parent"),
        vec![vec![
            format!("{name}/a=completed:a!"),
            format!("{name}/b=completed:b!"),
            format!("{name}/c=completed:c!"),
        ]]
    );
    assert_eq!(
        q.get("parent").await.unwrap().unwrap().state,
        JobState::Completed
    );
}

#[tokio::test]
async fn children_on_other_queues_and_on_shards_release_their_parent() {
    let server = RedisServer::start();
    let client = Client::open(&server.url).unwrap();
    let q = Queue::new(&client, &unique("parents"), QueueOptions::default()).unwrap();
    let parts = Queue::sharded(&client, &unique("parts"), 4, QueueOptions::default()).unwrap();
    let kids: Vec<FlowJob> = (0..40).map(|i| node(&format!("p{i}")).on(&parts)).collect();
    // A grandchild on the parents' queue, under a child on the parts' queue.
    let mid = node("mid").on(&parts).child(node("leaf").on(&q));
    q.enqueue_flow(node("root").children(kids).child(mid))
        .await
        .unwrap();
    let runs: Runs = Default::default();
    // The leaf first (the only job of q that can run), then the parts, then the root.
    let mut done = 0;
    for _ in 0..10 {
        done += drain(&q, &runs).await.completed;
        done += drain(&parts, &runs).await.completed;
        if done == 43 {
            break;
        }
    }
    assert_eq!(done, 43);
    let seen = order(&runs);
    assert_eq!(seen.iter().filter(|id| *id == "root").count(), 1);
    assert_eq!(seen.last().map(String::as_str), Some("root"));
    let pos = |id: &str| seen.iter().position(|s| s == id).unwrap();
    assert!(pos("leaf") < pos("mid"));
    let root = &runs_of(&runs, "root")[0];
    assert_eq!(root.len(), 41, "{root:?}");
    assert!(root.contains(&format!("{}/mid=completed:mid!", parts.name())));
    assert_eq!(
        runs_of(&runs, "mid")[0],
        vec![format!("{}/leaf=completed:leaf!", q.name())]
    );
}

#[tokio::test]
async fn a_failed_child_fails_its_parent_instead_of_leaving_it_waiting_forever() {
    // BullMQ #800 #1333 #3122 #3362: a parent whose child failed waited forever. Here the
    // default policy dead-letters the parent at once, its error naming the child, with a `dead`
    // event (BullMQ #2918: the parent's failure event was never emitted), and whoever waits for
    // the parent gets the failure.
    let server = RedisServer::start();
    let q = queue(&server.url);
    q.set_events(Some(1000)).await.unwrap();
    let bad = FlowJob::new(b"fail".to_vec()).options(EnqueueOptions {
        id: Some("bad".into()),
        max_attempts: Some(1),
        ..Default::default()
    });
    q.enqueue_flow(node("parent").child(bad).child(node("good")))
        .await
        .unwrap();
    let waiter = {
        let q = q.clone();
        tokio::spawn(async move { q.wait("parent", Some(Duration::from_secs(20))).await })
    };
    let runs: Runs = Default::default();
    drain(&q, &runs).await;
    assert!(runs_of(&runs, "parent").is_empty(), "the parent never ran");
    let info = q.get("parent").await.unwrap().unwrap();
    assert_eq!(info.state, JobState::Dead);
    let error = info.last_error.unwrap();
    assert!(
        error.contains("child job bad of queue") && error.contains("failed: bad broke"),
        "{error}"
    );
    let e = waiter.await.unwrap().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::JobFailed);
    let mut ev = q
        .events(EventsOptions {
            from_start: true,
            ..Default::default()
        })
        .await
        .unwrap();
    let mut parent_events = Vec::new();
    while let Some(e) = ev.next(Some(Duration::from_millis(300))).await.unwrap() {
        if e.job_id == "parent" {
            parent_events.push(e.kind);
        }
    }
    assert_eq!(parent_events, vec![EventKind::Enqueued, EventKind::Dead]);
}

#[tokio::test]
async fn continue_on_failure_runs_the_parent_only_after_its_pending_siblings() {
    // BullMQ #4248: "continue on failure" re-activated the parent while siblings were pending.
    let server = RedisServer::start();
    let q = queue(&server.url);
    let bad = FlowJob::new(b"fail".to_vec())
        .options(EnqueueOptions {
            id: Some("bad".into()),
            max_attempts: Some(1),
            ..Default::default()
        })
        .on_failure(OnChildFailure::Continue);
    let slow = FlowJob::new(b"slow".to_vec()).options(EnqueueOptions {
        id: Some("slow".into()),
        ..Default::default()
    });
    let ignored = FlowJob::new(b"fail".to_vec())
        .options(EnqueueOptions {
            id: Some("meh".into()),
            max_attempts: Some(1),
            ..Default::default()
        })
        .on_failure(OnChildFailure::Ignore);
    q.enqueue_flow(node("parent").child(bad).child(slow).child(ignored))
        .await
        .unwrap();
    let runs: Runs = Default::default();
    drain(&q, &runs).await;
    let seen = order(&runs);
    assert_eq!(seen.last().map(String::as_str), Some("parent"), "{seen:?}");
    let name = q.name();
    assert_eq!(
        runs_of(&runs, "parent"),
        vec![vec![
            format!("{name}/bad=failed:bad broke"),
            format!("{name}/meh=ignored:meh broke"),
            format!("{name}/slow=completed:slow!"),
        ]]
    );
}

#[tokio::test]
async fn failing_a_parent_while_a_sibling_still_runs_leaves_no_bad_state() {
    // BullMQ #2229: failing the parent while a sibling ran left the flow in a bad state. Here
    // the sibling completes after its parent died; the parent stays dead, nothing waits or is
    // ready, and no flow record is left for the parent.
    let server = RedisServer::start();
    let q = queue(&server.url);
    let bad = FlowJob::new(b"fail".to_vec()).options(EnqueueOptions {
        id: Some("bad".into()),
        max_attempts: Some(1),
        ..Default::default()
    });
    let slow = FlowJob::new(b"slow".to_vec()).options(EnqueueOptions {
        id: Some("slow".into()),
        ..Default::default()
    });
    q.enqueue_flow(node("parent").child(bad).child(slow))
        .await
        .unwrap();
    let runs: Runs = Default::default();
    let stats = drain(&q, &runs).await;
    assert_eq!((stats.completed, stats.failed), (1, 1));
    assert!(runs_of(&runs, "parent").is_empty());
    assert_eq!(
        q.get("parent").await.unwrap().unwrap().state,
        JobState::Dead
    );
    let s = q.stats().await.unwrap();
    assert_eq!((s.ready, s.delayed, s.active, s.dead), (0, 0, 0, 2));
    let waiting: u64 = redis::cmd("HLEN")
        .arg(format!("tideq:{{{}}}:fwait", q.name()))
        .query(&mut server.conn())
        .unwrap();
    assert_eq!(waiting, 0);
}

#[tokio::test]
async fn a_child_removed_by_retention_does_not_strand_its_parent() {
    // BullMQ #1752: a child removed on completion or failure (removeOnComplete/removeOnFail)
    // stranded its parent. Here nothing finished is kept, and the parent still runs with every
    // child's result.
    let server = RedisServer::start();
    let client = Client::open(&server.url).unwrap();
    let opts = QueueOptions {
        keep_completed: 0,
        keep_dead: Some(0),
        ..Default::default()
    };
    let q = Queue::new(&client, &unique("forgetful"), opts).unwrap();
    let bad = FlowJob::new(b"fail".to_vec())
        .options(EnqueueOptions {
            id: Some("bad".into()),
            max_attempts: Some(1),
            ..Default::default()
        })
        .on_failure(OnChildFailure::Continue);
    q.enqueue_flow(node("parent").child(node("a")).child(bad))
        .await
        .unwrap();
    let runs: Runs = Default::default();
    drain(&q, &runs).await;
    assert!(q.get("a").await.unwrap().is_none(), "the child is gone");
    assert_eq!(runs_of(&runs, "parent")[0].len(), 2);
}

#[tokio::test]
async fn a_child_whose_worker_died_is_dead_lettered_and_releases_its_parent() {
    // BullMQ #2464 #2531: a child whose worker died (its lease expired, then it was
    // dead-lettered) neither failed nor released its parent.
    let server = RedisServer::start();
    let q = queue(&server.url);
    let child = FlowJob::new(b"x".to_vec())
        .options(EnqueueOptions {
            id: Some("orphan".into()),
            max_attempts: Some(1),
            ..Default::default()
        })
        .on_failure(OnChildFailure::Continue);
    q.enqueue_flow(node("parent").child(child)).await.unwrap();
    // A "worker" takes the child and dies: its lease runs out.
    let leased = q.lease_jobs(1, Duration::from_millis(100)).await.unwrap();
    assert_eq!(leased[0].id, "orphan");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let runs: Runs = Default::default();
    drain(&q, &runs).await;
    let parent = runs_of(&runs, "parent");
    assert_eq!(parent.len(), 1);
    assert!(
        parent[0][0].contains("orphan=failed:lease expired"),
        "{parent:?}"
    );
}

#[tokio::test]
async fn a_retried_child_of_a_cancelled_parent_points_at_no_detached_parent() {
    // BullMQ #2833: a retried child still pointed at a parent that was gone. Here cancelling
    // the parent cancels its pending children, asks a running one to stop, and leaves no record
    // of the parent behind.
    let server = RedisServer::start();
    let q = queue(&server.url);
    let retried = FlowJob::new(b"x".to_vec()).options(EnqueueOptions {
        id: Some("busy".into()),
        ..Default::default()
    });
    let later = FlowJob::new(b"x".to_vec()).options(EnqueueOptions {
        id: Some("later".into()),
        delay: Some(Duration::from_secs(60)),
        ..Default::default()
    });
    q.enqueue_flow(
        node("parent")
            .child(retried)
            .child(later)
            .child(node("deep").child(node("deeper"))),
    )
    .await
    .unwrap();
    let leased = q.lease_jobs(1, Duration::from_secs(30)).await.unwrap();
    assert_eq!(leased.len(), 1);
    let running = leased[0].id.clone();
    q.cancel("parent").await.unwrap();
    assert!(q.get("parent").await.unwrap().is_none());
    for id in ["busy", "later", "deep", "deeper"] {
        if id != running {
            assert!(q.get(id).await.unwrap().is_none(), "{id} was cancelled");
        }
    }
    assert_eq!(running, "busy");
    let requested: bool = redis::cmd("SISMEMBER")
        .arg(format!("tideq:{{{}}}:cancel", q.name()))
        .arg("busy")
        .query(&mut server.conn())
        .unwrap();
    assert!(requested, "the running child is asked to stop");
    let left: Vec<String> = redis::cmd("KEYS")
        .arg(format!("tideq:{{{}}}:f*", q.name()))
        .query(&mut server.conn())
        .unwrap();
    assert!(
        left.iter()
            .all(|k| !k.contains(":fk:parent") && !k.contains(":fl:parent")),
        "{left:?}"
    );
}

#[tokio::test]
async fn retention_never_deletes_a_parent_waiting_for_its_children() {
    // Oban #722: retention pruned upstream jobs in the middle of a workflow.
    let server = RedisServer::start();
    let client = Client::open(&server.url).unwrap();
    let opts = QueueOptions {
        keep_completed: 0,
        keep_dead: Some(0),
        ..Default::default()
    };
    let q = Queue::new(&client, &unique("pruned"), opts).unwrap();
    let later = FlowJob::new(b"x".to_vec()).options(EnqueueOptions {
        id: Some("later".into()),
        delay: Some(Duration::from_millis(1500)),
        ..Default::default()
    });
    q.enqueue_flow(node("parent").child(later)).await.unwrap();
    for i in 0..50 {
        q.enqueue(b"other", id(&format!("o{i}"))).await.unwrap();
    }
    let runs: Runs = Default::default();
    drain(&q, &runs).await;
    assert_eq!(runs_of(&runs, "parent").len(), 1);
}

#[tokio::test]
async fn a_notice_delivered_twice_counts_once() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    q.enqueue_flow(node("parent").child(node("a")).child(node("b")))
        .await
        .unwrap();
    // Run "a" only, keeping its notice, then deliver it twice.
    let leased = q.lease_jobs(1, Duration::from_secs(30)).await.unwrap();
    let fout = format!("tideq:{{{}}}:fout", q.name());
    q.complete(&leased[0]).await.unwrap();
    let notes: Vec<Vec<u8>> = redis::cmd("LRANGE")
        .arg(&fout)
        .arg(0)
        .arg(-1)
        .query(&mut server.conn())
        .unwrap();
    assert_eq!(notes.len(), 1);
    let _: () = redis::cmd("RPUSH")
        .arg(&fout)
        .arg(&notes[0])
        .query(&mut server.conn())
        .unwrap();
    q.lease_jobs(1, Duration::from_millis(1)).await.unwrap();
    let info = q.get("parent").await.unwrap().unwrap();
    assert_eq!(
        info.children_pending,
        Some(1),
        "the other child is still pending"
    );
}

#[tokio::test]
async fn a_flow_whose_root_exists_writes_nothing_and_bad_flows_are_refused() {
    let server = RedisServer::start();
    let client = Client::open(&server.url).unwrap();
    let q = Queue::new(&client, &unique("idem"), QueueOptions::default()).unwrap();
    let other = Queue::new(&client, &unique("other"), QueueOptions::default()).unwrap();
    q.enqueue(b"x", id("root")).await.unwrap();
    let again = q
        .enqueue_flow(node("root").child(node("k1").on(&other)))
        .await
        .unwrap();
    assert!(!again.created);
    assert!(
        other.get("k1").await.unwrap().is_none(),
        "nothing was written"
    );
    let e = q
        .enqueue_flow(node("r2").child(node("dup")).child(node("dup")))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(e.message().contains("appears twice"), "{e}");
    let deduped = FlowJob::new(b"x".to_vec()).options(EnqueueOptions {
        dedup: Some(tideq::Dedup::new("k")),
        ..Default::default()
    });
    let e = q.enqueue_flow(node("r3").child(deduped)).await.unwrap_err();
    assert!(e.message().contains("no dedup or debounce"), "{e}");
    // A child id that exists on another queue: refused, and the held jobs written before it
    // are dropped.
    other.enqueue(b"x", id("taken")).await.unwrap();
    let e = q
        .enqueue_flow(node("r4").children([node("fresh").on(&other), node("taken").on(&other)]))
        .await
        .unwrap_err();
    assert!(e.message().contains("exists already"), "{e}");
    assert!(q.get("r4").await.unwrap().is_none());
    assert!(other.get("fresh").await.unwrap().is_none());
}

/// Puts job `id` of `q` back the way a writer that stopped before releasing it leaves it: held
/// (for longer than the grace) and not in the ready list.
fn hold_again(server: &RedisServer, q: &Queue, id: &str, root: &str, root_q: &Queue) {
    let mut c = server.conn();
    let base = |q: &Queue| format!("tideq:{{{}}}:", q.name());
    let _: () = redis::cmd("LREM")
        .arg(format!("{}ready", base(q)))
        .arg(0)
        .arg(id)
        .query(&mut c)
        .unwrap();
    let _: () = redis::cmd("ZADD")
        .arg(format!("{}fhold", base(q)))
        .arg(1)
        .arg(id)
        .query(&mut c)
        .unwrap();
    let _: () = redis::cmd("HSET")
        .arg(format!("{}froot", base(q)))
        .arg(id)
        .arg(format!("0\t{root}\t{}", base(root_q)))
        .query(&mut c)
        .unwrap();
}

#[tokio::test]
async fn a_flow_left_half_written_runs_whole_or_not_at_all() {
    // A writer that stops after the root is written: its held jobs are released by the workers.
    // One that stops before: they are dropped, never run.
    let server = RedisServer::start();
    let client = Client::open(&server.url).unwrap();
    let q = Queue::new(&client, &unique("roots"), QueueOptions::default()).unwrap();
    let parts = Queue::new(&client, &unique("parts"), QueueOptions::default()).unwrap();
    q.enqueue_flow(node("sealed").child(node("kept").on(&parts)))
        .await
        .unwrap();
    q.enqueue_flow(node("gone").child(node("orphan").on(&parts)))
        .await
        .unwrap();
    hold_again(&server, &parts, "kept", "sealed", &q);
    hold_again(&server, &parts, "orphan", "gone", &q);
    // The second root never got written.
    let _: () = redis::cmd("HDEL")
        .arg(format!("tideq:{{{}}}:meta", q.name()))
        .arg("gone")
        .query(&mut server.conn())
        .unwrap();
    assert_eq!(
        parts.get("kept").await.unwrap().unwrap().state,
        JobState::Waiting
    );
    let runs: Runs = Default::default();
    for _ in 0..3 {
        drain(&parts, &runs).await;
        drain(&q, &runs).await;
    }
    let seen = order(&runs);
    assert!(
        seen.contains(&"kept".to_string()) && seen.contains(&"sealed".to_string()),
        "{seen:?}"
    );
    assert!(!seen.contains(&"orphan".to_string()), "{seen:?}");
    assert!(parts.get("orphan").await.unwrap().is_none());
}
