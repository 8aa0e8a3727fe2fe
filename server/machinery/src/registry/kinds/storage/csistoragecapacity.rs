//! CSIStorageCapacities: validation, and the topology and class fixed at creation.

use serde_json::Value;

use crate::error::Cause;
use crate::registry::kinds::fields::{invalid, label_selector, nonnegative_quantity, unchanged, IMMUTABLE};
use crate::registry::kinds::Strategy;

/// How the kind is validated and updated.
pub const STRATEGY: Strategy = Strategy { validate, update, warnings: Some(warnings), ..Strategy::NONE };

/// A node topology selector, a storage class name and a capacity that is not negative.
pub fn validate(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    label_selector(&obj["nodeTopology"], "nodeTopology", &mut out);
    let class = obj["storageClassName"].as_str().unwrap_or_default();
    if !crate::meta::is_dns_subdomain(class) {
        out.push(Cause::invalid("storageClassName", class, crate::meta::DNS1123_SUBDOMAIN));
    }
    nonnegative_quantity(&obj["capacity"], "capacity", &mut out);
    out
}

/// A capacity is reported for one topology and class.
pub fn update(old: &Value, new: &mut Value) -> Vec<Cause> {
    let mut out = Vec::new();
    if old["nodeTopology"] != new["nodeTopology"] {
        out.push(invalid("nodeTopology", &new["nodeTopology"], IMMUTABLE));
    }
    unchanged(old, new, "/storageClassName", &mut out);
    out
}

/// Kubernetes' warnings: deprecated node labels in the node topology.
fn warnings(obj: &Value, _: Option<&Value>) -> Vec<String> {
    let topology = &obj["nodeTopology"];
    let mut out = Vec::new();
    for (i, e) in topology["matchExpressions"].as_array().into_iter().flatten().enumerate() {
        let key = e["key"].as_str().unwrap_or_default();
        if let Some(m) = crate::registry::kinds::warnings::deprecated_node_label(key) {
            out.push(format!("nodeTopology.matchExpressions[{i}].key: {key} is {m}"));
        }
    }
    for key in topology["matchLabels"].as_object().into_iter().flat_map(|m| m.keys()) {
        if let Some(m) = crate::registry::kinds::warnings::deprecated_node_label(key) {
            out.push(format!("nodeTopology.matchLabels.{key}: {m}"));
        }
    }
    out
}
