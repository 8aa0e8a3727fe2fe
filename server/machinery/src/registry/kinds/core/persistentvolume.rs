//! PersistentVolumes: defaults, the status a new volume starts with, and a DELETE answered with
//! the volume.

use serde_json::{json, Value};

use crate::registry::kinds::fields::set;
use crate::registry::kinds::Strategy;

/// How the kind is defaulted and deleted.
pub const STRATEGY: Strategy = Strategy {
    default: defaults,
    returns_deleted: true,
    initial_status: Some(|| json!({"phase": "Pending", "lastPhaseTransitionTime": crate::meta::now()})),
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
