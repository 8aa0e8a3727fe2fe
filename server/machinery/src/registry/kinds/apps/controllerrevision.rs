//! ControllerRevisions: kubectl's columns.

use serde_json::{json, Value};

use crate::registry::kinds::fields::{age, col, AGE};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// How the kind is printed.
pub const STRATEGY: Strategy = Strategy { columns: COLUMNS, cells, ..Strategy::NONE };

pub const COLUMNS: &[Column] = &[col("Controller", "string", 0), col("Revision", "string", 0), AGE];

/// The controlling owner as `kind.group/name`, `<none>` without one.
pub fn cells(obj: &Value) -> Vec<Value> {
    let owner = obj["metadata"]["ownerReferences"].as_array().into_iter().flatten().find(|o| o["controller"] == true);
    let controller = match owner {
        Some(o) => {
            let group = o["apiVersion"].as_str().unwrap_or_default().rsplit_once('/').map_or("", |(g, _)| g);
            let kind = o["kind"].as_str().unwrap_or_default().to_lowercase();
            let kind = if group.is_empty() { kind } else { format!("{kind}.{group}") };
            format!("{kind}/{}", o["name"].as_str().unwrap_or_default())
        }
        None => "<none>".into(),
    };
    vec![json!(controller), json!(obj["revision"].as_i64().unwrap_or(0)), age(obj)]
}
