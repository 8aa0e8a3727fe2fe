//! The `scale` subresource: an `autoscaling/v1` `Scale` view of a workload's replicas.

use serde_json::{json, Value};

use crate::error::{ApiError, ApiResult};
use crate::registry::ResourceInfo;

/// The `Scale` of a workload object.
pub fn from_object(info: &ResourceInfo, obj: &Value) -> ApiResult<Value> {
    let meta = &obj["metadata"];
    let selector = obj["spec"]["selector"]
        .get("matchLabels")
        .or_else(|| obj["spec"].get("selector").filter(|s| info.resource == "replicationcontrollers" && s.is_object()))
        .and_then(Value::as_object)
        .map(|m| m.iter().map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default())).collect::<Vec<_>>().join(","))
        .unwrap_or_default();
    let mut scale = json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            "name": meta["name"],
            "namespace": meta["namespace"],
            "uid": meta["uid"],
            "resourceVersion": meta["resourceVersion"],
            "creationTimestamp": meta["creationTimestamp"],
        },
        "spec": {"replicas": obj["spec"]["replicas"].as_i64().unwrap_or(1)},
        "status": {"replicas": obj["status"]["replicas"].as_i64().unwrap_or(0)},
    });
    if !selector.is_empty() {
        scale["status"]["selector"] = json!(selector);
    }
    Ok(scale)
}

/// Applies a new `Scale` to the workload: only `spec.replicas` changes.
pub fn apply_to(obj: &Value, scale: &Value) -> ApiResult<Value> {
    let replicas = scale["spec"]["replicas"].as_i64().unwrap_or(0);
    if replicas < 0 {
        return Err(ApiError::Invalid {
            group: "autoscaling".into(),
            kind: "Scale".into(),
            name: obj["metadata"]["name"].as_str().unwrap_or_default().into(),
            causes: vec![crate::error::Cause::invalid("spec.replicas", replicas, "must be greater than or equal to 0")],
        });
    }
    let mut new = obj.clone();
    new["spec"]["replicas"] = json!(replicas);
    Ok(new)
}
