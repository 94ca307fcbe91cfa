//! The operator's per-job actions and search (`Queue::promote`, `Queue::delete`,
//! `Queue::find_jobs`), one test per promise, against a real redis-server: what each does to
//! the job, the states each refuses and that a refusal changes nothing, and a search's bound per
//! call over a big queue, its cursor and its errors.

mod common;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::jobs::*;
use common::{unique, RedisServer};
use tideq::{
    Backoff, Client, EnqueueOptions, Job, JobFilter, JobInfo, JobState, Queue, QueueOptions,
    WorkerOptions, MAX_PAGE, SEARCH_SCAN,
};

const LONG: Duration = Duration::from_secs(60);

fn delayed(s: &str) -> EnqueueOptions {
    EnqueueOptions {
        delay: Some(Duration::from_secs(3600)),
        ..id(s)
    }
}

/// Every key of the server with its type and a digest of its content (not of its DUMP, which
/// a hash's rehashing reorders), to tell that a call wrote nothing.
fn snapshot(server: &RedisServer) -> Vec<(String, String, u64)> {
    let mut conn = server.conn();
    let mut keys: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut conn).unwrap();
    keys.sort();
    keys.into_iter()
        .map(|k| {
            let t: String = redis::cmd("TYPE").arg(&k).query(&mut conn).unwrap();
            let mut content: Vec<Vec<u8>> = match t.as_str() {
                "hash" => redis::cmd("HGETALL").arg(&k).query(&mut conn).unwrap(),
                "list" => redis::cmd("LRANGE")
                    .arg(&k)
                    .arg(0)
                    .arg(-1)
                    .query(&mut conn)
                    .unwrap(),
                "zset" => redis::cmd("ZRANGE")
                    .arg(&k)
                    .arg(0)
                    .arg(-1)
                    .arg("WITHSCORES")
                    .query(&mut conn)
                    .unwrap(),
                "set" => redis::cmd("SMEMBERS").arg(&k).query(&mut conn).unwrap(),
                "string" => vec![redis::cmd("GET").arg(&k).query(&mut conn).unwrap()],
                _ => Vec::new(),
            };
            if t == "hash" {
                // Field-value pairs, in no set order.
                let mut pairs: Vec<Vec<u8>> = content.chunks(2).map(|p| p.concat()).collect();
                pairs.sort();
                content = pairs;
            } else if t == "set" {
                content.sort();
            }
            let mut h = std::collections::hash_map::DefaultHasher::new();
            std::hash::Hash::hash(&content, &mut h);
            (k, t, std::hash::Hasher::finish(&h))
        })
        .collect()
}

/// A queue holding one job of each state: "delayed", "ready", "active", "dead", "done".
async fn one_of_each(q: &Queue) -> Job {
    q.enqueue(
        b"x",
        EnqueueOptions {
            max_attempts: Some(1),
            ..id("dead")
        },
    )
    .await
    .unwrap();
    let dying = q.lease_jobs(1, LONG).await.unwrap().remove(0);
    assert!(q.fail(&dying, "boom").await.unwrap());
    q.enqueue(b"x", id("done")).await.unwrap();
    let done = q.lease_jobs(1, LONG).await.unwrap().remove(0);
    q.complete_with_result(&done, b"\"ok\"").await.unwrap();
    q.enqueue(b"x", id("active")).await.unwrap();
    let active = q.lease_jobs(1, LONG).await.unwrap().remove(0);
    q.enqueue(b"x", id("ready")).await.unwrap();
    q.enqueue(b"x", delayed("delayed")).await.unwrap();
    active
}

async fn state_of(q: &Queue, id: &str) -> Option<JobState> {
    q.get(id).await.unwrap().map(|j| j.state)
}

#[tokio::test]
async fn promote_makes_a_delayed_job_run_now_and_wakes_an_idle_worker() {
    let server = RedisServer::start_private(common::free_port(), &[]);
    let q = queue(&server.url);
    q.enqueue(b"x", delayed("later")).await.unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s2 = seen.clone();
    // Polling once a minute and the job due in an hour: only the wake-up brings it now.
    let opts = WorkerOptions {
        poll_interval: Duration::from_secs(60),
        ..Default::default()
    };
    let w = q
        .work(opts, move |job: Job| {
            s2.lock().unwrap().push(job.id.clone());
            async { Ok::<(), String>(()) }
        })
        .unwrap();
    until_blocked(&server, 1).await;
    assert!(seen.lock().unwrap().is_empty());
    q.promote("later").await.unwrap();
    assert!(
        wait_until(Duration::from_secs(10), || !seen.lock().unwrap().is_empty()).await,
        "the promoted job did not reach the idle worker"
    );
    assert_eq!(*seen.lock().unwrap(), ["later"]);
    w.shutdown().await;
}

#[tokio::test]
async fn promote_keeps_a_jobs_priority_group_and_attempts() {
    let server = RedisServer::start();
    let q = queue_with(
        &server.url,
        QueueOptions {
            backoff: Backoff::fixed(3_600_000),
            ..Default::default()
        },
    );
    // A job waiting out its retry's backoff, one in a group, one with a priority.
    q.enqueue(b"x", id("retry")).await.unwrap();
    let job = q.lease_jobs(1, LONG).await.unwrap().remove(0);
    assert!(!q.fail(&job, "try again").await.unwrap());
    assert_eq!(state_of(&q, "retry").await, Some(JobState::Delayed));
    q.enqueue(
        b"x",
        EnqueueOptions {
            group: Some("acme".into()),
            priority: Some(3),
            ..delayed("grouped")
        },
    )
    .await
    .unwrap();
    for s in ["retry", "grouped"] {
        q.promote(s).await.unwrap();
    }
    let retry = q.get("retry").await.unwrap().unwrap();
    assert_eq!((retry.state, retry.attempts), (JobState::Ready, 1));
    assert_eq!(retry.last_error.as_deref(), Some("try again"));
    let grouped = q.get("grouped").await.unwrap().unwrap();
    assert_eq!(grouped.state, JobState::Ready);
    assert_eq!(
        (grouped.group.as_deref(), grouped.priority),
        (Some("acme"), Some(3))
    );
    let stats = q.stats().await.unwrap();
    assert_eq!((stats.delayed, stats.ready), (0, 2));
    // Both are fetched as ready jobs.
    let got: HashSet<String> = q
        .lease_jobs(10, LONG)
        .await
        .unwrap()
        .into_iter()
        .map(|j| j.id)
        .collect();
    assert_eq!(got, HashSet::from(["retry".into(), "grouped".into()]));
}

#[tokio::test]
async fn promote_of_a_job_not_delayed_is_job_wrong_state_and_changes_nothing() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let _active = one_of_each(&q).await;
    let before = snapshot(&server);
    for (s, state) in [
        ("ready", "ready"),
        ("active", "active"),
        ("dead", "dead"),
        ("done", "completed"),
    ] {
        let err = q.promote(s).await.unwrap_err();
        assert_eq!(err.code(), "JOB_WRONG_STATE", "{s}: {err}");
        assert!(
            err.to_string().contains(&format!(
                "job {s:?} is {state}; only a delayed job can be run now"
            )),
            "{err}"
        );
    }
    assert_eq!(snapshot(&server), before);
}

#[tokio::test]
async fn delete_of_a_dead_job_removes_it_and_its_id_can_be_enqueued_again() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let _active = one_of_each(&q).await;
    let stats = q.stats().await.unwrap();
    q.delete("dead").await.unwrap();
    assert_eq!(q.get("dead").await.unwrap(), None);
    assert!(q.dead_letters(0, 100).await.unwrap().is_empty());
    let after = q.stats().await.unwrap();
    assert_eq!(after.dead, 0);
    // Lifetime counters stand.
    assert_eq!(after.dead_lettered, stats.dead_lettered);
    assert_eq!(after.enqueued, stats.enqueued);
    // Nothing of it is left in Redis.
    let mut conn = server.conn();
    let keys: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut conn).unwrap();
    for k in keys {
        let t: String = redis::cmd("TYPE").arg(&k).query(&mut conn).unwrap();
        let held: bool = match t.as_str() {
            "hash" => redis::cmd("HEXISTS")
                .arg(&k)
                .arg("dead")
                .query(&mut conn)
                .unwrap(),
            "zset" => redis::cmd("ZSCORE")
                .arg(&k)
                .arg("dead")
                .query::<Option<f64>>(&mut conn)
                .unwrap()
                .is_some(),
            _ => false,
        };
        assert!(!held, "{k} still holds the deleted job");
    }
    assert!(q.enqueue(b"x", id("dead")).await.unwrap().created);
    assert_eq!(state_of(&q, "dead").await, Some(JobState::Ready));
}

#[tokio::test]
async fn delete_of_a_completed_job_removes_it_and_its_result() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let _active = one_of_each(&q).await;
    assert_eq!(
        q.get("done").await.unwrap().unwrap().result.as_deref(),
        Some(&b"\"ok\""[..])
    );
    let stats = q.stats().await.unwrap();
    q.delete("done").await.unwrap();
    assert_eq!(q.get("done").await.unwrap(), None);
    assert!(q
        .jobs(JobState::Completed, 0, 100)
        .await
        .unwrap()
        .is_empty());
    assert_eq!(q.stats().await.unwrap().completed, stats.completed);
    // Its id was remembered by the idempotency window: forgotten with it.
    assert!(q.enqueue(b"x", id("done")).await.unwrap().created);
}

#[tokio::test]
async fn delete_of_a_pending_or_running_job_is_job_wrong_state_and_changes_nothing() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let _active = one_of_each(&q).await;
    let before = snapshot(&server);
    for s in ["ready", "delayed", "active"] {
        let err = q.delete(s).await.unwrap_err();
        assert_eq!(err.code(), "JOB_WRONG_STATE", "{s}: {err}");
        assert!(
            err.to_string()
                .contains(&format!("job {s:?} is {s}; cancel it instead")),
            "{err}"
        );
    }
    assert_eq!(snapshot(&server), before);
}

#[tokio::test]
async fn unknown_ids_are_job_not_found() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    q.enqueue(b"x", id("other")).await.unwrap();
    assert_eq!(q.promote("nope").await.unwrap_err().code(), "JOB_NOT_FOUND");
    assert_eq!(q.delete("nope").await.unwrap_err().code(), "JOB_NOT_FOUND");
    assert_eq!(q.promote("").await.unwrap_err().code(), "INVALID_ARGUMENT");
    let client = Client::open(&server.url).unwrap();
    let sharded = Queue::sharded(&client, &unique("jq"), 3, QueueOptions::default()).unwrap();
    assert_eq!(
        sharded.promote("nope").await.unwrap_err().code(),
        "JOB_NOT_FOUND"
    );
    assert_eq!(
        sharded.delete("nope").await.unwrap_err().code(),
        "JOB_NOT_FOUND"
    );
}

/// Walks a search to its end with pages of `limit`, checking each call's bound; the ids found.
async fn search_all(q: &Queue, filter: &JobFilter, limit: usize) -> Vec<JobInfo> {
    let (mut found, mut cursor, mut calls) = (Vec::new(), None::<String>, 0);
    loop {
        let page = q.find_jobs(filter, cursor.as_deref(), limit).await.unwrap();
        calls += 1;
        assert!(
            page.scanned as usize <= SEARCH_SCAN,
            "{} scanned",
            page.scanned
        );
        assert!(page.jobs.len() <= limit);
        found.extend(page.jobs);
        cursor = page.cursor;
        if cursor.is_none() {
            break;
        }
        assert!(calls < 1000, "the search does not end");
    }
    found
}

fn id_set(jobs: &[JobInfo]) -> HashSet<String> {
    let set: HashSet<String> = jobs.iter().map(|j| j.id.clone()).collect();
    assert_eq!(set.len(), jobs.len(), "a job was listed twice");
    set
}

#[tokio::test]
async fn find_jobs_by_task_and_by_group_walks_5000_jobs_and_finds_each_match_once() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let mut jobs: Vec<(Vec<u8>, EnqueueOptions)> = Vec::new();
    let (mut by_task, mut by_group, mut both) = (HashSet::new(), HashSet::new(), HashSet::new());
    for i in 0..5000 {
        let s = format!("j{i}");
        let mut o = id(&s);
        o.task = Some(if i % 997 == 5 { "needle" } else { "hay" }.into());
        if i % 1201 == 7 || i % 997 == 5 && i > 2000 {
            o.group = Some("gx".into());
        } else if i % 3 == 0 {
            o.group = Some(format!("g{}", i % 50));
        }
        if i % 2 == 0 {
            o.delay = Some(Duration::from_secs(3600));
        }
        if o.task.as_deref() == Some("needle") {
            by_task.insert(s.clone());
        }
        if o.group.as_deref() == Some("gx") {
            by_group.insert(s.clone());
        }
        if o.task.as_deref() == Some("needle") && o.group.as_deref() == Some("gx") {
            both.insert(s.clone());
        }
        jobs.push((b"{}".to_vec(), o));
    }
    q.enqueue_many(&jobs).await.unwrap();
    // Some of them end dead or completed.
    for j in q.lease_jobs(40, LONG).await.unwrap() {
        if j.id.ends_with('3') {
            q.complete(&j).await.unwrap();
        }
    }
    assert!(by_task.len() >= 5 && by_group.len() >= 4 && !both.is_empty());
    let task = JobFilter {
        task: Some("needle".into()),
        ..Default::default()
    };
    let group = JobFilter {
        group: Some("gx".into()),
        ..Default::default()
    };
    let task_and_group = JobFilter {
        task: Some("needle".into()),
        group: Some("gx".into()),
        ..Default::default()
    };
    for limit in [1, 3, 50] {
        let found = search_all(&q, &task, limit).await;
        assert!(found.iter().all(|j| j.task.as_deref() == Some("needle")));
        assert_eq!(id_set(&found), by_task, "by task, pages of {limit}");
        let found = search_all(&q, &group, limit).await;
        assert!(found.iter().all(|j| j.group.as_deref() == Some("gx")));
        assert_eq!(id_set(&found), by_group, "by group, pages of {limit}");
    }
    assert_eq!(id_set(&search_all(&q, &task_and_group, 10).await), both);
    // One state only.
    let delayed_needles = JobFilter {
        state: Some(JobState::Delayed),
        ..task.clone()
    };
    let found = search_all(&q, &delayed_needles, 10).await;
    assert!(found.iter().all(|j| j.state == JobState::Delayed));
    let want: HashSet<String> = by_task
        .iter()
        .filter(|s| s[1..].parse::<u32>().unwrap() % 2 == 0)
        .cloned()
        .collect();
    assert_eq!(id_set(&found), want);
    // No filter: every job once, across the states.
    let every = search_all(&q, &JobFilter::default(), MAX_PAGE).await;
    assert_eq!(id_set(&every).len(), 5000);
}

#[tokio::test]
async fn find_jobs_looks_at_a_bounded_number_of_jobs_per_call_and_writes_nothing() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let jobs: Vec<(Vec<u8>, EnqueueOptions)> = (0..5000)
        .map(|i| (b"x".to_vec(), id(&format!("j{i}"))))
        .collect();
    q.enqueue_many(&jobs).await.unwrap();
    let before = snapshot(&server);
    // Nothing matches: each call looks at the bound and hands back a cursor to go on.
    let none = JobFilter {
        task: Some("absent".into()),
        ..Default::default()
    };
    let first = q.find_jobs(&none, None, 10).await.unwrap();
    assert!(first.jobs.is_empty());
    assert_eq!(first.scanned as usize, SEARCH_SCAN);
    let cursor = first.cursor.expect("a cursor to go on");
    let second = q.find_jobs(&none, Some(&cursor), 10).await.unwrap();
    assert_eq!(second.scanned as usize, SEARCH_SCAN);
    let third = q
        .find_jobs(&none, second.cursor.as_deref(), 10)
        .await
        .unwrap();
    assert_eq!(third.scanned, 1000);
    assert_eq!(third.cursor, None);
    // The page's limit stops the call early.
    let any = q.find_jobs(&JobFilter::default(), None, 5).await.unwrap();
    assert_eq!(any.jobs.len(), 5);
    assert!(any.cursor.is_some());
    assert_eq!(snapshot(&server), before);
}

#[tokio::test]
async fn find_jobs_refuses_a_bad_filter_cursor_or_limit() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    q.enqueue(b"x", id("a")).await.unwrap();
    let before = snapshot(&server);
    let any = JobFilter::default();
    let delayed_only = JobFilter {
        state: Some(JobState::Delayed),
        ..Default::default()
    };
    let cases: Vec<(JobFilter, Option<&str>, usize)> = vec![
        (any.clone(), None, 0),
        (any.clone(), None, MAX_PAGE + 1),
        (
            JobFilter {
                task: Some(String::new()),
                ..Default::default()
            },
            None,
            10,
        ),
        (
            JobFilter {
                group: Some(String::new()),
                ..Default::default()
            },
            None,
            10,
        ),
        (any.clone(), Some("garbage"), 10),
        (any.clone(), Some("ready:9:"), 10),
        (any.clone(), Some("ready:0:nonsense"), 10),
        (any.clone(), Some("sleeping:0:"), 10),
        // A cursor of another state than the filter's.
        (delayed_only.clone(), Some("dead:0:"), 10),
    ];
    for (filter, cursor, limit) in cases {
        let err = q.find_jobs(&filter, cursor, limit).await.unwrap_err();
        assert_eq!(
            err.code(),
            "INVALID_ARGUMENT",
            "{filter:?} {cursor:?} {limit}: {err}"
        );
    }
    // The search's own cursors are good.
    let page = q
        .find_jobs(&delayed_only, Some("delayed:0:"), 10)
        .await
        .unwrap();
    assert_eq!((page.jobs.len(), page.cursor), (0, None));
    assert_eq!(snapshot(&server), before);
}

#[tokio::test]
async fn find_jobs_promote_and_delete_work_on_a_sharded_queue() {
    let server = RedisServer::start();
    let client = Client::open(&server.url).unwrap();
    let q = Queue::sharded(&client, &unique("jq"), 3, QueueOptions::default()).unwrap();
    let mut want = HashSet::new();
    for i in 0..300 {
        // A grouped job on a sharded queue takes no id of the caller's: it gets its own.
        let o = EnqueueOptions {
            id: (i % 4 != 0).then(|| format!("j{i}")),
            group: (i % 4 == 0).then(|| format!("g{}", i % 3)),
            task: Some(if i % 10 == 0 { "t" } else { "u" }.into()),
            ..Default::default()
        };
        let e = q.enqueue(b"x", o).await.unwrap();
        if i % 4 == 0 && i % 3 == 1 {
            want.insert(e.id);
        }
    }
    let by_group = JobFilter {
        group: Some("g1".into()),
        ..Default::default()
    };
    assert_eq!(id_set(&search_all(&q, &by_group, 7).await), want);
    let by_task = search_all(
        &q,
        &JobFilter {
            task: Some("t".into()),
            ..Default::default()
        },
        4,
    )
    .await;
    assert_eq!(id_set(&by_task).len(), 30);
    // Promote and delete find a job's shard.
    for i in 0..6 {
        q.enqueue(b"x", delayed(&format!("later{i}")))
            .await
            .unwrap();
    }
    for i in 0..6 {
        q.promote(&format!("later{i}")).await.unwrap();
        assert_eq!(
            state_of(&q, &format!("later{i}")).await,
            Some(JobState::Ready)
        );
    }
    let leased = q.lease_jobs(500, LONG).await.unwrap();
    let mut done = Vec::new();
    for j in leased.iter().filter(|j| j.id.starts_with("later")) {
        q.complete(j).await.unwrap();
        done.push(j.id.clone());
    }
    assert_eq!(done.len(), 6);
    for s in &done {
        q.delete(s).await.unwrap();
        assert_eq!(q.get(s).await.unwrap(), None);
    }
}

/// Operators search a job by what it carries (a customer's address, an order number): a search
/// by a substring of the payload walks to the end within the per-call bound and finds each match
/// once; an empty text is refused.
#[tokio::test]
async fn find_jobs_by_a_substring_of_the_payload_finds_each_match_once() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let jobs: Vec<_> = (0..5_000)
        .map(|i| {
            let payload = format!(r#"{{"to":"user{i}@example.com","order":{i}}}"#).into_bytes();
            let opts = EnqueueOptions {
                id: Some(format!("j{i}")),
                ..Default::default()
            };
            (payload, opts)
        })
        .collect();
    q.enqueue_many(&jobs).await.unwrap();
    let filter = JobFilter {
        contains: Some("user4321@".into()),
        ..Default::default()
    };
    let mut found = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let page = q.find_jobs(&filter, cursor.as_deref(), 10).await.unwrap();
        assert!(page.scanned as usize <= SEARCH_SCAN);
        found.extend(page.jobs.into_iter().map(|j| j.id));
        match page.cursor {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    assert_eq!(found, vec!["j4321".to_string()]);
    let empty = JobFilter {
        contains: Some(String::new()),
        ..Default::default()
    };
    let err = q.find_jobs(&empty, None, 10).await.unwrap_err();
    assert_eq!(err.code(), "INVALID_ARGUMENT", "{err}");
}
