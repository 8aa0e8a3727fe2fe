//! DaemonSets: defaults; validated and updated as every workload.

use serde_json::{json, Value};

use super::workload::{self, update_strategy};
use crate::registry::kinds::core::pod_spec;
use crate::registry::kinds::fields::set;
use crate::registry::kinds::Strategy;

/// How the kind is defaulted, validated, updated and printed.
pub const STRATEGY: Strategy = Strategy {
    default: defaults,
    validate: workload::validate,
    update: workload::update,
    initial_status: Some(|| json!({"currentNumberScheduled": 0, "desiredNumberScheduled": 0, "numberMisscheduled": 0, "numberReady": 0})),
    ..Strategy::NONE
};

pub fn defaults(obj: &mut Value) {
    pod_spec::template_defaults(obj);
    if let Some(spec) = obj.get_mut("spec").filter(|s| s.is_object()) {
        set(spec, "revisionHistoryLimit", json!(10));
        update_strategy(spec, "updateStrategy", json!({"maxUnavailable": 1, "maxSurge": 0}));
    }
}
