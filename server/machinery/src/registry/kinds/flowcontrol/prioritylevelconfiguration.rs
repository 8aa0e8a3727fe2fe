//! PriorityLevelConfigurations: defaults, validation and kubectl's columns.

use serde_json::{json, Value};

use crate::error::Cause;
use crate::registry::kinds::fields::{age, col, forbidden, invalid, one_of, required, set, AGE};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// How the kind is defaulted, validated, updated and printed.
pub const STRATEGY: Strategy = Strategy {
    columns: COLUMNS,
    cells,
    default: defaults,
    validate,
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
    // Looked up without indexing, which would write `"limited": null` into an exempt level.
    let Some(limited) = obj.pointer_mut("/spec/limited").filter(|l| l.is_object()) else { return };
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

/// The most queues a level may have.
const MAX_QUEUES: i64 = 512;

/// The bits of hash shuffle sharding has to deal hands from.
const MAX_HASH_BITS: f64 = 60.0;

/// Only the level named `exempt` is exempt; a limited level has its limits, and queues only
/// when its limit response is to queue.
pub fn validate(obj: &Value) -> Vec<Cause> {
    let spec = &obj["spec"];
    let mut out = Vec::new();
    let kind = spec["type"].as_str().unwrap_or_default();
    if (obj["metadata"]["name"] == "exempt") != (kind == "Exempt") {
        out.push(invalid("spec.type", &spec["type"], "must be 'Exempt' if and only if `name` is 'exempt'"));
    }
    match kind {
        "Exempt" => {
            if !spec["limited"].is_null() {
                out.push(forbidden("spec.limited", "must be nil if the type is not Limited"));
            }
            let exempt = &spec["exempt"];
            shares_and_lending(exempt, "spec.exempt", &mut out);
        }
        "Limited" => {
            if !spec["exempt"].is_null() {
                out.push(forbidden("spec.exempt", "must be nil if the type is Limited"));
            }
            let limited = &spec["limited"];
            if limited.is_null() {
                out.push(required("spec.limited", "must not be empty when type is Limited"));
            } else {
                limits(limited, &mut out);
            }
        }
        _ => {}
    }
    out
}

fn shares_and_lending(level: &Value, at: &str, out: &mut Vec<Cause>) {
    let shares = &level["nominalConcurrencyShares"];
    if shares.as_i64().is_some_and(|n| n < 0) {
        out.push(invalid(format!("{at}.nominalConcurrencyShares"), shares, "must be a non-negative integer"));
    }
    let lendable = &level["lendablePercent"];
    if lendable.as_i64().is_some_and(|n| !(0..=100).contains(&n)) {
        out.push(invalid(format!("{at}.lendablePercent"), lendable, "must be between 0 and 100, inclusive"));
    }
}

fn limits(limited: &Value, out: &mut Vec<Cause>) {
    shares_and_lending(limited, "spec.limited", out);
    let response = &limited["limitResponse"];
    let queuing = &response["queuing"];
    match response["type"].as_str().unwrap_or_default() {
        "Reject" if !queuing.is_null() => out.push(forbidden("spec.limited.limitResponse.queuing", "must be nil if limited.limitResponse.type is not Limited")),
        "Reject" => {}
        "Queue" if queuing.is_null() => out.push(required("spec.limited.limitResponse.queuing", "must not be empty if limited.limitResponse.type is Limited")),
        "Queue" => queues(queuing, out),
        _ => one_of(&response["type"], "spec.limited.limitResponse.type", &["Queue", "Reject"], out),
    }
    let borrowing = &limited["borrowingLimitPercent"];
    if borrowing.as_i64().is_some_and(|n| n < 0) {
        out.push(invalid("spec.limited.borrowingLimitPercent", borrowing, "if specified, must be a non-negative integer"));
    }
}

fn queues(q: &Value, out: &mut Vec<Cause>) {
    let at = "spec.limited.limitResponse.queuing";
    let (length, queues, hand) = (&q["queueLengthLimit"], &q["queues"], &q["handSize"]);
    if length.as_i64().unwrap_or(0) <= 0 {
        out.push(invalid(format!("{at}.queueLengthLimit"), length, "must be positive"));
    }
    let n = queues.as_i64().unwrap_or(0);
    if n <= 0 {
        out.push(invalid(format!("{at}.queues"), queues, "must be positive"));
    } else if n > MAX_QUEUES {
        out.push(invalid(format!("{at}.queues"), queues, &format!("must not be greater than {MAX_QUEUES}")));
    }
    let h = hand.as_i64().unwrap_or(0);
    if h <= 0 {
        out.push(invalid(format!("{at}.handSize"), hand, "must be positive"));
    } else if h > n {
        out.push(invalid(format!("{at}.handSize"), hand, &format!("should not be greater than queues ({n})")));
    } else if entropy_bits(n, h) > MAX_HASH_BITS {
        out.push(invalid(format!("{at}.handSize"), hand, &format!("required entropy bits of deckSize {n} and handSize {h} should not be greater than 60")));
    }
}

/// The bits needed to deal a hand of `hand` cards from `deck`: log2(deck^hand), rounded up.
fn entropy_bits(deck: i64, hand: i64) -> f64 {
    ((deck as f64).log2() * hand as f64).ceil()
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

    #[test]
    fn an_exempt_level_gets_no_limits() {
        let mut exempt = json!({"spec": {"type": "Exempt", "exempt": {"nominalConcurrencyShares": 0}}});
        let before = exempt.clone();
        defaults(&mut exempt);
        assert_eq!(exempt, before);
    }
}
