//! The operator's listing of jobs by state (`Queue::jobs`), one test per promise, against a real
//! redis-server: each state's order, paging, priorities and groups, the page limit, sharded
//! queues and a full Redis.

mod common;

use std::collections::HashSet;
use std::time::Duration;

use common::jobs::*;
use common::{unique, RedisServer};
use tideq::{Client, EnqueueOptions, JobInfo, JobState, Queue, QueueOptions, MAX_PAGE};

const LONG: Duration = Duration::from_secs(60);

fn ids(jobs: &[JobInfo]) -> Vec<&str> {
    jobs.iter().map(|j| j.id.as_str()).collect()
}

async fn all(q: &Queue, state: JobState) -> Vec<JobInfo> {
    q.jobs(state, 0, MAX_PAGE).await.unwrap()
}

fn delayed(s: &str, secs: u64) -> EnqueueOptions {
    EnqueueOptions {
        delay: Some(Duration::from_secs(secs)),
        ..id(s)
    }
}

fn routed(s: &str, priority: Option<u32>, group: Option<&str>) -> EnqueueOptions {
    EnqueueOptions {
        priority,
        group: group.map(String::from),
        ..id(s)
    }
}

/// Leases the one ready job `want` for `lease`.
async fn lease_one(q: &Queue, want: &str, lease: Duration) -> tideq::Job {
    let mut got = q.lease_jobs(1, lease).await.unwrap();
    assert_eq!(got.len(), 1);
    let job = got.remove(0);
    assert_eq!(job.id, want);
    job
}

#[tokio::test]
async fn delayed_jobs_are_listed_by_due_time() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    for (s, secs) in [("late", 30), ("soon", 10), ("mid", 20)] {
        q.enqueue(b"x", delayed(s, secs)).await.unwrap();
    }
    q.enqueue(b"x", id("now")).await.unwrap();
    let jobs = all(&q, JobState::Delayed).await;
    assert_eq!(ids(&jobs), ["soon", "mid", "late"]);
    assert!(jobs.iter().all(|j| j.state == JobState::Delayed));
    let due: Vec<u64> = jobs
        .iter()
        .map(|j| j.state_since_or_until.unwrap())
        .collect();
    assert!(due.windows(2).all(|w| w[0] < w[1]), "{due:?}");
}

#[tokio::test]
async fn active_jobs_are_listed_by_lease_deadline() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    for s in ["a", "b", "c", "waiting"] {
        q.enqueue(b"x", id(s)).await.unwrap();
    }
    lease_one(&q, "a", Duration::from_secs(30)).await;
    lease_one(&q, "b", Duration::from_secs(10)).await;
    lease_one(&q, "c", Duration::from_secs(20)).await;
    let jobs = all(&q, JobState::Active).await;
    assert_eq!(ids(&jobs), ["b", "c", "a"]);
    assert!(jobs
        .iter()
        .all(|j| j.state == JobState::Active && j.attempts == 1));
    assert_eq!(ids(&all(&q, JobState::Ready).await), ["waiting"]);
}

#[tokio::test]
async fn dead_jobs_are_listed_oldest_death_first_as_dead_letters_lists_them() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    // Ids in the reverse of their death order, so a tie in time would show.
    let order = ["z-first", "y-second", "x-third"];
    for s in order {
        let once = EnqueueOptions {
            max_attempts: Some(1),
            ..id(s)
        };
        q.enqueue(b"x", once).await.unwrap();
    }
    for s in order {
        let job = lease_one(&q, s, LONG).await;
        assert!(q.fail(&job, "boom").await.unwrap(), "dead, not retried");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let jobs = all(&q, JobState::Dead).await;
    assert_eq!(ids(&jobs), order);
    assert!(jobs
        .iter()
        .all(|j| j.state == JobState::Dead && j.last_error.as_deref() == Some("boom")));
    assert_eq!(q.dead_letters(0, 10).await.unwrap(), jobs);
    assert_eq!(
        ids(&q.jobs(JobState::Dead, 1, 1).await.unwrap()),
        ["y-second"]
    );
}

#[tokio::test]
async fn completed_jobs_are_listed_newest_first() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    for s in ["c1", "c2", "c3"] {
        q.enqueue(b"x", id(s)).await.unwrap();
    }
    for s in ["c1", "c2", "c3"] {
        let job = lease_one(&q, s, LONG).await;
        q.complete(&job).await.unwrap();
    }
    let jobs = all(&q, JobState::Completed).await;
    assert_eq!(ids(&jobs), ["c3", "c2", "c1"]);
    assert!(jobs.iter().all(|j| j.state == JobState::Completed));
    assert_eq!(
        ids(&q.jobs(JobState::Completed, 1, 5).await.unwrap()),
        ["c2", "c1"]
    );
}

#[tokio::test]
async fn ready_jobs_are_listed_in_the_order_workers_take_them_with_priority_and_group() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    // Paused groups' jobs wait out of the rotation (held): they come last.
    q.pause_group("held-z").await.unwrap();
    q.pause_group("held-y").await.unwrap();
    let jobs = [
        routed("b1", None, Some("b")),
        routed("p5-1", Some(5), None),
        routed("plain1", None, None),
        routed("a-p3", Some(3), Some("a")),
        routed("p2", Some(2), None),
        routed("z1", None, Some("held-z")),
        routed("b2", None, Some("b")),
        routed("y1", None, Some("held-y")),
        routed("plain2", None, None),
        routed("p5-2", Some(5), None),
        routed("a-p0", None, Some("a")),
    ];
    for opts in jobs {
        q.enqueue(b"x", opts).await.unwrap();
    }
    let mut listed = all(&q, JobState::Ready).await;
    let as_listed: Vec<String> = listed.iter().map(|j| j.id.clone()).collect();
    // The held groups come in the held set's order.
    if listed[9].id == "z1" {
        listed.swap(9, 10);
    }
    assert_eq!(
        ids(&listed),
        [
            "plain1", "plain2", "p2", "p5-1", "p5-2", // plain, then by priority
            "b1", "b2", "a-p0", "a-p3", // groups in rotation order, each in its own order
            "y1", "z1", // held groups
        ]
    );
    let shown: Vec<(Option<u32>, Option<&str>)> = listed
        .iter()
        .map(|j| (j.priority, j.group.as_deref()))
        .collect();
    assert_eq!(shown[0], (None, None));
    assert_eq!(shown[2], (Some(2), None));
    assert_eq!(shown[5], (None, Some("b")));
    assert_eq!(shown[8], (Some(3), Some("a")));
    assert_eq!(shown[9], (None, Some("held-y")));
    assert!(listed.iter().all(|j| j.state == JobState::Ready));
    // A worker takes the plain and prioritized jobs in just that order.
    let taken = q.lease_jobs(5, LONG).await.unwrap();
    let taken: Vec<&str> = taken.iter().map(|j| j.id.as_str()).collect();
    assert_eq!(taken, ids(&listed)[..5]);
    assert_eq!(ids(&all(&q, JobState::Ready).await), as_listed[5..]);
}

/// Reads every job of `state` in pages of `size`.
async fn paged(q: &Queue, state: JobState, size: usize) -> Vec<String> {
    let mut out = Vec::new();
    loop {
        let page = q.jobs(state, out.len(), size).await.unwrap();
        assert!(page.len() <= size);
        out.extend(page.iter().map(|j| j.id.clone()));
        if page.len() < size {
            return out;
        }
    }
}

#[tokio::test]
async fn pages_cover_every_job_once_without_gaps_or_repeats() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    for i in 0..8 {
        q.enqueue(b"x", id(&format!("c{i}"))).await.unwrap();
    }
    for job in q.lease_jobs(8, LONG).await.unwrap() {
        q.complete(&job).await.unwrap();
    }
    // Ready jobs spread over the plain list, three priorities and four groups.
    for i in 0..21u32 {
        let opts = match i % 3 {
            0 => id(&format!("plain{i}")),
            1 => routed(&format!("prio{i}"), Some(1 + (i / 3) % 3), None),
            _ => routed(&format!("group{i}"), None, Some(&format!("g{}", i % 4))),
        };
        q.enqueue(b"x", opts).await.unwrap();
    }
    for i in 0..12 {
        q.enqueue(b"x", delayed(&format!("d{i}"), 10 + i))
            .await
            .unwrap();
    }
    for (state, n) in [
        (JobState::Ready, 21),
        (JobState::Delayed, 12),
        (JobState::Completed, 8),
    ] {
        let whole: Vec<String> = all(&q, state).await.into_iter().map(|j| j.id).collect();
        assert_eq!(whole.len(), n, "{state:?}");
        assert_eq!(whole.iter().collect::<HashSet<_>>().len(), n, "{state:?}");
        for size in [1, 2, 5, 7, n, n + 1] {
            assert_eq!(
                paged(&q, state, size).await,
                whole,
                "{state:?} in pages of {size}"
            );
        }
        assert!(q.jobs(state, n, 10).await.unwrap().is_empty());
        if state == JobState::Ready {
            // Skipping ready jobs looks at each group they are in: a far offset is refused.
            let err = q.jobs(state, usize::MAX, 10).await.unwrap_err();
            assert_eq!(err.code(), "INVALID_ARGUMENT", "{err}");
        } else {
            assert!(q.jobs(state, usize::MAX, 10).await.unwrap().is_empty());
        }
    }
}

#[tokio::test]
async fn a_limit_of_zero_gives_an_empty_page() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    q.enqueue(b"x", id("a")).await.unwrap();
    assert!(q.jobs(JobState::Ready, 0, 0).await.unwrap().is_empty());
    assert_eq!(q.jobs(JobState::Ready, 0, 1).await.unwrap().len(), 1);
}

#[tokio::test]
async fn a_limit_over_the_maximum_is_refused_and_nothing_is_written() {
    let server = RedisServer::start_private(common::free_port(), &[]);
    let q = Queue::new(
        &Client::open(&server.url).unwrap(),
        "q",
        QueueOptions::default(),
    )
    .unwrap();
    for state in JobState::ALL {
        let err = q.jobs(state, 0, MAX_PAGE + 1).await.unwrap_err();
        assert_eq!(err.code(), "INVALID_ARGUMENT", "{err}");
        assert!(err.message().contains("1000"), "{err}");
    }
    assert!(q
        .jobs(JobState::Ready, 0, MAX_PAGE)
        .await
        .unwrap()
        .is_empty());
    let err = JobState::parse("finished").unwrap_err();
    assert_eq!(err.code(), "INVALID_ARGUMENT");
    assert!(err.message().contains("completed"), "{err}");
    for state in JobState::ALL {
        assert_eq!(JobState::parse(state.as_str()).unwrap(), state);
    }
    let dbsize: u64 = redis::cmd("DBSIZE").query(&mut server.conn()).unwrap();
    assert_eq!(dbsize, 0);
}

#[tokio::test]
async fn a_sharded_queue_lists_every_job_once_shard_by_shard() {
    let server = RedisServer::start();
    let client = Client::open(&server.url).unwrap();
    let q = Queue::sharded(&client, &unique("jq"), 3, QueueOptions::default()).unwrap();
    let mut want = HashSet::new();
    for i in 0..30 {
        let s = format!("job{i}");
        let opts = match i % 3 {
            0 => id(&s),
            1 => routed(&s, Some(2), None),
            // A grouped job on a sharded queue takes no id of the caller's: it gets its own.
            _ => EnqueueOptions {
                group: Some(format!("g{}", i % 5)),
                ..Default::default()
            },
        };
        want.insert(q.enqueue(b"x", opts).await.unwrap().id);
    }
    for i in 0..9 {
        q.enqueue(b"x", delayed(&format!("d{i}"), 10 + i))
            .await
            .unwrap();
    }
    let whole: Vec<String> = all(&q, JobState::Ready)
        .await
        .into_iter()
        .map(|j| j.id)
        .collect();
    assert_eq!(whole.iter().cloned().collect::<HashSet<_>>(), want);
    assert_eq!(whole.len(), 30);
    for size in [1, 4, 7, 29] {
        assert_eq!(
            paged(&q, JobState::Ready, size).await,
            whole,
            "pages of {size}"
        );
    }
    let delayed_ids = paged(&q, JobState::Delayed, 2).await;
    assert_eq!(delayed_ids.len(), 9);
    assert_eq!(delayed_ids.iter().collect::<HashSet<_>>().len(), 9);
}

#[tokio::test]
async fn listing_works_on_a_redis_at_maxmemory() {
    let server = RedisServer::start_private(common::free_port(), &[]);
    let q = Queue::new(
        &Client::open(&server.url).unwrap(),
        &unique("full"),
        QueueOptions::default(),
    )
    .unwrap();
    q.enqueue(b"x", id("r")).await.unwrap();
    q.enqueue(b"x", routed("g", Some(1), Some("grp")))
        .await
        .unwrap();
    q.enqueue(b"x", delayed("d", 60)).await.unwrap();
    let filler = "x".repeat(64 * 1024);
    for i in 0..64 {
        redis::cmd("SET")
            .arg(format!("filler{i}"))
            .arg(&filler)
            .query::<()>(&mut server.conn())
            .unwrap();
    }
    redis::cmd("CONFIG")
        .arg("SET")
        .arg("maxmemory")
        .arg("2mb")
        .query::<()>(&mut server.conn())
        .unwrap();
    let err = q.enqueue(b"x", Default::default()).await.unwrap_err();
    assert_eq!(err.code(), "OUT_OF_MEMORY", "{err}");
    assert_eq!(ids(&all(&q, JobState::Ready).await), ["r", "g"]);
    assert_eq!(ids(&all(&q, JobState::Delayed).await), ["d"]);
}
