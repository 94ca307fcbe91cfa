//! A job queue's schedules (the core's `schedule` role): `tideq schedules`, and the actions on
//! one schedule (`tideq schedules QUEUE run|pause|resume|remove NAME`).

use serde_json::json;

use crate::args::{Conn, ScheduleAction};
use crate::connect::existing_job_queue;
use crate::exit::{print, Failure, Outcome};
use crate::render;

/// `tideq schedules QUEUE`: every schedule with its next slots.
pub(crate) async fn schedules(c: &Conn, queue: &str, json: bool) -> Outcome {
    let q = existing_job_queue(c, queue).await?;
    print(&render::schedules(&q.schedules().await?, json));
    Ok(())
}

/// `tideq schedules QUEUE run|pause|resume|remove NAME`. An unknown name exits 3 (not found),
/// nothing written.
pub(crate) async fn action(c: &Conn, queue: &str, action: ScheduleAction, json: bool) -> Outcome {
    let q = existing_job_queue(c, queue).await?;
    let unknown =
        |name: &str| Failure::NotFound(format!("queue {queue:?} has no schedule named {name:?}"));
    // The core refuses an unknown name as bad input; here it is "not found", as for a job.
    let found = |r: tideq::Result<bool>, name: &str| match r {
        Err(e) if e.message().contains("has no schedule named") => Err(unknown(name)),
        other => other.map_err(Failure::from),
    };
    let (name, done, job) = match &action {
        ScheduleAction::Run { name } => {
            let id = q.run_schedule(name).await.map_err(|e| {
                if e.message().contains("has no schedule named") {
                    unknown(name)
                } else {
                    e.into()
                }
            })?;
            (name, "ran", Some(id))
        }
        ScheduleAction::Pause { name } => {
            let changed = found(q.pause_schedule(name).await, name)?;
            (
                name,
                if changed {
                    "paused"
                } else {
                    "was paused already:"
                },
                None,
            )
        }
        ScheduleAction::Resume { name } => {
            let changed = found(q.resume_schedule(name).await, name)?;
            (
                name,
                if changed {
                    "resumed"
                } else {
                    "was not paused:"
                },
                None,
            )
        }
        ScheduleAction::Remove { name } => {
            if !q.remove_schedule(name).await? {
                return Err(unknown(name));
            }
            (name, "removed", None)
        }
    };
    if json {
        print(
            &json!({ "schedule": name, "done": done.trim_end_matches(':'), "job": job })
                .to_string(),
        );
    } else {
        match job {
            Some(id) => print(&format!("ran schedule {name:?} of {queue:?}: job {id}")),
            None => print(&format!("{done} schedule {name:?} of {queue:?}")),
        }
    }
    Ok(())
}
