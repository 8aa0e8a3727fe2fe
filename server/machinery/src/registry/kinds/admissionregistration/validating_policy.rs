//! ValidatingAdmissionPolicies: kubectl's columns.

use serde_json::{json, Value};

use crate::registry::kinds::fields::{age, col, items, AGE};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// How the kind is defaulted, validated, updated and printed.
pub const STRATEGY: Strategy = Strategy {
    columns: COLUMNS,
    cells,
    ..Strategy::NONE
};

pub const COLUMNS: &[Column] = &[col("Validations", "integer", 0), col("ParamKind", "string", 0), AGE];

pub fn cells(obj: &Value) -> Vec<Value> {
    let kind = &obj["spec"]["paramKind"];
    let param = match kind["kind"].as_str() {
        Some(k) => format!("{}/{k}", kind["apiVersion"].as_str().unwrap_or_default()),
        None => "<unset>".into(),
    };
    vec![json!(items(&obj["spec"]["validations"])), json!(param), age(obj)]
}
