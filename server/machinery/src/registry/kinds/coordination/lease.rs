//! Leases: validation and kubectl's columns.

use serde_json::{json, Value};

use crate::error::Cause;
use crate::registry::kinds::fields::{age, at_least, col, forbidden, one_of, positive, qualified_name, AGE};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// How the kind is validated and printed.
pub const STRATEGY: Strategy = Strategy { validate, columns: COLUMNS, cells, ..Strategy::NONE };

/// The coordinated-lease strategies Kubernetes defines (any other must be `domain/name`).
const STRATEGIES: &[&str] = &["OldestEmulationVersion"];

pub fn validate(obj: &Value) -> Vec<Cause> {
    let spec = &obj["spec"];
    let mut out = Vec::new();
    positive(&spec["leaseDurationSeconds"], "spec.leaseDurationSeconds", &mut out);
    at_least(&spec["leaseTransitions"], "spec.leaseTransitions", 0, &mut out);
    match spec["strategy"].as_str() {
        Some(s) if !s.contains('/') => one_of(&spec["strategy"], "spec.strategy.strategy", STRATEGIES, &mut out),
        Some(_) => qualified_name(&spec["strategy"], "spec.strategy.strategy", &mut out),
        None => {}
    }
    if spec["preferredHolder"].as_str().is_some_and(|h| !h.is_empty()) && spec["strategy"].as_str().is_none_or(str::is_empty) {
        out.push(forbidden("spec.preferredHolder", "may only be specified if `strategy` is defined"));
    }
    out
}

pub const COLUMNS: &[Column] = &[col("Holder", "string", 0), AGE];

pub fn cells(obj: &Value) -> Vec<Value> {
    vec![json!(obj["spec"]["holderIdentity"].as_str().unwrap_or_default()), age(obj)]
}
