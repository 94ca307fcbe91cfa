//! The event log: off by default; when on, readers see each job's events in order; a named
//! reader that stops and starts again misses nothing within the log's length, and one that fell
//! behind it is told. One test per promise, against a real redis-server.

mod common;

use std::time::Duration;

use common::jobs::*;
use common::{drain_noop, RedisServer};
use tideq::{EnqueueOptions, ErrorKind, Event, EventKind, EventsOptions, Job, QueueOptions};

async fn take(ev: &mut tideq::Events, n: usize) -> Vec<Event> {
    let mut out = Vec::new();
    while out.len() < n {
        match ev.next(Some(Duration::from_secs(5))).await.unwrap() {
            Some(e) => out.push(e),
            None => panic!("only {} of {n} events came: {out:?}", out.len()),
        }
    }
    out
}

fn kinds(v: &[Event]) -> Vec<(&str, &str)> {
    v.iter()
        .map(|e| (e.kind.as_str(), e.job_id.as_str()))
        .collect()
}

#[tokio::test]
async fn with_events_off_nothing_is_logged() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    q.enqueue(b"x", id("a")).await.unwrap();
    drain_noop(&q).await;
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg("*:events")
        .query(&mut server.conn())
        .unwrap();
    assert!(keys.is_empty());
}

#[tokio::test]
async fn a_reader_sees_each_jobs_events_in_order_with_results_errors_and_progress() {
    let server = RedisServer::start();
    let q = queue_with(
        &server.url,
        QueueOptions {
            backoff: tideq::Backoff::fixed(10),
            ..Default::default()
        },
    );
    q.set_events(Some(1000)).await.unwrap();
    let mut ev = q.events(EventsOptions::default()).await.unwrap();
    q.enqueue(b"ok", id("good")).await.unwrap();
    q.enqueue(
        b"bad",
        EnqueueOptions {
            max_attempts: Some(2),
            ..id("bad")
        },
    )
    .await
    .unwrap();
    q.enqueue(
        b"later",
        EnqueueOptions {
            delay: Some(Duration::from_secs(60)),
            ..id("gone")
        },
    )
    .await
    .unwrap();
    q.cancel("gone").await.unwrap();
    let w = q
        .work(drained(), |job: Job| async move {
            if job.id == "bad" {
                return Err("broken".to_string());
            }
            job.progress(b"50").await.map_err(|e| e.to_string())?;
            Ok(b"done".to_vec())
        })
        .unwrap();
    tokio::time::timeout(Duration::from_secs(20), w.join())
        .await
        .unwrap();
    let all = take(&mut ev, 13).await;
    let of = |id: &str| -> Vec<(&str, Option<&[u8]>)> {
        all.iter()
            .filter(|e| e.job_id == id)
            .map(|e| (e.kind.as_str(), e.data.as_deref()))
            .collect()
    };
    assert_eq!(
        of("good"),
        vec![
            ("enqueued", None),
            ("active", Some(&b"1"[..])),
            ("progress", Some(&b"50"[..])),
            ("completed", Some(&b"done"[..])),
        ]
    );
    assert_eq!(
        of("bad"),
        vec![
            ("enqueued", None),
            ("active", Some(&b"1"[..])),
            ("failed", Some(&b"broken"[..])),
            ("retried", Some(&b"10"[..])),
            ("active", Some(&b"2"[..])),
            ("failed", Some(&b"broken"[..])),
            ("dead", Some(&b"broken"[..])),
        ]
    );
    assert_eq!(of("gone"), vec![("enqueued", None), ("cancelled", None)]);
    assert!(all.iter().all(|e| e.at_ms > 0));
}

#[tokio::test]
async fn a_named_reader_stopped_and_started_again_misses_nothing_within_the_log() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    q.set_events(Some(10_000)).await.unwrap();
    let named = || EventsOptions {
        name: Some("mailer".into()),
        from_start: true,
    };
    for i in 0..5 {
        q.enqueue(b"x", id(&format!("a{i}"))).await.unwrap();
    }
    let mut ev = q.events(named()).await.unwrap();
    let first = take(&mut ev, 3).await;
    // The reader dies here (dropped without a goodbye); more happens meanwhile.
    drop(ev);
    for i in 0..5 {
        q.enqueue(b"x", id(&format!("b{i}"))).await.unwrap();
    }
    let mut ev = q.events(named()).await.unwrap();
    let mut rest = Vec::new();
    while let Some(e) = ev.next(Some(Duration::from_millis(300))).await.unwrap() {
        rest.push(e);
    }
    let mut seen: Vec<String> = first
        .iter()
        .chain(&rest)
        .map(|e| e.job_id.clone())
        .collect();
    seen.dedup();
    let want: Vec<String> = (0..5)
        .map(|i| format!("a{i}"))
        .chain((0..5).map(|i| format!("b{i}")))
        .collect();
    // At least once: what it had taken may come again, nothing is missing, order is kept.
    let mut got = seen.clone();
    got.sort();
    got.dedup();
    let mut w = want.clone();
    w.sort();
    assert_eq!(got, w, "{:?}", kinds(&rest));
    assert!(rest.iter().all(|e| e.kind != EventKind::Lagged));
    // Started a third time after reading everything: nothing again.
    ev.commit().await.unwrap();
    let mut ev = q.events(named()).await.unwrap();
    assert_eq!(
        ev.next(Some(Duration::from_millis(200))).await.unwrap(),
        None
    );
}

#[tokio::test]
async fn a_named_reader_that_fell_behind_the_logs_length_is_told_how_much_it_missed() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    q.set_events(Some(10)).await.unwrap();
    let named = || EventsOptions {
        name: Some("slow".into()),
        from_start: false,
    };
    q.enqueue(b"x", id("first")).await.unwrap();
    let mut ev = q.events(named()).await.unwrap();
    q.enqueue(b"x", id("second")).await.unwrap();
    assert_eq!(take(&mut ev, 1).await[0].job_id, "second");
    ev.commit().await.unwrap();
    drop(ev);
    // Far more entries than the log keeps.
    for i in 0..500 {
        q.enqueue(b"x", id(&format!("j{i}"))).await.unwrap();
    }
    let mut ev = q.events(named()).await.unwrap();
    let e = take(&mut ev, 1).await.remove(0);
    assert_eq!(e.kind, EventKind::Lagged);
    let text = String::from_utf8(e.data.unwrap()).unwrap();
    assert!(text.contains("were trimmed"), "{text}");
    // Then it goes on from the oldest entry kept, up to the last one.
    let next = take(&mut ev, 1).await.remove(0);
    assert_eq!(next.kind, EventKind::Enqueued);
    let mut last = next;
    while let Some(e) = ev.next(Some(Duration::from_millis(200))).await.unwrap() {
        last = e;
    }
    assert_eq!(last.job_id, "j499");
}

#[tokio::test]
async fn a_reader_from_now_on_sees_only_later_events_and_one_from_the_start_sees_all_kept() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    q.set_events(Some(1000)).await.unwrap();
    q.enqueue(b"x", id("before")).await.unwrap();
    let mut now = q.events(EventsOptions::default()).await.unwrap();
    let mut all = q
        .events(EventsOptions {
            from_start: true,
            ..Default::default()
        })
        .await
        .unwrap();
    q.enqueue(b"x", id("after")).await.unwrap();
    assert_eq!(kinds(&take(&mut now, 1).await), vec![("enqueued", "after")]);
    assert_eq!(
        kinds(&take(&mut all, 2).await),
        vec![("enqueued", "before"), ("enqueued", "after")]
    );
}

#[tokio::test]
async fn turning_events_off_stops_the_log_and_deletes_it_and_bad_settings_are_refused() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let e = q.set_events(Some(0)).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    let e = q
        .events(EventsOptions {
            name: Some(String::new()),
            ..Default::default()
        })
        .await
        .err()
        .unwrap();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    q.set_events(Some(100)).await.unwrap();
    q.enqueue(b"x", id("a")).await.unwrap();
    q.set_events(None).await.unwrap();
    q.enqueue(b"x", id("b")).await.unwrap();
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg("*:events")
        .query(&mut server.conn())
        .unwrap();
    assert!(keys.is_empty());
}

#[tokio::test]
async fn a_reader_of_a_sharded_queue_sees_the_events_of_every_shard() {
    let server = RedisServer::start();
    let client = tideq::Client::open(&server.url).unwrap();
    let q =
        tideq::Queue::sharded(&client, &common::unique("sh"), 3, QueueOptions::default()).unwrap();
    q.set_events(Some(1000)).await.unwrap();
    let mut ev = q.events(EventsOptions::default()).await.unwrap();
    for i in 0..12 {
        q.enqueue(b"x", id(&format!("j{i}"))).await.unwrap();
    }
    let mut ids: Vec<String> = take(&mut ev, 12)
        .await
        .into_iter()
        .map(|e| e.job_id)
        .collect();
    ids.sort();
    let mut want: Vec<String> = (0..12).map(|i| format!("j{i}")).collect();
    want.sort();
    assert_eq!(ids, want);
}

#[tokio::test]
async fn a_named_reader_that_commits_after_taking_part_of_a_read_gets_the_rest_again() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    q.set_events(Some(1000)).await.unwrap();
    let named = || EventsOptions {
        name: Some("partial".into()),
        from_start: true,
    };
    for i in 0..3 {
        q.enqueue(b"x", id(&format!("j{i}"))).await.unwrap();
    }
    let mut ev = q.events(named()).await.unwrap();
    assert_eq!(take(&mut ev, 1).await[0].job_id, "j0");
    ev.commit().await.unwrap();
    drop(ev);
    let mut ev = q.events(named()).await.unwrap();
    let rest: Vec<String> = take(&mut ev, 2)
        .await
        .into_iter()
        .map(|e| e.job_id)
        .collect();
    assert_eq!(rest, vec!["j1", "j2"]);
}

#[tokio::test]
async fn a_named_reader_from_now_on_that_dies_before_its_first_commit_misses_nothing() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    q.set_events(Some(1000)).await.unwrap();
    let named = || EventsOptions {
        name: Some("fresh".into()),
        from_start: false,
    };
    q.enqueue(b"x", id("before")).await.unwrap();
    let ev = q.events(named()).await.unwrap();
    // It dies at once, before reading or committing anything.
    drop(ev);
    q.enqueue(b"x", id("meanwhile")).await.unwrap();
    let mut ev = q.events(named()).await.unwrap();
    assert_eq!(take(&mut ev, 1).await[0].job_id, "meanwhile");
}

/// Runs `n` jobs on `q`, each returning `size` bytes, with a batch enqueue.
async fn run_jobs_returning(q: &tideq::Queue, n: usize, size: usize) {
    let items: Vec<(Vec<u8>, EnqueueOptions)> = (0..n)
        .map(|_| (b"x".to_vec(), Default::default()))
        .collect();
    for chunk in items.chunks(1000) {
        q.enqueue_many(chunk).await.unwrap();
    }
    let w = q
        .work(drained(), move |_job: Job| async move {
            Ok::<_, String>(vec![b'r'; size])
        })
        .unwrap();
    tokio::time::timeout(Duration::from_secs(60), w.join())
        .await
        .unwrap();
}

#[tokio::test]
async fn large_results_do_not_grow_the_event_log_past_its_entries_times_17_kib() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    q.set_events(Some(100)).await.unwrap();
    // 5,000 results of 16 KiB: copied into the log, 100 entries of batches would hold ~80 MB.
    run_jobs_returning(&q, 5000, 16384).await;
    let mut c = server.conn();
    let keys: Vec<String> = redis::cmd("KEYS").arg("*:events").query(&mut c).unwrap();
    assert_eq!(keys.len(), 1);
    let len: usize = redis::cmd("XLEN").arg(&keys[0]).query(&mut c).unwrap();
    let bytes: usize = redis::cmd("MEMORY")
        .arg("USAGE")
        .arg(&keys[0])
        .arg("SAMPLES")
        .arg(0)
        .query(&mut c)
        .unwrap();
    // MAXLEN ~ trims whole stream nodes (100 entries), so up to ~200 entries stay.
    assert!(len <= 200, "{len} entries");
    assert!(
        bytes <= len * 18 * 1024,
        "{bytes} bytes in {len} entries: more than 18 KiB an entry"
    );
    assert!(bytes < 4 << 20, "the log holds {bytes} bytes");
}

#[tokio::test]
async fn a_large_result_kept_with_its_job_reaches_readers_in_full_and_one_not_kept_gives_its_size()
{
    let server = RedisServer::start();
    let kept = queue(&server.url);
    let not_kept = queue_with(
        &server.url,
        QueueOptions {
            keep_completed: 0,
            ..Default::default()
        },
    );
    for q in [&kept, &not_kept] {
        q.set_events(Some(1000)).await.unwrap();
    }
    let from_start = || EventsOptions {
        name: None,
        from_start: true,
    };
    run_jobs_returning(&kept, 50, 5000).await;
    run_jobs_returning(&not_kept, 50, 5000).await;
    // A small result is copied into the log either way.
    run_jobs_returning(&not_kept, 1, 1024).await;

    let mut ev = kept.events(from_start()).await.unwrap();
    let done: Vec<Event> = take(&mut ev, 150)
        .await
        .into_iter()
        .filter(|e| e.kind == EventKind::Completed)
        .collect();
    assert_eq!(done.len(), 50);
    for e in &done {
        assert_eq!(e.data.as_deref(), Some(&[b'r'; 5000][..]), "{}", e.job_id);
        assert_eq!(e.data_omitted_bytes, None);
    }

    let mut ev = not_kept.events(from_start()).await.unwrap();
    let done: Vec<Event> = take(&mut ev, 153)
        .await
        .into_iter()
        .filter(|e| e.kind == EventKind::Completed)
        .collect();
    assert_eq!(done.len(), 51);
    for e in &done[..50] {
        assert_eq!(e.data, None, "{}", e.job_id);
        assert_eq!(e.data_omitted_bytes, Some(5000));
    }
    assert_eq!(done[50].data.as_deref(), Some(&[b'r'; 1024][..]));
    assert_eq!(done[50].data_omitted_bytes, None);
}
