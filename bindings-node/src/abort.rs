//! `job.signal`: the `AbortSignal` of a job's attempt, fired when the core cancels the attempt
//! (`tideq::Job::cancellation`: its timeout passed, its cancel was requested, or the worker is
//! shutting down and its grace period is over), or when the worker is aborted and abandons the handler.
//!
//! The `AbortController` is made on the JS thread the first time a handler reads `job.signal`
//! (a handler that never reads it costs nothing). The core's token fires on a tokio thread; the
//! controller is then aborted on the JS thread through a `ThreadsafeFunction` ([`Aborter`]). One
//! lock orders the two sides, so a signal read just before or just after the token fires is
//! aborted either way.

use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use napi::bindgen_prelude::*;
use napi::sys;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};

/// Why an attempt was told to stop; becomes the message of `signal.reason`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Reason {
    /// The attempt's `timeoutMs` passed (the attempt fails and is retried).
    Timeout(Duration),
    /// The worker is shutting down and its grace period is over (the job goes back to the queue
    /// once the handler returns).
    Shutdown,
    /// The job's `cancel` was requested (it ends cancelled once the handler settles).
    Cancelled,
    /// The worker was aborted: the handler is abandoned and its job left to its lease.
    Abandoned,
}

impl Reason {
    fn text(&self) -> String {
        match self {
            Reason::Timeout(t) => format!("timed out after {} ms", t.as_secs_f64() * 1000.0),
            Reason::Shutdown => "the worker is shutting down".to_string(),
            Reason::Cancelled => "the job was cancelled".to_string(),
            Reason::Abandoned => {
                "the worker was stopped at once (abort): this job is left to its lease".to_string()
            }
        }
    }
}

/// A napi reference to an `AbortController`. Only created, read and deleted on the JS thread;
/// other threads only move it.
struct ControllerRef(sys::napi_ref);

// SAFETY: the pointer is only dereferenced on the JS thread (in `JobSignal::signal` and in the
// `Aborter`'s callback); other threads only hand it over.
unsafe impl Send for ControllerRef {}

enum State {
    /// No handler has read `job.signal` yet, and the attempt goes on.
    Unwatched,
    /// `job.signal` was read: the controller to abort if the attempt is cancelled.
    Watched(ControllerRef),
    /// The attempt was cancelled (a later read gets an already aborted signal).
    Fired(Reason),
    /// The handler settled without being cancelled.
    Settled,
}

/// The stop signal of one attempt, shared by the handler's future (which fires or settles it)
/// and the `Job` objects JS holds (which read it).
pub(crate) struct JobSignal {
    state: Mutex<State>,
    aborter: Weak<Aborter>,
}

impl JobSignal {
    pub(crate) fn new(aborter: &Arc<Aborter>) -> Arc<Self> {
        Arc::new(JobSignal {
            state: Mutex::new(State::Unwatched),
            aborter: Arc::downgrade(aborter),
        })
    }

    /// The signal of a job no worker runs (`leaseJobs`): never aborted.
    pub(crate) fn inert() -> Arc<Self> {
        Arc::new(JobSignal {
            state: Mutex::new(State::Settled),
            aborter: Weak::new(),
        })
    }

    /// On the JS thread: the `AbortSignal` for `job.signal`.
    pub(crate) fn signal<'env>(&self, env: &'env Env) -> Result<Unknown<'env>> {
        let controller = new_controller(env)?;
        enum Then {
            Use,
            Abort(Reason),
            Existing(sys::napi_ref),
        }
        let then = {
            let mut state = self.state.lock().unwrap();
            match &*state {
                State::Unwatched => {
                    let mut reference = std::ptr::null_mut();
                    check(unsafe {
                        sys::napi_create_reference(env.raw(), controller.raw(), 1, &mut reference)
                    })?;
                    *state = State::Watched(ControllerRef(reference));
                    Then::Use
                }
                State::Watched(existing) => Then::Existing(existing.0),
                State::Fired(reason) => Then::Abort(reason.clone()),
                State::Settled => Then::Use,
            }
        };
        let controller = match then {
            Then::Use => controller,
            Then::Abort(reason) => {
                abort(env, &controller, &reason)?;
                controller
            }
            // Another `Job` object of the same attempt made it first (the reference is deleted
            // on this thread only, so it is still valid here).
            Then::Existing(reference) => {
                let mut value = std::ptr::null_mut();
                check(unsafe { sys::napi_get_reference_value(env.raw(), reference, &mut value) })?;
                Object::from_raw(env.raw(), value)
            }
        };
        controller.get_named_property("signal")
    }

    /// True once the attempt was told to stop because the worker is shutting down.
    pub(crate) fn stopped_for_shutdown(&self) -> bool {
        matches!(*self.state.lock().unwrap(), State::Fired(Reason::Shutdown))
    }

    /// The attempt was cancelled: abort the signal if a handler watches it.
    pub(crate) fn fire(&self, reason: Reason) {
        let mut state = self.state.lock().unwrap();
        let watched = match std::mem::replace(&mut *state, State::Fired(reason.clone())) {
            State::Watched(controller) => Some(controller),
            State::Unwatched => None,
            // Already fired, or settled: nothing left to stop.
            previous => {
                *state = previous;
                None
            }
        };
        drop(state);
        if let Some(controller) = watched {
            self.send(controller, Some(reason));
        }
    }

    /// The handler settled: the controller is no longer needed.
    pub(crate) fn settle(&self) {
        let mut state = self.state.lock().unwrap();
        let watched = match std::mem::replace(&mut *state, State::Settled) {
            State::Watched(controller) => Some(controller),
            State::Unwatched => None,
            fired => {
                *state = fired;
                None
            }
        };
        drop(state);
        if let Some(controller) = watched {
            self.send(controller, None);
        }
    }

    fn send(&self, controller: ControllerRef, reason: Option<Reason>) {
        // Gone only once the worker has ended; the reference then stays (the process is
        // usually exiting).
        if let Some(aborter) = self.aborter.upgrade() {
            aborter.tsfn.call(
                AbortOp { controller, reason },
                ThreadsafeFunctionCallMode::NonBlocking,
            );
        }
    }
}

/// What the JS thread does with a controller: abort it (with a reason), then release it.
struct AbortOp {
    controller: ControllerRef,
    reason: Option<Reason>,
}

/// Aborts controllers on the JS thread, for one worker.
pub(crate) struct Aborter {
    tsfn: ThreadsafeFunction<AbortOp, (), (), Status, false>,
}

impl Aborter {
    pub(crate) fn new(env: &Env) -> Result<Arc<Self>> {
        Self::build(env, true)
    }

    /// An aborter that does not keep the process alive (held by a test mode for as long as it
    /// lives).
    pub(crate) fn unreferenced(env: &Env) -> Result<Arc<Self>> {
        Self::build(env, false)
    }

    // `unref`: see `JsHandler::unreferenced`.
    #[allow(deprecated)]
    fn build(env: &Env, referenced: bool) -> Result<Arc<Self>> {
        // The work is done in the callback, on the JS thread; the function itself does nothing.
        let noop = env.create_function_from_closure::<(), (), _>("tideqAbortJob", |_| Ok(()))?;
        let mut tsfn = noop
            .build_threadsafe_function::<AbortOp>()
            .callee_handled::<false>()
            .build_callback(|ctx| {
                let AbortOp { controller, reason } = ctx.value;
                let raw = ctx.env.raw();
                let mut value = std::ptr::null_mut();
                let got = unsafe { sys::napi_get_reference_value(raw, controller.0, &mut value) };
                let result = match reason {
                    Some(reason) if got == sys::Status::napi_ok && !value.is_null() => {
                        abort(&ctx.env, &Object::from_raw(raw, value), &reason)
                    }
                    _ => Ok(()),
                };
                unsafe { sys::napi_delete_reference(raw, controller.0) };
                result
            })?;
        if !referenced {
            tsfn.unref(env)?;
        }
        Ok(Arc::new(Aborter { tsfn }))
    }
}

fn new_controller<'env>(env: &'env Env) -> Result<Object<'env>> {
    let class: Function<(), Unknown> = env.get_global()?.get_named_property("AbortController")?;
    let controller = class.new_instance(())?;
    Ok(Object::from_raw(env.raw(), controller.raw()))
}

/// `controller.abort(new Error(reason))`. Errors thrown by `abort` listeners are reported by
/// Node as uncaught exceptions, like any event listener's.
fn abort(env: &Env, controller: &Object, reason: &Reason) -> Result<()> {
    let text = reason.text();
    let raw = env.raw();
    let mut message = std::ptr::null_mut();
    let mut error = std::ptr::null_mut();
    check(unsafe {
        sys::napi_create_string_utf8(raw, text.as_ptr().cast(), text.len() as isize, &mut message)
    })?;
    check(unsafe { sys::napi_create_error(raw, std::ptr::null_mut(), message, &mut error) })?;
    let abort: Function<Unknown, Unknown> = controller.get_named_property("abort")?;
    abort.apply(controller, unsafe {
        Unknown::from_raw_unchecked(raw, error)
    })?;
    Ok(())
}

fn check(status: sys::napi_status) -> Result<()> {
    if status == sys::Status::napi_ok {
        Ok(())
    } else {
        Err(napi::Error::new(
            Status::GenericFailure,
            format!("tideq: napi call failed ({status})"),
        ))
    }
}
