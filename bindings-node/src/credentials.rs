//! `new Client({ credentialsProvider })`: a JS function asked for the credentials of each new
//! connection (`tideq::Config::with_credentials_provider`), called on the JS thread. It returns
//! `{ username?, password }` or a password string, or a Promise of one; what it throws or
//! rejects with becomes the `AUTH` error's text. The function does not keep the process alive
//! (a client is no reason to stay up; its callers' Promises are).

use std::sync::Arc;

use napi::bindgen_prelude::*;
use tideq::{Credentials, CredentialsProvider};

use crate::convert::{is_string, string, Options};
use crate::error::{Failure, Res};
use crate::handler::{call, Reply, Tsfn};

/// What the provider gave, read on the JS thread.
struct Provided(std::result::Result<Credentials, String>);

impl Reply for Provided {
    fn read(v: &Unknown) -> Self {
        Provided(read(v).map_err(|f| match f {
            Failure::Core(e) => e.message().to_string(),
            Failure::Type(t) => t,
        }))
    }
}

fn read(v: &Unknown) -> Res<Credentials> {
    let what = "what credentialsProvider returned";
    if is_string(v) {
        return Ok(Credentials::password(string(what, v)?));
    }
    let opts = Options::new(what, Some(v), &["username", "password"])?;
    Ok(Credentials {
        username: opts.get("username", string)?,
        password: opts.required("password", string)?,
    })
}

/// The core's provider calling `f` (unreferenced: see the module's docs).
// `unref` is napi_unref_threadsafe_function (see handler.rs's `unreferenced`).
#[allow(deprecated)]
pub(crate) fn provider(
    env: &Env,
    f: Function<(), Unknown<'static>>,
) -> Res<impl CredentialsProvider> {
    let mut tsfn: Tsfn<(), ()> = f
        .build_threadsafe_function::<()>()
        .callee_handled::<false>()
        .build_callback(|_| Ok(()))?;
    tsfn.unref(env)?;
    let tsfn = Arc::new(tsfn);
    Ok(move || {
        let f = Arc::downgrade(&tsfn);
        async move {
            match call::<(), (), Provided>(&f, ()).await {
                Ok(Provided(out)) => out,
                Err(e) => Err(e.reason),
            }
        }
    })
}
