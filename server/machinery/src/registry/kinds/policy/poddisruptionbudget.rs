//! PodDisruptionBudgets: the status a new one starts with.

use serde_json::json;

use crate::registry::kinds::Strategy;

/// How the kind is created.
pub const STRATEGY: Strategy = Strategy {
    initial_status: Some(|| json!({"currentHealthy": 0, "desiredHealthy": 0, "disruptionsAllowed": 0, "expectedPods": 0})),
    ..Strategy::NONE
};
