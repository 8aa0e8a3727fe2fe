//! Secrets: the type and `stringData` defaults, valid keys, the data an `immutable` Secret keeps,
//! and kubectl's columns.

use base64::Engine;
use serde_json::{json, Value};

use super::configmap::{data_keys, immutable_data};
use crate::error::Cause;
use crate::registry::kinds::fields::{age, col, keys, set, AGE};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// How the kind is defaulted, validated, updated and printed.
pub const STRATEGY: Strategy = Strategy {
    default: defaults,
    validate,
    update: immutable_data,
    columns: COLUMNS,
    cells,
    ..Strategy::NONE
};

/// `stringData` is write-only: its entries are merged into `data`, base64-encoded, and win.
pub fn defaults(obj: &mut Value) {
    set(obj, "type", json!("Opaque"));
    let Some(Value::Object(strings)) = obj.as_object_mut().and_then(|o| o.remove("stringData")) else { return };
    set(obj, "data", json!({}));
    for (k, v) in strings {
        let encoded = base64::engine::general_purpose::STANDARD.encode(v.as_str().unwrap_or_default());
        obj["data"][k] = json!(encoded);
    }
}

pub fn validate(obj: &Value) -> Vec<Cause> {
    data_keys(obj, &["data", "stringData"])
}

pub const COLUMNS: &[Column] = &[col("Type", "string", 0), col("Data", "string", 0), AGE];

pub fn cells(obj: &Value) -> Vec<Value> {
    vec![json!(obj["type"].as_str().unwrap_or("Opaque")), json!(keys(&obj["data"])), age(obj)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_data_moves_into_data() {
        let mut s = json!({"data": {"a": "eA==", "b": "eA=="}, "stringData": {"b": "yy", "c": "z"}});
        defaults(&mut s);
        assert_eq!(s, json!({"type": "Opaque", "data": {"a": "eA==", "b": "eXk=", "c": "eg=="}}));
    }
}
