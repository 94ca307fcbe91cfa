//! The queues under the prefix (the core's `discover` role): `tideq queues`, an overview with
//! each queue's counts, latency and workers (as `rq info`).

use tideq::{CappedOptions, CappedQueue, Queue, QueueKind, QueueOptions};

use crate::args::Conn;
use crate::connect::client;
use crate::exit::{print, Outcome};
use crate::render::{self, QueueLine};

/// `tideq queues`: both kinds, found with SCAN (on every primary of a cluster), each with what
/// it holds now: a job queue's jobs per state, latency and live workers (`Queue::metrics`), a
/// capped queue's groups and counters (`CappedQueue::stats`).
pub(crate) async fn queues(c: &Conn, json: bool) -> Outcome {
    let client = client(c)?;
    let mut lines = Vec::new();
    for r in client.queues().await? {
        let line = match r.kind {
            QueueKind::Jobs => {
                let q = Queue::sharded(&client, &r.name, r.shards, QueueOptions::default())?;
                QueueLine::Jobs(r, Box::new(q.metrics().await?))
            }
            QueueKind::Capped => {
                let q = CappedQueue::sharded(&client, &r.name, r.shards, CappedOptions::default())?;
                QueueLine::Capped(r, q.stats().await?)
            }
        };
        lines.push(line);
    }
    let table = render::queues(&lines, json);
    if json {
        print(&table);
        return Ok(());
    }
    // The server first (version, memory, eviction policy): one line above the table. A user
    // not allowed INFO sees the queues with the reason instead.
    let server = match client.server_info().await {
        Ok(info) => render::server_line(&info),
        Err(e) => format!("redis: {e}"),
    };
    print(&format!("{server}\n\n{table}"));
    Ok(())
}
