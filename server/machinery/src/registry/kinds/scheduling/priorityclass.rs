//! PriorityClasses: defaults.

use serde_json::{json, Value};

use crate::registry::kinds::fields::set;
use crate::registry::kinds::Strategy;

/// How the kind is defaulted, validated, updated and printed.
pub const STRATEGY: Strategy = Strategy {
    default: defaults,
    ..Strategy::NONE
};

pub fn defaults(obj: &mut Value) {
    set(obj, "preemptionPolicy", json!("PreemptLowerPriority"));
}
