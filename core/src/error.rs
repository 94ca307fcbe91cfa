//! One error type for the whole library, with stable string codes that the bindings expose
//! unchanged (`err.code` in Node, `TideqError.code` in Python).

use std::fmt;
use std::sync::Arc;

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
    /// Redis refused the credentials, or requires some and none were given. Not transient:
    /// workers and consumers stop on it.
    Auth,
    /// The Redis (ACL) user may not run a command tideq needs, or touch a key. Not transient:
    /// workers and consumers stop on it.
    Permission,
    /// Redis is at `maxmemory` with the `noeviction` policy and refuses writes (reads work).
    OutOfMemory,
    /// The server at the address did not answer as Redis does.
    NotRedis,
    /// Redis may evict keys (its `maxmemory-policy` is not `noeviction`) and the client was
    /// configured to refuse that (`EvictionCheck::Refuse`).
    EvictionPolicy,
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
    /// The job is not in a state the operation applies to (`promote` needs a delayed job,
    /// `delete` a dead or completed one); the message names its state.
    JobWrongState,
    /// The lease expired and the job was redelivered: this worker may no longer ack, fail or
    /// extend it.
    LeaseLost,
    /// The write reached the primary but not enough replicas confirmed it in time
    /// (`Config::with_replica_ack`).
    NotReplicated,
    /// The job waited for did not complete: it went to the dead letters (the message holds its
    /// last error) or was cancelled.
    JobFailed,
    /// A wait ran out of time before what it waited for happened (nothing was changed).
    Timeout,
    /// The server is older than the versions tideq supports (Redis 7.0, Valkey 7.2).
    NotSupported,
}

impl ErrorKind {
    /// The stable string code (`INVALID_ARGUMENT`, `CONNECTION`, ...).
    pub fn code(self) -> &'static str {
        match self {
            ErrorKind::InvalidArgument => "INVALID_ARGUMENT",
            ErrorKind::PayloadTooLarge => "PAYLOAD_TOO_LARGE",
            ErrorKind::Connection => "CONNECTION",
            ErrorKind::Auth => "AUTH",
            ErrorKind::Permission => "PERMISSION",
            ErrorKind::OutOfMemory => "OUT_OF_MEMORY",
            ErrorKind::NotRedis => "NOT_REDIS",
            ErrorKind::EvictionPolicy => "EVICTION_POLICY",
            ErrorKind::Redis => "REDIS",
            ErrorKind::Forked => "FORKED",
            ErrorKind::Closed => "CLOSED",
            ErrorKind::JobNotFound => "JOB_NOT_FOUND",
            ErrorKind::JobNotCancellable => "JOB_NOT_CANCELLABLE",
            ErrorKind::JobWrongState => "JOB_WRONG_STATE",
            ErrorKind::LeaseLost => "LEASE_LOST",
            ErrorKind::NotReplicated => "NOT_REPLICATED",
            ErrorKind::JobFailed => "JOB_FAILED",
            ErrorKind::Timeout => "TIMEOUT",
            ErrorKind::NotSupported => "NOT_SUPPORTED",
        }
    }

    /// Every kind, for bindings that build one exception class per code.
    pub const ALL: &'static [ErrorKind] = &[
        ErrorKind::InvalidArgument,
        ErrorKind::PayloadTooLarge,
        ErrorKind::Connection,
        ErrorKind::Auth,
        ErrorKind::Permission,
        ErrorKind::OutOfMemory,
        ErrorKind::NotRedis,
        ErrorKind::EvictionPolicy,
        ErrorKind::Redis,
        ErrorKind::Forked,
        ErrorKind::Closed,
        ErrorKind::JobNotFound,
        ErrorKind::JobNotCancellable,
        ErrorKind::JobWrongState,
        ErrorKind::LeaseLost,
        ErrorKind::NotReplicated,
        ErrorKind::JobFailed,
        ErrorKind::Timeout,
        ErrorKind::NotSupported,
    ];
}

/// A tideq error: a kind plus a human-readable message, and the error that caused it, if any
/// ([`source`](std::error::Error::source): a `redis::RedisError`, an I/O or parse error).
/// Neither the message nor the source ever contains credentials: a Redis error whose text holds
/// the password is kept as its redacted text only.
#[derive(Debug, Clone)]
pub struct Error {
    kind: ErrorKind,
    message: String,
    source: Option<Arc<dyn std::error::Error + Send + Sync + 'static>>,
}

/// Two errors are equal when their kind and message are (whatever caused them).
impl PartialEq for Error {
    fn eq(&self, other: &Self) -> bool {
        self.kind == other.kind && self.message == other.message
    }
}

impl Eq for Error {}

/// A Redis error's text with the password removed: the source kept in its place.
#[derive(Debug)]
struct Redacted(String);

impl fmt::Display for Redacted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Redacted {}

/// Shorthand for `std::result::Result<T, tideq::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
            source: None,
        }
    }

    /// The same error, caused by `source` (what [`std::error::Error::source`] returns).
    pub fn with_source(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.source = Some(Arc::new(source));
        self
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
        Error {
            message: format!("{what}: {}", self.message),
            ..self
        }
    }

    /// The same error (kind and source) with another message.
    pub(crate) fn with_message(self, message: String) -> Self {
        Error { message, ..self }
    }

    /// The same error with the queue and the operation in front of its message, for errors that
    /// come from Redis (the others already say what was wrong with the call's own arguments).
    pub(crate) fn in_operation(self, queue: &str, op: &str) -> Self {
        match self.kind {
            ErrorKind::Connection
            | ErrorKind::Auth
            | ErrorKind::Permission
            | ErrorKind::OutOfMemory
            | ErrorKind::NotRedis
            | ErrorKind::EvictionPolicy
            | ErrorKind::Redis
            | ErrorKind::NotReplicated
            | ErrorKind::NotSupported => self.context(&format!("queue {queue:?}: {op}")),
            _ => self,
        }
    }

    /// Maps a redis-rs error, removing `secret` (the password) from the text if it appears.
    /// One message per cause, whatever the call path (a command, a pipeline or a script).
    pub(crate) fn from_redis(err: redis::RedisError, secret: Option<&str>) -> Self {
        let mut text = err.to_string();
        let mut redacted = false;
        if let Some(s) = secret.filter(|s| !s.is_empty() && text.contains(*s)) {
            text = text.replace(s, "***");
            redacted = true;
        }
        // The source: redis-rs's error as it is, unless its text held the password.
        let source: Arc<dyn std::error::Error + Send + Sync> = if redacted {
            Arc::new(Redacted(text.clone()))
        } else {
            Arc::new(err.clone())
        };
        let kind = classify(&err, &text);
        // A pipeline reports each failed command with its index; one cause, said once.
        if let Some(first) = first_pipeline_error(&text) {
            text = first.to_string();
        }
        let message = match kind {
            ErrorKind::Auth if text.starts_with(crate::client::PROVIDER_FAILED) => {
                let why = err.detail().unwrap_or_default();
                format!("{}: {why}", crate::client::PROVIDER_FAILED)
            }
            ErrorKind::Auth
                if text.contains("WRONGPASS")
                    || err.kind() == redis::ErrorKind::AuthenticationFailed =>
            {
                "Redis refused the username or password (WRONGPASS)".to_string()
            }
            ErrorKind::Auth => "Redis requires a password and none was given (NOAUTH): put it in \
                                the URL (redis://:PASSWORD@host:6379) or pass it as the password \
                                option"
                .to_string(),
            ErrorKind::OutOfMemory => "Redis is out of memory (maxmemory reached and the \
                                       noeviction policy refuses writes; reads still work): \
                                       free memory or raise maxmemory"
                .to_string(),
            ErrorKind::Permission if !text.contains("@user_script:") => match denied(&text) {
                Some(command) => format!(
                    "the Redis user may not run {command} (see 'Least privilege', \
                     docs/security.md, for the ACL each role needs)"
                ),
                None => text,
            },
            ErrorKind::Connection if err.is_cluster_error() => format!(
                "the Redis Cluster did not settle in time (a failover or a reshard), so the \
                 command did not run: {text}"
            ),
            ErrorKind::NotRedis => format!(
                "the server did not answer as Redis does: {} (is something else listening on \
                 that port?)",
                what_answered(&text)
            ),
            _ => text,
        };
        Error {
            kind,
            message,
            source: Some(source),
        }
    }

    /// True for errors that retrying cannot fix (credentials, permissions, a key of the queue
    /// holding another kind of value than tideq keeps there): a worker or consumer stops on them
    /// instead of retrying forever. A credentials provider that failed is asked again on the next
    /// connection, so its failure is not fatal.
    pub fn is_fatal(&self) -> bool {
        let provider_failed = self.message.contains(crate::client::PROVIDER_FAILED);
        (matches!(self.kind, ErrorKind::Auth | ErrorKind::Permission) && !provider_failed)
            || self.is_wrong_type()
    }

    /// A key of the queue holds another kind of value than tideq keeps there (Redis'
    /// `WRONGTYPE`): something else wrote it.
    pub(crate) fn is_wrong_type(&self) -> bool {
        self.kind == ErrorKind::Redis && self.message.contains("WRONGTYPE")
    }
}

/// The first command error of redis-rs's `Pipeline failures: [(Index 0, error: ...), ...]`.
fn first_pipeline_error(text: &str) -> Option<&str> {
    let rest = text.strip_prefix("Pipeline failures: [(Index ")?;
    let rest = &rest[rest.find("error: ")? + "error: ".len()..];
    let end = rest.find("), (Index ").or_else(|| rest.rfind(")]"))?;
    Some(&rest[..end])
}

/// The command an ACL denial names (`... no permissions to run the 'zcard' command`).
fn denied(text: &str) -> Option<&str> {
    let start = text.find("permissions to run the '")? + "permissions to run the '".len();
    let len = text[start..].find('\'')?;
    Some(&text[start..start + len])
}

/// Server error codes (the first word of an error reply), the same on Redis and Valkey, and the
/// kind each one maps to. Codes not listed are `REDIS` errors (or connection errors, when the
/// client saw the connection fail).
pub(crate) const CODES: &[(&str, ErrorKind)] = &[
    ("NOAUTH", ErrorKind::Auth),
    ("WRONGPASS", ErrorKind::Auth),
    ("NOPERM", ErrorKind::Permission),
    ("OOM", ErrorKind::OutOfMemory),
    ("LOADING", ErrorKind::Connection),
    ("MASTERDOWN", ErrorKind::Connection),
    ("NOSCRIPT", ErrorKind::Redis),
    ("BUSY", ErrorKind::Redis),
    ("READONLY", ErrorKind::Redis),
    // A Redis Cluster moving (a failover, a reshard) that did not settle while the call waited:
    // the command did not run, and a retry later works.
    ("MOVED", ErrorKind::Connection),
    ("ASK", ErrorKind::Connection),
    ("TRYAGAIN", ErrorKind::Connection),
    ("CLUSTERDOWN", ErrorKind::Connection),
    ("CROSSSLOT", ErrorKind::Redis),
    ("EXECABORT", ErrorKind::Redis),
];

/// Errors that come with the generic `ERR` code (a command denied inside a script, chiefly),
/// which each server words its own way: (server, text, kind). Matched when no code of [`CODES`]
/// says more.
pub(crate) const WORDINGS: &[(&str, &str, ErrorKind)] = &[
    // A command, or a key, denied by ACL inside a script.
    (
        "Redis 7",
        "The user executing the script can't run this command",
        ErrorKind::Permission,
    ),
    (
        "Redis 7",
        "The user executing the script can't access at least one of the keys",
        ErrorKind::Permission,
    ),
    (
        "Valkey 7.2, 8",
        "ACL failure in script",
        ErrorKind::Permission,
    ),
    // A command or key denied outside a script, where the code was lost (a pipeline's text).
    (
        "Redis 7",
        "this user has no permissions to run the",
        ErrorKind::Permission,
    ),
    (
        "Valkey 8",
        "has no permissions to run the",
        ErrorKind::Permission,
    ),
    (
        "Redis 7, Valkey 8",
        "permissions to access",
        ErrorKind::Permission,
    ),
    // A write refused at maxmemory inside a script.
    (
        "Redis 7, Valkey 8",
        "OOM command not allowed",
        ErrorKind::OutOfMemory,
    ),
    // A command sent before AUTH on a server with a password, as some servers word it.
    ("Redis 6, 7", "unauthenticated multibulk", ErrorKind::Auth),
    ("Redis 6, 7", "unauthenticated bulk", ErrorKind::Auth),
];

/// The kind a server error code maps to ([`CODES`]).
fn kind_of_code(code: &str) -> Option<ErrorKind> {
    CODES.iter().find(|(c, _)| *c == code).map(|(_, k)| *k)
}

/// The kind an error's text says, by a code at the start of one of its messages (a pipeline's
/// text holds several) or by a known wording ([`WORDINGS`]).
fn kind_of_text(text: &str) -> Option<ErrorKind> {
    let coded = text
        .split(|c: char| !(c.is_ascii_uppercase()))
        .filter(|word| word.len() >= 2)
        .find_map(|word| match word {
            // Words that could be part of a message rather than a code are only codes at the start.
            "ASK" | "BUSY" | "OOM" | "LOADING" | "MOVED" | "TRYAGAIN" | "CLUSTERDOWN" => None,
            w => kind_of_code(w),
        });
    let starts = text.split_whitespace().next().and_then(kind_of_code);
    starts.or(coded).or_else(|| {
        WORDINGS
            .iter()
            .find(|(_, wording, _)| text.contains(wording))
            .map(|(_, _, k)| *k)
    })
}

/// What a reply that is not Redis's protocol looked like, in one line, from the parser's message
/// (`Unexpected `72`` lines, one per byte it could not take): an HTTP server, or the bytes.
fn what_answered(parser: &str) -> String {
    let bytes: Vec<u8> = parser
        .split("Unexpected `")
        .skip(1)
        .filter_map(|rest| rest.split('`').next()?.parse::<u8>().ok())
        .collect();
    if bytes.is_empty() {
        return "its reply could not be read".to_string();
    }
    if bytes.contains(&b'H') && bytes.iter().all(|b| b"HTTP/".contains(b)) {
        return "it answered as an HTTP server does".to_string();
    }
    let shown: Vec<String> = bytes
        .iter()
        .map(|&b| match b {
            0x21..=0x7e => format!("'{}'", b as char),
            _ => format!("0x{b:02x}"),
        })
        .collect();
    format!(
        "its reply held {} where Redis's protocol allows none",
        shown.join(", ")
    )
}

fn classify(err: &redis::RedisError, text: &str) -> ErrorKind {
    use redis::ErrorKind as K;
    if err.kind() == K::AuthenticationFailed {
        return ErrorKind::Auth;
    }
    let by_code = err.code().and_then(kind_of_code);
    // A code that says only `ERR` (or none: a pipeline's summary) leaves the text to say more.
    let by_text = || match by_code {
        Some(ErrorKind::Redis) | None => kind_of_text(text).filter(|k| *k != ErrorKind::Redis),
        Some(_) => None,
    };
    if let Some(kind) = by_text().or(by_code.filter(|k| *k != ErrorKind::Redis)) {
        kind
    } else if err.kind() == K::Server(redis::ServerErrorKind::NoPerm) {
        ErrorKind::Permission
    } else if err.kind() == K::Parse {
        ErrorKind::NotRedis
    } else if is_connection_error(err) {
        ErrorKind::Connection
    } else if err.kind() == K::InvalidClientConfig {
        ErrorKind::InvalidArgument
    } else {
        ErrorKind::Redis
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
            K::ClusterConnectionNotFound
                | K::Server(redis::ServerErrorKind::BusyLoading)
                | K::Server(redis::ServerErrorKind::MasterDown)
        )
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind.code(), self.message)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

/// `text` cut to at most `max` bytes (at a character boundary) with `…` after a cut: what is
/// stored or logged of a handler's error, however large the error was.
pub(crate) fn capped_text(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut cut = max;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}…", &text[..cut])
}

/// `f`, with the queue and the operation in front of the errors Redis gives
/// ([`Error::in_operation`]). The operation's future is boxed (as a trait object) before it is
/// wrapped: nested by type, it would deepen every future that awaits it past the compiler's
/// default type-layout depth (one allocation per call, next to a Redis round trip).
pub(crate) fn in_operation<'a, T: 'a>(
    queue: &'a str,
    op: &'static str,
    f: impl std::future::Future<Output = Result<T>> + Send + 'a,
) -> impl std::future::Future<Output = Result<T>> + Send + 'a {
    let f: std::pin::Pin<Box<dyn std::future::Future<Output = Result<T>> + Send + 'a>> =
        Box::pin(f);
    async move { f.await.map_err(|e| e.in_operation(queue, op)) }
}

#[cfg(test)]
mod tests;
