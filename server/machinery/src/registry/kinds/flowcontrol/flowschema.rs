//! FlowSchemas: kubectl's columns.

use serde_json::{json, Value};

use crate::registry::kinds::fields::{age, col, set, text_or_none, AGE};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// How the kind is defaulted, validated, updated and printed.
pub const STRATEGY: Strategy = Strategy {
    columns: COLUMNS,
    cells,
    default: defaults,
    initial_status: Some(|| json!({})),
    ..Strategy::NONE
};

pub const COLUMNS: &[Column] = &[
    col("PriorityLevel", "string", 0),
    col("MatchingPrecedence", "string", 0),
    col("DistinguisherMethod", "string", 0),
    AGE,
    col("MissingPL", "string", 0),
];

pub fn cells(obj: &Value) -> Vec<Value> {
    let spec = &obj["spec"];
    let missing = obj["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == "Dangling")
        .and_then(|c| c["status"].as_str())
        .unwrap_or("?");
    vec![
        json!(spec["priorityLevelConfiguration"]["name"].as_str().unwrap_or_default()),
        json!(spec["matchingPrecedence"].as_i64().unwrap_or(1000)),
        text_or_none(&spec["distinguisherMethod"]["type"]),
        age(obj),
        json!(missing),
    ]
}

/// Kubernetes' default precedence.
pub fn defaults(obj: &mut Value) {
    if obj["spec"].is_object() {
        set(&mut obj["spec"], "matchingPrecedence", json!(1000));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row() {
        let fs = json!({"metadata": {"creationTimestamp": "t"}, "spec": {"priorityLevelConfiguration": {"name": "global-default"}, "matchingPrecedence": 9900,
            "distinguisherMethod": {"type": "ByUser"}}, "status": {"conditions": [{"type": "Dangling", "status": "False"}]}});
        assert_eq!(cells(&fs), vec![json!("global-default"), json!(9900), json!("ByUser"), json!("t"), json!("False")]);
    }
}
