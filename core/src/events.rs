//! The event log: what happened to a queue's jobs (enqueued, active, progress, completed with its
//! result, failed, retried, dead, cancelled), kept in a Redis stream of bounded length while the
//! queue's events are on ([`Queue::set_events`]). Readers ([`Queue::events`]) read it from now on
//! or from the oldest entry kept; a reader that names itself resumes where it stopped (its place
//! is kept in Redis), and one that fell behind the log's length is told how much it missed by a
//! [`EventKind::Lagged`] event instead of missing it silently. With events off, nothing is
//! written and the scripts pay one settings field more.

use std::collections::VecDeque;
use std::time::Duration;

use redis::Value;
use serde::{Deserialize, Serialize};

use crate::client::BlockingConn;
use crate::error::{Error, Result};
use crate::job::validate_label;
use crate::jobs::Queue;
use crate::scripts::READ_EVENTS;

/// A log entry as XRANGE gives it: its id and its fields.
type Entry = (String, Vec<Vec<u8>>);

/// Most log entries one read takes.
const READ_COUNT: usize = 100;

/// What happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum EventKind {
    Enqueued,
    /// A delivery started (`data`: the attempt number).
    Active,
    /// The handler reported progress (`data`: the value).
    Progress,
    /// The job completed (`data`: what the handler returned, if anything).
    Completed,
    /// An attempt failed (`data`: the error); `Retried` or `Dead` follows.
    Failed,
    /// The job will run again (`data`: the delay in ms, or "lease expired").
    Retried,
    /// The job went to the dead letters (`data`: its last error).
    Dead,
    Cancelled,
    /// The handler asked to run the job later, the attempt uncounted (`data`: the delay in ms;
    /// see [`Snooze`](crate::Snooze), [`BackOff`](crate::BackOff)).
    Snoozed,
    /// The job was not started by its deadline (`expires_after`, `expires_at_ms`): dead-lettered
    /// without running (`data`: the error).
    Expired,
    /// Not a job's event: this reader fell behind the log's length, and `data` says how many log
    /// entries it missed.
    Lagged,
}

impl EventKind {
    pub const ALL: [EventKind; 11] = [
        EventKind::Enqueued,
        EventKind::Active,
        EventKind::Progress,
        EventKind::Completed,
        EventKind::Failed,
        EventKind::Retried,
        EventKind::Dead,
        EventKind::Cancelled,
        EventKind::Snoozed,
        EventKind::Expired,
        EventKind::Lagged,
    ];

    /// `"enqueued"`, `"active"`, ... as the log spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Enqueued => "enqueued",
            EventKind::Active => "active",
            EventKind::Progress => "progress",
            EventKind::Completed => "completed",
            EventKind::Failed => "failed",
            EventKind::Retried => "retried",
            EventKind::Dead => "dead",
            EventKind::Cancelled => "cancelled",
            EventKind::Snoozed => "snoozed",
            EventKind::Expired => "expired",
            EventKind::Lagged => "lagged",
        }
    }

    fn parse(s: &[u8]) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str().as_bytes() == s)
    }
}

/// One event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    pub kind: EventKind,
    /// The job's id (empty for `Lagged`).
    pub job_id: String,
    /// The event's data (see [`EventKind`]).
    #[serde(with = "serde_bytes")]
    pub data: Option<Vec<u8>>,
    /// Data over 1 KiB is not copied into the log (so the log's size stays bounded): its size in
    /// bytes, with `data` then `None`. A completed job's result is kept with the job while its
    /// retention lasts, and a reader is given it in full instead; this is set when it was not kept
    /// (or is gone by the time the event is read): look it up with [`Queue::get`], if at all.
    pub data_omitted_bytes: Option<u64>,
    /// When it happened (ms, Redis clock).
    pub at_ms: u64,
}

/// Where a reader starts and whether it keeps its place.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EventsOptions {
    /// A named reader keeps its place in Redis (each read moves it on): started again with the
    /// same name, it resumes after the last events it had read, and learns (`Lagged`) when the
    /// log was trimmed past them meanwhile. At most 256 bytes.
    pub name: Option<String>,
    /// Start from the oldest event kept instead of from now on (a named reader with a place
    /// resumes from it either way).
    pub from_start: bool,
}

/// A reader of a queue's event log (see [`Queue::events`]).
pub struct Events {
    queue: Queue,
    name: Option<String>,
    /// Per shard, the id of the last log entry read.
    places: Vec<String>,
    /// Per shard, the id of the last entry whose events were all handed out: what `commit`
    /// stores (an entry read but not handed out in full is read again after a restart).
    taken: Vec<String>,
    /// The places as last stored for a named reader.
    stored: Vec<String>,
    /// Events read and not handed out yet, each with (shard, entry id) when it is the last event
    /// of its entry.
    buf: VecDeque<(Event, Option<(usize, String)>)>,
    conn: Option<BlockingConn>,
    next_shard: usize,
}

impl Queue {
    /// Turns the queue's event log on, keeping about its newest `max_len` entries (an entry holds
    /// one kind of event for a batch of up to 500 jobs and about 16 KiB of their ids and data; an
    /// event's data over 1 KiB is left out, see [`Event::data_omitted_bytes`]), or off (`None`).
    /// The log's size is thus bounded by about `max_len` × 17 KiB, whatever the jobs return.
    /// Every producer and worker of the queue follows the setting at once. Events are off by
    /// default.
    pub async fn set_events(&self, max_len: Option<usize>) -> Result<()> {
        if max_len == Some(0) {
            return Err(Error::invalid(
                "the event log's length must be at least 1 (None turns events off)",
            ));
        }
        self.op("set_events", async {
            for k in self.shards.iter() {
                let mut cmd = match max_len {
                    Some(n) => {
                        let mut c = redis::cmd("HSET");
                        c.arg(k.cfg()).arg("events").arg(n);
                        c
                    }
                    None => {
                        let mut c = redis::cmd("HDEL");
                        c.arg(k.cfg()).arg("events");
                        c
                    }
                };
                let mut conn = self.client.conn().await?;
                let _: i64 = cmd
                    .query_async(&mut conn)
                    .await
                    .map_err(|e| self.client.err(e))?;
                if max_len.is_none() {
                    cmd = redis::cmd("DEL");
                    cmd.arg(k.events());
                    let _: i64 = cmd
                        .query_async(&mut conn)
                        .await
                        .map_err(|e| self.client.err(e))?;
                }
            }
            Ok(())
        })
        .await
    }

    /// How many entries the queue's event log keeps (as [`set_events`](Self::set_events) set
    /// it), or `None` when its events are off.
    pub async fn events_log_len(&self) -> Result<Option<usize>> {
        self.op("events_log_len", async {
            let mut conn = self.client.conn().await?;
            redis::cmd("HGET")
                .arg(self.shards[0].cfg())
                .arg("events")
                .query_async(&mut conn)
                .await
                .map_err(|e| self.client.err(e))
        })
        .await
    }

    /// A reader of the queue's event log (see [`EventsOptions`]).
    pub async fn events(&self, opts: EventsOptions) -> Result<Events> {
        if let Some(name) = &opts.name {
            validate_label("event reader name", name)?;
        }
        self.op("events", async {
            let n = self.shards.len();
            let mut places = vec![if opts.from_start { "0" } else { "$" }.to_string(); n];
            let mut kept_found = false;
            if let Some(name) = &opts.name {
                let mut conn = self.client.conn().await?;
                let kept: Option<String> = redis::cmd("HGET")
                    .arg(self.shards[0].evsub())
                    .arg(name)
                    .query_async(&mut conn)
                    .await
                    .map_err(|e| self.client.err(e))?;
                if let Some(kept) = kept {
                    let kept: Vec<String> = kept.split(',').map(str::to_string).collect();
                    if kept.len() == n {
                        places = kept;
                        kept_found = true;
                    }
                }
            }
            // "From now on" means from this call: where the log is now (one round trip; the
            // entries are numbered by the stats field `events`).
            let mut conn = self.client.conn().await?;
            for (shard, place) in places.iter_mut().enumerate() {
                if place == "$" {
                    let n: Option<u64> = redis::cmd("HGET")
                        .arg(self.shards[shard].stats())
                        .arg("events")
                        .query_async(&mut conn)
                        .await
                        .map_err(|e| self.client.err(e))?;
                    *place = format!("{}-1", n.unwrap_or(0));
                }
            }
            // A named reader without a stored place stores this one at once, so a reader that
            // dies before its first commit resumes from here, not from a later "now".
            let stored = if kept_found {
                places.clone()
            } else {
                Vec::new()
            };
            let mut ev = Events {
                queue: self.clone(),
                name: opts.name.clone(),
                taken: places.clone(),
                places,
                stored,
                buf: VecDeque::new(),
                conn: None,
                next_shard: 0,
            };
            ev.commit().await?;
            Ok(ev)
        })
        .await
    }
}

impl Events {
    /// The next event, waiting up to `timeout` for one (`None`: no limit); `Ok(None)` when none
    /// came in time. A named reader's place moves on (is stored) each time it reads more.
    pub async fn next(&mut self, timeout: Option<Duration>) -> Result<Option<Event>> {
        let deadline = timeout.map(|t| tokio::time::Instant::now() + t);
        loop {
            if let Some((e, last)) = self.buf.pop_front() {
                if let Some((shard, id)) = last {
                    self.taken[shard] = id;
                }
                return Ok(Some(e));
            }
            self.commit().await?;
            if self.read().await? {
                continue;
            }
            let left = match deadline {
                Some(d) => {
                    let left = d.saturating_duration_since(tokio::time::Instant::now());
                    if left.is_zero() {
                        return Ok(None);
                    }
                    left
                }
                None => Duration::from_secs(2),
            };
            self.block(left).await?;
        }
    }

    /// Stores a named reader's place: after the last log entry whose events it has all taken
    /// (the events of an entry taken in part come again after a restart: at least once). `next`
    /// does it before each read, so call this only when you stop reading.
    pub async fn commit(&mut self) -> Result<()> {
        let Some(name) = &self.name else {
            return Ok(());
        };
        if self.taken == self.stored || self.taken.iter().any(|p| p == "$" || p == "0") {
            return Ok(());
        }
        let q = &self.queue;
        let mut conn = q.client.conn().await?;
        let _: i64 = redis::cmd("HSET")
            .arg(q.shards[0].evsub())
            .arg(name)
            .arg(self.taken.join(","))
            .query_async(&mut conn)
            .await
            .map_err(|e| q.client.err(e))?;
        self.stored = self.taken.clone();
        Ok(())
    }

    /// Reads every shard's log after this reader's place; whether any event (or a gap) came.
    async fn read(&mut self) -> Result<bool> {
        let q = self.queue.clone();
        let mut got = false;
        for shard in 0..q.shards.len() {
            let mut cmd = q.script_cmd(shard, &READ_EVENTS);
            cmd.arg(&self.places[shard]).arg(READ_COUNT);
            let (from, lost, entries): (String, u64, Vec<Entry>) =
                q.client.eval(&cmd, &READ_EVENTS).await?;
            self.places[shard] = from;
            if lost > 0 {
                got = true;
                let lagged = Event {
                    kind: EventKind::Lagged,
                    job_id: String::new(),
                    data: Some(
                        format!(
                            "{lost} event log entries were trimmed before this reader read them"
                        )
                        .into_bytes(),
                    ),
                    data_omitted_bytes: None,
                    at_ms: crate::job::now_ms(),
                };
                self.buf.push_back((lagged, None));
            }
            for (id, fields) in entries {
                if self.unpack(shard, &id, &fields) {
                    got = true;
                } else if self.buf.is_empty() {
                    // An entry without events (not one tideq wrote): nothing to hand out.
                    self.taken[shard] = id.clone();
                }
                self.places[shard] = id;
            }
        }
        Ok(got)
    }

    /// An entry's events into the buffer (the last one marked with its entry): "t", ms, "e",
    /// kind, then job id and data pairs. Whether it held any.
    fn unpack(&mut self, shard: usize, entry: &str, f: &[Vec<u8>]) -> bool {
        if f.len() < 4 || f[0] != b"t" || f[2] != b"e" {
            return false;
        }
        let (Some(kind), Some(at)) = (
            EventKind::parse(&f[3]),
            std::str::from_utf8(&f[1]).ok().and_then(|t| t.parse().ok()),
        ) else {
            return false;
        };
        let before = self.buf.len();
        let mut pairs = &f[4..];
        // A last pair with an empty id lists the data left out: "<pair>:<size>" (1-based).
        let mut omitted: Vec<(usize, u64)> = Vec::new();
        if pairs.len() >= 2 && pairs[pairs.len() - 2].is_empty() {
            omitted = String::from_utf8_lossy(&pairs[pairs.len() - 1])
                .split_ascii_whitespace()
                .filter_map(|spec| {
                    let (pair, size) = spec.trim_end_matches('r').split_once(':')?;
                    Some((pair.parse().ok()?, size.parse().ok()?))
                })
                .collect();
            pairs = &pairs[..pairs.len() - 2];
        }
        for (i, pair) in pairs.chunks(2).enumerate() {
            let [id, data] = pair else { break };
            let e = Event {
                kind,
                job_id: String::from_utf8_lossy(id).into_owned(),
                data: (!data.is_empty()).then(|| data.clone()),
                data_omitted_bytes: omitted
                    .iter()
                    .find(|(p, _)| *p == i + 1)
                    .map(|(_, size)| *size),
                at_ms: at,
            };
            self.buf.push_back((e, None));
        }
        if self.buf.len() == before {
            return false;
        }
        if let Some(last) = self.buf.back_mut() {
            last.1 = Some((shard, entry.to_string()));
        }
        true
    }

    /// Waits (`XREAD BLOCK`, on a connection of its own) up to `left` for a new entry on one
    /// shard's log (shards in turn; at most 200 ms each when there are several).
    async fn block(&mut self, left: Duration) -> Result<()> {
        let q = self.queue.clone();
        let n = q.shards.len();
        let shard = self.next_shard % n;
        self.next_shard += 1;
        let wait = if n > 1 {
            left.min(Duration::from_millis(200))
        } else {
            left
        };
        if self.conn.is_none() {
            self.conn = Some(q.client.blocking_conn().await?);
        }
        let conn = self.conn.as_mut().expect("just set");
        let r: redis::RedisResult<Value> = redis::cmd("XREAD")
            .arg("COUNT")
            .arg(1)
            .arg("BLOCK")
            .arg(wait.as_millis().max(1) as u64)
            .arg("STREAMS")
            .arg(q.shards[shard].events())
            .arg(&self.places[shard])
            .query_async(conn)
            .await;
        if let Err(e) = r {
            self.conn = None;
            return Err(q.client.err(e));
        }
        Ok(())
    }

    /// The events as a `Stream` (waiting without limit for each).
    pub fn into_stream(self) -> impl futures_util::Stream<Item = Result<Event>> {
        futures_util::stream::unfold(self, |mut ev| async move {
            match ev.next(None).await {
                Ok(Some(e)) => Some((Ok(e), ev)),
                Ok(None) => Some((Err(Error::invalid("unreachable: no timeout")), ev)),
                Err(e) => Some((Err(e), ev)),
            }
        })
    }
}
