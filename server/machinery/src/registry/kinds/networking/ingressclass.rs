//! IngressClasses: parameters are cluster-scoped unless said otherwise.

use serde_json::{json, Value};

use crate::registry::kinds::fields::{age, col, set, AGE};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// How the kind is defaulted.
pub const STRATEGY: Strategy = Strategy { default: defaults, columns: COLUMNS, cells, ..Strategy::NONE };

pub fn defaults(obj: &mut Value) {
    let parameters = &mut obj["spec"]["parameters"];
    if parameters.is_object() {
        set(parameters, "scope", json!("Cluster"));
    }
}

pub const COLUMNS: &[Column] = &[col("Controller", "string", 0), col("Parameters", "string", 0), AGE];

/// Parameters as `Kind.group/name`, `<none>` without any.
pub fn cells(obj: &Value) -> Vec<Value> {
    let p = &obj["spec"]["parameters"];
    let parameters = match p["name"].as_str() {
        Some(name) => {
            let kind = p["kind"].as_str().unwrap_or_default();
            match p["apiGroup"].as_str().filter(|g| !g.is_empty()) {
                Some(group) => format!("{kind}.{group}/{name}"),
                None => format!("{kind}/{name}"),
            }
        }
        None => "<none>".into(),
    };
    vec![obj["spec"]["controller"].clone(), json!(parameters), age(obj)]
}
