//! Mutating and validating webhook configurations: kubectl's columns.

use serde_json::{json, Value};

use crate::registry::kinds::fields::{age, col, items, AGE};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// How the kind is defaulted, validated, updated and printed.
pub const STRATEGY: Strategy = Strategy {
    columns: COLUMNS,
    cells,
    ..Strategy::NONE
};

pub const COLUMNS: &[Column] = &[col("Webhooks", "integer", 0), AGE];

pub fn cells(obj: &Value) -> Vec<Value> {
    vec![json!(items(&obj["webhooks"])), age(obj)]
}
