//! JS values <-> Rust values (no core counterpart). Arguments arrive as `Unknown` so a wrong type
//! becomes a `TypeError` with `code === 'INVALID_ARGUMENT'` and a message naming the argument,
//! instead of napi's generic conversion error (and so `-1` is never read as a huge `u32`). Range
//! checks with queue meaning (capacity >= 1, durations >= 1 ms) stay in the core. Also the one
//! generic conversion between JS values and MessagePack values (`tideq::envelope::Value`).

use std::time::Duration;

use napi::bindgen_prelude::*;
use napi::{JsValue, ValueType};
use tideq::envelope::Value;

use crate::error::{invalid, type_error, Res};

/// The JS type of `v` for messages: `number`, `null`, `an array`, `a Float32Array`...
pub(crate) fn describe(v: &Unknown) -> String {
    match v.get_type() {
        Ok(ValueType::Object) => {
            if v.is_array().unwrap_or(false) {
                "an array".into()
            } else if v.is_typedarray().unwrap_or(false) {
                "a typed array other than Uint8Array".into()
            } else if v.is_arraybuffer().unwrap_or(false) {
                "an ArrayBuffer".into()
            } else {
                "an object".into()
            }
        }
        Ok(ValueType::Null) => "null".into(),
        Ok(ValueType::Undefined) => "undefined".into(),
        Ok(t) => t.to_string().to_lowercase(),
        Err(_) => "an unreadable value".into(),
    }
}

/// `v` read as a `T`, without checking its JS type first.
pub(crate) fn read_value<T: FromNapiValue>(v: &Unknown) -> Res<T> {
    Ok(unsafe { T::from_napi_value(v.value().env, v.raw()) }?)
}

fn is(v: &Unknown, t: ValueType) -> bool {
    v.get_type().map(|got| got == t).unwrap_or(false)
}

/// `v` read as a `T` when its JS type is `t`; otherwise a `TypeError` saying it must be `a_t`.
fn typed<T: FromNapiValue>(what: &str, v: &Unknown, t: ValueType, a_t: &str) -> Res<T> {
    if !is(v, t) {
        return Err(type_error(format!(
            "{what} must be {a_t}; got {}",
            describe(v)
        )));
    }
    read_value(v)
}

/// A string argument (queue or group name, job id, prefix, URL...). A string that is not
/// well-formed UTF-16 (a lone surrogate, e.g. `'a\uD800'`) is refused: it has no UTF-8 form, and
/// replacing the surrogate with U+FFFD would give two different names the same keys.
/// A string, or `None` for `null` or `undefined`.
pub(crate) fn opt_string(what: &str, v: &Unknown) -> Res<Option<String>> {
    if is(v, ValueType::Null) || is(v, ValueType::Undefined) {
        return Ok(None);
    }
    string(what, v).map(Some)
}

pub(crate) fn string(what: &str, v: &Unknown) -> Res<String> {
    let s: String = typed(what, v, ValueType::String, "a string")?;
    // napi replaces a lone surrogate with U+FFFD; only then is the UTF-16 read again.
    if s.contains(char::REPLACEMENT_CHARACTER) {
        if let Some(unit) = lone_surrogate(v)? {
            return Err(invalid(format!(
                "{what} is not well-formed UTF-16: it holds a lone surrogate (U+{unit:04X}), \
                 which has no UTF-8 form"
            )));
        }
    }
    Ok(s)
}

/// The first lone surrogate of the JS string `v`, if it has one.
fn lone_surrogate(v: &Unknown) -> Res<Option<u16>> {
    let units = read_value::<Utf16String>(v)?;
    Ok(char::decode_utf16(units.iter().copied())
        .find_map(|c| c.err())
        .map(|e| e.unpaired_surrogate()))
}

pub(crate) fn boolean(what: &str, v: &Unknown) -> Res<bool> {
    typed(what, v, ValueType::Boolean, "a boolean")
}

/// A function argument (handlers, `onError`).
pub(crate) fn function<'env, Args: JsValuesTupleIntoVec>(
    what: &str,
    v: &Unknown<'env>,
) -> Res<Function<'env, Args, Unknown<'static>>> {
    typed(what, v, ValueType::Function, "a function")
}

/// A plain object (not an array).
pub(crate) fn object<'env>(what: &str, v: &Unknown<'env>) -> Res<Object<'env>> {
    if !is(v, ValueType::Object) || v.is_array()? {
        return Err(type_error(format!(
            "{what} must be an object; got {}",
            describe(v)
        )));
    }
    read_value(v)
}

/// An item: a `Buffer` or any `Uint8Array` (bytes, copied), or a string (its UTF-8 bytes).
pub(crate) fn bytes(what: &str, v: &Unknown) -> Res<Vec<u8>> {
    match v.get_type()? {
        ValueType::String => return Ok(read_value::<String>(v)?.into_bytes()),
        ValueType::Object if v.is_typedarray()? => {
            if let Ok(slice) = read_value::<Uint8ArraySlice>(v) {
                return Ok(slice.to_vec());
            }
        }
        _ => {}
    }
    Err(type_error(format!(
        "{what} must be a Buffer, Uint8Array or string; got {}",
        describe(v)
    )))
}

/// A job's raw payload: a `Buffer` or any `Uint8Array` (bytes, copied). A string is refused
/// (payloads are bytes in every runtime): raw text is given as `Buffer.from(text)`, and a task
/// by name is `enqueueTask(name, data)`.
pub(crate) fn payload(what: &str, v: &Unknown) -> Res<Vec<u8>> {
    if v.get_type()? == ValueType::Object && v.is_typedarray()? {
        if let Ok(slice) = read_value::<Uint8ArraySlice>(v) {
            return Ok(slice.to_vec());
        }
    }
    Err(type_error(format!(
        "{what} must be a Buffer or Uint8Array (raw bytes; for text, Buffer.from(text)); got {}",
        describe(v)
    )))
}

/// True when `v` is a JS string.
pub(crate) fn is_string(v: &Unknown) -> bool {
    is(v, ValueType::String)
}

/// True when `v` is a typed array (a `Buffer`, a `Uint8Array` or another kind, which
/// [`payload`] then refuses by name).
pub(crate) fn is_typed_array(v: &Unknown) -> bool {
    is(v, ValueType::Object) && v.is_typedarray().unwrap_or(false)
}

fn number(what: &str, v: &Unknown) -> Res<f64> {
    let n: f64 = typed(what, v, ValueType::Number, "a number")?;
    if !n.is_finite() || n < 0.0 {
        return Err(invalid(format!(
            "{what} must be a finite, non-negative number; got {n}"
        )));
    }
    Ok(n)
}

/// A whole number of at least `min`, for messages: `"a whole number of at least 1"`.
fn whole_number(what: &str, v: &Unknown, min: usize) -> Res<usize> {
    let n: f64 = typed(what, v, ValueType::Number, "a number")?;
    if !n.is_finite() || n < 0.0 || n.fract() != 0.0 || n > 9_007_199_254_740_991.0 {
        let wanted = match min {
            0 => "a whole number, 0 or more".to_string(),
            min => format!("a whole number of at least {min}"),
        };
        return Err(invalid(format!("{what} must be {wanted}; got {n}")));
    }
    // Below `min` (0 where the minimum is 1) is left to the core, which names its own rule.
    Ok(n as usize)
}

/// A count where 0 is allowed (`keepCompleted`, `offset`...).
pub(crate) fn count(what: &str, v: &Unknown) -> Res<usize> {
    whole_number(what, v, 0)
}

/// A count of at least 1 (`concurrency`, `capacity`, `shards`...). The type and sign are checked
/// here; 0 reaches the core, which refuses it with its own message.
pub(crate) fn count1(what: &str, v: &Unknown) -> Res<usize> {
    whole_number(what, v, 1)
}

/// A count of at least 1 that fits a `u32` (attempt counts).
pub(crate) fn count1_u32(what: &str, v: &Unknown) -> Res<u32> {
    let n = count1(what, v)?;
    u32::try_from(n).map_err(|_| invalid(format!("{what} must be at most {}; got {n}", u32::MAX)))
}

/// A duration given in milliseconds (fractions allowed).
pub(crate) fn millis(what: &str, v: &Unknown) -> Res<Duration> {
    let ms = number(what, v)?;
    Duration::try_from_secs_f64(ms / 1000.0).map_err(|_| invalid(format!("{what} is too large")))
}

/// A duration in whole milliseconds (fractions are dropped), for values the core keeps in ms.
pub(crate) fn whole_millis(what: &str, v: &Unknown) -> Res<u64> {
    Ok(u64::try_from(millis(what, v)?.as_millis()).unwrap_or(u64::MAX))
}

/// A duration on its way to JS, in milliseconds (`null` for none).
pub(crate) fn to_millis(d: Option<Duration>) -> Option<f64> {
    d.map(|d| d.as_secs_f64() * 1000.0)
}

/// A point in time: a `Date` or a number of milliseconds since the epoch.
pub(crate) fn epoch_ms(what: &str, v: &Unknown) -> Res<u64> {
    if is(v, ValueType::Object) && v.is_date()? {
        let ms = read_value::<napi::JsDate>(v)?.value_of()?;
        if !ms.is_finite() || ms < 0.0 {
            return Err(invalid(format!(
                "{what} must be a valid Date at or after 1970; got {}",
                if ms.is_finite() {
                    ms.to_string()
                } else {
                    "an invalid Date".into()
                }
            )));
        }
        return Ok(ms as u64);
    }
    if !is(v, ValueType::Number) {
        return Err(type_error(format!(
            "{what} must be a Date or a number of milliseconds since the epoch; got {}",
            describe(v)
        )));
    }
    Ok(number(what, v)? as u64)
}

/// An array of values, each read by `item`.
pub(crate) fn array<'env, T>(
    what: &str,
    v: &Unknown<'env>,
    mut item: impl FnMut(usize, &Unknown<'env>) -> Res<T>,
) -> Res<Vec<T>> {
    if !v.is_array()? {
        return Err(type_error(format!(
            "{what} must be an array; got {}",
            describe(v)
        )));
    }
    let arr: Array = read_value(v)?;
    let len = arr.len();
    let mut out = Vec::with_capacity(len as usize);
    for i in 0..len {
        let el: Unknown = arr.get_element(i)?;
        out.push(item(i as usize, &el)?);
    }
    Ok(out)
}

/// An array of strings (group lists).
pub(crate) fn strings(what: &str, v: &Unknown) -> Res<Vec<String>> {
    array(what, v, |i, el| string(&format!("{what}[{i}]"), el))
}

/// Calls `each(name, value)` for the keys of `obj` as `for...in` lists them whose value is not
/// `undefined`. `known`, when given, refuses any other key (before its value is read).
pub(crate) fn entries<'env>(
    what: &str,
    obj: &Object<'env>,
    known: Option<&[&str]>,
    mut each: impl FnMut(String, Unknown<'env>) -> Res<()>,
) -> Res<()> {
    let names = obj.get_property_names()?;
    let names: Array = unsafe { Array::from_napi_value(obj.value().env, names.raw()) }?;
    for i in 0..names.len() {
        let key: Unknown = names.get_element(i)?;
        let name: String = read_value(&key)?;
        if let Some(known) = known.filter(|known| !known.contains(&name.as_str())) {
            return Err(invalid(format!(
                "unknown option {name:?} in {what}; known options: {}",
                known.join(", ")
            )));
        }
        let value: Unknown = obj.get_property_unchecked(key)?;
        if !is(&value, ValueType::Undefined) {
            each(name, value)?;
        }
    }
    Ok(())
}

/// An optional options object. Unknown keys are rejected so a typo (`batch_size`) is not
/// silently ignored.
///
/// The object's keys are listed once (as `for...in` sees them) and each value is read through the
/// key value that listing returned: no per-option JS string is made, and options the object does
/// not have cost nothing. `enqueueMany` reads one of these per job (this halved its JS-thread
/// time per job).
pub(crate) struct Options<'env> {
    what: String,
    known: &'static [&'static str],
    /// By index in `known`: the value, when the object has that key and it is not `undefined`.
    values: Vec<Option<Unknown<'env>>>,
}

impl<'env> Options<'env> {
    pub(crate) fn new(
        what: impl Into<String>,
        v: Option<&Unknown<'env>>,
        known: &'static [&'static str],
    ) -> Res<Self> {
        let mut opts = Options {
            what: what.into(),
            known,
            values: Vec::new(),
        };
        let v = match v {
            Some(v) if !is(v, ValueType::Undefined) && !is(v, ValueType::Null) => v,
            _ => return Ok(opts),
        };
        let obj = object(&opts.what, v)?;
        let mut values = vec![None; known.len()];
        entries(&opts.what, &obj, Some(known), |name, value| {
            if let Some(at) = known.iter().position(|k| *k == name) {
                values[at] = Some(value);
            }
            Ok(())
        })?;
        opts.values = values;
        Ok(opts)
    }

    /// True when `key` is one of this object's known options.
    pub(crate) fn knows(&self, key: &str) -> bool {
        self.known.contains(&key)
    }

    /// The value of `key`, or `None` when it is absent or `undefined`. `null` is returned as is.
    pub(crate) fn raw(&self, key: &str) -> Res<Option<Unknown<'env>>> {
        let at = self.known.iter().position(|k| *k == key);
        debug_assert!(at.is_some(), "option {key:?} is not among the known keys");
        Ok(at.and_then(|at| self.values.get(at).copied().flatten()))
    }

    /// `key` read with `conv`; `None` when absent, `undefined` or `null`.
    pub(crate) fn get<T>(
        &self,
        key: &str,
        conv: impl FnOnce(&str, &Unknown<'env>) -> Res<T>,
    ) -> Res<Option<T>> {
        match self.raw(key)? {
            Some(v) if !is(&v, ValueType::Null) => {
                Ok(Some(conv(&format!("{}.{key}", self.what), &v)?))
            }
            _ => Ok(None),
        }
    }

    /// `key` read with `conv`; `INVALID_ARGUMENT` when absent, `undefined` or `null`.
    pub(crate) fn required<T>(
        &self,
        key: &str,
        conv: impl FnOnce(&str, &Unknown<'env>) -> Res<T>,
    ) -> Res<T> {
        self.get(key, conv)?
            .ok_or_else(|| invalid(format!("{}.{key} is required", self.what)))
    }

    /// A duration option where `null` means "none" and absent means `default`.
    pub(crate) fn nullable_millis(
        &self,
        key: &str,
        default: Option<Duration>,
    ) -> Res<Option<Duration>> {
        match self.raw(key)? {
            None => Ok(default),
            Some(v) if is(&v, ValueType::Null) => Ok(None),
            Some(v) => Ok(Some(millis(&format!("{}.{key}", self.what), &v)?)),
        }
    }
}

/// How deep [`to_msgpack`] follows nested arrays and objects (a cycle would never end).
const MAX_DEPTH: usize = 32;

/// A JS value as a MessagePack value: a whole number that fits becomes an integer, any other
/// number a float; booleans and strings as they are; a `Buffer` or `Uint8Array` becomes binary;
/// `null` nil; an array an array; an object a map (keys whose value is `undefined` left out).
/// Anything else is a `TypeError`.
pub(crate) fn to_msgpack(what: &str, v: &Unknown) -> Res<Value> {
    msgpack_at(what, v, 0)
}

fn msgpack_at(what: &str, v: &Unknown, depth: usize) -> Res<Value> {
    if depth > MAX_DEPTH {
        return Err(invalid(format!("{what} is nested too deeply")));
    }
    Ok(match v.get_type()? {
        ValueType::Null => Value::Nil,
        ValueType::Boolean => Value::Boolean(read_value(v)?),
        ValueType::String => Value::from(read_value::<String>(v)?),
        ValueType::Number => number_to_msgpack(read_value(v)?),
        ValueType::Object if v.is_array()? => Value::Array(array(what, v, |i, el| {
            msgpack_at(&format!("{what}[{i}]"), el, depth + 1)
        })?),
        ValueType::Object if v.is_typedarray()? => Value::Binary(bytes(what, v)?),
        ValueType::Object if !v.is_arraybuffer()? && !v.is_date()? => {
            let mut fields = Vec::new();
            entries(what, &read_value(v)?, None, |name, value| {
                let field = msgpack_at(&format!("{what}.{name}"), &value, depth + 1)?;
                fields.push((Value::from(name), field));
                Ok(())
            })?;
            Value::Map(fields)
        }
        _ => {
            return Err(type_error(format!(
                "{what} has no MessagePack form; got {}",
                describe(v)
            )))
        }
    })
}

fn number_to_msgpack(n: f64) -> Value {
    // `u64::MAX as f64` is 2^64, one past the largest u64.
    if n.fract() == 0.0 && n >= i64::MIN as f64 && n < u64::MAX as f64 {
        if n < 0.0 {
            Value::from(n as i64)
        } else {
            Value::from(n as u64)
        }
    } else {
        Value::F64(n)
    }
}

/// A MessagePack value as JS, the reverse of [`to_msgpack`]: integers and floats become numbers,
/// binary a `Buffer`, nil `null`, a map an object (its keys must be strings).
pub(crate) fn from_msgpack<'env>(env: &'env Env, v: Value) -> Res<Unknown<'env>> {
    Ok(match v {
        Value::Nil => Null.into_unknown(env)?,
        Value::Boolean(b) => b.into_unknown(env)?,
        Value::Integer(i) => i.as_f64().unwrap_or(f64::NAN).into_unknown(env)?,
        Value::F32(f) => f64::from(f).into_unknown(env)?,
        Value::F64(f) => f.into_unknown(env)?,
        Value::String(s) => match s.into_str() {
            Some(s) => s.into_unknown(env)?,
            None => return Err(invalid("a MessagePack string is not valid UTF-8")),
        },
        Value::Binary(b) => BufferSlice::copy_from(env, b)?.into_unknown(env)?,
        Value::Array(items) => {
            let mut arr = env.create_array(items.len() as u32)?;
            for (i, item) in items.into_iter().enumerate() {
                arr.set(i as u32, from_msgpack(env, item)?)?;
            }
            arr.into_unknown(env)?
        }
        Value::Map(fields) => {
            let mut obj = Object::new(env)?;
            for (key, value) in fields {
                let Value::String(key) = key else {
                    return Err(invalid(format!(
                        "a MessagePack map key is not a string: {key}"
                    )));
                };
                let key = key
                    .into_str()
                    .ok_or_else(|| invalid("a MessagePack map key is not valid UTF-8"))?;
                obj.set_named_property(&key, from_msgpack(env, value)?)?;
            }
            obj.into_unknown(env)?
        }
        Value::Ext(..) => return Err(invalid("MessagePack extension types have no JS form")),
    })
}
