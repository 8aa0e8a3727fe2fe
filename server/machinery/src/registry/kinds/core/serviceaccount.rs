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
    warnings: Some(warnings),
    ..Strategy::NONE
};

pub const COLUMNS: &[Column] = &[AGE];

pub fn cells(obj: &Value) -> Vec<Value> {
    vec![age(obj)]
}

/// The annotation that enforces mountable secrets, deprecated: warned about when newly set.
fn warnings(obj: &Value, old: Option<&Value>) -> Vec<String> {
    const ENFORCE: &str = "kubernetes.io/enforce-mountable-secrets";
    let has = |o: &Value| o["metadata"]["annotations"].get(ENFORCE).is_some();
    match old.is_some_and(has) || !has(obj) {
        true => Vec::new(),
        false => vec![format!("metadata.annotations[{ENFORCE}]: deprecated in v1.32+; prefer separate namespaces to isolate access to mounted secrets")],
    }
}
