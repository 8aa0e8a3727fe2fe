//! Nodes: the pod CIDRs' default, the status a kubelet registers with kept (written whole),
//! pod CIDRs and taints checked, pod CIDRs set once, and kubectl's columns.

use serde_json::{json, Value};

use crate::error::Cause;
use crate::registry::kinds::fields::{age, cidr, col, forbidden, go_struct, qualified_name, set, AGE};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// How the kind is defaulted, validated, updated and printed.
pub const STRATEGY: Strategy = Strategy { default: defaults, validate, update, columns: COLUMNS, cells, keeps_status: true, warnings: Some(warnings), ..Strategy::NONE };

/// The node information fields a status always has (empty until a kubelet reports them).
const NODE_INFO: &[&str] =
    &["architecture", "bootID", "containerRuntimeVersion", "kernelVersion", "kubeProxyVersion", "kubeletVersion", "machineID", "operatingSystem", "osImage", "systemUUID"];

/// The pod CIDRs start with the pod CIDR; the status has its node information and kubelet
/// port, zero until reported.
pub fn defaults(obj: &mut Value) {
    let spec = &mut obj["spec"];
    if spec["podCIDR"].is_string() && spec["podCIDRs"].as_array().is_none_or(Vec::is_empty) {
        spec["podCIDRs"] = json!([spec["podCIDR"].clone()]);
    }
    let status = &mut obj["status"];
    for field in NODE_INFO {
        set(&mut status["nodeInfo"], field, json!(""));
    }
    set(&mut status["daemonEndpoints"]["kubeletEndpoint"], "Port", json!(0));
}

/// Pod CIDRs are CIDRs; taints have qualified keys and label values, one per key and effect.
pub fn validate(obj: &Value) -> Vec<Cause> {
    let spec = &obj["spec"];
    let mut out = Vec::new();
    for (i, c) in spec["podCIDRs"].as_array().into_iter().flatten().enumerate() {
        cidr(c, &format!("spec.podCIDRs[{i}]"), &mut out);
    }
    let taints = spec["taints"].as_array().map_or(&[][..], Vec::as_slice);
    for (i, t) in taints.iter().enumerate() {
        let at = format!("metadata.taints[{i}]");
        qualified_name(&json!(t["key"].as_str().unwrap_or_default()), &format!("{at}.key"), &mut out);
        if let Some(v) = t["value"].as_str() {
            crate::meta::validate_label_value(v, &format!("{at}.value"), &mut out);
        }
        if taints[..i].iter().any(|o| o["key"] == t["key"] && o["effect"] == t["effect"]) {
            let text = |f: &str| json!(t[f].as_str().unwrap_or_default()).to_string();
            let shown = go_struct(&[("Key", text("key")), ("Value", text("value")), ("Effect", text("effect")), ("TimeAdded", t["timeAdded"].to_string())]);
            out.push(Cause::new("FieldValueDuplicate", at, format!("Duplicate value: {shown}: taints must be unique by key and effect pair")));
        }
    }
    out
}

/// Pod CIDRs, once set, stay.
pub fn update(old: &Value, new: &mut Value) -> Vec<Cause> {
    let was = &old["spec"]["podCIDRs"];
    if was.as_array().is_some_and(|c| !c.is_empty()) && *was != new["spec"]["podCIDRs"] {
        return vec![forbidden("spec.podCIDRs", "node updates may not change podCIDR except from \"\" to valid")];
    }
    Vec::new()
}

pub const COLUMNS: &[Column] = &[
    col("Status", "string", 0),
    col("Roles", "string", 0),
    AGE,
    col("Version", "string", 0),
    col("Internal-IP", "string", 1),
    col("External-IP", "string", 1),
    col("OS-Image", "string", 1),
    col("Kernel-Version", "string", 1),
    col("Container-Runtime", "string", 1),
];

/// `Ready`/`NotReady` from the Ready condition, `Unknown` without one, plus
/// `SchedulingDisabled` when cordoned; roles from the `node-role.kubernetes.io/*` labels.
pub fn cells(obj: &Value) -> Vec<Value> {
    let ready = obj["status"]["conditions"].as_array().into_iter().flatten().find(|c| c["type"] == "Ready");
    let mut status = vec![match ready {
        Some(c) if c["status"] == "True" => "Ready",
        Some(_) => "NotReady",
        None => "Unknown",
    }];
    if obj["spec"]["unschedulable"] == true {
        status.push("SchedulingDisabled");
    }
    let roles: Vec<&str> = obj["metadata"]["labels"]
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(k, _)| k.strip_prefix("node-role.kubernetes.io/").filter(|r| !r.is_empty()))
        .collect();
    let address = |kind: &str| {
        let found = obj["status"]["addresses"].as_array().into_iter().flatten().find(|a| a["type"] == kind);
        json!(found.and_then(|a| a["address"].as_str()).unwrap_or("<none>"))
    };
    let info = &obj["status"]["nodeInfo"];
    let text = |v: &Value| json!(v.as_str().filter(|s| !s.is_empty()).unwrap_or("<unknown>"));
    vec![
        json!(status.join(",")),
        json!(if roles.is_empty() { "<none>".to_string() } else { roles.join(",") }),
        age(obj),
        json!(info["kubeletVersion"].as_str().unwrap_or_default()),
        address("InternalIP"),
        address("ExternalIP"),
        text(&info["osImage"]),
        text(&info["kernelVersion"]),
        text(&info["containerRuntimeVersion"]),
    ]
}

/// Kubernetes' warnings: removed and unused fields, pod CIDRs in discouraged forms.
fn warnings(obj: &Value, _: Option<&Value>) -> Vec<String> {
    let spec = &obj["spec"];
    let mut out = Vec::new();
    if !spec["configSource"].is_null() {
        out.push("spec.configSource: the feature is removed".into());
    }
    if spec["externalID"].as_str().is_some_and(|s| !s.is_empty()) {
        out.push("spec.externalID: this field is deprecated, and is unused by Kubernetes".into());
    }
    for (i, cidr) in spec["podCIDRs"].as_array().into_iter().flatten().filter_map(Value::as_str).enumerate() {
        out.extend(crate::registry::kinds::warnings::cidr_warnings(&format!("spec.podCIDRs[{i}]"), cidr));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_status_and_roles() {
        let bare = json!({"metadata": {"name": "n"}});
        assert_eq!(cells(&bare)[..2], [json!("Unknown"), json!("<none>")]);
        let node = json!({
            "metadata": {"name": "n", "labels": {"node-role.kubernetes.io/control-plane": ""}},
            "spec": {"unschedulable": true},
            "status": {"conditions": [{"type": "Ready", "status": "False"}], "addresses": [{"type": "InternalIP", "address": "10.0.0.5"}]},
        });
        let cells = cells(&node);
        assert_eq!(cells[..2], [json!("NotReady,SchedulingDisabled"), json!("control-plane")]);
        assert_eq!((&cells[4], &cells[5]), (&json!("10.0.0.5"), &json!("<none>")));
    }
}
