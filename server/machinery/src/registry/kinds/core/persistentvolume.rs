//! PersistentVolumes: defaults, validation, a source and mode fixed at creation, the status a new
//! volume starts with, and a DELETE answered with the volume; and the access modes claims share.

use serde_json::{json, Value};

use crate::error::Cause;
use crate::registry::kinds::fields::{age, col, dns_subdomain, forbidden, invalid, positive_quantity, required, set, AGE, IMMUTABLE};
use crate::registry::kinds::{go_diff, go_json, Strategy};
use crate::registry::Column;

/// How the kind is defaulted, validated, updated and deleted.
pub const STRATEGY: Strategy = Strategy {
    default: defaults,
    validate,
    update,
    returns_deleted: true,
    initial_status: Some(|| json!({"phase": "Pending", "lastPhaseTransitionTime": crate::meta::now()})),
    columns: COLUMNS,
    cells,
    warnings: Some(warnings),
    ..Strategy::NONE
};

/// A volume is retained when released and mounted as a filesystem; a host path has an empty
/// type.
pub fn defaults(obj: &mut Value) {
    let Some(spec) = obj.get_mut("spec").filter(|s| s.is_object()) else { return };
    set(spec, "persistentVolumeReclaimPolicy", json!("Retain"));
    set(spec, "volumeMode", json!("Filesystem"));
    if spec["hostPath"].is_object() {
        set(&mut spec["hostPath"], "type", json!(""));
    }
}

/// The volume sources in the order Kubernetes checks them: each one's key, and its name in a
/// cause when it is not the first.
const SOURCES: &[(&str, &str)] = &[
    ("hostPath", "hostPath"),
    ("gcePersistentDisk", "gcePersistentDisk"),
    ("awsElasticBlockStore", "awsElasticBlockStore"),
    ("glusterfs", "glusterfs"),
    ("flocker", "flocker"),
    ("nfs", "nfs"),
    ("rbd", "rbd"),
    ("quobyte", "quobyte"),
    ("cephfs", "cephFS"),
    ("iscsi", "iscsi"),
    ("cinder", "cinder"),
    ("fc", "fc"),
    ("flexVolume", "flexVolume"),
    ("azureFile", "azureFile"),
    ("vsphereVolume", "vsphereVolume"),
    ("photonPersistentDisk", "photonPersistentDisk"),
    ("portworxVolume", "portworxVolume"),
    ("azureDisk", "azureDisk"),
    ("scaleIO", "scaleIO"),
    ("local", "local"),
    ("storageos", "storageos"),
    ("csi", "csi"),
];

/// Access modes, a capacity of storage only, exactly one source, and a class's name.
pub fn validate(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let spec = &obj["spec"];
    if spec["accessModes"].as_array().is_none_or(Vec::is_empty) {
        out.push(Cause::required("spec.accessModes"));
    }
    access_modes_alone(&spec["accessModes"], &mut out);
    let capacity = &spec["capacity"];
    let resources = capacity.as_object().map_or(0, |c| c.len());
    if resources == 0 {
        out.push(Cause::required("spec.capacity"));
    }
    if capacity["storage"].is_null() || resources > 1 {
        out.push(Cause::new("FieldValueNotSupported", "spec.capacity", format!("Unsupported value: {capacity}: supported values: \"storage\"")));
    }
    for (resource, quantity) in capacity.as_object().into_iter().flatten() {
        positive_quantity(quantity, &format!("spec.capacity[{resource}]"), &mut out);
    }
    let mut sources = SOURCES.iter().filter(|(key, _)| !spec[*key].is_null());
    if sources.next().is_none() {
        out.push(required("spec", "must specify a volume type"));
    }
    // Kubernetes never refuses a FlexVolume as a second source.
    for (_, reported) in sources.filter(|(key, _)| *key != "flexVolume") {
        out.push(forbidden(format!("spec.{reported}"), "may not specify more than 1 volume type"));
    }
    if spec["storageClassName"] != "" {
        dns_subdomain(&spec["storageClassName"], "spec.storageClassName", &mut out);
    }
    out
}

/// `ReadWriteOncePod` may not come with other access modes (of claims and volumes).
pub(crate) fn access_modes_alone(modes: &Value, out: &mut Vec<Cause>) {
    let modes: Vec<&str> = modes.as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    let others = modes.iter().any(|m| matches!(*m, "ReadWriteOnce" | "ReadOnlyMany" | "ReadWriteMany"));
    if modes.contains(&"ReadWriteOncePod") && others {
        out.push(forbidden("spec.accessModes", "may not use ReadWriteOncePod with other access modes"));
    }
}

/// A volume keeps its source (a CSI volume may gain the secret that expands it), its mode and,
/// once set, an attributes class.
pub fn update(old: &Value, new: &mut Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let mut now = new["spec"].clone();
    // A CSI volume may gain the secret that expands it.
    if old["spec"]["csi"].is_object() && old["spec"]["csi"]["controllerExpandSecretRef"].is_null() && now["csi"].is_object() {
        now["csi"]["controllerExpandSecretRef"] = Value::Null;
    }
    if go_json::compact(&now, "core.PersistentVolumeSource") != go_json::compact(&old["spec"], "core.PersistentVolumeSource") {
        let diff = go_diff::diff(&old["spec"], &now, "core.PersistentVolumeSource");
        out.push(forbidden("spec.persistentvolumesource", &format!("spec.persistentvolumesource is immutable after creation\n{diff}")));
    }
    if old["spec"]["volumeMode"] != new["spec"]["volumeMode"] {
        out.push(invalid("volumeMode", &new["spec"]["volumeMode"], IMMUTABLE));
    }
    if !old["spec"]["volumeAttributesClassName"].is_null() && new["spec"]["volumeAttributesClassName"].is_null() {
        out.push(forbidden("spec.volumeAttributesClassName", "update from non-nil value to nil is forbidden"));
    }
    out
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

/// Kubernetes' warnings: deprecated annotations, the Recycle policy, deprecated node labels in
/// the node affinity, and volume types past their time.
fn warnings(obj: &Value, _: Option<&Value>) -> Vec<String> {
    let spec = &obj["spec"];
    let mut out = Vec::new();
    for (key, message) in [
        ("volume.beta.kubernetes.io/storage-class", "deprecated since v1.8; use \"storageClassName\" attribute instead"),
        ("volume.beta.kubernetes.io/mount-options", "deprecated since v1.31; use \"mountOptions\" attribute instead"),
    ] {
        if obj["metadata"]["annotations"].get(key).is_some() {
            out.push(format!("metadata.annotations[{key}]: {message}"));
        }
    }
    if spec["persistentVolumeReclaimPolicy"] == "Recycle" {
        out.push("spec.persistentVolumeReclaimPolicy: The Recycle reclaim policy is deprecated. Instead, the recommended approach is to use dynamic provisioning.".into());
    }
    for (i, term) in spec["nodeAffinity"]["required"]["nodeSelectorTerms"].as_array().into_iter().flatten().enumerate() {
        for (j, e) in term["matchExpressions"].as_array().into_iter().flatten().enumerate() {
            let key = e["key"].as_str().unwrap_or_default();
            if let Some(m) = crate::registry::kinds::warnings::deprecated_node_label(key) {
                out.push(format!("spec.nodeAffinity.required.nodeSelectorTerms[{i}].matchExpressions[{j}].key: {key} is {m}"));
            }
        }
    }
    for (kind, message) in [
        ("cephfs", "deprecated in v1.28, non-functional in v1.31+"),
        ("photonPersistentDisk", "deprecated in v1.11, non-functional in v1.16+"),
        ("scaleIO", "deprecated in v1.16, non-functional in v1.22+"),
        ("storageOS", "deprecated in v1.22, non-functional in v1.25+"),
        ("glusterfs", "deprecated in v1.25, non-functional in v1.26+"),
        ("rbd", "deprecated in v1.28, non-functional in v1.31+"),
    ] {
        if !spec[kind].is_null() {
            out.push(format!("spec.{kind}: {message}"));
        }
    }
    out
}
