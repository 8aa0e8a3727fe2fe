//! Admission policy bindings (validating and mutating): kubectl's columns.

use serde_json::{json, Value};

use crate::registry::kinds::fields::{age, col, AGE};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// How the kind is defaulted, validated, updated and printed.
pub const STRATEGY: Strategy = Strategy {
    columns: COLUMNS,
    cells,
    default: defaults,
    ..Strategy::NONE
};

pub const COLUMNS: &[Column] = &[col("PolicyName", "string", 0), col("ParamRef", "string", 0), AGE];

pub fn cells(obj: &Value) -> Vec<Value> {
    let reference = &obj["spec"]["paramRef"];
    let param = match reference["name"].as_str() {
        Some(n) => match reference["namespace"].as_str() {
            Some(ns) => format!("{ns}/{n}"),
            None => format!("*/{n}"),
        },
        None => "<unset>".into(),
    };
    vec![json!(obj["spec"]["policyName"].as_str().unwrap_or_default()), json!(param), age(obj)]
}

/// A binding's `matchResources`, when given, defaults as a policy's constraints do.
pub fn defaults(obj: &mut Value) {
    if obj["spec"]["matchResources"].is_object() {
        super::validating_policy::match_resources(&mut obj["spec"]["matchResources"]);
    }
}
