//! PodDisruptionBudgets: validation, the status a new one starts with, and kubectl's columns.

use serde_json::{json, Value};

use crate::error::Cause;
use crate::registry::kinds::fields::{age, at_most_100_percent, col, go_struct, int_or_percent, invalid_shown, label_selector, selector_shown, AGE};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// How the kind is validated, created and printed.
pub const STRATEGY: Strategy = Strategy {
    validate,
    columns: COLUMNS,
    cells,
    initial_status: Some(|| json!({"currentHealthy": 0, "desiredHealthy": 0, "disruptionsAllowed": 0, "expectedPods": 0})),
    ..Strategy::NONE
};

/// One bound at most, each a count or a percentage up to 100%, and a valid selector.
pub fn validate(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let spec = &obj["spec"];
    let (min, max) = (&spec["minAvailable"], &spec["maxUnavailable"]);
    if !min.is_null() && !max.is_null() {
        let shown = go_struct(&[
            ("MinAvailable", min.to_string()),
            ("Selector", selector_shown(&spec["selector"])),
            ("MaxUnavailable", max.to_string()),
            ("UnhealthyPodEvictionPolicy", spec["unhealthyPodEvictionPolicy"].to_string()),
        ]);
        out.push(invalid_shown("spec", &shown, "minAvailable and maxUnavailable cannot be both set"));
    }
    for (bound, field) in [(min, "spec.minAvailable"), (max, "spec.maxUnavailable")] {
        int_or_percent(bound, field, &mut out);
        at_most_100_percent(bound, field, &mut out);
    }
    label_selector(&spec["selector"], "spec.selector", &mut out);
    out
}

pub const COLUMNS: &[Column] = &[col("Min Available", "string", 0), col("Max Unavailable", "string", 0), col("Allowed Disruptions", "integer", 0), AGE];

/// Each bound as given (a count or a percentage), `N/A` when not set.
pub fn cells(obj: &Value) -> Vec<Value> {
    let bound = |v: &Value| match v {
        Value::Number(n) => json!(n.to_string()),
        Value::String(s) => json!(s),
        _ => json!("N/A"),
    };
    let spec = &obj["spec"];
    vec![bound(&spec["minAvailable"]), bound(&spec["maxUnavailable"]), json!(obj["status"]["disruptionsAllowed"].as_i64().unwrap_or(0)), age(obj)]
}
