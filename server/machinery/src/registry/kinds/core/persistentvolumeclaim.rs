//! PersistentVolumeClaims: defaults, validation, the spec fixed at creation but for what
//! Kubernetes lets change, and kubectl's columns.

use serde_json::{json, Value};

use super::persistentvolume::{access_modes, access_modes_alone};
use crate::error::Cause;
use crate::registry::kinds::fields::{age, col, dns_subdomain, forbidden, invalid, label_selector, positive_quantity, required, set, AGE, IMMUTABLE};
use crate::expr::quantity::{parse as parse_quantity, Quantity};
use crate::registry::kinds::{go_diff, go_json, Strategy};
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
    warnings: Some(warnings),
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

/// The beta annotation that named a claim's storage class before `storageClassName`.
const BETA_CLASS: &str = "volume.beta.kubernetes.io/storage-class";

/// A claim's spec is fixed but for what Kubernetes lets change: the volume name once, the
/// storage class moved from the beta annotation or set where none was, and a bound claim's
/// requests and attributes class. The requested size may shrink only above the capacity reached,
/// and an attributes class once applied may not be taken away.
pub fn update(old: &Value, new: &mut Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let (mut was, mut now) = (old["spec"].clone(), new["spec"].clone());
    if old["spec"]["volumeName"].as_str().unwrap_or_default().is_empty() {
        was["volumeName"] = now["volumeName"].clone();
    }
    let (old_class, new_class) = (&old["metadata"]["annotations"][BETA_CLASS], &new["metadata"]["annotations"][BETA_CLASS]);
    let from_annotation = old_class.is_string()
        && was["storageClassName"].is_null()
        && now["storageClassName"].is_string()
        && &now["storageClassName"] == old_class
        && (new_class.is_null() || new_class == old_class);
    if from_annotation {
        now["storageClassName"] = Value::Null;
    } else {
        if old_class != new_class {
            out.push(invalid(format!("metadata.annotations[{BETA_CLASS}]"), &json!(new_class.as_str().unwrap_or_default()), IMMUTABLE));
        }
        if now["storageClassName"].is_string() && was["storageClassName"].is_null() && (old_class.is_null() || &now["storageClassName"] == old_class) {
            now["storageClassName"] = Value::Null;
        }
    }
    if new["status"]["phase"] == "Bound" {
        if now["resources"]["requests"].is_object() {
            now["resources"]["requests"]["storage"] = old["spec"]["resources"]["requests"]["storage"].clone();
        }
        now["volumeAttributesClassName"] = was["volumeAttributesClassName"].clone();
    }
    if go_json::compact(&now, "core.PersistentVolumeClaimSpec") != go_json::compact(&was, "core.PersistentVolumeClaimSpec") {
        let diff = go_diff::diff(&was, &now, "core.PersistentVolumeClaimSpec");
        out.push(forbidden("spec", &format!("spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims\n{diff}")));
    }
    let size = |v: &Value| parse_quantity(v.as_str().unwrap_or("0")).unwrap_or(Quantity::Small { value: 0, scale: 0 });
    let (old_size, new_size) = (size(&old["spec"]["resources"]["requests"]["storage"]), size(&new["spec"]["resources"]["requests"]["storage"]));
    if new_size.compare(&old_size).is_lt() && new_size.compare(&size(&old["status"]["capacity"]["storage"])).is_le() {
        out.push(forbidden("spec.resources.requests.storage", "field can not be less than status.capacity"));
    }
    if old["spec"]["volumeMode"] != new["spec"]["volumeMode"] {
        out.push(invalid("volumeMode", &new["spec"]["volumeMode"], IMMUTABLE));
    }
    let class = &new["spec"]["volumeAttributesClassName"];
    if old["spec"]["volumeAttributesClassName"] != *class && !old["status"]["currentVolumeAttributesClassName"].is_null() {
        match class.as_str() {
            None => out.push(forbidden("spec.volumeAttributesClassName", "update to nil is forbidden when status.currentVolumeAttributesClassName is not nil")),
            Some("") => out.push(forbidden("spec.volumeAttributesClassName", "update to empty string is forbidden when status.currentVolumeAttributesClassName is not nil")),
            Some(_) => {}
        }
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

/// Kubernetes' warnings: the deprecated storage class annotation and fractional sizes.
fn warnings(obj: &Value, _: Option<&Value>) -> Vec<String> {
    let mut out = Vec::new();
    if obj["metadata"]["annotations"].get(BETA_CLASS).is_some() {
        out.push(format!("metadata.annotations[{BETA_CLASS}]: deprecated since v1.8; use \"storageClassName\" attribute instead"));
    }
    out.extend(crate::registry::kinds::warnings::claim_spec(&obj["spec"], "spec"));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claim(phase: &str) -> Value {
        json!({
            "metadata": {"name": "c"},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}, "volumeMode": "Filesystem"},
            "status": {"phase": phase, "capacity": {"storage": "1Gi"}}
        })
    }

    #[test]
    fn a_bound_claim_may_grow_and_an_unbound_one_may_be_given_its_volume_once() {
        let mut grown = claim("Bound");
        grown["spec"]["resources"]["requests"]["storage"] = json!("2Gi");
        assert!(update(&claim("Bound"), &mut grown).is_empty());
        let mut pending = claim("Pending");
        pending["spec"]["resources"]["requests"]["storage"] = json!("2Gi");
        assert_eq!(update(&claim("Pending"), &mut pending)[0].field, "spec");
        let mut named = claim("Pending");
        named["spec"]["volumeName"] = json!("pv-1");
        assert!(update(&claim("Pending"), &mut named).is_empty());
        let mut renamed = named.clone();
        renamed["spec"]["volumeName"] = json!("pv-2");
        assert!(update(&named, &mut renamed)[0].message.contains("- \"VolumeName\": \"pv-1\",\n+ \"VolumeName\": \"pv-2\","));
    }

    #[test]
    fn the_same_size_written_otherwise_is_no_change_and_shrinking_below_capacity_is_refused() {
        let mut same = claim("Bound");
        same["spec"]["resources"]["requests"]["storage"] = json!("1024Mi");
        assert!(update(&claim("Pending"), &mut same.clone()).is_empty());
        let mut smaller = claim("Bound");
        smaller["spec"]["resources"]["requests"]["storage"] = json!("512Mi");
        let causes = update(&claim("Bound"), &mut smaller);
        assert_eq!(causes.iter().map(|c| c.field.as_str()).collect::<Vec<_>>(), ["spec.resources.requests.storage"]);
    }
}
