//! Operators' reads at the sizes users reach, none of which may block Redis: a page of 20,000
//! running jobs, ready jobs by offset behind 100,000 groups, the one ready job among 200,000
//! delayed grouped ones (by page and by search), 10,000 schedules (listed, and due at once), and
//! 10,001 live workers. Each test is named after the failure it rules out and reads SLOWLOG (the
//! project's budget: 10 ms a script call) or counts the script calls (INFO commandstats).

mod common;

use std::collections::HashSet;
use std::time::{Duration, Instant};

use common::jobs::*;
use common::scale::*;
use common::RedisServer;

use tideq::{EnqueueOptions, Every, Job, JobFilter, JobState, Queue, WorkerOptions, SEARCH_SCAN};

/// A window of script calls whose SLOWLOG is read: started by [`Window::open`] (SLOWLOG afresh,
/// calls over 10 ms logged).
struct Window {
    calls: u64,
}

impl Window {
    fn open(server: &RedisServer) -> Self {
        slowlog_from_now(server, 10_000);
        Window {
            calls: script_calls(server),
        }
    }

    /// The script calls since `open`.
    fn calls(&self, server: &RedisServer) -> u64 {
        script_calls(server) - self.calls
    }

    /// Asserts that the script calls since `open` (those whose command line holds each of
    /// `which`) took no more than 10 ms, but for 1 and 1 in a hundred more: on this 2-core
    /// machine shared with builds, any command meets a stall now and then, often a few together
    /// (before these fixes, every such call took 13-240 ms here).
    fn assert_short(&self, server: &RedisServer, which: &[&str]) {
        self.assert_short_of(server, which, self.calls(server));
    }

    /// [`assert_short`](Self::assert_short) for calls among others: `calls` of them were made.
    fn assert_short_of(&self, server: &RedisServer, which: &[&str], calls: u64) {
        let slow: Vec<String> = slow_calls(server, 10_000)
            .into_iter()
            .filter(|c| c.contains("EVALSHA") && which.iter().all(|w| c.contains(w)))
            .collect();
        let stalls = stalls_allowed(calls);
        assert!(
            slow.len() <= stalls,
            "{} of {calls} script calls over 10 ms: {slow:#?}",
            slow.len()
        );
    }
}

/// `n` plain jobs enqueued, in parts of 10,000.
async fn plain(q: &Queue, n: usize, opts: impl Fn(usize) -> EnqueueOptions) {
    let jobs: Vec<(Vec<u8>, EnqueueOptions)> = (0..n).map(|i| (b"x".to_vec(), opts(i))).collect();
    for part in jobs.chunks(10_000) {
        q.enqueue_many(part).await.unwrap();
    }
}

// Issue 40, item 6: a page of active jobs sorted every running job in one script (136-142 ms at
// 20,000); an active search made calls of 157 and 186 ms.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_of_20000_running_jobs_is_read_without_a_call_over_10ms() {
    let _serial = one_at_a_time().await;
    let server = server();
    let q = queue(&server.url);
    plain(&q, 20_000, |_| EnqueueOptions::default()).await;
    for _ in 0..20 {
        let got = q.lease_jobs(1000, Duration::from_secs(600)).await.unwrap();
        assert_eq!(got.len(), 1000);
    }
    assert_eq!(q.stats().await.unwrap().active, 20_000);
    let window = Window::open(&server);
    // Three pages, by id, each after the last: the first 300 ids of the 20,000.
    let mut listed = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..3 {
        let page = q
            .jobs_page(JobState::Active, cursor.as_deref(), 100)
            .await
            .unwrap();
        assert_eq!(page.jobs.len(), 100);
        assert!(page.jobs.iter().all(|j| j.state == JobState::Active));
        listed.extend(page.jobs.into_iter().map(|j| j.id));
        cursor = Some(page.cursor.expect("more running jobs"));
    }
    // What is running, read from Redis as it is (not through the calls under test).
    let active = format!("tideq:{{{}}}:active", q.name());
    let mut all: Vec<String> = redis::cmd("ZRANGE")
        .arg(&active)
        .arg("-inf")
        .arg("(+inf")
        .arg("BYSCORE")
        .query(&mut server.conn())
        .unwrap();
    all.sort();
    assert_eq!(all.len(), 20_000);
    // A search of the running jobs: no match, a bounded look, and a cursor to go on.
    let none = JobFilter {
        state: Some(JobState::Active),
        task: Some("absent".into()),
        group: None,
        contains: None,
    };
    let found = q.find_jobs(&none, None, 50).await.unwrap();
    assert!(found.jobs.is_empty());
    assert_eq!(found.scanned as usize, SEARCH_SCAN);
    assert!(found.cursor.is_some());
    window.assert_short(&server, &[]);
    assert_eq!(listed, all[..300], "the smallest ids, in order, once each");
}

// Issue 40, item 7: `?offset=` on the ready list walked every group in one script (122 ms at
// 100,000 groups), with no cap on the offset.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ready_jobs_by_offset_behind_100000_groups_take_no_call_over_10ms_and_a_far_offset_is_refused(
) {
    let _serial = one_at_a_time().await;
    let server = server();
    let q = queue(&server.url);
    fill(&q, 100_000, 1).await;
    let window = Window::open(&server);
    // Groups in the rotation's order: the order they were filled in.
    for offset in [0, 5_000, 10_000] {
        let page = q.jobs(JobState::Ready, offset, 50).await.unwrap();
        let groups: Vec<String> = page.into_iter().map(|j| j.group.unwrap()).collect();
        let want: Vec<String> = (offset..offset + 50)
            .map(|g| format!("tenant-{g}"))
            .collect();
        assert_eq!(groups, want, "offset {offset}");
    }
    window.assert_short(&server, &[]);
    // Past 10,000 the offset is refused, naming the cursor's call; nothing read.
    let before = script_calls(&server);
    for offset in [10_001, 99_000, usize::MAX] {
        let err = q.jobs(JobState::Ready, offset, 50).await.unwrap_err();
        assert_eq!(err.code(), "INVALID_ARGUMENT", "{err}");
        assert!(err.message().contains("jobs_page"), "{err}");
    }
    assert_eq!(script_calls(&server), before);
    // Other states' offsets cost a rank lookup: not refused.
    assert!(q
        .jobs(JobState::Delayed, 99_000, 10)
        .await
        .unwrap()
        .is_empty());
}

// Issue 40, item 8: with 200,000 delayed grouped jobs and 1 ready one, find_jobs reported
// scanned=1 but made 400 script calls, and jobs_page returned no job (the console said "No ready
// jobs" while stats said 1).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_ready_job_among_200000_delayed_grouped_ones_is_found_in_bounded_calls() {
    let _serial = one_at_a_time().await;
    let server = server();
    let q = queue(&server.url);
    plain(&q, 200_000, |i| EnqueueOptions {
        group: Some(format!("t{i}")),
        delay: Some(Duration::from_secs(3600)),
        ..Default::default()
    })
    .await;
    let live = q
        .enqueue(
            b"r",
            EnqueueOptions {
                group: Some("live".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap()
        .id;
    assert_eq!(q.stats().await.unwrap().ready, 1);
    let window = Window::open(&server);
    // A page finds it within its own bounded look (at most 512 calls of 500 entries).
    let before = script_calls(&server);
    let page = q.jobs_page(JobState::Ready, None, 50).await.unwrap();
    let calls = script_calls(&server) - before;
    assert_eq!(
        page.jobs.iter().map(|j| j.id.as_str()).collect::<Vec<_>>(),
        [live.as_str()]
    );
    assert_eq!(page.cursor, None);
    assert!(calls <= 515, "{calls} script calls for one page");
    // A search looks at no more than SEARCH_SCAN jobs a call, the delayed ones it passed over
    // counted, in a few script calls; it finds the job by going on.
    let ready = JobFilter {
        state: Some(JobState::Ready),
        ..Default::default()
    };
    let (mut cursor, mut found, mut scanned, mut searches) = (None::<String>, Vec::new(), 0, 0);
    loop {
        let before = script_calls(&server);
        let s = q.find_jobs(&ready, cursor.as_deref(), 50).await.unwrap();
        let calls = script_calls(&server) - before;
        searches += 1;
        assert!(s.scanned as usize <= SEARCH_SCAN, "{}", s.scanned);
        assert!(calls <= 6, "{calls} script calls for one search call");
        if s.cursor.is_some() && s.jobs.is_empty() {
            assert_eq!(
                s.scanned as usize, SEARCH_SCAN,
                "an empty page looked its fill"
            );
        }
        scanned += s.scanned;
        found.extend(s.jobs.into_iter().map(|j| j.id));
        match s.cursor {
            Some(c) => cursor = Some(c),
            None => break,
        }
        assert!(searches < 200, "the search does not end");
    }
    assert_eq!(found, [live]);
    assert!(
        (200_001..=200_001 + SEARCH_SCAN as u64).contains(&scanned),
        "{scanned} looked at"
    );
    window.assert_short(&server, &[]);
}

// Issue 40, item 10: 10,000 schedules were read 1,000 a call (12-16 ms calls); 10,000 due at
// once were read in one call (15-18 ms here).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listing_and_firing_10000_schedules_take_no_call_over_10ms() {
    let _serial = one_at_a_time().await;
    let server = server();
    let q = queue(&server.url);
    for i in 0..10_000 {
        let opts = EnqueueOptions {
            task: Some("report".into()),
            ..Default::default()
        };
        q.upsert_schedule(
            &format!("s{i:05}"),
            Every::interval(Duration::from_secs(3600)),
            br#"{"report":"daily","to":["ops@example.com"],"format":"pdf"}"#,
            opts,
        )
        .await
        .unwrap();
    }
    let window = Window::open(&server);
    let all = q.schedules().await.unwrap();
    assert_eq!(all.len(), 10_000);
    assert!(all.windows(2).all(|w| w[0].name < w[1].name));
    // About 200 a call (11 calls of 1,000 before).
    let calls = window.calls(&server);
    assert!(calls >= 45, "10,000 schedules read in {calls} calls");
    window.assert_short(&server, &[]);
    // Every slot due now: the worker's scheduler fires each once.
    let snext = format!("tideq:{{{}}}:snext", q.name());
    let mut c = server.conn();
    let names: Vec<String> = redis::cmd("ZRANGE")
        .arg(&snext)
        .arg(0)
        .arg(-1)
        .query(&mut c)
        .unwrap();
    let due = redis_ms(&server) - 1000;
    for part in names.chunks(1000) {
        let mut cmd = redis::cmd("ZADD");
        cmd.arg(&snext);
        for n in part {
            cmd.arg(due).arg(n);
        }
        let _: () = cmd.query(&mut c).unwrap();
    }
    let window = Window::open(&server);
    let w = q
        .work(WorkerOptions::default(), |_j: Job| async {
            Ok::<(), String>(())
        })
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while q.stats().await.unwrap().enqueued < 10_000 {
        assert!(Instant::now() < deadline, "the due slots were not fired");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    w.shutdown().await;
    assert_eq!(q.stats().await.unwrap().enqueued, 10_000, "each slot once");
    // The reads of due schedules (the calls naming the two schedule keys only, about 20 of 500
    // each; the enqueues that fire the slots are the writers' own cost).
    window.assert_short_of(&server, &[" 2 tideq:", ":snext "], 21);
    // Issue 43: the listing also reads each schedule's last job and that job's state (completed,
    // or gone past keep_completed): still no call over 10 ms.
    let window = Window::open(&server);
    let all = q.schedules().await.unwrap();
    assert!(all.iter().all(|s| s.last_job_id.is_some()));
    let states: std::collections::BTreeSet<_> = all
        .iter()
        .filter_map(|s| s.last_job_state.clone())
        .collect();
    assert!(
        states.iter().all(|s| s == "completed" || s == "gone"),
        "{states:?}"
    );
    window.assert_short(&server, &[]);
}

// Issue 40, item 14: workers were read 1,000 per shard (10,001 live workers listed as 1,000).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn all_10001_live_workers_are_listed_and_counted_without_a_call_over_10ms() {
    let _serial = one_at_a_time().await;
    let server = server();
    let q = queue(&server.url);
    // Entries as workers write them (docs/data-model.md, "Workers"), seen within the last 10 s
    // of the Redis clock; and one seen 50 s ago, no longer alive.
    let now = redis_ms(&server);
    let workers = format!("tideq:{{{}}}:workers", q.name());
    let winfo = format!("tideq:{{{}}}:winfo", q.name());
    let mut c = server.conn();
    for part in (0..10_001u64).collect::<Vec<_>>().chunks(1000) {
        let (mut zadd, mut hset) = (redis::cmd("ZADD"), redis::cmd("HSET"));
        zadd.arg(&workers);
        hset.arg(&winfo);
        for &i in part {
            let id = format!("w{i:05}");
            zadd.arg(now - i).arg(&id);
            let entry = serde_json::json!({
                "queue": q.name(), "host": "box", "pid": i, "runtime": "rust",
                "version": "0", "concurrency": 4, "started": i, "running": i % 2, "ids": [],
            });
            hset.arg(&id).arg(entry.to_string());
        }
        let _: () = zadd.query(&mut c).unwrap();
        let _: () = hset.query(&mut c).unwrap();
    }
    let _: () = redis::cmd("ZADD")
        .arg(&workers)
        .arg(now - 50_000)
        .arg("gone")
        .query(&mut c)
        .unwrap();
    let window = Window::open(&server);
    let listed = q.workers().await.unwrap();
    assert_eq!(listed.len(), 10_001);
    let ids: HashSet<&str> = listed.iter().map(|w| w.id.as_str()).collect();
    assert_eq!(ids.len(), 10_001);
    assert!(!ids.contains("gone"));
    assert!(listed
        .windows(2)
        .all(|w| w[0].started_at <= w[1].started_at));
    let m = q.metrics().await.unwrap();
    assert_eq!((m.workers, m.busy_workers), (10_001, 5_000));
    window.assert_short(&server, &[]);
}
