//! VolumeAttachments: validation, a spec fixed at creation, not attached until the attacher
//! says so, kubectl's columns, and a DELETE answered with the attachment.

use serde_json::{json, Value};

use super::csidriver::driver_name;
use crate::error::Cause;
use crate::registry::kinds::fields::{age, col, forbidden, required, unchanged_struct, AGE};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// How the kind is validated, updated, created, printed and deleted.
pub const STRATEGY: Strategy = Strategy {
    validate,
    update,
    columns: COLUMNS,
    cells,
    returns_deleted: true,
    initial_status: Some(|| json!({"attached": false})),
    ..Strategy::NONE
};

/// An attacher, exactly one source, and the node's name.
pub fn validate(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let spec = &obj["spec"];
    driver_name(&spec["attacher"], "spec.attacher", &mut out);
    let (source, volume) = (&spec["source"], &spec["source"]["persistentVolumeName"]);
    const ONE_SOURCE: &str = "must specify exactly one of inlineVolumeSpec and persistentVolumeName";
    match (source["inlineVolumeSpec"].is_null(), volume.as_str()) {
        (true, None) => out.push(required("spec.source", ONE_SOURCE)),
        (false, Some(_)) => out.push(forbidden("spec.source", ONE_SOURCE)),
        (true, Some("")) => out.push(required("spec.source.persistentVolumeName", "must specify non empty persistentVolumeName")),
        _ => {}
    }
    subdomain(spec["nodeName"].as_str().unwrap_or_default(), "spec.nodeName", &mut out);
    if let Some(name) = volume.as_str() {
        subdomain(name, "spec.source.persistentVolumeName", &mut out);
    }
    out
}

/// A name (of a node or a volume), which must be a DNS subdomain even when empty.
fn subdomain(name: &str, field: &str, out: &mut Vec<Cause>) {
    if !crate::meta::is_dns_subdomain(name) {
        out.push(Cause::invalid(field, name, crate::meta::DNS1123_SUBDOMAIN));
    }
}

/// An attachment's spec never changes.
pub fn update(old: &Value, new: &mut Value) -> Vec<Cause> {
    let mut out = Vec::new();
    unchanged_struct(old, new, "/spec", "storage.VolumeAttachmentSpec", &mut out);
    out
}

pub const COLUMNS: &[Column] = &[
    Column { name: "Attacher", type_: "string", format: "name", description: "", priority: 0 },
    col("PV", "string", 0),
    col("Node", "string", 0),
    col("Attached", "boolean", 0),
    AGE,
];

pub fn cells(obj: &Value) -> Vec<Value> {
    let spec = &obj["spec"];
    let text = |v: &Value| json!(v.as_str().unwrap_or_default());
    vec![text(&spec["attacher"]), text(&spec["source"]["persistentVolumeName"]), text(&spec["nodeName"]), json!(obj["status"]["attached"] == true), age(obj)]
}
