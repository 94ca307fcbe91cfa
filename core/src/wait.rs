//! Waiting for producers' wake-up tokens without polling. Producers push a token to a queue's
//! wake list when work appears. A small listener task blocks on those lists (`BLPOP`, on a
//! connection of its own) and forwards each token through a `Notify`; the consumer or worker
//! waits on the `Notify` with a *client-side* timer. The timer matters: Redis checks `BLPOP`
//! timeouts only `hz` times a second (100 ms apart by default), so a wait bounded by the next
//! delayed job's due time must not rely on them. On a Redis Cluster, lists of different shards
//! sit in different slots and one `BLPOP` cannot span them, so there is one listener per list.
//!
//! A listener takes tokens only while its owner is waiting (armed): a busy worker, with no slot
//! free, must not swallow the wake-ups meant for idle ones. A token that arrives after its owner
//! stopped waiting (its `BLPOP` was already out) is pushed back for another listener.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{watch, Notify};
use tokio::task::JoinHandle;

use crate::background::jittered;
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

/// What the owner and its listeners share.
struct Shared {
    /// A token arrived while armed.
    notify: Notify,
    /// True while the owner waits: only then do listeners take tokens.
    armed: watch::Sender<bool>,
}

struct Listeners {
    shared: Arc<Shared>,
    tasks: Vec<JoinHandle<()>>,
}

impl Drop for Listeners {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

/// Disarms the listeners when a wait ends, however it ends (a token, the timer, or the wait
/// being dropped because the owner had something else to do).
struct Armed<'a>(&'a watch::Sender<bool>);

impl Drop for Armed<'_> {
    fn drop(&mut self) {
        self.0.send_replace(false);
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
        let shared = self.listeners().clone();
        let _armed = {
            shared.armed.send_replace(true);
            Armed(&shared.armed)
        };
        let _ = tokio::time::timeout(max, shared.notify.notified()).await;
        Ok(())
    }

    fn listeners(&mut self) -> &Arc<Shared> {
        let listeners = self.listeners.get_or_insert_with(|| {
            let shared = Arc::new(Shared {
                notify: Notify::new(),
                armed: watch::channel(false).0,
            });
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
                .map(|keys| listen(self.client.clone(), keys, shared.clone()))
                .collect();
            Listeners { shared, tasks }
        });
        &listeners.shared
    }
}

/// `BLPOP` on `keys`: the list a token came from, or `None` after `max`.
async fn blpop(
    client: &Client,
    conn: &mut BlockingConn,
    keys: &[String],
    max: Duration,
) -> Result<Option<String>> {
    let got: Option<(String, String)> = redis::cmd("BLPOP")
        .arg(keys)
        .arg(max.as_secs_f64())
        .query_async(conn)
        .await
        .map_err(|e| client.err(e))?;
    Ok(got.map(|(key, _)| key))
}

/// Puts a token back on `key` for another listener (its owner stopped waiting meanwhile).
async fn pass_on(client: &Client, conn: &mut BlockingConn, key: &str) -> Result<()> {
    redis::pipe()
        .rpush(key, "1")
        .ignore()
        .pexpire(key, 60_000)
        .ignore()
        .query_async::<()>(conn)
        .await
        .map_err(|e| client.err(e))
}

/// While the owner is armed, blocks on `keys` in a loop, forwarding every token; reconnects with
/// backoff after errors.
fn listen(client: Client, keys: Vec<String>, shared: Arc<Shared>) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut armed = shared.armed.subscribe();
        let mut conn: Option<BlockingConn> = None;
        let mut backoff = Duration::from_millis(50);
        loop {
            if armed.wait_for(|a| *a).await.is_err() {
                return;
            }
            if conn.is_none() {
                match client.blocking_conn_for(&keys[0]).await {
                    Ok(c) => conn = Some(c),
                    Err(e) => {
                        log::warn!(
                            "tideq: wake-up listener cannot connect, retrying in {backoff:?}: {e}"
                        );
                        tokio::time::sleep(jittered(backoff)).await;
                        backoff = (backoff * 2).min(Duration::from_secs(5));
                        continue;
                    }
                }
            }
            let c = conn.as_mut().expect("connected");
            match blpop(&client, c, &keys, LISTEN_BLOCK).await {
                Ok(Some(_)) if *armed.borrow() => shared.notify.notify_one(),
                Ok(Some(key)) => {
                    if let Err(e) = pass_on(&client, c, &key).await {
                        conn = None;
                        log::warn!("tideq: could not pass a wake-up on: {e}");
                    }
                }
                Ok(None) => {}
                Err(e) => {
                    conn = None;
                    // The connection may have been lost with work announced meanwhile: look.
                    shared.notify.notify_one();
                    log::warn!("tideq: wake-up listener failed, retrying in {backoff:?}: {e}");
                    tokio::time::sleep(jittered(backoff)).await;
                    backoff = (backoff * 2).min(Duration::from_secs(5));
                    continue;
                }
            }
            backoff = Duration::from_millis(50);
        }
    })
}
