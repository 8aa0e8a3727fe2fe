//! ReplicationControllers: the replicated workloads' defaults, a selector and labels taken from
//! the template when left out, validation, and printed as ReplicaSets are.

use serde_json::{json, Value};

use crate::registry::kinds::apps::{replicaset, workload};
use crate::registry::kinds::batch::job::labels_from_template;
use super::pod_spec;
use crate::error::Cause;
use crate::registry::kinds::fields::{at_least, keys, labels};
use crate::registry::kinds::Strategy;

/// How the kind is defaulted, validated and printed.
pub const STRATEGY: Strategy = Strategy {
    default: defaults,
    validate,
    columns: replicaset::COLUMNS,
    cells,
    initial_status: Some(|| json!({"replicas": 0})),
    orphans_by_default: Some(None),
    warnings: Some(warnings),
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

/// minReadySeconds, a selector that selects something, replicas, then a template whose labels
/// the selector selects and whose pods always restart.
pub fn validate(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let spec = &obj["spec"];
    at_least(&spec["minReadySeconds"], "spec.minReadySeconds", 0, &mut out);
    if keys(&spec["selector"]) == 0 {
        out.push(Cause::required("spec.selector"));
    }
    match &spec["replicas"] {
        Value::Null => out.push(Cause::required("spec.replicas")),
        replicas => at_least(replicas, "spec.replicas", 0, &mut out),
    }
    let template = &spec["template"];
    if template.is_null() {
        out.push(Cause::required("spec.template"));
        return out;
    }
    workload::template_selected(&json!({"matchLabels": spec["selector"]}), template, &mut out);
    pod_spec::validate_template(template, "spec.template", &mut out);
    workload::restarts_always(template, "ReplicationController", &mut out);
    out
}

/// Printed as a ReplicaSet, its selector a plain map.
pub fn cells(obj: &Value) -> Vec<Value> {
    replicaset::replicated_cells(obj, labels(&obj["spec"]["selector"]))
}

/// Kubernetes' warnings: a name that is no DNS label, then the pod template's; on update, when
/// the spec changed, Kubernetes looks at the stored template's (it passes the two the other way
/// round), and so does this.
fn warnings(obj: &Value, old: Option<&Value>) -> Vec<String> {
    match old {
        Some(old) if old["spec"] != obj["spec"] => crate::registry::kinds::apps::workload::template_warnings(old, None, false),
        Some(_) => Vec::new(),
        None => crate::registry::kinds::apps::workload::template_warnings(obj, None, true),
    }
}
