//! The JSON form of an object to Protobuf wire bytes of its message, driven by the schema: the
//! inverse of `decode.rs`. Fields go out in field-number order; a JSON key the message does not
//! know is left out, as a Go client would not know it either; `null` is an absent field.

use base64::Engine;
use serde_json::{Map, Value};

use super::decode::{DURATION, INT_OR_STRING, MICRO_TIME, QUANTITY, RAW_JSON, TIME};
use super::schema::{messages, Field, Label, Type};

/// Deeper nesting than this is refused rather than risking the stack.
const MAX_DEPTH: usize = 64;

/// Encodes `value` as the message `name` (without the `io.k8s.` prefix).
pub fn message(name: &str, value: &Value) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    encode(name, value, &mut out, 0)?;
    Ok(out)
}

/// Appends a varint.
pub fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Appends a length-delimited field.
pub fn bytes_field(out: &mut Vec<u8>, number: u32, bytes: &[u8]) {
    varint(out, u64::from(number) << 3 | 2);
    varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

fn varint_field(out: &mut Vec<u8>, number: u32, v: u64) {
    varint(out, u64::from(number) << 3);
    varint(out, v);
}

fn encode(name: &str, value: &Value, out: &mut Vec<u8>, depth: usize) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Err("object nested too deeply".into());
    }
    let mismatch = || format!("a {name} cannot be {value}");
    match name {
        TIME | MICRO_TIME => {
            let text = value.as_str().ok_or_else(mismatch)?;
            let t = chrono::DateTime::parse_from_rfc3339(text).map_err(|e| format!("time {text:?}: {e}"))?;
            varint_field(out, 1, t.timestamp() as u64);
            varint_field(out, 2, u64::from(t.timestamp_subsec_nanos()));
            return Ok(());
        }
        DURATION => {
            let text = value.as_str().ok_or_else(mismatch)?;
            let d = crate::go_duration::parse_duration(text)?;
            varint_field(out, 1, u64::try_from(d.as_nanos()).map_err(|_| format!("duration {text:?} out of range"))?);
            return Ok(());
        }
        QUANTITY => {
            let text = match value {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                _ => return Err(mismatch()),
            };
            bytes_field(out, 1, text.as_bytes());
            return Ok(());
        }
        INT_OR_STRING => {
            match value {
                Value::String(s) => {
                    varint_field(out, 1, 1);
                    varint_field(out, 2, 0);
                    bytes_field(out, 3, s.as_bytes());
                }
                Value::Number(n) => {
                    varint_field(out, 1, 0);
                    varint_field(out, 2, n.as_i64().ok_or_else(mismatch)? as i32 as i64 as u64);
                    bytes_field(out, 3, b"");
                }
                _ => return Err(mismatch()),
            }
            return Ok(());
        }
        n if RAW_JSON.contains(&n) => {
            bytes_field(out, 1, &serde_json::to_vec(value).map_err(|e| e.to_string())?);
            return Ok(());
        }
        n if n.ends_with(".ExtraValue") => {
            for item in value.as_array().ok_or_else(mismatch)? {
                bytes_field(out, 1, item.as_str().ok_or_else(mismatch)?.as_bytes());
            }
            return Ok(());
        }
        _ => {}
    }
    let union = super::unions::to_message(name, value);
    let value = union.as_ref().unwrap_or(value);
    let schema = messages().get(name).ok_or_else(|| format!("no protobuf schema for {name}"))?;
    let object = value.as_object().ok_or_else(mismatch)?;
    for (&number, field) in &schema.fields {
        if field.json == super::decode::EMBEDDED {
            // A Go struct embedded in its parent: its fields are the parent's own keys.
            if let Type::Message(inner) = field.ty {
                let mut bytes = Vec::new();
                encode(inner, value, &mut bytes, depth + 1)?;
                bytes_field(out, number, &bytes);
            }
            continue;
        }
        match (object.get(field.json), field.label) {
            (None | Some(Value::Null), _) => {}
            (Some(v), Label::Optional) => one(field, number, v, out, depth)?,
            (Some(Value::Array(items)), Label::Repeated) => {
                for item in items.iter().filter(|i| !i.is_null()) {
                    one(field, number, item, out, depth)?;
                }
            }
            (Some(Value::Object(map)), Label::Map) => map_entries(field, number, map, out, depth)?,
            (Some(v), _) => return Err(format!("field {:?} of {name} cannot be {v}", field.json)),
        }
    }
    Ok(())
}

/// A map's entries, each a message with the key as field 1 and the value as field 2.
fn map_entries(field: &Field, number: u32, map: &Map<String, Value>, out: &mut Vec<u8>, depth: usize) -> Result<(), String> {
    for (key, value) in map {
        let mut entry = Vec::new();
        bytes_field(&mut entry, 1, key.as_bytes());
        if !value.is_null() {
            one(field, 2, value, &mut entry, depth)?;
        }
        bytes_field(out, number, &entry);
    }
    Ok(())
}

/// One value of the field's type as field `number`.
fn one(field: &Field, number: u32, v: &Value, out: &mut Vec<u8>, depth: usize) -> Result<(), String> {
    let mismatch = || format!("field {:?} cannot be {v}", field.json);
    match field.ty {
        Type::String => bytes_field(out, number, v.as_str().ok_or_else(mismatch)?.as_bytes()),
        Type::Bytes => {
            let text = v.as_str().ok_or_else(mismatch)?;
            let bytes = base64::engine::general_purpose::STANDARD.decode(text).map_err(|_| mismatch())?;
            bytes_field(out, number, &bytes);
        }
        Type::Int32 => varint_field(out, number, v.as_i64().ok_or_else(mismatch)? as i32 as i64 as u64),
        Type::Int64 => varint_field(out, number, v.as_i64().ok_or_else(mismatch)? as u64),
        Type::Bool => varint_field(out, number, u64::from(v.as_bool().ok_or_else(mismatch)?)),
        Type::Double => {
            varint(out, u64::from(number) << 3 | 1);
            out.extend_from_slice(&v.as_f64().ok_or_else(mismatch)?.to_le_bytes());
        }
        Type::Message(name) => {
            let mut bytes = Vec::new();
            encode(name, v, &mut bytes, depth + 1)?;
            bytes_field(out, number, &bytes);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// Whatever the decoder reads back is what was encoded.
    fn round_trip(name: &str, value: Value) {
        let bytes = message(name, &value).unwrap();
        assert_eq!(super::super::decode::message(name, &bytes).unwrap(), value, "{name}");
    }

    #[test]
    fn objects_survive_a_round_trip() {
        round_trip(
            "api.apps.v1.Deployment",
            json!({
                "metadata": {"name": "web", "labels": {"app": "web"}, "creationTimestamp": "2024-01-02T03:04:05Z",
                             "generation": 3, "ownerReferences": [{"apiVersion": "v1", "kind": "X", "name": "o", "uid": "u", "controller": true}]},
                "spec": {
                    "replicas": -1,
                    "selector": {"matchLabels": {"app": "web"}},
                    "template": {"spec": {"containers": [{"name": "c", "image": "i", "ports": [{"containerPort": 80}],
                        "resources": {"limits": {"cpu": "500m"}},
                        "readinessProbe": {"httpGet": {"path": "/", "port": "http"}, "periodSeconds": 5}}]}},
                    "strategy": {"rollingUpdate": {"maxSurge": 2, "maxUnavailable": "25%"}},
                },
                "status": {"conditions": [{"type": "Available", "status": "True", "lastUpdateTime": "2024-01-02T03:04:05Z"}]},
            }),
        );
        round_trip("api.core.v1.Secret", json!({"metadata": {"name": "s"}, "data": {"k": "AGhp"}, "type": "Opaque"}));
        round_trip(
            "api.events.v1.Event",
            json!({"metadata": {"name": "e"}, "eventTime": "2024-01-02T03:04:05.123456Z", "reason": "R", "action": "A"}),
        );
        round_trip("api.apps.v1.ControllerRevision", json!({"metadata": {"name": "r"}, "data": {"any": ["json", 1]}, "revision": 2}));
        round_trip(
            "api.authentication.v1.UserInfo",
            json!({"username": "u", "groups": ["g"], "extra": {"scopes": ["a", "b"]}}),
        );
    }

    #[test]
    fn status_and_lists() {
        round_trip(
            "apimachinery.pkg.apis.meta.v1.Status",
            json!({"metadata": {"resourceVersion": "5"}, "status": "Failure", "message": "gone", "reason": "Expired", "code": 410,
                   "details": {"name": "x", "causes": [{"reason": "FieldValueInvalid", "field": "spec"}]}}),
        );
        round_trip(
            "api.core.v1.ConfigMapList",
            json!({"metadata": {"resourceVersion": "7", "continue": "abc", "remainingItemCount": 3},
                   "items": [{"metadata": {"name": "a"}, "data": {"k": "v"}}, {"metadata": {"name": "b"}}]}),
        );
    }

    #[test]
    fn mismatched_values_are_errors() {
        assert!(message("api.core.v1.ConfigMap", &json!({"metadata": {"name": 5}})).is_err());
        assert!(message("api.core.v1.ConfigMap", &json!({"metadata": {"creationTimestamp": "yesterday"}})).is_err());
        assert!(message("api.core.v1.ConfigMap", &json!([1])).is_err());
        // Unknown keys and nulls are left out.
        let bytes = message("api.core.v1.ConfigMap", &json!({"metadata": {"name": "a", "futureField": 1}, "data": null})).unwrap();
        assert_eq!(super::super::decode::message("api.core.v1.ConfigMap", &bytes).unwrap(), json!({"metadata": {"name": "a"}}));
    }
}
