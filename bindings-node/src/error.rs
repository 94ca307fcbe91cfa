//! Errors crossing into JavaScript: every tideq error becomes a JS `Error` whose `code` is the
//! core's stable code (`INVALID_ARGUMENT`, `PAYLOAD_TOO_LARGE`, `CONNECTION`, `REDIS`, `FORKED`,
//! `CLOSED`, `JOB_NOT_FOUND`, `JOB_NOT_CANCELLABLE`, `LEASE_LOST`, `NOT_REPLICATED`). An argument
//! of the wrong JS type becomes a `TypeError`, also with `code === 'INVALID_ARGUMENT'`.
//!
//! The error object is built on the JS thread and handed to napi as a reference, so napi throws
//! (or rejects a Promise with) that very object, `code` included, instead of its own
//! `GenericFailure` error.

use napi::bindgen_prelude::*;
use napi::{JsError, JsTypeError};
use tideq::ErrorKind;

/// Why a binding call failed, before it is turned into a JS error.
#[derive(Debug)]
pub(crate) enum Failure {
    /// An error from the core; its kind gives `err.code`.
    Core(tideq::Error),
    /// A JS value of the wrong type (`TypeError`, `code` `INVALID_ARGUMENT`).
    Type(String),
}

pub(crate) type Res<T> = std::result::Result<T, Failure>;

impl From<tideq::Error> for Failure {
    fn from(e: tideq::Error) -> Self {
        Failure::Core(e)
    }
}

/// A `TypeError` naming the argument and what it should have been.
pub(crate) fn type_error(message: impl Into<String>) -> Failure {
    Failure::Type(message.into())
}

/// A plain `INVALID_ARGUMENT` error (right type, unacceptable value).
pub(crate) fn invalid(message: impl Into<String>) -> Failure {
    Failure::Core(tideq::Error::new(ErrorKind::InvalidArgument, message))
}

/// napi failed while reading a JS argument (e.g. a getter threw): reported as a bad argument.
impl From<napi::Error> for Failure {
    fn from(e: napi::Error) -> Self {
        Failure::Type(e.reason)
    }
}

/// Builds the JS error object for `failure` and wraps it so napi throws or rejects with it as is.
pub(crate) fn to_js(env: &Env, failure: Failure) -> napi::Error {
    let raw = unsafe {
        match failure {
            Failure::Core(e) => {
                JsError::from(napi::Error::new(e.code(), e.message())).into_value(env.raw())
            }
            Failure::Type(message) => {
                JsTypeError::from(napi::Error::new(ErrorKind::InvalidArgument.code(), message))
                    .into_value(env.raw())
            }
        }
    };
    if raw.is_null() {
        // The environment is shutting down; nothing can receive the error object.
        return napi::Error::new(
            Status::GenericFailure,
            "tideq: could not create the error object",
        );
    }
    napi::Error::from(unsafe { Unknown::from_raw_unchecked(env.raw(), raw) })
}

/// Converts a synchronous result for a function that throws (constructors, `consume`).
pub(crate) fn throw<T>(env: &Env, res: Res<T>) -> napi::Result<T> {
    res.map_err(|f| to_js(env, f))
}

/// Runs `fut` on napi's tokio runtime and returns a Promise that resolves with its value or
/// rejects with a tideq error carrying `code`. Argument errors found before the future was built
/// are passed in as `Err` so they reject the Promise too, instead of throwing synchronously.
pub(crate) fn spawn<'env, T, F>(env: &'env Env, fut: Res<F>) -> napi::Result<PromiseRaw<'env, T>>
where
    T: ToNapiValue + Send + 'static,
    F: std::future::Future<Output = Res<T>> + Send + 'static,
{
    env.spawn_future_with_callback(
        async move {
            Ok(match fut {
                Ok(fut) => fut.await,
                Err(f) => Err(f),
            })
        },
        |env, res| res.map_err(|f| to_js(env, f)),
    )
}
