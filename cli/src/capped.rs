//! A capped grouped queue (the core's `capped` module): `tideq capped QUEUE stats | groups |
//! len | peek`.

use tideq::{CappedOptions, CappedQueue, CappedStats, Client, QueueKind};

use crate::args::{Capped, Conn};
use crate::connect::{client, encryption, shards};
use crate::exit::{print, print_page, Failure, Outcome};
use crate::render;

/// `tideq capped QUEUE ACTION`: on the queue split in `--shards`, else in the count it recorded.
pub(crate) async fn capped(c: &Conn, queue: &str, action: Capped) -> Outcome {
    let client = client(c)?;
    let shards = shards(c, &client, QueueKind::Capped, queue).await?;
    // With `--key-file`, `peek` opens sealed items (without, they show as "encrypted (key k1)").
    let opts = CappedOptions {
        encryption: encryption(c)?,
        ..Default::default()
    };
    let q = CappedQueue::sharded(&client, queue, shards, opts)?;
    match action {
        Capped::Stats { json } => {
            let stats = q.stats().await?;
            known(&client, &q, &stats).await?;
            print(&render::capped_stats(&stats, json))
        }
        Capped::Groups {
            count,
            cursor,
            json,
        } => {
            if count.is_none() && cursor.is_none() {
                print(&render::names(&q.groups().await?, json));
            } else {
                let page = q
                    .groups_page(
                        cursor.as_deref(),
                        count.unwrap_or(tideq::DEFAULT_GROUP_PAGE),
                    )
                    .await?;
                print_page(&render::names_page(&page, json), &page.cursor, json);
            }
        }
        Capped::Len { group } => print(&q.len(&group).await?.to_string()),
        Capped::Peek {
            group,
            max,
            payload,
            json,
        } => print(&render::peeked(&q.peek(&group, max).await?, payload, json)),
    }
    Ok(())
}

/// Whether this capped queue was ever used (as `tideq stats` asks of a job queue): all zeros, no
/// recorded shard count and no shard found holding data is most likely another queue (a typo, a
/// missing `--shards` or `--prefix`, a job queue): say so and exit 3 rather than print zeros.
async fn known(client: &Client, q: &CappedQueue, s: &CappedStats) -> Outcome {
    if s.pushed > 0 || s.groups > 0 {
        return Ok(());
    }
    let name = q.name();
    if client
        .recorded_shards(QueueKind::Capped, name)
        .await?
        .is_some()
    {
        return Ok(());
    }
    let found = client.queues().await?;
    let named = |kind| found.iter().find(|r| r.kind == kind && r.name == name);
    match (named(QueueKind::Capped), named(QueueKind::Jobs)) {
        (Some(r), _) if r.shards == q.shard_count() => Ok(()),
        (Some(r), _) => Err(Failure::NotFound(format!(
            "capped queue {name:?} has {} shard(s), not {}: add --shards {}",
            r.shards,
            q.shard_count(),
            r.shards
        ))),
        (None, Some(_)) => Err(Failure::NotFound(format!(
            "{name:?} is a job queue: see `tideq stats {name}`"
        ))),
        (None, None) => Err(Failure::NotFound(format!(
            "no capped queue {name:?} here: nothing was ever pushed to it (`tideq queues` lists \
             the queues)"
        ))),
    }
}
