//! DeviceClasses: selectors that compile, configuration for a named driver, kubectl's columns,
//! and a DELETE answered with the class.

use serde_json::Value;

use crate::error::Cause;
use crate::registry::kinds::fields::{age, cel, dns_subdomain, AGE};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// How the kind is validated, printed and deleted.
pub const STRATEGY: Strategy = Strategy { validate, columns: COLUMNS, cells, returns_deleted: true, ..Strategy::NONE };

pub fn validate(obj: &Value) -> Vec<Cause> {
    let spec = &obj["spec"];
    let mut out = Vec::new();
    selectors(&spec["selectors"], "spec.selectors", &mut out);
    configs(&spec["config"], "spec.config", &mut out);
    out
}

/// Each selector's CEL expression compiles.
pub(super) fn selectors(list: &Value, at: &str, out: &mut Vec<Cause>) {
    for (i, s) in list.as_array().into_iter().flatten().enumerate() {
        cel(&s["cel"]["expression"], &format!("{at}[{i}].cel.expression"), out);
    }
}

/// Each opaque configuration names its driver (a DNS subdomain) and has parameters.
pub(super) fn configs(list: &Value, at: &str, out: &mut Vec<Cause>) {
    for (i, c) in list.as_array().into_iter().flatten().enumerate() {
        let opaque = &c["opaque"];
        if !opaque.is_object() {
            continue;
        }
        let at = format!("{at}[{i}].opaque");
        if opaque["driver"].as_str().is_none_or(str::is_empty) {
            out.push(Cause::required(format!("{at}.driver")));
        } else {
            dns_subdomain(&opaque["driver"], &format!("{at}.driver"), out);
        }
        if opaque["parameters"].is_null() {
            out.push(Cause::required(format!("{at}.parameters")));
        }
    }
}

pub const COLUMNS: &[Column] = &[AGE];

pub fn cells(obj: &Value) -> Vec<Value> {
    vec![age(obj)]
}
