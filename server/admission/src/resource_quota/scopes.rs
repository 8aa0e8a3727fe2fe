//! Quota scopes: the requirements a quota puts on the objects it counts (`spec.scopes`, each an
//! `Exists`, and `spec.scopeSelector`), and whether a pod or a claim meets one, as Kubernetes'
//! quota evaluators decide: `Terminating`/`NotTerminating` (an active deadline),
//! `BestEffort`/`NotBestEffort` (the QoS class), `PriorityClass` and `VolumeAttributesClass`
//! (by name, through the selector's operator), `CrossNamespacePodAffinity`. Other kinds meet
//! none.

use serde_json::{json, Map, Value};

use machinery::registry::kinds::core::pod::qos_class;
use machinery::selector::label_selector_matches;

/// The quota's scope requirements, `spec.scopes` first.
pub fn selectors(quota: &Value) -> Vec<Value> {
    let scopes = quota["spec"]["scopes"].as_array().into_iter().flatten().map(|s| json!({"scopeName": s, "operator": "Exists"}));
    scopes.chain(quota["spec"]["scopeSelector"]["matchExpressions"].as_array().into_iter().flatten().cloned()).collect()
}

/// Whether the names an object is known by under the requirement's scope (its priority class,
/// its attribute classes) satisfy the requirement, read as a label selector on that one key.
fn by_name(selector: &Value, names: &[&str]) -> bool {
    let scope = selector["scopeName"].as_str().unwrap_or_default();
    let requirement = json!({"matchExpressions": [{"key": scope, "operator": selector["operator"], "values": selector["values"]}]});
    if names.is_empty() {
        return label_selector_matches(&requirement, None);
    }
    names.iter().any(|n| label_selector_matches(&requirement, Some(&Map::from_iter([(scope.to_string(), json!(n))]))))
}

fn exists(selector: &Value) -> bool {
    selector["operator"] == "Exists"
}

/// An active deadline makes a pod `Terminating`.
pub fn terminating(pod: &Value) -> bool {
    pod["spec"]["activeDeadlineSeconds"].as_i64().is_some_and(|s| s >= 0)
}

/// The pod's QoS class as recorded, else as its resources make it.
fn best_effort(pod: &Value) -> bool {
    pod["status"]["qosClass"].as_str().filter(|c| !c.is_empty()).unwrap_or_else(|| qos_class(&pod["spec"])) == "BestEffort"
}

/// Whether any pod (anti-)affinity term reaches into other namespaces.
fn cross_namespace_affinity(pod: &Value) -> bool {
    let affinity = &pod["spec"]["affinity"];
    let crosses = |term: &Value| term["namespaces"].as_array().is_some_and(|n| !n.is_empty()) || !term["namespaceSelector"].is_null();
    ["podAffinity", "podAntiAffinity"].iter().any(|kind| {
        let a = &affinity[*kind];
        a["requiredDuringSchedulingIgnoredDuringExecution"].as_array().into_iter().flatten().any(crosses)
            || a["preferredDuringSchedulingIgnoredDuringExecution"].as_array().into_iter().flatten().any(|w| crosses(&w["podAffinityTerm"]))
    })
}

/// Whether a pod meets the requirement.
pub fn pod_matches(selector: &Value, pod: &Value) -> bool {
    match selector["scopeName"].as_str().unwrap_or_default() {
        "Terminating" => terminating(pod),
        "NotTerminating" => !terminating(pod),
        "BestEffort" => best_effort(pod),
        "NotBestEffort" => !best_effort(pod),
        "PriorityClass" => {
            let class = pod["spec"]["priorityClassName"].as_str().filter(|c| !c.is_empty());
            match exists(selector) {
                true => class.is_some(),
                false => by_name(selector, &class.into_iter().collect::<Vec<_>>()),
            }
        }
        "CrossNamespacePodAffinity" => cross_namespace_affinity(pod),
        _ => false,
    }
}

/// The attribute classes a claim names: asked for, current, and the one it is moving to.
pub fn attribute_classes(claim: &Value) -> Vec<&str> {
    let mut names: Vec<&str> = [
        &claim["spec"]["volumeAttributesClassName"],
        &claim["status"]["currentVolumeAttributesClassName"],
        &claim["status"]["modifyVolumeStatus"]["targetVolumeAttributesClassName"],
    ]
    .into_iter()
    .filter_map(|v| v.as_str().filter(|s| !s.is_empty()))
    .collect();
    names.sort();
    names.dedup();
    names
}

/// Whether a claim meets the requirement.
pub fn claim_matches(selector: &Value, claim: &Value) -> bool {
    if selector["scopeName"] != "VolumeAttributesClass" {
        return false;
    }
    let names = attribute_classes(claim);
    match exists(selector) {
        true => !names.is_empty(),
        false => by_name(selector, &names),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pods_meet_scopes_as_kubernetes_decides() {
        let quota = json!({"spec": {"scopes": ["BestEffort"], "scopeSelector": {"matchExpressions": [{"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}]}}});
        let [best_effort, priority] = selectors(&quota).try_into().unwrap();
        let plain = json!({"spec": {"containers": [{"name": "c"}]}});
        let high = json!({"spec": {"priorityClassName": "high", "activeDeadlineSeconds": 10, "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}});
        assert!(pod_matches(&best_effort, &plain) && !pod_matches(&best_effort, &high));
        assert!(!pod_matches(&priority, &plain) && pod_matches(&priority, &high));
        let not_in = json!({"scopeName": "PriorityClass", "operator": "NotIn", "values": ["high"]});
        assert!(pod_matches(&not_in, &plain) && !pod_matches(&not_in, &high));
        let term = json!({"scopeName": "Terminating", "operator": "Exists"});
        assert!(pod_matches(&term, &high) && !pod_matches(&term, &plain));
        let cross = json!({"spec": {"affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "podAffinityTerm": {"namespaces": ["other"], "topologyKey": "k"}}]}}}});
        assert!(pod_matches(&json!({"scopeName": "CrossNamespacePodAffinity", "operator": "Exists"}), &cross));
    }

    #[test]
    fn claims_meet_attribute_class_scopes() {
        let claim = json!({"spec": {"volumeAttributesClassName": "gold"}});
        assert!(claim_matches(&json!({"scopeName": "VolumeAttributesClass", "operator": "In", "values": ["gold"]}), &claim));
        assert!(!claim_matches(&json!({"scopeName": "VolumeAttributesClass", "operator": "Exists"}), &json!({"spec": {}})));
        assert!(!claim_matches(&json!({"scopeName": "BestEffort", "operator": "Exists"}), &claim));
    }
}
