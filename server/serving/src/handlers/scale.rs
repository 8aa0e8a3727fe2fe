//! The `scale` subresource: an `autoscaling/v1` `Scale` view of a workload's replicas, or of a
//! custom resource's, at the paths its definition names (`specReplicasPath`,
//! `statusReplicasPath`, `labelSelectorPath`).

use serde_json::{json, Value};

use machinery::error::{ApiError, ApiResult};
use machinery::registry::{custom, ResourceInfo};

/// Where an object keeps what its `Scale` shows.
struct Paths {
    spec_replicas: Vec<String>,
    status_replicas: Vec<String>,
    selector: Option<Vec<String>>,
}

/// A definition's `.spec.replicas` as its segments.
fn segments(path: &str) -> Vec<String> {
    path.trim_start_matches('.').split('.').filter(|s| !s.is_empty()).map(str::to_string).collect()
}

fn at<'a>(obj: &'a Value, path: &[String]) -> Option<&'a Value> {
    path.iter().try_fold(obj, |v, k| v.get(k))
}

fn paths(info: &ResourceInfo) -> Option<Paths> {
    let scale = custom::version(info)?.scale.clone()?;
    Some(Paths {
        spec_replicas: segments(&scale.spec_replicas_path),
        status_replicas: segments(&scale.status_replicas_path),
        selector: scale.label_selector_path.as_deref().map(segments),
    })
}

/// The `Scale` of a workload object.
pub fn from_object(info: &ResourceInfo, obj: &Value) -> ApiResult<Value> {
    let meta = &obj["metadata"];
    let (spec, status, selector) = match paths(info) {
        Some(p) => (
            at(obj, &p.spec_replicas).and_then(Value::as_i64).unwrap_or(0),
            at(obj, &p.status_replicas).and_then(Value::as_i64).unwrap_or(0),
            p.selector.and_then(|s| at(obj, &s).and_then(Value::as_str).map(str::to_string)).unwrap_or_default(),
        ),
        None => (
            obj["spec"]["replicas"].as_i64().unwrap_or(1),
            obj["status"]["replicas"].as_i64().unwrap_or(0),
            obj["spec"]["selector"]
                .get("matchLabels")
                .or_else(|| obj["spec"].get("selector").filter(|s| info.resource == "replicationcontrollers" && s.is_object()))
                .and_then(Value::as_object)
                .map(|m| m.iter().map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default())).collect::<Vec<_>>().join(","))
                .unwrap_or_default(),
        ),
    };
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
        "spec": {"replicas": spec},
        "status": {"replicas": status},
    });
    if !selector.is_empty() {
        scale["status"]["selector"] = json!(selector);
    }
    Ok(scale)
}

/// Applies a new `Scale` to the object: only its spec replicas change.
pub fn apply_to(info: &ResourceInfo, obj: &Value, scale: &Value) -> ApiResult<Value> {
    let replicas = scale["spec"]["replicas"].as_i64().unwrap_or(0);
    if replicas < 0 {
        return Err(ApiError::Invalid {
            group: "autoscaling".into(),
            kind: "Scale".into(),
            name: obj["metadata"]["name"].as_str().unwrap_or_default().into(),
            causes: vec![machinery::error::Cause::invalid("spec.replicas", replicas, "must be greater than or equal to 0")],
        });
    }
    let path = paths(info).map_or_else(|| vec!["spec".to_string(), "replicas".to_string()], |p| p.spec_replicas);
    let mut new = obj.clone();
    let mut node = &mut new;
    for key in &path {
        if !node.is_object() {
            *node = json!({});
        }
        node = node.as_object_mut().expect("made an object").entry(key.clone()).or_insert(Value::Null);
    }
    *node = json!(replicas);
    Ok(new)
}
