//! Waiting for producers' wake-up tokens without polling. Producers push a token to a queue's
//! wake list when work appears; idle consumers and workers block on those lists (`BLPOP`, on a
//! connection of their own) for a bounded time. On a Redis Cluster, lists of different shards sit
//! in different slots and one `BLPOP` cannot span them, so one small task per list blocks on it
//! and forwards tokens through a `Notify`.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;
use tokio::task::JoinHandle;

use crate::client::{BlockingConn, Client};
use crate::error::Result;
use crate::keys::key_slot;

/// The longest single `BLPOP` of a forwarding task.
const FANOUT_BLOCK: Duration = Duration::from_secs(5);

pub(crate) struct Waiter {
    client: Client,
    keys: Vec<String>,
    conn: Option<BlockingConn>,
    fanout: Option<Fanout>,
}

struct Fanout {
    notify: Arc<Notify>,
    tasks: Vec<JoinHandle<()>>,
}

impl Drop for Fanout {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

async fn blpop(
    client: &Client,
    conn: &mut BlockingConn,
    keys: &[String],
    max: Duration,
) -> Result<bool> {
    // BLPOP takes seconds with millisecond precision; 0 would mean "forever".
    let secs = max.as_secs_f64().max(0.001);
    let got: Option<(String, String)> = redis::cmd("BLPOP")
        .arg(keys)
        .arg(format!("{secs:.3}"))
        .query_async(conn)
        .await
        .map_err(|e| client.err(e))?;
    Ok(got.is_some())
}

impl Waiter {
    pub fn new(client: &Client, keys: Vec<String>) -> Self {
        Waiter {
            client: client.clone(),
            keys,
            conn: None,
            fanout: None,
        }
    }

    fn needs_fanout(&self) -> bool {
        self.client.config().is_cluster()
            && self
                .keys
                .iter()
                .any(|k| key_slot(k) != key_slot(&self.keys[0]))
    }

    /// Returns when a token arrives on any of the lists, or after `max`.
    pub async fn wait(&mut self, max: Duration) -> Result<()> {
        if self.needs_fanout() {
            let notify = match &self.fanout {
                Some(f) => f.notify.clone(),
                None => {
                    let notify = Arc::new(Notify::new());
                    let tasks = self
                        .keys
                        .iter()
                        .map(|key| {
                            spawn_forwarder(self.client.clone(), key.clone(), notify.clone())
                        })
                        .collect();
                    self.fanout = Some(Fanout {
                        notify: notify.clone(),
                        tasks,
                    });
                    notify
                }
            };
            let _ = tokio::time::timeout(max, notify.notified()).await;
            return Ok(());
        }
        if self.conn.is_none() {
            self.conn = Some(self.client.blocking_conn().await?);
        }
        let conn = self.conn.as_mut().expect("waiter connection");
        if let Err(e) = blpop(&self.client, conn, &self.keys, max).await {
            self.conn = None;
            return Err(e);
        }
        Ok(())
    }

    /// Forgets a wait that was abandoned midway: its `BLPOP` may still be pending on the
    /// connection, so the next wait uses a new one.
    pub fn reset(&mut self) {
        self.conn = None;
    }
}

fn spawn_forwarder(client: Client, key: String, notify: Arc<Notify>) -> JoinHandle<()> {
    tokio::spawn(async move {
        let keys = [key];
        let mut conn: Option<BlockingConn> = None;
        let mut backoff = Duration::from_millis(50);
        loop {
            if conn.is_none() {
                match client.blocking_conn().await {
                    Ok(c) => conn = Some(c),
                    Err(e) => {
                        log::warn!(
                            "tideq: wake-up listener cannot connect, retrying in {backoff:?}: {e}"
                        );
                        tokio::time::sleep(backoff).await;
                        backoff = (backoff * 2).min(Duration::from_secs(5));
                        continue;
                    }
                }
            }
            match blpop(
                &client,
                conn.as_mut().expect("connected"),
                &keys,
                FANOUT_BLOCK,
            )
            .await
            {
                Ok(true) => notify.notify_one(),
                Ok(false) => {}
                Err(e) => {
                    conn = None;
                    log::warn!("tideq: wake-up listener failed, retrying in {backoff:?}: {e}");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(5));
                    continue;
                }
            }
            backoff = Duration::from_millis(50);
        }
    })
}
