//! ReplicaSets: the replicated workloads' defaults and kubectl's columns.

use serde_json::{json, Value};

use super::workload;
use crate::registry::kinds::fields::{age, col, int, AGE};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// How the kind is defaulted, validated, updated and printed.
pub const STRATEGY: Strategy = Strategy {
    default: workload::replicated,
    validate: workload::validate,
    update: workload::update,
    columns: COLUMNS,
    cells,
    initial_status: Some(|| json!({"replicas": 0})),
    ..Strategy::NONE
};

pub const COLUMNS: &[Column] = &[col("Desired", "integer", 0), col("Current", "integer", 0), col("Ready", "integer", 0), AGE];

pub fn cells(obj: &Value) -> Vec<Value> {
    let s = &obj["status"];
    vec![json!(obj["spec"]["replicas"].as_i64().unwrap_or(1)), json!(int(&s["replicas"])), json!(int(&s["readyReplicas"])), age(obj)]
}
