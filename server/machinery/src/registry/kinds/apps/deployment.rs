//! Deployments: defaults and kubectl's columns; validated and updated as every workload.

use serde_json::{json, Value};

use super::workload::{self, update_strategy};
use crate::registry::kinds::core::pod_spec;
use crate::registry::kinds::fields::{age, col, containers, int, selector, set, AGE};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// How the kind is defaulted, validated, updated and printed.
pub const STRATEGY: Strategy = Strategy {
    default: defaults,
    validate: workload::validate,
    update: workload::update,
    columns: COLUMNS,
    cells,
    initial_status: Some(|| json!({})),
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
