//! NetworkPolicies: ports are TCP unless given, and the policy types follow the rules given.

use serde_json::{json, Value};

use crate::registry::kinds::fields::{age, col, selector, set, AGE};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// How the kind is defaulted.
pub const STRATEGY: Strategy = Strategy { default: defaults, columns: COLUMNS, cells, ..Strategy::NONE };

/// Every port's protocol is TCP unless given; without `policyTypes`, a policy is `Ingress`, and
/// `Egress` too when it has egress rules.
pub fn defaults(obj: &mut Value) {
    let spec = &mut obj["spec"];
    if !spec.is_object() {
        return;
    }
    for direction in ["ingress", "egress"] {
        for rule in spec[direction].as_array_mut().into_iter().flatten() {
            for port in rule["ports"].as_array_mut().into_iter().flatten() {
                set(port, "protocol", json!("TCP"));
            }
        }
    }
    if spec["policyTypes"].as_array().is_none_or(Vec::is_empty) {
        let mut types = vec![json!("Ingress")];
        if spec["egress"].as_array().is_some_and(|e| !e.is_empty()) {
            types.push(json!("Egress"));
        }
        spec["policyTypes"] = json!(types);
    }
}

pub const COLUMNS: &[Column] = &[col("Pod-Selector", "string", 0), AGE];

pub fn cells(obj: &Value) -> Vec<Value> {
    vec![json!(selector(&obj["spec"]["podSelector"])), age(obj)]
}
