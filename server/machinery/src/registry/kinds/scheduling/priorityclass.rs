//! PriorityClasses: defaults.

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

pub fn defaults(obj: &mut Value) {
    set(obj, "preemptionPolicy", json!("PreemptLowerPriority"));
}

pub const COLUMNS: &[Column] = &[col("Value", "integer", 0), col("Global-Default", "boolean", 0), AGE, col("PreemptionPolicy", "string", 0)];

pub fn cells(obj: &Value) -> Vec<Value> {
    vec![json!(obj["value"].as_i64().unwrap_or(0)), json!(obj["globalDefault"] == true), age(obj), obj["preemptionPolicy"].clone()]
}
