//! What a handler may ask for instead of a plain failure, by returning one of these as its
//! error: run the job again later without using an attempt ([`Snooze`]), hold the queue or the
//! job's group for a while after, e.g., an HTTP 429 ([`BackOff`]), or give up at once
//! ([`DontRetry`]). The worker finds them by type (`downcast_ref`), also as the `source` of
//! another error.

use std::time::Duration;

use super::handler::HandlerError;

/// Run the job again after `delay`, without using an attempt: the job's attempts (and so the
/// backoff of a later failure) are as if this delivery never happened, no error is recorded, and
/// a job may snooze any number of times. `delay` zero: it is ready again at once, at the back of
/// its queue. Counted in stats as `snoozed`, with a `snoozed` event; never as a failure.
///
/// ```
/// # use std::time::Duration;
/// # async fn poll_export() -> Result<Option<Vec<u8>>, tideq::HandlerError> {
/// // The export is not ready yet: look again in 30 seconds.
/// Err(tideq::Snooze::new(Duration::from_secs(30)).into())
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Snooze {
    pub delay: Duration,
}

impl Snooze {
    pub fn new(delay: Duration) -> Self {
        Snooze { delay }
    }
}

impl std::fmt::Display for Snooze {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "snoozed for {} ms", self.delay.as_millis())
    }
}

impl std::error::Error for Snooze {}

/// What a [`BackOff`] holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackOffScope {
    /// The whole queue (every shard): no worker starts any of its jobs.
    Queue,
    /// The job's group: the group's jobs wait, the other groups go on. A job without a group
    /// holds the queue.
    Group,
}

/// Hold the queue, or the job's group, for `delay` (the service the handler calls said "too many
/// requests"): nothing of it starts until then, and the job runs again after it, first in line,
/// without using an attempt (as with [`Snooze`]). A later back-off of the same queue or group
/// extends the hold, an earlier one never shortens it. Counted as `snoozed`.
///
/// ```
/// # use std::time::Duration;
/// # async fn call_api() -> Result<Option<Vec<u8>>, tideq::HandlerError> {
/// # let status = 429;
/// if status == 429 {
///     // The tenant's quota is spent: its jobs wait a minute, the other tenants' go on.
///     return Err(tideq::BackOff::group(Duration::from_secs(60)).into());
/// }
/// # Ok(None)
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BackOff {
    pub delay: Duration,
    pub scope: BackOffScope,
}

impl BackOff {
    /// Holds the whole queue for `delay`.
    pub fn queue(delay: Duration) -> Self {
        BackOff {
            delay,
            scope: BackOffScope::Queue,
        }
    }

    /// Holds the job's group for `delay` (the queue, for a job without a group).
    pub fn group(delay: Duration) -> Self {
        BackOff {
            delay,
            scope: BackOffScope::Group,
        }
    }
}

impl std::fmt::Display for BackOff {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let what = match self.scope {
            BackOffScope::Queue => "queue",
            BackOffScope::Group => "group",
        };
        write!(
            f,
            "backing off the {what} for {} ms",
            self.delay.as_millis()
        )
    }
}

impl std::error::Error for BackOff {}

/// Fail the job for good: it is dead-lettered at once with this error, whatever attempts it has
/// left (a payload that can never be processed, a permission the job will never get). Counted as
/// a failure, with the usual `failed` and `dead` events.
///
/// ```
/// # async fn charge() -> Result<Option<Vec<u8>>, tideq::HandlerError> {
/// return Err(tideq::DontRetry::new("card declined: retrying cannot help").into());
/// # }
/// ```
#[derive(Debug)]
pub struct DontRetry {
    message: String,
    source: Option<HandlerError>,
}

impl DontRetry {
    /// Gives up with this error text.
    pub fn new(message: impl std::fmt::Display) -> Self {
        DontRetry {
            message: message.to_string(),
            source: None,
        }
    }

    /// Gives up because of `error` (its text is the job's error; it stays the `source`).
    pub fn because(error: impl Into<HandlerError>) -> Self {
        let source = error.into();
        DontRetry {
            message: source.to_string(),
            source: Some(source),
        }
    }
}

impl std::fmt::Display for DontRetry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for DontRetry {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

/// What a handler's error asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Run again after this long, the attempt uncounted; with a scope, hold it that long too.
    Later(Duration, Option<BackOffScope>),
    /// Dead-letter now.
    DontRetry,
    /// A failure: retried by the job's backoff, or dead-lettered after its last attempt.
    Fail,
}

impl Verdict {
    /// The first of [`Snooze`], [`BackOff`], [`DontRetry`] found in `error` or its sources.
    pub(crate) fn of(error: &(dyn std::error::Error + 'static)) -> Verdict {
        let mut next = Some(error);
        while let Some(e) = next {
            if let Some(s) = e.downcast_ref::<Snooze>() {
                return Verdict::Later(s.delay, None);
            }
            if let Some(b) = e.downcast_ref::<BackOff>() {
                return Verdict::Later(b.delay, Some(b.scope));
            }
            if e.downcast_ref::<DontRetry>().is_some() {
                return Verdict::DontRetry;
            }
            next = e.source();
        }
        Verdict::Fail
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Wrapper(HandlerError);
    impl std::fmt::Display for Wrapper {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "while calling the API: {}", self.0)
        }
    }
    impl std::error::Error for Wrapper {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&*self.0)
        }
    }

    fn verdict(e: HandlerError) -> Verdict {
        Verdict::of(&*e)
    }

    #[test]
    fn each_outcome_is_found_by_its_type_also_as_a_source() {
        let d = Duration::from_millis(1500);
        assert_eq!(verdict(Snooze::new(d).into()), Verdict::Later(d, None));
        assert_eq!(
            verdict(BackOff::group(d).into()),
            Verdict::Later(d, Some(BackOffScope::Group))
        );
        assert_eq!(
            verdict(BackOff::queue(d).into()),
            Verdict::Later(d, Some(BackOffScope::Queue))
        );
        assert_eq!(verdict(DontRetry::new("no").into()), Verdict::DontRetry);
        assert_eq!(
            verdict(Box::new(Wrapper(Snooze::new(d).into()))),
            Verdict::Later(d, None)
        );
        assert_eq!(verdict("plain".into()), Verdict::Fail);
    }

    #[test]
    fn dont_retry_because_keeps_the_error_text_and_source() {
        let e = DontRetry::because(std::io::Error::other("disk gone"));
        assert_eq!(e.to_string(), "disk gone");
        assert!(std::error::Error::source(&e)
            .and_then(|s| s.downcast_ref::<std::io::Error>())
            .is_some());
    }
}
