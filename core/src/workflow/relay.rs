//! The workers' share of flows: relaying the outbox's notices to the parents, settling held jobs,
//! and cancelling a cancelled parent's children.

use std::collections::HashMap;

use super::*;
use crate::scripts::{CANCEL_JOB, DROP_FLOW, FLOW_NOTIFY, RELAY_STEP, RELEASE_FLOW};
use crate::Client;

/// Releases held jobs of one queue shard (release_flow.lua).
pub(super) async fn release(client: &Client, keys: &JobKeys, ids: &[&str]) -> Result<i64> {
    let mut cmd = RELEASE_FLOW.cmd(&keys.for_script(&RELEASE_FLOW));
    cmd.arg(ids);
    client.eval(&cmd, &RELEASE_FLOW).await
}

/// Relays the notices in `keys`' outbox to their parents' queues (flow_notify.lua there), and
/// those their deliveries leave in turn (a parent that failed tells its own parent). One relayer
/// per outbox at a time (a short lock); a notice is removed only once delivered, and delivering
/// one twice records it once. Returns how many were delivered.
pub(crate) async fn relay(client: &Client, keys: &JobKeys) -> Result<usize> {
    let mut todo = vec![keys.clone()];
    let mut delivered = 0;
    while let Some(keys) = todo.pop() {
        let mut conn = client.conn().await?;
        let token = crate::job::new_job_id();
        let locked: Option<String> = redis::cmd("SET")
            .arg(keys.frelay())
            .arg(&token)
            .arg("NX")
            .arg("PX")
            .arg(RELAY_LOCK_MS)
            .query_async(&mut conn)
            .await
            .map_err(|e| client.err(e))?;
        if locked.is_none() {
            continue;
        }
        loop {
            let notes: Vec<Vec<u8>> = redis::cmd("LRANGE")
                .arg(keys.fout())
                .arg(0)
                .arg(CHUNK - 1)
                .query_async(&mut conn)
                .await
                .map_err(|e| client.err(e))?;
            if notes.is_empty() {
                break;
            }
            // By parent queue (shard): (its keys, its policy, the notices' values).
            let mut by_base: Vec<(String, String, Vec<Vec<u8>>)> = Vec::new();
            for note in &notes {
                let Some(n) = Notice::parse(note) else {
                    log::warn!(
                        "tideq: dropping an unreadable flow notice in {}",
                        keys.fout()
                    );
                    continue;
                };
                let i = match by_base.iter().position(|(b, _, _)| b == n.base) {
                    Some(i) => i,
                    None => {
                        by_base.push((n.base.to_string(), n.policy.to_string(), Vec::new()));
                        by_base.len() - 1
                    }
                };
                let v = &mut by_base[i].2;
                v.push(n.parent.as_bytes().to_vec());
                v.push(vec![n.on_failure]);
                v.push(format!("{}\t{}", n.queue, n.child).into_bytes());
                v.push(n.outcome.to_vec());
            }
            for (base, policy, args) in by_base {
                let Some(parent) = JobKeys::from_base(&base) else {
                    log::warn!(
                        "tideq: dropping flow notices for an unknown queue key base {base:?}"
                    );
                    continue;
                };
                let mut cmd = FLOW_NOTIFY.cmd(&parent.for_script(&FLOW_NOTIFY));
                cmd.arg(&policy);
                for a in &args {
                    cmd.arg(a.as_slice());
                }
                let (_, more): (i64, i64) = client.eval(&cmd, &FLOW_NOTIFY).await?;
                if more == 1 && parent.base() != keys.base() {
                    todo.push(parent);
                }
            }
            delivered += notes.len();
            // Trimmed only while the lock is still ours: a relayer that stalled past it leaves
            // the page to the one that took over (delivering it again records nothing twice).
            if !relay_step(client, &keys, &token, notes.len()).await? {
                break;
            }
        }
        relay_step(client, &keys, &token, 0).await?;
    }
    Ok(delivered)
}

/// How long an outbox relayer's lock lasts without a page delivered (ms): a relayer that died
/// holding it delays its outbox's notices by at most this long.
const RELAY_LOCK_MS: u64 = 2_000;

/// Trims the `n` notices delivered from the head of the outbox and keeps the lock, or with `n`
/// 0 releases it, if the lock is still `token`'s; false if it is not.
async fn relay_step(client: &Client, keys: &JobKeys, token: &str, n: usize) -> Result<bool> {
    let mut cmd = RELAY_STEP.cmd(&keys.for_script(&RELAY_STEP));
    cmd.arg(token).arg(n).arg(RELAY_LOCK_MS);
    Ok(client.eval::<i64>(&cmd, &RELAY_STEP).await? == 1)
}

/// Settles the jobs of `keys` held longer than [`HOLD_GRACE_MS`] (a flow whose writer stopped
/// half-way): released when their root exists and waits, dropped otherwise. `now`: Redis time.
pub(crate) async fn settle_held(client: &Client, keys: &JobKeys, now: u64) -> Result<usize> {
    let mut conn = client.conn().await?;
    let old: Vec<String> = redis::cmd("ZRANGEBYSCORE")
        .arg(keys.fhold())
        .arg("-inf")
        .arg(now.saturating_sub(HOLD_GRACE_MS))
        .arg("LIMIT")
        .arg(0)
        .arg(CHUNK)
        .query_async(&mut conn)
        .await
        .map_err(|e| client.err(e))?;
    if old.is_empty() {
        return Ok(0);
    }
    let roots: Vec<Option<String>> = redis::cmd("HMGET")
        .arg(keys.froot())
        .arg(&old)
        .query_async(&mut conn)
        .await
        .map_err(|e| client.err(e))?;
    // Per root ("<id>\t<base>"), whether it exists and waits.
    let mut alive: HashMap<String, bool> = HashMap::new();
    let (mut keep, mut drop) = (Vec::new(), Vec::new());
    for (id, root) in old.iter().zip(roots) {
        let Some(root) = root else { continue };
        let mut parts = root.splitn(3, '\t');
        let (_due, rid, rbase) = (parts.next(), parts.next(), parts.next());
        let (Some(rid), Some(rbase)) = (rid, rbase) else {
            drop.push(id.as_str());
            continue;
        };
        let key = format!("{rid}\t{rbase}");
        let ok = match alive.get(&key) {
            Some(&ok) => ok,
            None => {
                let ok = match JobKeys::from_base(rbase) {
                    Some(rk) => {
                        let meta: Option<String> = redis::cmd("HGET")
                            .arg(rk.meta())
                            .arg(rid)
                            .query_async(&mut conn)
                            .await
                            .map_err(|e| client.err(e))?;
                        meta.is_some_and(|m| m.starts_with("q|"))
                    }
                    None => false,
                };
                alive.insert(key, ok);
                ok
            }
        };
        if ok {
            keep.push(id.as_str());
        } else {
            drop.push(id.as_str());
        }
    }
    let mut n = 0;
    if !keep.is_empty() {
        n += release(client, keys, &keep).await? as usize;
    }
    if !drop.is_empty() {
        let mut cmd = DROP_FLOW.cmd(&keys.for_script(&DROP_FLOW));
        cmd.arg(&drop);
        n += client.eval::<i64>(&cmd, &DROP_FLOW).await? as usize;
    }
    Ok(n)
}

/// One outbox notice: `"<policy>\t<parent base>\t<parent id>\t<parent queue policy>\t<child
/// queue>\t<child id>\t<outcome>"` (lib/parents.lua; the outcome is last, it may hold tabs).
struct Notice<'a> {
    on_failure: u8,
    base: &'a str,
    parent: &'a str,
    policy: &'a str,
    queue: &'a str,
    child: &'a str,
    outcome: &'a [u8],
}

impl<'a> Notice<'a> {
    fn parse(v: &'a [u8]) -> Option<Self> {
        let mut parts = v.splitn(7, |&b| b == b'\t');
        let text = |p: Option<&'a [u8]>| std::str::from_utf8(p?).ok();
        let on_failure = *parts.next()?.first()?;
        let base = text(parts.next())?;
        let parent = text(parts.next())?;
        let policy = text(parts.next())?;
        let queue = text(parts.next())?;
        let child = text(parts.next())?;
        let outcome = parts.next()?;
        Some(Notice {
            on_failure,
            base,
            parent,
            policy,
            queue,
            child,
            outcome,
        })
    }
}

/// Cancels the children `refs` (`"<base>\t<id>\t<queue>"`) of a cancelled flow job of `keys`'
/// queue, and theirs in turn: pending ones are removed, running ones asked to stop (as
/// [`Queue::cancel`]). Then relays the notices this left (the cancelled job's parent is told).
pub(crate) async fn cancel_children(
    client: &Client,
    keys: &JobKeys,
    refs: &[String],
) -> Result<()> {
    let mut touched: Vec<JobKeys> = vec![keys.clone()];
    let mut stack: Vec<String> = refs.to_vec();
    while let Some(r) = stack.pop() {
        let mut parts = r.splitn(3, '\t');
        let (Some(base), Some(id)) = (parts.next(), parts.next()) else {
            continue;
        };
        let Some(k) = JobKeys::from_base(base) else {
            continue;
        };
        let mut cmd = CANCEL_JOB.cmd(&k.for_script(&CANCEL_JOB));
        cmd.arg(id);
        let res: Vec<String> = client.eval(&cmd, &CANCEL_JOB).await?;
        if res.first().map(String::as_str) == Some("cancelled") {
            stack.extend(res.into_iter().skip(1));
        }
        if !touched.iter().any(|t| t.base() == k.base()) {
            touched.push(k);
        }
    }
    for k in &touched {
        relay(client, k).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scripts_hold_grace_is_the_rust_one() {
        let lib = crate::scripts::INCLUDES
            .iter()
            .find(|(f, _)| *f == "lib/parents.lua")
            .expect("lib/parents.lua")
            .1;
        assert!(lib.contains(&format!("local HOLD_GRACE_MS = {HOLD_GRACE_MS}\n")));
    }

    #[test]
    fn notices_and_outcomes_parse_and_bases_name_their_queue() {
        let n = Notice::parse(b"c\tt:{q#1.7}:\tp1\t1|0|-1|0|0|0\tkids\tk9\tcok\tthen").unwrap();
        assert_eq!(
            (n.on_failure, n.base, n.parent, n.queue, n.child, n.outcome),
            (b'c', "t:{q#1.7}:", "p1", "kids", "k9", &b"cok\tthen"[..])
        );
        assert_eq!(queue_of_base("t:{q#1.7}:"), "q");
        assert_eq!(queue_of_base("t:{orders}:"), "orders");
        assert_eq!(
            ChildOutcome::parse(b"ixboom"),
            Some(ChildOutcome::Ignored("boom".into()))
        );
        assert_eq!(
            ChildOutcome::parse(b"c"),
            Some(ChildOutcome::Completed(None))
        );
        assert!(JobKeys::from_base("t:{q}:").is_some());
        assert!(JobKeys::from_base("t:{q}").is_none() && JobKeys::from_base(":{q}:").is_none());
    }
}
