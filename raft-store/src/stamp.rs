//! Stamping `metadata.resourceVersion` into a stored object's JSON at apply time. Every replica
//! does this for every write, so it splices the bytes instead of building a `serde_json::Value`:
//! the members are located by serde_json's parser, left unparsed, and copied as they are.
//!
//! Objects come from `serde_json` (compact, members sorted by key); the field is inserted where
//! sorting puts it, so the result is the bytes that parsing the object, setting the field and
//! serializing it again would give, except that numbers stay as written: serde_json's parser
//! (without `float_roundtrip`) can move a float with many digits by one step, and stamping
//! must not change a value a client stored. The output is a function of the input alone, so
//! every replica stores the same bytes.
//!
//! Bytes that are not a JSON object (or whose `metadata` is not one) cannot be stamped: they are
//! stored as they are and known as undecodable, as Kubernetes treats an object its storage cannot
//! decode.

use std::borrow::Cow;
use std::fmt;

use bytes::Bytes;
use serde::de::{Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;

const METADATA: &str = "metadata";
const RESOURCE_VERSION: &str = "resourceVersion";

/// Bytes a stamp may add: the `resourceVersion` member, and `metadata` when absent.
const STAMP_ROOM: usize = 48;

/// `data` (a JSON object) with `metadata.resourceVersion` set to `rev`; why it cannot be decoded
/// when it is not a JSON object, or its `metadata` is not one.
pub(crate) fn stamp(data: &Bytes, rev: u64) -> Result<Bytes, String> {
    let Members(top) = serde_json::from_slice::<Members>(data).map_err(|e| e.to_string())?;
    let meta = match top.iter().rfind(|(k, _)| k == METADATA) {
        None => Vec::new(),
        Some((_, raw)) => serde_json::from_str::<Members>(raw.get()).map_err(|e| format!("metadata: {e}"))?.0,
    };
    // Metadata is part of the object, so it fits in what the object takes (plus the stamp).
    let mut metadata = Vec::with_capacity(data.len() + STAMP_ROOM);
    write_object(&mut metadata, pairs(&meta), RESOURCE_VERSION, format!("\"{rev}\"").as_bytes());
    let mut out = Vec::with_capacity(data.len() + STAMP_ROOM);
    write_object(&mut out, pairs(&top), METADATA, &metadata);
    // The stored bytes live as long as the object: give back what the estimate left unused.
    if out.capacity() == out.len() {
        Ok(Bytes::from(out))
    } else {
        Ok(Bytes::from(out.into_boxed_slice()))
    }
}

/// Why `data` cannot be decoded as a stored object, if it cannot (the check [`stamp`] makes).
pub(crate) fn undecodable(data: &[u8]) -> Option<String> {
    let Members(top) = match serde_json::from_slice::<Members>(data) {
        Ok(m) => m,
        Err(e) => return Some(e.to_string()),
    };
    let (_, meta) = top.iter().rfind(|(k, _)| k == METADATA)?;
    serde_json::from_str::<Members>(meta.get()).err().map(|e| format!("metadata: {e}"))
}

/// Writes an object of `members` with `key` set to `value`: in place of the members named `key`,
/// or before the first member sorting after it.
fn write_object<'a>(out: &mut Vec<u8>, members: impl Iterator<Item = (&'a str, &'a [u8])>, key: &str, value: &[u8]) {
    out.push(b'{');
    let mut written = false;
    let mut first = true;
    let mut member = |out: &mut Vec<u8>, k: &str, v: &[u8]| {
        if !std::mem::take(&mut first) {
            out.push(b',');
        }
        serde_json::to_writer(&mut *out, k).expect("writing a string to a vector");
        out.push(b':');
        out.extend_from_slice(v);
    };
    for (k, v) in members {
        if k == key {
            if !std::mem::replace(&mut written, true) {
                member(out, key, value);
            }
            continue;
        }
        if !written && k > key {
            member(out, key, value);
            written = true;
        }
        member(out, k, v);
    }
    if !written {
        member(out, key, value);
    }
    out.push(b'}');
}

/// A JSON object's members in order, their values left unparsed.
struct Members<'a>(Vec<(Cow<'a, str>, &'a RawValue)>);

/// Members as (name, value bytes).
fn pairs<'a>(members: &'a [(Cow<'a, str>, &'a RawValue)]) -> impl Iterator<Item = (&'a str, &'a [u8])> {
    members.iter().map(|(k, v)| (k.as_ref(), v.get().as_bytes()))
}

/// A member's name, borrowed unless it has escapes.
#[derive(Deserialize)]
struct Key<'a>(#[serde(borrow)] Cow<'a, str>);

impl<'de> Deserialize<'de> for Members<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Object;
        impl<'de> Visitor<'de> for Object {
            type Value = Members<'de>;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members<'de>, A::Error> {
                let mut members = Vec::new();
                while let Some((Key(k), v)) = map.next_entry::<Key<'de>, &'de RawValue>()? {
                    members.push((k, v));
                }
                Ok(Members(members))
            }
        }
        d.deserialize_map(Object)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;

    /// What stamping means: parse, set the field, serialize (for objects whose numbers survive
    /// serde_json's parser unchanged).
    fn reference(data: &[u8], rev: u64) -> Option<Vec<u8>> {
        let Ok(Value::Object(mut obj)) = serde_json::from_slice::<Value>(data) else {
            return None;
        };
        match obj.entry(METADATA).or_insert_with(|| json!({})) {
            Value::Object(m) => m.insert(RESOURCE_VERSION.into(), Value::String(rev.to_string())),
            _ => return None,
        };
        Some(serde_json::to_vec(&obj).unwrap())
    }

    #[test]
    fn splicing_gives_the_bytes_of_parsing_and_serializing() {
        let objects = [
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "default", "uid": "u"}, "data": {"k": "v"}}),
            json!({"metadata": {"name": "a", "resourceVersion": "17", "uid": "u"}}),
            json!({"metadata": {"annotations": {"resourceVersion": "not this one"}, "zz": 1}}),
            json!({"metadata": {"resourceVersion": "3"}}),
            json!({"metadata": {}}),
            json!({"kind": "NoMetadata", "spec": {"metadata": {"name": "nested"}}}),
            json!({"a": 1, "z": [1, 2.5, null, true, {"metadata": {}}]}),
            json!({}),
            json!({"metadata": null, "x": 1}),
            json!({"metadata": "a string"}),
            json!({"metadata": {"name": "quote\" back\\slash \u{1} ünïcödé \u{2028} 😀", "labels": {"k\"ey": "v\nw"}}}),
            json!({"m\"etadata": 1, "métadata": {"x": 1}, "zzz": {"metadata": 2}}),
            json!([1, 2, 3]),
            json!("metadata"),
        ];
        for object in objects {
            let data = Bytes::from(serde_json::to_vec(&object).unwrap());
            for rev in [0, 1, 123_456_789, u64::MAX] {
                let stamped = stamp(&data, rev).ok();
                assert_eq!(stamped.as_deref(), reference(&data, rev).as_deref(), "stamping {object} at {rev}");
                assert_eq!(undecodable(&data).is_some(), stamped.is_none(), "{object}");
            }
        }
    }

    #[test]
    fn numbers_stay_as_written() {
        // serde_json without `float_roundtrip` reads this as the next float up; parsing and
        // serializing again would store a different number than the client's.
        let data = Bytes::from_static(b"{\"metadata\":{},\"x\":1.315382074720124e-149}");
        assert_eq!(&stamp(&data, 9).unwrap()[..], &b"{\"metadata\":{\"resourceVersion\":\"9\"},\"x\":1.315382074720124e-149}"[..]);
    }

    #[test]
    fn what_is_not_a_json_object_is_undecodable() {
        for data in [&b""[..], b"{", b"{\"metadata\":{\"a\":}}", b"not json", b"{\"a\":1}trailing", b"\xff\xfe", b"{\"metadata\":7}"] {
            let data = Bytes::copy_from_slice(data);
            assert!(stamp(&data, 5).is_err(), "{data:?}");
            assert!(undecodable(&data).is_some(), "{data:?}");
        }
    }
}
