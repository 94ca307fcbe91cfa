//! Writing a flow: ids already taken (existing, or finished within the idempotency window), a
//! refused flow leaving nothing behind, a parent of many children, the size limit. One test per
//! promise, against a real redis-server.

mod common;

use std::time::Duration;

use common::jobs::*;
use common::{unique, RedisServer};
use tideq::{
    Client, EnqueueOptions, ErrorKind, FlowJob, Job, JobState, Queue, QueueOptions, MAX_FLOW_JOBS,
};

/// A flow job with this id and payload.
fn node(id: &str) -> FlowJob {
    FlowJob::new(id.as_bytes().to_vec()).options(EnqueueOptions {
        id: Some(id.into()),
        ..Default::default()
    })
}

/// Every key of the server whose name contains `{<name>` (a queue and its shards).
/// The keys of queue `name`, but the record of its shard count (`:shards`), which any write of a
/// handle makes first (docs/cluster.md) and which holds no job nor turns on any cost.
fn keys_of(server: &RedisServer, name: &str) -> Vec<String> {
    let mut keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("*{{{name}*"))
        .query(&mut server.conn())
        .unwrap();
    keys.retain(|k| !k.ends_with(":shards"));
    keys.sort();
    keys
}

async fn run_all(q: &Queue) -> u64 {
    let w = q
        .work(drained(), |_j: Job| async { Ok::<(), String>(()) })
        .unwrap();
    tokio::time::timeout(Duration::from_secs(60), w.join())
        .await
        .expect("the worker drains")
        .completed
}

/// Issue 40, item 20: with `keep_completed=0`, a completed `w-1` is gone but its id is still
/// remembered; `enqueue` and a flow's root refused it, a flow's child did not, and ran again.
#[tokio::test]
async fn a_flow_child_whose_id_finished_within_the_idempotency_window_is_refused() {
    let server = RedisServer::start();
    let client = Client::open(&server.url).unwrap();
    let forgetful = QueueOptions {
        keep_completed: 0,
        ..Default::default()
    };
    let q = Queue::new(&client, &unique("once"), forgetful).unwrap();
    let other = Queue::new(&client, &unique("roots"), QueueOptions::default()).unwrap();
    q.enqueue(b"w", id("w-1")).await.unwrap();
    assert_eq!(run_all(&q).await, 1);
    assert!(q.get("w-1").await.unwrap().is_none(), "its data is gone");
    assert!(!q.enqueue(b"w", id("w-1")).await.unwrap().created);
    assert!(!q.enqueue_flow(node("w-1")).await.unwrap().created);
    // A child: in a flow written in one call (all on one queue), and in one written in several
    // (its child on another queue).
    let one_call = node("r1").child(node("w-1"));
    let several = node("r2").child(node("w-1").on(&q));
    for (flow, root) in [
        (q.enqueue_flow(one_call), "r1"),
        (other.enqueue_flow(several), "r2"),
    ] {
        let e = flow.await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        assert!(
            e.message()
                .contains("\"w-1\" exists already (or finished within"),
            "{e}"
        );
        assert!(q.get(root).await.unwrap().is_none());
        assert!(other.get(root).await.unwrap().is_none());
    }
    assert_eq!(run_all(&q).await, 0, "w-1 did not run again");
    assert_eq!(q.stats().await.unwrap().enqueued, 1);
}

/// A flow's jobs given ids are remembered like any enqueue's: once they finished (and their data
/// was trimmed), the same ids create nothing within the window; a cancelled flow's are forgotten.
#[tokio::test]
async fn a_flow_jobs_given_ids_are_remembered_after_they_finished_and_forgotten_when_cancelled() {
    let server = RedisServer::start();
    let client = Client::open(&server.url).unwrap();
    let forgetful = QueueOptions {
        keep_completed: 0,
        ..Default::default()
    };
    let q = Queue::new(&client, &unique("kept"), forgetful).unwrap();
    q.enqueue_flow(node("p").children([node("k1"), node("k2")]))
        .await
        .unwrap();
    assert_eq!(run_all(&q).await, 3);
    for k in ["p", "k1", "k2"] {
        assert!(q.get(k).await.unwrap().is_none(), "{k} is trimmed");
        assert!(!q.enqueue(b"x", id(k)).await.unwrap().created, "{k}");
    }
    q.enqueue_flow(node("p2").child(node("k3"))).await.unwrap();
    q.cancel("p2").await.unwrap();
    for k in ["p2", "k3"] {
        assert!(q.get(k).await.unwrap().is_none(), "{k} is cancelled");
        assert!(q.enqueue(b"x", id(k)).await.unwrap().created, "{k}");
    }
}

/// Issue 40, item 21: a flow refused for a child id that exists left `cfg {flows:1}` and `stats`
/// on child queues it never wrote a job to (each shard of a sharded one), switching on their
/// per-finish flow cost.
#[tokio::test]
async fn a_flow_refused_for_a_taken_child_id_writes_nothing_on_any_of_its_queues() {
    let server = RedisServer::start();
    let client = Client::open(&server.url).unwrap();
    let roots = Queue::new(&client, &unique("roots"), QueueOptions::default()).unwrap();
    let fresh = Queue::sharded(&client, &unique("fresh"), 4, QueueOptions::default()).unwrap();
    let taken = Queue::new(&client, &unique("taken"), QueueOptions::default()).unwrap();
    taken.enqueue(b"x", id("t-1")).await.unwrap();
    let before = keys_of(&server, taken.name());
    let kids: Vec<FlowJob> = (0..40).map(|i| node(&format!("f{i}")).on(&fresh)).collect();
    let e = roots
        .enqueue_flow(node("root").children(kids).child(node("t-1").on(&taken)))
        .await
        .unwrap_err();
    assert!(e.message().contains("\"t-1\" exists already"), "{e}");
    assert_eq!(keys_of(&server, roots.name()), Vec::<String>::new());
    assert_eq!(keys_of(&server, fresh.name()), Vec::<String>::new());
    assert_eq!(keys_of(&server, taken.name()), before);
    // The first refusal left no job behind to stand in the way: refused for t-1 again.
    let e = roots
        .enqueue_flow(
            node("root")
                .child(node("f1").on(&fresh))
                .child(node("t-1").on(&taken)),
        )
        .await
        .unwrap_err();
    assert!(e.message().contains("\"t-1\" exists already"), "{e}");
    assert_eq!(keys_of(&server, fresh.name()), Vec::<String>::new());
}

/// A flow enqueued while one of its queues is being obliterated is refused (as `enqueue` is),
/// and writes nothing on any of its queues: no job of it comes back into the queue being
/// deleted, nor lingers, held, in the others.
#[tokio::test]
async fn a_flow_enqueued_while_its_queue_is_being_obliterated_is_refused_and_writes_nothing() {
    let server = RedisServer::start();
    let client = Client::open(&server.url).unwrap();
    let roots = Queue::new(&client, &unique("roots"), QueueOptions::default()).unwrap();
    let going = Queue::new(&client, &unique("going"), QueueOptions::default()).unwrap();
    // The mark obliterate sets on each shard before it deletes anything.
    let cfg = format!("tideq:{{{}}}:cfg", going.name());
    let _: () = redis::cmd("HSET")
        .arg(&cfg)
        .arg("obliterating")
        .arg("1")
        .query(&mut server.conn())
        .unwrap();
    let before = keys_of(&server, going.name());
    for (q, flow) in [
        // Its child on the queue being obliterated (written held, before the root)...
        (&roots, node("r1").child(node("c1").on(&going))),
        // ... and its root there (the flow's last write).
        (&going, node("r2").child(node("c2").on(&roots))),
        // ... and all of it there (one call).
        (&going, node("r3").child(node("c3"))),
    ] {
        let e = q.enqueue_flow(flow).await.unwrap_err();
        assert!(e.to_string().contains("being obliterated"), "{e}");
    }
    assert_eq!(keys_of(&server, going.name()), before);
    // The held child written before its root was refused is dropped at once: no job is left
    // (only the queue's settings and counters, which a write leaves).
    let left = keys_of(&server, roots.name());
    assert!(
        left.iter()
            .all(|k| k.ends_with(":cfg") || k.ends_with(":stats") || k.contains(":hist:")),
        "{left:?}"
    );
    let s = roots.stats().await.unwrap();
    assert_eq!(
        (s.ready, s.delayed, s.active, s.waiting),
        (0, 0, 0, 0),
        "{s:?}"
    );
    // A plain enqueue is refused the same way.
    let e = going.enqueue(b"x", id("p")).await.unwrap_err();
    assert!(e.to_string().contains("being obliterated"), "{e}");
}

/// A parent of more children than one call passes inline (here a held one, on another queue
/// than the root) gets its whole list, in order, and runs once after them.
#[tokio::test]
async fn a_held_parent_of_many_children_keeps_its_whole_list_in_order() {
    let server = RedisServer::start();
    let client = Client::open(&server.url).unwrap();
    let roots = Queue::new(&client, &unique("roots"), QueueOptions::default()).unwrap();
    let mids = Queue::new(&client, &unique("mids"), QueueOptions::default()).unwrap();
    let parts = Queue::sharded(&client, &unique("parts"), 2, QueueOptions::default()).unwrap();
    let kids: Vec<FlowJob> = (0..1_500)
        .map(|i| node(&format!("k{i}")).on(&parts))
        .collect();
    roots
        .enqueue_flow(node("root").child(node("mid").on(&mids).children(kids)))
        .await
        .unwrap();
    let page = mids.children("mid", 0, 1000).await.unwrap();
    assert_eq!(page.total, 1_500);
    let ids: Vec<String> = page.children.iter().map(|c| c.id.clone()).collect();
    let expect: Vec<String> = (0..1000).map(|i| format!("k{i}")).collect();
    assert_eq!(ids, expect);
    let info = mids.get("mid").await.unwrap().unwrap();
    assert_eq!(
        (info.state, info.children_pending),
        (JobState::Waiting, Some(1_500))
    );
    assert_eq!(run_all(&parts).await, 1_500);
    for _ in 0..3 {
        run_all(&mids).await;
        run_all(&roots).await;
    }
    assert_eq!(
        roots.get("root").await.unwrap().unwrap().state,
        JobState::Completed
    );
    // Nothing staged is left behind.
    let staged: Vec<String> = redis::cmd("KEYS")
        .arg("*:fs:*")
        .query(&mut server.conn())
        .unwrap();
    assert_eq!(staged, Vec::<String>::new());
}

/// Issue 46: a chord of 100,000 children and its callback is 100,001 jobs, and was refused by a
/// limit that counted the root. The limit counts the jobs under the root.
#[tokio::test]
async fn a_chord_of_the_most_children_is_accepted_and_one_more_job_is_refused_writing_nothing() {
    let server = RedisServer::start();
    let client = Client::open(&server.url).unwrap();
    let q = Queue::new(&client, &unique("chords"), QueueOptions::default()).unwrap();
    let parts = Queue::new(&client, &unique("parts"), QueueOptions::default()).unwrap();
    let kids = |n: usize| -> Vec<FlowJob> {
        (0..n)
            .map(|i| FlowJob::task("part", &i).unwrap().on(&parts))
            .collect()
    };
    let over = FlowJob::chord(kids(MAX_FLOW_JOBS + 1), FlowJob::step("sum")).unwrap();
    let e = q.enqueue_flow(over).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(
        e.message()
            .contains("a flow may have at most 100000 jobs under its root"),
        "{e}"
    );
    assert_eq!(keys_of(&server, parts.name()), Vec::<String>::new());
    let chord =
        FlowJob::chord(kids(MAX_FLOW_JOBS), FlowJob::step("sum").options(id("sum"))).unwrap();
    assert!(q.enqueue_flow(chord).await.unwrap().created);
    assert_eq!(
        q.get("sum").await.unwrap().unwrap().children_pending,
        Some(MAX_FLOW_JOBS as u64)
    );
    assert_eq!(parts.stats().await.unwrap().ready, MAX_FLOW_JOBS as u64);
}

/// Cancelling a root cancels its children's children too, however many: the lists are gone
/// through a page at a time, and nothing of them is left.
#[tokio::test]
async fn cancelling_a_root_cancels_every_pending_job_under_it_and_leaves_no_list_behind() {
    let server = RedisServer::start();
    let client = Client::open(&server.url).unwrap();
    let roots = Queue::new(&client, &unique("roots"), QueueOptions::default()).unwrap();
    let parts = Queue::sharded(&client, &unique("parts"), 2, QueueOptions::default()).unwrap();
    let kids = |p: &str, n: usize| -> Vec<FlowJob> {
        (0..n)
            .map(|i| node(&format!("{p}{i}")).on(&parts))
            .collect()
    };
    let flow = node("root")
        .child(node("mid-a").on(&parts).children(kids("a", 1_100)))
        .child(node("mid-b").on(&parts).children(kids("b", 3)))
        .children(kids("r", 5));
    roots.enqueue_flow(flow).await.unwrap();
    assert_eq!(parts.stats().await.unwrap().ready, 1_108);
    roots.cancel("root").await.unwrap();
    let s = parts.stats().await.unwrap();
    assert_eq!((s.ready, s.cancelled), (0, 1_110));
    for id in ["root", "mid-a", "a1099", "mid-b", "b0", "r4"] {
        assert!(parts.get(id).await.unwrap().is_none(), "{id}");
    }
    let left: Vec<String> = redis::cmd("KEYS")
        .arg("*:f[sl]:*")
        .query(&mut server.conn())
        .unwrap();
    assert_eq!(left, Vec::<String>::new());
}
