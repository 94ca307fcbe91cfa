//! `tideq job` on flows against a private `redis-server`: a parent shows its first children with
//! how each ended and how many it has, a child shows its parent; checked through the core crate.

mod common;

use std::time::{Duration, Instant};

use common::*;
use serde_json::{json, Value};
use tideq::{EnqueueOptions, FlowJob, Job, OnChildFailure, WorkerOptions};

fn node(id: &str, opts: EnqueueOptions) -> FlowJob {
    FlowJob::new(id.as_bytes().to_vec()).options(EnqueueOptions {
        id: Some(id.into()),
        ..opts
    })
}

#[test]
fn job_shows_a_parents_first_children_with_how_each_ended_and_a_childs_parent() {
    let redis = Redis::start();
    let q = redis.queue("fam");
    let rt = rt();
    let later = || EnqueueOptions {
        delay: Some(Duration::from_secs(3600)),
        ..Default::default()
    };
    let once = EnqueueOptions {
        max_attempts: Some(1),
        ..Default::default()
    };
    // 25 children: one completes, one fails (the parent goes on waiting), 23 wait an hour.
    let mut kids = vec![
        node("ok", Default::default()),
        node("bad", once).on_failure(OnChildFailure::Continue),
    ];
    kids.extend((0..23).map(|i| node(&format!("c{i:02}"), later())));
    rt.block_on(async {
        q.enqueue_flow(node("parent", Default::default()).children(kids))
            .await
            .unwrap();
        let w = q
            .work(WorkerOptions::default(), |job: Job| async move {
                if job.payload == b"bad" {
                    return Err("bad broke".to_string());
                }
                Ok::<(), String>(())
            })
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let page = q.children("parent", 0, 2).await.unwrap();
            if page.children.iter().all(|c| c.outcome.is_some()) {
                break;
            }
            assert!(Instant::now() < deadline, "the two children did not end");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        w.shutdown().await;
    });

    // The waiting parent is listed (`tideq jobs` refused the state) and found by `search`.
    let listed = json(redis.tideq(&["jobs", "fam", "waiting", "--json"]));
    assert_eq!(listed["jobs"][0]["id"], "parent", "{listed}");
    let found = json(redis.tideq(&["search", "fam", "--state", "waiting", "--json"]));
    assert_eq!(found["jobs"][0]["id"], "parent", "{found}");
    let v = json(redis.tideq(&["job", "fam", "parent", "--json"]));
    assert_eq!(
        (&v["state"], &v["children_pending"], &v["parent"]),
        (&json!("waiting"), &json!(23), &Value::Null)
    );
    assert_eq!(v["children_total"], 25);
    let shown = v["children"].as_array().unwrap();
    assert_eq!(shown.len(), 20, "{v}");
    assert_eq!(
        shown[0],
        json!({"queue": "fam", "id": "ok", "outcome": "completed", "error": null})
    );
    assert_eq!(
        (&shown[1]["id"], &shown[1]["outcome"]),
        (&json!("bad"), &json!("failed"))
    );
    assert!(
        shown[1]["error"].as_str().unwrap().contains("bad broke"),
        "{v}"
    );
    assert_eq!(
        shown[2],
        json!({"queue": "fam", "id": "c00", "outcome": "pending", "error": null})
    );
    assert_eq!(shown[19]["id"], "c17");
    let text = ok(redis.tideq(&["job", "fam", "parent"]));
    assert!(
        text.contains("children: 25 (the first 20 shown)") && text.contains("children_pending  23"),
        "{text}"
    );
    let line = |id: &str| {
        text.lines()
            .find(|l| l.split_whitespace().nth(1) == Some(id))
            .unwrap_or_else(|| panic!("no row of {id} in {text}"))
            .split_whitespace()
            .collect::<Vec<_>>()
    };
    assert_eq!(line("ok"), ["fam", "ok", "completed", "-"]);
    assert_eq!(line("bad")[..3], ["fam", "bad", "failed"]);
    assert_eq!(line("c17"), ["fam", "c17", "pending", "-"]);
    assert!(!text.contains("c18"), "{text}");

    // A child: its parent, and no children.
    let v = json(redis.tideq(&["job", "fam", "ok", "--json"]));
    assert_eq!(v["parent"], json!({"queue": "fam", "id": "parent"}));
    assert_eq!(
        (&v["children_total"], &v["children"], &v["children_pending"]),
        (&json!(0), &json!([]), &Value::Null)
    );
    let text = ok(redis.tideq(&["job", "fam", "ok"]));
    assert!(text.contains("parent (queue fam)"), "{text}");
    assert!(!text.contains("children"), "{text}");
}
