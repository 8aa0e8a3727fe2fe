//! PodTemplates: the pod spec's defaults in the template, and a DELETE answered with the
//! template.

use serde_json::Value;

use super::pod_spec;
use crate::registry::kinds::Strategy;

/// How the kind is defaulted and deleted.
pub const STRATEGY: Strategy = Strategy { default: defaults, returns_deleted: true, ..Strategy::NONE };

pub fn defaults(obj: &mut Value) {
    if let Some(spec) = obj.pointer_mut("/template/spec") {
        pod_spec::defaults(spec);
    }
}
