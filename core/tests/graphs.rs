//! Graphs (issue 45, part 4): flows whose jobs several others run after. A graph is refused
//! whole, with nothing written, when it is not a DAG; a job runs once, after every job it runs
//! after, with their results; failures follow each edge's policy; cancelling cascades.

mod common;

use std::sync::{Arc, Mutex};

use common::jobs::drained;
use common::{unique, RedisServer};
use tideq::{
    ChildOutcome, Client, EnqueueOptions, ErrorKind, FlowJob, Graph, GraphNode, Job, JobState,
    OnChildFailure, Queue, QueueOptions, MAX_GRAPH_DEPENDENTS,
};

fn queue(server: &RedisServer) -> Queue {
    let client = Client::open(&server.url).unwrap();
    let opts = QueueOptions {
        keep_completed: 1000,
        ..Default::default()
    };
    Queue::new(&client, &unique("graph"), opts).unwrap()
}

/// What each job saw, in the order they ran.
type Ledger = Arc<Mutex<Vec<(String, Vec<String>)>>>;

fn raw(id: &str) -> GraphNode {
    GraphNode::new(id, FlowJob::new(id.as_bytes().to_vec()))
}

fn dbsize(server: &RedisServer) -> u64 {
    redis::cmd("DBSIZE").query(&mut server.conn()).unwrap()
}

#[tokio::test]
async fn a_graph_with_a_cycle_a_missing_job_a_duplicate_id_or_too_many_dependents_is_refused_with_nothing_written(
) {
    let server = RedisServer::start();
    let q = queue(&server);
    let cases: Vec<(Graph, &str)> = vec![
        (Graph::new(), "at least one job"),
        (
            Graph::new()
                .node(raw("a"))
                .node(raw("b").after("a"))
                .node(raw("c").after("b"))
                .node(raw("a2").after("c"))
                .node(raw("x").after_all(["c", "y"]))
                .node(raw("y").after("x")),
            "the graph has a cycle (each job runs after the next): x → y → x",
        ),
        (
            Graph::new().node(raw("a").after("a")),
            "cycle (each job runs after the next): a → a",
        ),
        (
            Graph::new().node(raw("a")).node(raw("b").after("nope")),
            "job \"b\" runs after \"nope\", which is not in the graph",
        ),
        (
            Graph::new().node(raw("a")).node(raw("a")),
            "job id \"a\" is declared twice",
        ),
        (
            Graph::new()
                .node(raw("a"))
                .node(raw("b").after_all(["a", "a"])),
            "names \"a\" twice",
        ),
        (
            Graph::new()
                .node(raw("hub"))
                .nodes((0..=MAX_GRAPH_DEPENDENTS).map(|i| raw(&format!("d{i}")).after("hub"))),
            "1001 jobs run after job \"hub\"",
        ),
        (
            Graph::new().node(GraphNode::new(
                "p",
                FlowJob::new(b"p".to_vec()).child(FlowJob::new(b"c".to_vec())),
            )),
            "graph job \"p\": a graph's job has no children",
        ),
        (
            Graph::new().node(GraphNode::new(
                "p",
                FlowJob::new(b"p".to_vec()).options(EnqueueOptions {
                    id: Some("other".into()),
                    ..Default::default()
                }),
            )),
            "its id option differs",
        ),
    ];
    for (graph, says) in cases {
        let e = q.enqueue_graph(graph).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
        assert!(e.message().contains(says), "{e} (expected {says:?})");
        assert_eq!(dbsize(&server), 0, "nothing written after: {e}");
    }
    // Too many jobs.
    let big = Graph::new().nodes((0..tideq::MAX_FLOW_JOBS + 2).map(|i| raw(&format!("n{i}"))));
    let e = q.enqueue_graph(big).await.unwrap_err();
    assert!(e.message().contains("at most 100001 jobs"), "{e}");
    assert_eq!(dbsize(&server), 0);
}

/// A → (B, C) → D: D runs once, after B and C, and gets their results (as a step, as its
/// arguments in its `after` order); B and C each get A's.
#[tokio::test]
async fn a_diamond_runs_its_last_job_once_after_both_with_their_results() {
    let server = RedisServer::start();
    let q = queue(&server);
    let graph = Graph::new()
        .node(raw("a"))
        .node(raw("b").after("a"))
        .node(raw("c").after("a"))
        .node(GraphNode::new("d", FlowJob::step("sum")).after_all(["b", "c"]));
    let made = q.enqueue_graph(graph.clone()).await.unwrap();
    assert_eq!((made.id.as_str(), made.created), ("d", true));
    let b = q.get("b").await.unwrap().unwrap();
    assert_eq!(b.state, JobState::Waiting);
    assert_eq!(b.children_pending, Some(1));
    assert_eq!(b.parent.map(|p| p.id).as_deref(), Some("d"));
    let a = q.get("a").await.unwrap().unwrap();
    assert_eq!(a.state, JobState::Ready);
    assert!(a.parent.is_some(), "a shows its first parent");
    // Again: the root exists, nothing is created.
    assert!(!q.enqueue_graph(graph).await.unwrap().created);
    let ran: Ledger = Arc::default();
    let log = ran.clone();
    let stats = q
        .work(drained(), move |job: Job| {
            let log = log.clone();
            async move {
                let mut seen: Vec<String> = Vec::new();
                for r in job.children_results().await.map_err(|e| e.to_string())? {
                    match r.outcome {
                        ChildOutcome::Completed(Some(v)) => {
                            seen.push(format!("{}={}", r.id, String::from_utf8_lossy(&v)))
                        }
                        other => return Err(format!("{} ended {other:?}", r.id)),
                    }
                }
                seen.sort();
                let me = job.id.clone();
                let mine = if me == "d" {
                    String::from_utf8_lossy(&job.payload).into_owned()
                } else {
                    format!("{me}<{}>", seen.join(","))
                };
                log.lock().unwrap().push((me, seen));
                Ok::<String, String>(mine)
            }
        })
        .unwrap()
        .join()
        .await;
    assert_eq!(stats.completed, 4);
    let ran = ran.lock().unwrap().clone();
    let order: Vec<&str> = ran.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(order.len(), 4, "each job ran once: {order:?}");
    assert_eq!(order[0], "a");
    assert_eq!(order[3], "d");
    let d = &ran[3].1;
    assert_eq!(
        d,
        &vec!["b=b<a=a<>>".to_string(), "c=c<a=a<>>".to_string()],
        "d saw b's and c's results, each made from a's"
    );
    // d, a step, got [b, c]'s results as its arguments (and returned them).
    let out = q.wait("d", None).await.unwrap().result.unwrap();
    let out: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(out, serde_json::json!(["b<a=a<>>", "c<a=a<>>"]));
}

/// The policy is the edge's: A fails; B (after A, the default) is dead-lettered naming A; C
/// (after A with "continue") runs and finds A failed; D after B with "ignore" and after C runs.
#[tokio::test]
async fn a_failed_job_fails_only_the_jobs_whose_edge_says_fail() {
    let server = RedisServer::start();
    let q = queue(&server);
    let once = EnqueueOptions {
        max_attempts: Some(1),
        ..Default::default()
    };
    let graph = Graph::new()
        .node(GraphNode::new(
            "a",
            FlowJob::new(b"boom".to_vec()).options(once),
        ))
        .node(raw("b").after("a"))
        .node(raw("c").after_with("a", OnChildFailure::Continue))
        .node(raw("d").after_with("b", OnChildFailure::Ignore).after("c"));
    q.enqueue_graph(graph).await.unwrap();
    let seen: Ledger = Arc::default();
    let log = seen.clone();
    q.work(drained(), move |job: Job| {
        let log = log.clone();
        async move {
            if job.payload == b"boom" {
                return Err("boom".to_string());
            }
            let mut outs: Vec<String> = job
                .children_results()
                .await
                .map_err(|e| e.to_string())?
                .into_iter()
                .map(|r| format!("{}:{}", r.id, r.outcome.as_str()))
                .collect();
            outs.sort();
            log.lock().unwrap().push((job.id.clone(), outs));
            Ok::<(), String>(())
        }
    })
    .unwrap()
    .join()
    .await;
    let b = q.get("b").await.unwrap().unwrap();
    assert_eq!(b.state, JobState::Dead);
    assert!(b.last_error.unwrap().contains("child job a of queue"));
    let seen = seen.lock().unwrap().clone();
    assert_eq!(
        seen,
        vec![
            ("c".to_string(), vec!["a:failed".to_string()]),
            (
                "d".to_string(),
                vec!["b:ignored".to_string(), "c:completed".to_string()]
            ),
        ]
    );
}

/// Cancelling the root cancels every job under it, a job that two run after included, once.
#[tokio::test]
async fn cancelling_a_graphs_root_cancels_every_job_under_it() {
    let server = RedisServer::start();
    let q = queue(&server);
    let graph = Graph::new()
        .node(raw("a"))
        .node(raw("b").after("a"))
        .node(raw("c").after("a"))
        .node(raw("d").after_all(["b", "c"]));
    q.enqueue_graph(graph).await.unwrap();
    q.cancel("d").await.unwrap();
    for id in ["a", "b", "c", "d"] {
        assert!(q.get(id).await.unwrap().is_none(), "{id} is still there");
    }
    let stats = q.stats().await.unwrap();
    assert_eq!(stats.cancelled, 4);
}

/// On a real Redis Cluster, over a queue sharded across its three masters: a graph of 331 jobs
/// (each of 300 run after by two of 30, and those by the last) is written in calls of one slot
/// each, run, and its last job adds up what reached it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_graph_over_a_sharded_queue_is_written_and_run_on_a_cluster() {
    use tideq::{Config, Tasks};
    let cluster = common::RedisCluster::start();
    let c = Client::new(Config::cluster(cluster.nodes.clone())).unwrap();
    let keep = || QueueOptions {
        keep_completed: 1000,
        ..Default::default()
    };
    let roots = Queue::new(&c, &unique("groots"), keep()).unwrap();
    let parts = Queue::sharded(&c, &unique("gparts"), 3, keep()).unwrap();
    let mut graph = Graph::new();
    for i in 0..300 {
        let job = FlowJob::task("one", &1).unwrap().on(&parts);
        graph = graph.node(GraphNode::new(format!("p{i}"), job));
    }
    for j in 0..30 {
        let job = FlowJob::step("sum").on(&parts);
        let after = (0..20).map(|k| format!("p{}", (j * 10 + k) % 300));
        graph = graph.node(GraphNode::new(format!("s{j}"), job).after_all(after));
    }
    let last =
        GraphNode::new("total", FlowJob::step("sum")).after_all((0..30).map(|j| format!("s{j}")));
    let made = roots.enqueue_graph(graph.node(last)).await.unwrap();
    assert_eq!(made.id, "total");
    let tasks = || {
        Tasks::new()
            .task("one", |n: i64, _: Job| async move {
                Ok::<serde_json::Value, String>(n.into())
            })
            .task("sum", |all: Vec<i64>, _: Job| async move {
                Ok::<serde_json::Value, String>(all.iter().sum::<i64>().into())
            })
    };
    let wp = parts
        .work_tasks(tideq::WorkerOptions::default(), tasks())
        .unwrap();
    let wr = roots
        .work_tasks(tideq::WorkerOptions::default(), tasks())
        .unwrap();
    let out = roots
        .wait("total", Some(std::time::Duration::from_secs(120)))
        .await
        .unwrap();
    wp.shutdown().await;
    wr.shutdown().await;
    assert_eq!(out.result.as_deref(), Some(&b"600"[..]));
}

/// Cancelling a job inside a graph cancels the jobs it runs after (as a flow's parent cancels its
/// children), and every job that runs after a cancelled one follows its edge's policy: failed by
/// default, run with "ignore". Nothing is left waiting for a job that will never finish.
#[tokio::test]
async fn cancelling_a_job_inside_a_graph_cancels_what_it_runs_after_and_the_rest_follow_their_edges(
) {
    let server = RedisServer::start();
    let q = queue(&server);
    let graph = Graph::new()
        .node(raw("a"))
        .node(raw("b").after("a"))
        .node(raw("c").after("a"))
        .node(raw("d").after_all(["b", "c"]))
        .node(raw("e").after_with("b", OnChildFailure::Ignore));
    q.enqueue_graph(graph).await.unwrap();
    let mut parents: Vec<String> = q
        .get("a")
        .await
        .unwrap()
        .unwrap()
        .parents
        .into_iter()
        .map(|p| p.id)
        .collect();
    parents.sort();
    assert_eq!(parents, ["b", "c"], "a reports to both");
    q.cancel("b").await.unwrap();
    let ran: Ledger = Arc::default();
    let log = ran.clone();
    q.work(drained(), move |job: Job| {
        let log = log.clone();
        async move {
            log.lock().unwrap().push((job.id.clone(), Vec::new()));
            Ok::<(), String>(())
        }
    })
    .unwrap()
    .join()
    .await;
    for id in ["a", "b"] {
        assert!(q.get(id).await.unwrap().is_none(), "{id} was cancelled");
    }
    let c = q.get("c").await.unwrap().unwrap();
    assert_eq!(c.state, JobState::Dead);
    assert!(c.last_error.unwrap().contains("child job a of queue"));
    let d = q.get("d").await.unwrap().unwrap();
    assert_eq!(d.state, JobState::Dead);
    assert!(d.last_error.unwrap().contains("was cancelled"));
    let ran: Vec<String> = ran.lock().unwrap().iter().map(|r| r.0.clone()).collect();
    assert_eq!(ran, ["e"], "only e, whose edge ignores b's end, ran");
    let s = q.stats().await.unwrap();
    assert_eq!((s.waiting, s.ready, s.active), (0, 0, 0), "{s:?}");
}
