//! Namespaces: the name label, the `kubernetes` finalizer and the phase, and kubectl's columns.

use serde_json::{json, Value};

use crate::registry::kinds::fields::{age, col, set, AGE};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// How the kind is defaulted, validated, updated and printed.
pub const STRATEGY: Strategy = Strategy {
    default: defaults,
    columns: COLUMNS,
    cells,
    ..Strategy::NONE
};

/// Namespaces carry their own name as the `kubernetes.io/metadata.name` label.
pub fn defaults(obj: &mut Value) {
    let name = obj["metadata"]["name"].clone();
    if name.is_string() {
        set(&mut obj["metadata"], "labels", json!({}));
        obj["metadata"]["labels"]["kubernetes.io/metadata.name"] = name;
    }
    if obj["spec"]["finalizers"].is_null() {
        obj["spec"]["finalizers"] = json!(["kubernetes"]);
    }
    if obj["status"]["phase"].is_null() {
        obj["status"]["phase"] = json!("Active");
    }
}

pub const COLUMNS: &[Column] = &[col("Status", "string", 0), AGE];

pub fn cells(obj: &Value) -> Vec<Value> {
    vec![json!(obj["status"]["phase"].as_str().unwrap_or("Active")), age(obj)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labelled_with_their_name() {
        let mut n = json!({"metadata": {"name": "team-a", "labels": {"x": "y"}}});
        defaults(&mut n);
        assert_eq!(n["metadata"]["labels"], json!({"x": "y", "kubernetes.io/metadata.name": "team-a"}));
    }
}
