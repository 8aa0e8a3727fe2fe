//! What the `apps/v1` workloads share: the update strategy defaults, the replicated workloads'
//! defaults, the selector and template validation, and the selector fixed at creation.

use serde_json::{json, Value};

use crate::error::Cause;
use crate::registry::kinds::core::pod_spec;
use crate::registry::kinds::fields::{set, unchanged};

/// An update strategy (`spec.strategy` or `spec.updateStrategy`): type `RollingUpdate` unless
/// given, and for that type every rolling update parameter the client left out.
pub(super) fn update_strategy(spec: &mut Value, key: &str, rolling_defaults: Value) {
    set(spec, key, json!({}));
    let strategy = &mut spec[key];
    if !strategy.is_object() {
        return;
    }
    if strategy["type"].as_str().is_none_or(str::is_empty) {
        strategy["type"] = json!("RollingUpdate");
    }
    if strategy["type"] == "RollingUpdate" {
        set(strategy, "rollingUpdate", json!({}));
        if let Some(defaults) = rolling_defaults.as_object() {
            for (k, v) in defaults {
                set(&mut strategy["rollingUpdate"], k, v.clone());
            }
        }
    }
}

/// The defaults of a workload with replicas (ReplicaSets, ReplicationControllers, StatefulSets).
pub fn replicated(obj: &mut Value) {
    pod_spec::template_defaults(obj);
    if let Some(spec) = obj.get_mut("spec").filter(|s| s.is_object()) {
        set(spec, "replicas", json!(1));
    }
}

/// Workloads: a selector matching the template's labels, a valid template, replicas ≥ 0.
pub fn validate(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let spec = &obj["spec"];
    let labels = spec["template"]["metadata"]["labels"].as_object();
    match spec["selector"].as_object() {
        None => out.push(Cause::required("spec.selector")),
        Some(sel) => {
            let match_labels = sel.get("matchLabels").and_then(Value::as_object);
            if match_labels.is_none_or(|m| m.is_empty()) && sel.get("matchExpressions").and_then(Value::as_array).is_none_or(|e| e.is_empty()) {
                out.push(Cause::invalid("spec.selector", "{}", "empty selector is invalid for deployment"));
            }
            let matches = match_labels.is_none_or(|m| m.iter().all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v)));
            if !matches {
                let shown = labels.map(|l| serde_json::to_string(l).unwrap_or_default()).unwrap_or_default();
                out.push(Cause::invalid("spec.template.metadata.labels", shown, "`selector` does not match template `labels`"));
            }
        }
    }
    if spec["replicas"].as_i64().is_some_and(|r| r < 0) {
        out.push(Cause::invalid("spec.replicas", spec["replicas"].as_i64().unwrap_or_default(), "must be greater than or equal to 0"));
    }
    pod_spec::validate(&spec["template"]["spec"], "spec.template.spec", &mut out);
    out
}

/// Workloads (`apps/v1`): the selector is fixed at creation.
pub fn update(old: &Value, new: &mut Value) -> Vec<Cause> {
    let mut out = Vec::new();
    unchanged(old, new, "/spec/selector", &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selector_must_match_template() {
        let d = json!({"spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "c"}}, "spec": {"containers": [{"name": "x", "image": "y"}]}}}});
        assert_eq!(validate(&d)[0].field, "spec.template.metadata.labels");
    }

    #[test]
    fn selectors_are_fixed() {
        let old = json!({"spec": {"selector": {"matchLabels": {"a": "b"}}}});
        assert!(update(&old, &mut old.clone()).is_empty());
        let mut moved = json!({"spec": {"selector": {"matchLabels": {"a": "c"}}}});
        assert!(update(&old, &mut moved)[0].message.ends_with("field is immutable"));
    }
}
