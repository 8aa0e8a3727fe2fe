//! What the Kubernetes libraries' overloads share: reading their arguments, returning values
//! (Kubernetes' own types as opaque values), and quoting strings in messages as Go does.

use std::sync::Arc;

use cel::common::types::{CelInt, CelString};
use cel::common::value::{CowVal, Val};
use cel::objects::{Opaque, OptionalValue};
use cel::{ExecutionError, Value};

/// What an overload returns.
pub type Ret<'b, 'v> = Result<CowVal<'b, 'v>, ExecutionError>;

/// Argument `i` (a member's receiver is the first).
fn nth<'a, 'v>(args: &'a [CowVal<'_, 'v>], i: usize) -> Result<&'a (dyn Val + 'v), ExecutionError> {
    args.get(i).map(|a| a.as_ref()).ok_or_else(|| ExecutionError::invalid_argument_count(i + 1, args.len()))
}

fn unexpected(v: &dyn Val, want: &str) -> ExecutionError {
    ExecutionError::UnexpectedType { got: v.get_type().name().to_string(), want: want.to_string() }
}

/// Argument `i`, a string.
pub fn string<'a>(args: &'a [CowVal<'_, '_>], i: usize) -> Result<&'a str, ExecutionError> {
    let v = nth(args, i)?;
    v.downcast_ref::<CelString>().map(CelString::inner).ok_or_else(|| unexpected(v, "string"))
}

/// Argument `i`, an int.
pub fn int(args: &[CowVal<'_, '_>], i: usize) -> Result<i64, ExecutionError> {
    let v = nth(args, i)?;
    v.downcast_ref::<CelInt>().map(|n| *n.inner()).ok_or_else(|| unexpected(v, "int"))
}

/// Argument `i` as a [`Value`] (a list's or map's items copied).
pub fn any(args: &[CowVal<'_, '_>], i: usize) -> Result<Value, ExecutionError> {
    Value::try_from(nth(args, i)?)
}

/// Argument `i`, an opaque value of Rust type `T`.
pub fn opaque<T: Opaque + Clone>(args: &[CowVal<'_, '_>], i: usize) -> Result<T, ExecutionError> {
    let v = nth(args, i)?;
    match Value::try_from(v)? {
        Value::Opaque(o) => o.downcast_ref::<T>().cloned().ok_or_else(|| unexpected(v, std::any::type_name::<T>())),
        _ => Err(unexpected(v, std::any::type_name::<T>())),
    }
}

/// A result.
pub fn value<'b, 'v>(v: impl Into<Value>) -> Ret<'b, 'v> {
    Ok(CowVal::Owned(Box::<dyn Val>::try_from(v.into())?))
}

/// A result of one of Kubernetes' own types.
pub fn wrap<'b, 'v>(v: impl Opaque) -> Ret<'b, 'v> {
    value(Value::Opaque(Arc::new(v)))
}

/// An optional result.
pub fn optional<'b, 'v>(v: Option<Value>) -> Ret<'b, 'v> {
    wrap(v.map_or_else(OptionalValue::none, OptionalValue::of))
}

/// An error of `function`, with Kubernetes' message.
pub fn error(function: &str, message: impl ToString) -> ExecutionError {
    ExecutionError::function_error(function, message)
}

/// `s` as Go's `%q` writes it: double-quoted, with `"`, `\`, what is not printable and bytes
/// that are not UTF-8 escaped.
pub fn quote(s: impl AsRef<[u8]>) -> String {
    let mut out = String::from('"');
    for chunk in s.as_ref().utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\x07' => out.push_str("\\a"),
                '\x08' => out.push_str("\\b"),
                '\x0c' => out.push_str("\\f"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                '\x0b' => out.push_str("\\v"),
                c if (c as u32) < 0x20 || c == '\x7f' => out.push_str(&format!("\\x{:02x}", c as u32)),
                c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
                c => out.push(c),
            }
        }
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_as_go_does() {
        assert_eq!(quote("a\"b\\c\n\x01é"), "\"a\\\"b\\\\c\\n\\x01é\"");
        assert_eq!(quote(b"%\xc3"), "\"%\\xc3\"");
    }
}
