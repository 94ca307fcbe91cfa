use super::*;

fn at(s: &str) -> u64 {
    DateTime::parse_from_rfc3339(s).unwrap().timestamp_millis() as u64
}

fn paris(pattern: &str) -> Slots {
    Slots::of(&Every::cron_in(pattern, "Europe/Paris")).unwrap()
}

#[test]
fn a_cron_pattern_that_never_occurs_is_refused_not_kept_silent() {
    for pattern in ["0 0 30 2 *", "0 0 31 4 *", "0 0 31 2,4,6,9,11 *"] {
        let err = Slots::of(&Every::cron(pattern)).err().expect(pattern);
        assert_eq!(err.kind(), crate::ErrorKind::InvalidArgument);
        assert!(err.message().contains("never occurs"), "{err}");
        assert!(err.message().contains(pattern), "{err}");
    }
    assert!(
        Slots::of(&Every::cron("0 0 29 2 *")).is_ok(),
        "Feb 29 occurs in leap years"
    );
}

#[test]
fn a_cron_slot_follows_its_time_zone_in_winter_and_summer() {
    let s = paris("0 9 * * *");
    assert_eq!(
        s.next_after(at("2026-01-15T00:00:00Z")),
        Some(at("2026-01-15T08:00:00Z"))
    );
    assert_eq!(
        s.next_after(at("2026-07-15T00:00:00Z")),
        Some(at("2026-07-15T07:00:00Z"))
    );
}

#[test]
fn a_local_time_repeated_when_dst_ends_runs_once() {
    // 2026-10-25: Paris goes from 03:00 back to 02:00; 02:30 happens twice.
    let s = paris("30 2 * * *");
    let first = s.next_after(at("2026-10-24T12:00:00Z")).unwrap();
    let second = s.next_after(first).unwrap();
    assert!(first >= at("2026-10-25T00:30:00Z") && first <= at("2026-10-25T01:30:00Z"));
    assert!(second >= at("2026-10-26T00:00:00Z"), "{second}");
}

#[test]
fn a_local_time_skipped_when_dst_starts_still_runs_that_day_or_the_next_never_twice() {
    // 2026-03-29: Paris goes from 02:00 to 03:00; 02:30 does not exist.
    let s = paris("30 2 * * *");
    let first = s.next_after(at("2026-03-28T12:00:00Z")).unwrap();
    let second = s.next_after(first).unwrap();
    assert!(first > at("2026-03-28T12:00:00Z") && first < at("2026-03-30T12:00:00Z"));
    assert!(second - first >= 23 * 3_600_000, "{first} {second}");
}

// Issue 40, item 19: when a pass over the due schedules took longer than a short interval
// (a loaded machine), the next slot was due again at the re-read, taken for one that could
// not be fired, and the scheduler slept a second: a 10 ms schedule missed its slots.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slot_that_came_due_while_firing_is_fired_at_once_not_a_second_later() {
    let server = tideq_testing::RedisServer::start();
    let client = crate::Client::open(&server.url).unwrap();
    let q = Queue::new(&client, "sched-pass", Default::default()).unwrap();
    // 300 schedules every 10 ms: one pass of firing them takes longer than 10 ms.
    for i in 0..300 {
        q.upsert_schedule(
            &format!("s{i}"),
            Every::interval(Duration::from_millis(10)),
            b"x".as_slice(),
            Default::default(),
        )
        .await
        .unwrap();
    }
    tokio::time::sleep(Duration::from_millis(30)).await;
    let started = std::time::Instant::now();
    let wait = q.fire_due_schedules().await.unwrap().unwrap();
    assert!(
        started.elapsed() > Duration::from_millis(10),
        "the passes were slower than the interval"
    );
    assert!(
        wait < Duration::from_millis(100),
        "slots due since the last pass wait {wait:?}"
    );
}

#[test]
fn interval_slots_are_the_multiples_of_the_interval() {
    let s = Slots::of(&Every::interval(Duration::from_secs(5))).unwrap();
    assert_eq!(s.next_after(12_000), Some(15_000));
    assert_eq!(s.next_after(15_000), Some(20_000));
    assert_eq!(s.latest_until(19_999), Some(15_000));
}
