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
/// half-way): released when their root exists and waits, dropped otherwise, a page of [`CHUNK`]
/// per call, page after page until none is over its grace. `now`: Redis time. Returns how many
/// were settled and when the next held job's grace ends (Redis ms; `None`: none is held).
pub(crate) async fn settle_held(
    client: &Client,
    keys: &JobKeys,
    now: u64,
) -> Result<(usize, Option<u64>)> {
    let mut conn = client.conn().await?;
    let mut settled = 0;
    loop {
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
        let n = if old.is_empty() {
            0
        } else {
            settle_page(client, &mut conn, keys, &old).await?
        };
        settled += n;
        // A full page may have more behind it; a page that settled nothing (all taken by
        // another worker meanwhile) ends the round too.
        if old.len() < CHUNK || n == 0 {
            break;
        }
    }
    let next: Vec<(String, f64)> = redis::cmd("ZRANGE")
        .arg(keys.fhold())
        .arg(0)
        .arg(0)
        .arg("WITHSCORES")
        .query_async(&mut conn)
        .await
        .map_err(|e| client.err(e))?;
    Ok((
        settled,
        next.first().map(|(_, at)| *at as u64 + HOLD_GRACE_MS),
    ))
}

/// Settles the held jobs `old` of `keys` (over their grace): released when their root exists
/// and waits (one HGET per root, pipelined per root's queue shard), dropped otherwise.
async fn settle_page(
    client: &Client,
    conn: &mut crate::client::Conn,
    keys: &JobKeys,
    old: &[String],
) -> Result<usize> {
    let roots: Vec<Option<String>> = redis::cmd("HMGET")
        .arg(keys.froot())
        .arg(old)
        .query_async(conn)
        .await
        .map_err(|e| client.err(e))?;
    // Each held job's root ("<id>\t<base>"), and per root's base the roots to look up.
    let mut of: Vec<Option<(&str, &str)>> = Vec::with_capacity(old.len());
    let mut by_base: HashMap<&str, Vec<&str>> = HashMap::new();
    for root in &roots {
        let r = root.as_deref().and_then(|root| {
            let mut parts = root.splitn(3, '\t');
            let (_due, rid, rbase) = (parts.next(), parts.next()?, parts.next()?);
            Some((rid, rbase))
        });
        if let Some((rid, rbase)) = r {
            let ids = by_base.entry(rbase).or_default();
            if !ids.contains(&rid) {
                ids.push(rid);
            }
        }
        of.push(r);
    }
    // Whether each root exists and waits.
    let mut alive: HashMap<(&str, &str), bool> = HashMap::new();
    for (rbase, rids) in by_base {
        let Some(rk) = JobKeys::from_base(rbase) else {
            continue;
        };
        let mut pipe = redis::pipe();
        for rid in &rids {
            pipe.cmd("HGET").arg(rk.meta()).arg(*rid);
        }
        let metas: Vec<Option<String>> = pipe.query_async(conn).await.map_err(|e| client.err(e))?;
        for (rid, meta) in rids.into_iter().zip(metas) {
            alive.insert((rid, rbase), meta.is_some_and(|m| m.starts_with("q|")));
        }
    }
    let (mut keep, mut drop) = (Vec::new(), Vec::new());
    for (id, r) in old.iter().zip(of) {
        // A held job without its root's record is dropped (drop_flow.lua removes the entry).
        let ok = r.is_some_and(|(rid, rbase)| alive.get(&(rid, rbase)) == Some(&true));
        if ok {
            keep.push(id.as_str());
        } else {
            drop.push(id.as_str());
        }
    }
    let mut n = 0;
    for run in keep.chunks(super::enqueue::RELEASE_RUN) {
        n += release(client, keys, run).await? as usize;
    }
    for run in drop.chunks(super::enqueue::RELEASE_RUN) {
        let mut cmd = DROP_FLOW.cmd(&keys.for_script(&DROP_FLOW));
        cmd.arg(run);
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

/// Ids cancelled per cancel_job.lua call while a cancelled parent's children are cancelled.
const CANCEL_BATCH: usize = 50;

/// Cancels the children of a cancelled flow job of `keys`' queue, listed in `list` (the
/// `fs:<token>.<i>` cancel_job.lua left; `None`: it had none), and theirs in turn, a page of
/// [`CHUNK`] at a time, in calls of [`CANCEL_BATCH`]: pending ones are removed, running ones
/// asked to stop (as [`Queue::cancel`]). Then relays the notices this left (the cancelled job's
/// parent is told).
pub(crate) async fn cancel_children(
    client: &Client,
    keys: &JobKeys,
    list: Option<String>,
) -> Result<()> {
    let mut touched: Vec<JobKeys> = vec![keys.clone()];
    let mut lists: Vec<String> = list.into_iter().collect();
    let mut conn = client.conn().await?;
    while let Some(list) = lists.pop() {
        let refs: Vec<String> = redis::cmd("LRANGE")
            .arg(&list)
            .arg(0)
            .arg(CHUNK - 1)
            .query_async(&mut conn)
            .await
            .map_err(|e| client.err(e))?;
        // By queue shard: "<base>\t<id>\t<queue>".
        let mut by_base: Vec<(&str, Vec<&str>)> = Vec::new();
        for r in &refs {
            let mut parts = r.splitn(3, '\t');
            let (Some(base), Some(id)) = (parts.next(), parts.next()) else {
                continue;
            };
            match by_base.iter_mut().find(|(b, _)| *b == base) {
                Some((_, v)) => v.push(id),
                None => by_base.push((base, vec![id])),
            }
        }
        for (base, ids) in by_base {
            let Some(k) = JobKeys::from_base(base) else {
                continue;
            };
            for run in ids.chunks(CANCEL_BATCH) {
                let token = crate::job::new_job_id();
                let mut cmd = CANCEL_JOB.cmd(&k.for_script(&CANCEL_JOB));
                cmd.arg(&token).arg(run);
                let res: Vec<redis::Value> = client.eval(&cmd, &CANCEL_JOB).await?;
                for (i, pair) in res.chunks(2).enumerate() {
                    let state: String =
                        redis::from_redis_value(pair[0].clone()).unwrap_or_default();
                    let kids: i64 = pair
                        .get(1)
                        .and_then(|v| redis::from_redis_value(v.clone()).ok())
                        .unwrap_or(0);
                    if state == "cancelled" && kids > 0 {
                        lists.push(format!("{}{token}.{}", k.fs(), i + 1));
                    }
                }
            }
            if !touched.iter().any(|t| t.base() == k.base()) {
                touched.push(k);
            }
        }
        // The page is done (a list emptied this way is deleted).
        let () = redis::cmd("LTRIM")
            .arg(&list)
            .arg(CHUNK)
            .arg(-1)
            .query_async(&mut conn)
            .await
            .map_err(|e| client.err(e))?;
        if refs.len() == CHUNK {
            lists.push(list);
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
