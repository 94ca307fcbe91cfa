//! A job queue's schedules (the core's `schedule` role): `tideq schedules`.

use crate::args::Conn;
use crate::connect::existing_job_queue;
use crate::exit::{print, Outcome};
use crate::render;

/// `tideq schedules QUEUE`: every schedule with its next slots.
pub(crate) async fn schedules(c: &Conn, queue: &str, json: bool) -> Outcome {
    let q = existing_job_queue(c, queue).await?;
    print(&render::schedules(&q.schedules().await?, json));
    Ok(())
}
