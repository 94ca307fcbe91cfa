//! A job queue's per-task metrics (the core's `Queue::task_metrics`): `tideq tasks`.

use std::time::Duration;

use crate::args::Conn;
use crate::connect::{existing_job_queue, job_queue};
use crate::exit::{print, Outcome};
use crate::render;

/// `tideq tasks QUEUE`: per task, completed, failed, dead-lettered and run times over the window.
pub(crate) async fn tasks(c: &Conn, queue: &str, window: Duration, json: bool) -> Outcome {
    // The window is checked first (a usage error), then the queue's name (a typo).
    let m = job_queue(c, queue)
        .await?
        .task_metrics(Some(window))
        .await?;
    existing_job_queue(c, queue).await?;
    print(&render::task_metrics(&m, json));
    Ok(())
}
