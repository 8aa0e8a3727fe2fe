//! LimitRanges: a container limit's default and default request come from its maximum.

use serde_json::Value;

use crate::registry::kinds::Strategy;

/// How the kind is defaulted.
pub const STRATEGY: Strategy = Strategy { default: defaults, ..Strategy::NONE };

/// For each `Container` item, `default` takes what `max` names and it lacks, and
/// `defaultRequest` what `default` names and it lacks.
pub fn defaults(obj: &mut Value) {
    for item in obj["spec"]["limits"].as_array_mut().into_iter().flatten() {
        if item["type"] != "Container" {
            continue;
        }
        fill(item, "default", "max");
        fill(item, "defaultRequest", "default");
    }
}

fn fill(item: &mut Value, into: &str, from: &str) {
    let Some(source) = item[from].as_object().cloned() else { return };
    for (resource, quantity) in source {
        if item[into][&resource].is_null() {
            item[into][&resource] = quantity;
        }
    }
}
