//! A schedule's task arguments, checked when it is set: every job it fires would fail on
//! arguments that do not decode.

use crate::envelope::PayloadFormat;
use crate::error::{Error, Result};

/// A schedule's task arguments decode in `format` (an empty payload is no arguments, `null`).
pub(super) fn check_task_args(payload: &[u8], format: PayloadFormat) -> Result<()> {
    if payload.is_empty() {
        return Ok(());
    }
    match format {
        PayloadFormat::Json => serde_json::from_slice::<serde::de::IgnoredAny>(payload)
            .map(drop)
            .map_err(|e| {
                Error::invalid(format!(
                    "the schedule's task arguments are not JSON ({e}): give them as JSON, or set \
                     format to msgpack for MessagePack"
                ))
            }),
        PayloadFormat::Msgpack => crate::task::decode_msgpack_value(payload).map(drop),
    }
}
