//! Reading and cleaning up at scale: listing 20,000 groups by page (job and capped queues),
//! finding the live group behind 100,000 expired ones, cancelling and walking 300,000 jobs by
//! cursor, purges that leave no route entries. Each test is named after the failure it rules out
//! and reads SLOWLOG, where a call's cost is the promise.

mod common;

use std::time::Duration;

use common::jobs::*;
use common::scale::*;

use tideq::{EnqueueOptions, ErrorKind, JobState, Limits, MAX_FETCH};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn purged_grouped_dead_jobs_leave_no_route_entries_behind() {
    let _serial = one_at_a_time().await;
    let server = server();
    let q = queue(&server.url);
    for i in 0..3 {
        let opts = EnqueueOptions {
            group: Some(format!("tenant-{i}")),
            priority: Some(2),
            max_attempts: Some(1),
            ..Default::default()
        };
        q.enqueue(b"x", opts).await.unwrap();
    }
    for job in q.lease_jobs(10, Duration::from_secs(30)).await.unwrap() {
        assert!(q.fail(&job, "boom").await.unwrap(), "dead-lettered");
    }
    assert_eq!(q.stats().await.unwrap().dead, 3);
    assert_eq!(q.purge().await.unwrap(), 3);
    let route = format!("tideq:{{{}}}:route", q.name());
    let left: u64 = redis::cmd("HLEN")
        .arg(&route)
        .query(&mut server.conn())
        .unwrap();
    assert_eq!(left, 0, "purge left the jobs' routes (flow mode stays on)");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn next_batch_behind_100000_expired_groups_finds_the_live_one_in_short_calls() {
    let _serial = one_at_a_time().await;
    let server = server();
    let client = tideq::Client::open(&server.url).unwrap();
    let opts = tideq::CappedOptions {
        ttl: Some(Duration::from_millis(1500)),
        ..Default::default()
    };
    let q = tideq::CappedQueue::new(&client, &common::unique("cq"), opts).unwrap();
    let items: Vec<(String, &[u8])> = (0..100_000)
        .map(|g| (format!("g{g}"), b"x".as_slice()))
        .collect();
    q.push_many(&items).await.unwrap();
    // Every group expires; the rotation still names them all.
    tokio::time::sleep(Duration::from_millis(1800)).await;
    q.push("fresh", b"live").await.unwrap();
    slowlog_from_now(&server, 10_000);
    let batch = q
        .next_batch(10)
        .await
        .unwrap()
        .expect("the live group's batch");
    assert_eq!(
        (batch.group.as_str(), batch.items),
        ("fresh", vec![b"live".to_vec()])
    );
    assert_eq!(slow_calls(&server, 10_000), Vec::<String>::new());
    assert!(q.next_batch(10).await.unwrap().is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listing_20000_groups_by_page_lists_each_once_without_a_long_call() {
    let _serial = one_at_a_time().await;
    let server = server();
    let q = queue(&server.url);
    fill(&q, 20_000, 2).await;
    q.set_limits(Limits {
        group_concurrency: Some(1),
        ..Default::default()
    })
    .await
    .unwrap();
    // Some groups running (then at their limit, so held), some paused, one with settings only.
    let leased = q
        .lease_jobs(MAX_FETCH, Duration::from_secs(60))
        .await
        .unwrap();
    assert_eq!(leased.len(), MAX_FETCH);
    for g in 0..500 {
        q.pause_group(&format!("tenant-{g}")).await.unwrap();
    }
    q.pause_group("settings-only").await.unwrap();
    slowlog_from_now(&server, 10_000);
    let mut seen = std::collections::HashMap::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let page = q.groups_page(cursor.as_deref(), 100).await.unwrap();
        pages += 1;
        // A page scans until about 100 groups were looked at; its last SCAN call may return
        // more than its COUNT hint asks (a whole bucket run), so a page holds up to about 2x.
        assert!(
            page.groups.len() <= 300,
            "a page of 100 held {}",
            page.groups.len()
        );
        for g in page.groups {
            assert!(
                seen.insert(g.group.clone(), g).is_none(),
                "a group was listed twice"
            );
        }
        match page.cursor {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    assert_eq!(seen.len(), 20_001);
    assert!(pages >= 50, "{pages} pages of about 100 for 20,001 groups");
    assert_eq!(seen["tenant-3"].active, 1);
    assert_eq!(seen["tenant-3"].ready, 1);
    assert!(seen["tenant-3"].paused);
    assert_eq!(seen["tenant-3"].concurrency, Some(1));
    assert!(seen["settings-only"].paused);
    assert_eq!(seen["settings-only"].ready, 0);
    let slow = slow_calls(&server, 10_000);
    assert!(slow.is_empty(), "calls over 10 ms: {slow:?}");
    // groups() reads the same, sorted.
    let all = q.groups().await.unwrap();
    assert_eq!(all.len(), 20_001);
    assert!(all.windows(2).all(|w| w[0].group < w[1].group));
    assert_eq!(
        all.iter().find(|g| g.group == "tenant-3"),
        Some(&seen["tenant-3"])
    );
    // Bad pages are refused.
    for (cursor, count) in [
        (None, 0),
        (None, tideq::MAX_GROUP_PAGE + 1),
        (Some("zz"), 10),
        (Some("1-1-0"), 10),
        (Some("0-9-0"), 10),
    ] {
        let err = q.groups_page(cursor, count).await.unwrap_err();
        assert_eq!(
            err.kind(),
            ErrorKind::InvalidArgument,
            "{cursor:?} {count}: {err}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listing_a_capped_queue_of_20000_live_and_20000_expired_groups_by_page_stays_short() {
    let _serial = one_at_a_time().await;
    let server = server();
    let client = tideq::Client::open(&server.url).unwrap();
    let opts = tideq::CappedOptions {
        ttl: Some(Duration::from_millis(1500)),
        ..Default::default()
    };
    let q = tideq::CappedQueue::sharded(&client, &common::unique("cq"), 2, opts).unwrap();
    let expiring: Vec<(String, &[u8])> = (0..20_000)
        .map(|g| (format!("old{g}"), b"x".as_slice()))
        .collect();
    for part in expiring.chunks(10_000) {
        q.push_many(part).await.unwrap();
    }
    tokio::time::sleep(Duration::from_millis(1800)).await;
    let live: Vec<(String, &[u8])> = (0..20_000)
        .map(|g| (format!("g{g}"), b"x".as_slice()))
        .collect();
    for part in live.chunks(10_000) {
        q.push_many(part).await.unwrap();
    }
    slowlog_from_now(&server, 10_000);
    let mut seen = std::collections::HashSet::new();
    let mut cursor: Option<String> = None;
    loop {
        let page = q.groups_page(cursor.as_deref(), 100).await.unwrap();
        for g in page.groups {
            assert!(g.starts_with('g'), "an expired group was listed: {g}");
            assert!(seen.insert(g), "a group was listed twice");
        }
        match page.cursor {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    assert_eq!(seen.len(), 20_000);
    assert_eq!(slow_calls(&server, 10_000), Vec::<String>::new());
    for (cursor, count) in [
        (None, 0),
        (None, tideq::MAX_GROUP_PAGE + 1),
        (Some("x"), 5),
        (Some("2-0"), 5),
    ] {
        let err = q.groups_page(cursor, count).await.unwrap_err();
        assert_eq!(
            err.kind(),
            ErrorKind::InvalidArgument,
            "{cursor:?} {count}: {err}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_ready_jobs_behind_300000_takes_no_list_walk() {
    let _serial = one_at_a_time().await;
    let server = server();
    let q = queue(&server.url);
    let jobs: Vec<(Vec<u8>, EnqueueOptions)> = (0..300_000)
        .map(|i| {
            let opts = EnqueueOptions {
                id: Some(format!("j{i}")),
                priority: (i % 2 == 1).then_some(5),
                ..Default::default()
            };
            (b"x".to_vec(), opts)
        })
        .collect();
    for part in jobs.chunks(10_000) {
        q.enqueue_many(part).await.unwrap();
    }
    // LREM walked the list: about 5 ms a cancel here at the tail of 150,000.
    slowlog_from_now(&server, 3_000);
    for i in 299_980..300_000 {
        q.cancel(&format!("j{i}")).await.unwrap();
    }
    assert_eq!(slow_calls(&server, 3_000), Vec::<String>::new());
    assert_eq!(q.stats().await.unwrap().ready, 299_980);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn walking_300000_ready_and_completed_jobs_by_cursor_while_they_move_has_no_long_page_call() {
    let _serial = one_at_a_time().await;
    let server = server();
    let q = queue_with(
        &server.url,
        tideq::QueueOptions {
            keep_completed: 300_000,
            ..Default::default()
        },
    );
    let jobs: Vec<(Vec<u8>, EnqueueOptions)> = (0..300_000)
        .map(|i| {
            let opts = EnqueueOptions {
                priority: (i % 3 == 1).then_some(5),
                group: (i % 3 == 2).then(|| format!("g{}", i % 1000)),
                ..Default::default()
            };
            (b"x".to_vec(), opts)
        })
        .collect();
    for part in jobs.chunks(10_000) {
        q.enqueue_many(part).await.unwrap();
    }
    // Half of them completed: the done list is 150,000 long.
    for _ in 0..150 {
        let got = q.lease_jobs(1000, Duration::from_secs(60)).await.unwrap();
        for job in &got {
            q.complete(job).await.unwrap();
        }
    }
    // Deep into each list, with jobs taken (and completed, trimmed) between pages: looking the
    // place up from the list's front (LPOS) took ~40 ms at a million.
    slowlog_from_now(&server, 10_000);
    for state in [JobState::Ready, JobState::Completed] {
        let mut cursor: Option<String> = None;
        let mut listed = 0;
        let mut pages = 0;
        loop {
            let page = q.jobs_page(state, cursor.as_deref(), 1000).await.unwrap();
            listed += page.jobs.len();
            pages += 1;
            if pages % 10 == 0 {
                for job in q.lease_jobs(500, Duration::from_secs(60)).await.unwrap() {
                    q.complete(&job).await.unwrap();
                }
            }
            match page.cursor {
                Some(c) => cursor = Some(c),
                None => break,
            }
        }
        assert!(listed > 100_000, "{state:?}: {listed}");
    }
    // The walk's own calls: page_jobs.lua's keys end with `gheld`, its arguments follow (other
    // scripts, such as the acks of the workers meanwhile, name more keys after it). Looking a
    // place up from the list's front made most deep pages slow; one call in the ~900 may meet a
    // stall of this 2-core machine (any command did, now and then: a one-job ack once took 13 ms
    // here).
    let slow: Vec<String> = slow_calls(&server, 10_000)
        .into_iter()
        .filter(|c| {
            c.split_once(":gheld ")
                .is_some_and(|(_, rest)| !rest.starts_with("tideq:"))
        })
        .collect();
    assert!(slow.len() <= 1, "{slow:#?}");
}
