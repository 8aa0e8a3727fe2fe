//! Jobs: defaults, validation (restart policy), the fields fixed at creation and kubectl's
//! columns.

use serde_json::{json, Value};

use crate::error::Cause;
use crate::registry::kinds::core::pod_spec;
use crate::registry::kinds::fields::{age, col, containers, int, selector, set, unchanged, AGE};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// How the kind is defaulted, validated, updated and printed.
/// What a delete that relies on the Job's default propagation is told.
const ORPHANS_PODS: &str =
    "child pods are preserved by default when jobs are deleted; set propagationPolicy=Background to remove them or set propagationPolicy=Orphan to suppress this warning";

pub const STRATEGY: Strategy = Strategy {
    default: defaults,
    validate,
    update,
    columns: COLUMNS,
    cells,
    initial_status: Some(|| json!({})),
    orphans_by_default: Some(Some(ORPHANS_PODS)),
    ..Strategy::NONE
};

pub fn defaults(obj: &mut Value) {
    pod_spec::template_defaults(obj);
    if let Some(spec) = obj.get_mut("spec").filter(|s| s.is_object()) {
        set(spec, "backoffLimit", json!(6));
        set(spec, "completions", json!(1));
        set(spec, "parallelism", json!(1));
        set(spec, "completionMode", json!("NonIndexed"));
        set(spec, "suspend", json!(false));
        if spec["podFailurePolicy"].is_null() {
            set(spec, "podReplacementPolicy", json!("TerminatingOrFailed"));
        }
    }
    labels_from_template(obj, "/spec/template/metadata/labels");
}

/// An object without labels takes its pod template's (Jobs, ReplicationControllers).
pub fn labels_from_template(obj: &mut Value, pointer: &str) {
    let Some(labels) = obj.pointer(pointer).filter(|l| l.as_object().is_some_and(|m| !m.is_empty())).cloned() else { return };
    if obj["metadata"]["labels"].as_object().is_none_or(|m| m.is_empty()) {
        obj["metadata"]["labels"] = labels;
    }
}

pub fn validate(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let spec = &obj["spec"]["template"]["spec"];
    pod_spec::validate(spec, "spec.template.spec", &mut out);
    match spec["restartPolicy"].as_str() {
        Some("OnFailure") | Some("Never") => {}
        other => out.push(Cause::new(
            "FieldValueNotSupported",
            "spec.template.spec.restartPolicy",
            format!("Unsupported value: \"{}\": supported values: \"OnFailure\", \"Never\"", other.unwrap_or_default()),
        )),
    }
    out
}

/// Jobs: the selector, the pod template and the completion count are fixed.
pub fn update(old: &Value, new: &mut Value) -> Vec<Cause> {
    let mut out = Vec::new();
    for pointer in ["/spec/selector", "/spec/template", "/spec/completions"] {
        unchanged(old, new, pointer, &mut out);
    }
    out
}

pub const COLUMNS: &[Column] = &[
    col("Status", "string", 0),
    col("Completions", "string", 0),
    col("Duration", "string", 0),
    AGE,
    col("Containers", "string", 1),
    col("Images", "string", 1),
    col("Selector", "string", 1),
];

pub fn cells(obj: &Value) -> Vec<Value> {
    let done = int(&obj["status"]["succeeded"]);
    let want = obj["spec"]["completions"].as_i64().unwrap_or(1);
    let status = if done >= want { "Complete" } else { "Running" };
    let template = &obj["spec"]["template"]["spec"];
    vec![
        json!(status),
        json!(format!("{done}/{want}")),
        json!(duration(&obj["status"])),
        age(obj),
        containers(template, "name"),
        containers(template, "image"),
        json!(selector(&obj["spec"]["selector"])),
    ]
}

/// How long a job ran (or has run): empty before it starts.
fn duration(status: &Value) -> String {
    let parse = |v: &Value| v.as_str().and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok());
    let Some(start) = parse(&status["startTime"]) else { return String::new() };
    let end = parse(&status["completionTime"]).map_or_else(chrono::Utc::now, |t| t.with_timezone(&chrono::Utc));
    crate::table_form::human_duration(end.signed_duration_since(start))
}
