//! SIGINT/SIGTERM for `run()` (capped consumers and job workers), the Node way: listeners added
//! with `process.once` that ask the runtime to stop, removed again once it has stopped. No core
//! counterpart (the core leaves signals to each runtime).

use napi::bindgen_prelude::*;

/// `process.once` / `process.removeListener`: `(eventName, listener)`.
type ListenerMethod<'env> =
    Function<'env, FnArgs<(&'static str, Function<'env, (), ()>)>, Unknown<'env>>;

/// The installed listeners; [`remove`](Self::remove) them once the runtime has stopped.
pub(crate) struct SignalHooks {
    process: ObjectRef,
    listener: FunctionRef<(), ()>,
}

impl SignalHooks {
    const SIGNALS: [&'static str; 2] = ["SIGINT", "SIGTERM"];

    /// `process.once(signal, stop)` for SIGINT and SIGTERM.
    pub(crate) fn install(env: &Env, stop: impl Fn() + 'static) -> Result<Self> {
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

    pub(crate) fn remove(self, env: &Env) -> Result<()> {
        let process = self.process.get_value(env)?;
        let listener = self.listener.borrow_back(env)?;
        let remove: ListenerMethod = process.get_named_property("removeListener")?;
        for signal in Self::SIGNALS {
            remove.apply(process, FnArgs::from((signal, listener)))?;
        }
        Ok(())
    }
}
