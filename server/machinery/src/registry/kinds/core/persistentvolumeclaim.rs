//! PersistentVolumeClaims: defaults, validation, a volume mode fixed at creation, and kubectl's
//! columns.

use serde_json::{json, Value};

use super::persistentvolume::{access_modes, access_modes_alone};
use crate::error::Cause;
use crate::registry::kinds::fields::{age, col, dns_subdomain, invalid, label_selector, positive_quantity, required, set, AGE, IMMUTABLE};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// How the kind is defaulted, validated, updated and printed.
pub const STRATEGY: Strategy = Strategy {
    default: defaults,
    validate,
    update,
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

/// Access modes, a selector, a storage request above zero, and classes' names.
pub fn validate(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let spec = &obj["spec"];
    if spec["accessModes"].as_array().is_none_or(Vec::is_empty) {
        out.push(required("spec.accessModes", "at least 1 access mode is required"));
    }
    label_selector(&spec["selector"], "spec.selector", &mut out);
    access_modes_alone(&spec["accessModes"], &mut out);
    let storage = &spec["resources"]["requests"]["storage"];
    if storage.is_null() {
        out.push(Cause::required("spec.resources[storage]"));
    }
    positive_quantity(storage, "spec.resources[storage]", &mut out);
    for class in ["storageClassName", "volumeAttributesClassName"] {
        if spec[class] != "" {
            dns_subdomain(&spec[class], &format!("spec.{class}"), &mut out);
        }
    }
    out
}

/// A claim keeps its volume mode.
pub fn update(old: &Value, new: &mut Value) -> Vec<Cause> {
    let mut out = Vec::new();
    if old["spec"]["volumeMode"] != new["spec"]["volumeMode"] {
        out.push(invalid("volumeMode", &new["spec"]["volumeMode"], IMMUTABLE));
    }
    out
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
