//! Tasks by name (core `task`): a job can carry a task name and data instead of raw bytes.
//! This file holds the JS side of it: a task's data to payload bytes for `enqueueTask(name, data)`
//! (JSON through the JS engine's own `JSON.stringify`, or MessagePack through the generic value
//! conversion in [`crate::convert`]), a job's payload back to a JS value for `job.data`, and the
//! handler object of `work({ name: handler })`, each of whose handlers is called with
//! `(job.data, job)`. Which handler runs, and what happens to a job whose name none has, is the
//! core's `Queue::work_tasks`.

use napi::bindgen_prelude::*;
use napi::ValueType;
use tideq::PayloadFormat;

use crate::convert::{describe, entries, from_msgpack, function, object, string, to_msgpack};
use crate::error::{invalid, type_error, Failure, Res};

/// The `format` option: `'json'` or `'msgpack'` (the names are the core's).
pub(crate) fn format_arg(what: &str, v: &Unknown) -> Res<PayloadFormat> {
    let name = string(what, v)?;
    PayloadFormat::parse(&name).map_err(|_| {
        invalid(format!(
            "{what} must be '{}' or '{}'; got {name:?}",
            PayloadFormat::Json.as_str(),
            PayloadFormat::Msgpack.as_str()
        ))
    })
}

/// A task's data as payload bytes in `format`. Absent or `undefined` data is `null`.
pub(crate) fn encode_data(
    env: &Env,
    what: &str,
    data: Option<&Unknown>,
    format: PayloadFormat,
) -> Res<Vec<u8>> {
    let data = data.filter(|d| d.get_type().ok() != Some(ValueType::Undefined));
    match format {
        PayloadFormat::Json => {
            let Some(data) = data else {
                return Ok(b"null".to_vec());
            };
            let json: Object = env.get_global()?.get_named_property("JSON")?;
            let stringify: Function<Unknown, Unknown> = json.get_named_property("stringify")?;
            let text = stringify.call(*data)?;
            if text.get_type()? != ValueType::String {
                return Err(type_error(format!(
                    "{what} has no JSON form; got {}",
                    describe(data)
                )));
            }
            Ok(crate::convert::read_value::<String>(&text)?.into_bytes())
        }
        PayloadFormat::Msgpack => {
            let value = match data {
                Some(data) => to_msgpack(what, data)?,
                None => tideq::envelope::Value::Nil,
            };
            Ok(tideq::task::encode_msgpack_value(&value))
        }
    }
}

/// `job.data`: the task's data decoded by the job's format; `INVALID_ARGUMENT` for a raw payload.
pub(crate) fn task_data<'env>(env: &'env Env, job: &tideq::Job) -> Res<Unknown<'env>> {
    match job.format {
        None => Err(invalid(format!(
            "job {:?} has a raw payload, not task data (it was enqueued with a Buffer): read \
             job.payload, job.text() or job.json()",
            job.id
        ))),
        Some(PayloadFormat::Json) => {
            let text = job.payload_str().map_err(Failure::from)?;
            let json: Object = env.get_global()?.get_named_property("JSON")?;
            let parse: Function<&str, Unknown> = json.get_named_property("parse")?;
            parse.call(text).map_err(|e| {
                invalid(format!(
                    "job {:?}: its task data (JSON) does not parse: {}",
                    job.id, e.reason
                ))
            })
        }
        Some(PayloadFormat::Msgpack) => {
            from_msgpack(env, tideq::task::decode_msgpack_value(&job.payload)?)
        }
    }
}

/// The handlers of `work({ name: handler, ... })`, by task name, each wrapped in a function of
/// the job alone that reads `job.data` (a decoding error is thrown there, failing the attempt)
/// and calls the handler with `(data, job)`.
/// (An empty object reaches the core, which refuses a task worker without tasks.)
pub(crate) fn task_handlers<'env, Args: JsValuesTupleIntoVec>(
    env: &'env Env,
    what: &str,
    tasks: &Unknown<'env>,
) -> Res<Vec<(String, Function<'env, Args, Unknown<'static>>)>> {
    let obj = object(what, tasks)?;
    let mut out = Vec::new();
    entries(what, &obj, None, |name, value| {
        let handler: Function<FnArgs<(Unknown<'static>, Object<'static>)>, Unknown<'static>> =
            function(&format!("{what}[{name:?}]"), &value)?;
        let handler = handler.create_ref()?;
        let wrapper = env.create_function_from_closure::<Args, Unknown<'static>, _>(
            &format!("tideqTask_{name}"),
            move |ctx| {
                let job: Object<'static> = ctx.get(0)?;
                let data: Unknown<'static> = job.get_named_property("data")?;
                let handler = handler.borrow_back(ctx.env)?;
                handler.call(FnArgs::from((data, job)))
            },
        )?;
        out.push((name, wrapper));
        Ok(())
    })?;
    Ok(out)
}
