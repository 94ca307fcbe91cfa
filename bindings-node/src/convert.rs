//! Reading JS arguments into Rust values (no core counterpart). Arguments arrive as `Unknown` so a
//! wrong type becomes a `TypeError` with `code === 'INVALID_ARGUMENT'` and a message naming the
//! argument, instead of napi's generic conversion error (and so `-1` is never read as a huge
//! `u32`). Range checks with queue meaning (capacity >= 1, durations >= 1 ms) stay in the core.

use std::time::Duration;

use napi::bindgen_prelude::*;
use napi::{JsValue, ValueType};

use crate::errors::{invalid, type_error, Res};

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

fn read<T: FromNapiValue>(v: &Unknown) -> Res<T> {
    Ok(unsafe { T::from_napi_value(v.value().env, v.raw()) }?)
}

fn is(v: &Unknown, t: ValueType) -> bool {
    v.get_type().map(|got| got == t).unwrap_or(false)
}

/// A string argument (queue or group name, URL...).
pub(crate) fn string(what: &str, v: &Unknown) -> Res<String> {
    if !is(v, ValueType::String) {
        return Err(type_error(format!(
            "{what} must be a string; got {}",
            describe(v)
        )));
    }
    read(v)
}

/// An item: a `Buffer` or any `Uint8Array` (bytes, copied), or a string (its UTF-8 bytes).
pub(crate) fn bytes(what: &str, v: &Unknown) -> Res<Vec<u8>> {
    match v.get_type()? {
        ValueType::String => Ok(read::<String>(v)?.into_bytes()),
        ValueType::Object if v.is_typedarray()? => match read::<Uint8ArraySlice>(v) {
            Ok(slice) => Ok(slice.to_vec()),
            Err(_) => Err(type_error(format!(
                "{what} must be a Buffer, Uint8Array or string; got {}",
                describe(v)
            ))),
        },
        _ => Err(type_error(format!(
            "{what} must be a Buffer, Uint8Array or string; got {}",
            describe(v)
        ))),
    }
}

fn number(what: &str, v: &Unknown) -> Res<f64> {
    if !is(v, ValueType::Number) {
        return Err(type_error(format!(
            "{what} must be a number; got {}",
            describe(v)
        )));
    }
    let n: f64 = read(v)?;
    if !n.is_finite() || n < 0.0 {
        return Err(invalid(format!(
            "{what} must be a finite, non-negative number; got {n}"
        )));
    }
    Ok(n)
}

/// A non-negative integer (counts, sizes).
pub(crate) fn count(what: &str, v: &Unknown) -> Res<usize> {
    let n = number(what, v)?;
    if n.fract() != 0.0 || n > 9_007_199_254_740_991.0 {
        return Err(invalid(format!("{what} must be a whole number; got {n}")));
    }
    Ok(n as usize)
}

/// A duration given in milliseconds (fractions allowed).
pub(crate) fn millis(what: &str, v: &Unknown) -> Res<Duration> {
    let ms = number(what, v)?;
    Duration::try_from_secs_f64(ms / 1000.0).map_err(|_| invalid(format!("{what} is too large")))
}

pub(crate) fn boolean(what: &str, v: &Unknown) -> Res<bool> {
    if !is(v, ValueType::Boolean) {
        return Err(type_error(format!(
            "{what} must be a boolean; got {}",
            describe(v)
        )));
    }
    read(v)
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
    let arr: Array = read(v)?;
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
        let what = what.into();
        let mut opts = Options {
            what,
            known,
            values: Vec::new(),
        };
        let Some(v) = v else {
            return Ok(opts);
        };
        match v.get_type()? {
            ValueType::Undefined | ValueType::Null => return Ok(opts),
            ValueType::Object if !v.is_array()? => {}
            _ => {
                return Err(type_error(format!(
                    "{} must be an object; got {}",
                    opts.what,
                    describe(v)
                )))
            }
        }
        let obj: Object = read(v)?;
        let env = v.value().env;
        let names = obj.get_property_names()?;
        let names: Array = unsafe { Array::from_napi_value(env, names.raw()) }?;
        opts.values.resize_with(known.len(), || None);
        for i in 0..names.len() {
            let key: Unknown = names.get_element(i)?;
            let name: String = read(&key)?;
            let Some(at) = known.iter().position(|k| *k == name) else {
                return Err(invalid(format!(
                    "unknown option {name:?} in {}; known options: {}",
                    opts.what,
                    known.join(", ")
                )));
            };
            let value: Unknown = obj.get_property_unchecked(key)?;
            if !is(&value, ValueType::Undefined) {
                opts.values[at] = Some(value);
            }
        }
        Ok(opts)
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

pub(crate) fn is_function(v: &Unknown) -> bool {
    is(v, ValueType::Function)
}

pub(crate) fn read_value<T: FromNapiValue>(v: &Unknown) -> Res<T> {
    read(v)
}

/// A whole number that fits a `u32` (attempt counts).
pub(crate) fn count_u32(what: &str, v: &Unknown) -> Res<u32> {
    let n = count(what, v)?;
    u32::try_from(n).map_err(|_| invalid(format!("{what} must be at most {}; got {n}", u32::MAX)))
}

/// A duration in whole milliseconds (fractions are dropped), for values the core keeps in ms.
pub(crate) fn whole_millis(what: &str, v: &Unknown) -> Res<u64> {
    Ok(u64::try_from(millis(what, v)?.as_millis()).unwrap_or(u64::MAX))
}

/// A point in time: a `Date` or a number of milliseconds since the epoch.
pub(crate) fn epoch_ms(what: &str, v: &Unknown) -> Res<u64> {
    if is(v, ValueType::Object) && v.is_date()? {
        let ms = read::<napi::JsDate>(v)?.value_of()?;
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
