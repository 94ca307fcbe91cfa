//! One inbox per client and queue shard for the outcomes of the jobs its callers wait for
//! ([`Queue::wait`](crate::Queue::wait)). Every wait of a [`Client`] registers the client's hub
//! id with the job (`wait_job.lua`); the script that finishes a waited-for job pushes one notice
//! per waiting hub, not per waiter, onto that hub's inbox list (`fin:<hub id>`, in the job's hash
//! tag). One listener task per inbox blocks on it (`BLMPOP`, on a connection of its own) and hands
//! each notice to the local waits of its job. So 10,000 concurrent waits on one queue cost one
//! extra connection and one notice per finished job, however many wait in the process.
//!
//! A listener runs while some wait is subscribed to its inbox, and ends after about
//! [`IDLE_ROUNDS`] × [`LISTEN_BLOCK`] without any (its connection with it). A notice whose job no
//! local wait wants any more is dropped. Notices can be lost (a failover), so a wait also looks
//! at its job now and then (see `outcome.rs`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::mpsc;

use crate::client::Client;

/// The longest single `BLMPOP` of a listener.
const LISTEN_BLOCK: Duration = Duration::from_secs(5);
/// Empty listens after which an idle listener ends.
const IDLE_ROUNDS: u32 = 2;

/// A client's hub: its id and its inboxes by key.
pub(crate) struct Hub {
    id: String,
    inboxes: Mutex<HashMap<String, Arc<Inbox>>>,
}

/// One inbox: the local waits by job id, and whether its listener runs.
struct Inbox {
    key: String,
    state: Mutex<InboxState>,
}

/// A local wait's number and where its notices go.
type LocalWait = (u64, mpsc::UnboundedSender<Vec<u8>>);

#[derive(Default)]
struct InboxState {
    /// Job id -> the waits for it.
    waits: HashMap<String, Vec<LocalWait>>,
    next: u64,
    listening: bool,
}

/// A wait's place in an inbox: its notices arrive on `rx`; dropping it leaves the inbox.
pub(crate) struct Subscription {
    pub rx: mpsc::UnboundedReceiver<Vec<u8>>,
    inbox: Arc<Inbox>,
    job: String,
    no: u64,
}

impl Drop for Subscription {
    fn drop(&mut self) {
        let mut st = self.inbox.state.lock().expect("inbox lock");
        if let Some(v) = st.waits.get_mut(&self.job) {
            v.retain(|(no, _)| *no != self.no);
            if v.is_empty() {
                st.waits.remove(&self.job);
            }
        }
    }
}

impl Hub {
    pub(crate) fn new() -> Self {
        Hub {
            id: crate::job::new_job_id(),
            inboxes: Mutex::new(HashMap::new()),
        }
    }

    /// The id the scripts know this client's waits by.
    pub(crate) fn id(&self) -> &str {
        &self.id
    }

    /// Subscribes a wait for job `job` to the inbox `key` (`fin:<hub id>` of the job's shard),
    /// starting the inbox's listener if it is not running. Subscribe before registering the
    /// wait with the job, so no notice can come before the wait listens.
    pub(crate) fn subscribe(&self, client: &Client, key: String, job: &str) -> Subscription {
        let inbox = {
            let mut all = self.inboxes.lock().expect("hub lock");
            all.entry(key.clone())
                .or_insert_with(|| {
                    Arc::new(Inbox {
                        key,
                        state: Mutex::new(InboxState::default()),
                    })
                })
                .clone()
        };
        let (tx, rx) = mpsc::unbounded_channel();
        let no = {
            let mut st = inbox.state.lock().expect("inbox lock");
            st.next += 1;
            let no = st.next;
            st.waits.entry(job.to_string()).or_default().push((no, tx));
            if !st.listening {
                st.listening = true;
                tokio::spawn(listen(client.clone(), inbox.clone()));
            }
            no
        };
        Subscription {
            rx,
            inbox,
            job: job.to_string(),
            no,
        }
    }
}

/// A listener: hands each notice of the inbox to the waits of its job, until the inbox has had
/// no wait for [`IDLE_ROUNDS`] listens.
async fn listen(client: Client, inbox: Arc<Inbox>) {
    let mut conn = None;
    let mut idle = 0;
    let mut backoff = Duration::from_millis(50);
    loop {
        {
            let mut st = inbox.state.lock().expect("inbox lock");
            if st.waits.is_empty() {
                idle += 1;
                if idle > IDLE_ROUNDS {
                    st.listening = false;
                    return;
                }
            } else {
                idle = 0;
            }
        }
        if conn.is_none() {
            match client.blocking_conn_for(&inbox.key).await {
                Ok(c) => conn = Some(c),
                Err(e) => {
                    log::debug!("tideq: wait inbox {}: {e}", inbox.key);
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(2));
                    continue;
                }
            }
        }
        let c = conn.as_mut().expect("connection");
        // Up to 1000 notices a round trip: a burst of finished jobs must not wait for a BLPOP
        // each. (BLMPOP rather than LPOP, which would let a producer's user take jobs.)
        let got: redis::RedisResult<Option<(String, Vec<Vec<u8>>)>> = redis::cmd("BLMPOP")
            .arg(LISTEN_BLOCK.as_secs_f64())
            .arg(1)
            .arg(&inbox.key)
            .arg("LEFT")
            .arg("COUNT")
            .arg(1000)
            .query_async(c)
            .await;
        match got {
            Ok(Some((_, notices))) => {
                backoff = Duration::from_millis(50);
                for n in notices {
                    deliver(&inbox, n);
                }
            }
            Ok(None) => backoff = Duration::from_millis(50),
            Err(e) => {
                // The waits look at their jobs now and then: a lost notice costs time, not an
                // answer. Connect again.
                log::debug!("tideq: wait inbox {}: {e}", inbox.key);
                conn = None;
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(2));
            }
        }
    }
}

/// A notice is `<length of the id>:<id><enqueued>|<kind><data>` (docs/data-model.md, "Waiters"); the
/// waits of that job get `<enqueued>|<kind><data>`.
fn deliver(inbox: &Inbox, notice: Vec<u8>) {
    let Some((job, rest)) = split_notice(&notice) else {
        return;
    };
    let st = inbox.state.lock().expect("inbox lock");
    if let Some(waits) = st.waits.get(job) {
        for (_, tx) in waits {
            let _ = tx.send(rest.to_vec());
        }
    }
}

fn split_notice(notice: &[u8]) -> Option<(&str, &[u8])> {
    let colon = notice.iter().position(|&b| b == b':')?;
    let len: usize = std::str::from_utf8(&notice[..colon]).ok()?.parse().ok()?;
    let body = &notice[colon + 1..];
    if body.len() < len {
        return None;
    }
    let job = std::str::from_utf8(&body[..len]).ok()?;
    Some((job, &body[len..]))
}

#[cfg(test)]
mod tests {
    use super::split_notice;

    #[test]
    fn a_notice_names_its_job_by_length_so_any_id_reads_back() {
        assert_eq!(
            split_notice(b"5:a|b:c17|rok"),
            Some(("a|b:c", b"17|rok".as_slice()))
        );
        assert_eq!(split_notice(b"3:ab"), None);
        assert_eq!(split_notice(b"x:ab"), None);
    }
}
