//! ConfigMaps: valid keys (also Secrets'), a mebibyte of data at most, the data an `immutable`
//! ConfigMap keeps, and kubectl's columns.

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

/// The most data a ConfigMap or Secret holds, in bytes (binary data decoded).
const MAX_DATA: usize = 1024 * 1024;

/// Why `key` cannot key a ConfigMap's or Secret's data, in Kubernetes' words.
fn config_key_problems(key: &str) -> Vec<&'static str> {
    let mut out = Vec::new();
    if key.len() > 253 {
        out.push("must be no more than 253 characters");
    }
    if key.is_empty() || !key.bytes().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.')) {
        out.push("a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')");
    }
    match key {
        "." => out.push("must not be '.'"),
        ".." => out.push("must not be '..'"),
        k if k.starts_with("..") => out.push("must not start with '..'"),
        _ => {}
    }
    out
}

/// The keys of the maps `fields` are valid config keys.
pub(super) fn data_keys(obj: &Value, fields: &[&str]) -> Vec<Cause> {
    let mut out = Vec::new();
    for f in fields {
        for k in obj[*f].as_object().into_iter().flat_map(|m| m.keys()) {
            out.extend(config_key_problems(k).into_iter().map(|problem| Cause::invalid(format!("{f}[{k}]"), k, problem)));
        }
    }
    out
}

/// The bytes a data map holds: its strings' lengths, or (`encoded`) their base64 decoded.
fn data_size(map: &Value, encoded: bool) -> usize {
    let values = map.as_object().into_iter().flat_map(|m| m.values()).filter_map(Value::as_str);
    match encoded {
        true => values.map(|v| base64::Engine::decode(&base64::engine::general_purpose::STANDARD, v).map_or(v.len(), |b| b.len())).sum(),
        false => values.map(str::len).sum(),
    }
}

/// A Secret's data over the size limit (at `data`).
pub(super) fn secret_too_large(obj: &Value) -> Option<Cause> {
    (data_size(&obj["data"], true) > MAX_DATA).then(|| too_long("data"))
}

fn too_long(field: &str) -> Cause {
    Cause::new("FieldValueTooLong", field, format!("Too long: may not be more than {MAX_DATA} bytes"))
}

/// Valid keys, none in both maps, and no more than a mebibyte in all (reported at the whole
/// object, which Kubernetes names `[]`).
pub fn validate(obj: &Value) -> Vec<Cause> {
    let mut out = data_keys(obj, &["data", "binaryData"]);
    for k in obj["data"].as_object().into_iter().flat_map(|m| m.keys()).filter(|k| obj["binaryData"].get(k.as_str()).is_some()) {
        out.push(Cause::invalid(format!("data[{k}]"), k, "duplicate of key present in binaryData"));
    }
    if data_size(&obj["data"], false) + data_size(&obj["binaryData"], true) > MAX_DATA {
        out.push(too_long("[]"));
    }
    out
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

    #[test]
    fn keys_that_name_directories_repeat_or_exceed_the_size_are_refused() {
        let causes = validate(&json!({"data": {".": "1", "..": "2", "..a": "3", "k": "v", "ok": "x"}, "binaryData": {"k": "dg=="}}));
        let messages: Vec<String> = causes.iter().map(|c| format!("{} {}", c.field, c.message)).collect();
        assert_eq!(messages, [
            "data[.] Invalid value: \".\": must not be '.'",
            "data[..] Invalid value: \"..\": must not be '..'",
            "data[..a] Invalid value: \"..a\": must not start with '..'",
            "data[k] Invalid value: \"k\": duplicate of key present in binaryData",
        ]);
        let big = json!({"data": {"a": "x".repeat(MAX_DATA)}, "binaryData": {"b": "eQ=="}});
        assert_eq!(validate(&big)[0].message, "Too long: may not be more than 1048576 bytes");
        assert!(validate(&json!({"data": {"a": "x".repeat(MAX_DATA)}})).is_empty());
    }
}
