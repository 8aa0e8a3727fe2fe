//! Pods: defaults (the pod spec's, service links, requests, phase, QoS class; the priority is
//! the Priority admission plugin's),
//! validation, the spec fields an update may change, and kubectl's columns.

use serde_json::{json, Value};

use super::pod_spec;
use crate::error::Cause;
use crate::expr::quantity::{parse as parse_quantity, Quantity};
use crate::registry::kinds::fields::{age, col, int, set, AGE};
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

/// Pods: only images, `activeDeadlineSeconds` and tolerations may change in the spec.
pub fn update(old: &Value, new: &mut Value) -> Vec<Cause> {
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
    fn updates_change_images_only() {
        let old = json!({"spec": {"containers": [{"name": "a", "image": "x:1"}], "restartPolicy": "Always"}});
        let mut image = json!({"spec": {"containers": [{"name": "a", "image": "x:2"}], "restartPolicy": "Always"}});
        assert!(update(&old, &mut image).is_empty());
        let mut policy = json!({"spec": {"containers": [{"name": "a", "image": "x:1"}], "restartPolicy": "Never"}});
        assert_eq!(update(&old, &mut policy)[0].field, "spec");
    }
}
