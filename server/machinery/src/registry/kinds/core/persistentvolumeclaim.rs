//! PersistentVolumeClaims: defaults.

use serde_json::{json, Value};

use super::persistentvolume::access_modes;
use crate::registry::kinds::fields::{age, col, set, AGE};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// How the kind is defaulted, validated, updated and printed.
pub const STRATEGY: Strategy = Strategy {
    default: defaults,
    returns_deleted: true,
    initial_status: Some(|| json!({"phase": "Pending"})),
    columns: COLUMNS,
    cells,
    ..Strategy::NONE
};

pub fn defaults(obj: &mut Value) {
    if let Some(spec) = obj.get_mut("spec").filter(|s| s.is_object()) {
        set(spec, "volumeMode", json!("Filesystem"));
    }
}

pub const COLUMNS: &[Column] = &[
    col("Status", "string", 0),
    col("Volume", "string", 0),
    col("Capacity", "string", 0),
    col("Access Modes", "string", 0),
    col("StorageClass", "string", 0),
    col("VolumeAttributesClass", "string", 0),
    AGE,
    col("VolumeMode", "string", 1),
];

/// Capacity and access modes are the bound volume's, from the status.
pub fn cells(obj: &Value) -> Vec<Value> {
    let (spec, status) = (&obj["spec"], &obj["status"]);
    vec![
        json!(status["phase"].as_str().unwrap_or_default()),
        json!(spec["volumeName"].as_str().unwrap_or_default()),
        json!(status["capacity"]["storage"].as_str().unwrap_or_default()),
        json!(access_modes(&status["accessModes"])),
        json!(spec["storageClassName"].as_str().unwrap_or_default()),
        json!(spec["volumeAttributesClassName"].as_str().unwrap_or("<unset>")),
        age(obj),
        json!(spec["volumeMode"].as_str().unwrap_or("Filesystem")),
    ]
}
