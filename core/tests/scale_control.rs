//! Queue control at the sizes users run it: many groups, large concurrency, big fetches, limits over
//! shards. Each test is named after the failure it rules out (jobs stranded by one large fetch,
//! settings that half-apply and wipe the running counts), and reads SLOWLOG where a call's cost is
//! the promise.

mod common;

use std::time::Duration;

use common::jobs::*;
use common::scale::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use tideq::{
    EnqueueOptions, ErrorKind, GroupLimits, JobState, Limits, Rate, WorkerOptions, MAX_FETCH,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_with_concurrency_20000_over_9000_groups_strands_no_job() {
    let _serial = one_at_a_time().await;
    let server = server();
    let q = queue(&server.url);
    fill(&q, 9_000, 2).await;
    let w = q
        .work(
            WorkerOptions {
                concurrency: 20_000,
                ..drained()
            },
            |_job| async { Ok::<(), String>(()) },
        )
        .unwrap();
    let stats = tokio::time::timeout(Duration::from_secs(120), w.join())
        .await
        .expect("the worker did not drain the queue: jobs were stranded");
    assert_eq!(stats.completed, 18_000);
    assert_eq!(stats.fetch_errors, 0);
    let s = q.stats().await.unwrap();
    assert_eq!((s.ready, s.active, s.completed, s.lost), (0, 0, 18_000, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_of_more_than_one_fetch_holds_is_refused_and_takes_nothing() {
    let _serial = one_at_a_time().await;
    let server = server();
    let q = queue(&server.url);
    fill(&q, 10, 1).await;
    let err = q
        .lease_jobs(MAX_FETCH + 1, Duration::from_secs(30))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert!(err.message().contains("at most 1000"), "{err}");
    assert_eq!(q.stats().await.unwrap().ready, 10);
    let batch = WorkerOptions {
        batch_size: MAX_FETCH + 1,
        ..drained()
    };
    let err = q
        .work(batch, |_j| async { Ok::<(), String>(()) })
        .unwrap_err();
    assert!(err.message().contains("batch_size is 1001"), "{err}");
    let err = q
        .work_batches(
            WorkerOptions {
                concurrency: 5_000,
                ..drained()
            },
            tideq::BatchOptions {
                size: MAX_FETCH + 1,
                ..Default::default()
            },
            |_jobs| async { Ok::<(), tideq::BatchError>(()) },
        )
        .unwrap_err();
    assert!(err.message().contains("at most 1000"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fetches_over_9000_groups_each_lease_their_jobs_and_strand_none() {
    let _serial = one_at_a_time().await;
    let server = server();
    let q = queue(&server.url);
    fill(&q, 9_000, 2).await;
    let mut leased = 0;
    loop {
        let jobs = q
            .lease_jobs(MAX_FETCH, Duration::from_secs(60))
            .await
            .unwrap();
        if jobs.is_empty() {
            break;
        }
        leased += jobs.len();
    }
    assert_eq!(leased, 18_000);
    let s = q.stats().await.unwrap();
    assert_eq!((s.ready, s.active), (0, 18_000));
    assert_eq!(q.jobs(JobState::Ready, 0, 10).await.unwrap().len(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn control_settings_with_9000_groups_running_apply_whole_and_keep_the_running_counts() {
    let _serial = one_at_a_time().await;
    let server = server();
    let q = queue(&server.url);
    fill(&q, 9_000, 3).await;
    q.set_limits(Limits {
        group_concurrency: Some(1),
        ..Default::default()
    })
    .await
    .unwrap();
    // One job of each group running: every group is at its limit.
    let mut running = Vec::new();
    loop {
        let jobs = q
            .lease_jobs(MAX_FETCH, Duration::from_secs(120))
            .await
            .unwrap();
        if jobs.is_empty() {
            break;
        }
        running.extend(jobs);
    }
    assert_eq!(running.len(), 9_000);
    // Each setting, applied while 9,000 groups run jobs, succeeds whole, and none of them (nor a
    // group's read) is a call whose work grows with the groups: none over 10 ms in SLOWLOG.
    slowlog_from_now(&server, 10_000);
    q.pause().await.unwrap();
    q.resume().await.unwrap();
    q.pause_group("tenant-7").await.unwrap();
    q.resume_group("tenant-7").await.unwrap();
    q.set_group_limits(
        "tenant-8",
        GroupLimits {
            concurrency: Some(1),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    q.set_limits(Limits {
        group_concurrency: Some(1),
        ..Default::default()
    })
    .await
    .unwrap();
    // The running counts survived: a group at its limit of 1 still starts nothing.
    for g in ["tenant-0", "tenant-7", "tenant-8", "tenant-8999"] {
        assert_eq!(q.group(g).await.unwrap().active, 1, "{g}");
    }
    assert_eq!(slow_calls(&server, 10_000), Vec::<String>::new());
    assert!(q
        .lease_jobs(MAX_FETCH, Duration::from_secs(30))
        .await
        .unwrap()
        .is_empty());
}

/// Pauses the `n` groups `fill` made (tenant-0, ...), then enqueues a job in a group "free".
async fn pause_all_and_add_a_free_group(q: &tideq::Queue, n: usize) {
    let names: Vec<String> = (0..n).map(|g| format!("tenant-{g}")).collect();
    for part in names.chunks(2_000) {
        let pauses = part.iter().map(|g| q.pause_group(g));
        for r in futures_util::future::join_all(pauses).await {
            r.unwrap();
        }
    }
    q.enqueue(
        b"free",
        EnqueueOptions {
            group: Some("free".into()),
            ..Default::default()
        },
    )
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_beside_20000_paused_groups_starts_without_waiting_for_the_poll_interval() {
    let _serial = one_at_a_time().await;
    let server = server();
    let q = queue(&server.url);
    fill(&q, 20_000, 1).await;
    // Paused after they joined the rotation: each sits in it until a fetch meets it.
    pause_all_and_add_a_free_group(&q, 20_000).await;
    let ran = Arc::new(AtomicBool::new(false));
    let seen = ran.clone();
    let started = Instant::now();
    // An idle worker that polls once a minute: only the fetches' own wake-ups can reach the job.
    let w = q
        .work(
            WorkerOptions {
                concurrency: 1,
                poll_interval: Duration::from_secs(60),
                ..Default::default()
            },
            move |_job| {
                let seen = seen.clone();
                async move {
                    seen.store(true, Ordering::SeqCst);
                    Ok::<(), String>(())
                }
            },
        )
        .unwrap();
    while !ran.load(Ordering::SeqCst) {
        assert!(
            started.elapsed() < Duration::from_secs(50),
            "the unpaused group's job waited for the poll interval"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    w.shutdown().await;
    assert_eq!(
        q.group("tenant-5").await.unwrap().ready,
        1,
        "a paused group started a job"
    );
}

// Issue 40, item 1: after a worker drained 10,000 one-job groups, the rotation still named ~5,000
// of them (an emptied group leaves when its next turn finds nothing); each fetch dropped 200 and
// said nothing was pending, so a new tenant's job waited minutes for the poll interval.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_tenants_job_after_10000_drained_one_job_tenants_starts_without_waiting_for_the_poll_interval(
) {
    let _serial = one_at_a_time().await;
    let server = server();
    let q = queue(&server.url);
    fill(&q, 10_000, 1).await;
    let done = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = done.clone();
    // A worker that polls once a minute: only wake-ups and its fetches' own "look again" can
    // bring it to the new job.
    let w = q
        .work(
            WorkerOptions {
                concurrency: 10,
                poll_interval: Duration::from_secs(60),
                ..Default::default()
            },
            move |_job| {
                let seen = seen.clone();
                async move {
                    seen.fetch_add(1, Ordering::SeqCst);
                    Ok::<(), String>(())
                }
            },
        )
        .unwrap();
    let started = Instant::now();
    while done.load(Ordering::SeqCst) < 10_000 {
        assert!(
            started.elapsed() < Duration::from_secs(50),
            "the worker did not drain"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    slowlog_from_now(&server, 10_000);
    q.enqueue(
        b"new",
        EnqueueOptions {
            group: Some("new-tenant".into()),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let enqueued = Instant::now();
    while done.load(Ordering::SeqCst) < 10_001 {
        assert!(
            enqueued.elapsed() < Duration::from_secs(50),
            "the new tenant's job waited for the poll interval behind drained groups"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    println!(
        "the new tenant's job started {:?} after its enqueue",
        enqueued.elapsed()
    );
    w.shutdown().await;
    assert_eq!(slow_calls(&server, 10_000), Vec::<String>::new());
}

// Issue 40, item 2: `lease_jobs` returned nothing 243 times in a row while a ready job sat behind
// 50,000 paused groups: each call looked at 200 groups and a caller could not know to call again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lease_jobs_finds_the_ready_job_behind_50000_paused_groups_in_one_call_of_short_script_calls(
) {
    let _serial = one_at_a_time().await;
    let server = server();
    let q = queue(&server.url);
    fill(&q, 50_000, 1).await;
    pause_all_and_add_a_free_group(&q, 50_000).await;
    slowlog_from_now(&server, 10_000);
    let jobs = q.lease_jobs(5, Duration::from_secs(30)).await.unwrap();
    assert_eq!(jobs.len(), 1, "the free group's job, in the first call");
    assert_eq!(jobs[0].payload, b"free");
    assert_eq!(slow_calls(&server, 10_000), Vec::<String>::new());
    assert_eq!(
        q.group("tenant-7").await.unwrap().ready,
        1,
        "paused groups stay put"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_that_used_its_last_start_comes_back_when_its_rate_window_ends_not_when_a_job_ends()
{
    let _serial = one_at_a_time().await;
    let server = server();
    let q = queue(&server.url);
    fill(&q, 1, 3).await;
    q.set_group_limits(
        "tenant-0",
        GroupLimits {
            rate: Some(Rate::new(1, Duration::from_millis(300))),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let lease = Duration::from_secs(60);
    // Jobs that run far longer than the window: none of them ends during this test.
    assert_eq!(q.lease_jobs(10, lease).await.unwrap().len(), 1);
    assert_eq!(
        q.lease_jobs(10, lease).await.unwrap().len(),
        0,
        "the rate allows one start"
    );
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(
        q.lease_jobs(10, lease).await.unwrap().len(),
        1,
        "the window ended: the group may start its next job"
    );
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(q.lease_jobs(10, lease).await.unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queue_wide_limits_on_a_4_shard_queue_hold_across_the_shards_not_per_shard() {
    let _serial = one_at_a_time().await;
    let server = server();
    let client = tideq::Client::open(&server.url).unwrap();
    let q = tideq::Queue::sharded(&client, &common::unique("jq"), 4, Default::default()).unwrap();
    let jobs: Vec<(Vec<u8>, EnqueueOptions)> = (0..200)
        .map(|i| (format!("{i}").into_bytes(), EnqueueOptions::default()))
        .collect();
    q.enqueue_many(&jobs).await.unwrap();
    let lease_all = || async {
        let mut n = 0;
        loop {
            let got = q
                .lease_jobs(MAX_FETCH, Duration::from_secs(60))
                .await
                .unwrap();
            if got.is_empty() {
                return n;
            }
            n += got.len();
        }
    };
    q.set_limits(Limits {
        max_active: Some(5),
        ..Default::default()
    })
    .await
    .unwrap();
    assert_eq!(
        lease_all().await,
        5,
        "max_active 5 ran more than 5 jobs at once"
    );
    assert_eq!(q.limits().await.unwrap().max_active, Some(5));
    q.set_limits(Limits {
        rate: Some(Rate::new(8, Duration::from_secs(60))),
        ..Default::default()
    })
    .await
    .unwrap();
    assert_eq!(
        lease_all().await,
        8,
        "a rate of 8 a minute started more than 8"
    );
    assert_eq!(
        q.limits().await.unwrap().rate,
        Some(Rate::new(8, Duration::from_secs(60)))
    );
    // A limit below one per shard cannot be split: refused, and the limits in force stay.
    let err = q
        .set_limits(Limits {
            max_active: Some(3),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert!(
        err.message()
            .contains("max_active is 3 on a queue of 4 shards"),
        "{err}"
    );
    assert_eq!(
        q.limits().await.unwrap().rate,
        Some(Rate::new(8, Duration::from_secs(60)))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_id_or_dedup_key_over_groups_of_a_sharded_queue_is_refused_not_made_into_a_job_per_shard(
) {
    let _serial = one_at_a_time().await;
    let server = server();
    let client = tideq::Client::open(&server.url).unwrap();
    let q = tideq::Queue::sharded(&client, &common::unique("jq"), 3, Default::default()).unwrap();
    let grouped = |g: usize| EnqueueOptions {
        group: Some(format!("tenant-{g}")),
        ..Default::default()
    };
    let tries = [
        (
            "an id",
            EnqueueOptions {
                id: Some("same-id".into()),
                ..grouped(0)
            },
        ),
        (
            "a dedup key",
            EnqueueOptions {
                dedup: Some(tideq::Dedup::new("order-42")),
                ..grouped(1)
            },
        ),
        (
            "a debounce key",
            EnqueueOptions {
                debounce: Some(tideq::Debounce::new("order-42", Duration::from_secs(1))),
                ..grouped(2)
            },
        ),
    ];
    for (what, opts) in tries {
        let err = q.enqueue(b"x", opts.clone()).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{what}: {err}");
        assert!(
            err.message().contains(&format!("cannot take {what}")),
            "{err}"
        );
        // In a batch too, and nothing of the batch is written.
        let err = q
            .enqueue_many(&[(b"ok".to_vec(), grouped(5)), (b"x".to_vec(), opts)])
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    }
    assert_eq!(
        q.stats().await.unwrap().enqueued,
        0,
        "a refused enqueue wrote"
    );
    // Grouped jobs with generated ids, and ids or keys without a group, are fine.
    q.enqueue(b"x", grouped(0)).await.unwrap();
    for g in 0..6 {
        let opts = EnqueueOptions {
            id: Some("same-id".into()),
            ..Default::default()
        };
        assert_eq!(q.enqueue(b"x", opts).await.unwrap().created, g == 0);
    }
    // One shard: the combination is allowed, and the id is unique in the queue.
    let one = tideq::Queue::new(&client, &common::unique("jq"), Default::default()).unwrap();
    for g in 0..6 {
        let opts = EnqueueOptions {
            id: Some("same-id".into()),
            ..grouped(g)
        };
        assert_eq!(one.enqueue(b"x", opts).await.unwrap().created, g == 0);
    }
}
