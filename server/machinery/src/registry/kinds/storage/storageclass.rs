//! StorageClasses: defaults, kubectl's columns, and a DELETE answered with the class.

use serde_json::{json, Value};

use crate::registry::kinds::fields::{age, col, set, AGE};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// How the kind is defaulted, printed and deleted.
pub const STRATEGY: Strategy = Strategy { default: defaults, columns: COLUMNS, cells, returns_deleted: true, ..Strategy::NONE };

/// Volumes are deleted with their claims and bound at once, unless said otherwise.
pub fn defaults(obj: &mut Value) {
    set(obj, "reclaimPolicy", json!("Delete"));
    set(obj, "volumeBindingMode", json!("Immediate"));
}

pub const COLUMNS: &[Column] = &[
    col("Provisioner", "string", 0),
    col("ReclaimPolicy", "string", 0),
    col("VolumeBindingMode", "string", 0),
    col("AllowVolumeExpansion", "string", 0),
    AGE,
];

pub fn cells(obj: &Value) -> Vec<Value> {
    vec![obj["provisioner"].clone(), obj["reclaimPolicy"].clone(), obj["volumeBindingMode"].clone(), json!(obj["allowVolumeExpansion"] == true), age(obj)]
}
