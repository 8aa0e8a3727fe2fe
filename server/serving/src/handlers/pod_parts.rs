//! The pod subresources that change one part of a pod, the rest as stored, as Kubernetes'
//! strategies for them do: `ephemeralcontainers` (ephemeral containers may be added, never
//! changed or removed) and `resize` (each container's `resources` and `resizePolicy`, matched
//! by name, without changing the pod's QoS class; anything else the client changed is left as
//! it was).

use serde_json::Value;

use machinery::error::{ApiError, ApiResult, Cause};
use machinery::registry::kinds::core::pod::qos_class;

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
            None => causes.push(Cause::new("FieldValueForbidden", "spec.ephemeralContainers", format!("Forbidden: existing ephemeral containers {name_of:?} may not be removed\n"))),
            Some(now) if now != was => {
                causes.push(Cause::new("FieldValueForbidden", "spec.ephemeralContainers", format!("Forbidden: existing ephemeral containers {name_of:?} may not be changed\n")))
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

/// The stored pod with the resources and resize policies `body` gives its containers (and its
/// init containers); refused when that would change the pod's QoS class.
pub fn resize(old: &Value, body: &Value, name: &str) -> ApiResult<Value> {
    let mut new = old.clone();
    for list in ["containers", "initContainers"] {
        let wanted = containers(&body["spec"][list]).to_vec();
        let Some(stored) = new["spec"].get_mut(list).and_then(Value::as_array_mut) else { continue };
        for c in stored.iter_mut() {
            let Some(w) = wanted.iter().find(|w| w["name"] == c["name"]) else { continue };
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
    let (was, now) = (qos_class(&old["spec"]), qos_class(&new["spec"]));
    if was != now {
        // Kubernetes shows the class the pod's status holds (the stored one).
        let shown = old["status"]["qosClass"].as_str().unwrap_or(was);
        let cause = Cause::invalid("spec", shown, "Pod QOS Class may not change as a result of resizing");
        return Err(ApiError::Invalid { group: String::new(), kind: "Pod".into(), name: name.into(), causes: vec![cause] });
    }
    Ok(new)
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
