//! The event log on `Queue` (core `events`): `setEvents`, `events()` (an `EventReader`: `next`,
//! `commit`, `close`, and `for await` through napi's async iterator) and `eventEmitter()` (the
//! same events on a Node `EventEmitter`). Each reader is one core `Events` that starts opening at
//! the call, so "from now on" means from the call; this file reads the options, shares the core
//! reader between the JS object and its Promises, and turns events into JS objects.

use std::sync::Arc;
use std::time::Duration;

use napi::bindgen_prelude::*;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::{JsValue, ValueType};
use napi_derive::napi;
use tideq::{CancellationToken, ErrorKind};
use tokio::sync::{oneshot, watch, Mutex};

use crate::convert::{boolean, count, describe, string, Options};
use crate::error::{error_value, spawn, throw, type_error, Failure, Res};
use crate::jobs::Queue;
use crate::results::{Bytes, Stored};

/// Options of `events(options)` and `eventEmitter(options)`. Every field is optional.
// Declared for the TypeScript definitions only; `events_options` reads the fields one by one.
#[allow(dead_code)]
#[napi(object, object_from_js = false, object_to_js = false)]
pub struct EventsOptions {
    /// A named reader keeps its place in Redis (each read moves it on): started again with the
    /// same name, in this process or another, it resumes after the last events it had read
    /// (some may come again: at least once), and gets a `lagged` event first when the log was
    /// trimmed past its place meanwhile. 1–256 bytes. Default: none (the place is not kept).
    pub name: Option<String>,
    /// Start from the oldest event the log keeps instead of from the call (a named reader with
    /// a kept place resumes from it either way). Default false.
    pub from_start: Option<bool>,
}

const EVENTS_KEYS: &[&str] = &["name", "fromStart"];

/// Options of `reader.next(options)`.
// Declared for the TypeScript definitions only; `next` reads the field itself.
#[allow(dead_code)]
#[napi(object, object_from_js = false, object_to_js = false)]
pub struct NextEventOptions {
    /// Longest wait in ms, then `next` resolves with `null` (0: only an event already there).
    /// `null` or absent: no limit.
    #[napi(ts_type = "number | null")]
    pub timeout_ms: Option<f64>,
}

/// One event of a queue's event log.
#[napi(object, object_from_js = false, use_nullable = true)]
pub struct Event {
    /// What happened: `'enqueued'`; `'active'`, a delivery started (`data`: the attempt number);
    /// `'progress'` (`data`: what the handler reported); `'completed'` (`data`: the result, if
    /// any); `'failed'`, an attempt failed (`data`: the error), then `'retried'` (`data`: the
    /// delay in ms, or why) or `'dead'` (`data`: the last error); `'cancelled'`; `'snoozed'`,
    /// the handler threw `Snooze` or `BackOff` (`data`: the delay in ms); `'expired'`, not started
    /// by its deadline (`data`: the error). Or `'lagged'`:
    /// not a job's event, this reader fell behind the log's length and `data` says how many
    /// entries it missed.
    #[napi(
        ts_type = "'enqueued' | 'active' | 'progress' | 'completed' | 'failed' | 'retried' | 'dead' | 'cancelled' | 'snoozed' | 'expired' | 'lagged'"
    )]
    pub kind: String,
    /// The job's id (`''` for `lagged`).
    pub job_id: String,
    /// The event's data as stored; `null` when it has none.
    #[napi(ts_type = "Buffer")]
    pub data: Option<Bytes>,
    /// `data` read as `JobInfo.result` is: its JSON parsed, else the `Buffer` (an error's text, a
    /// raw result); `null` when there is no data.
    #[napi(ts_type = "unknown")]
    pub value: Stored,
    /// When data over 1 KiB was left out of the log (`data` is then `null`): its size in bytes.
    /// A completed job's result kept with the job is given in full instead; this is set when it
    /// was not kept or is gone (look it up with `queue.get`).
    pub data_omitted_bytes: Option<f64>,
    /// When it happened: ms since the epoch, Redis clock.
    pub at_ms: f64,
}

impl From<tideq::Event> for Event {
    fn from(e: tideq::Event) -> Self {
        Event {
            kind: e.kind.as_str().to_string(),
            job_id: e.job_id,
            data: e.data.clone().map(Bytes),
            value: Stored(e.data),
            data_omitted_bytes: e.data_omitted_bytes.map(|n| n as f64),
            at_ms: e.at_ms as f64,
        }
    }
}

/// Reads `events(options)` / `eventEmitter(options)`.
fn events_options(what: &str, options: Option<&Unknown>) -> Res<tideq::EventsOptions> {
    let o = Options::new(what, options, EVENTS_KEYS)?;
    Ok(tideq::EventsOptions {
        name: o.get("name", string)?,
        from_start: o.get("fromStart", boolean)?.unwrap_or(false),
    })
}

/// The `CLOSED` error of a call on a closed reader.
fn closed() -> Failure {
    Failure::Core(tideq::Error::new(
        ErrorKind::Closed,
        "the event reader is closed",
    ))
}

/// One core reader, shared by its JS object (an `EventReader` or an emitter) and the Promises of
/// its calls.
struct Reader {
    /// The core reader: `None` until it is open, and again once closed.
    events: Mutex<Option<tideq::Events>>,
    /// How opening went: `None` while the core is finding the reader's place.
    opened: watch::Receiver<Option<tideq::Result<()>>>,
    /// Cancelled by `close`: a read in progress ends with no event.
    closed: CancellationToken,
}

impl Reader {
    /// Starts opening the core reader now, so "from now on" means from this call.
    fn open(queue: &tideq::Queue, opts: tideq::EventsOptions) -> Arc<Self> {
        let (tx, rx) = watch::channel(None);
        let reader = Arc::new(Reader {
            events: Mutex::new(None),
            opened: rx,
            closed: CancellationToken::new(),
        });
        let (queue, r) = (queue.clone(), reader.clone());
        napi::bindgen_prelude::spawn(async move {
            let outcome = match queue.events(opts).await {
                Ok(events) => {
                    let mut slot = r.events.lock().await;
                    if !r.closed.is_cancelled() {
                        *slot = Some(events);
                    }
                    Ok(())
                }
                Err(e) => Err(e),
            };
            let _ = tx.send(Some(outcome));
        });
        reader
    }

    /// Waits until the reader's place is fixed; the opening's error if it failed.
    async fn ready(&self) -> Res<()> {
        let mut opened = self.opened.clone();
        let outcome = match opened.wait_for(Option::is_some).await {
            Ok(outcome) => outcome.clone(),
            // The opening task is gone without a word: the runtime is shutting down.
            Err(_) => return Err(closed()),
        };
        Ok(outcome.expect("waited for Some")?)
    }

    /// The next event, waiting up to `timeout` (`None`: no limit); `None` when none came in time
    /// or the reader was closed (also while waiting).
    async fn next(&self, timeout: Option<Duration>) -> Res<Option<tideq::Event>> {
        let read = async {
            self.ready().await?;
            match self.events.lock().await.as_mut() {
                Some(events) => Ok(events.next(timeout).await?),
                None => Ok(None),
            }
        };
        tokio::select! {
            biased;
            _ = self.closed.cancelled() => Ok(None),
            read = read => read,
        }
    }

    /// Stores a named reader's place (core `Events::commit`).
    async fn commit(&self) -> Res<()> {
        self.ready().await?;
        match self.events.lock().await.as_mut() {
            Some(events) => Ok(events.commit().await?),
            None => Err(closed()),
        }
    }

    /// Ends a read in progress and lets the core reader (and its connection) go.
    async fn close(&self) {
        self.closed.cancel();
        *self.events.lock().await = None;
    }
}

/// A reader of a queue's event log, from `queue.events(options)`: `await reader.next()` takes
/// one event at a time, and `for await (const e of reader)` (or of `queue.events()` directly)
/// loops over them until `close()` or a `break` (which closes it); a failure ends the loop by
/// throwing, and closes the reader. A named reader stores its place before each read from Redis,
/// so when it stops, even killed, it resumes after the events it had taken (some may come again).
/// A pending `next()`, like a running `for await` loop, keeps the process alive.
#[napi(async_iterator)]
pub struct EventReader {
    reader: Arc<Reader>,
}

#[napi]
impl EventReader {
    /// Resolves once the reader's place in the log is fixed (`events()` starts fixing it at the
    /// call): await it before doing what the reader must see, when it has to be seen for sure.
    /// Rejects with the error opening the reader met (`INVALID_ARGUMENT` for a bad name, or
    /// Redis unreachable), as `next()` then does.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn ready<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, ()>> {
        let reader = self.reader.clone();
        spawn(env, Ok(async move { reader.ready().await }))
    }

    /// The next event, in the log's order, waiting up to `timeoutMs` for one (default: no
    /// limit); `null` when none came in time, or once the reader is closed.
    #[napi(
        ts_args_type = "options?: NextEventOptions",
        ts_return_type = "Promise<Event | null>"
    )]
    pub fn next<'env>(
        &self,
        env: &'env Env,
        options: Option<Unknown>,
    ) -> Result<PromiseRaw<'env, Option<Event>>> {
        let reader = self.reader.clone();
        let timeout = Options::new("next options", options.as_ref(), &["timeoutMs"])
            .and_then(|o| o.nullable_millis("timeoutMs", None));
        spawn(
            env,
            timeout.map(|timeout| async move { Ok(reader.next(timeout).await?.map(Event::from)) }),
        )
    }

    /// Stores a named reader's place now (nothing for an unnamed one). `next()` does it before
    /// each read from Redis, so call this only when you stop reading. Waits for a pending
    /// `next()`; rejects with `CLOSED` once the reader is closed.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn commit<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, ()>> {
        let reader = self.reader.clone();
        spawn(env, Ok(async move { reader.commit().await }))
    }

    /// Stops the reader: a pending `next()` resolves with `null` and a `for await` loop over it
    /// ends; its connection is let go. It does not store the place (see `commit()`). Resolves
    /// once done.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn close<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, ()>> {
        let reader = self.reader.clone();
        spawn(
            env,
            Ok(async move {
                reader.close().await;
                Ok(())
            }),
        )
    }
}

/// What `for await` gets from an `EventReader`.
mod iteration {
    use napi::bindgen_prelude::*;

    use crate::error::{to_js, Res};

    /// An event, or the failure that ends the loop. On the JS thread it becomes the event
    /// object, or makes napi reject the iterator's `next()` with the tideq error itself (its
    /// `code` included) instead of a generic one. Named `Event` so the generated type of
    /// `[Symbol.asyncIterator]` reads `AsyncGenerator<Event, ...>`.
    pub struct Event(pub(super) Res<super::Event>);

    impl ToNapiValue for Event {
        unsafe fn to_napi_value(
            env: napi::sys::napi_env,
            val: Self,
        ) -> Result<napi::sys::napi_value> {
            match val.0 {
                Ok(event) => unsafe { super::Event::to_napi_value(env, event) },
                Err(failure) => Err(to_js(&Env::from_raw(env), failure)),
            }
        }
    }
}

#[napi]
impl AsyncGenerator for EventReader {
    type Yield = iteration::Event;
    type Next = ();
    type Return = ();

    fn next(
        &mut self,
        _value: Option<()>,
    ) -> impl std::future::Future<Output = Result<Option<Self::Yield>>> + Send + 'static {
        let reader = self.reader.clone();
        async move {
            Ok(match reader.next(None).await {
                Ok(event) => event.map(|e| iteration::Event(Ok(Event::from(e)))),
                Err(failure) => {
                    reader.close().await;
                    Some(iteration::Event(Err(failure)))
                }
            })
        }
    }

    /// `break` (or a `throw`) in a `for await` loop: the reader is closed.
    fn complete(
        &mut self,
        _value: Option<()>,
    ) -> impl std::future::Future<Output = Result<Option<Self::Yield>>> + Send + 'static {
        let reader = self.reader.clone();
        async move {
            reader.close().await;
            Ok(None)
        }
    }
}

/// What the emitter's pump hands the JS thread.
enum Delivery {
    Ready,
    Event(tideq::Event),
    Error(Failure),
    Close,
}

/// The value an emitter emits: an event object, an error, or nothing (`'close'`).
enum Emitted {
    Event(Event),
    Error(Failure),
    Nothing,
}

impl ToNapiValue for Emitted {
    unsafe fn to_napi_value(env: napi::sys::napi_env, val: Self) -> Result<napi::sys::napi_value> {
        match val {
            Emitted::Event(event) => unsafe { Event::to_napi_value(env, event) },
            Emitted::Error(failure) => Ok(error_value(&Env::from_raw(env), failure)?.raw()),
            Emitted::Nothing => unsafe { <()>::to_napi_value(env, ()) },
        }
    }
}

/// `emit(name, value)` on the emitter, and `emit('event', value)` too when the flag says so.
type EmitArgs = FnArgs<(String, Emitted, bool)>;
type Emit = ThreadsafeFunction<Delivery, (), EmitArgs, Status, false>;

/// Node's `EventEmitter` class: `process.getBuiltinModule('node:events')` (Node 20.16 and
/// later), else the class of `process` itself (an `EventEmitter` in every Node version).
fn event_emitter_class<'env>(env: &'env Env) -> Result<Function<'env, (), Unknown<'env>>> {
    let process: Object = env.get_global()?.get_named_property("process")?;
    let get: Unknown = process.get_named_property("getBuiltinModule")?;
    if get.get_type()? == ValueType::Function {
        let get: Function<&str, Object> = crate::convert::read_value(&get).map_err(|_| {
            napi::Error::new(
                Status::GenericFailure,
                "process.getBuiltinModule is unreadable",
            )
        })?;
        let events = get.apply(process, "node:events")?;
        return events.get_named_property("EventEmitter");
    }
    let mut proto: Unknown = process.get_prototype()?;
    while proto.get_type()? == ValueType::Object {
        let obj = Object::from_raw(env.raw(), proto.raw());
        let class: Unknown = obj.get_named_property("constructor")?;
        if class.get_type()? == ValueType::Function {
            let class: Function<(), Unknown> =
                unsafe { Function::from_napi_value(env.raw(), class.raw()) }?;
            if class.name()? == "EventEmitter" {
                return Ok(class);
            }
        }
        proto = obj.get_prototype()?;
    }
    Err(napi::Error::new(
        Status::GenericFailure,
        "tideq: Node's EventEmitter class was not found",
    ))
}

/// Hands one delivery to the JS thread and waits until its listeners have run; false once JS
/// can no longer be reached (the environment is shutting down).
async fn deliver(emit: &Emit, delivery: Delivery) -> bool {
    let (tx, rx) = oneshot::channel();
    let status = emit.call_with_return_value(
        delivery,
        ThreadsafeFunctionCallMode::NonBlocking,
        move |thrown: Result<()>, _env| {
            let _ = tx.send(());
            // A listener that threw: an uncaught exception, as when `emit` is called from JS.
            thrown
        },
    );
    status == Status::Ok && rx.await.is_ok()
}

/// The emitter's loop: `'ready'` once its place is fixed, then each event to its listeners
/// (the next read waits for them, so a named reader's stored place never passes an event they
/// have not had), until `close()` or a failure (`'error'`); then `'close'`.
async fn pump(reader: Arc<Reader>, emit: Emit, finished: CancellationToken) {
    let mut go_on = match reader.ready().await {
        Ok(()) if reader.closed.is_cancelled() => false,
        Ok(()) => deliver(&emit, Delivery::Ready).await,
        Err(failure) => {
            deliver(&emit, Delivery::Error(failure)).await;
            false
        }
    };
    while go_on {
        let (delivery, last) = match reader.next(None).await {
            Ok(Some(event)) => (Delivery::Event(event), false),
            Ok(None) => break,
            Err(failure) => (Delivery::Error(failure), true),
        };
        go_on = deliver(&emit, delivery).await && !last;
    }
    reader.close().await;
    deliver(&emit, Delivery::Close).await;
    // Releasing the function lets the process exit.
    drop(emit);
    finished.cancel();
}

#[napi]
impl Queue {
    /// Turns the queue's event log on, keeping about its newest `maxLen` entries (an entry holds
    /// one kind of event for a batch of jobs), or off with `null` (the log is deleted). Every
    /// producer and worker of the queue follows the setting at once. Events are off by default.
    /// Rejects with `INVALID_ARGUMENT` for 0.
    #[napi(
        ts_args_type = "maxLen: number | null",
        ts_return_type = "Promise<void>"
    )]
    pub fn set_events<'env>(
        &self,
        env: &'env Env,
        max_len: Unknown,
    ) -> Result<PromiseRaw<'env, ()>> {
        let q = self.inner.clone();
        let max_len = match max_len.get_type()? {
            ValueType::Null => Ok(None),
            ValueType::Number => count("maxLen", &max_len).map(Some),
            _ => Err(type_error(format!(
                "maxLen must be a number (the log's length) or null (events off); got {}",
                describe(&max_len)
            ))),
        };
        spawn(
            env,
            max_len.map(|n| async move { Ok(q.set_events(n).await?) }),
        )
    }

    /// A reader of the queue's event log (see `setEvents`): from the call on, from the oldest
    /// event kept (`fromStart`), or, named, from where the last reader of that name stopped.
    /// Returned at once, so `for await (const e of queue.events())` works; its place is fixed
    /// by a request sent at the call (`ready()` resolves then). Throws on options of the wrong
    /// type; a bad name rejects its `ready()` and `next()`.
    #[napi(ts_args_type = "options?: EventsOptions")]
    pub fn events(&self, env: &Env, options: Option<Unknown>) -> Result<EventReader> {
        let opts = throw(env, events_options("events options", options.as_ref()))?;
        Ok(EventReader {
            reader: Reader::open(&self.inner, opts),
        })
    }

    /// The queue's events on a Node `EventEmitter`: `'ready'` once its place is fixed (as
    /// `EventReader.ready()`), then each event under its kind (`'completed'`, `'failed'`, ...,
    /// `'lagged'`) and as `'event'`, with the `Event` object; a failure (Redis unreachable, a
    /// bad name) is emitted as `'error'` and stops it; `'close'` comes last. Starts at the call,
    /// like `events(options)`; listeners added in the same tick miss nothing. `close()` stops it
    /// and resolves after `'close'`. While it runs it keeps the process alive. A listener that
    /// throws is an uncaught exception, as with any emitter.
    #[napi(
        ts_args_type = "options?: EventsOptions",
        ts_return_type = "import('node:events').EventEmitter & { close(): Promise<void> }"
    )]
    pub fn event_emitter<'env>(
        &self,
        env: &'env Env,
        options: Option<Unknown>,
    ) -> Result<Object<'env>> {
        let opts = throw(
            env,
            events_options("eventEmitter options", options.as_ref()),
        )?;
        let emitter = event_emitter_class(env)?.new_instance(())?;
        let mut emitter = Object::from_raw(env.raw(), emitter.raw());
        // Called with `this` the emitter: emit(name, value), and emit('event', value) if `all`.
        let emit = env.create_function_from_closure::<EmitArgs, (), _>("tideqEmit", |ctx| {
            let this: Object = ctx.this()?;
            let (name, value, all): (String, Unknown, bool) = ctx.args()?;
            let emit: Function<FnArgs<(String, Unknown)>, Unknown> =
                this.get_named_property("emit")?;
            emit.apply(this, FnArgs::from((name, value)))?;
            if all {
                emit.apply(this, FnArgs::from(("event".to_string(), value)))?;
            }
            Ok(())
        })?;
        let emit: Emit = emit
            .bind(emitter)?
            .build_threadsafe_function::<Delivery>()
            .callee_handled::<false>()
            .build_callback(|ctx| {
                Ok(FnArgs::from(match ctx.value {
                    Delivery::Event(e) => (
                        e.kind.as_str().to_string(),
                        Emitted::Event(Event::from(e)),
                        true,
                    ),
                    Delivery::Ready => ("ready".to_string(), Emitted::Nothing, false),
                    Delivery::Error(f) => ("error".to_string(), Emitted::Error(f), false),
                    Delivery::Close => ("close".to_string(), Emitted::Nothing, false),
                }))
            })?;
        let reader = Reader::open(&self.inner, opts);
        let finished = CancellationToken::new();
        napi::bindgen_prelude::spawn(pump(reader.clone(), emit, finished.clone()));
        let close =
            env.create_function_from_closure::<(), Unknown<'static>, _>("close", move |ctx| {
                reader.closed.cancel();
                let finished = finished.clone();
                let done = spawn(
                    ctx.env,
                    Ok(async move {
                        finished.cancelled().await;
                        Ok(())
                    }),
                )?;
                Ok(unsafe { Unknown::from_raw_unchecked(ctx.env.raw(), done.raw()) })
            })?;
        emitter.set_named_property("close", close)?;
        Ok(emitter)
    }
}
