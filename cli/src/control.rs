//! Queue control of a job queue (the core's `control` role): `pause`/`resume` (the queue or one
//! group), `limits`, `group`, `groups`.

use crate::args::Conn;
use crate::connect::existing_job_queue;
use crate::exit::{print, print_page, Outcome};
use crate::render;

/// `tideq pause QUEUE [--group G]`.
pub(crate) async fn pause(c: &Conn, queue: &str, group: Option<String>) -> Outcome {
    let q = existing_job_queue(c, queue).await?;
    match &group {
        Some(g) => q.pause_group(g).await?,
        None => q.pause().await?,
    }
    print(&format!("paused {}", target(queue, &group)));
    Ok(())
}

/// `tideq resume QUEUE [--group G]`.
pub(crate) async fn resume(c: &Conn, queue: &str, group: Option<String>) -> Outcome {
    let q = existing_job_queue(c, queue).await?;
    match &group {
        Some(g) => q.resume_group(g).await?,
        None => q.resume().await?,
    }
    print(&format!("resumed {}", target(queue, &group)));
    Ok(())
}

fn target(queue: &str, group: &Option<String>) -> String {
    match group {
        Some(g) => format!("group {g:?} of {queue:?}"),
        None => format!("{queue:?}"),
    }
}

/// `tideq limits QUEUE`.
pub(crate) async fn limits(c: &Conn, queue: &str, json: bool) -> Outcome {
    let q = existing_job_queue(c, queue).await?;
    let (limits, limiter) = tokio::try_join!(q.limits(), q.limiter_name())?;
    print(&render::limits(&limits, limiter.as_deref(), json));
    Ok(())
}

/// `tideq group QUEUE NAME`.
pub(crate) async fn group(c: &Conn, queue: &str, name: &str, json: bool) -> Outcome {
    let q = existing_job_queue(c, queue).await?;
    print(&render::group(&q.group(name).await?, json));
    Ok(())
}

/// `tideq groups QUEUE [--count N] [--cursor C]`: every group, or one page of them.
pub(crate) async fn groups(
    c: &Conn,
    queue: &str,
    count: Option<usize>,
    cursor: Option<String>,
    json: bool,
) -> Outcome {
    let q = existing_job_queue(c, queue).await?;
    if count.is_none() && cursor.is_none() {
        print(&render::groups(&q.groups().await?, json));
    } else {
        let page = q
            .groups_page(
                cursor.as_deref(),
                count.unwrap_or(tideq::DEFAULT_GROUP_PAGE),
            )
            .await?;
        print_page(&render::groups_page(&page, json), &page.cursor, json);
    }
    Ok(())
}
