//! PriorityClasses: defaults, the values reserved for the system's classes, and the value and
//! preemption policy fixed at creation.

use serde_json::{json, Value};

use crate::error::Cause;
use crate::registry::kinds::fields::{age, col, forbidden, set, unchanged, AGE};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// How the kind is defaulted, validated, updated and printed.
pub const STRATEGY: Strategy = Strategy {
    default: defaults,
    validate,
    update,
    columns: COLUMNS,
    cells,
    generation_fixed: true,
    ..Strategy::NONE
};

pub fn defaults(obj: &mut Value) {
    set(obj, "preemptionPolicy", json!("PreemptLowerPriority"));
}

/// The highest value a class not of the system may have.
const HIGHEST_USER_PRIORITY: i64 = 1_000_000_000;

/// The system's classes: name, value, whether global default.
const SYSTEM_CLASSES: &[(&str, i64, bool)] = &[("system-node-critical", 2_000_001_000, false), ("system-cluster-critical", 2_000_000_000, false)];

pub fn validate(obj: &Value) -> Vec<Cause> {
    let name = obj["metadata"]["name"].as_str().unwrap_or_default();
    let value = obj["value"].as_i64().unwrap_or(0);
    let global = obj["globalDefault"] == true;
    let mut out = Vec::new();
    if name.starts_with("system-") {
        let problem = match SYSTEM_CLASSES.iter().find(|c| c.0 == name) {
            None => Some(format!("{name} is not a known system priority class")),
            Some(c) if c.1 != value => Some(format!("value of {name} PriorityClass must be {}", c.1)),
            Some(c) if c.2 != global => Some(format!("globalDefault of {name} PriorityClass must be {}", c.2)),
            Some(_) => None,
        };
        if let Some(p) = problem {
            out.push(forbidden("metadata.name", &format!("priority class names with 'system-' prefix are reserved for system use only. error: {p}")));
        }
    } else if value > HIGHEST_USER_PRIORITY {
        out.push(forbidden("value", &format!("maximum allowed value of a user defined priority is {HIGHEST_USER_PRIORITY}")));
    }
    out
}

/// The value and the preemption policy are fixed at creation.
pub fn update(old: &Value, new: &mut Value) -> Vec<Cause> {
    let mut out = Vec::new();
    if old["value"] != new["value"] {
        out.push(forbidden("value", "may not be changed in an update."));
    }
    unchanged(old, new, "/preemptionPolicy", &mut out);
    out
}

pub const COLUMNS: &[Column] = &[col("Value", "integer", 0), col("Global-Default", "boolean", 0), AGE, col("PreemptionPolicy", "string", 0)];

pub fn cells(obj: &Value) -> Vec<Value> {
    vec![json!(obj["value"].as_i64().unwrap_or(0)), json!(obj["globalDefault"] == true), age(obj), obj["preemptionPolicy"].clone()]
}
