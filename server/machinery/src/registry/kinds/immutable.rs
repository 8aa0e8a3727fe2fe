//! Update rules: what an update may not change, and what it keeps when the client leaves it
//! out, given the stored object and the new one.

use serde_json::Value;

use crate::error::Cause;

/// `field: Invalid value: ...: field is immutable` unless `old` and `new` agree at `pointer`.
fn unchanged(old: &Value, new: &Value, pointer: &str, out: &mut Vec<Cause>) {
    let (was, now) = (old.pointer(pointer), new.pointer(pointer));
    if was != now {
        let field = pointer.trim_start_matches('/').replace('/', ".");
        let shown = now.map(Value::to_string).unwrap_or_else(|| "null".into());
        out.push(Cause::invalid(field, shown.trim_matches('"'), "field is immutable"));
    }
}

/// A service keeps its cluster IPs: an update that leaves them out keeps the allocated ones,
/// and one that changes them is refused.
pub fn service(old: &Value, new: &mut Value) -> Vec<Cause> {
    let mut out = Vec::new();
    if new["spec"]["type"] == "ExternalName" || !new["spec"].is_object() {
        return out;
    }
    for field in ["clusterIP", "clusterIPs"] {
        let now = &new["spec"][field];
        let unset = now.is_null() || now == "" || now.as_array().is_some_and(Vec::is_empty);
        if unset {
            if !old["spec"][field].is_null() {
                new["spec"][field] = old["spec"][field].clone();
            }
        } else if !old["spec"][field].is_null() {
            unchanged(old, new, &format!("/spec/{field}"), &mut out);
        }
    }
    out
}

/// Bindings: the role they refer to is fixed at creation (delete and recreate to change it).
pub fn role_ref(old: &Value, new: &mut Value) -> Vec<Cause> {
    let (was, now) = (&old["roleRef"], &new["roleRef"]);
    if was == now {
        return Vec::new();
    }
    let s = |k: &str| now[k].as_str().unwrap_or_default().to_string();
    let shown = format!("rbac.RoleRef{{APIGroup:{:?}, Kind:{:?}, Name:{:?}}}", s("apiGroup"), s("kind"), s("name"));
    vec![Cause::new("FieldValueInvalid", "roleRef", format!("Invalid value: {shown}: cannot change roleRef"))]
}

/// Workloads (`apps/v1`): the selector is fixed at creation.
pub fn workload(old: &Value, new: &mut Value) -> Vec<Cause> {
    let mut out = Vec::new();
    unchanged(old, new, "/spec/selector", &mut out);
    out
}

/// StatefulSets: besides the selector, only replicas, ordinals, template, update strategy,
/// PVC retention policy and minReadySeconds may change.
pub fn statefulset(old: &Value, new: &mut Value) -> Vec<Cause> {
    const MUTABLE: &[&str] = &["replicas", "ordinals", "template", "updateStrategy", "persistentVolumeClaimRetentionPolicy", "minReadySeconds"];
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
            "Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
        )];
    }
    Vec::new()
}

/// Jobs: the selector, the pod template and the completion count are fixed.
pub fn job(old: &Value, new: &mut Value) -> Vec<Cause> {
    let mut out = Vec::new();
    for pointer in ["/spec/selector", "/spec/template", "/spec/completions"] {
        unchanged(old, new, pointer, &mut out);
    }
    out
}

/// Pods: only images, `activeDeadlineSeconds` and tolerations may change in the spec.
pub fn pod(old: &Value, new: &mut Value) -> Vec<Cause> {
    let mut expected = old["spec"].clone();
    for list in ["containers", "initContainers"] {
        let images = new["spec"][list].as_array().map(|cs| cs.iter().map(|c| c["image"].clone()).collect::<Vec<_>>());
        if let (Some(containers), Some(images)) = (expected.get_mut(list).and_then(Value::as_array_mut), images) {
            for (c, image) in containers.iter_mut().zip(images) {
                c["image"] = image;
            }
        }
    }
    for field in ["activeDeadlineSeconds", "tolerations"] {
        match new["spec"].get(field) {
            Some(v) if expected.is_object() => expected[field] = v.clone(),
            Some(_) => {}
            None => {
                expected.as_object_mut().map(|s| s.remove(field));
            }
        }
    }
    if expected != new["spec"] {
        return vec![Cause::new(
            "FieldValueForbidden",
            "spec",
            "Forbidden: pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
        )];
    }
    Vec::new()
}

/// ConfigMaps and Secrets marked `immutable: true` keep their data and the mark.
pub fn data(old: &Value, new: &mut Value) -> Vec<Cause> {
    let mut out = Vec::new();
    if old["immutable"] != true {
        return out;
    }
    for field in ["data", "binaryData"] {
        if old.get(field) != new.get(field) {
            out.push(Cause::new("FieldValueForbidden", field, "Forbidden: field is immutable when `immutable` is set"));
        }
    }
    if new["immutable"] != true {
        out.push(Cause::new("FieldValueForbidden", "immutable", "Forbidden: field is immutable when `immutable` is set"));
    }
    out
}

/// IPAddresses keep their parent.
pub fn ipaddress(old: &Value, new: &mut Value) -> Vec<Cause> {
    let mut out = Vec::new();
    unchanged(old, new, "/spec/parentRef", &mut out);
    out
}

/// ServiceCIDRs keep their ranges.
pub fn servicecidr(old: &Value, new: &mut Value) -> Vec<Cause> {
    let mut out = Vec::new();
    unchanged(old, new, "/spec/cidrs", &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pods_change_images_only() {
        let old = json!({"spec": {"containers": [{"name": "a", "image": "x:1"}], "restartPolicy": "Always"}});
        let mut image = json!({"spec": {"containers": [{"name": "a", "image": "x:2"}], "restartPolicy": "Always"}});
        assert!(pod(&old, &mut image).is_empty());
        let mut policy = json!({"spec": {"containers": [{"name": "a", "image": "x:1"}], "restartPolicy": "Never"}});
        assert_eq!(pod(&old, &mut policy)[0].field, "spec");
    }

    #[test]
    fn selectors_and_immutable_data() {
        let old = json!({"spec": {"selector": {"matchLabels": {"a": "b"}}}});
        assert!(workload(&old, &mut old.clone()).is_empty());
        let mut moved = json!({"spec": {"selector": {"matchLabels": {"a": "c"}}}});
        assert!(workload(&old, &mut moved)[0].message.ends_with("field is immutable"));

        let frozen = json!({"immutable": true, "data": {"k": "v"}});
        assert!(data(&frozen, &mut frozen.clone()).is_empty());
        let mut changed = json!({"immutable": true, "data": {"k": "w"}});
        assert_eq!(data(&frozen, &mut changed)[0].field, "data");
        let mut thawed = json!({"data": {"k": "v"}});
        assert_eq!(data(&frozen, &mut thawed)[0].field, "immutable");
    }
}
