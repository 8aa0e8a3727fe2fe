//! RuntimeClasses: validation, a handler fixed at creation, and kubectl's columns.

use serde_json::{json, Value};

use crate::error::Cause;
use crate::registry::kinds::fields::{age, col, dns_label, invalid, nonnegative_quantity, qualified_name, required_str, unchanged, unsupported, AGE};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// How the kind is validated, updated and printed.
pub const STRATEGY: Strategy = Strategy { validate, update, columns: COLUMNS, cells, warnings: Some(warnings), ..Strategy::NONE };

/// A handler named as a DNS label, an overhead that is not negative, and scheduling
/// constraints made of a node selector and tolerations.
pub fn validate(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    required_str(&obj["handler"], "handler", &mut out);
    if obj["handler"] != "" {
        dns_label(&obj["handler"], "handler", &mut out);
    }
    for (resource, quantity) in obj["overhead"]["podFixed"].as_object().into_iter().flatten() {
        nonnegative_quantity(quantity, &format!("overhead.limits[{resource}]"), &mut out);
    }
    let scheduling = &obj["scheduling"];
    crate::meta::validate_labels(&scheduling["nodeSelector"], "scheduling.nodeSelector", &mut out);
    for (i, t) in scheduling["tolerations"].as_array().into_iter().flatten().enumerate() {
        toleration(t, &format!("scheduling.tolerations[{i}]"), &mut out);
    }
    out
}

/// One toleration: a key (only `Exists` may leave it out), an operator and a value that agree,
/// and an effect (`NoExecute` when it lasts a number of seconds). Admission plugins' configured
/// tolerations are checked with it too.
pub fn toleration(t: &Value, at: &str, out: &mut Vec<Cause>) {
    let key = t["key"].as_str().unwrap_or_default();
    let operator = t["operator"].as_str().unwrap_or_default();
    let effect = t["effect"].as_str().unwrap_or_default();
    if !key.is_empty() {
        qualified_name(&t["key"], &format!("{at}.key"), out);
    } else if operator != "Exists" {
        out.push(invalid(format!("{at}.operator"), &json!(operator), "operator must be Exists when `key` is empty, which means \"match all values and all keys\""));
    }
    if !t["tolerationSeconds"].is_null() && effect != "NoExecute" {
        out.push(invalid(format!("{at}.effect"), &json!(effect), "effect must be 'NoExecute' when `tolerationSeconds` is set"));
    }
    match operator {
        "Equal" | "" => crate::meta::validate_label_value(t["value"].as_str().unwrap_or_default(), &format!("{at}.operator"), out),
        "Exists" if t["value"].as_str().is_some_and(|v| !v.is_empty()) => {
            out.push(invalid(format!("{at}.operator"), &t["value"], "value must be empty when `operator` is 'Exists'"))
        }
        "Exists" => {}
        "Lt" | "Gt" => out.push(unsupported(format!("{at}.operator"), operator, &["Equal", "Exists", "Lt", "Gt"])),
        _ => out.push(unsupported(format!("{at}.operator"), operator, &["Equal", "Exists"])),
    }
    if !effect.is_empty() && !matches!(effect, "NoSchedule" | "PreferNoSchedule" | "NoExecute") {
        out.push(unsupported(format!("{at}.effect"), effect, &["NoSchedule", "PreferNoSchedule", "NoExecute"]));
    }
}

/// A class keeps its handler.
pub fn update(old: &Value, new: &mut Value) -> Vec<Cause> {
    let mut out = Vec::new();
    unchanged(old, new, "/handler", &mut out);
    out
}

pub const COLUMNS: &[Column] = &[col("Handler", "string", 0), AGE];

pub fn cells(obj: &Value) -> Vec<Value> {
    vec![json!(obj["handler"].as_str().unwrap_or_default()), age(obj)]
}

/// Kubernetes' warnings: deprecated node labels in the scheduling node selector.
fn warnings(obj: &Value, _: Option<&Value>) -> Vec<String> {
    let selector = obj["scheduling"]["nodeSelector"].as_object();
    let deprecated = selector.into_iter().flat_map(|m| m.keys()).filter_map(|k| crate::registry::kinds::warnings::deprecated_node_label(k));
    deprecated.map(|m| format!("scheduling.nodeSelector: {m}")).collect()
}
