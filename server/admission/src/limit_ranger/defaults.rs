//! The defaults a LimitRange's `Container` limits give: each container and init container gets
//! the `defaultRequest` and `default` amounts of the resources it names none of, and the pod
//! records what was set in the `kubernetes.io/limit-ranger` annotation, in LimitRanger's words
//! (`LimitRanger plugin set: cpu, memory request for container app; cpu limit for container
//! app`).

use serde_json::{json, Map, Value};

use machinery::expr::amount::Amount;

pub const ANNOTATION: &str = "kubernetes.io/limit-ranger";

/// The range's container defaults: (requests, limits).
fn container_defaults(range: &Value) -> (Map<String, Value>, Map<String, Value>) {
    let (mut requests, mut limits) = (Map::new(), Map::new());
    for limit in range["spec"]["limits"].as_array().into_iter().flatten().filter(|l| l["type"] == "Container") {
        requests.extend(limit["defaultRequest"].as_object().cloned().unwrap_or_default());
        limits.extend(limit["default"].as_object().cloned().unwrap_or_default());
    }
    (requests, limits)
}

/// Sets on `container` the defaults it lacks; returns the resources set, in name order.
fn fill(container: &mut Value, side: &str, defaults: &Map<String, Value>) -> Vec<String> {
    let mut set = Vec::new();
    for (resource, amount) in defaults {
        if container["resources"][side].get(resource).is_none() {
            // Written as Kubernetes writes a quantity it copied: canonical (`0.1` as `100m`).
            let canonical = amount.as_str().and_then(|a| Amount::parse(a).ok()).map_or_else(|| amount.clone(), |a| json!(a.to_string()));
            container["resources"][side][resource] = canonical;
            set.push(resource.clone());
        }
    }
    set.sort();
    set
}

/// Applies one range's defaults to the pod; returns whether anything was set.
pub fn apply(range: &Value, pod: &mut Value) -> bool {
    let (requests, limits) = container_defaults(range);
    let mut notes = Vec::new();
    for (list, what) in [("containers", "container"), ("initContainers", "init container")] {
        for c in pod["spec"].get_mut(list).and_then(Value::as_array_mut).into_iter().flatten() {
            let name = c["name"].as_str().unwrap_or_default().to_string();
            let set_limits = fill(c, "limits", &limits);
            let set_requests = fill(c, "requests", &requests);
            if !set_requests.is_empty() {
                notes.push(format!("{} request for {what} {name}", set_requests.join(", ")));
            }
            if !set_limits.is_empty() {
                notes.push(format!("{} limit for {what} {name}", set_limits.join(", ")));
            }
        }
    }
    if notes.is_empty() {
        return false;
    }
    if !pod["metadata"]["annotations"].is_object() {
        pod["metadata"]["annotations"] = json!({});
    }
    pod["metadata"]["annotations"][ANNOTATION] = json!(format!("LimitRanger plugin set: {}", notes.join("; ")));
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fills_what_is_missing_and_says_so() {
        let range = json!({"spec": {"limits": [{"type": "Container", "default": {"cpu": "500m", "memory": "256Mi"}, "defaultRequest": {"cpu": "0.1", "memory": "128Mi"}}]}});
        let mut pod = json!({"metadata": {"name": "p"}, "spec": {
            "containers": [{"name": "app", "resources": {"limits": {"memory": "1Gi"}, "requests": {"memory": "1Gi"}}}],
            "initContainers": [{"name": "setup"}],
        }});
        assert!(apply(&range, &mut pod));
        assert_eq!(pod["spec"]["containers"][0]["resources"], json!({"limits": {"cpu": "500m", "memory": "1Gi"}, "requests": {"cpu": "100m", "memory": "1Gi"}}));
        assert_eq!(pod["spec"]["initContainers"][0]["resources"], json!({"limits": {"cpu": "500m", "memory": "256Mi"}, "requests": {"cpu": "100m", "memory": "128Mi"}}));
        assert_eq!(
            pod["metadata"]["annotations"][ANNOTATION],
            "LimitRanger plugin set: cpu request for container app; cpu limit for container app; cpu, memory request for init container setup; cpu, memory limit for init container setup"
        );
        let before = pod.clone();
        assert!(!apply(&range, &mut pod));
        assert_eq!(pod, before);
    }
}
