//! What the workloads share: the update strategy defaults, the replicated workloads' defaults,
//! the selector and pod template validation, and the selector fixed at creation.

use serde_json::{json, Value};

use crate::error::Cause;
use crate::registry::kinds::core::pod_spec;
use crate::registry::kinds::fields::{forbidden, go_struct, invalid, invalid_shown, label_selector, selector_shown, selects, selects_all, set, unsupported};

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

/// A selector that must be set and valid. Returns whether Kubernetes can convert it into a
/// selector: a missing one converts, into one that selects nothing. The typed decoding turns a
/// missing selector into an empty one, so an empty one is taken as missing (Kubernetes would
/// refuse it too, as empty).
pub(crate) fn required_selector(sel: &Value, out: &mut Vec<Cause>) -> bool {
    if selects_all(sel) || sel.is_null() {
        out.push(Cause::required("spec.selector"));
        return true;
    }
    label_selector(sel, "spec.selector", out)
}

/// A required selector as it was given: an empty one is taken as missing (see
/// [`required_selector`]).
pub(crate) fn given(sel: &Value) -> &Value {
    if selects_all(sel) {
        &Value::Null
    } else {
        sel
    }
}

/// `spec.selector` as Kubernetes reports one it cannot convert, with `detail`.
pub(crate) fn unconvertible(sel: &Value, detail: &str) -> Cause {
    invalid_shown("spec.selector", &selector_shown(sel), detail)
}

/// The template's labels must be selected (unless the selector selects everything; a missing
/// one selects nothing).
pub(crate) fn template_selected(sel: &Value, template: &Value, out: &mut Vec<Cause>) {
    let labels = &template["metadata"]["labels"];
    if !selects_all(sel) && !selects(sel, labels) {
        out.push(invalid("spec.template.metadata.labels", labels, "`selector` does not match template `labels`"));
    }
}

/// The template of a workload whose pods run forever: restarted always, without a deadline
/// (`kind` names the kind in Kubernetes' words).
pub(crate) fn restarts_always(template: &Value, kind: &str, out: &mut Vec<Cause>) {
    let spec = &template["spec"];
    if spec["restartPolicy"] != "Always" {
        out.push(unsupported("spec.template.spec.restartPolicy".into(), spec["restartPolicy"].as_str().unwrap_or_default(), &["Always"]));
    }
    if !spec["activeDeadlineSeconds"].is_null() {
        out.push(forbidden("spec.template.spec.activeDeadlineSeconds", &format!("activeDeadlineSeconds in {kind} is not Supported")));
    }
}

/// The pod template of a ReplicaSet (and of a Deployment, checked as its ReplicaSets'): selected
/// by the selector, valid, its pods restarted always.
pub(crate) fn replica_template(sel: &Value, template: &Value, out: &mut Vec<Cause>) {
    template_selected(sel, template, out);
    pod_spec::validate_template(template, "spec.template", out);
    restarts_always(template, "ReplicaSet", out);
}

/// The selector and pod template of a ReplicaSet or Deployment.
pub(crate) fn replica_selector_and_template(spec: &Value, out: &mut Vec<Cause>) {
    let sel = &spec["selector"];
    if required_selector(sel, out) {
        replica_template(given(sel), &spec["template"], out);
    } else {
        out.push(unconvertible(sel, "invalid label selector"));
    }
}

/// An update strategy as Kubernetes prints it (`{"Type":...,"RollingUpdate":...}`), the
/// rolling update's fields given as (JSON name, Go name) in Go's order.
pub(crate) fn strategy_shown(strategy: &Value, rolling: &[(&str, &str)]) -> String {
    go_struct(&[("Type", strategy["type"].to_string()), ("RollingUpdate", rolling_shown(&strategy["rollingUpdate"], rolling))])
}

/// Rolling update parameters as Kubernetes prints them, `null` when there are none.
pub(crate) fn rolling_shown(r: &Value, fields: &[(&str, &str)]) -> String {
    match r.is_object() {
        true => go_struct(&fields.iter().map(|(json, go)| (*go, r[*json].to_string())).collect::<Vec<_>>()),
        false => "null".into(),
    }
}

/// Workloads (`apps/v1`): the selector is fixed at creation.
pub fn update(old: &Value, new: &mut Value) -> Vec<Cause> {
    let mut out = Vec::new();
    selector_fixed(old, new, &mut out);
    out
}

/// `spec.selector` may not change (printed as Kubernetes prints a selector when it does).
pub(crate) fn selector_fixed(old: &Value, new: &Value, out: &mut Vec<Cause>) {
    if old["spec"]["selector"] != new["spec"]["selector"] {
        out.push(invalid_shown("spec.selector", &selector_shown(&new["spec"]["selector"]), "field is immutable"));
    }
}

/// A workload's warnings: on create, a name that is no DNS label (for the kinds whose pods take
/// it); then its pod template's, on update only when the spec changed.
pub fn template_warnings(obj: &Value, old: Option<&Value>, named: bool) -> Vec<String> {
    use crate::registry::kinds::warnings::{name_warning, POD_NAMES};
    let mut out: Vec<String> = match (old, named) {
        (None, true) => name_warning(obj, POD_NAMES).into_iter().collect(),
        _ => Vec::new(),
    };
    if old.is_none_or(|o| o["spec"] != obj["spec"]) && obj["spec"]["template"].is_object() {
        out.extend(crate::registry::kinds::core::pod_warnings::template(&obj["spec"]["template"], "spec.template"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selector_must_match_template() {
        let spec = json!({"selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "c"}}, "spec": {"restartPolicy": "Always", "containers": [{"name": "x", "image": "y"}]}}});
        let mut out = Vec::new();
        replica_selector_and_template(&spec, &mut out);
        assert_eq!(out[0].message, "Invalid value: {\"a\":\"c\"}: `selector` does not match template `labels`");
        let mut out = Vec::new();
        replica_selector_and_template(&json!({"selector": {"matchExpressions": [{"key": "a", "operator": "Equals", "values": ["b"]}]}}), &mut out);
        let fields: Vec<&str> = out.iter().map(|c| c.field.as_str()).collect();
        assert_eq!(fields, ["spec.selector.matchExpressions[0].operator", "spec.selector"]);
    }

    #[test]
    fn selectors_are_fixed() {
        let old = json!({"spec": {"selector": {"matchLabels": {"a": "b"}}}});
        assert!(update(&old, &mut old.clone()).is_empty());
        let mut moved = json!({"spec": {"selector": {"matchLabels": {"a": "c"}}}});
        assert!(update(&old, &mut moved)[0].message.ends_with("field is immutable"));
    }
}
