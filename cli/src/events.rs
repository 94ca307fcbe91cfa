//! A job queue's event log (the core's `events` role): `tideq events`, followed until Ctrl-C
//! or `--idle`.

use std::time::Duration;

use crate::args::Conn;
use crate::connect::existing_job_queue;
use crate::exit::{print, stdout_closed, Failure, Outcome};
use crate::render;

/// `tideq events QUEUE [--name N] [--from-start] [--idle SECS]`.
pub(crate) async fn events(
    c: &Conn,
    queue: &str,
    name: Option<String>,
    from_start: bool,
    idle: Option<f64>,
    json: bool,
) -> Outcome {
    let idle = match idle {
        None => None,
        Some(s) => Some(Duration::try_from_secs_f64(s).map_err(|_| {
            Failure::Usage(format!("--idle must be a number of seconds >= 0, not {s}"))
        })?),
    };
    let q = existing_job_queue(c, queue).await?;
    if q.events_log_len().await?.is_none() {
        return Err(Failure::Usage(format!(
            "the event log of {queue:?} is off, so no event would ever come: the application \
             turns it on (`set_events`, `setEvents` in Node)"
        )));
    }
    let mut ev = q.events(tideq::EventsOptions { name, from_start }).await?;
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    loop {
        tokio::select! {
            next = ev.next(idle) => match next? {
                Some(e) => {
                    print(&render::event(&e, json));
                    if stdout_closed() {
                        break;
                    }
                }
                None => break,
            },
            _ = &mut ctrl_c => break,
        }
    }
    ev.commit().await?;
    Ok(())
}
