//! Errors crossing into JavaScript: every tideq error becomes a JS `Error` whose `code` is the
//! core's stable code (`INVALID_ARGUMENT`, `PAYLOAD_TOO_LARGE`, `CONNECTION`, `AUTH`,
//! `PERMISSION`, `OUT_OF_MEMORY`, `NOT_REDIS`, `EVICTION_POLICY`, `REDIS`, `FORKED`, `CLOSED`,
//! `JOB_NOT_FOUND`, `JOB_NOT_CANCELLABLE`, `JOB_WRONG_STATE`, `LEASE_LOST`, `NOT_REPLICATED`, `JOB_FAILED`, `TIMEOUT`,
//! `NOT_SUPPORTED`). An argument of the
//! wrong JS type becomes a `TypeError`, also with `code === 'INVALID_ARGUMENT'`.
//!
//! The error object is built on the JS thread and handed to napi as a reference, so napi throws
//! (or rejects a Promise with) that very object, `code` included, instead of its own
//! `GenericFailure` error.
//!
//! A Promise settles from a callback with no JS caller on the stack, so an error built then
//! would have an empty stack. [`spawn`] therefore records the call site when the Promise is made
//! (an empty `Error`, whose stack V8 captures cheaply and formats only if it is read) and, if the
//! Promise rejects, gives the error that call site's frames.

use napi::bindgen_prelude::*;
use napi::{JsError, JsTypeError, JsValue, ValueType};
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

/// The JS error object for `failure` (on the JS thread).
pub(crate) fn error_value<'env>(env: &'env Env, failure: Failure) -> Result<Unknown<'env>> {
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
        return Err(napi::Error::new(
            Status::GenericFailure,
            "tideq: could not create the error object",
        ));
    }
    Ok(unsafe { Unknown::from_raw_unchecked(env.raw(), raw) })
}

/// Builds the JS error object for `failure` and wraps it so napi throws or rejects with it as is.
pub(crate) fn to_js(env: &Env, failure: Failure) -> napi::Error {
    match error_value(env, failure) {
        Ok(value) => napi::Error::from(value),
        Err(e) => e,
    }
}

/// Converts a synchronous result for a function that throws (constructors, `consume`).
pub(crate) fn throw<T>(env: &Env, res: Res<T>) -> napi::Result<T> {
    res.map_err(|f| to_js(env, f))
}

/// Where an async method was called from: an empty `Error` made at the call, kept (by a napi
/// reference) until its Promise settles. V8 records the frames when the error is made and
/// formats them only if `stack` is read, which happens only when the Promise rejects.
pub(crate) struct CallSite(napi::sys::napi_ref);

impl CallSite {
    /// Records the JS frames calling now (`None` if the error could not be made).
    pub(crate) fn capture(env: &Env) -> Option<CallSite> {
        use napi::sys;
        let raw = env.raw();
        let mut message = std::ptr::null_mut();
        let mut error = std::ptr::null_mut();
        let mut reference = std::ptr::null_mut();
        unsafe {
            (sys::napi_create_string_utf8(raw, c"".as_ptr(), 0, &mut message)
                == sys::Status::napi_ok
                && sys::napi_create_error(raw, std::ptr::null_mut(), message, &mut error)
                    == sys::Status::napi_ok
                && sys::napi_create_reference(raw, error, 1, &mut reference)
                    == sys::Status::napi_ok)
                .then_some(CallSite(reference))
        }
    }

    /// Gives `error` the call site's frames under its own first line (`Error: message`), then
    /// releases the call site. Best effort: on any failure `error` keeps its own stack.
    pub(crate) fn attach(self, env: &Env, error: &Unknown, head: &str) {
        let frames = self.frames(env);
        self.release(env);
        if let (Some(frames), Ok(mut obj)) = (frames, read_object(error)) {
            let _ = obj.set_named_property("stack", format!("{head}\n{frames}"));
        }
    }

    /// The formatted frames (the call site's `stack` without its first line).
    fn frames(&self, env: &Env) -> Option<String> {
        let mut value = std::ptr::null_mut();
        let status = unsafe { napi::sys::napi_get_reference_value(env.raw(), self.0, &mut value) };
        if status != napi::sys::Status::napi_ok || value.is_null() {
            return None;
        }
        let site = Object::from_raw(env.raw(), value);
        let stack: Unknown = site.get_named_property("stack").ok()?;
        if stack.get_type().ok()? != ValueType::String {
            return None;
        }
        let stack: String = crate::convert::read_value(&stack).ok()?;
        stack.split_once('\n').map(|(_, frames)| frames.to_string())
    }

    /// Drops the reference (on the JS thread).
    pub(crate) fn release(self, env: &Env) {
        unsafe {
            napi::sys::napi_delete_reference(env.raw(), self.0);
        }
    }
}

fn read_object<'env>(v: &Unknown<'env>) -> Result<Object<'env>> {
    if v.get_type()? != ValueType::Object {
        return Err(napi::Error::new(Status::ObjectExpected, "not an object"));
    }
    Ok(Object::from_raw(v.value().env, v.raw()))
}

/// The first line of an error's stack: `Error: message` (`TypeError: ...` for a type error).
fn stack_head(failure: &Failure) -> String {
    match failure {
        Failure::Core(e) => format!("Error: {}", e.message()),
        Failure::Type(message) => format!("TypeError: {message}"),
    }
}

/// Rejects with `failure`, the error carrying the frames of `site` (when there is one).
pub(crate) fn reject_at(env: &Env, site: Option<CallSite>, failure: Failure) -> napi::Error {
    let head = stack_head(&failure);
    match error_value(env, failure) {
        Ok(value) => {
            if let Some(site) = site {
                site.attach(env, &value, &head);
            }
            napi::Error::from(value)
        }
        Err(e) => {
            if let Some(site) = site {
                site.release(env);
            }
            e
        }
    }
}

/// Runs `fut` on napi's tokio runtime and returns a Promise that resolves with its value or
/// rejects with a tideq error carrying `code` and the caller's stack. Argument errors found
/// before the future was built are passed in as `Err` so they reject the Promise too, instead of
/// throwing synchronously.
pub(crate) fn spawn<'env, T, F>(env: &'env Env, fut: Res<F>) -> napi::Result<PromiseRaw<'env, T>>
where
    T: ToNapiValue + Send + 'static,
    F: std::future::Future<Output = Res<T>> + Send + 'static,
{
    spawn_then(env, fut, |_| Ok(()))
}

/// [`spawn`], with `then` run on the JS thread just before the Promise settles.
pub(crate) fn spawn_then<'env, T, F>(
    env: &'env Env,
    fut: Res<F>,
    then: impl FnOnce(&Env) -> napi::Result<()> + 'static,
) -> napi::Result<PromiseRaw<'env, T>>
where
    T: ToNapiValue + Send + 'static,
    F: std::future::Future<Output = Res<T>> + Send + 'static,
{
    let site = CallSite::capture(env);
    let (deferred, promise) = crate::settle::promise(env)?;
    let sender = crate::settle::register(
        env,
        Box::new(move |env, done| {
            let res = match done.downcast::<Res<T>>() {
                Ok(res) => *res,
                Err(_) => Err(Failure::from(napi::Error::from_reason(
                    "tideq: the call ended without a result (an internal error; please report it)",
                ))),
            };
            let done = then(env);
            let value = match res {
                Ok(v) => {
                    if let Some(site) = site {
                        site.release(env);
                    }
                    done.map(|()| v)
                }
                Err(f) => Err(reject_at(env, site, f)),
            };
            crate::settle::settle(env, deferred, value);
        }),
    )?;
    napi::bindgen_prelude::spawn(async move {
        let res = match fut {
            Ok(fut) => fut.await,
            Err(f) => Err(f),
        };
        sender.send(Box::new(res));
    });
    Ok(PromiseRaw::new(env.raw(), promise))
}
