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

/// Writes the stored object `item` without its top-level `apiVersion` and `kind`; the other
/// fields' values are copied as they are, without being parsed into values.
fn without_type_meta(item: &[u8], out: &mut Vec<u8>) {
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
