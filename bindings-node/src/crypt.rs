//! Encryption at rest: the `encryption` queue option as the core's `tideq::Encryption`, with a
//! `keyProvider` called on the JS thread (at once for the current key, then from the core's
//! threads, once per other key id; a Promise it returns is awaited on the JS thread while the
//! core's thread waits for the answer).

use std::time::Duration;

use napi::bindgen_prelude::*;
use napi::threadsafe_function::ThreadsafeFunctionCallMode;
use napi::ValueType;
use napi_derive::napi;

use crate::convert::{entries, function, object, payload, string, Options};
use crate::error::{invalid, Res};

/// The `encryption` option of `new Queue(name, options)` and `new CappedQueue(name, options)`:
/// AES-256-GCM over payloads, results, progress, log lines and error texts (a capped queue's
/// items) before they reach Redis (ids, task names, groups and
/// priorities stay clear). `currentKey` is the key id new values are sealed with; `keys` maps key
/// ids to 32-byte keys; `keyProvider(keyId)` (a `Buffer`/`Uint8Array` of 32 bytes, `null`, or a
/// Promise of one) is asked for any other id, once per id (a tenant's keys from a key service).
/// An async provider is asked for the current key when it is first needed, not by the
/// constructor. Keep old keys readable while
/// a new one is current to rotate without downtime. A bad key throws `INVALID_ARGUMENT` from the
/// constructor, before anything is written.
// Declared for the TypeScript definitions only; `encryption` reads the fields one by one.
#[allow(dead_code)]
#[napi(object, object_from_js = false, object_to_js = false)]
pub struct EncryptionOptions {
    /// The key id new values are sealed with.
    pub current_key: String,
    /// Keys by id, each 32 bytes.
    #[napi(ts_type = "Record<string, Buffer | Uint8Array>")]
    pub keys: Option<()>,
    /// Asked for a key id not in `keys`: its 32 bytes, or `null` when there is none.
    #[napi(
        ts_type = "(keyId: string) => Buffer | Uint8Array | null | undefined | Promise<Buffer | Uint8Array | null | undefined>"
    )]
    pub key_provider: Option<()>,
}

const KEYS: &[&str] = &["currentKey", "keys", "keyProvider"];

/// A provider's reply: its bytes, `None` for `null`/`undefined` or anything else.
fn key_bytes(v: &Unknown) -> Option<Vec<u8>> {
    match v.get_type().ok()? {
        ValueType::Null | ValueType::Undefined => None,
        _ => payload("key", v).ok(),
    }
}

/// `options.encryption` as the core's value.
pub(crate) fn encryption(what: &str, v: &Unknown) -> Res<tideq::Encryption> {
    let opts = Options::new(what, Some(v), KEYS)?;
    let current = opts.required("currentKey", string)?;
    let mut keys = Vec::new();
    if let Some(obj) = opts.get("keys", object)? {
        entries(&format!("{what}.keys"), &obj, None, |id, key| {
            keys.push((id.clone(), payload(&format!("{what}.keys.{id}"), &key)?));
            Ok(())
        })?;
    }
    let mut provider: Option<Box<tideq::crypt::KeyProvider>> = None;
    // Whether the current key is left to its first use (an async provider's answer cannot be
    // waited for on this thread).
    let mut deferred = false;
    if let Some(f) = opts.get("keyProvider", function::<String>)? {
        let env = Env::from_raw(v.value().env);
        // The current key is asked for now, on this (the JS) thread.
        if !keys.iter().any(|(id, _)| *id == current) {
            let got: Unknown = f.call(current.clone())?;
            if got.is_promise()? {
                // Asked again at the first use; a rejection of this one is not left unhandled.
                deferred = true;
                answer(Ok(got), std::sync::mpsc::channel().0);
            } else {
                let Some(k) = key_bytes(&got) else {
                    return Err(invalid(format!(
                        "encryption key {current:?} is not available (keyProvider gave none)"
                    )));
                };
                keys.push((current.clone(), k));
            }
        }
        #[allow(deprecated)]
        let tsfn = {
            let mut t = f
                .build_threadsafe_function::<String>()
                .callee_handled::<false>()
                .build_callback(|ctx| Ok(ctx.value))?;
            // A queue's provider does not keep Node running.
            t.unref(&env)?;
            t
        };
        provider = Some(Box::new(move |id: &str| {
            let (tx, rx) = std::sync::mpsc::channel();
            let status = tsfn.call_with_return_value(
                id.to_string(),
                ThreadsafeFunctionCallMode::NonBlocking,
                move |ret: Result<Unknown<'static>>, _env| {
                    answer(ret, tx);
                    Ok(())
                },
            );
            if status != Status::Ok {
                return None;
            }
            rx.recv_timeout(PROVIDER_TIMEOUT).ok().flatten()
        }));
    }
    let e = if deferred {
        tideq::Encryption::deferred(&current, keys, provider)
    } else {
        tideq::Encryption::new(&current, keys, provider)
    };
    Ok(e?)
}

/// How long a core thread waits for the provider's answer (and its Promise's).
const PROVIDER_TIMEOUT: Duration = Duration::from_secs(10);

/// Sends what the provider gave (on the JS thread): its bytes now, or once its Promise settles
/// (`None` when it rejects or gives no key).
fn answer(ret: Result<Unknown<'_>>, tx: std::sync::mpsc::Sender<Option<Vec<u8>>>) {
    let v = match ret {
        Ok(v) => v,
        Err(_) => {
            let _ = tx.send(None);
            return;
        }
    };
    if !v.is_promise().unwrap_or(false) {
        let _ = tx.send(key_bytes(&v));
        return;
    }
    let p = unsafe { PromiseRaw::<Unknown>::from_napi_value(v.value().env, v.value().value) };
    let Ok(p) = p else {
        let _ = tx.send(None);
        return;
    };
    let rejected = tx.clone();
    let settled = p
        .then(move |ctx| {
            let _ = tx.send(key_bytes(&ctx.value));
            Ok(())
        })
        .and_then(|then| {
            then.catch(move |_: CallbackContext<Unknown>| {
                let _ = rejected.send(None);
                Ok(())
            })
        });
    if let Err(e) = settled {
        log::error!("tideq: keyProvider's Promise could not be awaited: {e}");
    }
}
