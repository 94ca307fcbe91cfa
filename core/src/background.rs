//! The handle shared by consumers and workers: a background loop on the tokio runtime that can
//! be asked to stop, waited for, or run until SIGINT/SIGTERM.

use std::future::Future;
use std::sync::{Arc, Mutex};

use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::error::{Error, ErrorKind, Result};

pub(crate) struct Background {
    stop: watch::Sender<bool>,
    abort: watch::Sender<bool>,
    done: watch::Receiver<bool>,
    task: Mutex<Option<JoinHandle<()>>>,
    failure: Failure,
    /// The runtime the loop runs on (for [`detach`](Self::detach)).
    rt: tokio::runtime::Handle,
}

/// What the loop gets: a stop signal to watch, a flag to raise when it has finished, and where
/// to leave the error that made it stop by itself.
pub(crate) struct Signals {
    pub stop: watch::Receiver<bool>,
    /// Stop at once: do not wait for running handlers (they are abandoned, their jobs left to
    /// their leases).
    pub abort: watch::Receiver<bool>,
    pub done: watch::Sender<bool>,
    pub failure: Failure,
}

/// The error a loop stopped on (the first one), for `error()` on its handle.
#[derive(Clone, Default)]
pub(crate) struct Failure(Arc<Mutex<Option<Error>>>);

impl Failure {
    pub fn set(&self, e: Error) {
        self.0.lock().unwrap().get_or_insert(e);
    }

    pub fn get(&self) -> Option<Error> {
        self.0.lock().unwrap().clone()
    }
}

impl Background {
    /// Spawns `body` on the current runtime (`what` names the caller in the error).
    pub fn spawn<F, Fut>(what: &str, body: F) -> Result<Self>
    where
        F: FnOnce(Signals) -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let rt = tokio::runtime::Handle::try_current().map_err(|_| {
            Error::new(
                ErrorKind::Closed,
                format!("{what}() needs a running tokio runtime"),
            )
        })?;
        let (stop, stop_rx) = watch::channel(false);
        let (abort, abort_rx) = watch::channel(false);
        let (done_tx, done) = watch::channel(false);
        let failure = Failure::default();
        let task = rt.spawn(body(Signals {
            stop: stop_rx,
            abort: abort_rx,
            done: done_tx,
            failure: failure.clone(),
        }));
        Ok(Background {
            stop,
            abort,
            done,
            task: Mutex::new(Some(task)),
            failure,
            rt,
        })
    }

    /// The error the loop stopped on by itself, if any (see [`Error::is_fatal`]).
    pub fn error(&self) -> Option<Error> {
        self.failure.get()
    }

    pub fn stop(&self) {
        let _ = self.stop.send(true);
    }

    /// From now on, dropping this handle no longer stops the loop: a task on the runtime holds
    /// the stop and abort switches until the loop has ended (by a stop or abort through any
    /// handle, or by itself), then lets them go. For hosts whose handle may be garbage-collected
    /// while the loop should run on.
    pub fn detach(&self) {
        let (stop, abort, mut done) = (self.stop.clone(), self.abort.clone(), self.done.clone());
        self.rt.spawn(async move {
            let _ = done.wait_for(|d| *d).await;
            drop((stop, abort));
        });
    }

    /// Stops at once, without waiting for running handlers.
    pub fn abort(&self) {
        let _ = self.stop.send(true);
        let _ = self.abort.send(true);
    }

    pub fn is_running(&self) -> bool {
        !*self.done.borrow()
    }

    /// Waits until the loop has finished (after `stop`, or by itself).
    pub async fn join(&self) {
        let task = self.task.lock().unwrap().take();
        match task {
            Some(task) => {
                let _ = task.await;
            }
            None => {
                let mut done = self.done.clone();
                let _ = done.wait_for(|d| *d).await;
            }
        }
    }

    /// Waits for SIGINT/SIGTERM (or the loop ending by itself), then stops gracefully and
    /// joins; a second signal meanwhile stops at once ([`abort`](Self::abort)).
    pub async fn until_signal(&self) {
        let mut done = self.done.clone();
        tokio::select! {
            _ = crate::signal::terminated() => {}
            _ = done.wait_for(|d| *d) => {}
        }
        self.stop();
        let mut done = self.done.clone();
        tokio::select! {
            _ = done.wait_for(|d| *d) => {}
            _ = crate::signal::terminated() => self.abort(),
        }
        self.join().await;
    }
}

/// Resolves once an abort is requested (never, if the handle is gone without one).
pub(crate) async fn aborted(rx: &mut watch::Receiver<bool>) {
    if rx.wait_for(|a| *a).await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// Resolves once a stop is requested (or the handle that could request it is gone).
pub(crate) async fn stopped(rx: &mut watch::Receiver<bool>) {
    let _ = rx.wait_for(|s| *s).await;
}

/// `d` scaled by a random factor in [0.5, 1.5): processes that lost their connection at the same
/// moment (a Redis restart, a `CLIENT KILL`) come back spread out, not in lockstep.
pub(crate) fn jittered(d: std::time::Duration) -> std::time::Duration {
    d.mul_f64(0.5 + fastrand::f64())
}

/// While an outage lasts, how often it is logged again (with how long and how many tries).
const OUTAGE_REPEAT: std::time::Duration = std::time::Duration::from_secs(60);

/// An outage as a loop sees it: the first failure starts it, the next success ends it. It is
/// logged when it starts, then once a minute while it lasts (how long, how many tries), and once
/// when it ends, so a worker waiting out a Redis restart writes a few lines, not one per retry.
pub(crate) struct Outage {
    what: String,
    /// Since when, how many failed tries, and when it was last logged.
    since: Option<(std::time::Instant, u32, std::time::Instant)>,
}

impl Outage {
    pub fn new(what: String) -> Self {
        Outage { what, since: None }
    }

    /// A failed call, to be retried in `retry_in`.
    pub fn failed(&mut self, e: &Error, retry_in: std::time::Duration) {
        if let Some(line) = self.failed_at(e, retry_in, std::time::Instant::now()) {
            log::warn!("{line}");
        }
    }

    /// The line to log for a failure at `now`, if it is the outage's first or a minute has
    /// passed since the last one logged.
    fn failed_at(
        &mut self,
        e: &Error,
        retry_in: std::time::Duration,
        now: std::time::Instant,
    ) -> Option<String> {
        match &mut self.since {
            None => {
                self.since = Some((now, 1, now));
                Some(format!(
                    "tideq: {} failed, retrying in {retry_in:.1?} (logged again once a minute \
                     until it works): {e}",
                    self.what
                ))
            }
            Some((since, n, logged)) => {
                *n += 1;
                if now.duration_since(*logged) < OUTAGE_REPEAT {
                    return None;
                }
                *logged = now;
                Some(format!(
                    "tideq: {} still failing after {:.0?} and {n} tries: {e}",
                    self.what,
                    now.duration_since(*since)
                ))
            }
        }
    }

    /// A call that worked: ends an outage, if one was going on.
    pub fn recovered(&mut self) {
        if let Some((since, n, _)) = self.since.take() {
            log::warn!(
                "tideq: {} works again, after {:.1?} and {n} failed tr{}",
                self.what,
                since.elapsed(),
                if n == 1 { "y" } else { "ies" }
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn an_outage_is_logged_when_it_starts_then_once_a_minute_then_when_it_ends() {
        let e = Error::new(crate::ErrorKind::Connection, "connection refused");
        let mut o = Outage::new("the worker of queue \"q\"".into());
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let first = o.failed_at(&e, Duration::from_millis(200), at(0)).unwrap();
        assert!(first.contains("failed, retrying in 200.0ms") && first.contains("refused"));
        // Retries within the minute: nothing.
        for s in 1..60 {
            assert_eq!(
                o.failed_at(&e, Duration::from_secs(1), at(s)),
                None,
                "{s} s"
            );
        }
        let minute = o.failed_at(&e, Duration::from_secs(1), at(61)).unwrap();
        assert!(
            minute.contains("still failing after 61s and 61 tries"),
            "{minute}"
        );
        assert_eq!(o.failed_at(&e, Duration::from_secs(1), at(62)), None);
        o.recovered();
        // The next outage starts over.
        assert!(o
            .failed_at(&e, Duration::from_secs(1), at(100))
            .unwrap()
            .contains("failed, retrying"));
    }
}
