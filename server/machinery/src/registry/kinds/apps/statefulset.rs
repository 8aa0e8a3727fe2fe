//! StatefulSets: defaults, the spec fields an update may change, and kubectl's columns.

use serde_json::{json, Value};

use super::workload::{self, update_strategy};
use crate::error::Cause;
use crate::registry::kinds::fields::{age, col, containers, int, set, AGE};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// How the kind is defaulted, validated, updated and printed.
pub const STRATEGY: Strategy = Strategy {
    default: defaults,
    validate: workload::validate,
    update,
    columns: COLUMNS,
    cells,
    initial_status: Some(|| json!({"availableReplicas": 0, "replicas": 0})),
    ..Strategy::NONE
};

pub fn defaults(obj: &mut Value) {
    workload::replicated(obj);
    if let Some(spec) = obj.get_mut("spec").filter(|s| s.is_object()) {
        set(spec, "podManagementPolicy", json!("OrderedReady"));
        set(spec, "revisionHistoryLimit", json!(10));
        update_strategy(spec, "updateStrategy", json!({"partition": 0}));
        set(spec, "persistentVolumeClaimRetentionPolicy", json!({"whenDeleted": "Retain", "whenScaled": "Retain"}));
    }
}

/// StatefulSets: besides the selector, only replicas, ordinals, template, update strategy,
/// PVC retention policy and minReadySeconds may change.
pub fn update(old: &Value, new: &mut Value) -> Vec<Cause> {
    const MUTABLE: &[&str] = &["replicas", "ordinals", "template", "updateStrategy", "persistentVolumeClaimRetentionPolicy", "minReadySeconds"];
    let strip = |obj: &Value| {
        let mut spec = obj["spec"].clone();
        if let Some(s) = spec.as_object_mut() {
            s.retain(|k, _| !MUTABLE.contains(&k.as_str()));
        }
        spec
    };
    if strip(old) != strip(new) {
        return vec![Cause::new(
            "FieldValueForbidden",
            "spec",
            "Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
        )];
    }
    Vec::new()
}

pub const COLUMNS: &[Column] = &[col("Ready", "string", 0), AGE, col("Containers", "string", 1), col("Images", "string", 1)];

pub fn cells(obj: &Value) -> Vec<Value> {
    let template = &obj["spec"]["template"]["spec"];
    vec![
        json!(format!("{}/{}", int(&obj["status"]["readyReplicas"]), obj["spec"]["replicas"].as_i64().unwrap_or(1))),
        age(obj),
        containers(template, "name"),
        containers(template, "image"),
    ]
}
