//! ConfigMaps: valid keys, the data an `immutable` ConfigMap keeps, and kubectl's columns.

use serde_json::{json, Value};

use crate::error::Cause;
use crate::registry::kinds::fields::{age, col, keys, AGE};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// How the kind is defaulted, validated, updated and printed.
pub const STRATEGY: Strategy = Strategy {
    validate,
    update: immutable_data,
    columns: COLUMNS,
    cells,
    ..Strategy::NONE
};

/// The keys of the maps `fields` are valid config keys.
pub(super) fn data_keys(obj: &Value, fields: &[&str]) -> Vec<Cause> {
    let mut out = Vec::new();
    for f in fields {
        for k in obj[*f].as_object().into_iter().flat_map(|m| m.keys()) {
            let ok = !k.is_empty() && k.len() <= 253 && k.bytes().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'));
            if !ok {
                out.push(Cause::invalid(format!("{f}[{k}]"), k, "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"));
            }
        }
    }
    out
}

pub fn validate(obj: &Value) -> Vec<Cause> {
    data_keys(obj, &["data", "binaryData"])
}

/// ConfigMaps and Secrets marked `immutable: true` keep their data and the mark.
pub(super) fn immutable_data(old: &Value, new: &mut Value) -> Vec<Cause> {
    let mut out = Vec::new();
    if old["immutable"] != true {
        return out;
    }
    for field in ["data", "binaryData"] {
        if old.get(field) != new.get(field) {
            out.push(Cause::new("FieldValueForbidden", field, "Forbidden: field is immutable when `immutable` is set"));
        }
    }
    if new["immutable"] != true {
        out.push(Cause::new("FieldValueForbidden", "immutable", "Forbidden: field is immutable when `immutable` is set"));
    }
    out
}

pub const COLUMNS: &[Column] = &[col("Data", "string", 0), AGE];

pub fn cells(obj: &Value) -> Vec<Value> {
    vec![json!(keys(&obj["data"]) + keys(&obj["binaryData"])), age(obj)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn immutable_data_stays() {
        let frozen = json!({"immutable": true, "data": {"k": "v"}});
        assert!(immutable_data(&frozen, &mut frozen.clone()).is_empty());
        let mut changed = json!({"immutable": true, "data": {"k": "w"}});
        assert_eq!(immutable_data(&frozen, &mut changed)[0].field, "data");
        let mut thawed = json!({"data": {"k": "v"}});
        assert_eq!(immutable_data(&frozen, &mut thawed)[0].field, "immutable");
    }
}
