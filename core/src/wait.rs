//! Waiting for producers' wake-up tokens without polling. Producers push a token to a queue's
//! wake list when work appears. A small listener task blocks on those lists (`BLPOP`, on a
//! connection of its own) and forwards each token through a `Notify`; the consumer or worker
//! waits on the `Notify` with a *client-side* timer. The timer matters: Redis checks `BLPOP`
//! timeouts only `hz` times a second (100 ms apart by default), so a wait bounded by the next
//! delayed job's due time must not rely on them. On a Redis Cluster, lists of different shards
//! sit in different slots and one `BLPOP` cannot span them, so there is one listener per list.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;
use tokio::task::JoinHandle;

use crate::client::{BlockingConn, Client};
use crate::error::Result;
use crate::keys::key_slot;

/// The longest single `BLPOP` of a listener (its idle cost: one round trip per this).
const LISTEN_BLOCK: Duration = Duration::from_secs(5);

pub(crate) struct Waiter {
    client: Client,
    keys: Vec<String>,
    listeners: Option<Listeners>,
}

struct Listeners {
    notify: Arc<Notify>,
    tasks: Vec<JoinHandle<()>>,
}

impl Drop for Listeners {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

impl Waiter {
    pub fn new(client: &Client, keys: Vec<String>) -> Self {
        Waiter {
            client: client.clone(),
            keys,
            listeners: None,
        }
    }

    /// Returns when a token arrives on any of the lists, or after `max` (client clock).
    pub async fn wait(&mut self, max: Duration) -> Result<()> {
        let notify = match &self.listeners {
            Some(l) => l.notify.clone(),
            None => {
                let notify = Arc::new(Notify::new());
                let split = self.client.config().is_cluster()
                    && self
                        .keys
                        .iter()
                        .any(|k| key_slot(k) != key_slot(&self.keys[0]));
                let groups: Vec<Vec<String>> = if split {
                    self.keys.iter().map(|k| vec![k.clone()]).collect()
                } else {
                    vec![self.keys.clone()]
                };
                let tasks = groups
                    .into_iter()
                    .map(|keys| listen(self.client.clone(), keys, notify.clone()))
                    .collect();
                self.listeners = Some(Listeners {
                    notify: notify.clone(),
                    tasks,
                });
                notify
            }
        };
        let _ = tokio::time::timeout(max, notify.notified()).await;
        Ok(())
    }
}

async fn blpop(
    client: &Client,
    conn: &mut BlockingConn,
    keys: &[String],
    max: Duration,
) -> Result<bool> {
    let got: Option<(String, String)> = redis::cmd("BLPOP")
        .arg(keys)
        .arg(max.as_secs_f64())
        .query_async(conn)
        .await
        .map_err(|e| client.err(e))?;
    Ok(got.is_some())
}

/// Blocks on `keys` in a loop, forwarding every token; reconnects with backoff after errors.
fn listen(client: Client, keys: Vec<String>, notify: Arc<Notify>) -> JoinHandle<()> {
    tokio::spawn(async move {
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
                LISTEN_BLOCK,
            )
            .await
            {
                Ok(true) => notify.notify_one(),
                Ok(false) => {}
                Err(e) => {
                    conn = None;
                    // The connection may have been lost with work announced meanwhile: look.
                    notify.notify_one();
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
