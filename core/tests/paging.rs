//! Walking a state's jobs by cursor (`Queue::jobs_page`) while workers run: a walk never lists a
//! job twice and never skips one that stayed in the state for the whole walk, in every state, on
//! one shard and on several. One test per promise, against a real redis-server, at a few
//! thousand jobs (offset paging skipped and repeated jobs at this size).

mod common;

use std::collections::HashSet;
use std::time::Duration;

use common::jobs::*;
use common::{unique, RedisServer};
use tideq::{Client, EnqueueOptions, Job, JobState, Queue, QueueOptions, WorkerOptions};

/// Walks `state` by cursor in pages of `size`, pausing `gap` between pages (workers move jobs
/// meanwhile); the ids in the order listed.
async fn walk(q: &Queue, state: JobState, size: usize, gap: Duration) -> Vec<String> {
    let mut out = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let page = q.jobs_page(state, cursor.as_deref(), size).await.unwrap();
        assert!(page.jobs.len() <= size);
        out.extend(page.jobs.into_iter().map(|j| j.id));
        match page.cursor {
            Some(c) => cursor = Some(c),
            None => return out,
        }
        tokio::time::sleep(gap).await;
    }
}

fn twice(ids: &[String]) -> Vec<&String> {
    let mut seen = HashSet::new();
    ids.iter().filter(|id| !seen.insert(*id)).collect()
}

/// The ids in `state` now (read while no worker moves them).
async fn now_in(q: &Queue, state: JobState) -> HashSet<String> {
    let mut out = HashSet::new();
    let mut cursor: Option<String> = None;
    loop {
        let page = q.jobs_page(state, cursor.as_deref(), 1000).await.unwrap();
        out.extend(page.jobs.into_iter().map(|j| j.id));
        match page.cursor {
            Some(c) => cursor = Some(c),
            None => return out,
        }
    }
}

fn slow_worker(q: &Queue, concurrency: usize) -> tideq::Worker {
    q.work(
        WorkerOptions {
            concurrency,
            ..Default::default()
        },
        |_job: Job| async move {
            tokio::time::sleep(Duration::from_millis(2)).await;
            Ok::<_, String>(Vec::new())
        },
    )
    .unwrap()
}

#[tokio::test]
async fn walking_completed_jobs_while_workers_finish_more_never_lists_one_twice() {
    let server = RedisServer::start();
    let q = queue_with(
        &server.url,
        QueueOptions {
            keep_completed: 100_000,
            ..Default::default()
        },
    );
    let batch: Vec<(&[u8], EnqueueOptions)> =
        (0..5000).map(|_| (&b"x"[..], Default::default())).collect();
    q.enqueue_many(&batch).await.unwrap();
    let w = slow_worker(&q, 20);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = now_in(&q, JobState::Completed).await;
    let mut walks = 0;
    while q.stats().await.unwrap().ready > 500 {
        let listed = walk(&q, JobState::Completed, 50, Duration::from_millis(5)).await;
        assert_eq!(twice(&listed), Vec::<&String>::new(), "walk {walks}");
        // Every job completed before the walk began was listed (none is trimmed at this size).
        let listed: HashSet<String> = listed.into_iter().collect();
        assert!(
            before.is_subset(&listed),
            "walk {walks} skipped completed jobs"
        );
        walks += 1;
    }
    assert!(walks > 0);
    w.shutdown().await;
}

#[tokio::test]
async fn walking_ready_jobs_while_workers_take_them_skips_none_that_stayed_ready() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    // Plain jobs first (taken first), then priorities and groups that wait behind them.
    let mut batch: Vec<(&[u8], EnqueueOptions)> = Vec::new();
    for i in 0..6000u32 {
        let opts = match i % 10 {
            0..=6 => EnqueueOptions::default(),
            7 => EnqueueOptions {
                priority: Some(1 + i % 3),
                ..Default::default()
            },
            _ => EnqueueOptions {
                group: Some(format!("g{}", i % 97)),
                ..Default::default()
            },
        };
        batch.push((&b"x"[..], opts));
    }
    for chunk in batch.chunks(1000) {
        q.enqueue_many(chunk).await.unwrap();
    }
    let start = now_in(&q, JobState::Ready).await;
    assert_eq!(start.len(), 6000);
    let w = slow_worker(&q, 10);
    let listed = walk(&q, JobState::Ready, 50, Duration::from_millis(5)).await;
    w.shutdown().await;
    let end = now_in(&q, JobState::Ready).await;
    assert!(end.len() < 6000 && !end.is_empty(), "{} left", end.len());
    assert_eq!(twice(&listed), Vec::<&String>::new());
    // Taken jobs never come back (the handler succeeds): ready at both ends = ready throughout.
    let stayed: HashSet<&String> = start.intersection(&end).collect();
    let listed: HashSet<&String> = listed.iter().collect();
    let skipped: Vec<&&String> = stayed.difference(&listed).collect();
    assert!(
        skipped.is_empty(),
        "{} skipped of {}",
        skipped.len(),
        stayed.len()
    );
}

#[tokio::test]
async fn walking_delayed_and_dead_jobs_while_more_arrive_before_them_repeats_and_skips_none() {
    let server = RedisServer::start();
    let q = queue_with(
        &server.url,
        QueueOptions {
            max_attempts: 1,
            ..Default::default()
        },
    );
    // Many delayed jobs share a due time (ties are ordered by id).
    let batch: Vec<(&[u8], EnqueueOptions)> = (0..3000)
        .map(|i| {
            let o = EnqueueOptions {
                delay: Some(Duration::from_secs(600 + (i % 7) as u64)),
                ..Default::default()
            };
            (&b"x"[..], o)
        })
        .collect();
    q.enqueue_many(&batch).await.unwrap();
    // Dead jobs: their one attempt failed.
    async fn kill(q: &Queue, n: usize) {
        let ready: Vec<(&[u8], EnqueueOptions)> =
            (0..n).map(|_| (&b"x"[..], Default::default())).collect();
        q.enqueue_many(&ready).await.unwrap();
        for job in q.lease_jobs(n, Duration::from_secs(60)).await.unwrap() {
            assert!(q.fail(&job, "no").await.unwrap());
        }
    }
    kill(&q, 1000).await;
    kill(&q, 500).await;
    let delayed_before = now_in(&q, JobState::Delayed).await;
    let dead_before = now_in(&q, JobState::Dead).await;
    assert_eq!((delayed_before.len(), dead_before.len()), (3000, 1500));
    // Meanwhile: delayed jobs due before the others, and more dead ones.
    let q2 = q.clone();
    let feeder = tokio::spawn(async move {
        for i in 0..300u64 {
            let o = EnqueueOptions {
                delay: Some(Duration::from_secs(300 + i)),
                ..Default::default()
            };
            q2.enqueue(b"x", o).await.unwrap();
            kill(&q2, 1).await;
        }
    });
    for (state, before) in [
        (JobState::Delayed, &delayed_before),
        (JobState::Dead, &dead_before),
    ] {
        let listed = walk(&q, state, 37, Duration::from_millis(2)).await;
        assert_eq!(twice(&listed), Vec::<&String>::new(), "{state:?}");
        let listed: HashSet<String> = listed.into_iter().collect();
        assert!(before.is_subset(&listed), "{state:?}: skipped");
    }
    feeder.await.unwrap();
}

#[tokio::test]
async fn walking_active_jobs_while_their_leases_are_renewed_lists_each_once() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let batch: Vec<(&[u8], EnqueueOptions)> =
        (0..300).map(|_| (&b"x"[..], Default::default())).collect();
    q.enqueue_many(&batch).await.unwrap();
    let w = q
        .work(
            WorkerOptions {
                concurrency: 300,
                lease: Duration::from_millis(600),
                ..Default::default()
            },
            |_job: Job| async move {
                tokio::time::sleep(Duration::from_secs(4)).await;
                Ok::<_, String>(Vec::new())
            },
        )
        .unwrap();
    while q.stats().await.unwrap().active < 300 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Leases are renewed every ~200 ms: by deadline the order would change under the walk.
    let listed = walk(&q, JobState::Active, 7, Duration::from_millis(30)).await;
    assert_eq!(twice(&listed), Vec::<&String>::new());
    assert_eq!(listed.len(), 300);
    let mut sorted = listed.clone();
    sorted.sort();
    assert_eq!(listed, sorted, "active jobs are listed by id");
    w.shutdown().await;
}

#[tokio::test]
async fn a_sharded_queue_is_walked_shard_by_shard_with_each_job_once() {
    let server = RedisServer::start();
    let client = Client::open(&server.url).unwrap();
    let q = Queue::sharded(&client, &unique("jq"), 3, QueueOptions::default()).unwrap();
    let mut want = HashSet::new();
    for i in 0..90 {
        let opts = match i % 3 {
            0 => EnqueueOptions::default(),
            1 => EnqueueOptions {
                priority: Some(2),
                ..Default::default()
            },
            _ => EnqueueOptions {
                group: Some(format!("g{}", i % 5)),
                ..Default::default()
            },
        };
        want.insert(q.enqueue(b"x", opts).await.unwrap().id);
    }
    for size in [1, 4, 29, 1000] {
        let listed = walk(&q, JobState::Ready, size, Duration::ZERO).await;
        assert_eq!(listed.len(), 90, "pages of {size}");
        assert_eq!(listed.into_iter().collect::<HashSet<_>>(), want);
    }
    // The first page's cursor names its shard: the next page goes on there.
    let page = q.jobs_page(JobState::Ready, None, 1).await.unwrap();
    assert!(page.cursor.unwrap().starts_with("ready:0:"));
}

#[tokio::test]
async fn a_bad_limit_or_a_cursor_not_made_by_this_walk_is_refused() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    for i in 0..3 {
        q.enqueue(b"x", id(&format!("j{i}"))).await.unwrap();
    }
    for limit in [0, tideq::MAX_PAGE + 1] {
        let err = q.jobs_page(JobState::Ready, None, limit).await.unwrap_err();
        assert_eq!(err.code(), "INVALID_ARGUMENT", "{err}");
    }
    let page = q.jobs_page(JobState::Ready, None, 1).await.unwrap();
    let ready = page.cursor.unwrap();
    for (state, bad) in [
        (JobState::Ready, ""),
        (JobState::Ready, "nonsense"),
        (JobState::Ready, "ready:9:r|j0"),
        (JobState::Ready, "ready:0:x|j0"),
        (JobState::Ready, "ready:0:r|j0"),
        (JobState::Ready, "ready:0:g|abc|"),
        (JobState::Delayed, "delayed:0:soon|j0"),
        (JobState::Delayed, "delayed:0:"),
        (JobState::Completed, "completed:0:"),
        // A cursor of another state's walk.
        (JobState::Delayed, ready.as_str()),
    ] {
        let err = q.jobs_page(state, Some(bad), 10).await.unwrap_err();
        assert_eq!(err.code(), "INVALID_ARGUMENT", "{bad}: {err}");
        assert!(err.message().contains("cursor"), "{err}");
    }
    // The walk itself goes on from the good cursor.
    let rest = q
        .jobs_page(JobState::Ready, Some(&ready), 10)
        .await
        .unwrap();
    assert_eq!(rest.jobs.len(), 2);
    assert_eq!(rest.cursor, None);
}
