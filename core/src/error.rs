//! One error type for the whole library, with stable string codes that the bindings expose
//! unchanged (`err.code` in Node, `TideqError.code` in Python).

use std::fmt;

/// What went wrong, as a fieldless kind whose [`code`](ErrorKind::code) never changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A name, option or item was rejected before anything was sent to Redis.
    InvalidArgument,
    /// An item or payload is larger than the configured limit.
    PayloadTooLarge,
    /// Redis could not be reached (refused, timed out, connection dropped).
    Connection,
    /// Redis answered with an error (including a script error).
    Redis,
    /// The process was forked after the runtime started; the handle cannot be used in the child.
    Forked,
    /// The consumer or worker was already stopped.
    Closed,
    /// No job with that id (or it is no longer retained).
    JobNotFound,
    /// The job is active, dead or completed, so it cannot be cancelled.
    JobNotCancellable,
    /// The lease expired and the job was redelivered: this worker may no longer ack, fail or
    /// extend it.
    LeaseLost,
    /// The write reached the primary but not enough replicas confirmed it in time
    /// (`Config::with_replica_ack`).
    NotReplicated,
}

impl ErrorKind {
    /// The stable string code (`INVALID_ARGUMENT`, `CONNECTION`, ...).
    pub fn code(self) -> &'static str {
        match self {
            ErrorKind::InvalidArgument => "INVALID_ARGUMENT",
            ErrorKind::PayloadTooLarge => "PAYLOAD_TOO_LARGE",
            ErrorKind::Connection => "CONNECTION",
            ErrorKind::Redis => "REDIS",
            ErrorKind::Forked => "FORKED",
            ErrorKind::Closed => "CLOSED",
            ErrorKind::JobNotFound => "JOB_NOT_FOUND",
            ErrorKind::JobNotCancellable => "JOB_NOT_CANCELLABLE",
            ErrorKind::LeaseLost => "LEASE_LOST",
            ErrorKind::NotReplicated => "NOT_REPLICATED",
        }
    }

    /// Every kind, for bindings that build one exception class per code.
    pub const ALL: &'static [ErrorKind] = &[
        ErrorKind::InvalidArgument,
        ErrorKind::PayloadTooLarge,
        ErrorKind::Connection,
        ErrorKind::Redis,
        ErrorKind::Forked,
        ErrorKind::Closed,
        ErrorKind::JobNotFound,
        ErrorKind::JobNotCancellable,
        ErrorKind::LeaseLost,
        ErrorKind::NotReplicated,
    ];
}

/// A tideq error: a kind plus a human-readable message. Messages never contain credentials.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
    message: String,
}

/// Shorthand for `std::result::Result<T, tideq::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
        }
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::InvalidArgument, message)
    }

    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    pub fn code(&self) -> &'static str {
        self.kind.code()
    }

    pub fn message(&self) -> &str {
        &self.message
    }

    /// The same error with `what: ` in front of its message (e.g. which item of a batch).
    pub fn context(self, what: &str) -> Self {
        Error::new(self.kind, format!("{what}: {}", self.message))
    }

    /// Maps a redis-rs error, removing `secret` (the password) from the text if it appears.
    pub(crate) fn from_redis(err: redis::RedisError, secret: Option<&str>) -> Self {
        let kind = if is_connection_error(&err) {
            ErrorKind::Connection
        } else if err.kind() == redis::ErrorKind::InvalidClientConfig {
            ErrorKind::InvalidArgument
        } else {
            ErrorKind::Redis
        };
        let mut message = err.to_string();
        if let Some(s) = secret.filter(|s| !s.is_empty()) {
            message = message.replace(s, "***");
        }
        Error::new(kind, message)
    }
}

pub(crate) fn is_connection_error(err: &redis::RedisError) -> bool {
    use redis::ErrorKind as K;
    err.is_io_error()
        || err.is_timeout()
        || err.is_connection_dropped()
        || err.is_connection_refusal()
        || matches!(
            err.kind(),
            K::AuthenticationFailed
                | K::ClusterConnectionNotFound
                | K::Server(redis::ServerErrorKind::BusyLoading)
                | K::Server(redis::ServerErrorKind::MasterDown)
        )
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind.code(), self.message)
    }
}

impl std::error::Error for Error {}
