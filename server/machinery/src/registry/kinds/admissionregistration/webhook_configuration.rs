//! Mutating and validating webhook configurations: kubectl's columns.

use serde_json::{json, Value};

use crate::registry::kinds::fields::{age, col, items, set, AGE};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// Validating webhook configurations.
pub const VALIDATING: Strategy = Strategy { default: validating_defaults, columns: COLUMNS, cells, ..Strategy::NONE };

/// Mutating webhook configurations: also called again after later mutations only if asked.
pub const MUTATING: Strategy = Strategy { default: mutating_defaults, columns: COLUMNS, cells, ..Strategy::NONE };

/// Each webhook's defaults: equivalent versions match, empty selectors, rules of any scope, a
/// 10 s timeout.
fn validating_defaults(obj: &mut Value) {
    for hook in obj["webhooks"].as_array_mut().into_iter().flatten() {
        set(hook, "matchPolicy", json!("Equivalent"));
        set(hook, "namespaceSelector", json!({}));
        set(hook, "objectSelector", json!({}));
        set(hook, "timeoutSeconds", json!(10));
        set(hook, "failurePolicy", json!("Fail"));
        for rule in hook["rules"].as_array_mut().into_iter().flatten() {
            set(rule, "scope", json!("*"));
        }
    }
}

fn mutating_defaults(obj: &mut Value) {
    validating_defaults(obj);
    for hook in obj["webhooks"].as_array_mut().into_iter().flatten() {
        set(hook, "reinvocationPolicy", json!("Never"));
    }
}

pub const COLUMNS: &[Column] = &[col("Webhooks", "integer", 0), AGE];

pub fn cells(obj: &Value) -> Vec<Value> {
    vec![json!(items(&obj["webhooks"])), age(obj)]
}
