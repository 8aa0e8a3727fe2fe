//! The pod subresources that change one part of a pod, the rest as stored, as Kubernetes'
//! strategies for them do: `ephemeralcontainers` (ephemeral containers may be added, never
//! changed or removed) and `resize` (each container's `resources` and `resizePolicy`, matched
//! by name, without changing the pod's QoS class; anything else the client changed is left as
//! it was).

use serde_json::Value;

use machinery::error::{ApiError, ApiResult, Cause};
use machinery::registry::kinds::core::pod::qos_class;
use machinery::registry::kinds::fields::forbidden;

fn containers(v: &Value) -> &[Value] {
    v.as_array().map_or(&[], Vec::as_slice)
}

/// The stored pod with the ephemeral containers of `body`.
pub fn ephemeral_containers(old: &Value, body: &Value, name: &str) -> ApiResult<Value> {
    let (before, after) = (containers(&old["spec"]["ephemeralContainers"]), containers(&body["spec"]["ephemeralContainers"]));
    let mut causes = Vec::new();
    for was in before {
        let name_of = was["name"].as_str().unwrap_or_default();
        match after.iter().find(|c| c["name"] == was["name"]) {
            None => causes.push(forbidden("spec.ephemeralContainers", &format!("existing ephemeral containers {name_of:?} may not be removed\n"))),
            Some(now) if now != was => {
                causes.push(forbidden("spec.ephemeralContainers", &format!("existing ephemeral containers {name_of:?} may not be changed\n")))
            }
            Some(_) => {}
        }
    }
    if !causes.is_empty() {
        return Err(ApiError::Invalid { group: String::new(), kind: "Pod".into(), name: name.into(), causes });
    }
    let mut new = old.clone();
    match body["spec"].get("ephemeralContainers") {
        Some(list) => new["spec"]["ephemeralContainers"] = list.clone(),
        None => {
            new["spec"].as_object_mut().map(|s| s.remove("ephemeralContainers"));
        }
    }
    Ok(new)
}

/// The stored pod with the resources and resize policies `body` gives its containers and init
/// containers (position by position, as Kubernetes matches them), and with its pod-level
/// resources where resizing those is on (`InPlacePodLevelResourcesVerticalScaling`), checked as
/// Kubernetes checks a resize: no static or Windows pod, no container added, removed, renamed or
/// moved, no request or limit removed, nothing but cpu and memory changed (init containers'
/// only where `InPlacePodVerticalScalingInitContainers` is on, or for sidecars), and the same
/// QoS class.
pub fn resize(old: &Value, body: &Value, name: &str) -> ApiResult<Value> {
    let refused = |causes: Vec<Cause>| ApiError::Invalid { group: String::new(), kind: "Pod".into(), name: name.into(), causes };
    if old["metadata"]["annotations"]["kubernetes.io/config.mirror"].is_string() {
        return Err(refused(vec![forbidden("", "static pods cannot be resized")]));
    }
    if old["spec"]["os"]["name"] == "windows" {
        return Err(refused(vec![forbidden("", "windows pods cannot be resized")]));
    }
    let mut causes = Vec::new();
    let level_resizes = machinery::features::enabled("InPlacePodLevelResourcesVerticalScaling");
    let has_level = |pod: &Value| ["requests", "limits"].iter().any(|k| pod["spec"]["resources"][k].as_object().is_some_and(|m| !m.is_empty()));
    if !level_resizes && (has_level(old) || has_level(body)) {
        let detail = "resize of pods with pod-level resources is forbidden when InPlacePodLevelResourcesVerticalScalingEnabled feature gate is disabled";
        return Err(refused(vec![forbidden("", detail)]));
    }
    for list in ["containers", "initContainers"] {
        let (was, now) = (containers(&old["spec"][list]), containers(&body["spec"][list]));
        if was.len() != now.len() {
            causes.push(forbidden(format!("spec.{list}"), &format!("{list} may not be added or removed on resize")));
            continue;
        }
        for (i, (w, n)) in was.iter().zip(now).enumerate() {
            if w["name"] != n["name"] {
                causes.push(forbidden(format!("spec.{list}[{i}].name"), &format!("{list} may not be renamed or reordered on resize")));
            }
        }
    }
    if !causes.is_empty() {
        return Err(refused(causes));
    }
    let init_resizes = machinery::features::enabled("InPlacePodVerticalScalingInitContainers");
    let mut new = old.clone();
    for list in ["containers", "initContainers"] {
        let wanted = containers(&body["spec"][list]);
        let Some(stored) = new["spec"].get_mut(list).and_then(Value::as_array_mut) else { continue };
        for (i, (c, w)) in stored.iter_mut().zip(wanted).enumerate() {
            let sidecar = c["restartPolicy"] == "Always";
            let resizable = list == "containers" || sidecar || init_resizes;
            let at = format!("spec.{list}[{i}]");
            if !resizable {
                if c["resources"] != w["resources"] || c["resizePolicy"] != w["resizePolicy"] {
                    causes.push(forbidden("spec", "resources for non-sidecar init containers are immutable"));
                }
                continue;
            }
            for part in ["requests", "limits"] {
                let (was, now) = (&c["resources"][part], &w["resources"][part]);
                let kept = |k: &String| now.get(k).is_some();
                if was.as_object().is_some_and(|m| !m.keys().all(kept)) {
                    causes.push(forbidden(format!("{at}.resources.{part}"), &format!("resource {part} cannot be removed")));
                }
                if !same_but_cpu_memory(was, now) {
                    let detail = if list == "containers" { "only cpu and memory resources are mutable" } else { "only cpu and memory resources for init or sidecar containers are mutable" };
                    let field = if list == "containers" { "spec".to_string() } else { at.clone() };
                    causes.push(forbidden(&field, detail));
                }
            }
            for field in ["resources", "resizePolicy"] {
                match w.get(field) {
                    Some(v) => c[field] = v.clone(),
                    None => {
                        c.as_object_mut().map(|o| o.remove(field));
                    }
                }
            }
        }
    }
    if level_resizes {
        match body["spec"].get("resources") {
            Some(r) => new["spec"]["resources"] = r.clone(),
            None => {
                new["spec"].as_object_mut().map(|s| s.remove("resources"));
            }
        }
    }
    let (was, now) = (qos_class(&old["spec"]), qos_class(&new["spec"]));
    if was != now {
        // Kubernetes shows the class the pod's status holds (the stored one).
        let shown = old["status"]["qosClass"].as_str().unwrap_or(was);
        causes.insert(0, Cause::invalid("spec", shown, "Pod QOS Class may not change as a result of resizing"));
    }
    causes.dedup_by(|a, b| a.field == b.field && a.message == b.message);
    if !causes.is_empty() {
        return Err(refused(causes));
    }
    Ok(new)
}

/// Whether two resource lists differ in nothing but `cpu` and `memory`.
fn same_but_cpu_memory(a: &Value, b: &Value) -> bool {
    let others = |v: &Value| -> Vec<(String, Value)> {
        v.as_object().map_or_else(Vec::new, |m| m.iter().filter(|(k, _)| !matches!(k.as_str(), "cpu" | "memory")).map(|(k, v)| (k.clone(), v.clone())).collect())
    };
    others(a) == others(b)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn ephemeral_containers_are_only_added() {
        let old = json!({"spec": {"containers": [{"name": "app", "image": "a"}], "ephemeralContainers": [{"name": "debug", "image": "busybox"}]}});
        let added = json!({"spec": {"containers": [{"name": "app", "image": "changed"}], "ephemeralContainers": [{"name": "debug", "image": "busybox"}, {"name": "more", "image": "b"}]}});
        let new = ephemeral_containers(&old, &added, "p").unwrap();
        assert_eq!(new["spec"]["containers"][0]["image"], "a", "only ephemeral containers change");
        assert_eq!(new["spec"]["ephemeralContainers"][1]["name"], "more");
        let changed = json!({"spec": {"ephemeralContainers": [{"name": "debug", "image": "other"}]}});
        assert!(ephemeral_containers(&old, &changed, "p").is_err());
        assert!(ephemeral_containers(&old, &json!({"spec": {}}), "p").is_err());
    }

    #[test]
    fn resize_refuses_what_kubernetes_refuses() {
        let old = json!({"spec": {"containers": [{"name": "app", "resources": {"requests": {"cpu": "1", "ephemeral-storage": "1Gi"}, "limits": {"cpu": "2"}}}]}});
        let messages = |body: Value| match resize(&old, &body, "p") {
            Err(ApiError::Invalid { causes, .. }) => causes.iter().map(|c| format!("{}: {}", c.field, c.message)).collect::<Vec<_>>(),
            other => panic!("{other:?}"),
        };
        assert_eq!(messages(json!({"spec": {"containers": [{"name": "app", "resources": {"requests": {"cpu": "1", "ephemeral-storage": "2Gi"}, "limits": {"cpu": "2"}}}]}})), ["spec: Forbidden: only cpu and memory resources are mutable"]);
        assert_eq!(
            messages(json!({"spec": {"containers": [{"name": "app", "resources": {"requests": {"cpu": "1", "ephemeral-storage": "1Gi"}}}]}})),
            ["spec.containers[0].resources.limits: Forbidden: resource limits cannot be removed"]
        );
        assert_eq!(messages(json!({"spec": {"containers": [{"name": "other"}]}})), ["spec.containers[0].name: Forbidden: containers may not be renamed or reordered on resize"]);
        assert_eq!(messages(json!({"spec": {"containers": []}})), ["spec.containers: Forbidden: containers may not be added or removed on resize"]);
        let mirror = json!({"metadata": {"annotations": {"kubernetes.io/config.mirror": "x"}}, "spec": {"containers": []}});
        assert!(matches!(resize(&mirror, &mirror, "p"), Err(ApiError::Invalid { causes, .. }) if causes[0].message == "Forbidden: static pods cannot be resized"));
    }

    #[test]
    fn resize_changes_resources_only() {
        let old = json!({"spec": {"containers": [{"name": "app", "image": "a", "resources": {"requests": {"cpu": "1"}}}]}});
        let body = json!({"spec": {"containers": [{"name": "app", "image": "b", "resources": {"requests": {"cpu": "2"}}}]}});
        let new = resize(&old, &body, "p").unwrap();
        assert_eq!(new["spec"]["containers"][0], json!({"name": "app", "image": "a", "resources": {"requests": {"cpu": "2"}}}));
        // Burstable to Guaranteed is a new QoS class.
        let guaranteed = json!({"spec": {"containers": [{"name": "app", "resources": {"requests": {"cpu": "2", "memory": "1Gi"}, "limits": {"cpu": "2", "memory": "1Gi"}}}]}});
        assert!(resize(&old, &guaranteed, "p").is_err());
    }
}
