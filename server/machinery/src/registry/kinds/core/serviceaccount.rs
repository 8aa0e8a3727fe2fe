//! ServiceAccounts: kubectl's columns.

use serde_json::Value;

use crate::registry::kinds::fields::{age, AGE};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// How the kind is defaulted, validated, updated and printed.
pub const STRATEGY: Strategy = Strategy {
    columns: COLUMNS,
    cells,
    returns_deleted: true,
    ..Strategy::NONE
};

pub const COLUMNS: &[Column] = &[AGE];

pub fn cells(obj: &Value) -> Vec<Value> {
    vec![age(obj)]
}
