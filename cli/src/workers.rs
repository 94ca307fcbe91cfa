//! A job queue's live workers (the core's worker registry): `tideq workers`.

use crate::args::Conn;
use crate::connect::existing_job_queue;
use crate::exit::{print, Outcome};
use crate::render;

/// `tideq workers QUEUE`: the workers seen in the last 45 s, in the order they started.
pub(crate) async fn workers(c: &Conn, queue: &str, json: bool) -> Outcome {
    let q = existing_job_queue(c, queue).await?;
    print(&render::workers(&q.workers().await?, json));
    Ok(())
}
