//! Nodes: the pod CIDRs' default, the status a kubelet registers with kept, and kubectl's
//! columns.

use serde_json::{json, Value};

use crate::registry::kinds::fields::{age, col, AGE};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// How the kind is defaulted, validated, updated and printed.
pub const STRATEGY: Strategy = Strategy { default: defaults, columns: COLUMNS, cells, keeps_status: true, ..Strategy::NONE };

/// The pod CIDRs start with the pod CIDR.
pub fn defaults(obj: &mut Value) {
    let spec = &mut obj["spec"];
    if spec["podCIDR"].is_string() && spec["podCIDRs"].as_array().is_none_or(Vec::is_empty) {
        spec["podCIDRs"] = json!([spec["podCIDR"].clone()]);
    }
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
