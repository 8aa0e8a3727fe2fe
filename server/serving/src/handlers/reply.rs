//! What a handler answers, before encoding: stored JSON objects and lists, kept as bytes so
//! that JSON responses are assembled without re-encoding; the edge turns them into the
//! negotiated media type.

use std::collections::BTreeMap;

use bytes::Bytes;
use http::StatusCode;
use serde_json::{json, Value};

pub use machinery::list::ListReply;
use machinery::error::ApiResult;
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
    let mut out = list_head(info, list);
    out.reserve(list_size(list) + 2);
    let custom = machinery::registry::custom::is_custom(info);
    for (i, item) in list.items.iter().enumerate() {
        list_item(custom, i, item, &mut out);
    }
    out.extend_from_slice(LIST_TAIL);
    out
}

/// The bytes of a list's items.
pub fn list_size(list: &ListReply) -> usize {
    list.items.iter().map(|i| i.len() + 1).sum()
}

/// A list's `metadata`.
fn list_meta(list: &ListReply) -> Value {
    let mut meta = json!({"resourceVersion": list.rev.to_string()});
    if let Some(c) = &list.continue_token {
        meta["continue"] = json!(c);
    }
    if let Some(r) = list.remaining {
        meta["remainingItemCount"] = json!(r);
    }
    meta
}

/// A list's JSON up to its first item: `{"kind":..,"apiVersion":..,"metadata":{..},"items":[`.
fn list_head(info: &ResourceInfo, list: &ListReply) -> Vec<u8> {
    let head = json!({"kind": format!("{}List", info.kind), "apiVersion": info.api_version(), "metadata": list_meta(list)});
    let mut out = serde_json::to_vec(&head).unwrap_or_default();
    out.pop(); // the closing brace
    out.extend_from_slice(b",\"items\":[");
    out
}

const LIST_TAIL: &[u8] = b"]}";

/// Item `i` of a list, after the comma that separates it from the one before.
fn list_item(custom: bool, i: usize, item: &[u8], out: &mut Vec<u8>) {
    if i > 0 {
        out.push(b',');
    }
    if custom {
        out.extend_from_slice(item);
    } else {
        without_type_meta(item, out);
    }
}

/// How much of a streamed list goes out at once.
const LIST_CHUNK: usize = 256 * 1024;

/// The same JSON as [`list_json`], as a stream of pieces of about [`LIST_CHUNK`] bytes made as
/// they are sent, so that a large list never sits whole in memory a second time (the items are
/// the cache's own bytes), as Kubernetes' streaming list encoder sends it.
pub fn list_json_stream(info: &ResourceInfo, list: ListReply) -> impl futures::Stream<Item = Bytes> + Send + 'static {
    let head = list_head(info, &list);
    let custom = machinery::registry::custom::is_custom(info);
    pieces(head, list.items, LIST_TAIL, move |i, item, out| list_item(custom, i, item, out))
}

/// The list in Protobuf, streamed the same way (its kind must have a Protobuf message).
pub fn list_protobuf_stream(info: &ResourceInfo, list: ListReply) -> ApiResult<impl futures::Stream<Item = Bytes> + Send + 'static> {
    let encoder = machinery::protobuf::ListStream::new(info).ok_or_else(|| machinery::error::ApiError::internal(format!("no Protobuf message for {}", info.kind)))?;
    let head = encoder.head(info, &list_meta(&list), &list.items)?;
    Ok(pieces(head, list.items, machinery::protobuf::LIST_TAIL, move |_, item, out| match encoder.item(item) {
        Ok(bytes) => out.extend_from_slice(&bytes),
        // Measured in the head already: it does not fail now.
        Err(e) => tracing::error!(error = %e, "a list item could not be encoded as Protobuf"),
    }))
}

/// `head`, each item as `item` writes it, then `tail`, in pieces of about [`LIST_CHUNK`] bytes.
fn pieces(
    head: Vec<u8>,
    items: Vec<Bytes>,
    tail: &'static [u8],
    item: impl Fn(usize, &[u8], &mut Vec<u8>) + Send + 'static,
) -> impl futures::Stream<Item = Bytes> + Send + 'static {
    let items = items.into_iter().enumerate();
    futures::stream::unfold((Some(head), items, false), move |(head, mut items, done)| {
        let piece = (!done).then(|| {
            let mut out = head.unwrap_or_default();
            out.reserve(LIST_CHUNK.saturating_sub(out.len()));
            let mut last = true;
            for (i, bytes) in items.by_ref() {
                item(i, &bytes, &mut out);
                if out.len() >= LIST_CHUNK {
                    last = false;
                    break;
                }
            }
            if last {
                out.extend_from_slice(tail);
            }
            (Bytes::from(out), (None, items, last))
        });
        std::future::ready(piece)
    })
}

/// Writes the stored object `item` without its top-level `apiVersion` and `kind`. Stored
/// objects are compact JSON the server wrote with their members sorted by key, so both come
/// before the first member that sorts after `kind`: the members up to it are found by a scan of
/// the bytes ([`stripped_head`]) and the rest is copied whole. Anything else is parsed.
fn without_type_meta(item: &[u8], out: &mut Vec<u8>) {
    let before = out.len();
    if stripped_head(item, out).is_none() {
        out.truncate(before);
        parsed_without_type_meta(item, out);
    }
}

/// [`without_type_meta`]'s scan; `None` (with part of the object written) when `item` is not a
/// compact object.
fn stripped_head(item: &[u8], out: &mut Vec<u8>) -> Option<()> {
    if item.first() != Some(&b'{') || item.last() != Some(&b'}') {
        return None;
    }
    out.push(b'{');
    let mut first = true;
    let mut member = |out: &mut Vec<u8>, span: &[u8]| {
        if !std::mem::take(&mut first) {
            out.push(b',');
        }
        out.extend_from_slice(span);
    };
    let end = item.len() - 1;
    let mut pos = 1;
    while pos < end {
        if item[pos] != b'"' {
            return None;
        }
        let key_end = string_end(item, pos)?;
        if item.get(key_end) != Some(&b':') {
            return None;
        }
        let key = &item[pos + 1..key_end - 1];
        if key > &b"kind"[..] {
            member(out, &item[pos..end]);
            break;
        }
        let value_end = value_end(item, key_end + 1)?;
        if key != b"apiVersion" && key != b"kind" {
            member(out, &item[pos..value_end]);
        }
        pos = match item.get(value_end) {
            Some(b',') if value_end + 1 < end => value_end + 1,
            _ if value_end == end => end,
            _ => return None,
        };
    }
    out.push(b'}');
    Some(())
}

/// The index just past the string that opens at `pos`.
fn string_end(item: &[u8], pos: usize) -> Option<usize> {
    let mut pos = pos + 1;
    loop {
        let at = pos + memchr::memchr2(b'"', b'\\', item.get(pos..)?)?;
        if item[at] == b'"' {
            return Some(at + 1);
        }
        pos = at + 2;
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
            json!({"Zeta": 1, "apiVersion": "v1", "binaryData": {"kind": "\\\\", "apiVersion": "x"}, "data": {"k": "\\\"kind\\\":"}, "kind": "K", "metadata": {"kind": 1}, "spec": {"apiVersion": "y", "kind": "z"}}),
            json!({"apiVersion": "v1", "kinda": {"kind": 2}}),
        ];
        for obj in objects {
            let bytes = serde_json::to_vec(&obj).unwrap();
            let mut scanned = Vec::new();
            assert!(stripped_head(&bytes, &mut scanned).is_some(), "the scan refused the server's own JSON: {obj}");
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

    #[tokio::test]
    async fn a_streamed_list_is_the_same_json_or_protobuf_in_pieces() {
        use futures::StreamExt;
        let info = machinery::registry::lookup("", "v1", "configmaps").unwrap();
        for n in [0usize, 1, 3, 2000] {
            let items: Vec<Bytes> = (0..n)
                .map(|i| Bytes::from(serde_json::to_vec(&json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("c{i}")}, "data": {"k": "v".repeat(300)}})).unwrap()))
                .collect();
            let list = ListReply { rev: 7, continue_token: Some("t".into()), remaining: Some(3), items };
            let whole = list_json(info, &list);
            let protobuf = machinery::protobuf::encode_object(&serde_json::from_slice(&whole).unwrap()).unwrap();
            let streamed: Vec<Bytes> = list_protobuf_stream(info, ListReply { items: list.items.clone(), continue_token: list.continue_token.clone(), ..list }).unwrap().collect().await;
            assert_eq!(streamed.concat(), protobuf, "{n} items in Protobuf");
            let pieces: Vec<Bytes> = list_json_stream(info, list).collect().await;
            assert!(pieces.iter().all(|p| p.len() <= LIST_CHUNK + 600), "a piece larger than a chunk and an item");
            assert_eq!(pieces.concat(), whole, "{n} items");
            serde_json::from_slice::<Value>(&whole).unwrap();
        }
    }

    #[test]
    fn bytes_the_scan_does_not_take_are_parsed() {
        let spaced = br#"{ "apiVersion": "v1", "kind": "ConfigMap", "data": {} }"#;
        assert!(stripped_head(spaced, &mut Vec::new()).is_none());
        assert_eq!(stripped(spaced), br#"{"data":{}}"#);
        assert_eq!(stripped(b"[1]"), b"[1]");
        assert_eq!(stripped(br#"{"a":"#), br#"{"a":"#);
    }
}
