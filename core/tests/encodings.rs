//! The structured strings Rust writes for the Lua scripts (docs/data-model.md, "Encodings"),
//! checked against what the scripts read back: a job's route (`scripts::encoding::route_arg` ->
//! `lib/route.lua`, and the stored route read back by `get`) and the queue policy
//! (`QueueOptions::policy` -> `lib/policy.lua`), each field seen through what the scripts do with
//! it. Edge cases: groups holding the separator, priorities at both ends, a group without a
//! priority and a priority without a group, unlimited and huge retention bounds.

mod common;

use std::time::Duration;

use common::jobs::*;
use common::RedisServer;
use tideq::{EnqueueOptions, JobState, Queue, QueueOptions, MAX_PRIORITY};

fn routed(priority: Option<u32>, group: Option<&str>) -> EnqueueOptions {
    EnqueueOptions {
        priority,
        group: group.map(String::from),
        ..Default::default()
    }
}

/// Leases every ready job, one at a time, completing each: the payloads in the order they ran.
async fn run_one_by_one(q: &Queue) -> Vec<String> {
    let mut out = Vec::new();
    loop {
        let jobs = q.lease_jobs(1, Duration::from_secs(30)).await.unwrap();
        let Some(j) = jobs.into_iter().next() else {
            return out;
        };
        q.complete(&j).await.unwrap();
        out.push(String::from_utf8(j.payload).unwrap());
    }
}

#[tokio::test]
async fn a_route_reads_back_as_written_whatever_its_group_holds() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let groups = ["a|b", "|", "x|1|2|", "7", "plain", "ünï code", "trailing|"];
    let cases: Vec<(Option<u32>, Option<&str>)> = groups
        .iter()
        .flat_map(|g| {
            [
                (None, Some(*g)),
                (Some(1), Some(*g)),
                (Some(MAX_PRIORITY), Some(*g)),
            ]
        })
        .chain([(Some(1), None), (Some(MAX_PRIORITY), None), (None, None)])
        .collect();
    let mut ids = Vec::new();
    for (i, (p, g)) in cases.iter().enumerate() {
        let e = q.enqueue(format!("job-{i}"), routed(*p, *g)).await.unwrap();
        ids.push(e.id);
    }
    // What Rust reads back from the route the script stored.
    for ((p, g), id) in cases.iter().zip(&ids) {
        let info = q.get(id).await.unwrap().expect("job exists");
        assert_eq!(info.priority, *p, "{id}: priority of {g:?}");
        assert_eq!(info.group.as_deref(), *g, "{id}: group");
        assert_eq!(info.state, JobState::Ready);
    }
    // What the scripts read from it: each group's jobs wait in that group's own queue
    // (make_ready), listed by the ready pages (page_jobs.lua).
    for g in groups {
        assert_eq!(q.group(g).await.unwrap().ready, 3, "group {g:?}");
    }
    let mut listed = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let page = q
            .jobs_page(JobState::Ready, cursor.as_deref(), 100)
            .await
            .unwrap();
        listed.extend(page.jobs.into_iter().map(|j| j.id));
        match page.cursor {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    listed.sort();
    let mut all = ids.clone();
    all.sort();
    assert_eq!(listed, all);
    // A cancelled ready job leaves its group (cancel_job.lua reads the group from the route).
    q.cancel(&ids[0]).await.unwrap();
    assert_eq!(q.group(groups[0]).await.unwrap().ready, 2);
    // Running and finishing jobs counts them in and out of their groups (the acks read the
    // group from the route): every group ends with nothing running.
    let ran = run_one_by_one(&q).await;
    assert_eq!(ran.len(), ids.len() - 1);
    for g in groups {
        let info = q.group(g).await.unwrap();
        assert_eq!((info.ready, info.active), (0, 0), "group {g:?}");
    }
}

#[tokio::test]
async fn a_routes_priority_orders_jobs_within_a_group_and_outside_groups() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    for (payload, p, g) in [
        ("g-last", Some(MAX_PRIORITY), Some("g|1")),
        ("g-none", None, Some("g|1")),
        ("g-5", Some(5), Some("g|1")),
        ("g-1", Some(1), Some("g|1")),
    ] {
        q.enqueue(payload, routed(p, g)).await.unwrap();
    }
    // Within a group: no priority counts as 0 (first), then the lowest number.
    assert_eq!(run_one_by_one(&q).await, ["g-none", "g-1", "g-5", "g-last"]);
    for (payload, p) in [("p-last", MAX_PRIORITY), ("p-7", 7), ("p-1", 1)] {
        q.enqueue(payload, routed(Some(p), None)).await.unwrap();
    }
    assert_eq!(run_one_by_one(&q).await, ["p-1", "p-7", "p-last"]);
}

/// Enqueues `n` jobs and lets each fail once for good: dead-lettered.
async fn bury(q: &Queue, n: usize) -> Vec<String> {
    let mut ids = Vec::new();
    for i in 0..n {
        let o = EnqueueOptions {
            max_attempts: Some(1),
            ..Default::default()
        };
        ids.push(q.enqueue(format!("dead-{i}"), o).await.unwrap().id);
        let jobs = q.lease_jobs(1, Duration::from_secs(30)).await.unwrap();
        assert_eq!(jobs.len(), 1);
        q.fail(&jobs[0], "boom").await.unwrap();
    }
    ids
}

async fn complete_all(q: &Queue, ids: &[&str]) {
    let tideq_id = id;
    for id in ids {
        q.enqueue("x", tideq_id(id)).await.unwrap();
        let jobs = q.lease_jobs(1, Duration::from_secs(30)).await.unwrap();
        q.complete(&jobs[0]).await.unwrap();
    }
}

#[tokio::test]
async fn each_policy_field_reaches_the_scripts_in_its_place() {
    let server = RedisServer::start();
    // keep (field 1): the newest 2 completed jobs are kept.
    let q = queue_with(
        &server.url,
        QueueOptions {
            keep_completed: 2,
            ..Default::default()
        },
    );
    complete_all(&q, &["c1", "c2", "c3"]).await;
    let kept: Vec<String> = q
        .jobs(JobState::Completed, 0, 10)
        .await
        .unwrap()
        .into_iter()
        .map(|j| j.id)
        .collect();
    let mut kept = kept;
    kept.sort();
    assert_eq!(kept, ["c2", "c3"]);

    // keep 0: none kept.
    let q = queue_with(
        &server.url,
        QueueOptions {
            keep_completed: 0,
            idempotency_window: None,
            ..Default::default()
        },
    );
    complete_all(&q, &["n1"]).await;
    assert!(q.get("n1").await.unwrap().is_none());

    // keepdead (field 3): a bound, and -1 (no bound, `None`).
    let q = queue_with(
        &server.url,
        QueueOptions {
            keep_dead: Some(1),
            ..Default::default()
        },
    );
    let dead = bury(&q, 3).await;
    let left: Vec<String> = q
        .dead_letters(0, 10)
        .await
        .unwrap()
        .into_iter()
        .map(|j| j.id)
        .collect();
    assert_eq!(left, [dead[2].clone()]);
    for keep_dead in [None, Some(usize::MAX)] {
        let q = queue_with(
            &server.url,
            QueueOptions {
                keep_dead,
                keep_dead_for: Some(Duration::from_secs(u64::from(u32::MAX))),
                keep_for: Some(Duration::from_secs(u64::from(u32::MAX))),
                ..Default::default()
            },
        );
        bury(&q, 3).await;
        assert_eq!(
            q.dead_letters(0, 10).await.unwrap().len(),
            3,
            "{keep_dead:?}"
        );
    }

    // keepdeadfor (field 4): dead jobs older than it go when another is buried.
    let q = queue_with(
        &server.url,
        QueueOptions {
            keep_dead: None,
            keep_dead_for: Some(Duration::from_millis(1)),
            ..Default::default()
        },
    );
    bury(&q, 1).await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    let last = bury(&q, 1).await;
    let left: Vec<String> = q
        .dead_letters(0, 10)
        .await
        .unwrap()
        .into_iter()
        .map(|j| j.id)
        .collect();
    assert_eq!(left, last);

    // idem (field 5) and idemmax (field 6): a finished id creates nothing again within the
    // window, and only the newest idemmax finished ids are remembered.
    let q = queue_with(
        &server.url,
        QueueOptions {
            keep_completed: 0,
            idempotency_window: Some(Duration::from_secs(60)),
            idempotency_max_ids: 1,
            ..Default::default()
        },
    );
    complete_all(&q, &["i1"]).await;
    assert!(!q.enqueue("x", id("i1")).await.unwrap().created);
    complete_all(&q, &["i2"]).await;
    assert!(!q.enqueue("x", id("i2")).await.unwrap().created);
    assert!(
        q.enqueue("x", id("i1")).await.unwrap().created,
        "i1 forgotten"
    );
}
