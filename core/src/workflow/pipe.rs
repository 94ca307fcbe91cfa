//! Chains and chords on top of flows. A chain's link after the first, and a chord's callback,
//! are enqueued without arguments ([`ArgsFrom`] in their envelope); when one runs, the worker
//! fills its payload from its children's results before the handler sees the job, so a task
//! handler (in any runtime) gets the previous result, or the list of results, as its arguments.

use serde_json::Value as Json;

use super::*;
use crate::envelope::ArgsFrom;

impl FlowJob {
    /// A task job whose arguments are what it receives: a chain's link after the first (the
    /// previous link's result) or a chord's callback (its children's results, as a list).
    pub fn step(name: &str) -> Self {
        FlowJob {
            opts: EnqueueOptions {
                task: Some(name.to_string()),
                format: Some(PayloadFormat::Json),
                ..Default::default()
            },
            ..FlowJob::new(Vec::new())
        }
    }

    /// `links` run one after another, each once the one before it completed, each link after
    /// the first getting the previous link's result as its arguments (a task's) or payload (a
    /// raw job's). Returns the last link, the flow's root: enqueue it with
    /// [`Queue::enqueue_flow`], and its result is the chain's. A link without a queue
    /// ([`on`](Self::on)) goes where the last link goes.
    ///
    /// A link that fails (dead-lettered, expired, cancelled) fails the rest of the chain, unless
    /// its [`on_failure`](Self::on_failure) says otherwise (then the next link gets `null`).
    /// Refused (`INVALID_ARGUMENT`): no links; a link after the first with a payload or
    /// arguments (build it with [`step`](Self::step), or [`new`](Self::new) with an empty
    /// payload) or with children of its own. The first link may be any flow (a chord, say).
    ///
    /// ```no_run
    /// # async fn f(q: &tideq::Queue) -> tideq::Result<()> {
    /// use tideq::FlowJob;
    /// let chain = FlowJob::chain([
    ///     FlowJob::task("fetch", "https://example.com/feed")?,
    ///     FlowJob::step("parse"),
    ///     FlowJob::step("store"),
    /// ])?;
    /// let last = q.enqueue_flow(chain).await?;
    /// # Ok(()) }
    /// ```
    pub fn chain(links: impl IntoIterator<Item = FlowJob>) -> Result<FlowJob> {
        let mut links = links.into_iter();
        let mut flow = links
            .next()
            .ok_or_else(|| Error::invalid("a chain needs at least one link"))?;
        for (i, link) in links.enumerate() {
            let what = format!("chain link {} ({})", i + 2, describe(&link));
            check_argless(&what, &link, "the previous link's result")?;
            flow = FlowJob {
                args_from: Some(ArgsFrom::Previous),
                ..link
            }
            .child(flow);
        }
        Ok(flow)
    }

    /// `children` run (in parallel, on their queues), then `callback` runs once, after the last
    /// of them, with their results as its arguments: a list in the children's order (each a
    /// completed child's result, `null` for one whose failure its `on_failure` let through).
    /// Celery's chord, Sidekiq's batch callback. Returns the callback, the flow's root.
    ///
    /// Refused (`INVALID_ARGUMENT`): a callback with a payload or arguments (build it with
    /// [`step`](Self::step)), or with children of its own.
    pub fn chord(
        children: impl IntoIterator<Item = FlowJob>,
        callback: FlowJob,
    ) -> Result<FlowJob> {
        let what = format!("the chord's callback ({})", describe(&callback));
        check_argless(&what, &callback, "its children's results")?;
        Ok(FlowJob {
            args_from: Some(ArgsFrom::Children),
            ..callback
        }
        .children(children))
    }
}

fn describe(job: &FlowJob) -> String {
    match &job.opts.task {
        Some(name) => format!("task {name:?}"),
        None => "a raw job".into(),
    }
}

fn check_argless(what: &str, job: &FlowJob, gets: &str) -> Result<()> {
    if !job.payload.is_empty() {
        return Err(Error::invalid(format!(
            "{what} has arguments or a payload: it gets {gets} as its arguments; build it \
             without any"
        )));
    }
    if !job.children.is_empty() || job.args_from.is_some() {
        return Err(Error::invalid(format!(
            "{what} has children of its own: it waits for {gets} only"
        )));
    }
    Ok(())
}

/// A result as JSON: JSON text as it is; other UTF-8 text as a string; nothing (or a failed
/// child) as `null`.
fn as_json(what: &str, result: Option<&[u8]>) -> Result<Json> {
    let Some(bytes) = result.filter(|b| !b.is_empty()) else {
        return Ok(Json::Null);
    };
    if let Ok(v) = serde_json::from_slice(bytes) {
        return Ok(v);
    }
    match std::str::from_utf8(bytes) {
        Ok(text) => Ok(Json::String(text.to_string())),
        Err(_) => Err(Error::invalid(format!(
            "{what} is binary (neither JSON nor text): it cannot be passed on as arguments"
        ))),
    }
}

impl Job {
    /// Fills the payload of a chain's link or a chord's callback from its children's results
    /// (read from its shard a page at a time: the list, then the page's outcomes). A result that cannot be passed on is an
    /// `INVALID_ARGUMENT` error (the job cannot run); a Redis error is retried as a failure.
    pub(crate) async fn fill_args(&mut self) -> Result<()> {
        let Some(from) = self.args_from else {
            return Ok(());
        };
        let keys = &self.owner.shards[self.shard];
        let mut conn = self.owner.client.conn().await?;
        let (list, done) = (
            format!("{}{}", keys.fl(), self.id),
            format!("{}{}", keys.fk(), self.id),
        );
        // `fl:<id>` lists "<base>\t<id>\t<queue>"; `fk:<id>` keys a child "<queue>\t<id>". Read
        // a page of CHUNK at a time: a chord's callback may have 100,000 children.
        let mut results: Vec<(String, Option<Vec<u8>>)> = Vec::new();
        let mut start = 0;
        loop {
            let kids: Vec<String> = redis::cmd("LRANGE")
                .arg(&list)
                .arg(start)
                .arg(start + CHUNK - 1)
                .query_async(&mut conn)
                .await
                .map_err(|e| self.owner.client.err(e))?;
            let page: Vec<(&str, &str)> = kids
                .iter()
                .filter_map(|line| {
                    let mut parts = line.splitn(3, '\t');
                    let (_, id, queue) = (parts.next()?, parts.next()?, parts.next()?);
                    Some((id, queue))
                })
                .collect();
            if !page.is_empty() {
                let fields: Vec<String> = page.iter().map(|(id, q)| format!("{q}\t{id}")).collect();
                let outcomes: Vec<Option<Vec<u8>>> = redis::cmd("HMGET")
                    .arg(&done)
                    .arg(&fields)
                    .query_async(&mut conn)
                    .await
                    .map_err(|e| self.owner.client.err(e))?;
                for ((id, queue), outcome) in page.iter().zip(outcomes) {
                    let result = match outcome.as_deref().and_then(ChildOutcome::parse) {
                        // Sealed on a queue with encryption: opened with this queue's keys (a
                        // key it lacks fails the job, naming the key).
                        Some(ChildOutcome::Completed(r)) => {
                            Some(self.owner.open_bytes(r.unwrap_or_default())?)
                        }
                        _ => None,
                    };
                    results.push((
                        format!("the result of job {id:?} of queue {queue:?}"),
                        result,
                    ));
                }
            }
            if kids.len() < CHUNK {
                break;
            }
            start += CHUNK;
        }
        let value = match from {
            ArgsFrom::Previous => {
                let (what, result) = results.into_iter().next().unwrap_or_default();
                if self.format.is_none() {
                    // A raw job gets the previous result's bytes as they are.
                    self.payload = result.unwrap_or_default();
                    return Ok(());
                }
                as_json(&what, result.as_deref())?
            }
            ArgsFrom::Children => Json::Array(
                results
                    .iter()
                    .map(|(what, r)| as_json(what, r.as_deref()))
                    .collect::<Result<_>>()?,
            ),
        };
        self.payload = match self.format {
            Some(PayloadFormat::Msgpack) => {
                crate::task::encode_args(&value, PayloadFormat::Msgpack)?
            }
            _ => crate::task::encode_args(&value, PayloadFormat::Json)?,
        };
        Ok(())
    }
}
