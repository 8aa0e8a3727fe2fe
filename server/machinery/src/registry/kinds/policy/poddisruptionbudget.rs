//! PodDisruptionBudgets: the status a new one starts with, and kubectl's columns.

use serde_json::{json, Value};

use crate::registry::kinds::fields::{age, col, AGE};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// How the kind is created and printed.
pub const STRATEGY: Strategy = Strategy {
    columns: COLUMNS,
    cells,
    initial_status: Some(|| json!({"currentHealthy": 0, "desiredHealthy": 0, "disruptionsAllowed": 0, "expectedPods": 0})),
    ..Strategy::NONE
};

pub const COLUMNS: &[Column] = &[col("Min Available", "string", 0), col("Max Unavailable", "string", 0), col("Allowed Disruptions", "integer", 0), AGE];

/// Each bound as given (a count or a percentage), `N/A` when not set.
pub fn cells(obj: &Value) -> Vec<Value> {
    let bound = |v: &Value| match v {
        Value::Number(n) => json!(n.to_string()),
        Value::String(s) => json!(s),
        _ => json!("N/A"),
    };
    let spec = &obj["spec"];
    vec![bound(&spec["minAvailable"]), bound(&spec["maxUnavailable"]), json!(obj["status"]["disruptionsAllowed"].as_i64().unwrap_or(0)), age(obj)]
}
