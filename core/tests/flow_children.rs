//! A flow parent's children as operators see them (`Queue::children`): in the flow's order, each
//! with how it ended or pending, a page at a time (never the whole list), found on whichever
//! shard holds the parent. Against a real redis-server.

mod common;

use std::time::Duration;

use common::jobs::*;
use common::{free_port, unique, RedisServer};
use tideq::{
    ChildInfo, ChildOutcome, EnqueueOptions, ErrorKind, FlowJob, Job, JobState, OnChildFailure,
    Queue, QueueOptions, WorkerOptions,
};

/// A flow job with this id (its payload too) and these options.
fn node_with(id: &str, opts: EnqueueOptions) -> FlowJob {
    FlowJob::new(id.as_bytes().to_vec()).options(EnqueueOptions {
        id: Some(id.into()),
        ..opts
    })
}

fn node(id: &str) -> FlowJob {
    node_with(id, EnqueueOptions::default())
}

fn names(children: &[ChildInfo]) -> Vec<(String, String)> {
    children
        .iter()
        .map(|c| (c.queue.clone(), c.id.clone()))
        .collect()
}

/// A worker that fails the jobs whose payload starts with "fail" and returns "<id>!".
fn worker(q: &Queue) -> tideq::Worker {
    let opts = WorkerOptions {
        poll_interval: Duration::from_millis(100),
        ..Default::default()
    };
    q.work(opts, |job: Job| async move {
        if job.payload.starts_with(b"fail") {
            return Err(format!("{} broke", job.id));
        }
        Ok::<String, String>(format!("{}!", job.id))
    })
    .unwrap()
}

#[tokio::test]
async fn a_parents_children_are_listed_in_order_with_how_each_ended_or_none_while_pending() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let parts = Queue::sharded(q.client(), &unique("parts"), 3, QueueOptions::default()).unwrap();
    let once = EnqueueOptions {
        max_attempts: Some(1),
        ..Default::default()
    };
    let in_an_hour = EnqueueOptions {
        delay: Some(Duration::from_secs(3600)),
        ..Default::default()
    };
    let flow = node("parent").children([
        node("a"),
        node("b").on(&parts),
        node_with("fail-c", once).on_failure(OnChildFailure::Continue),
        node_with("later", in_an_hour).on(&parts),
    ]);
    q.enqueue_flow(flow).await.unwrap();
    let (qn, pn) = (q.name().to_string(), parts.name().to_string());
    let expected = vec![
        (qn.clone(), "a".to_string()),
        (pn.clone(), "b".to_string()),
        (qn.clone(), "fail-c".to_string()),
        (pn.clone(), "later".to_string()),
    ];
    let page = q.children("parent", 0, 10).await.unwrap();
    assert_eq!((page.total, names(&page.children)), (4, expected.clone()));
    assert!(
        page.children.iter().all(|c| c.outcome.is_none()),
        "{page:?}"
    );

    // Workers of both queues finish the three due children; the fourth waits an hour.
    let (wq, wp) = (worker(&q), worker(&parts));
    let three_ended = wait_for(Duration::from_secs(30), || async {
        let page = q.children("parent", 0, 10).await.unwrap();
        page.children.iter().filter(|c| c.outcome.is_some()).count() == 3
    })
    .await;
    wq.shutdown().await;
    wp.shutdown().await;
    assert!(three_ended);
    let page = q.children("parent", 0, 10).await.unwrap();
    assert_eq!((page.total, names(&page.children)), (4, expected));
    let outcomes: Vec<Option<ChildOutcome>> =
        page.children.into_iter().map(|c| c.outcome).collect();
    assert_eq!(
        outcomes[..2],
        [
            Some(ChildOutcome::Completed(Some(b"a!".to_vec()))),
            Some(ChildOutcome::Completed(Some(b"b!".to_vec())))
        ]
    );
    assert!(
        matches!(&outcomes[2], Some(ChildOutcome::Failed(e)) if e.contains("fail-c broke")),
        "{outcomes:?}"
    );
    assert_eq!(outcomes[3], None);
    let parent = q.get("parent").await.unwrap().unwrap();
    assert_eq!(
        (parent.state, parent.children_pending),
        (JobState::Waiting, Some(1))
    );
    // A page from an offset; a child (no children of its own) and an unknown id have none.
    let page = q.children("parent", 3, 10).await.unwrap();
    assert_eq!(
        (page.total, names(&page.children)),
        (4, vec![(pn, "later".to_string())])
    );
    for id in ["a", "nobody"] {
        let page = q.children(id, 0, 10).await.unwrap();
        assert_eq!((page.total, page.children.len()), (0, 0), "{id}");
    }
}

/// SLOWLOG's record of every call from now on (a private server: this changes its config).
fn log_every_call(server: &RedisServer) {
    let mut c = server.conn();
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("slowlog-log-slower-than")
        .arg(0)
        .query(&mut c)
        .unwrap();
    let _: () = redis::cmd("SLOWLOG").arg("RESET").query(&mut c).unwrap();
}

/// The calls SLOWLOG holds, each as its arguments (SLOWLOG keeps 32 of them).
fn calls(server: &RedisServer) -> Vec<Vec<String>> {
    let entries: Vec<redis::Value> = redis::cmd("SLOWLOG")
        .arg("GET")
        .arg(-1)
        .query(&mut server.conn())
        .unwrap();
    entries
        .into_iter()
        .filter_map(|e| match e {
            redis::Value::Array(fields) => redis::from_redis_value(fields[3].clone()).ok(),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_page_of_a_parent_with_2500_children_reads_only_that_page() {
    let server = RedisServer::start_private(free_port(), &[]);
    let q = queue(&server.url);
    let kids: Vec<FlowJob> = (0..2500).map(|i| node(&format!("c{i}"))).collect();
    q.enqueue_flow(node("big").children(kids)).await.unwrap();
    log_every_call(&server);
    let page = q.children("big", 1000, 50).await.unwrap();
    let ids: Vec<String> = page.children.iter().map(|c| c.id.clone()).collect();
    let want: Vec<String> = (1000..1050).map(|i| format!("c{i}")).collect();
    assert_eq!((page.total, ids), (2500, want));
    assert!(page.children.iter().all(|c| c.outcome.is_none()));
    let calls = calls(&server);
    let named = |name: &str| -> Vec<&Vec<String>> {
        calls
            .iter()
            .filter(|c| c[0].eq_ignore_ascii_case(name))
            .collect()
    };
    let lrange = named("LRANGE");
    assert_eq!(lrange.len(), 1, "{calls:?}");
    assert_eq!(lrange[0][2..], ["1000", "1049"]);
    // HMGET key and 50 fields: SLOWLOG shows 31 arguments and how many more there were.
    let hmget = named("HMGET");
    assert_eq!(hmget.len(), 1, "{calls:?}");
    assert_eq!(hmget[0].last().unwrap(), "... (21 more arguments)");
    for whole in ["HGETALL", "HSCAN", "HVALS", "HKEYS"] {
        assert!(named(whole).is_empty(), "{whole} in {calls:?}");
    }

    // No page, the total alone; past the end, none; the bounds.
    let page = q.children("big", 0, 0).await.unwrap();
    assert_eq!((page.total, page.children.len()), (2500, 0));
    let page = q.children("big", 2499, 1000).await.unwrap();
    assert_eq!(
        (page.total, names(&page.children)),
        (2500, vec![(q.name().to_string(), "c2499".to_string())])
    );
    let page = q.children("big", 5000, 10).await.unwrap();
    assert_eq!((page.total, page.children.len()), (2500, 0));
    let err = q.children("big", 0, 1001).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    let err = q.children("", 0, 10).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
}

#[tokio::test]
async fn a_grouped_parent_on_another_shard_than_its_ids_is_found() {
    let server = RedisServer::start();
    let client = tideq::Client::open(&server.url).unwrap();
    let name = unique("sharded");
    let q = Queue::sharded(&client, &name, 4, QueueOptions::default()).unwrap();
    let prefix = client.config().prefix().to_string();
    let tags = tideq::keys::shard_tags(&prefix, &name, 4).unwrap();
    // A grouped job on a sharded queue lives on its group's shard, and takes no id of its own:
    // flows until one's generated id falls on another shard (3 in 4 do).
    let group_shard = tideq::keys::key_slot("g") as usize % 4;
    let grouped = EnqueueOptions {
        group: Some("g".into()),
        ..Default::default()
    };
    let mut found = None;
    for i in 0..30 {
        let (k1, k2) = (format!("k{i}.1"), format!("k{i}.2"));
        let flow = FlowJob::new(b"p".to_vec())
            .options(grouped.clone())
            .children([node(&k1), node(&k2)]);
        let id = q.enqueue_flow(flow).await.unwrap().id;
        if tideq::keys::key_slot(&id) as usize % 4 != group_shard {
            found = Some((id, k1, k2));
            break;
        }
    }
    let (p, k1, k2) = found.expect("a parent id off its group's shard");
    let mut conn = server.conn();
    let holders: Vec<usize> = (0..4)
        .filter(|&s| {
            redis::cmd("EXISTS")
                .arg(format!("{prefix}:{{{}}}:fl:{p}", tags[s]))
                .query::<u64>(&mut conn)
                .unwrap()
                == 1
        })
        .collect();
    assert_eq!(holders.len(), 1);
    assert_eq!(holders, [group_shard], "the test's premise");
    let page = q.children(&p, 0, 10).await.unwrap();
    assert_eq!(
        (page.total, names(&page.children)),
        (2, vec![(name.clone(), k1), (name, k2)])
    );
}

/// Waiting flow parents could not be listed (`jobs`, `jobs_page`, `find_jobs` refused the state,
/// so `tideq jobs` and the dashboard could not show them): they are listed by id, page by page
/// across shards, none twice and none missed, and searched by task.
#[tokio::test]
async fn waiting_parents_are_listed_by_id_page_by_page_and_searched() {
    let server = RedisServer::start();
    let client = tideq::Client::open(&server.url).unwrap();
    let q = Queue::sharded(&client, &unique("waiting"), 2, QueueOptions::default()).unwrap();
    let n = 3_000;
    for i in 0..n {
        let parent = node_with(
            &format!("p{i:05}"),
            EnqueueOptions {
                task: Some(if i % 3 == 0 { "report" } else { "other" }.into()),
                ..Default::default()
            },
        )
        .child(node(&format!("c{i:05}")));
        q.enqueue_flow(parent).await.unwrap();
    }
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let page = q
            .jobs_page(JobState::Waiting, cursor.as_deref(), 500)
            .await
            .unwrap();
        assert!(page.jobs.iter().all(|j| j.state == JobState::Waiting));
        seen.extend(page.jobs.into_iter().map(|j| j.id));
        match page.cursor {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    let mut sorted = seen.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), n, "every waiting parent, none twice");
    let first = q.jobs(JobState::Waiting, 0, 10).await.unwrap();
    assert_eq!(first.len(), 10);
    assert!(first.windows(2).all(|w| w[0].id < w[1].id), "by id");
    let filter = tideq::JobFilter {
        task: Some("report".into()),
        state: Some(JobState::Waiting),
        ..Default::default()
    };
    let found = q.find_jobs(&filter, None, 1000).await.unwrap();
    assert!(!found.jobs.is_empty());
    assert!(found
        .jobs
        .iter()
        .all(|j| j.task.as_deref() == Some("report") && j.state == JobState::Waiting));
    let err = q.jobs(JobState::Waiting, 10_001, 10).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
}
