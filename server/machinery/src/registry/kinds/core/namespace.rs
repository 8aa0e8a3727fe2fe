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
    prepare_create: Some(require_kubernetes_finalizer),
    ..Strategy::NONE
};

/// Namespaces carry their own name as the `kubernetes.io/metadata.name` label.
pub fn defaults(obj: &mut Value) {
    let name = obj["metadata"]["name"].clone();
    if name.is_string() {
        set(&mut obj["metadata"], "labels", json!({}));
        obj["metadata"]["labels"]["kubernetes.io/metadata.name"] = name;
    }
    if obj["status"]["phase"].is_null() {
        obj["status"]["phase"] = json!("Active");
    }
}

/// A new namespace is held by the `kubernetes` finalizer (the namespace controller's), whatever
/// it was created with. Not a default: `finalize` takes it off again, and a body without
/// finalizers (Protobuf leaves an empty list out) means none then.
fn require_kubernetes_finalizer(obj: &mut Value) {
    let finalizers = &mut obj["spec"]["finalizers"];
    match finalizers.as_array_mut() {
        Some(list) if list.iter().any(|f| f == "kubernetes") => {}
        Some(list) => list.push(json!("kubernetes")),
        None => *finalizers = json!(["kubernetes"]),
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
            out.push(Cause::invalid("spec.finalizers", name, &problem));
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
        assert!(n["spec"]["finalizers"].is_null(), "finalizers are not a default: {n}");
    }

    #[test]
    fn created_held_by_the_kubernetes_finalizer() {
        for (given, held) in [(json!(null), json!(["kubernetes"])), (json!(["example.com/x"]), json!(["example.com/x", "kubernetes"])), (json!(["kubernetes"]), json!(["kubernetes"]))] {
            let mut n = json!({"spec": {"finalizers": given}});
            require_kubernetes_finalizer(&mut n);
            assert_eq!(n["spec"]["finalizers"], held);
        }
    }
}
