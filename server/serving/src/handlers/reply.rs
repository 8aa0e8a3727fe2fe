//! What a handler answers, before encoding: stored JSON objects and lists, kept as bytes so
//! that JSON responses are assembled without re-encoding; the edge turns them into the
//! negotiated media type.

use std::collections::BTreeMap;

use bytes::Bytes;
use http::StatusCode;
use serde_json::{json, Value};

pub use machinery::list::ListReply;
use machinery::registry::ResourceInfo;


#[derive(Debug)]
pub enum Reply {
    /// One object of the resource.
    Object { code: StatusCode, data: Bytes },
    /// A collection of the resource.
    List(ListReply),
    /// Any other document (a success `Status`, a `Scale`).
    Document { code: StatusCode, value: Value },
}

impl Reply {
    pub fn object(code: StatusCode, data: Bytes) -> Reply {
        Reply::Object { code, data }
    }

    pub fn value(code: StatusCode, value: &Value) -> Reply {
        Reply::Object { code, data: Bytes::from(serde_json::to_vec(value).unwrap_or_default()) }
    }

    /// The success `Status` Kubernetes returns for a completed delete.
    pub fn deleted(info: &ResourceInfo, name: &str, uid: Option<&str>) -> Reply {
        let mut details = json!({"name": name, "kind": info.resource});
        if !info.group.is_empty() {
            details["group"] = json!(info.group);
        }
        if let Some(uid) = uid {
            details["uid"] = json!(uid);
        }
        Reply::Document {
            code: StatusCode::OK,
            value: json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}),
        }
    }
}

/// The JSON of a list: `{"kind":"<Kind>List","apiVersion":..,"metadata":{..},"items":[..]}`,
/// concatenated from the stored item bytes. Items of built-in kinds carry no `kind` or
/// `apiVersion`, as in kube-apiserver's lists (client-go compares them with the objects its typed
/// clients decode, which have none either); custom resources keep theirs, as Kubernetes'
/// unstructured lists do.
pub fn list_json(info: &ResourceInfo, list: &ListReply) -> Vec<u8> {
    let mut meta = json!({"resourceVersion": list.rev.to_string()});
    if let Some(c) = &list.continue_token {
        meta["continue"] = json!(c);
    }
    if let Some(r) = list.remaining {
        meta["remainingItemCount"] = json!(r);
    }
    let head = json!({"kind": format!("{}List", info.kind), "apiVersion": info.api_version(), "metadata": meta});
    let mut out = serde_json::to_vec(&head).unwrap_or_default();
    out.pop(); // the closing brace
    let size: usize = list.items.iter().map(|i| i.len() + 1).sum();
    let custom = machinery::registry::custom::is_custom(info);
    out.reserve(size + 12);
    out.extend_from_slice(b",\"items\":[");
    for (i, item) in list.items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        if custom {
            out.extend_from_slice(item);
        } else {
            without_type_meta(item, &mut out);
        }
    }
    out.extend_from_slice(b"]}");
    out
}

/// Writes the stored object `item` without its top-level `apiVersion` and `kind`. Stored
/// objects are compact JSON the server wrote, so the members are found by one pass over the
/// bytes ([`members`]) and copied as they are; anything else is parsed.
fn without_type_meta(item: &[u8], out: &mut Vec<u8>) {
    match members(item) {
        Some(spans) => {
            out.push(b'{');
            let mut first = true;
            for (key, member) in spans {
                if key == b"apiVersion" || key == b"kind" {
                    continue;
                }
                if !first {
                    out.push(b',');
                }
                first = false;
                out.extend_from_slice(member);
            }
            out.push(b'}');
        }
        None => parsed_without_type_meta(item, out),
    }
}

/// The top-level members of compact JSON object `item`, each as its key's bytes (still
/// escaped) and the whole `"key":value` span; `None` when `item` is not a compact object.
fn members(item: &[u8]) -> Option<Vec<(&[u8], &[u8])>> {
    if item.first() != Some(&b'{') || item.last() != Some(&b'}') {
        return None;
    }
    let mut spans = Vec::new();
    let mut pos = 1;
    let end = item.len() - 1;
    while pos < end {
        let start = pos;
        if item[pos] != b'"' {
            return None;
        }
        let key_end = string_end(item, pos)?;
        if item.get(key_end) != Some(&b':') {
            return None;
        }
        pos = value_end(item, key_end + 1)?;
        spans.push((&item[start + 1..key_end - 1], &item[start..pos]));
        match item.get(pos) {
            Some(b',') if pos + 1 < end => pos += 1,
            _ if pos == end => break,
            _ => return None,
        }
    }
    Some(spans)
}

/// The index just past the string that opens at `pos`.
fn string_end(item: &[u8], mut pos: usize) -> Option<usize> {
    pos += 1;
    loop {
        match *item.get(pos)? {
            b'"' => return Some(pos + 1),
            b'\\' => pos += 2,
            _ => pos += 1,
        }
    }
}

/// The index just past the value that starts at `pos` (nested objects and arrays included).
fn value_end(item: &[u8], mut pos: usize) -> Option<usize> {
    let start = pos;
    let mut depth = 0usize;
    loop {
        match *item.get(pos)? {
            b'"' => pos = string_end(item, pos)?,
            b',' | b'}' | b']' if depth == 0 => return (pos > start).then_some(pos),
            b'{' | b'[' => {
                depth += 1;
                pos += 1;
            }
            b'}' | b']' => {
                depth -= 1;
                pos += 1;
            }
            _ => pos += 1,
        }
    }
}

/// [`without_type_meta`] for bytes the scan does not take: parsed, the other fields' values
/// copied as they are.
fn parsed_without_type_meta(item: &[u8], out: &mut Vec<u8>) {
    let Ok(fields) = serde_json::from_slice::<BTreeMap<String, &serde_json::value::RawValue>>(item) else {
        out.extend_from_slice(item);
        return;
    };
    out.push(b'{');
    let mut first = true;
    for (key, value) in fields.iter().filter(|(k, _)| !matches!(k.as_str(), "apiVersion" | "kind")) {
        if !first {
            out.push(b',');
        }
        first = false;
        let _ = serde_json::to_writer(&mut *out, key);
        out.push(b':');
        out.extend_from_slice(value.get().as_bytes());
    }
    out.push(b'}');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stripped(item: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        without_type_meta(item, &mut out);
        out
    }

    #[test]
    fn the_scan_strips_type_meta_as_parsing_does() {
        let objects = [
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "labels": {"k": "v,}]"}}, "data": {"x": "\"{[", "y": ""}}),
            json!({"apiVersion": "apps/v1", "data": [1, 2.5, -3e4, [], {}], "kind": "K", "metadata": {}, "z": null, "t": true, "f": false}),
            json!({"kind": "OnlyKind"}),
            json!({}),
            json!({"metadata": {"name": "é\\\"x"}, "apiVersion": "v1"}),
        ];
        for obj in objects {
            let bytes = serde_json::to_vec(&obj).unwrap();
            assert!(members(&bytes).is_some(), "the scan refused the server's own JSON: {obj}");
            let mut parsed = Vec::new();
            parsed_without_type_meta(&bytes, &mut parsed);
            let fast = stripped(&bytes);
            assert_eq!(fast, parsed, "{obj}");
            let mut expected = obj.clone();
            if let Some(map) = expected.as_object_mut() {
                map.remove("apiVersion");
                map.remove("kind");
            }
            assert_eq!(serde_json::from_slice::<Value>(&fast).unwrap(), expected);
        }
    }

    #[test]
    fn bytes_the_scan_does_not_take_are_parsed() {
        let spaced = br#"{ "apiVersion": "v1", "kind": "ConfigMap", "data": {} }"#;
        assert!(members(spaced).is_none());
        assert_eq!(stripped(spaced), br#"{"data":{}}"#);
        assert_eq!(stripped(b"[1]"), b"[1]");
        assert_eq!(stripped(br#"{"a":"#), br#"{"a":"#);
    }
}
