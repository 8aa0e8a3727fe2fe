//! Namespaces: the name label, the `kubernetes` finalizer and the phase, finalizer names, and
//! kubectl's columns.

use serde_json::{json, Value};

use crate::error::Cause;
use crate::registry::kinds::fields::{age, col, set, AGE};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// How the kind is defaulted, validated, updated and printed.
pub const STRATEGY: Strategy = Strategy {
    default: defaults,
    validate,
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

/// The finalizers Kubernetes defines, which need no domain.
const STANDARD_FINALIZERS: &[&str] = &["kubernetes", "orphan", "foregroundDeletion"];

/// Each finalizer of the spec is a qualified name, and one without a domain is a standard one.
pub fn validate(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    for f in obj["spec"]["finalizers"].as_array().into_iter().flatten() {
        let name = f.as_str().unwrap_or_default();
        if let Some(problem) = crate::meta::qualified_name_problem(name) {
            out.push(Cause::invalid("spec.finalizers", name, problem));
        }
        if !name.contains('/') && !STANDARD_FINALIZERS.contains(&name) {
            out.push(Cause::invalid("spec.finalizers", name, "name is neither a standard finalizer name nor is it fully qualified"));
        }
    }
    out
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
