//! The job envelope: what a producer stores and a worker receives, in MessagePack (a map with
//! named fields, so other tools can read it). Version 1 fields:
//!
//! | field | type | meaning |
//! |---|---|---|
//! | `v` | int | envelope version, `1` |
//! | `id` | str | job id |
//! | `payload` | bin | the user's bytes, untouched |
//! | `created_at` | int | ms since the epoch, producer clock (informational; scheduling uses Redis time) |
//! | `max_attempts` | int | deliveries before dead-lettering |
//! | `backoff` | map | `{kind: "fixed"\|"exponential", base_ms, max_ms, jitter}` |
//! | `timeout_ms` | int or nil | longest run time of one attempt |
//! | `task` | str (optional) | the task's name, for workers that dispatch by name |
//! | `format` | str (optional) | how `payload` encodes the task's arguments: `"json"` or `"msgpack"`; absent: raw bytes |
//! | `trace` | map str → str (optional) | the producer's trace context as W3C Trace Context headers (`traceparent`, and `tracestate` when set), so the worker's span continues the producer's trace |
//! | `args_from` | str (optional) | a flow job whose payload is filled when it runs: `"previous"` (a chain's link: its one child's result) or `"children"` (a chord's callback: its children's results, a JSON array in their order) |
//!
//! Readers ignore unknown fields, so later versions can add fields without breaking old workers
//! (the optional fields are left out when unset, so older readers never see them).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::{Error, ErrorKind, Result};

/// The generic MessagePack value [`Envelope::to_value`] and [`Envelope::from_value`] use.
pub use rmpv::Value;

pub const ENVELOPE_VERSION: u8 = 1;

/// Longest retry delay a backoff may give: one year, in ms.
pub const MAX_BACKOFF_MS: u64 = 365 * 24 * 3600 * 1000;

/// How long to wait before retrying a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Backoff {
    pub kind: BackoffKind,
    /// The first retry's delay (fixed: every retry's).
    pub base_ms: u64,
    /// Upper bound of any delay.
    pub max_ms: u64,
    /// Randomise each delay within [delay/2, delay] to spread retry storms.
    pub jitter: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BackoffKind {
    Fixed,
    Exponential,
}

impl BackoffKind {
    /// Every kind, by its wire name.
    pub const ALL: [BackoffKind; 2] = [BackoffKind::Fixed, BackoffKind::Exponential];

    /// The wire name: `"fixed"` or `"exponential"`.
    pub fn as_str(self) -> &'static str {
        match self {
            BackoffKind::Fixed => "fixed",
            BackoffKind::Exponential => "exponential",
        }
    }

    /// The kind named `name` (`INVALID_ARGUMENT` for anything else).
    pub fn parse(name: &str) -> Result<Self> {
        Self::ALL
            .into_iter()
            .find(|k| k.as_str() == name)
            .ok_or_else(|| {
                Error::invalid(format!(
                    "backoff kind must be 'fixed' or 'exponential', not {name:?}"
                ))
            })
    }
}

impl Default for Backoff {
    /// Exponential from 1 s, doubling, capped at 1 hour, with jitter.
    fn default() -> Self {
        Backoff {
            kind: BackoffKind::Exponential,
            base_ms: 1000,
            max_ms: 3_600_000,
            jitter: true,
        }
    }
}

impl Backoff {
    /// The backoff map's field names, as in the envelope.
    pub const FIELDS: [&'static str; 4] = ["kind", "base_ms", "max_ms", "jitter"];

    pub fn fixed(ms: u64) -> Self {
        Backoff {
            kind: BackoffKind::Fixed,
            base_ms: ms,
            max_ms: ms,
            jitter: false,
        }
    }

    pub fn exponential(base_ms: u64, max_ms: u64) -> Self {
        Backoff {
            kind: BackoffKind::Exponential,
            base_ms,
            max_ms,
            jitter: true,
        }
    }

    /// The delay before the retry that follows failed attempt `attempt` (1-based).
    pub fn delay_ms(&self, attempt: u32) -> u64 {
        let raw = match self.kind {
            BackoffKind::Fixed => self.base_ms,
            BackoffKind::Exponential => {
                let shift = attempt.saturating_sub(1).min(40);
                self.base_ms.saturating_mul(1u64 << shift)
            }
        };
        // An envelope made by hand may hold any numbers: no delay parks a job beyond a year.
        let capped = raw.min(self.max_ms.max(self.base_ms)).min(MAX_BACKOFF_MS);
        if self.jitter && capped > 1 {
            capped / 2 + fastrand::u64(0..=capped - capped / 2)
        } else {
            capped
        }
    }

    /// Checks the policy (`max_ms >= base_ms`); queues and enqueues check it too.
    pub fn validate(&self) -> Result<()> {
        if self.max_ms < self.base_ms {
            return Err(Error::invalid("backoff max_ms must be >= base_ms"));
        }
        if self.max_ms > MAX_BACKOFF_MS {
            return Err(Error::invalid(format!(
                "backoff delays are at most {MAX_BACKOFF_MS} ms (one year); got {} ms",
                self.max_ms
            )));
        }
        Ok(())
    }
}

/// How a job's payload encodes its task's arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PayloadFormat {
    /// UTF-8 JSON text (the default for tasks).
    Json,
    /// MessagePack.
    Msgpack,
}

impl PayloadFormat {
    /// The wire name: `"json"` or `"msgpack"`.
    pub fn as_str(self) -> &'static str {
        match self {
            PayloadFormat::Json => "json",
            PayloadFormat::Msgpack => "msgpack",
        }
    }

    /// The format named `name` (`INVALID_ARGUMENT` for anything else).
    pub fn parse(name: &str) -> Result<Self> {
        match name {
            "json" => Ok(PayloadFormat::Json),
            "msgpack" => Ok(PayloadFormat::Msgpack),
            _ => Err(Error::invalid(format!(
                "format must be 'json' or 'msgpack', not {name:?}"
            ))),
        }
    }
}

/// A job as stored in Redis and handed to workers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Envelope {
    pub v: u8,
    pub id: String,
    #[serde(with = "serde_bytes")]
    pub payload: Vec<u8>,
    pub created_at: u64,
    pub max_attempts: u32,
    pub backoff: Backoff,
    pub timeout_ms: Option<u64>,
    /// The task's name, when the job was enqueued as a task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    /// How `payload` encodes the task's arguments (absent: raw bytes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<PayloadFormat>,
    /// The producer's trace context (see [`TraceContext`]), when it had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<TraceContext>,
    /// A flow job whose payload is its children's results (see [`ArgsFrom`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args_from: Option<ArgsFrom>,
}

/// Where a flow job's payload comes from when it runs (a chain's link, a chord's callback): it
/// is enqueued without one, and the worker fills it in before the handler sees the job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ArgsFrom {
    /// Its one child's result (a chain's link after the first:
    /// [`FlowJob::chain`](crate::FlowJob::chain)).
    Previous,
    /// Its children's results, a JSON array in their order (a chord's callback:
    /// [`FlowJob::chord`](crate::FlowJob::chord)).
    Children,
}

impl ArgsFrom {
    /// The wire name: `"previous"` or `"children"`.
    pub fn as_str(self) -> &'static str {
        match self {
            ArgsFrom::Previous => "previous",
            ArgsFrom::Children => "children",
        }
    }
}

/// A trace context as the W3C Trace Context headers carry it: `traceparent` (required) and
/// `tracestate` (optional), as a string map. An OpenTelemetry propagator injects into and
/// extracts from it directly, in any language.
pub type TraceContext = BTreeMap<String, String>;

/// Longest trace context accepted on enqueue (keys and values together), in bytes.
pub const MAX_TRACE_CONTEXT_LEN: usize = 1024;

/// Checks a trace context given on enqueue: a `traceparent` of the W3C form
/// (`00-<32 hex>-<16 hex>-<2 hex>`, not all zeros), only `traceparent` and `tracestate` keys, at
/// most [`MAX_TRACE_CONTEXT_LEN`] bytes.
pub fn validate_trace_context(t: &TraceContext) -> Result<()> {
    let len: usize = t.iter().map(|(k, v)| k.len() + v.len()).sum();
    if len > MAX_TRACE_CONTEXT_LEN {
        return Err(Error::invalid(format!(
            "trace context is {len} bytes; at most {MAX_TRACE_CONTEXT_LEN}"
        )));
    }
    if let Some(k) = t.keys().find(|k| *k != "traceparent" && *k != "tracestate") {
        return Err(Error::invalid(format!(
            "trace context key {k:?} is not a W3C Trace Context header (traceparent, tracestate)"
        )));
    }
    let Some(tp) = t.get("traceparent") else {
        return Err(Error::invalid("trace context has no traceparent"));
    };
    if !is_traceparent(tp) {
        return Err(Error::invalid(format!(
            "traceparent {tp:?} is not of the form 00-<32 hex trace id>-<16 hex span id>-<2 hex flags>"
        )));
    }
    Ok(())
}

fn is_traceparent(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    let hex = |p: &str, n: usize| {
        p.len() == n
            && p.bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
    };
    let nonzero = |p: &str| p.bytes().any(|b| b != b'0');
    parts.len() == 4
        && hex(parts[0], 2)
        && parts[0] != "ff"
        && hex(parts[1], 32)
        && nonzero(parts[1])
        && hex(parts[2], 16)
        && nonzero(parts[2])
        && hex(parts[3], 2)
}

impl Envelope {
    /// The field names of the current version, in wire order. Bindings convert the envelope
    /// through [`to_value`](Self::to_value) / [`from_value`](Self::from_value), so this list
    /// and the struct are the only place the schema is written down.
    pub const FIELDS: [&'static str; 11] = [
        "v",
        "id",
        "payload",
        "created_at",
        "max_attempts",
        "backoff",
        "timeout_ms",
        "task",
        "format",
        "trace",
        "args_from",
    ];

    /// The envelope as a generic MessagePack value: a map from the wire field names (`payload`
    /// is binary, `backoff` a map of [`Backoff::FIELDS`]). What `decode_envelope` returns in the
    /// bindings.
    pub fn to_value(&self) -> Value {
        rmpv::decode::read_value(&mut self.encode().as_slice())
            .expect("an envelope always converts")
    }

    /// An envelope from a map of wire fields (what `encode_envelope` takes in the bindings).
    /// `v` defaults to the current version and `timeout_ms` to none; unknown or missing fields
    /// and values of the wrong type are `INVALID_ARGUMENT`.
    pub fn from_value(value: Value) -> Result<Self> {
        let mut value = value;
        let rmpv::Value::Map(fields) = &mut value else {
            return Err(Error::invalid("an envelope must be a map of its fields"));
        };
        check_fields("envelope", fields, &Self::FIELDS)?;
        if let Some((_, rmpv::Value::Map(b))) =
            fields.iter().find(|(k, _)| k.as_str() == Some("backoff"))
        {
            check_fields("envelope backoff", b, &Backoff::FIELDS)?;
        }
        if !fields.iter().any(|(k, _)| k.as_str() == Some("v")) {
            fields.insert(0, ("v".into(), ENVELOPE_VERSION.into()));
        }
        let mut bytes = Vec::new();
        rmpv::encode::write_value(&mut bytes, &value).expect("writing to a Vec never fails");
        rmp_serde::from_slice(&bytes)
            .map_err(|e| Error::invalid(format!("envelope: {e}")).with_source(e))
    }

    pub fn encode(&self) -> Vec<u8> {
        rmp_serde::to_vec_named(self).expect("an envelope always serializes")
    }

    pub fn decode(bytes: &[u8]) -> Result<Self> {
        let mut rest = bytes;
        let mut de = rmp_serde::Deserializer::new(&mut rest);
        let env: Envelope = serde::Deserialize::deserialize(&mut de).map_err(|e| {
            Error::new(
                ErrorKind::InvalidArgument,
                format!("not a tideq job envelope: {e}"),
            )
        })?;
        if !rest.is_empty() {
            return Err(Error::invalid(format!(
                "not a tideq job envelope: {} byte(s) after its end",
                rest.len()
            )));
        }
        if env.v == 0 || env.v > ENVELOPE_VERSION {
            return Err(Error::invalid(format!(
                "job envelope version {} is not supported (this build reads up to {ENVELOPE_VERSION})",
                env.v
            )));
        }
        Ok(env)
    }
}

/// Refuses a map key that is not a string or not one of `known`.
fn check_fields(what: &str, fields: &[(rmpv::Value, rmpv::Value)], known: &[&str]) -> Result<()> {
    for (k, _) in fields {
        match k.as_str() {
            Some(name) if known.contains(&name) => {}
            _ => {
                return Err(Error::invalid(format!(
                    "unknown {what} field {k}; known fields: {}",
                    known.join(", ")
                )))
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exponential_backoff_doubles_and_caps() {
        let b = Backoff {
            jitter: false,
            ..Backoff::exponential(100, 1000)
        };
        let d: Vec<u64> = (1..=6).map(|a| b.delay_ms(a)).collect();
        assert_eq!(d, vec![100, 200, 400, 800, 1000, 1000]);
        let j = Backoff::exponential(1000, 60_000);
        for _ in 0..100 {
            let x = j.delay_ms(3);
            assert!((2000..=4000).contains(&x), "{x}");
        }
        assert_eq!(Backoff::fixed(250).delay_ms(9), 250);
    }

    #[test]
    fn envelope_round_trips_and_rejects_garbage() {
        let e = Envelope {
            v: 1,
            id: "job-1".into(),
            payload: vec![0, 1, 2, 255],
            created_at: 1_700_000_000_000,
            max_attempts: 3,
            backoff: Backoff::default(),
            timeout_ms: Some(5000),
            task: None,
            format: None,
            trace: None,
            args_from: None,
        };
        assert_eq!(Envelope::decode(&e.encode()).unwrap(), e);
        assert!(Envelope::decode(b"not msgpack").is_err());
        let mut trailing = e.encode();
        trailing.push(0);
        let err = Envelope::decode(&trailing).unwrap_err();
        assert!(err.message().contains("after its end"), "{err}");
        let huge = Backoff {
            jitter: false,
            ..Backoff::exponential(u64::MAX / 2, u64::MAX)
        };
        assert!(huge.validate().is_err());
        assert_eq!(
            huge.delay_ms(60),
            MAX_BACKOFF_MS,
            "a hand-made envelope is clamped"
        );
        let future = Envelope { v: 9, ..e };
        assert!(Envelope::decode(&future.encode()).is_err());
    }

    #[test]
    fn the_field_lists_are_the_wire_names() {
        let e = Envelope {
            v: 1,
            id: "j".into(),
            payload: b"p".to_vec(),
            created_at: 1,
            max_attempts: 2,
            backoff: Backoff::default(),
            timeout_ms: None,
            task: Some("send".into()),
            format: Some(PayloadFormat::Json),
            trace: Some(TraceContext::from([(
                "traceparent".to_string(),
                "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01".to_string(),
            )])),
            args_from: Some(ArgsFrom::Children),
        };
        let rmpv::Value::Map(fields) = e.to_value() else {
            panic!("not a map")
        };
        let names: Vec<_> = fields.iter().map(|(k, _)| k.as_str().unwrap()).collect();
        assert_eq!(names, Envelope::FIELDS);
        let (_, backoff) = &fields[5];
        let rmpv::Value::Map(b) = backoff else {
            panic!("backoff is not a map")
        };
        let names: Vec<_> = b.iter().map(|(k, _)| k.as_str().unwrap()).collect();
        assert_eq!(names, Backoff::FIELDS);
        assert_eq!(fields[2].1, rmpv::Value::Binary(b"p".to_vec()));
        assert_eq!(Envelope::from_value(e.to_value()).unwrap(), e);
        for k in BackoffKind::ALL {
            assert_eq!(BackoffKind::parse(k.as_str()).unwrap(), k);
        }
    }

    #[test]
    fn from_value_refuses_unknown_missing_and_mistyped_fields() {
        let e = Envelope {
            v: 1,
            id: "j".into(),
            payload: vec![],
            created_at: 1,
            max_attempts: 2,
            backoff: Backoff::fixed(5),
            timeout_ms: Some(3),
            task: None,
            format: None,
            trace: None,
            args_from: None,
        };
        type Fields = Vec<(rmpv::Value, rmpv::Value)>;
        let with = |f: &dyn Fn(&mut Fields)| {
            let mut v = e.to_value();
            if let rmpv::Value::Map(m) = &mut v {
                f(m);
            }
            Envelope::from_value(v)
        };
        let err = with(&|m| m.push(("colour".into(), 1.into()))).unwrap_err();
        assert!(
            err.message().contains("unknown envelope field \"colour\""),
            "{err}"
        );
        let err = with(&|m| m.retain(|(k, _)| k.as_str() != Some("id"))).unwrap_err();
        assert!(err.message().contains("id"), "{err}");
        let err = with(&|m| m[4].1 = (-1).into()).unwrap_err();
        assert_eq!(err.code(), "INVALID_ARGUMENT");
        // `v` defaults to the current version.
        let v = with(&|m| m.retain(|(k, _)| k.as_str() != Some("v"))).unwrap();
        assert_eq!(v.v, ENVELOPE_VERSION);
    }
}
