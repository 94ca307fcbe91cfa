//! `decodeEnvelope` / `encodeEnvelope`: thin wrappers over `tideq::Envelope::decode`/`encode`,
//! for the shared test vectors and for tools that inspect stored jobs. The object uses the
//! envelope's own field names (snake_case, as in the format's documentation), since it *is* the
//! wire format; `payload` is a Buffer.

// The exported functions are registered with Node at load time; a `cargo test` build sees no
// caller.
#![cfg_attr(test, allow(dead_code))]

use napi::bindgen_prelude::*;
use napi_derive::napi;

use crate::convert::{boolean, bytes, count, count_u32, string, Options};
use crate::errors::{invalid, throw, Res};
use crate::jobs::Bytes;

/// A job envelope's backoff field, as stored.
#[napi(object, object_from_js = false)]
pub struct EnvelopeBackoff {
    #[napi(ts_type = "'fixed' | 'exponential'")]
    pub kind: String,
    #[napi(js_name = "base_ms")]
    pub base_ms: i64,
    #[napi(js_name = "max_ms")]
    pub max_ms: i64,
    pub jitter: bool,
}

/// A decoded job envelope (version 1 fields, wire names).
#[napi(object, object_from_js = false, use_nullable = true)]
pub struct Envelope {
    pub v: u32,
    pub id: String,
    #[napi(ts_type = "Buffer")]
    pub payload: Bytes,
    /// Producer clock, ms since the epoch (informational).
    #[napi(js_name = "created_at")]
    pub created_at: i64,
    #[napi(js_name = "max_attempts")]
    pub max_attempts: u32,
    pub backoff: EnvelopeBackoff,
    #[napi(js_name = "timeout_ms")]
    pub timeout_ms: Option<i64>,
}

fn from_core(e: tideq::Envelope) -> Envelope {
    Envelope {
        v: e.v as u32,
        id: e.id,
        payload: Bytes(e.payload),
        created_at: e.created_at as i64,
        max_attempts: e.max_attempts,
        backoff: EnvelopeBackoff {
            kind: match e.backoff.kind {
                tideq::BackoffKind::Fixed => "fixed",
                tideq::BackoffKind::Exponential => "exponential",
            }
            .into(),
            base_ms: e.backoff.base_ms as i64,
            max_ms: e.backoff.max_ms as i64,
            jitter: e.backoff.jitter,
        },
        timeout_ms: e.timeout_ms.map(|t| t as i64),
    }
}

const ENVELOPE_KEYS: &[&str] = &[
    "v",
    "id",
    "payload",
    "created_at",
    "max_attempts",
    "backoff",
    "timeout_ms",
];
const BACKOFF_KEYS: &[&str] = &["kind", "base_ms", "max_ms", "jitter"];

fn required<T>(what: &str, v: Option<T>) -> Res<T> {
    v.ok_or_else(|| invalid(format!("envelope.{what} is required")))
}

fn to_core(obj: &Unknown) -> Res<tideq::Envelope> {
    let o = Options::new("envelope", Some(obj), ENVELOPE_KEYS)?;
    let b = required("backoff", o.raw("backoff")?)?;
    let b = Options::new("envelope.backoff", Some(&b), BACKOFF_KEYS)?;
    let kind = match required("backoff.kind", b.get("kind", string)?)?.as_str() {
        "fixed" => tideq::BackoffKind::Fixed,
        "exponential" => tideq::BackoffKind::Exponential,
        other => {
            return Err(invalid(format!(
                "envelope.backoff.kind must be 'fixed' or 'exponential'; got {other:?}"
            )))
        }
    };
    let v = required("v", o.get("v", count)?)?;
    Ok(tideq::Envelope {
        v: u8::try_from(v)
            .map_err(|_| invalid(format!("envelope.v must be at most 255; got {v}")))?,
        id: required("id", o.get("id", string)?)?,
        payload: required("payload", o.get("payload", bytes)?)?,
        created_at: required("created_at", o.get("created_at", count)?)? as u64,
        max_attempts: required("max_attempts", o.get("max_attempts", count_u32)?)?,
        backoff: tideq::Backoff {
            kind,
            base_ms: required("backoff.base_ms", b.get("base_ms", count)?)? as u64,
            max_ms: required("backoff.max_ms", b.get("max_ms", count)?)? as u64,
            jitter: required("backoff.jitter", b.get("jitter", boolean)?)?,
        },
        timeout_ms: o.get("timeout_ms", count)?.map(|t| t as u64),
    })
}

/// Decodes a stored job envelope (MessagePack). Throws `INVALID_ARGUMENT` on bytes that are not
/// an envelope of a supported version.
#[napi(ts_args_type = "bytes: Buffer | Uint8Array")]
pub fn decode_envelope(env: &Env, bytes_arg: Unknown) -> Result<Envelope> {
    let res = bytes("bytes", &bytes_arg)
        .and_then(|b| Ok(tideq::Envelope::decode(&b)?))
        .map(from_core);
    throw(env, res)
}

/// Encodes a job envelope (as `decodeEnvelope` returns it) to its MessagePack bytes.
#[napi(ts_args_type = "envelope: Envelope", ts_return_type = "Buffer")]
pub fn encode_envelope(env: &Env, envelope: Unknown) -> Result<Bytes> {
    let res = to_core(&envelope).map(|e| Bytes(e.encode()));
    throw(env, res)
}
