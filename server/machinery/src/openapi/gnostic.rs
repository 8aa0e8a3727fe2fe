//! `/openapi/v2` in the protobuf form client-go asks for
//! (`application/com.github.proto-openapi.spec.v2@v1.0+protobuf`), which kubectl's validation
//! of `kind: List` files uses: the Swagger document encoded as gnostic's `openapi.v2.Document`,
//! with its definitions schema by schema and `x-` extensions carried, as gnostic carries them,
//! as YAML text.

use serde_json::{Map, Value};

use crate::protobuf::encode::{bytes_field, varint};

/// The media types clients ask for the protobuf form by (client-go's older, `@`, and the one
/// kube-openapi answers with, which Go's media type parser accepts).
pub const ACCEPTED: &[&str] = &["application/com.github.proto-openapi.spec.v2@v1.0+protobuf", MEDIA_TYPE];
/// The `Content-Type` of the protobuf form.
pub const MEDIA_TYPE: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

fn string_field(out: &mut Vec<u8>, number: u32, s: &str) {
    bytes_field(out, number, s.as_bytes());
}

fn bool_field(out: &mut Vec<u8>, number: u32, b: bool) {
    if b {
        varint(out, u64::from(number) << 3);
        varint(out, 1);
    }
}

fn int_field(out: &mut Vec<u8>, number: u32, v: i64) {
    varint(out, u64::from(number) << 3);
    varint(out, v as u64);
}

fn double_field(out: &mut Vec<u8>, number: u32, v: f64) {
    varint(out, u64::from(number) << 3 | 1);
    out.extend_from_slice(&v.to_le_bytes());
}

/// An `Any` holding `v` as YAML.
fn any(v: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    string_field(&mut out, 2, serde_yaml::to_string(v).unwrap_or_default().trim_end());
    out
}

/// `NamedAny` entries of the `x-` keys of `m`, as field `number`.
fn extensions(out: &mut Vec<u8>, number: u32, m: &Map<String, Value>) {
    for (k, v) in m.iter().filter(|(k, _)| k.starts_with("x-")) {
        let mut named = Vec::new();
        string_field(&mut named, 1, k);
        bytes_field(&mut named, 2, &any(v));
        bytes_field(out, number, &named);
    }
}

/// One `Schema`.
fn schema(v: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    let Some(m) = v.as_object() else { return out };
    let s = |k: &str| m.get(k).and_then(Value::as_str);
    if let Some(r) = s("$ref") {
        string_field(&mut out, 1, r);
    }
    for (number, key) in [(2, "format"), (3, "title"), (4, "description"), (13, "pattern")] {
        if let Some(text) = s(key) {
            string_field(&mut out, number, text);
        }
    }
    for (number, key) in [(6, "multipleOf"), (7, "maximum"), (9, "minimum")] {
        if let Some(x) = m.get(key).and_then(Value::as_f64) {
            double_field(&mut out, number, x);
        }
    }
    for (number, key) in [(8, "exclusiveMaximum"), (10, "exclusiveMinimum"), (16, "uniqueItems"), (27, "readOnly")] {
        bool_field(&mut out, number, m.get(key).and_then(Value::as_bool).unwrap_or(false));
    }
    for (number, key) in [(11, "maxLength"), (12, "minLength"), (14, "maxItems"), (15, "minItems"), (17, "maxProperties"), (18, "minProperties")] {
        if let Some(x) = m.get(key).and_then(Value::as_i64) {
            int_field(&mut out, number, x);
        }
    }
    for r in m.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str) {
        string_field(&mut out, 19, r);
    }
    for e in m.get("enum").and_then(Value::as_array).into_iter().flatten() {
        bytes_field(&mut out, 20, &any(e));
    }
    match m.get("additionalProperties") {
        Some(Value::Bool(b)) => {
            let mut item = Vec::new();
            varint(&mut item, 2 << 3);
            varint(&mut item, u64::from(*b));
            bytes_field(&mut out, 21, &item);
        }
        Some(inner @ Value::Object(_)) => {
            let mut item = Vec::new();
            bytes_field(&mut item, 1, &schema(inner));
            bytes_field(&mut out, 21, &item);
        }
        _ => {}
    }
    let types: Vec<&str> = match m.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    if !types.is_empty() {
        let mut item = Vec::new();
        for t in types {
            string_field(&mut item, 1, t);
        }
        bytes_field(&mut out, 22, &item);
    }
    if let Some(items) = m.get("items") {
        let mut item = Vec::new();
        match items {
            Value::Array(list) => list.iter().for_each(|i| bytes_field(&mut item, 1, &schema(i))),
            other => bytes_field(&mut item, 1, &schema(other)),
        }
        bytes_field(&mut out, 23, &item);
    }
    for a in m.get("allOf").and_then(Value::as_array).into_iter().flatten() {
        bytes_field(&mut out, 24, &schema(a));
    }
    if let Some(props) = m.get("properties").and_then(Value::as_object) {
        bytes_field(&mut out, 25, &named_schemas(props));
    }
    extensions(&mut out, 31, m);
    out
}

/// A message of `NamedSchema` entries (field 1): `Properties` and `Definitions` alike.
fn named_schemas(m: &Map<String, Value>) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, s) in m {
        let mut named = Vec::new();
        string_field(&mut named, 1, name);
        bytes_field(&mut named, 2, &schema(s));
        bytes_field(&mut out, 1, &named);
    }
    out
}

/// The `Document` of a Swagger 2.0 document: its version, info and definitions.
pub fn document(doc: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    string_field(&mut out, 1, doc["swagger"].as_str().unwrap_or("2.0"));
    let mut info = Vec::new();
    string_field(&mut info, 1, doc["info"]["title"].as_str().unwrap_or_default());
    string_field(&mut info, 2, doc["info"]["version"].as_str().unwrap_or_default());
    bytes_field(&mut out, 2, &info);
    if let Some(defs) = doc["definitions"].as_object() {
        bytes_field(&mut out, 9, &named_schemas(defs));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;

    // The parts of gnostic's messages the test reads.
    #[derive(Clone, PartialEq, Message)]
    struct Document {
        #[prost(string, tag = "1")]
        swagger: String,
        #[prost(message, optional, tag = "9")]
        definitions: Option<Definitions>,
    }
    #[derive(Clone, PartialEq, Message)]
    struct Definitions {
        #[prost(message, repeated, tag = "1")]
        additional_properties: Vec<NamedSchema>,
    }
    #[derive(Clone, PartialEq, Message)]
    struct NamedSchema {
        #[prost(string, tag = "1")]
        name: String,
        #[prost(message, optional, tag = "2")]
        value: Option<Schema>,
    }
    #[derive(Clone, PartialEq, Message)]
    struct Schema {
        #[prost(string, tag = "4")]
        description: String,
        #[prost(string, repeated, tag = "19")]
        required: Vec<String>,
        #[prost(message, optional, tag = "25")]
        properties: Option<Definitions>,
        #[prost(message, repeated, tag = "31")]
        vendor_extension: Vec<NamedAny>,
    }
    #[derive(Clone, PartialEq, Message)]
    struct NamedAny {
        #[prost(string, tag = "1")]
        name: String,
        #[prost(message, optional, tag = "2")]
        value: Option<Any>,
    }
    #[derive(Clone, PartialEq, Message)]
    struct Any {
        #[prost(string, tag = "2")]
        yaml: String,
    }

    #[test]
    fn the_swagger_document_decodes_as_gnostic() {
        let json: Value = serde_json::from_slice(&super::super::v2()).unwrap();
        let doc = Document::decode(&document(&json)[..]).unwrap();
        assert_eq!(doc.swagger, "2.0");
        let defs = doc.definitions.unwrap().additional_properties;
        assert_eq!(defs.len(), json["definitions"].as_object().unwrap().len());
        let pod = defs.iter().find(|d| d.name == "io.k8s.api.core.v1.Pod").unwrap().value.clone().unwrap();
        let gvk = pod.vendor_extension.iter().find(|e| e.name == "x-kubernetes-group-version-kind").unwrap();
        let yaml: Value = serde_yaml::from_str(&gvk.value.as_ref().unwrap().yaml).unwrap();
        assert_eq!(yaml, serde_json::json!([{"group": "", "kind": "Pod", "version": "v1"}]));
        let spec = defs.iter().find(|d| d.name == "io.k8s.api.core.v1.PodSpec").unwrap().value.clone().unwrap();
        assert!(spec.required.contains(&"containers".to_string()));
        let containers = spec.properties.unwrap().additional_properties.into_iter().find(|p| p.name == "containers").unwrap().value.unwrap();
        assert!(containers.vendor_extension.iter().any(|e| e.name == "x-kubernetes-patch-merge-key"));
    }
}
