//! Deployments: defaults, validation (selector, template, strategy) and kubectl's columns; updated
//! as every workload.

use serde_json::{json, Value};

use super::workload::{self, update_strategy};
use crate::registry::kinds::core::pod_spec;
use crate::error::Cause;
use crate::registry::kinds::fields::{
    age, at_least, at_most_100_percent, col, containers, forbidden, int, int_or_percent, int_or_percent_value, invalid, required, selector, set, unsupported_shown, AGE,
};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// How the kind is defaulted, validated, updated and printed.
pub const STRATEGY: Strategy = Strategy {
    default: defaults,
    validate,
    update: workload::update,
    columns: COLUMNS,
    cells,
    initial_status: Some(|| json!({})),
    warnings: Some(warnings),
    ..Strategy::NONE
};

pub fn defaults(obj: &mut Value) {
    pod_spec::template_defaults(obj);
    if let Some(spec) = obj.get_mut("spec").filter(|s| s.is_object()) {
        set(spec, "replicas", json!(1));
        set(spec, "revisionHistoryLimit", json!(10));
        set(spec, "progressDeadlineSeconds", json!(600));
        update_strategy(spec, "strategy", json!({"maxUnavailable": "25%", "maxSurge": "25%"}));
    }
}

/// Replicas, the selector and template (as a ReplicaSet's), the strategy, then the timings.
pub fn validate(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let spec = &obj["spec"];
    at_least(&spec["replicas"], "spec.replicas", 0, &mut out);
    workload::replica_selector_and_template(spec, &mut out);
    strategy(&spec["strategy"], &mut out);
    at_least(&spec["minReadySeconds"], "spec.minReadySeconds", 0, &mut out);
    at_least(&spec["revisionHistoryLimit"], "spec.revisionHistoryLimit", 0, &mut out);
    let deadline = &spec["progressDeadlineSeconds"];
    at_least(deadline, "spec.progressDeadlineSeconds", 0, &mut out);
    if deadline.as_i64().is_some_and(|d| d <= int(&spec["minReadySeconds"])) {
        out.push(invalid("spec.progressDeadlineSeconds", deadline, "must be greater than minReadySeconds"));
    }
    out
}

/// `Recreate` without rolling update parameters, or `RollingUpdate` with parameters that let
/// the rollout move.
fn strategy(s: &Value, out: &mut Vec<Cause>) {
    let rolling = &s["rollingUpdate"];
    match s["type"].as_str() {
        Some("Recreate") if !rolling.is_null() => out.push(forbidden("spec.strategy.rollingUpdate", "may not be specified when strategy `type` is 'Recreate'")),
        Some("Recreate") => {}
        Some("RollingUpdate") if rolling.is_null() => out.push(required("spec.strategy.rollingUpdate", "this should be defaulted and never be nil")),
        Some("RollingUpdate") => {
            let (unavailable, surge) = (&rolling["maxUnavailable"], &rolling["maxSurge"]);
            int_or_percent(unavailable, "spec.strategy.rollingUpdate.maxUnavailable", out);
            int_or_percent(surge, "spec.strategy.rollingUpdate.maxSurge", out);
            if int_or_percent_value(unavailable) == 0 && int_or_percent_value(surge) == 0 {
                out.push(invalid("spec.strategy.rollingUpdate.maxUnavailable", unavailable, "may not be 0 when `maxSurge` is 0"));
            }
            at_most_100_percent(unavailable, "spec.strategy.rollingUpdate.maxUnavailable", out);
        }
        _ => {
            let shown = workload::strategy_shown(s, &[("maxUnavailable", "MaxUnavailable"), ("maxSurge", "MaxSurge")]);
            out.push(unsupported_shown("spec.strategy", &shown, &["Recreate", "RollingUpdate"]));
        }
    }
}

pub const COLUMNS: &[Column] = &[
    col("Ready", "string", 0),
    col("Up-to-date", "string", 0),
    col("Available", "string", 0),
    AGE,
    col("Containers", "string", 1),
    col("Images", "string", 1),
    col("Selector", "string", 1),
];

pub fn cells(obj: &Value) -> Vec<Value> {
    let s = &obj["status"];
    vec![
        json!(format!("{}/{}", int(&s["readyReplicas"]), obj["spec"]["replicas"].as_i64().unwrap_or(1))),
        json!(int(&s["updatedReplicas"])),
        json!(int(&s["availableReplicas"])),
        age(obj),
        containers(&obj["spec"]["template"]["spec"], "name"),
        containers(&obj["spec"]["template"]["spec"], "image"),
        json!(selector(&obj["spec"]["selector"])),
    ]
}

/// Kubernetes' warnings: a name that is no DNS label, then the pod template's (on update, when
/// the spec changed).
fn warnings(obj: &Value, old: Option<&Value>) -> Vec<String> {
    super::workload::template_warnings(obj, old, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_of_deployments() {
        let mut d = json!({"spec": {"template": {"spec": {"containers": [{"name": "a", "image": "nginx:1.2"}]}}}});
        defaults(&mut d);
        assert_eq!(d["spec"]["replicas"], 1);
        assert_eq!(d["spec"]["strategy"]["type"], "RollingUpdate");
        assert_eq!(d["spec"]["strategy"]["rollingUpdate"]["maxSurge"], "25%");
        assert_eq!(d["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"], "IfNotPresent");
        assert!(d["spec"]["template"]["spec"].get("priority").is_none(), "only pods get a priority");
        // An empty strategy, or one with only some parameters, is completed the same way.
        let mut d = json!({"spec": {"strategy": {"rollingUpdate": {"maxSurge": 2}}}});
        defaults(&mut d);
        assert_eq!(d["spec"]["strategy"], json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 2, "maxUnavailable": "25%"}}));
        let mut d = json!({"spec": {"strategy": {"type": "Recreate"}}});
        defaults(&mut d);
        assert_eq!(d["spec"]["strategy"], json!({"type": "Recreate"}));
    }
}
