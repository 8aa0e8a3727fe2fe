//! PersistentVolumeClaims: defaults.

use serde_json::{json, Value};

use crate::registry::kinds::fields::set;
use crate::registry::kinds::Strategy;

/// How the kind is defaulted, validated, updated and printed.
pub const STRATEGY: Strategy = Strategy {
    default: defaults,
    returns_deleted: true,
    initial_status: Some(|| json!({"phase": "Pending"})),
    ..Strategy::NONE
};

pub fn defaults(obj: &mut Value) {
    if let Some(spec) = obj.get_mut("spec").filter(|s| s.is_object()) {
        set(spec, "volumeMode", json!("Filesystem"));
    }
}
