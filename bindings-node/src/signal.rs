//! SIGINT/SIGTERM for `run()` (capped consumers and job workers), the Node way: listeners added
//! with `process.on` (so Node does not exit on the signal) and removed again once the runtime
//! has stopped. The first signal stops gracefully and says so on stderr; a second one stops at
//! once. The core's `signal` waits for the signals itself; a Node process leaves them to its
//! event loop. `serve` and the `tideq` command (`runCli`) let the core listen instead, once
//! Node's own handlers are out of the way ([`release_node_handlers`]).

use std::cell::Cell;
use std::future::Future;
use std::rc::Rc;
use std::time::Duration;

use napi::bindgen_prelude::*;

use crate::error::{spawn_then, Res};
use crate::handler::Running;

/// How `run()` stops its consumer or worker.
#[derive(Clone)]
pub(crate) struct Stopper {
    /// Graceful: no new work, running handlers get the grace period.
    pub stop: Rc<dyn Fn()>,
    /// At once: running handlers are abandoned.
    pub abort: Rc<dyn Fn()>,
    /// The handlers running now (for the message).
    pub running: Running,
    pub grace: Duration,
    /// What runs, singular and plural: `("job", "jobs")`.
    pub what: (&'static str, &'static str),
}

impl Stopper {
    /// The line the first signal prints.
    fn graceful_line(&self, signal: &str) -> String {
        let n = self.running.count();
        let (one, many) = self.what;
        format!(
            "tideq: {signal} received: shutting down gracefully, waiting up to {} ms for {n} \
             running {}; press Ctrl-C again (or send {signal} again) to stop at once",
            self.grace.as_secs_f64() * 1000.0,
            if n == 1 { one } else { many },
        )
    }
}

/// `run()`: until `done` resolves, the first SIGINT or SIGTERM stops gracefully and the next
/// stops at once; then the listeners are removed and the Promise settles with `done`'s output
/// (rejecting with the caller's stack on an error).
pub(crate) fn stop_on_signal<'env, T>(
    env: &'env Env,
    stopper: Stopper,
    done: impl Future<Output = Res<T>> + Send + 'static,
) -> Result<PromiseRaw<'env, T>>
where
    T: ToNapiValue + Send + 'static,
{
    // If the listeners cannot be installed, `run()` throws and nobody could stop the runtime.
    let hooks = SignalHooks::install(env, stopper.clone()).inspect_err(|_| (stopper.stop)())?;
    spawn_then(env, Ok(done), move |env| hooks.remove(env))
}

/// `process.on` / `process.removeListener`: `(eventName, listener)`.
type ListenerMethod<'env> =
    Function<'env, FnArgs<(&'static str, Function<'env, Unknown<'env>, ()>)>, Unknown<'env>>;

/// The installed listeners; [`remove`](Self::remove) them once the runtime has stopped.
struct SignalHooks {
    process: ObjectRef,
    listener: FunctionRef<Unknown<'static>, ()>,
}

impl SignalHooks {
    const SIGNALS: [&'static str; 2] = ["SIGINT", "SIGTERM"];

    /// `process.on(signal, listener)` for SIGINT and SIGTERM.
    fn install(env: &Env, stopper: Stopper) -> Result<Self> {
        let global = env.get_global()?;
        let process: Object = global.get_named_property("process")?;
        let received = Cell::new(0u32);
        let listener =
            env.create_function_from_closure::<Unknown, (), _>("tideqStopOnSignal", move |ctx| {
                // Node passes the signal's name.
                let signal = ctx.get::<String>(0).unwrap_or_else(|_| "a signal".into());
                received.set(received.get() + 1);
                if received.get() == 1 {
                    crate::logger::notice(&stopper.graceful_line(&signal));
                    (stopper.stop)();
                } else {
                    crate::logger::notice(&format!(
                        "tideq: {signal} received again: stopping at once"
                    ));
                    (stopper.abort)();
                }
                Ok(())
            })?;
        let on: ListenerMethod = process.get_named_property("on")?;
        for signal in Self::SIGNALS {
            on.apply(process, FnArgs::from((signal, listener)))?;
        }
        Ok(SignalHooks {
            process: process.create_ref()?,
            listener: listener.create_ref()?,
        })
    }

    fn remove(self, env: &Env) -> Result<()> {
        let process = self.process.get_value(env)?;
        let listener = self.listener.borrow_back(env)?;
        let remove: ListenerMethod = process.get_named_property("removeListener")?;
        for signal in Self::SIGNALS {
            remove.apply(process, FnArgs::from((signal, listener)))?;
        }
        // A reference left unreleased makes napi print "ObjectRef is not unref" at exit.
        self.process.unref(env)
    }
}

/// Node's own SIGINT and SIGTERM handlers are released to the default before the core listens to
/// these signals. Node installs them at startup, one-shot (`SA_RESETHAND`): they reset the
/// terminal and raise the signal again, to die of it. The core's signal listener calls the
/// handler it found, so that raise would come back to the listener, which would call it again:
/// an endless storm of signals (seen: the first SIGTERM read as thousands). A handler without
/// `SA_RESETHAND` (the core's own from an earlier `serve`, or libuv's for `process.on`) is left.
pub(crate) fn release_node_handlers() {
    #[cfg(unix)]
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: sigaction reads the current disposition into a zeroed struct we own; signal
        // sets the default one. No handler of ours runs meanwhile.
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(sig, std::ptr::null(), &mut old) == 0
                && old.sa_flags & libc::SA_RESETHAND != 0
                && old.sa_sigaction != libc::SIG_DFL
                && old.sa_sigaction != libc::SIG_IGN
            {
                libc::signal(sig, libc::SIG_DFL);
            }
        }
    }
}
