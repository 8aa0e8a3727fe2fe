//! ServiceAccounts: kubectl's columns.

use serde_json::{json, Value};

use crate::registry::kinds::fields::{age, col, AGE};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// How the kind is defaulted, validated, updated and printed.
pub const STRATEGY: Strategy = Strategy {
    columns: COLUMNS,
    cells,
    returns_deleted: true,
    ..Strategy::NONE
};

pub const COLUMNS: &[Column] = &[col("Secrets", "integer", 0), AGE];

pub fn cells(obj: &Value) -> Vec<Value> {
    vec![json!(obj["secrets"].as_array().map_or(0, Vec::len)), age(obj)]
}
