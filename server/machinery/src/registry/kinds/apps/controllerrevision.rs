//! ControllerRevisions: validation, their data fixed at creation, and kubectl's columns.

use serde_json::{json, Value};

use crate::error::Cause;
use crate::registry::kinds::fields::{age, at_least, col, required, unchanged, AGE};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// How the kind is validated, updated and printed.
pub const STRATEGY: Strategy = Strategy { validate, update, columns: COLUMNS, cells, ..Strategy::NONE };

/// A revision of at least 0, and data that is a JSON object.
pub fn validate(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    at_least(&obj["revision"], "revision", 0, &mut out);
    match &obj["data"] {
        Value::Null => out.push(required("data", "data is mandatory")),
        Value::Object(_) => {}
        _ => out.push(required("data", "data must be a valid JSON object")),
    }
    out
}

/// The data of a revision never changes.
pub fn update(old: &Value, new: &mut Value) -> Vec<Cause> {
    let mut out = Vec::new();
    unchanged(old, new, "/data", &mut out);
    out
}

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
