//! Per-kind behaviour built once from the `k8s-openapi` types: typed decoding with unknown-field
//! detection, and the defaults, validation and table columns kubectl users notice.

mod columns;
mod config_columns;
pub mod apiservice;
pub mod defaults;
pub mod hpa;
pub mod immutable;
pub mod mutating_policy;
pub mod validate;

pub use columns::*;
pub use config_columns::*;

use serde::{de::DeserializeOwned, Serialize};
use serde_json::Value;

use super::Decoded;
use crate::error::Cause;

/// Decodes through the typed schema `T`; fields the input has and the typed round trip lost
/// are unknown. Null and empty values that the types drop are not reported.
pub fn decode<T: DeserializeOwned + Serialize>(input: Value) -> Result<Decoded, String> {
    let typed = T::deserialize(&input).map_err(|e| format!("json: {e}"))?;
    let object = serde_json::to_value(&typed).map_err(|e| e.to_string())?;
    let mut unknown_fields = Vec::new();
    diff("", &input, &object, &mut unknown_fields);
    Ok(Decoded { object, unknown_fields })
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Object(m) => m.values().all(is_empty),
        Value::Array(a) => a.is_empty(),
        _ => false,
    }
}

fn diff(path: &str, input: &Value, out: &Value, unknown: &mut Vec<String>) {
    match (input, out) {
        (Value::Object(i), Value::Object(o)) => {
            for (k, v) in i {
                let p = if path.is_empty() { k.clone() } else { format!("{path}.{k}") };
                match o.get(k) {
                    Some(ov) => diff(&p, v, ov, unknown),
                    None if is_empty(v) => {}
                    None => unknown.push(p),
                }
            }
        }
        (Value::Array(i), Value::Array(o)) => {
            for (n, (iv, ov)) in i.iter().zip(o).enumerate() {
                diff(&format!("{path}[{n}]"), iv, ov, unknown);
            }
        }
        _ => {}
    }
}

/// A kind without defaults.
pub fn no_defaults(_: &mut Value) {}

/// A kind without checks beyond its types and metadata.
pub fn no_validation(_: &Value) -> Vec<Cause> {
    Vec::new()
}

/// A kind whose fields may all change on update.
pub fn no_update_rules(_: &Value, _: &mut Value) -> Vec<Cause> {
    Vec::new()
}

/// A kind shown with the default table (Name, Created At).
pub fn no_cells(_: &Value) -> Vec<Value> {
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use serde_json::json;

    #[test]
    fn unknown_fields_are_found_but_empty_ones_are_not() {
        let d = decode::<ConfigMap>(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "x", "bogus": 1, "labels": {}},
            "data": {"a": "b"}, "extra": {"y": 2}, "nothing": null
        }))
        .unwrap();
        assert_eq!(d.unknown_fields, vec!["extra".to_string(), "metadata.bogus".to_string()]);
        assert_eq!(d.object["data"]["a"], "b");
        assert_eq!(d.object["kind"], "ConfigMap");
        assert!(decode::<ConfigMap>(json!({"data": "notamap"})).is_err());
    }
}
