//! ReplicaSets: the replicated workloads' defaults, validation and kubectl's columns.

use serde_json::{json, Value};

use super::workload;
use crate::error::Cause;
use crate::registry::kinds::fields::{age, at_least, col, containers, int, selector, AGE};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// How the kind is defaulted, validated, updated and printed.
pub const STRATEGY: Strategy = Strategy {
    default: workload::replicated,
    validate,
    update: workload::update,
    columns: COLUMNS,
    cells,
    initial_status: Some(|| json!({"replicas": 0})),
    warnings: Some(warnings),
    ..Strategy::NONE
};

/// Replicas and minReadySeconds of at least 0, then the selector and the template.
pub fn validate(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let spec = &obj["spec"];
    at_least(&spec["replicas"], "spec.replicas", 0, &mut out);
    at_least(&spec["minReadySeconds"], "spec.minReadySeconds", 0, &mut out);
    workload::replica_selector_and_template(spec, &mut out);
    out
}

pub const COLUMNS: &[Column] = &[
    col("Desired", "integer", 0),
    col("Current", "integer", 0),
    col("Ready", "integer", 0),
    AGE,
    col("Containers", "string", 1),
    col("Images", "string", 1),
    col("Selector", "string", 1),
];

pub fn cells(obj: &Value) -> Vec<Value> {
    replicated_cells(obj, selector(&obj["spec"]["selector"]))
}

/// A replicated workload's row, given its selector as printed (ReplicationControllers select
/// by a plain map).
pub fn replicated_cells(obj: &Value, selector: String) -> Vec<Value> {
    let s = &obj["status"];
    let template = &obj["spec"]["template"]["spec"];
    vec![
        json!(obj["spec"]["replicas"].as_i64().unwrap_or(1)),
        json!(int(&s["replicas"])),
        json!(int(&s["readyReplicas"])),
        age(obj),
        containers(template, "name"),
        containers(template, "image"),
        json!(selector),
    ]
}

/// Kubernetes' warnings: a name that is no DNS label, then the pod template's (on update, when
/// the spec changed).
fn warnings(obj: &Value, old: Option<&Value>) -> Vec<String> {
    super::workload::template_warnings(obj, old, true)
}
