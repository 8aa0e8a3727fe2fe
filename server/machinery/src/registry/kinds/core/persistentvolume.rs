//! PersistentVolumes: defaults, the status a new volume starts with, and a DELETE answered with
//! the volume.

use serde_json::{json, Value};

use crate::registry::kinds::fields::{age, col, set, AGE};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// How the kind is defaulted and deleted.
pub const STRATEGY: Strategy = Strategy {
    default: defaults,
    returns_deleted: true,
    initial_status: Some(|| json!({"phase": "Pending", "lastPhaseTransitionTime": crate::meta::now()})),
    columns: COLUMNS,
    cells,
    ..Strategy::NONE
};

/// A volume is retained when released and mounted as a filesystem; a host path has an empty
/// type.
pub fn defaults(obj: &mut Value) {
    let spec = &mut obj["spec"];
    if !spec.is_object() {
        return;
    }
    set(spec, "persistentVolumeReclaimPolicy", json!("Retain"));
    set(spec, "volumeMode", json!("Filesystem"));
    if spec["hostPath"].is_object() {
        set(&mut spec["hostPath"], "type", json!(""));
    }
}

pub const COLUMNS: &[Column] = &[
    col("Capacity", "string", 0),
    col("Access Modes", "string", 0),
    col("Reclaim Policy", "string", 0),
    col("Status", "string", 0),
    col("Claim", "string", 0),
    col("StorageClass", "string", 0),
    col("VolumeAttributesClass", "string", 0),
    col("Reason", "string", 0),
    AGE,
    col("VolumeMode", "string", 1),
];

pub fn cells(obj: &Value) -> Vec<Value> {
    let spec = &obj["spec"];
    let claim = &spec["claimRef"];
    let claim = match claim["name"].as_str() {
        Some(name) => format!("{}/{name}", claim["namespace"].as_str().unwrap_or_default()),
        None => String::new(),
    };
    vec![
        json!(spec["capacity"]["storage"].as_str().unwrap_or_default()),
        json!(access_modes(&spec["accessModes"])),
        spec["persistentVolumeReclaimPolicy"].clone(),
        json!(obj["status"]["phase"].as_str().unwrap_or_default()),
        json!(claim),
        json!(spec["storageClassName"].as_str().unwrap_or_default()),
        json!(spec["volumeAttributesClassName"].as_str().unwrap_or("<unset>")),
        json!(obj["status"]["reason"].as_str().unwrap_or_default()),
        age(obj),
        json!(spec["volumeMode"].as_str().unwrap_or("Filesystem")),
    ]
}

/// Access modes as kubectl abbreviates them: `RWO,ROX,RWX,RWOP`.
pub(crate) fn access_modes(modes: &Value) -> String {
    let short: Vec<&str> = modes
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| match m.as_str()? {
            "ReadWriteOnce" => Some("RWO"),
            "ReadOnlyMany" => Some("ROX"),
            "ReadWriteMany" => Some("RWX"),
            "ReadWriteOncePod" => Some("RWOP"),
            _ => None,
        })
        .collect();
    short.join(",")
}
