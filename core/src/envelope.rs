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
//!
//! Readers ignore unknown fields, so later versions can add fields without breaking old workers.

use serde::{Deserialize, Serialize};

use crate::error::{Error, ErrorKind, Result};

pub const ENVELOPE_VERSION: u8 = 1;

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
        let capped = raw.min(self.max_ms.max(self.base_ms));
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
        Ok(())
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
}

impl Envelope {
    pub fn encode(&self) -> Vec<u8> {
        rmp_serde::to_vec_named(self).expect("an envelope always serializes")
    }

    pub fn decode(bytes: &[u8]) -> Result<Self> {
        let env: Envelope = rmp_serde::from_slice(bytes).map_err(|e| {
            Error::new(
                ErrorKind::InvalidArgument,
                format!("not a tideq job envelope: {e}"),
            )
        })?;
        if env.v == 0 || env.v > ENVELOPE_VERSION {
            return Err(Error::invalid(format!(
                "job envelope version {} is not supported (this build reads up to {ENVELOPE_VERSION})",
                env.v
            )));
        }
        Ok(env)
    }
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
        };
        assert_eq!(Envelope::decode(&e.encode()).unwrap(), e);
        assert!(Envelope::decode(b"not msgpack").is_err());
        let future = Envelope { v: 9, ..e };
        assert!(Envelope::decode(&future.encode()).is_err());
    }
}
