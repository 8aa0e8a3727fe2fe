//! DaemonSets: defaults; validated and updated as every workload.

use serde_json::{json, Value};

use super::workload::{self, update_strategy};
use crate::registry::kinds::core::pod_spec;
use crate::registry::kinds::fields::{age, col, containers, int, labels, selector, set, AGE};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// How the kind is defaulted, validated, updated and printed.
pub const STRATEGY: Strategy = Strategy {
    default: defaults,
    validate: workload::validate,
    update: workload::update,
    initial_status: Some(|| json!({"currentNumberScheduled": 0, "desiredNumberScheduled": 0, "numberMisscheduled": 0, "numberReady": 0})),
    columns: COLUMNS,
    cells,
    ..Strategy::NONE
};

pub fn defaults(obj: &mut Value) {
    pod_spec::template_defaults(obj);
    if let Some(spec) = obj.get_mut("spec").filter(|s| s.is_object()) {
        set(spec, "revisionHistoryLimit", json!(10));
        update_strategy(spec, "updateStrategy", json!({"maxUnavailable": 1, "maxSurge": 0}));
    }
}

pub const COLUMNS: &[Column] = &[
    col("Desired", "integer", 0),
    col("Current", "integer", 0),
    col("Ready", "integer", 0),
    col("Up-to-date", "integer", 0),
    col("Available", "integer", 0),
    col("Node Selector", "string", 0),
    AGE,
    col("Containers", "string", 1),
    col("Images", "string", 1),
    col("Selector", "string", 1),
];

pub fn cells(obj: &Value) -> Vec<Value> {
    let s = &obj["status"];
    let template = &obj["spec"]["template"]["spec"];
    vec![
        json!(int(&s["desiredNumberScheduled"])),
        json!(int(&s["currentNumberScheduled"])),
        json!(int(&s["numberReady"])),
        json!(int(&s["updatedNumberScheduled"])),
        json!(int(&s["numberAvailable"])),
        json!(labels(&template["nodeSelector"])),
        age(obj),
        containers(template, "name"),
        containers(template, "image"),
        json!(selector(&obj["spec"]["selector"])),
    ]
}
