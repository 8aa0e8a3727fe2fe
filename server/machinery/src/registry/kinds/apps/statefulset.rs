//! StatefulSets: defaults, validation, the spec fields an update may change, and kubectl's
//! columns.

use serde_json::{json, Value};

use super::workload::{self, update_strategy};
use crate::error::Cause;
use crate::registry::kinds::core::pod_spec;
use crate::registry::kinds::fields::{
    age, at_least, at_most_100_percent, col, containers, dns_label, int, int_or_percent, int_or_percent_value, invalid, invalid_shown, one_of, set, AGE,
};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// How the kind is defaulted, validated, updated and printed.
pub const STRATEGY: Strategy = Strategy {
    default: defaults,
    validate,
    update,
    columns: COLUMNS,
    cells,
    initial_status: Some(|| json!({"availableReplicas": 0, "replicas": 0})),
    warnings: Some(warnings),
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

/// The pod management policy, update strategy and claim retention policy, the counts, the
/// service name, the selector and the template.
pub fn validate(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let spec = &obj["spec"];
    let management = &spec["podManagementPolicy"];
    match management.as_str() {
        Some("") => out.push(Cause::required("spec.podManagementPolicy")),
        Some("OrderedReady" | "Parallel") | None => {}
        Some(_) => out.push(invalid("spec.podManagementPolicy", management, "must be 'OrderedReady' or 'Parallel'")),
    }
    update_strategy_valid(&spec["updateStrategy"], &mut out);
    for when in ["whenDeleted", "whenScaled"] {
        let policy = &spec["persistentVolumeClaimRetentionPolicy"][when];
        one_of(policy, &format!("spec.persistentVolumeClaimRetentionPolicy.{when}"), &["Retain", "Delete"], &mut out);
    }
    at_least(&spec["replicas"], "spec.replicas", 0, &mut out);
    at_least(&spec["minReadySeconds"], "spec.minReadySeconds", 0, &mut out);
    at_least(&spec["ordinals"]["start"], "spec.ordinals.start", 0, &mut out);
    if spec["serviceName"].as_str().is_some_and(|s| !s.is_empty()) {
        dns_label(&spec["serviceName"], "spec.serviceName", &mut out);
    }
    let (sel, template) = (&spec["selector"], &spec["template"]);
    if workload::required_selector(sel, &mut out) {
        workload::template_selected(workload::given(sel), template, &mut out);
        pod_spec::validate_template(template, "spec.template", &mut out);
        crate::meta::validate_labels(&template["metadata"]["labels"], "spec.template.labels", &mut out);
    } else {
        out.push(workload::unconvertible(sel, ""));
    }
    workload::restarts_always(template, "StatefulSet", &mut out);
    out
}

/// `OnDelete` without rolling update parameters, or `RollingUpdate` with a partition of at least
/// 0 and, when given, some pods allowed down (at most all).
fn update_strategy_valid(s: &Value, out: &mut Vec<Cause>) {
    const AT: &str = "spec.updateStrategy.rollingUpdate";
    const ROLLING: &[(&str, &str)] = &[("partition", "Partition"), ("maxUnavailable", "MaxUnavailable")];
    let rolling = &s["rollingUpdate"];
    match s["type"].as_str().unwrap_or_default() {
        "" => out.push(Cause::required("spec.updateStrategy")),
        "OnDelete" if !rolling.is_null() => {
            out.push(invalid_shown(AT, &workload::rolling_shown(rolling, ROLLING), "only allowed for updateStrategy 'RollingUpdate'"));
        }
        "OnDelete" => {}
        "RollingUpdate" => {
            at_least(&rolling["partition"], &format!("{AT}.partition"), 0, out);
            let unavailable = &rolling["maxUnavailable"];
            if !unavailable.is_null() {
                let at = format!("{AT}.maxUnavailable");
                int_or_percent(unavailable, &at, out);
                if int_or_percent_value(unavailable) == 0 {
                    out.push(invalid(&at, unavailable, "cannot be 0"));
                }
                at_most_100_percent(unavailable, &at, out);
            }
        }
        _ => out.push(invalid_shown("spec.updateStrategy", &workload::strategy_shown(s, ROLLING), "must be 'RollingUpdate' or 'OnDelete'")),
    }
}

/// StatefulSets: only replicas, ordinals, template, update strategy, revision history limit, PVC
/// retention policy and minReadySeconds may change.
pub fn update(old: &Value, new: &mut Value) -> Vec<Cause> {
    const MUTABLE: &[&str] = &["replicas", "ordinals", "template", "updateStrategy", "revisionHistoryLimit", "persistentVolumeClaimRetentionPolicy", "minReadySeconds"];
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
            "Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
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

/// Kubernetes' warnings: the pod template's (on update, when the spec changed), fractional sizes
/// of the claim templates, and a negative revision history limit.
fn warnings(obj: &Value, old: Option<&Value>) -> Vec<String> {
    let mut out = super::workload::template_warnings(obj, old, false);
    // (Kubernetes names the claim's spec `Spec` on update.)
    let spec = if old.is_some() { ".Spec" } else { "" };
    for (i, claim) in obj["spec"]["volumeClaimTemplates"].as_array().into_iter().flatten().enumerate() {
        out.extend(crate::registry::kinds::warnings::claim_spec(&claim["spec"], &format!("spec.volumeClaimTemplates[{i}]{spec}")));
    }
    if obj["spec"]["revisionHistoryLimit"].as_i64().is_some_and(|l| l < 0) {
        out.push("spec.revisionHistoryLimit: a negative value retains all historical revisions; a value >= 0 is recommended".into());
    }
    out
}
