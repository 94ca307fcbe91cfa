//! `decodeEnvelope` / `encodeEnvelope`: the job envelope (core `envelope`) for the shared test
//! vectors and for tools that inspect stored jobs. The schema is the core's alone: both go
//! through `tideq::Envelope::to_value`/`from_value` and the generic MessagePack <-> JS conversion
//! in [`crate::convert`], so the object has the wire field names (snake_case, as in the format's
//! documentation) and `payload` is a Buffer.

// The exported functions are registered with Node at load time; a `cargo test` build sees no
// caller.
#![cfg_attr(test, allow(dead_code))]

use napi::bindgen_prelude::*;
use napi_derive::napi;

use crate::convert::{bytes, from_msgpack, object, to_msgpack};
use crate::error::{throw, Res};

/// A job envelope's backoff field, as stored.
// Declared for the TypeScript definitions only; the core reads and writes the fields.
#[allow(dead_code)]
#[napi(object, object_from_js = false, object_to_js = false)]
pub struct EnvelopeBackoff {
    #[napi(ts_type = "'fixed' | 'exponential'")]
    pub kind: String,
    #[napi(js_name = "base_ms")]
    pub base_ms: i64,
    #[napi(js_name = "max_ms")]
    pub max_ms: i64,
    pub jitter: bool,
}

/// A decoded job envelope (version 1 fields, wire names; the optional ones are absent when unset).
// Declared for the TypeScript definitions only; the core reads and writes the fields.
#[allow(dead_code)]
#[napi(object, object_from_js = false, object_to_js = false)]
pub struct Envelope {
    pub v: u32,
    pub id: String,
    #[napi(ts_type = "Buffer")]
    pub payload: (),
    /// Producer clock, ms since the epoch (informational).
    #[napi(js_name = "created_at")]
    pub created_at: i64,
    #[napi(js_name = "max_attempts")]
    pub max_attempts: u32,
    pub backoff: EnvelopeBackoff,
    #[napi(js_name = "timeout_ms", ts_type = "number | null")]
    pub timeout_ms: (),
    /// The task's name (a job enqueued as a task); absent for a raw payload.
    pub task: Option<String>,
    /// How `payload` encodes the task's data; absent for raw bytes.
    #[napi(ts_type = "'json' | 'msgpack'")]
    pub format: Option<()>,
    /// The producer's trace context (W3C Trace Context headers: `traceparent`, optional
    /// `tracestate`); absent when the job has none.
    #[napi(ts_type = "Record<string, string>")]
    pub trace: Option<()>,
}

/// Decodes a stored job envelope (MessagePack). Throws `INVALID_ARGUMENT` on bytes that are not
/// an envelope of a supported version.
#[napi(
    ts_args_type = "bytes: Buffer | Uint8Array",
    ts_return_type = "Envelope"
)]
pub fn decode_envelope<'env>(env: &'env Env, bytes_arg: Unknown) -> Result<Unknown<'env>> {
    let res = bytes("bytes", &bytes_arg)
        .and_then(|b| Ok(tideq::Envelope::decode(&b)?))
        .and_then(|e| from_msgpack(env, e.to_value()));
    throw(env, res)
}

/// Encodes a job envelope (as `decodeEnvelope` returns it) to its MessagePack bytes.
#[napi(ts_args_type = "envelope: Envelope", ts_return_type = "Buffer")]
pub fn encode_envelope<'env>(env: &'env Env, envelope: Unknown) -> Result<BufferSlice<'env>> {
    let res = encode(&envelope);
    BufferSlice::copy_from(env, throw(env, res)?)
}

fn encode(envelope: &Unknown) -> Res<Vec<u8>> {
    object("envelope", envelope)?;
    let value = to_msgpack("envelope", envelope)?;
    Ok(tideq::Envelope::from_value(value)?.encode())
}
