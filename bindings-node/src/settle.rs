//! Settling the Promises of async methods: one threadsafe function per JS thread, and an inbox.
//!
//! napi-rs' own bridge (`spawn_future_with_callback`) creates a threadsafe function for every
//! Promise: a libuv handle opened and closed, and an environment cleanup hook added and removed,
//! per call. Here each JS thread (the main one, each `worker_threads` worker) has one threadsafe
//! function for good. A future that finishes on the runtime puts its result in its thread's inbox
//! and signals the threadsafe function only if the inbox was empty, so the results that finish
//! before the JS thread wakes are settled in one wake-up, and nothing is created per call.
//!
//! The threadsafe function is unreferenced while no Promise is pending and referenced while one
//! is, so a pending call keeps the process alive (as napi-rs' Promises do) and an idle binding
//! does not. When the environment tears down, the inbox is closed first: results that finish
//! later are dropped, never handed to a threadsafe function Node has freed.

use std::any::Any;
use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::c_void;
use std::ptr;
use std::sync::{Arc, Mutex};

use napi::bindgen_prelude::*;
use napi::sys;

/// A finished future's result, typed by the callback that settles it.
type Done = Box<dyn Any + Send>;
/// What settles one Promise on the JS thread, given its result.
type Settler = Box<dyn FnOnce(&Env, Done)>;

/// The part the runtime's threads share with a JS thread.
struct Inbox {
    done: Vec<(u64, Done)>,
    /// Signalled and not drained yet: a further result needs no second signal.
    signalled: bool,
    /// `None` once the environment tore down.
    tsfn: Option<Tsfn>,
}

#[derive(Clone, Copy)]
struct Tsfn(sys::napi_threadsafe_function);
// A threadsafe function is made to be called from any thread.
unsafe impl Send for Tsfn {}

/// A JS thread's side: its Promises waiting for their results.
struct Local {
    inbox: Arc<Mutex<Inbox>>,
    tsfn: sys::napi_threadsafe_function,
    waiting: HashMap<u64, Settler>,
    next: u64,
    referenced: bool,
}

thread_local! {
    static LOCAL: RefCell<Option<Local>> = const { RefCell::new(None) };
}

/// Hands a finished future's result to its JS thread. Dropped without sending (the future
/// panicked, or the runtime shut down under it), it sends [`Unfinished`] instead, so the Promise
/// still settles and stops keeping the process alive.
pub(crate) struct Sender {
    inbox: Option<Arc<Mutex<Inbox>>>,
    id: u64,
}

/// The result of a call whose future ended without one.
pub(crate) struct Unfinished;

impl Sender {
    pub(crate) fn send(mut self, done: Done) {
        if let Some(inbox) = self.inbox.take() {
            deliver(&inbox, self.id, done);
        }
    }
}

impl Drop for Sender {
    fn drop(&mut self) {
        if let Some(inbox) = self.inbox.take() {
            deliver(&inbox, self.id, Box::new(Unfinished));
        }
    }
}

fn deliver(inbox: &Mutex<Inbox>, id: u64, done: Done) {
    let mut inbox = inbox.lock().unwrap_or_else(|p| p.into_inner());
    let Some(tsfn) = inbox.tsfn else { return };
    inbox.done.push((id, done));
    if !inbox.signalled {
        inbox.signalled = true;
        // Non-blocking on an unbounded queue: it only fails when the function is closing, and
        // then the environment is going and so is the Promise.
        unsafe {
            sys::napi_call_threadsafe_function(
                tsfn.0,
                ptr::null_mut(),
                sys::ThreadsafeFunctionCallMode::nonblocking,
            )
        };
    }
}

/// Registers `settle`, run on this JS thread with the result its [`Sender`] sends.
pub(crate) fn register(env: &Env, settle: Settler) -> Result<Sender> {
    LOCAL.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            *slot = Some(open(env)?);
        }
        let local = slot.as_mut().expect("opened above");
        let id = local.next;
        local.next += 1;
        local.waiting.insert(id, settle);
        if !local.referenced {
            check_status!(unsafe { sys::napi_ref_threadsafe_function(env.raw(), local.tsfn) })?;
            local.referenced = true;
        }
        Ok(Sender {
            inbox: Some(local.inbox.clone()),
            id,
        })
    })
}

/// This JS thread's threadsafe function and inbox, made on its first async call.
fn open(env: &Env) -> Result<Local> {
    let inbox = Arc::new(Mutex::new(Inbox {
        done: Vec::new(),
        signalled: false,
        tsfn: None,
    }));
    let mut name = ptr::null_mut();
    check_status!(unsafe {
        sys::napi_create_string_utf8(env.raw(), c"tideq.settle".as_ptr(), 12, &mut name)
    })?;
    let mut tsfn = ptr::null_mut();
    check_status!(unsafe {
        sys::napi_create_threadsafe_function(
            env.raw(),
            ptr::null_mut(),
            ptr::null_mut(),
            name,
            0,
            1,
            ptr::null_mut(),
            None,
            Arc::as_ptr(&inbox) as *mut c_void,
            Some(drain),
            &mut tsfn,
        )
    })?;
    check_status!(unsafe { sys::napi_unref_threadsafe_function(env.raw(), tsfn) })?;
    inbox.lock().unwrap_or_else(|p| p.into_inner()).tsfn = Some(Tsfn(tsfn));
    // Registered after the threadsafe function, so it runs before Node's own teardown of it
    // (cleanup hooks run in reverse order). It owns one count of the inbox.
    let hook = Arc::into_raw(inbox.clone()) as *mut c_void;
    check_status!(unsafe { sys::napi_add_env_cleanup_hook(env.raw(), Some(close), hook) })?;
    Ok(Local {
        inbox,
        tsfn,
        waiting: HashMap::new(),
        next: 0,
        referenced: false,
    })
}

/// The environment tears down: no result is handed to the threadsafe function from now on.
unsafe extern "C" fn close(data: *mut c_void) {
    // The hook's count is kept (the inbox is leaked, once per environment): Node may still run
    // `drain` with its context while it closes the threadsafe function after this hook.
    let inbox = unsafe { &*(data as *const Mutex<Inbox>) };
    let mut inbox = inbox.lock().unwrap_or_else(|p| p.into_inner());
    inbox.tsfn = None;
    inbox.done.clear();
    LOCAL.with(|cell| {
        if let Ok(mut slot) = cell.try_borrow_mut() {
            *slot = None;
        }
    });
}

/// On the JS thread: settles every result in the inbox.
unsafe extern "C" fn drain(
    env: sys::napi_env,
    _js: sys::napi_value,
    context: *mut c_void,
    _data: *mut c_void,
) {
    // The inbox outlives its threadsafe function: `Local` and the cleanup hook hold it.
    let inbox = unsafe { &*(context as *const Mutex<Inbox>) };
    let done = {
        let mut inbox = inbox.lock().unwrap_or_else(|p| p.into_inner());
        inbox.signalled = false;
        std::mem::take(&mut inbox.done)
    };
    if env.is_null() {
        return;
    }
    let env = Env::from_raw(env);
    for (id, result) in done {
        // Taken out before it runs: settling may start another call on this thread.
        let settle = LOCAL.with(|cell| {
            cell.borrow_mut()
                .as_mut()
                .and_then(|local| local.waiting.remove(&id))
        });
        if let Some(settle) = settle {
            settle(&env, result);
        }
    }
    LOCAL.with(|cell| {
        if let Some(local) = cell.borrow_mut().as_mut() {
            if local.waiting.is_empty() && local.referenced {
                unsafe { sys::napi_unref_threadsafe_function(env.raw(), local.tsfn) };
                local.referenced = false;
            }
        }
    });
}

/// A new Promise and the deferred that settles it.
pub(crate) fn promise(env: &Env) -> Result<(sys::napi_deferred, sys::napi_value)> {
    let mut deferred = ptr::null_mut();
    let mut promise = ptr::null_mut();
    check_status!(unsafe { sys::napi_create_promise(env.raw(), &mut deferred, &mut promise) })?;
    Ok((deferred, promise))
}

/// Resolves `deferred` with `value`, or rejects it with the error converting it or `value` met.
pub(crate) fn settle<T: ToNapiValue>(env: &Env, deferred: sys::napi_deferred, value: Result<T>) {
    let raw = env.raw();
    match value.and_then(|v| unsafe { T::to_napi_value(raw, v) }) {
        Ok(v) => unsafe {
            sys::napi_resolve_deferred(raw, deferred, v);
        },
        Err(e) => {
            // `ToNapiValue for Error` hands back the value a JS error carries, as napi-rs does
            // when it rejects.
            if let Ok(v) = unsafe { ToNapiValue::to_napi_value(raw, e) } {
                unsafe { sys::napi_reject_deferred(raw, deferred, v) };
            }
        }
    }
}
