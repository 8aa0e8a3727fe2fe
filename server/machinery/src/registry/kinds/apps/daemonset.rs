//! DaemonSets: defaults, validation (selector, template, update strategy), the template's
//! generation, the selector fixed at creation, and kubectl's columns.

use serde_json::{json, Value};

use super::workload::{self, update_strategy};
use crate::registry::kinds::core::pod_spec;
use crate::error::Cause;
use crate::registry::kinds::fields::{
    age, at_least, at_most_100_percent, col, containers, int, int_or_percent, int_or_percent_value, invalid, label_selector, labels, required, selector, selects_all, set,
    unsupported_shown, AGE,
};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// How the kind is defaulted, validated, updated and printed.
pub const STRATEGY: Strategy = Strategy {
    default: defaults,
    validate,
    update,
    initial_status: Some(|| json!({"currentNumberScheduled": 0, "desiredNumberScheduled": 0, "numberMisscheduled": 0, "numberReady": 0})),
    columns: COLUMNS,
    cells,
    warnings: Some(warnings),
    ..Strategy::NONE
};

/// Where a DaemonSet keeps the generation of its pod template, which starts at 1 and grows with
/// each change of the template.
const TEMPLATE_GENERATION: &str = "deprecated.daemonset.template.generation";

pub fn defaults(obj: &mut Value) {
    if template_generation(obj) < 1 {
        set_template_generation(obj, 1);
    }
    pod_spec::template_defaults(obj);
    if let Some(spec) = obj.get_mut("spec").filter(|s| s.is_object()) {
        set(spec, "revisionHistoryLimit", json!(10));
        update_strategy(spec, "updateStrategy", json!({"maxUnavailable": 1, "maxSurge": 0}));
    }
}

/// The template generation is kept, and counts one more when the template changes; the
/// selector is fixed.
pub fn update(old: &Value, new: &mut Value) -> Vec<Cause> {
    let changed = old["spec"]["template"] != new["spec"]["template"];
    set_template_generation(new, template_generation(old) + i64::from(changed));
    workload::update(old, new)
}

fn template_generation(obj: &Value) -> i64 {
    obj["metadata"]["annotations"][TEMPLATE_GENERATION].as_str().and_then(|g| g.parse().ok()).unwrap_or(0)
}

fn set_template_generation(obj: &mut Value, generation: i64) {
    if obj["metadata"].is_object() {
        obj["metadata"]["annotations"][TEMPLATE_GENERATION] = json!(generation.to_string());
    }
}

/// The selector (which may not select nothing) and the template, timings, the update strategy.
pub fn validate(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let spec = &obj["spec"];
    let (sel, template) = (&spec["selector"], &spec["template"]);
    let valid = sel.is_null() || label_selector(sel, "spec.selector", &mut out);
    if valid {
        workload::template_selected(sel, template, &mut out);
    }
    if selects_all(sel) {
        out.push(workload::unconvertible(sel, "empty selector is invalid for daemonset"));
    }
    pod_spec::validate_template(template, "spec.template", &mut out);
    workload::restarts_always(template, "DaemonSet", &mut out);
    at_least(&spec["minReadySeconds"], "spec.minReadySeconds", 0, &mut out);
    at_least(&spec["templateGeneration"], "spec.templateGeneration", 0, &mut out);
    update_strategy_valid(&spec["updateStrategy"], &mut out);
    at_least(&spec["revisionHistoryLimit"], "spec.revisionHistoryLimit", 0, &mut out);
    out
}

/// `OnDelete`, or `RollingUpdate` either surging or taking nodes' pods down, not both.
fn update_strategy_valid(s: &Value, out: &mut Vec<Cause>) {
    const AT: &str = "spec.updateStrategy.rollingUpdate";
    let rolling = &s["rollingUpdate"];
    match s["type"].as_str() {
        Some("OnDelete") => {}
        Some("RollingUpdate") if rolling.is_null() => out.push(Cause::required(AT)),
        Some("RollingUpdate") => {
            let (unavailable, surge) = (&rolling["maxUnavailable"], &rolling["maxSurge"]);
            int_or_percent(unavailable, &format!("{AT}.maxUnavailable"), out);
            int_or_percent(surge, &format!("{AT}.maxSurge"), out);
            at_most_100_percent(unavailable, &format!("{AT}.maxUnavailable"), out);
            at_most_100_percent(surge, &format!("{AT}.maxSurge"), out);
            match (int_or_percent_value(unavailable) != 0, int_or_percent_value(surge) != 0) {
                (true, true) => out.push(invalid(format!("{AT}.maxSurge"), surge, "may not be set when maxUnavailable is non-zero")),
                (false, false) => out.push(required(format!("{AT}.maxUnavailable"), "cannot be 0 when maxSurge is 0")),
                _ => {}
            }
        }
        _ => {
            let shown = workload::strategy_shown(s, &[("maxUnavailable", "MaxUnavailable"), ("maxSurge", "MaxSurge")]);
            out.push(unsupported_shown("spec.updateStrategy", &shown, &["RollingUpdate", "OnDelete"]));
        }
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

/// Kubernetes' warnings: the pod template's (on update, when the template changed).
fn warnings(obj: &Value, old: Option<&Value>) -> Vec<String> {
    super::workload::template_warnings(obj, old, false)
}
