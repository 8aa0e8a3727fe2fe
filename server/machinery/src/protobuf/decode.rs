//! Protobuf wire bytes of a message to the JSON form Kubernetes gives the same object, driven by
//! the schema: field numbers become JSON names, and the types whose JSON form is not a plain
//! object (`Time`, `Quantity`, `IntOrString`, `RawExtension`, ...) get that form.
//!
//! Go writes every non-pointer field, so an empty string is left out, as Go's `omitempty` leaves
//! it out of JSON; a zero time (an empty `Time` message) is left out as well.

use base64::Engine;
use serde_json::{Map, Number, Value};

use super::schema::{messages, Field, Label, Type};

/// The JSON name of an embedded struct's field.
pub(super) const EMBEDDED: &str = "..";
/// Deeper nesting than this is refused rather than risking the stack.
const MAX_DEPTH: usize = 64;

pub(super) const TIME: &str = "apimachinery.pkg.apis.meta.v1.Time";
pub(super) const MICRO_TIME: &str = "apimachinery.pkg.apis.meta.v1.MicroTime";
pub(super) const DURATION: &str = "apimachinery.pkg.apis.meta.v1.Duration";
pub(super) const QUANTITY: &str = "apimachinery.pkg.api.resource.Quantity";
pub(super) const INT_OR_STRING: &str = "apimachinery.pkg.util.intstr.IntOrString";
/// Messages that hold raw JSON in their field 1.
pub(super) const RAW_JSON: &[&str] = &[
    "apimachinery.pkg.runtime.RawExtension",
    "apimachinery.pkg.apis.meta.v1.FieldsV1",
    "apiextensions-apiserver.pkg.apis.apiextensions.v1.Json",
];

/// A field's value as read off the wire.
#[derive(Debug, Clone, Copy)]
enum Wire<'a> {
    Varint(u64),
    Fixed64(u64),
    Fixed32,
    Bytes(&'a [u8]),
}

/// Reads protobuf fields one at a time.
struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    fn varint(&mut self) -> Result<u64, String> {
        let mut value = 0u64;
        for i in 0..10 {
            let (&b, rest) = self.buf.split_first().ok_or("truncated varint")?;
            self.buf = rest;
            value |= u64::from(b & 0x7f) << (7 * i);
            if b < 0x80 {
                return Ok(value);
            }
        }
        Err("varint longer than 10 bytes".into())
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        if n > self.buf.len() {
            return Err("truncated field".into());
        }
        let (head, rest) = self.buf.split_at(n);
        self.buf = rest;
        Ok(head)
    }

    /// The next field number and value, or none at the end.
    fn field(&mut self) -> Result<Option<(u32, Wire<'a>)>, String> {
        if self.buf.is_empty() {
            return Ok(None);
        }
        let key = self.varint()?;
        let number = u32::try_from(key >> 3).map_err(|_| "field number out of range")?;
        if number == 0 {
            return Err("field number 0".into());
        }
        let value = match key & 7 {
            0 => Wire::Varint(self.varint()?),
            1 => Wire::Fixed64(u64::from_le_bytes(self.take(8)?.try_into().expect("8 bytes"))),
            2 => {
                let len = usize::try_from(self.varint()?).map_err(|_| "length out of range")?;
                Wire::Bytes(self.take(len)?)
            }
            5 => {
                self.take(4)?;
                Wire::Fixed32
            }
            w => return Err(format!("unsupported wire type {w}")),
        };
        Ok(Some((number, value)))
    }
}

/// The length-delimited fields of a message, in order; other fields are skipped.
pub fn length_delimited(bytes: &[u8]) -> Result<Vec<(u32, &[u8])>, String> {
    let mut r = Reader { buf: bytes };
    let mut out = Vec::new();
    while let Some((num, w)) = r.field()? {
        if let Wire::Bytes(b) = w {
            out.push((num, b));
        }
    }
    Ok(out)
}

/// Decodes the message `name` (without the `io.k8s.` prefix) into its JSON form.
pub fn message(name: &str, bytes: &[u8]) -> Result<Value, String> {
    decode(name, bytes, 0).map(|v| v.unwrap_or_else(|| Value::Object(Map::new())))
}

/// A message's JSON form; `None` for a value Go leaves out of JSON (a zero time).
fn decode(name: &str, bytes: &[u8], depth: usize) -> Result<Option<Value>, String> {
    if depth > MAX_DEPTH {
        return Err("message nested too deeply".into());
    }
    match name {
        TIME | MICRO_TIME => return time(bytes, name == MICRO_TIME),
        DURATION => return Ok(Some(Value::String(duration(int_field(bytes, 1)?)))),
        QUANTITY => return Ok(Some(Value::String(string_field(bytes, 1)?))),
        INT_OR_STRING => return int_or_string(bytes).map(Some),
        n if RAW_JSON.contains(&n) => return raw_json(bytes),
        // A list of strings wrapped in a message (`ExtraValue`): its items are field 1.
        n if n.ends_with(".ExtraValue") => {
            let items = length_delimited(bytes)?.into_iter().filter(|(num, _)| *num == 1);
            return Ok(Some(Value::Array(items.map(|(_, b)| utf8(b).map(Value::String)).collect::<Result<_, _>>()?)));
        }
        _ => {}
    }
    let schema = messages().get(name).ok_or_else(|| format!("no protobuf schema for {name}"))?;
    let mut out = Map::new();
    let mut r = Reader { buf: bytes };
    while let Some((num, wire)) = r.field()? {
        let Some(field) = schema.fields.get(&num) else { continue };
        match field.label {
            // A Go struct embedded in its parent: its fields are the parent's own.
            Label::Optional if field.json == EMBEDDED => {
                if let Some(Value::Object(inner)) = scalar_or_message(field, wire, depth)? {
                    out.extend(inner);
                }
            }
            Label::Optional => match scalar_or_message(field, wire, depth)? {
                Some(Value::String(s)) if s.is_empty() && field.ty == Type::String => {
                    out.remove(field.json);
                }
                Some(v) => {
                    out.insert(field.json.to_string(), v);
                }
                None => {
                    out.remove(field.json);
                }
            },
            Label::Repeated => {
                let list = out.entry(field.json).or_insert_with(|| Value::Array(Vec::new()));
                let list = list.as_array_mut().expect("repeated fields are arrays");
                match (field.ty, wire) {
                    // Packed numbers: several values in one length-delimited field.
                    (Type::Int32 | Type::Int64 | Type::Bool | Type::Double, Wire::Bytes(b)) => {
                        let mut packed = Reader { buf: b };
                        while !packed.buf.is_empty() {
                            let w = if field.ty == Type::Double {
                                Wire::Fixed64(u64::from_le_bytes(packed.take(8)?.try_into().expect("8 bytes")))
                            } else {
                                Wire::Varint(packed.varint()?)
                            };
                            list.push(scalar_or_message(field, w, depth)?.unwrap_or(Value::Null));
                        }
                    }
                    _ => list.push(scalar_or_message(field, wire, depth)?.unwrap_or(Value::Null)),
                }
            }
            Label::Map => {
                let (key, value) = map_entry(field, bytes_of(wire)?, depth)?;
                let map = out.entry(field.json).or_insert_with(|| Value::Object(Map::new()));
                map.as_object_mut().expect("map fields are objects").insert(key, value);
            }
        }
    }
    if let Some(union) = super::unions::from_message(name, &out) {
        return Ok(Some(union));
    }
    Ok(Some(Value::Object(out)))
}

fn map_entry(field: &Field, bytes: &[u8], depth: usize) -> Result<(String, Value), String> {
    let (mut key, mut value) = (String::new(), None);
    let mut r = Reader { buf: bytes };
    while let Some((num, w)) = r.field()? {
        match num {
            1 => key = utf8(bytes_of(w)?)?,
            2 => value = scalar_or_message(field, w, depth)?,
            _ => {}
        }
    }
    let empty = match field.ty {
        Type::Message(_) => Value::Object(Map::new()),
        Type::Int32 | Type::Int64 => Value::from(0),
        Type::Bool => Value::Bool(false),
        _ => Value::String(String::new()),
    };
    Ok((key, value.unwrap_or(empty)))
}

/// One value of the field's type.
fn scalar_or_message(field: &Field, wire: Wire, depth: usize) -> Result<Option<Value>, String> {
    let mismatch = || format!("field {:?} has the wrong wire type", field.json);
    Ok(Some(match (field.ty, wire) {
        (Type::String, Wire::Bytes(b)) => Value::String(utf8(b)?),
        (Type::Bytes, Wire::Bytes(b)) => Value::String(base64::engine::general_purpose::STANDARD.encode(b)),
        (Type::Int32, Wire::Varint(v)) => Value::from(v as i32),
        (Type::Int64, Wire::Varint(v)) => Value::from(v as i64),
        (Type::Bool, Wire::Varint(v)) => Value::Bool(v != 0),
        (Type::Double, Wire::Fixed64(v)) => {
            Value::Number(Number::from_f64(f64::from_bits(v)).ok_or_else(|| format!("field {:?} is not a finite number", field.json))?)
        }
        (Type::Message(name), Wire::Bytes(b)) => return decode(name, b, depth + 1),
        _ => return Err(mismatch()),
    }))
}

fn bytes_of(wire: Wire<'_>) -> Result<&[u8], String> {
    match wire {
        Wire::Bytes(b) => Ok(b),
        _ => Err("expected a length-delimited field".into()),
    }
}

fn utf8(b: &[u8]) -> Result<String, String> {
    String::from_utf8(b.to_vec()).map_err(|_| "a string field is not valid UTF-8".into())
}

/// Field `number` of a message as a string (last one wins); empty when absent.
fn string_field(bytes: &[u8], number: u32) -> Result<String, String> {
    let mut r = Reader { buf: bytes };
    let mut out = String::new();
    while let Some((num, w)) = r.field()? {
        if num == number {
            out = utf8(bytes_of(w)?)?;
        }
    }
    Ok(out)
}

/// Field `number` of a message as a varint integer; 0 when absent.
fn int_field(bytes: &[u8], number: u32) -> Result<i64, String> {
    let mut r = Reader { buf: bytes };
    let mut out = 0;
    while let Some((num, w)) = r.field()? {
        if let (true, Wire::Varint(v)) = (num == number, w) {
            out = v as i64;
        }
    }
    Ok(out)
}

/// `Time` is seconds precision in JSON, `MicroTime` microseconds; both in UTC.
fn time(bytes: &[u8], micro: bool) -> Result<Option<Value>, String> {
    if bytes.is_empty() {
        return Ok(None);
    }
    let (seconds, nanos) = (int_field(bytes, 1)?, int_field(bytes, 2)?);
    let t = chrono::DateTime::from_timestamp(seconds, u32::try_from(nanos).unwrap_or(0)).ok_or("time out of range")?;
    let format = if micro { "%Y-%m-%dT%H:%M:%S%.6fZ" } else { "%Y-%m-%dT%H:%M:%SZ" };
    Ok(Some(Value::String(t.format(format).to_string())))
}

/// A duration in nanoseconds, as Go's `time.Duration.String` writes it (`1h2m3.5s`).
fn duration(nanos: i64) -> String {
    if nanos == 0 {
        return "0s".into();
    }
    let sign = if nanos < 0 { "-" } else { "" };
    let n = nanos.unsigned_abs();
    if n < 1_000_000_000 {
        let (unit, div) = if n < 1_000 { ("ns", 1) } else if n < 1_000_000 { ("µs", 1_000) } else { ("ms", 1_000_000) };
        return format!("{sign}{}{unit}", trim_fraction(n, div));
    }
    let (h, m) = (n / 3_600_000_000_000, n / 60_000_000_000 % 60);
    let s = trim_fraction(n % 60_000_000_000, 1_000_000_000);
    match (h, m) {
        (0, 0) => format!("{sign}{s}s"),
        (0, m) => format!("{sign}{m}m{s}s"),
        (h, m) => format!("{sign}{h}h{m}m{s}s"),
    }
}

/// `n / div` with its fraction, trailing zeros removed.
fn trim_fraction(n: u64, div: u64) -> String {
    let (whole, frac) = (n / div, n % div);
    if frac == 0 {
        return whole.to_string();
    }
    let width = div.ilog10() as usize;
    format!("{whole}.{}", format!("{frac:0width$}").trim_end_matches('0'))
}

/// `IntOrString` is `{1: type (0 int, 1 string), 2: intVal, 3: strVal}`.
fn int_or_string(bytes: &[u8]) -> Result<Value, String> {
    if int_field(bytes, 1)? == 1 {
        Ok(Value::String(string_field(bytes, 3)?))
    } else {
        Ok(Value::from(int_field(bytes, 2)? as i32))
    }
}

/// Field 1 holds JSON bytes, embedded as they are.
fn raw_json(bytes: &[u8]) -> Result<Option<Value>, String> {
    let mut r = Reader { buf: bytes };
    let mut raw: &[u8] = &[];
    while let Some((num, w)) = r.field()? {
        if num == 1 {
            raw = bytes_of(w)?;
        }
    }
    if raw.is_empty() {
        return Ok(None);
    }
    serde_json::from_slice(raw).map(Some).map_err(|e| format!("embedded raw object is not JSON: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_match_go() {
        assert_eq!(duration(0), "0s");
        assert_eq!(duration(1_500), "1.5µs");
        assert_eq!(duration(2_000_000), "2ms");
        assert_eq!(duration(90_000_000_000), "1m30s");
        assert_eq!(duration(3_723_500_000_000), "1h2m3.5s");
        assert_eq!(duration(-5_000_000_000), "-5s");
    }

    #[test]
    fn malformed_input_is_an_error_not_a_panic() {
        for bad in [&[0x0a, 0x05, 0x01][..], &[0xff; 12], &[0x08], &[0x03], &[0x00, 0x00]] {
            assert!(message("api.core.v1.ConfigMap", bad).is_err(), "{bad:?}");
        }
        // A message nested past the limit is refused.
        assert!(decode("api.core.v1.ConfigMap", &[], MAX_DEPTH + 1).is_err());
        assert!(decode("api.core.v1.ConfigMap", &[], MAX_DEPTH).is_ok());
    }
}
