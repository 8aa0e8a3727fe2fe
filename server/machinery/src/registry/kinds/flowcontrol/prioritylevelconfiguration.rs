//! PriorityLevelConfigurations: kubectl's columns.

use serde_json::{json, Value};

use crate::registry::kinds::fields::{age, col, set, AGE};
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
    col("Type", "string", 0),
    col("NominalConcurrencyShares", "string", 0),
    col("Queues", "string", 0),
    col("HandSize", "string", 0),
    col("QueueLengthLimit", "string", 0),
    AGE,
];

pub fn cells(obj: &Value) -> Vec<Value> {
    let spec = &obj["spec"];
    let none = || json!("<none>");
    let (shares, queues, hand, limit) = match spec["type"].as_str() {
        Some("Limited") => {
            let limited = &spec["limited"];
            let queuing = &limited["limitResponse"]["queuing"];
            let num = |v: &Value| v.as_i64().map_or_else(none, |n| json!(n));
            (json!(limited["nominalConcurrencyShares"].as_i64().unwrap_or(30)), num(&queuing["queues"]), num(&queuing["handSize"]), num(&queuing["queueLengthLimit"]))
        }
        _ => (json!(spec["exempt"]["nominalConcurrencyShares"].as_i64().unwrap_or(0)), none(), none(), none()),
    };
    vec![json!(spec["type"].as_str().unwrap_or_default()), shares, queues, hand, limit, age(obj)]
}

/// A limited level's shares and lending, and its queuing parameters when it queues.
pub fn defaults(obj: &mut Value) {
    let limited = &mut obj["spec"]["limited"];
    if !limited.is_object() {
        return;
    }
    set(limited, "nominalConcurrencyShares", json!(30));
    set(limited, "lendablePercent", json!(0));
    let response = &mut limited["limitResponse"];
    if response["type"] == "Queue" {
        set(response, "queuing", json!({}));
        for (k, v) in [("queues", 64), ("handSize", 8), ("queueLengthLimit", 50)] {
            set(&mut response["queuing"], k, json!(v));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows() {
        let exempt = json!({"spec": {"type": "Exempt", "exempt": {"nominalConcurrencyShares": 0}}});
        assert_eq!(cells(&exempt)[..4], [json!("Exempt"), json!(0), json!("<none>"), json!("<none>")]);
        let limited = json!({"spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 30, "limitResponse": {"type": "Queue", "queuing": {"queues": 64, "handSize": 6, "queueLengthLimit": 50}}}}});
        assert_eq!(cells(&limited)[..5], [json!("Limited"), json!(30), json!(64), json!(6), json!(50)]);
    }
}
