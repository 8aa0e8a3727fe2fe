//! Jobs: defaults, validation (of the job spec CronJobs' templates share too), the fields fixed
//! at creation and kubectl's columns.

use serde_json::{json, Value};

use crate::error::Cause;
use crate::registry::kinds::core::pod_spec;
use crate::registry::kinds::apps::workload;
use crate::registry::kinds::fields::{
    age, at_least, col, containers, int, invalid, label_selector, required, selector, set, unchanged, unchanged_struct, unsupported, AGE,
};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// What a delete that relies on the Job's default propagation is told.
const ORPHANS_PODS: &str =
    "child pods are preserved by default when jobs are deleted; set propagationPolicy=Background to remove them or set propagationPolicy=Orphan to suppress this warning";

/// How the kind is defaulted, validated, updated and printed.
pub const STRATEGY: Strategy = Strategy {
    default: defaults,
    validate,
    update,
    columns: COLUMNS,
    cells,
    initial_status: Some(|| json!({})),
    orphans_by_default: Some(Some(ORPHANS_PODS)),
    warnings: Some(warnings),
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
    generated_selector(obj);
}

/// Unless a Job chooses its own selector (`manualSelector`), it selects its pods by its uid,
/// which its pod template carries as a label, with its name: Kubernetes' generated selector.
fn generated_selector(obj: &mut Value) {
    if obj["spec"]["manualSelector"] == true || !obj["spec"].is_object() {
        return;
    }
    let (Some(uid), Some(name)) = (obj["metadata"]["uid"].as_str().map(String::from), obj["metadata"]["name"].as_str().map(String::from)) else { return };
    let labels = &mut obj["spec"]["template"]["metadata"]["labels"];
    for (key, value) in [("batch.kubernetes.io/controller-uid", &uid), ("batch.kubernetes.io/job-name", &name), ("controller-uid", &uid), ("job-name", &name)] {
        set(labels, key, json!(value));
    }
    set(&mut obj["spec"]["selector"]["matchLabels"], "batch.kubernetes.io/controller-uid", json!(uid));
}

/// An object without labels takes its pod template's (Jobs, ReplicationControllers).
pub fn labels_from_template(obj: &mut Value, pointer: &str) {
    let Some(labels) = obj.pointer(pointer).filter(|l| l.as_object().is_some_and(|m| !m.is_empty())).cloned() else { return };
    if obj["metadata"]["labels"].as_object().is_none_or(|m| m.is_empty()) {
        obj["metadata"]["labels"] = labels;
    }
}

/// The job's spec, its selector, and a name its indexed pods' hostnames can carry.
pub fn validate(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let spec = &obj["spec"];
    job_spec(spec, "spec", &mut out);
    let sel = &spec["selector"];
    let valid = match sel.is_null() {
        true => {
            out.push(Cause::required("spec.selector"));
            true
        }
        false => label_selector(sel, "spec.selector", &mut out),
    };
    if valid {
        workload::template_selected(sel, &spec["template"], &mut out);
    }
    let last = int(&spec["completions"]) - 1;
    if spec["completionMode"] == "Indexed" && last >= 0 {
        let name = obj["metadata"]["name"].as_str().unwrap_or_default();
        let hostname = format!("{name}-{last}");
        if !crate::meta::is_dns_label(&hostname, 63, false) {
            out.push(Cause::invalid("metadata.name", name, &format!("will not able to create pod with invalid DNS label: {hostname}")));
        }
    }
    out
}

/// A job spec at `path` (a Job's, or a CronJob's template's): counts and limits of at least 0,
/// per-index limits only for indexed jobs, then the pod template, whose pods may not restart
/// always.
pub(crate) fn job_spec(spec: &Value, path: &str, out: &mut Vec<Cause>) {
    for field in ["parallelism", "completions", "activeDeadlineSeconds", "backoffLimit", "ttlSecondsAfterFinished", "backoffLimitPerIndex", "maxFailedIndexes"] {
        at_least(&spec[field], &format!("{path}.{field}"), 0, out);
    }
    if !spec["maxFailedIndexes"].is_null() && spec["backoffLimitPerIndex"].is_null() {
        out.push(required(format!("{path}.backoffLimitPerIndex"), "when maxFailedIndexes is specified"));
    }
    if spec["completionMode"] == "Indexed" {
        if spec["completions"].is_null() {
            out.push(required(format!("{path}.completions"), "when completion mode is Indexed"));
        }
    } else {
        for field in ["backoffLimitPerIndex", "maxFailedIndexes"] {
            if !spec[field].is_null() {
                out.push(invalid(format!("{path}.{field}"), &spec[field], "requires indexed completion mode"));
            }
        }
    }
    let template = &spec["template"];
    pod_spec::validate_template(template, &format!("{path}.template"), out);
    let restart = format!("{path}.template.spec.restartPolicy");
    match template["spec"]["restartPolicy"].as_str().unwrap_or_default() {
        "" | "Always" => out.push(required(restart, "valid values: \"OnFailure\", \"Never\"")),
        "OnFailure" if !spec["podFailurePolicy"].is_null() => {
            out.push(invalid(restart, &template["spec"]["restartPolicy"], "only \"Never\" is supported when podFailurePolicy is specified"))
        }
        "OnFailure" | "Never" => {}
        other => out.push(unsupported(restart, other, &["OnFailure", "Never"])),
    }
}

/// Jobs: the completion count, the selector and the pod template are fixed.
pub fn update(old: &Value, new: &mut Value) -> Vec<Cause> {
    let mut out = Vec::new();
    unchanged(old, new, "/spec/completions", &mut out);
    workload::selector_fixed(old, new, &mut out);
    unchanged_struct(old, new, "/spec/template", "core.PodTemplateSpec", &mut out);
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

/// Kubernetes' warnings: a name that is no DNS label, then the job spec's (on update, when the
/// spec changed).
fn warnings(obj: &Value, old: Option<&Value>) -> Vec<String> {
    let mut out: Vec<String> = match old {
        None => crate::registry::kinds::warnings::name_warning(obj, crate::registry::kinds::warnings::POD_NAMES).into_iter().collect(),
        Some(_) => Vec::new(),
    };
    if old.is_none_or(|o| o["spec"] != obj["spec"]) {
        out.extend(job_spec_warnings(&obj["spec"], "spec"));
    }
    out
}

/// A job spec's warnings (a Job's, or a CronJob's template's at `path`): an indexed job too large
/// to track its failed indexes, and the pod template's.
pub fn job_spec_warnings(spec: &Value, path: &str) -> Vec<String> {
    let mut out = Vec::new();
    if spec["completionMode"] == "Indexed" && int(&spec["completions"]) > 100_000 && int(&spec["parallelism"]) > 10_000 {
        out.push(format!("{path}: In Indexed Jobs with a number of completions higher than 10^5 and a parallelism higher than 10^4, Kubernetes might not be able to track completedIndexes when a big number of indexes fail"));
    }
    out.extend(crate::registry::kinds::core::pod_warnings::template(&spec["template"], &format!("{path}.template")));
    out
}
