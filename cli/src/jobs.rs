//! Producing jobs (the core's `jobs` role): `tideq enqueue`, one job as text, JSON or a task.

use std::time::Duration;

use tideq::{EnqueueOptions, PayloadFormat};

use crate::args::{Conn, NewJob};
use crate::connect::job_queue;
use crate::exit::{print, Failure, Outcome};
use crate::render;

/// `tideq enqueue QUEUE [PAYLOAD | --data JSON] [--task NAME] ...`.
pub(crate) async fn enqueue(c: &Conn, queue: &str, job: NewJob, json: bool) -> Outcome {
    let NewJob {
        payload,
        task,
        data,
        id,
        delay,
        priority,
        group,
    } = job;
    let delay = match delay {
        None => None,
        Some(s) => Some(Duration::try_from_secs_f64(s).map_err(|_| {
            Failure::Usage(format!("--delay must be a number of seconds >= 0, not {s}"))
        })?),
    };
    let opts = EnqueueOptions {
        id,
        delay,
        priority,
        group,
        ..Default::default()
    };
    let q = job_queue(c, queue).await?;
    let done = match (data, task) {
        (Some(text), task) => {
            let value: serde_json::Value = serde_json::from_str(&text)
                .map_err(|e| Failure::Usage(format!("--data is not JSON: {e}")))?;
            match task {
                Some(name) => q.enqueue_task(&name, &value, opts).await?,
                None => {
                    let opts = EnqueueOptions {
                        format: Some(PayloadFormat::Json),
                        ..opts
                    };
                    q.enqueue(value.to_string(), opts).await?
                }
            }
        }
        (None, task) => {
            let opts = EnqueueOptions { task, ..opts };
            q.enqueue(payload.unwrap_or_default(), opts).await?
        }
    };
    print(&render::enqueued(&done, json));
    Ok(())
}
