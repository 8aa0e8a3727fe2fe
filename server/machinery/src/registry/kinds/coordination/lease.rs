//! Leases: kubectl's columns.

use serde_json::{json, Value};

use crate::registry::kinds::fields::{age, col, AGE};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// How the kind is printed.
pub const STRATEGY: Strategy = Strategy { columns: COLUMNS, cells, ..Strategy::NONE };

pub const COLUMNS: &[Column] = &[col("Holder", "string", 0), AGE];

pub fn cells(obj: &Value) -> Vec<Value> {
    vec![json!(obj["spec"]["holderIdentity"].as_str().unwrap_or_default()), age(obj)]
}
