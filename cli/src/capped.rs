//! A capped grouped queue (the core's `capped` module): `tideq capped QUEUE stats | groups |
//! len | peek`.

use tideq::{CappedOptions, CappedQueue};

use crate::args::{Capped, Conn};
use crate::connect::client;
use crate::exit::{print, Outcome};
use crate::render;

/// `tideq capped QUEUE ACTION`.
pub(crate) async fn capped(c: &Conn, queue: &str, action: Capped) -> Outcome {
    let client = client(c)?;
    let q = CappedQueue::sharded(&client, queue, c.shards, CappedOptions::default())?;
    match action {
        Capped::Stats { json } => print(&render::capped_stats(&q.stats().await?, json)),
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
                print(&render::names_page(&page, json));
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
