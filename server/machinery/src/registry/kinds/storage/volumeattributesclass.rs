//! VolumeAttributesClasses: validation, a driver and parameters fixed at creation, kubectl's
//! columns, and a DELETE answered with the class.

use serde_json::{json, Value};

use super::storageclass::{parameters, provisioner};
use crate::error::Cause;
use crate::registry::kinds::fields::{age, col, forbidden, AGE};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// How the kind is validated, updated, printed and deleted.
pub const STRATEGY: Strategy = Strategy { validate, update, columns: COLUMNS, cells, returns_deleted: true, ..Strategy::NONE };

/// A driver, and at least one parameter.
pub fn validate(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    provisioner(&obj["driverName"], "driverName", &mut out);
    parameters(&obj["parameters"], false, &mut out);
    out
}

/// Neither the driver nor the parameters may change.
pub fn update(old: &Value, new: &mut Value) -> Vec<Cause> {
    let mut out = Vec::new();
    for field in ["driverName", "parameters"] {
        if old[field] != new[field] {
            out.push(forbidden(field, &format!("updates to {field} are forbidden.")));
        }
    }
    out
}

pub const COLUMNS: &[Column] = &[col("DriverName", "string", 0), AGE];

pub fn cells(obj: &Value) -> Vec<Value> {
    vec![json!(obj["driverName"].as_str().unwrap_or_default()), age(obj)]
}
