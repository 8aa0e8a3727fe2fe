//! ComponentStatuses (read-only, deprecated since 1.19): kubectl's columns.

use serde_json::{json, Value};

use crate::registry::kinds::fields::col;
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// How the kind is defaulted, validated, updated and printed.
pub const STRATEGY: Strategy = Strategy {
    columns: COLUMNS,
    cells,
    deprecation: Some("v1 ComponentStatus is deprecated in v1.19+"),
    ..Strategy::NONE
};

pub const COLUMNS: &[Column] = &[col("Status", "string", 0), col("Message", "string", 0), col("Error", "string", 0)];

pub fn cells(obj: &Value) -> Vec<Value> {
    let healthy = obj["conditions"].as_array().into_iter().flatten().find(|c| c["type"] == "Healthy");
    let status = match healthy.and_then(|c| c["status"].as_str()) {
        Some("True") => "Healthy",
        Some(_) => "Unhealthy",
        None => "Unknown",
    };
    let field = |k: &str| json!(healthy.and_then(|c| c[k].as_str()).unwrap_or_default());
    vec![json!(status), field("message"), field("error")]
}
