//! SIGINT/SIGTERM for `run()` (capped consumers and job workers), the Node way: listeners added
//! with `process.once` that ask the runtime to stop, removed again once it has stopped. The core's
//! `signal` waits for the signals itself; a Node process leaves them to its event loop.

use std::future::Future;

use napi::bindgen_prelude::*;

/// `run()`: until `done` resolves, SIGINT and SIGTERM call `stop`; then the listeners are removed
/// and the Promise resolves with `done`'s output.
pub(crate) fn stop_on_signal<'env, T>(
    env: &'env Env,
    stop: impl Fn() + Clone + 'static,
    done: impl Future<Output = T> + Send + 'static,
) -> Result<PromiseRaw<'env, T>>
where
    T: ToNapiValue + Send + 'static,
{
    let hooks = SignalHooks::install(env, stop.clone()).inspect_err(|_| stop())?;
    env.spawn_future_with_callback(async move { Ok(done.await) }, move |env, out| {
        hooks.remove(env)?;
        Ok(out)
    })
}

/// `process.once` / `process.removeListener`: `(eventName, listener)`.
type ListenerMethod<'env> =
    Function<'env, FnArgs<(&'static str, Function<'env, (), ()>)>, Unknown<'env>>;

/// The installed listeners; [`remove`](Self::remove) them once the runtime has stopped.
struct SignalHooks {
    process: ObjectRef,
    listener: FunctionRef<(), ()>,
}

impl SignalHooks {
    const SIGNALS: [&'static str; 2] = ["SIGINT", "SIGTERM"];

    /// `process.once(signal, stop)` for SIGINT and SIGTERM.
    fn install(env: &Env, stop: impl Fn() + 'static) -> Result<Self> {
        let global = env.get_global()?;
        let process: Object = global.get_named_property("process")?;
        let listener =
            env.create_function_from_closure::<(), (), _>("tideqStopOnSignal", move |_ctx| {
                stop();
                Ok(())
            })?;
        let once: ListenerMethod = process.get_named_property("once")?;
        for signal in Self::SIGNALS {
            once.apply(process, FnArgs::from((signal, listener)))?;
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
