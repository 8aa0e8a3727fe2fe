//! Table columns and cells of the kinds kubectl shows with their own columns.

use serde_json::{json, Value};

use crate::registry::Column;

pub(super) const fn col(name: &'static str, type_: &'static str, priority: u32) -> Column {
    Column { name, type_, format: "", description: "", priority }
}

pub(super) const AGE: Column = col("Age", "date", 0);

pub(super) fn age(obj: &Value) -> Value {
    obj["metadata"]["creationTimestamp"].clone()
}

fn int(v: &Value) -> i64 {
    v.as_i64().unwrap_or(0)
}

pub const POD_COLUMNS: &[Column] = &[
    col("Ready", "string", 0),
    col("Status", "string", 0),
    col("Restarts", "string", 0),
    AGE,
    col("IP", "string", 1),
    col("Node", "string", 1),
];

pub fn pod_cells(obj: &Value) -> Vec<Value> {
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
    ]
}

pub const DEPLOYMENT_COLUMNS: &[Column] = &[
    col("Ready", "string", 0),
    col("Up-to-date", "integer", 0),
    col("Available", "integer", 0),
    AGE,
    col("Containers", "string", 1),
    col("Images", "string", 1),
];

fn template_list(obj: &Value, field: &str) -> Value {
    let names: Vec<&str> = obj["spec"]["template"]["spec"]["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c[field].as_str())
        .collect();
    json!(names.join(","))
}

pub fn deployment_cells(obj: &Value) -> Vec<Value> {
    let s = &obj["status"];
    vec![
        json!(format!("{}/{}", int(&s["readyReplicas"]), obj["spec"]["replicas"].as_i64().unwrap_or(1))),
        json!(int(&s["updatedReplicas"])),
        json!(int(&s["availableReplicas"])),
        age(obj),
        template_list(obj, "name"),
        template_list(obj, "image"),
    ]
}

pub const REPLICASET_COLUMNS: &[Column] = &[col("Desired", "integer", 0), col("Current", "integer", 0), col("Ready", "integer", 0), AGE];

pub fn replicaset_cells(obj: &Value) -> Vec<Value> {
    let s = &obj["status"];
    vec![json!(obj["spec"]["replicas"].as_i64().unwrap_or(1)), json!(int(&s["replicas"])), json!(int(&s["readyReplicas"])), age(obj)]
}

pub const STATEFULSET_COLUMNS: &[Column] = &[col("Ready", "string", 0), AGE];

pub fn statefulset_cells(obj: &Value) -> Vec<Value> {
    vec![json!(format!("{}/{}", int(&obj["status"]["readyReplicas"]), obj["spec"]["replicas"].as_i64().unwrap_or(1))), age(obj)]
}

pub const SERVICE_COLUMNS: &[Column] = &[
    col("Type", "string", 0),
    col("Cluster-IP", "string", 0),
    col("External-IP", "string", 0),
    col("Port(s)", "string", 0),
    AGE,
    col("Selector", "string", 1),
];

pub fn service_cells(obj: &Value) -> Vec<Value> {
    let spec = &obj["spec"];
    let ports: Vec<String> = spec["ports"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| match p["nodePort"].as_i64() {
            Some(n) => format!("{}:{n}/{}", int(&p["port"]), p["protocol"].as_str().unwrap_or("TCP")),
            None => format!("{}/{}", int(&p["port"]), p["protocol"].as_str().unwrap_or("TCP")),
        })
        .collect();
    let selector = spec["selector"]
        .as_object()
        .map(|m| m.iter().map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default())).collect::<Vec<_>>().join(","))
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "<none>".into());
    vec![
        json!(spec["type"].as_str().unwrap_or("ClusterIP")),
        json!(spec["clusterIP"].as_str().unwrap_or("<none>")),
        json!("<none>"),
        json!(if ports.is_empty() { "<none>".to_string() } else { ports.join(",") }),
        age(obj),
        json!(selector),
    ]
}

pub const CONFIGMAP_COLUMNS: &[Column] = &[col("Data", "integer", 0), AGE];

fn count(v: &Value) -> usize {
    v.as_object().map_or(0, |m| m.len())
}

pub fn configmap_cells(obj: &Value) -> Vec<Value> {
    vec![json!(count(&obj["data"]) + count(&obj["binaryData"])), age(obj)]
}

pub const SECRET_COLUMNS: &[Column] = &[col("Type", "string", 0), col("Data", "integer", 0), AGE];

pub fn secret_cells(obj: &Value) -> Vec<Value> {
    vec![json!(obj["type"].as_str().unwrap_or("Opaque")), json!(count(&obj["data"])), age(obj)]
}

pub const NAMESPACE_COLUMNS: &[Column] = &[col("Status", "string", 0), AGE];

pub fn namespace_cells(obj: &Value) -> Vec<Value> {
    vec![json!(obj["status"]["phase"].as_str().unwrap_or("Active")), age(obj)]
}

pub const SERVICEACCOUNT_COLUMNS: &[Column] = &[col("Secrets", "integer", 0), AGE];

pub fn serviceaccount_cells(obj: &Value) -> Vec<Value> {
    vec![json!(obj["secrets"].as_array().map_or(0, Vec::len)), age(obj)]
}

pub const JOB_COLUMNS: &[Column] = &[col("Status", "string", 0), col("Completions", "string", 0), AGE];

pub fn job_cells(obj: &Value) -> Vec<Value> {
    let done = int(&obj["status"]["succeeded"]);
    let want = obj["spec"]["completions"].as_i64().unwrap_or(1);
    let status = if done >= want { "Complete" } else { "Running" };
    vec![json!(status), json!(format!("{done}/{want}")), age(obj)]
}

pub const CRONJOB_COLUMNS: &[Column] = &[col("Schedule", "string", 0), col("Suspend", "boolean", 0), col("Active", "integer", 0), AGE];

pub fn cronjob_cells(obj: &Value) -> Vec<Value> {
    vec![
        obj["spec"]["schedule"].clone(),
        json!(obj["spec"]["suspend"].as_bool().unwrap_or(false)),
        json!(obj["status"]["active"].as_array().map_or(0, Vec::len)),
        age(obj),
    ]
}

pub const NODE_COLUMNS: &[Column] = &[
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
pub fn node_cells(obj: &Value) -> Vec<Value> {
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

pub const EVENT_COLUMNS: &[Column] = &[
    col("Last Seen", "date", 0),
    col("Type", "string", 0),
    col("Reason", "string", 0),
    col("Object", "string", 0),
    col("Subobject", "string", 1),
    col("Source", "string", 1),
    col("Message", "string", 0),
    col("First Seen", "date", 1),
    col("Count", "string", 1),
    col("Name", "string", 1),
];

/// Events of both `v1` (`involvedObject`, `message`, `lastTimestamp`) and `events.k8s.io/v1`
/// (`regarding`, `note`, `deprecatedLastTimestamp`); the last sighting is the series' when
/// there is one. Events place their name last, among the wide columns.
pub fn event_cells(obj: &Value) -> Vec<Value> {
    let first = |fields: &[&str]| fields.iter().map(|f| obj.pointer(f)).find_map(|v| v.filter(|v| v.is_string()).cloned());
    let last_seen = first(&["/series/lastObservedTime", "/lastTimestamp", "/deprecatedLastTimestamp", "/eventTime", "/firstTimestamp"]);
    let first_seen = first(&["/firstTimestamp", "/deprecatedFirstTimestamp", "/eventTime"]);
    let target = if obj["regarding"].is_object() { &obj["regarding"] } else { &obj["involvedObject"] };
    let kind = target["kind"].as_str().unwrap_or_default().to_ascii_lowercase();
    let source = first(&["/source/component", "/reportingController", "/deprecatedSource/component"]);
    let count = obj.pointer("/series/count").or(obj.get("count")).or(obj.get("deprecatedCount")).and_then(Value::as_i64).unwrap_or(1);
    vec![
        last_seen.unwrap_or(Value::Null),
        obj["type"].clone(),
        obj["reason"].clone(),
        json!(format!("{kind}/{}", target["name"].as_str().unwrap_or_default())),
        json!(target["fieldPath"].as_str().unwrap_or_default()),
        source.unwrap_or(Value::Null),
        first(&["/message", "/note"]).unwrap_or(Value::Null),
        first_seen.unwrap_or(Value::Null),
        json!(count.to_string()),
        obj["metadata"]["name"].clone(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_status_and_roles() {
        let bare = json!({"metadata": {"name": "n"}});
        assert_eq!(node_cells(&bare)[..2], [json!("Unknown"), json!("<none>")]);
        let node = json!({
            "metadata": {"name": "n", "labels": {"node-role.kubernetes.io/control-plane": ""}},
            "spec": {"unschedulable": true},
            "status": {"conditions": [{"type": "Ready", "status": "False"}], "addresses": [{"type": "InternalIP", "address": "10.0.0.5"}]},
        });
        let cells = node_cells(&node);
        assert_eq!(cells[..2], [json!("NotReady,SchedulingDisabled"), json!("control-plane")]);
        assert_eq!((&cells[4], &cells[5]), (&json!("10.0.0.5"), &json!("<none>")));
    }
}

