//! ReplicationControllers: the replicated workloads' defaults, a selector and labels taken from
//! the template when left out, and printed as ReplicaSets are.

use serde_json::{json, Value};

use crate::registry::kinds::apps::{replicaset, workload};
use crate::registry::kinds::batch::job::labels_from_template;
use crate::registry::kinds::fields::labels;
use crate::registry::kinds::Strategy;

/// How the kind is defaulted and printed.
pub const STRATEGY: Strategy = Strategy {
    default: defaults,
    columns: replicaset::COLUMNS,
    cells,
    initial_status: Some(|| json!({"replicas": 0})),
    orphans_by_default: Some(None),
    ..Strategy::NONE
};

pub fn defaults(obj: &mut Value) {
    workload::replicated(obj);
    let labels = obj["spec"]["template"]["metadata"]["labels"].clone();
    if obj["spec"].is_object() && obj["spec"]["selector"].as_object().is_none_or(|m| m.is_empty()) && labels.as_object().is_some_and(|m| !m.is_empty()) {
        obj["spec"]["selector"] = labels;
    }
    labels_from_template(obj, "/spec/template/metadata/labels");
}

/// Printed as a ReplicaSet, its selector a plain map.
pub fn cells(obj: &Value) -> Vec<Value> {
    replicaset::replicated_cells(obj, labels(&obj["spec"]["selector"]))
}
