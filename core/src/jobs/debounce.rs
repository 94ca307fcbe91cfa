//! A debounced enqueue (`EnqueueOptions::debounce`): the job a debounce key names is replaced
//! while it waits, so a burst of enqueues runs once, with the last payload.

use crate::error::{Error, ErrorKind, Result};
use crate::job::{EnqueueOptions, Enqueued};

use super::{Queue, Reply};

impl Queue {
    /// A debounced enqueue: read which job the key names, then send the job with that job's id
    /// (to replace it if it still waits) and the id expected, so the script can tell when another
    /// enqueue got there first (then read again).
    pub(super) async fn enqueue_debounced(
        &self,
        payload: &[u8],
        o: &EnqueueOptions,
    ) -> Result<Enqueued> {
        let key = &o.debounce.as_ref().expect("debounce").key;
        let ambient = crate::otel::ambient(std::iter::once(o));
        self.envelope(payload, o, None, ambient.as_ref())?;
        self.check_shards(true).await?;
        let shard = self.shard_for_job("", o);
        for _ in 0..32 {
            let mut conn = self.client.conn().await?;
            let cur: Option<String> = redis::cmd("GET")
                .arg(format!("{}{key}", self.shards[shard].dd()))
                .query_async(&mut conn)
                .await
                .map_err(|e| self.client.err(e))?;
            let expect = cur.as_deref().unwrap_or("");
            let mut id = cur.as_deref();
            loop {
                let prepared = vec![self.envelope(payload, o, id, ambient.as_ref())?];
                let reply = self.send(shard, &[o], &prepared, &[0], "", expect).await?;
                match reply[0].1 {
                    Reply::Retry => break,
                    Reply::Fresh if id.is_some() => id = None,
                    Reply::Created => {
                        return Ok(Enqueued {
                            id: prepared.into_iter().next().expect("one").0.id,
                            created: true,
                        })
                    }
                    Reply::Named(ref named) => {
                        return Ok(Enqueued {
                            id: named.clone(),
                            created: false,
                        })
                    }
                    _ => {
                        return Err(Error::new(
                            ErrorKind::Redis,
                            "unexpected reply of the enqueue script to a debounce",
                        ))
                    }
                }
            }
        }
        Err(Error::new(
            ErrorKind::Redis,
            format!("debounce key {key:?}: other enqueues kept replacing its job; try again"),
        ))
    }
}
