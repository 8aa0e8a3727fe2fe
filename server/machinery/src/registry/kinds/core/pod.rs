//! Pods: defaults (the pod spec's, service links, requests, phase, QoS class; the priority is
//! the Priority admission plugin's),
//! validation, the spec fields an update may change, and kubectl's columns.

use serde_json::{json, Value};

use super::pod_spec;
use crate::error::Cause;
use crate::expr::quantity::{parse as parse_quantity, Quantity};
use crate::registry::kinds::fields::{age, col, entries, forbidden, int, invalid, items_mut, required, set, AGE};
use crate::registry::kinds::{go_diff, go_json};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// How the kind is defaulted, validated, updated and printed.
pub const STRATEGY: Strategy = Strategy {
    default: defaults,
    validate,
    update,
    columns: COLUMNS,
    cells,
    returns_deleted: true,
    prepare_create: Some(set_qos_class),
    warnings: Some(warnings),
    // Each kubelet watches the pods bound to it.
    watch_index: Some("spec.nodeName"),
    ..Strategy::NONE
};

/// Pods get the pod spec defaults and, unlike templates, service links.
pub fn defaults(obj: &mut Value) {
    if let Some(spec) = obj.get_mut("spec").filter(|s| s.is_object()) {
        pod_spec::defaults(spec);
        set(spec, "enableServiceLinks", json!(true));
        requests_from_limits(spec);
    }
    if obj["status"]["phase"].is_null() {
        obj["status"]["phase"] = json!("Pending");
    }
    if obj["status"]["qosClass"].is_null() {
        obj["status"]["qosClass"] = json!(qos_class(&obj["spec"]));
    }
}

/// A new pod's QoS class, from its resources as admission left them (LimitRanger's defaults).
fn set_qos_class(obj: &mut Value) {
    obj["status"]["qosClass"] = json!(qos_class(&obj["spec"]));
}

/// A container's limits are its requests for the resources it requests nothing of (pods only,
/// not their templates).
fn requests_from_limits(spec: &mut Value) {
    for list in ["containers", "initContainers"] {
        for c in spec.get_mut(list).and_then(Value::as_array_mut).into_iter().flatten() {
            let Some(limits) = c["resources"]["limits"].as_object().cloned() else { continue };
            for (resource, limit) in limits {
                set(&mut c["resources"]["requests"], &resource, limit);
            }
        }
    }
}

/// The pod's quality of service: `BestEffort` without CPU or memory requests and limits,
/// `Guaranteed` when every container's requests equal its limits for both, else `Burstable`.
/// Admission reads it too (quota's BestEffort scope; LimitRanger's defaults change it).
pub fn qos_class(spec: &Value) -> &'static str {
    let containers: Vec<&Value> = ["containers", "initContainers"].iter().flat_map(|l| spec[*l].as_array().into_iter().flatten()).collect();
    let amount = |c: &Value, kind: &str, resource: &str| parse_quantity(c["resources"][kind][resource].as_str()?).ok().filter(|q| *q != Quantity::Small { value: 0, scale: 0 });
    let resources = ["cpu", "memory"];
    let any = containers.iter().any(|c| resources.iter().any(|r| amount(c, "requests", r).is_some() || amount(c, "limits", r).is_some()));
    let guaranteed = containers.iter().all(|c| resources.iter().all(|r| amount(c, "limits", r).is_some_and(|l| amount(c, "requests", r).is_none_or(|q| q == l))));
    match (any, guaranteed) {
        (false, _) => "BestEffort",
        (true, true) => "Guaranteed",
        (true, false) => "Burstable",
    }
}

pub fn validate(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    pod_spec::validate(&obj["spec"], "spec", &mut out);
    out
}

/// What a pod update may change in the spec, as Kubernetes lists it.
const UPDATABLE: &str = "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)";

/// Pods: the same containers (images may change), `activeDeadlineSeconds` only lowered,
/// tolerations only added, scheduling gates only removed; anything else in the spec is refused
/// with the diff Kubernetes prints.
pub fn update(old: &Value, new: &mut Value) -> Vec<Cause> {
    let (was, now) = (&old["spec"], &new["spec"]);
    let mut out = Vec::new();
    for list in ["containers", "initContainers"] {
        let (before, after) = (entries(&was[list]), entries(&now[list]));
        if before.len() != after.len() {
            out.push(forbidden(format!("spec.{list}"), "pod updates may not add or remove containers"));
            return out;
        }
        for (i, c) in after.iter().enumerate() {
            let image = c["image"].as_str().unwrap_or_default();
            if image.is_empty() {
                out.push(required(format!("spec.{list}[{i}].image"), ""));
            } else if image.trim() != image {
                out.push(invalid(format!("spec.{list}[{i}].image"), &c["image"], "must not have leading or trailing whitespace"));
            }
        }
    }
    match (&was["activeDeadlineSeconds"], &now["activeDeadlineSeconds"]) {
        (_, Value::Null) if !was["activeDeadlineSeconds"].is_null() => {
            out.push(invalid("spec.activeDeadlineSeconds", &Value::Null, "must not update from a positive integer to nil value"))
        }
        (before, after) if !after.is_null() && before.as_i64().is_some_and(|b| b < int(after)) => {
            out.push(invalid("spec.activeDeadlineSeconds", after, "must be less than or equal to previous value"));
            return out;
        }
        _ => {}
    }
    for t in entries(&was["tolerations"]) {
        let kept = entries(&now["tolerations"]).iter().any(|n| {
            let mut t = t.clone();
            t["tolerationSeconds"] = n["tolerationSeconds"].clone();
            t.as_object_mut().map(|o| o.retain(|_, v| !v.is_null()));
            &t == n
        });
        if !kept {
            out.push(forbidden("spec.tolerations", "existing toleration can not be modified except its tolerationSeconds"));
            break;
        }
    }
    if was == now {
        return out;
    }
    // Kubernetes' munged spec: the new one with what may change taken back from the old one.
    let mut munged = now.clone();
    for list in ["containers", "initContainers"] {
        for (c, before) in items_mut(&mut munged, list).zip(entries(&was[list])) {
            c["image"] = before["image"].clone();
        }
    }
    for field in ["activeDeadlineSeconds", "schedulingGates", "tolerations"] {
        match was.get(field) {
            Some(v) => munged[field] = v.clone(),
            None => {
                munged.as_object_mut().map(|s| s.remove(field));
            }
        }
    }
    if int(&was["terminationGracePeriodSeconds"]) < 0 && munged["terminationGracePeriodSeconds"] == 1 {
        munged["terminationGracePeriodSeconds"] = was["terminationGracePeriodSeconds"].clone();
    }
    if go_json::compact(&munged, "core.PodSpec") != go_json::compact(was, "core.PodSpec") {
        out.push(forbidden("spec", &format!("{UPDATABLE}\n{}", go_diff::diff(was, &munged, "core.PodSpec"))));
    }
    out
}

pub const COLUMNS: &[Column] = &[
    col("Ready", "string", 0),
    col("Status", "string", 0),
    col("Restarts", "string", 0),
    AGE,
    col("IP", "string", 1),
    col("Node", "string", 1),
    col("Nominated Node", "string", 1),
    col("Readiness Gates", "string", 1),
];

pub fn cells(obj: &Value) -> Vec<Value> {
    let total = obj["spec"]["containers"].as_array().map_or(0, Vec::len);
    let statuses = obj["status"]["containerStatuses"].as_array();
    let ready = statuses.map_or(0, |s| s.iter().filter(|c| c["ready"] == true).count());
    let restarts: i64 = statuses.map_or(0, |s| s.iter().map(|c| int(&c["restartCount"])).sum());
    let reason = obj["status"]["reason"].as_str();
    let phase = obj["status"]["phase"].as_str().unwrap_or("Pending");
    let status = if obj["metadata"].get("deletionTimestamp").is_some() { "Terminating" } else { reason.unwrap_or(phase) };
    vec![
        json!(format!("{ready}/{total}")),
        json!(status),
        json!(restarts.to_string()),
        age(obj),
        json!(obj["status"]["podIP"].as_str().unwrap_or("<none>")),
        json!(obj["spec"]["nodeName"].as_str().unwrap_or("<none>")),
        json!(obj["status"]["nominatedNodeName"].as_str().unwrap_or("<none>")),
        json!(readiness_gates(obj)),
    ]
}

/// How many of the pod's readiness gates hold, `<none>` without any.
fn readiness_gates(obj: &Value) -> String {
    let gates = obj["spec"]["readinessGates"].as_array().cloned().unwrap_or_default();
    if gates.is_empty() {
        return "<none>".into();
    }
    let conditions = obj["status"]["conditions"].as_array().cloned().unwrap_or_default();
    let met = gates.iter().filter(|g| conditions.iter().any(|c| c["type"] == g["conditionType"] && c["status"] == "True")).count();
    format!("{met}/{}", gates.len())
}

/// Kubernetes' warnings about a new pod: a name that is no DNS label (its hostname), then the
/// pod spec's. An update earns none.
fn warnings(obj: &Value, old: Option<&Value>) -> Vec<String> {
    if old.is_some() {
        return Vec::new();
    }
    let mut out: Vec<String> = crate::registry::kinds::warnings::name_warning(obj, "this is used in the Pod's hostname").into_iter().collect();
    out.extend(super::pod_warnings::pod(obj));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_of_pods_only() {
        let mut p = json!({"spec": {"containers": [{"name": "a", "image": "nginx", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]}});
        defaults(&mut p);
        assert_eq!(p["spec"]["containers"][0]["resources"]["requests"], json!({"cpu": "1", "memory": "1Gi"}));
        assert_eq!(p["status"]["qosClass"], "Guaranteed");
        assert_eq!(p["spec"]["restartPolicy"], "Always");
        assert_eq!(p["spec"]["dnsPolicy"], "ClusterFirst");
        assert_eq!(p["spec"]["terminationGracePeriodSeconds"], 30);
        assert_eq!(p["spec"]["containers"][0]["imagePullPolicy"], "Always");
        // The priority is the Priority admission plugin's.
        assert!(p["spec"]["priority"].is_null());
    }

    #[test]
    fn containers_are_required() {
        assert_eq!(validate(&json!({"spec": {}}))[0].field, "spec.containers");
        assert!(validate(&json!({"spec": {"containers": [{"name": "a", "image": "x"}]}})).is_empty());
    }

    #[test]
    fn enumerations_and_ports() {
        let p = json!({"spec": {"restartPolicy": "Sometimes", "containers": [{"name": "a", "image": "x", "imagePullPolicy": "Sometimes", "ports": [{"containerPort": 0}]}]}});
        let fields: Vec<String> = validate(&p).into_iter().map(|c| c.field).collect();
        assert_eq!(fields, ["spec.containers[0].ports[0].containerPort", "spec.containers[0].imagePullPolicy", "spec.restartPolicy"]);
    }

    #[test]
    fn ephemeral_containers_are_checked_as_kubernetes_checks_them() {
        let p = json!({"spec": {"containers": [{"name": "a", "image": "x"}], "ephemeralContainers": [
            {"name": "a", "image": "busybox", "targetContainerName": "nope", "ports": [{"containerPort": 80}], "volumeMounts": [{"name": "v", "mountPath": "/v", "subPath": "s"}]},
            {"name": "debug", "image": "busybox", "targetContainerName": "a", "resources": {}}
        ]}});
        let found: Vec<String> = validate(&p).into_iter().map(|c| format!("{}: {}", c.field, c.message)).collect();
        assert_eq!(
            found,
            [
                "spec.ephemeralContainers[0].name: Duplicate value: \"a\"",
                "spec.ephemeralContainers[0].targetContainerName: Not found: \"nope\"",
                "spec.ephemeralContainers[0].ports: Forbidden: cannot be set for an Ephemeral Container",
                "spec.ephemeralContainers[0].volumeMounts[0].subPath: Forbidden: cannot be set for an Ephemeral Container",
            ]
        );
    }

    #[test]
    fn updates_change_images_only() {
        let old = json!({"spec": {"containers": [{"name": "a", "image": "x:1"}], "restartPolicy": "Always"}});
        let mut image = json!({"spec": {"containers": [{"name": "a", "image": "x:2"}], "restartPolicy": "Always"}});
        assert!(update(&old, &mut image).is_empty());
        let mut policy = json!({"spec": {"containers": [{"name": "a", "image": "x:1"}], "restartPolicy": "Never"}});
        assert_eq!(update(&old, &mut policy)[0].field, "spec");
    }
}
