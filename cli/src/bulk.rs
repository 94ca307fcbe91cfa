//! Bulk actions (the core's `bulk` and `obliterate`): `retry`, `delete` and `cancel` of several
//! ids, `search ... --retry|--delete|--cancel`, `promote --all`, `clean`, `obliterate`. Every
//! command that changes many jobs asks on a terminal unless `--yes`, and refuses without it when
//! stdin is not one; an unknown queue exits 3 with nothing written.

use std::time::Duration;

use tideq::{BulkAction, BulkItem, BulkOutcome, JobFilter, JobState, Queue};

use crate::admin::confirm;
use crate::args::{Conn, SearchAction};
use crate::connect::existing_job_queue;
use crate::exit::{print, Failure, Outcome};

/// `tideq retry QUEUE ID...`: one id as before (`requeued ID`), several in one call.
pub(crate) async fn retry(c: &Conn, queue: &str, ids: Vec<String>) -> Outcome {
    if let [id] = ids.as_slice() {
        return crate::admin::retry(c, queue, id).await;
    }
    let q = existing_job_queue(c, queue).await?;
    report(&q.retry_jobs(&ids).await?, "requeued")
}

/// `tideq delete QUEUE ID... [--yes]`.
pub(crate) async fn delete(c: &Conn, queue: &str, ids: Vec<String>, yes: bool) -> Outcome {
    if let [id] = ids.as_slice() {
        return crate::admin::delete(c, queue, id, yes).await;
    }
    check_count(&ids)?;
    let q = existing_job_queue(c, queue).await?;
    confirm(
        yes,
        &format!(
            "delete {} jobs of {:?} and all kept for them?",
            ids.len(),
            q.name()
        ),
    )?;
    report(&q.delete_jobs(&ids).await?, "deleted")
}

/// `tideq cancel QUEUE ID...`.
pub(crate) async fn cancel(c: &Conn, queue: &str, ids: Vec<String>) -> Outcome {
    if let [id] = ids.as_slice() {
        return crate::admin::cancel(c, queue, id).await;
    }
    let q = existing_job_queue(c, queue).await?;
    report(&q.cancel_jobs(&ids).await?, "cancelled")
}

/// More ids than one call takes is bad input, found before asking anything.
fn check_count(ids: &[String]) -> Outcome {
    if ids.len() > tideq::MAX_BULK_IDS {
        return Err(Failure::Usage(format!(
            "at most {} ids at a time, got {}",
            tideq::MAX_BULK_IDS,
            ids.len()
        )));
    }
    Ok(())
}

/// One line per id; exits 0 when every id was done, else 3 if one was unknown, else 2.
fn report(items: &[BulkItem], did: &str) -> Outcome {
    let (mut unknown, mut wrong) = (0, 0);
    for i in items {
        match i.outcome {
            BulkOutcome::Done => print(&format!("{did} {}", i.id)),
            BulkOutcome::WrongState => {
                wrong += 1;
                let state = i.state.map_or("in another state", |s| s.as_str());
                print(&format!("skipped {}: it is {state}", i.id));
            }
            BulkOutcome::Unknown => {
                unknown += 1;
                print(&format!("skipped {}: no such job", i.id));
            }
        }
    }
    let done = items.len() - unknown - wrong;
    let summary = format!(
        "{done} of {} {did}; {wrong} in another state, {unknown} unknown",
        items.len()
    );
    match (unknown, wrong) {
        (0, 0) => Ok(()),
        (0, _) => Err(Failure::Usage(summary)),
        _ => Err(Failure::NotFound(summary)),
    }
}

/// The action `tideq search` was asked to take, if any.
pub(crate) fn search_action(a: &SearchAction) -> Option<BulkAction> {
    if a.retry {
        Some(BulkAction::Retry)
    } else if a.delete {
        Some(BulkAction::Delete)
    } else if a.cancel {
        Some(BulkAction::Cancel)
    } else {
        None
    }
}

/// `tideq search QUEUE [filter] --retry|--delete|--cancel [--yes]`: every page of the search
/// acted on (from `--cursor` if given), a line per page on stderr, the totals on stdout.
pub(crate) async fn found(
    c: &Conn,
    queue: &str,
    action: BulkAction,
    filter: &JobFilter,
    cursor: Option<String>,
    yes: bool,
) -> Outcome {
    let q = existing_job_queue(c, queue).await?;
    // A filter the action cannot take is refused before asking.
    let states = action.states();
    if let Some(s) = filter.state.filter(|s| !states.contains(s)) {
        return Err(Failure::Usage(format!(
            "--{} applies to {} jobs, not to {} ones",
            action.as_str(),
            states
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(" or "),
            s.as_str()
        )));
    }
    confirm(
        yes,
        &format!(
            "{} every job of {:?} this search finds?",
            action.as_str(),
            q.name()
        ),
    )?;
    let (mut done, mut skipped, mut cursor, mut pages) = (0u64, 0u64, cursor, 0u64);
    loop {
        let page = q.bulk_found(action, filter, cursor.as_deref()).await?;
        done += page.done;
        skipped += page.skipped;
        pages += 1;
        eprintln!(
            "page {pages}: {} {}, {} skipped",
            page.done,
            past(action),
            page.skipped
        );
        match page.cursor {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    print(&format!("{} {done}, skipped {skipped}", past(action)));
    Ok(())
}

fn past(action: BulkAction) -> &'static str {
    match action {
        BulkAction::Retry => "requeued",
        BulkAction::Delete => "deleted",
        BulkAction::Cancel => "cancelled",
        BulkAction::Promote => "promoted",
    }
}

/// `tideq promote QUEUE --all [--yes]`.
pub(crate) async fn promote_all(c: &Conn, queue: &str, yes: bool) -> Outcome {
    let q = existing_job_queue(c, queue).await?;
    let delayed = q.stats().await?.delayed;
    confirm(
        yes,
        &format!("run all {delayed} delayed jobs of {:?} now?", q.name()),
    )?;
    print(&format!("promoted {}", q.promote_all().await?));
    Ok(())
}

/// `tideq clean QUEUE completed|dead --older-than AGE [--yes]`.
pub(crate) async fn clean(
    c: &Conn,
    queue: &str,
    state: &str,
    older_than: Duration,
    yes: bool,
) -> Outcome {
    let state = match state {
        "completed" => JobState::Completed,
        "dead" => JobState::Dead,
        other => {
            return Err(Failure::Usage(format!(
                "clean deletes completed or dead jobs, not {other:?}"
            )))
        }
    };
    let q = existing_job_queue(c, queue).await?;
    confirm(
        yes,
        &format!(
            "delete the {} jobs of {:?} that finished more than {} s ago?",
            state.as_str(),
            q.name(),
            older_than.as_secs()
        ),
    )?;
    print(&format!("deleted {}", q.clean(state, older_than).await?));
    Ok(())
}

/// `tideq obliterate QUEUE [--force] [--yes]`.
pub(crate) async fn obliterate(c: &Conn, queue: &str, force: bool, yes: bool) -> Outcome {
    let q: Queue = existing_job_queue(c, queue).await?;
    confirm(
        yes,
        &format!(
            "delete queue {:?} for good: every job, schedule, setting and its history?",
            q.name()
        ),
    )?;
    print(&format!(
        "obliterated {:?}: {} keys deleted",
        q.name(),
        q.obliterate(force).await?
    ));
    Ok(())
}

/// An age: a whole number and a unit, `30s`, `15m`, `1h`, `7d`; `0` alone too.
pub(crate) fn age(s: &str) -> Result<Duration, String> {
    let bad = || format!("{s:?} is not an age: a whole number and s, m, h or d (30s, 15m, 1h, 7d)");
    if s == "0" {
        return Ok(Duration::ZERO);
    }
    let (n, unit) = s.split_at(s.len().saturating_sub(1));
    let n: u64 = n.parse().map_err(|_| bad())?;
    let secs = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return Err(bad()),
    };
    n.checked_mul(secs)
        .filter(|&t| t <= 100 * 365 * 86_400)
        .map(Duration::from_secs)
        .ok_or_else(bad)
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_age_is_a_number_and_a_unit() {
        use std::time::Duration;
        assert_eq!(super::age("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(super::age("2h"), Ok(Duration::from_secs(7200)));
        assert_eq!(super::age("0"), Ok(Duration::ZERO));
        for bad in ["", "h", "1", "1x", "-1h", "1.5h", "99999999999999d"] {
            assert!(super::age(bad).is_err(), "{bad}");
        }
    }
}
