//! ResourceQuotas: an empty status until the quota controller fills it, kubectl's columns, and
//! a DELETE answered with the quota.

use serde_json::{json, Value};

use crate::registry::kinds::fields::{age, col, AGE};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// How the kind is created, printed and deleted.
pub const STRATEGY: Strategy = Strategy { columns: COLUMNS, cells, returns_deleted: true, initial_status: Some(|| json!({})), ..Strategy::NONE };

pub const COLUMNS: &[Column] = &[col("Request", "string", 0), col("Limit", "string", 0), AGE];

/// `resource: used/hard` for each resource the status reports, requests and limits apart.
pub fn cells(obj: &Value) -> Vec<Value> {
    let (hard, used) = (&obj["status"]["hard"], &obj["status"]["used"]);
    let (mut requests, mut limits) = (Vec::new(), Vec::new());
    for (resource, quantity) in hard.as_object().into_iter().flatten() {
        let shown = format!("{resource}: {}/{}", used[resource].as_str().unwrap_or("0"), quantity.as_str().unwrap_or_default());
        if resource.starts_with("limits.") {
            limits.push(shown);
        } else {
            requests.push(shown);
        }
    }
    vec![json!(requests.join(", ")), json!(limits.join(", ")), age(obj)]
}
