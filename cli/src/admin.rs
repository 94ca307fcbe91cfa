//! Reading and repairing a job queue (the core's `admin` role): `stats` (once or `--watch`),
//! `jobs` (a page of one state), `job` (one job, and a flow parent's children), `search` (jobs
//! by task or group), one job's actions (`cancel`, `run-now`, `retry`, `delete`), `dead` (list,
//! requeue, purge).

use std::io::{IsTerminal, Write};
use std::time::Duration;

use tideq::{ErrorKind, JobFilter, JobState, JobStats, Queue, QueueKind};

use crate::args::{Conn, Dead, Page};
use crate::connect::{client, job_queue};
use crate::exit::{not_found, print, print_page, stdout_closed, write_out, Failure, Outcome};
use crate::render::{self, Payload};

/// Children `tideq job` shows of a flow parent (the first ones, and how many there are).
const CHILDREN_SHOWN: usize = 20;

/// `tideq stats QUEUE [--watch [SECS]]`.
pub(crate) async fn stats(c: &Conn, queue: &str, watch: Option<f64>, json: bool) -> Outcome {
    let q = job_queue(c, queue).await?;
    match watch {
        None => {
            let stats = q.stats().await?;
            known(c, &q, &stats).await?;
            print(&render::stats(&stats, json));
        }
        Some(secs) => watch_stats(&q, secs, json).await?,
    }
    Ok(())
}

/// Whether this job queue was ever used: a queue nothing was enqueued to has no stats, and the
/// command is most likely about another (a typo, a missing `--shards` for a queue that did not
/// record its count, `--prefix` or `tideq capped`): say so and exit 3 rather than print zeros.
/// Asks Redis only when `stats` is all zeros: the queue's recorded shard count (a queue that
/// recorded one is known: it has schedules, say, or a worker and nothing enqueued yet), then a
/// SCAN.
async fn known(c: &Conn, q: &Queue, s: &JobStats) -> Outcome {
    let counted = [
        s.enqueued,
        s.ready,
        s.delayed,
        s.active,
        s.dead,
        s.completed,
    ];
    if s.paused || counted.iter().any(|&n| n > 0) {
        return Ok(());
    }
    let client = client(c)?;
    if client
        .recorded_shards(QueueKind::Jobs, q.name())
        .await?
        .is_some()
    {
        return Ok(());
    }
    let found = client.queues().await?;
    let named = |kind| found.iter().find(|r| r.kind == kind && r.name == q.name());
    let name = q.name();
    match (named(QueueKind::Jobs), named(QueueKind::Capped)) {
        (Some(r), _) if r.shards == q.shard_count() => Ok(()),
        (Some(r), _) => Err(Failure::NotFound(format!(
            "job queue {name:?} has {} shard(s), not {}: add --shards {}",
            r.shards,
            q.shard_count(),
            r.shards
        ))),
        (None, Some(_)) => Err(Failure::NotFound(format!(
            "{name:?} is a capped queue: see `tideq capped {name} stats`"
        ))),
        (None, None) => {
            let names: Vec<&str> = found.iter().map(|r| r.name.as_str()).collect();
            Err(Failure::NotFound(format!(
                "no job queue {name:?} here: nothing was ever enqueued to it{} (`tideq queues` \
                 lists the queues)",
                crate::connect::did_you_mean(name, &names)
            )))
        }
    }
}

async fn watch_stats(q: &Queue, secs: f64, json: bool) -> Outcome {
    let every = Duration::try_from_secs_f64(secs)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| Failure::Usage(format!("--watch takes seconds > 0, not {secs}")))?;
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    loop {
        let stats = q.stats().await?;
        // On a terminal, clear the screen and go home, then reprint; into a file or a pipe, no
        // escape codes: one block after another.
        if std::io::stdout().is_terminal() {
            write_out(format_args!("\x1b[2J\x1b[H"));
        }
        if !json {
            print(&format!("{}  (every {secs} s; Ctrl-C stops)\n", q.name()));
        }
        print(&render::stats(&stats, json));
        if stdout_closed() {
            return Ok(());
        }
        tokio::select! {
            _ = &mut ctrl_c => return Ok(()),
            _ = tokio::time::sleep(every) => {}
        }
    }
}

/// `tideq jobs QUEUE STATE`.
pub(crate) async fn jobs(c: &Conn, queue: &str, state: &str, page: Page, json: bool) -> Outcome {
    let state = JobState::parse(state)?;
    let q = job_queue(c, queue).await?;
    print_jobs(c, &q, state, page, json).await
}

/// Prints a page of `state`'s jobs (see [`Page`]).
async fn print_jobs(c: &Conn, q: &Queue, state: JobState, page: Page, json: bool) -> Outcome {
    match page.offset {
        Some(offset) => {
            let jobs = q.jobs(state, offset, page.limit).await?;
            if jobs.is_empty() {
                known(c, q, &q.stats().await?).await?;
            }
            print(&render::job_list(&jobs, json));
        }
        None => {
            let p = q
                .jobs_page(state, page.cursor.as_deref(), page.limit)
                .await?;
            if p.jobs.is_empty() {
                known(c, q, &q.stats().await?).await?;
            }
            print_page(&render::job_page(&p, json), &p.cursor, json);
        }
    }
    Ok(())
}

/// `tideq job QUEUE ID`: the job, and the first of its children when it is a flow's parent.
pub(crate) async fn job(
    c: &Conn,
    queue: &str,
    id: &str,
    payload: Option<Payload>,
    json: bool,
) -> Outcome {
    let q = job_queue(c, queue).await?;
    let (info, kids) = tokio::try_join!(q.get(id), q.children(id, 0, CHILDREN_SHOWN))?;
    match info {
        Some(info) => print(&render::job_and_children(&info, &kids, payload, json)),
        None => return Err(not_found(queue, id)),
    }
    Ok(())
}

/// `tideq cancel QUEUE ID`.
pub(crate) async fn cancel(c: &Conn, queue: &str, id: &str) -> Outcome {
    let q = job_queue(c, queue).await?;
    job_action(queue, id, q.cancel(id).await)?;
    print(&format!("cancelled {id}"));
    Ok(())
}

/// `tideq run-now QUEUE ID`.
pub(crate) async fn run_now(c: &Conn, queue: &str, id: &str) -> Outcome {
    let q = job_queue(c, queue).await?;
    job_action(queue, id, q.promote(id).await)?;
    print(&format!("ready now: {id}"));
    Ok(())
}

/// `tideq retry QUEUE ID`: `dead requeue`, told apart from an unknown id when the job is not
/// dead.
pub(crate) async fn retry(c: &Conn, queue: &str, id: &str) -> Outcome {
    let q = job_queue(c, queue).await?;
    match q.requeue(id).await {
        Err(e) if e.kind() == ErrorKind::JobNotFound => {
            return Err(match q.get(id).await? {
                Some(j) => Failure::Tideq(tideq::Error::new(
                    ErrorKind::JobWrongState,
                    format!(
                        "job {id:?} is {}; only a dead job can be retried",
                        j.state.as_str()
                    ),
                )),
                None => not_found(queue, id),
            })
        }
        other => other?,
    }
    print(&format!("requeued {id}"));
    Ok(())
}

/// `tideq delete QUEUE ID [--yes]`.
pub(crate) async fn delete(c: &Conn, queue: &str, id: &str, yes: bool) -> Outcome {
    let q = job_queue(c, queue).await?;
    confirm(
        yes,
        &format!("delete job {id:?} of {:?} and all kept for it?", q.name()),
    )?;
    job_action(queue, id, q.delete(id).await)?;
    print(&format!("deleted {id}"));
    Ok(())
}

/// A one-job action's outcome: an unknown id exits 3 with the usual message.
fn job_action(queue: &str, id: &str, r: tideq::Result<()>) -> Outcome {
    match r {
        Err(e) if e.kind() == ErrorKind::JobNotFound => Err(not_found(queue, id)),
        other => Ok(other?),
    }
}

/// The filter of `tideq search` (an unknown state is bad input).
pub(crate) fn filter(
    task: Option<String>,
    group: Option<String>,
    state: Option<String>,
    contains: Option<String>,
) -> Result<JobFilter, Failure> {
    let state = state.as_deref().map(JobState::parse).transpose()?;
    Ok(JobFilter {
        state,
        task,
        group,
        contains,
    })
}

/// `tideq search QUEUE [--task T] [--group G] [--state S] [--cursor C] [--limit N]`.
pub(crate) async fn search(
    c: &Conn,
    queue: &str,
    filter: &JobFilter,
    cursor: Option<String>,
    limit: usize,
    json: bool,
) -> Outcome {
    let q = job_queue(c, queue).await?;
    let page = q.find_jobs(filter, cursor.as_deref(), limit).await?;
    if page.jobs.is_empty() && page.cursor.is_none() && cursor.is_none() {
        known(c, &q, &q.stats().await?).await?;
    }
    print_page(&render::search_page(&page, json), &page.cursor, json);
    Ok(())
}

/// `tideq dead QUEUE ACTION`.
pub(crate) async fn dead(c: &Conn, queue: &str, action: Dead) -> Outcome {
    let q = job_queue(c, queue).await?;
    let q = &q;
    match action {
        Dead::List { page, json } => print_jobs(c, q, JobState::Dead, page, json).await?,
        Dead::Requeue { id } => {
            match q.requeue(&id).await {
                Err(e) if e.kind() == ErrorKind::JobNotFound => {
                    return Err(Failure::NotFound(format!(
                        "no dead job {id:?} in queue {:?}",
                        q.name()
                    )))
                }
                other => other?,
            }
            print(&format!("requeued {id}"));
        }
        Dead::RequeueAll { yes } => {
            let dead = q.stats().await?.dead;
            confirm(
                yes,
                &format!("requeue all {dead} dead jobs of {:?}?", q.name()),
            )?;
            print(&format!("requeued {}", q.requeue_all().await?));
        }
        Dead::Purge { yes } => {
            let dead = q.stats().await?.dead;
            confirm(
                yes,
                &format!("delete all {dead} dead jobs of {:?} for good?", q.name()),
            )?;
            print(&format!("purged {}", q.purge().await?));
        }
    }
    Ok(())
}

/// Asks on a terminal (`dead requeue-all`, `dead purge`, `delete`); refuses (exit 2) when stdin
/// is not one and `--yes` was not given.
pub(crate) fn confirm(yes: bool, question: &str) -> Outcome {
    if yes {
        return Ok(());
    }
    if !std::io::stdin().is_terminal() {
        return Err(Failure::Usage(
            "refusing to go on without confirmation: stdin is not a terminal; pass --yes"
                .to_string(),
        ));
    }
    eprint!("{question} [y/N] ");
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    std::io::stdin()
        .read_line(&mut answer)
        .map_err(|e| Failure::Usage(format!("cannot read the answer: {e}")))?;
    match answer.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => Ok(()),
        _ => Err(Failure::Usage("not confirmed; nothing changed".to_string())),
    }
}
