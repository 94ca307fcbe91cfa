//! What the fetch loop keeps per shard: the fetches it has out, its back-off after a failure
//! (each shard its own, so a shard whose node is down holds up only itself), when its upkeep
//! last ran, and whether the latest pass found it empty.

use std::time::Duration;

use tokio::time::Instant;

use crate::background::{jittered, Outage};
use crate::error::Error;

/// A fetch out for longer than this is stuck (its shard's node is failing over, or gone): it no
/// longer counts against the fetches in flight, so the other shards are fetched meanwhile. A
/// fetch is one script call of a few milliseconds.
pub(super) const STUCK_AFTER: Duration = Duration::from_secs(1);

/// A shard's back-off after a failed fetch: its first step, and the most it grows to.
pub(super) const FIRST_STEP: Duration = Duration::from_millis(50);
pub(super) const LAST_STEP: Duration = Duration::from_secs(5);

struct Shard {
    /// When each fetch of this shard in flight went out.
    out: Vec<Instant>,
    /// Backing off after a failed fetch: no fetch before this.
    retry_at: Option<Instant>,
    /// The next back-off step.
    step: Duration,
    outage: Outage,
}

/// Every shard's state (see the module's docs), and the round-robin turn.
pub(super) struct Shards {
    shards: Vec<Shard>,
    next: usize,
    /// Most fetches of one shard out at once: two on a queue of one shard (Redis serves one
    /// while this process runs the other's jobs), else one each.
    per_shard: usize,
}

impl Shards {
    pub(super) fn new(queue: &str, n: usize, max_fetches: usize) -> Self {
        Shards {
            shards: (0..n)
                .map(|i| Shard {
                    out: Vec::new(),
                    retry_at: None,
                    step: FIRST_STEP,
                    outage: Outage::new(if n == 1 {
                        format!("the worker of queue {queue:?}")
                    } else {
                        format!("the worker of queue {queue:?}, shard {i}")
                    }),
                })
                .collect(),
            next: fastrand::usize(..n),
            per_shard: if n == 1 { max_fetches } else { 1 },
        }
    }

    /// Fetches in flight that count against the limit: those not stuck.
    pub(super) fn counted(&self, now: Instant) -> usize {
        self.shards
            .iter()
            .flat_map(|s| &s.out)
            .filter(|t| now.duration_since(**t) < STUCK_AFTER)
            .count()
    }

    /// When the next counted fetch becomes stuck.
    pub(super) fn next_stuck(&self, now: Instant) -> Option<Instant> {
        self.shards
            .iter()
            .flat_map(|s| &s.out)
            .map(|t| *t + STUCK_AFTER)
            .filter(|at| *at > now)
            .min()
    }

    fn open(&self, i: usize, now: Instant) -> bool {
        let s = &self.shards[i];
        s.out.len() < self.per_shard && s.retry_at.is_none_or(|t| t <= now)
    }

    /// Whether some shard may be fetched now.
    pub(super) fn any_open(&self, now: Instant) -> bool {
        (0..self.shards.len()).any(|i| self.open(i, now))
    }

    /// The next shard to fetch, in turn, skipping those backing off or with their fetches out;
    /// recorded as sent.
    pub(super) fn send(&mut self, now: Instant) -> Option<usize> {
        let n = self.shards.len();
        let i = (0..n)
            .map(|k| (self.next + k) % n)
            .find(|&i| self.open(i, now))?;
        self.next = (i + 1) % n;
        let s = &mut self.shards[i];
        s.retry_at = None;
        s.out.push(now);
        Some(i)
    }

    /// A fetch of shard `i` came back.
    pub(super) fn returned(&mut self, i: usize) {
        let out = &mut self.shards[i].out;
        if let Some(oldest) = (0..out.len()).min_by_key(|&k| out[k]) {
            out.swap_remove(oldest);
        }
    }

    /// Shard `i`'s fetch worked: its back-off starts over and its outage, if any, ends.
    pub(super) fn worked(&mut self, i: usize) {
        let s = &mut self.shards[i];
        s.step = FIRST_STEP;
        s.outage.recovered();
    }

    /// Shard `i`'s fetch failed: it backs off (a step drawn around the current one, which then
    /// doubles up to [`LAST_STEP`]); returns the wait.
    pub(super) fn failed(&mut self, i: usize, e: &Error, now: Instant) -> Duration {
        let s = &mut self.shards[i];
        let wait = jittered(s.step);
        s.outage.failed(e, wait);
        s.retry_at = Some(now + wait);
        s.step = (s.step * 2).min(LAST_STEP);
        wait
    }

    /// The soonest time a shard backing off may be fetched again.
    pub(super) fn next_retry(&self, now: Instant) -> Option<Instant> {
        self.shards
            .iter()
            .filter_map(|s| s.retry_at)
            .filter(|t| *t > now)
            .min()
    }

    /// Whether some shard is backing off or has a stuck fetch: not drained, whatever the others say.
    pub(super) fn any_unsettled(&self, now: Instant) -> bool {
        (0..self.shards.len()).any(|i| self.unavailable(i, now).is_some())
    }

    /// `Some(wake in, ms)` for a shard that cannot be looked at now (backing off: until its
    /// retry; a stuck fetch: `None`, its reply wakes the loop), for the pass; `None` otherwise.
    pub(super) fn unavailable(&self, i: usize, now: Instant) -> Option<Option<u64>> {
        let s = &self.shards[i];
        if let Some(t) = s.retry_at.filter(|t| *t > now) {
            return Some(Some(t.duration_since(now).as_millis() as u64 + 1));
        }
        s.out
            .iter()
            .any(|t| now.duration_since(*t) >= STUCK_AFTER)
            .then_some(None)
    }

    /// Whether acks of shard `i` may ride along with another shard's fetch: not while it backs
    /// off or has a stuck fetch (they would hold that fetch up); they wait for its own.
    pub(super) fn healthy(&self, i: usize, now: Instant) -> bool {
        self.unavailable(i, now).is_none()
    }
}

/// What the fetches of one pass over the shards found. The worker waits only once the latest
/// fetch of *every* shard came back empty (or the shard cannot be looked at now: backing off,
/// or its fetch stuck): counting empty replies in a row is not enough, since with two fetches in
/// flight the replies arrive out of step with the shards they were sent to (a shard that just
/// gave jobs could be followed by three empty replies from the other shards, and a drained
/// worker would stop with that shard still full).
pub(super) struct Pass {
    /// Per shard: `Some(wake_in)` when its latest fetch found nothing to lease.
    empty: Vec<Option<Option<u64>>>,
}

impl Pass {
    pub(super) fn new(shards: usize) -> Self {
        Pass {
            empty: vec![None; shards],
        }
    }

    /// Records one fetch's reply. Returns `Some(soonest wake_in)` once every shard is empty or
    /// `unavailable` (see [`Shards::unavailable`]); the pass then starts over.
    pub(super) fn record(
        &mut self,
        shard: usize,
        leased: usize,
        wake_in: Option<u64>,
        unavailable: impl Fn(usize) -> Option<Option<u64>>,
    ) -> Option<Option<u64>> {
        if leased > 0 || wake_in == Some(0) {
            self.empty[shard] = None;
            return None;
        }
        self.empty[shard] = Some(wake_in);
        let mut soonest: Option<u64> = None;
        for (i, e) in self.empty.iter().enumerate() {
            let wake = match e {
                Some(w) => *w,
                None => unavailable(i)?,
            };
            soonest = match (soonest, wake) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
        self.empty.iter_mut().for_each(|w| *w = None);
        Some(soonest)
    }
}

/// How often a worker busy leasing asks its fetch for the upkeep that goes by time alone
/// (recovering expired leases, dropping stale cancel requests, deleting completed jobs past
/// `keep_for`). A fetch after one that leased nothing always does it; so does any other caller.
/// Skipping it on the calls between saves two to three Redis calls per fetch (a fetch per job at
/// concurrency 1) and delays none of it by more than this.
pub(crate) const UPKEEP_EVERY: Duration = Duration::from_millis(250);

/// When each shard's fetch last did its upkeep (see [`UPKEEP_EVERY`]).
pub(super) struct Upkeep(pub(super) Vec<Option<Instant>>);

impl Upkeep {
    /// Whether a fetch of `shard` now does its upkeep: always unless the worker is `busy` (its
    /// last fetch leased jobs) and the shard's last upkeep is recent.
    pub(super) fn due(&mut self, shard: usize, busy: bool) -> bool {
        let now = Instant::now();
        let last = &mut self.0[shard];
        if busy && last.is_some_and(|t| now.duration_since(t) < UPKEEP_EVERY) {
            return false;
        }
        *last = Some(now);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NONE: fn(usize) -> Option<Option<u64>> = |_| None;

    #[test]
    fn a_worker_goes_idle_only_once_every_shard_came_back_empty() {
        // Three shards, two fetches in flight: shard 1's reply (jobs) overtakes shard 0's, then
        // shards 0, 2 and 0 again come back empty. Shard 1 was not looked at again: not idle.
        let mut pass = Pass::new(3);
        assert_eq!(pass.record(1, 5, Some(0), NONE), None);
        assert_eq!(pass.record(0, 0, None, NONE), None);
        assert_eq!(pass.record(2, 0, None, NONE), None);
        assert_eq!(pass.record(0, 0, None, NONE), None);
        // Shard 1 empty too: idle, waking for the soonest due job of any shard.
        assert_eq!(pass.record(1, 0, Some(700), NONE), Some(Some(700)));
        // A new pass starts from scratch; a shard with jobs clears its own mark only.
        assert_eq!(pass.record(0, 0, Some(300), NONE), None);
        assert_eq!(pass.record(1, 0, None, NONE), None);
        assert_eq!(pass.record(1, 2, Some(0), NONE), None);
        assert_eq!(pass.record(2, 0, None, NONE), None);
        assert_eq!(pass.record(1, 0, None, NONE), Some(Some(300)));
        // "Look again now" counts as not empty.
        let mut one = Pass::new(1);
        assert_eq!(one.record(0, 0, Some(0), NONE), None);
        assert_eq!(one.record(0, 0, None, NONE), Some(None));
    }

    #[test]
    fn a_shard_that_cannot_be_looked_at_does_not_keep_the_worker_from_waiting() {
        // Shard 0 backs off for 900 ms: once shards 1 and 2 are empty the worker waits, waking
        // for shard 0's retry at the latest.
        let mut pass = Pass::new(3);
        let backing_off = |i: usize| (i == 0).then_some(Some(900));
        assert_eq!(pass.record(1, 0, None, backing_off), None);
        assert_eq!(pass.record(2, 0, Some(2000), backing_off), Some(Some(900)));
        // A stuck fetch: its reply wakes the loop.
        let stuck = |i: usize| (i == 0).then_some(None);
        assert_eq!(pass.record(1, 0, None, stuck), None);
        assert_eq!(pass.record(2, 0, None, stuck), Some(None));
    }

    #[test]
    fn a_failed_shard_backs_off_alone_and_a_stuck_fetch_stops_counting() {
        let mut shards = Shards::new("q", 3, 2);
        let t0 = Instant::now();
        let a = shards.send(t0).unwrap();
        let b = shards.send(t0).unwrap();
        let c = shards.send(t0).unwrap();
        assert_eq!(
            [a, b, c]
                .iter()
                .collect::<std::collections::HashSet<_>>()
                .len(),
            3
        );
        // One fetch per shard on a sharded queue.
        assert_eq!(shards.send(t0), None);
        assert_eq!(shards.counted(t0), 3);
        // The fetch of `a` fails: `a` backs off; the others go on.
        shards.returned(a);
        let wait = shards.failed(a, &Error::new(crate::ErrorKind::Connection, "down"), t0);
        assert!(
            wait >= FIRST_STEP / 2 && wait <= FIRST_STEP * 3 / 2,
            "{wait:?}"
        );
        assert!(!shards.healthy(a, t0));
        shards.returned(b);
        assert_eq!(shards.send(t0), Some(b));
        assert_eq!(shards.next_retry(t0), Some(t0 + wait));
        assert_eq!(shards.send(t0 + wait), Some(a));
        // `c`'s fetch hangs: after STUCK_AFTER it no longer counts, and its acks wait.
        let later = t0 + wait + STUCK_AFTER;
        assert_eq!(
            shards.counted(t0 + STUCK_AFTER),
            1,
            "a went out at t0 + wait"
        );
        assert_eq!(shards.counted(later), 0);
        assert!(!shards.healthy(c, later));
        assert_eq!(shards.unavailable(c, later), Some(None));
        // One shard: two fetches at once.
        let mut one = Shards::new("q", 1, 2);
        assert_eq!(one.send(t0), Some(0));
        assert_eq!(one.send(t0), Some(0));
        assert_eq!(one.send(t0), None);
    }
}
