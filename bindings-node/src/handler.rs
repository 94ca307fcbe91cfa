//! Calling JS handlers from the core's consumers and workers: each call goes through a
//! `ThreadsafeFunction` to the JS thread, a returned Promise is awaited (any other return value
//! is ignored), and a failure (thrown or rejected) is reported to `onError` or `console.error`,
//! then handed back to the core as text (`name: message`).
//!
//! Keeping the process alive: the functions are referenced (not weak) and owned by the
//! [`JsHandler`] that the core's consumer or worker task holds, so a running one keeps Node's
//! event loop alive, like a server socket, and lets it go once it has stopped. Each call's future
//! holds them only weakly while it waits for the JS Promise: a handler that never settles does
//! not keep the process alive once its consumer or worker has abandoned it (a consumer at the end
//! of its grace period, a worker only when aborted).

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Weak};

use napi::bindgen_prelude::*;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::{JsValue, ValueType};
use tokio::sync::oneshot;

use crate::convert::read_value;
use crate::error::Res;

/// How many handler calls are running, for `run()`'s shutdown message.
#[derive(Clone, Default)]
pub(crate) struct Running(Arc<AtomicUsize>);

impl Running {
    /// Counts one call until the returned guard is dropped.
    pub(crate) fn enter(&self) -> RunningCall {
        self.0.fetch_add(1, Ordering::Relaxed);
        RunningCall(self.0.clone())
    }

    pub(crate) fn count(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }
}

/// One running handler call (see [`Running::enter`]).
pub(crate) struct RunningCall(Arc<AtomicUsize>);

impl Drop for RunningCall {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A JS function callable from any thread with a `T`, which becomes its arguments `Args` on the
/// JS thread.
pub(crate) type Tsfn<T, Args> = ThreadsafeFunction<T, Unknown<'static>, Args, Status, false>;

/// What a handler failure is reported with (by then the handler's input has gone to JS).
pub(crate) trait Subject: Send + 'static {
    /// The second argument of `onError`.
    type Js: ToNapiValue + 'static;
    fn into_js(self) -> Self::Js;
    /// The line `console.error` prints before the error.
    fn headline(&self) -> String;
    /// False when the failure is no failure (a job handed back at shutdown): not reported.
    fn reported(&self) -> bool {
        true
    }
}

/// `onError(err, subject)`.
pub(crate) type OnError<'env, S> =
    Function<'env, FnArgs<(Unknown<'static>, <S as Subject>::Js)>, Unknown<'static>>;

/// A JS handler called with `T`s and where its failures go, for as long as the core runs it.
pub(crate) struct JsHandler<T: 'static, Args: JsValuesTupleIntoVec + 'static, S: Subject> {
    handler: Arc<Tsfn<T, Args>>,
    reporter: Arc<Reporter<S>>,
    /// Reads what a job handler threw (`Snooze`, `BackOff`, `DontRetry`); consumers have none.
    verdicts: Option<Arc<Tsfn<Classify, ()>>>,
}

/// What a job handler's throw asks for (lib/outcomes.js: its `tideqVerdict`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Verdict {
    /// `Snooze` (no scope) or `BackOff` (the queue, or with `true` the job's group).
    Later(u64, Option<bool>),
    DontRetry,
}

impl Verdict {
    fn parse(s: &str) -> Option<Verdict> {
        let (kind, ms) = s.split_once(' ').unwrap_or((s, ""));
        let ms = || ms.parse::<u64>().ok();
        Some(match kind {
            "snooze" => Verdict::Later(ms()?, None),
            "queue" => Verdict::Later(ms()?, Some(false)),
            "group" => Verdict::Later(ms()?, Some(true)),
            "dontretry" => Verdict::DontRetry,
            _ => return None,
        })
    }

    /// The core's error for it; `text` is what a `DontRetry` records.
    pub(crate) fn into_error(self, text: String) -> tideq::HandlerError {
        use std::time::Duration;
        match self {
            Verdict::Later(ms, None) => Box::new(tideq::Snooze::new(Duration::from_millis(ms))),
            Verdict::Later(ms, Some(false)) => {
                Box::new(tideq::BackOff::queue(Duration::from_millis(ms)))
            }
            Verdict::Later(ms, Some(true)) => {
                Box::new(tideq::BackOff::group(Duration::from_millis(ms)))
            }
            Verdict::DontRetry => Box::new(tideq::DontRetry::new(text)),
        }
    }
}

/// A thrown value on its way to the JS thread to have its verdict read, and where to send it
/// back (with the error, to be reported if it is one).
pub(crate) struct Classify {
    error: napi::Error,
    reply: oneshot::Sender<(napi::Error, Option<Verdict>)>,
}

/// A handler's failure: its text (once reported), its stack (`err.stack`, "" when none), and
/// what a job handler's throw asked for.
pub(crate) struct Thrown {
    pub(crate) text: String,
    pub(crate) trace: String,
    pub(crate) verdict: Option<Verdict>,
}

impl<T, Args, S> JsHandler<T, Args, S>
where
    T: Send + 'static,
    Args: JsValuesTupleIntoVec + 'static,
    S: Subject,
{
    /// `handler` is called with `args(value)`; failures go to `on_error`, else `console.error`.
    pub(crate) fn new(
        env: &Env,
        handler: Function<Args, Unknown<'static>>,
        args: impl Fn(T) -> Args + 'static,
        on_error: Option<OnError<S>>,
    ) -> Res<Self> {
        Ok(JsHandler {
            handler: Arc::new(
                handler
                    .build_threadsafe_function::<T>()
                    .callee_handled::<false>()
                    .build_callback(move |ctx| Ok(args(ctx.value)))?,
            ),
            reporter: Arc::new(Reporter::new(env, on_error)?),
            verdicts: None,
        })
    }

    /// Lets the process exit while this handler is held (by a test mode, for as long as it
    /// lives): its calls still run while something else (their caller's Promise) keeps Node
    /// running.
    // `unref` is napi_unref_threadsafe_function, exactly this; napi deprecates it for the
    // builder's `weak` type parameter, which would make these a second set of types.
    #[allow(deprecated)]
    pub(crate) fn unreferenced(mut self, env: &Env) -> Res<Self> {
        if let Some(h) = Arc::get_mut(&mut self.handler) {
            h.unref(env)?;
        }
        if let Some(r) = Arc::get_mut(&mut self.reporter) {
            match r {
                Reporter::User(f) => f.unref(env)?,
                Reporter::Console(f) => f.unref(env)?,
            }
        }
        if let Some(v) = self.verdicts.as_mut().and_then(Arc::get_mut) {
            v.unref(env)?;
        }
        Ok(self)
    }

    /// Also reads what the handler throws (a job handler's `Snooze`, `BackOff`, `DontRetry`):
    /// see [`call_job`](Self::call_job).
    pub(crate) fn reading_verdicts(mut self, env: &Env) -> Res<Self> {
        // Any function will do: the callback does the work on the JS thread, and `Object()`
        // is then called with no arguments, to no effect.
        let object: Function<(), Unknown<'static>> =
            env.get_global()?.get_named_property("Object")?;
        self.verdicts = Some(Arc::new(
            object
                .build_threadsafe_function::<Classify>()
                .callee_handled::<false>()
                .build_callback(|ctx| {
                    let Classify { error, reply } = ctx.value;
                    let raw = unsafe { napi::Error::to_napi_value(ctx.env.raw(), error)? };
                    let value = unsafe { Unknown::from_raw_unchecked(ctx.env.raw(), raw) };
                    let verdict = read_value::<Object>(&value)
                        .ok()
                        .filter(|_| matches!(value.get_type(), Ok(ValueType::Object)))
                        .and_then(|o| o.get_named_property::<Unknown>("tideqVerdict").ok())
                        .filter(|v| matches!(v.get_type(), Ok(ValueType::String)))
                        .and_then(|v| read_value::<String>(&v).ok())
                        .and_then(|s| Verdict::parse(&s));
                    let _ =
                        reply.send((napi::Error::from_unknown_without_coercion(value), verdict));
                    Ok(())
                })?,
        ));
        Ok(self)
    }

    /// The core's future for one call: calls the handler with `value` and waits for it; on
    /// failure reports it with `subject` and resolves with the error's text. What the handler
    /// returned (or its Promise resolved with) is ignored.
    pub(crate) fn call(
        &self,
        value: T,
        subject: S,
    ) -> impl Future<Output = std::result::Result<(), String>> + Send + 'static {
        self.call_for::<()>(value, subject)
    }

    /// [`call`](Self::call), resolving with what the handler returned (or its Promise resolved
    /// with), read as an `R`.
    pub(crate) fn call_for<R: Reply>(
        &self,
        value: T,
        subject: S,
    ) -> impl Future<Output = std::result::Result<R, String>> + Send + 'static {
        let call = self.call_job::<R>(value, subject);
        async move { call.await.map_err(|t| t.text) }
    }

    /// [`call_for`](Self::call_for), a failure also telling what a thrown `Snooze`, `BackOff` or
    /// `DontRetry` asks for (when [`reading_verdicts`](Self::reading_verdicts)). A `Snooze` or
    /// `BackOff` is no failure: it is not reported.
    pub(crate) fn call_job<R: Reply>(
        &self,
        value: T,
        subject: S,
    ) -> impl Future<Output = std::result::Result<R, Thrown>> + Send + 'static {
        let handler = Arc::downgrade(&self.handler);
        let reporter = Arc::downgrade(&self.reporter);
        let verdicts = self.verdicts.as_ref().map(Arc::downgrade);
        async move {
            let mut error = match call::<T, Args, R>(&handler, value).await {
                Ok(reply) => return Ok(reply),
                Err(error) => error,
            };
            let mut verdict = None;
            if let Some(classify) = verdicts.and_then(|v| v.upgrade()) {
                (error, verdict) = read_verdict(&classify, error).await;
            }
            if let Some(v @ Verdict::Later(..)) = verdict {
                return Err(Thrown {
                    text: error.reason,
                    trace: String::new(),
                    verdict: Some(v),
                });
            }
            let (text, trace) = match reporter.upgrade() {
                Some(r) if subject.reported() => r.report(error, subject).await,
                _ => (error.reason, String::new()),
            };
            Err(Thrown {
                text,
                trace,
                verdict,
            })
        }
    }
}

/// Reads `error`'s verdict on the JS thread; none when JS cannot be reached (then `error` is
/// given back as it was, its value lost, so it is reported by its text).
async fn read_verdict(
    classify: &Tsfn<Classify, ()>,
    error: napi::Error,
) -> (napi::Error, Option<Verdict>) {
    let fallback = napi::Error::new(error.status, error.reason.clone());
    let (reply, rx) = oneshot::channel();
    let status = classify.call(
        Classify { error, reply },
        ThreadsafeFunctionCallMode::NonBlocking,
    );
    if status != Status::Ok {
        return (fallback, None);
    }
    rx.await.unwrap_or((fallback, None))
}

/// What a handler's call settles with, read on the JS thread from the handler's return value
/// (a sync handler) or from what its Promise resolved with. Reading never fails: a value of the
/// wrong kind is a reply that says so.
pub(crate) trait Reply: Sized + Send + 'static {
    fn read(v: &Unknown) -> Self;
}

/// The reply of handlers whose result is ignored (so `(g, items) => out.push(...items)` works).
impl Reply for () {
    fn read(_: &Unknown) {}
}

/// A Promise's resolved value, read as an `R`.
struct Resolved<R>(R);

impl<R: Reply> FromNapiValue for Resolved<R> {
    unsafe fn from_napi_value(
        env: napi::sys::napi_env,
        value: napi::sys::napi_value,
    ) -> Result<Self> {
        Ok(Resolved(R::read(&unsafe {
            Unknown::from_raw_unchecked(env, value)
        })))
    }
}

/// What the handler returned: a reply, or a Promise of one.
enum Returned<R: Reply> {
    Now(R),
    Later(Promise<Resolved<R>>),
}

/// Calls the JS handler and waits for it (and for its Promise, if it returns one). Holds the
/// handler only for the call itself, not while waiting for the Promise.
pub(crate) async fn call<T: 'static, Args: JsValuesTupleIntoVec + 'static, R: Reply>(
    handler: &Weak<Tsfn<T, Args>>,
    value: T,
) -> std::result::Result<R, napi::Error> {
    let Some(handler) = handler.upgrade() else {
        return Err(napi::Error::new(
            Status::GenericFailure,
            "tideq: the worker stopped before the handler was called",
        ));
    };
    let (tx, rx) = oneshot::channel::<Result<Returned<R>>>();
    let status = handler.call_with_return_value(
        value,
        ThreadsafeFunctionCallMode::NonBlocking,
        move |ret: Result<Unknown<'static>>, env: Env| {
            // A Promise is awaited; any other value is the reply itself.
            let outcome = ret.and_then(|v| {
                if v.is_promise()? {
                    Ok(Returned::Later(unsafe {
                        Promise::<Resolved<R>>::from_napi_value(env.raw(), v.raw())
                    }?))
                } else {
                    Ok(Returned::Now(R::read(&v)))
                }
            });
            let _ = tx.send(outcome);
            Ok(())
        },
    );
    drop(handler);
    if status != Status::Ok {
        return Err(napi::Error::new(
            Status::GenericFailure,
            format!("tideq: the handler could not be called ({status})"),
        ));
    }
    match rx.await {
        Ok(Ok(Returned::Later(promise))) => promise.await.map(|r| r.0),
        Ok(Ok(Returned::Now(reply))) => Ok(reply),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(napi::Error::new(
            Status::GenericFailure,
            "tideq: the handler call was dropped (is the process exiting?)",
        )),
    }
}

/// A handler failure on its way to JS, and where to send the error's text and stack.
struct Report<S> {
    error: napi::Error,
    subject: S,
    text: oneshot::Sender<(String, String)>,
}

impl<S> Report<S> {
    /// On the JS thread: the error as a JS value, its text sent back, and the subject.
    fn open(self, env: &Env) -> Result<(Unknown<'static>, S)> {
        let raw = unsafe { napi::Error::to_napi_value(env.raw(), self.error)? };
        let value: Unknown<'static> = unsafe { Unknown::from_raw_unchecked(env.raw(), raw) };
        let _ = self.text.send((error_text(&value), error_stack(&value)));
        Ok((value, self.subject))
    }
}

/// Where handler errors go: the user's `onError(err, subject)`, or `console.error`.
enum Reporter<S: Subject> {
    User(Tsfn<Report<S>, FnArgs<(Unknown<'static>, S::Js)>>),
    Console(Tsfn<Report<S>, FnArgs<(String, Unknown<'static>)>>),
}

impl<S: Subject> Reporter<S> {
    fn new(env: &Env, on_error: Option<OnError<S>>) -> Res<Self> {
        Ok(match on_error {
            Some(on_error) => Reporter::User(
                on_error
                    .build_threadsafe_function::<Report<S>>()
                    .callee_handled::<false>()
                    .build_callback(|ctx| {
                        let (err, subject) = ctx.value.open(&ctx.env)?;
                        Ok(FnArgs::from((err, subject.into_js())))
                    })?,
            ),
            None => {
                let console: Object = env.get_global()?.get_named_property("console")?;
                let error: Function<FnArgs<(String, Unknown<'static>)>, Unknown<'static>> =
                    console.get_named_property("error")?;
                Reporter::Console(
                    error
                        .build_threadsafe_function::<Report<S>>()
                        .callee_handled::<false>()
                        .build_callback(|ctx| {
                            let (err, subject) = ctx.value.open(&ctx.env)?;
                            Ok(FnArgs::from((subject.headline(), err)))
                        })?,
                )
            }
        })
    }

    /// Reports `error` on the JS thread, waits until the reporter has run, and returns the
    /// error's text (`error.reason` if JS could not be reached).
    async fn report(&self, error: napi::Error, subject: S) -> (String, String) {
        let fallback = (error.reason.clone(), String::new());
        let (text_tx, text_rx) = oneshot::channel::<(String, String)>();
        let (done_tx, done_rx) = oneshot::channel::<()>();
        let done = move |res: Result<Unknown<'static>>, _env: Env| {
            let _ = done_tx.send(());
            // An error thrown by `onError` itself surfaces as an uncaught exception.
            res.map(|_| ())
        };
        let report = Report {
            error,
            subject,
            text: text_tx,
        };
        let status = match self {
            Reporter::User(f) => {
                f.call_with_return_value(report, ThreadsafeFunctionCallMode::NonBlocking, done)
            }
            Reporter::Console(f) => {
                f.call_with_return_value(report, ThreadsafeFunctionCallMode::NonBlocking, done)
            }
        };
        if status != Status::Ok {
            return fallback;
        }
        let text = text_rx.await.unwrap_or(fallback);
        let _ = done_rx.await;
        text
    }
}

/// A thrown error's `stack` (its text and where it was thrown), "" when it has none.
fn error_stack(v: &Unknown) -> String {
    if !matches!(v.get_type(), Ok(ValueType::Object)) {
        return String::new();
    }
    read_value::<Object>(v)
        .ok()
        .and_then(|obj| obj.get_named_property::<Unknown>("stack").ok())
        .filter(|s| matches!(s.get_type(), Ok(ValueType::String)))
        .and_then(|s| read_value::<String>(&s).ok())
        .unwrap_or_default()
}

/// The text the core keeps for a thrown or rejected value: `name: message` for an error
/// (`Error: boom`, `TypeError: x is undefined`), `String(value)` for anything else.
pub(crate) fn error_text(v: &Unknown) -> String {
    let as_string = |v: &Unknown| -> Option<String> {
        if v.get_type().ok()? != ValueType::String {
            return None;
        }
        read_value::<String>(v).ok()
    };
    match v.get_type() {
        Ok(ValueType::Object) | Ok(ValueType::Function) => {
            if let Ok(obj) = read_value::<Object>(v) {
                let message = obj
                    .get_named_property::<Unknown>("message")
                    .ok()
                    .and_then(|m| as_string(&m));
                if let Some(message) = message {
                    let name = obj
                        .get_named_property::<Unknown>("name")
                        .ok()
                        .and_then(|n| as_string(&n))
                        .unwrap_or_else(|| "Error".into());
                    return match (name.is_empty(), message.is_empty()) {
                        (_, true) => name,
                        (true, false) => message,
                        (false, false) => format!("{name}: {message}"),
                    };
                }
            }
        }
        Ok(ValueType::Symbol) => return "a Symbol was thrown".into(),
        _ => {}
    }
    v.coerce_to_string()
        .and_then(|s| s.into_utf8()?.into_owned())
        .unwrap_or_else(|_| "the handler failed with a value that has no text".into())
}
