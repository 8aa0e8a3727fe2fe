//! CronJobs: defaults, validation and kubectl's columns.

use serde_json::{json, Value};

use crate::error::Cause;
use crate::registry::kinds::core::pod_spec;
use crate::registry::kinds::fields::{age, col, set, AGE};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// How the kind is defaulted, validated, updated and printed.
pub const STRATEGY: Strategy = Strategy {
    default: defaults,
    validate,
    columns: COLUMNS,
    cells,
    initial_status: Some(|| json!({})),
    ..Strategy::NONE
};

pub fn defaults(obj: &mut Value) {
    if let Some(spec) = obj.pointer_mut("/spec/jobTemplate/spec/template/spec") {
        pod_spec::defaults(spec);
    }
    if let Some(spec) = obj.get_mut("spec").filter(|s| s.is_object()) {
        set(spec, "concurrencyPolicy", json!("Allow"));
        set(spec, "suspend", json!(false));
        set(spec, "successfulJobsHistoryLimit", json!(3));
        set(spec, "failedJobsHistoryLimit", json!(1));
    }
}

pub fn validate(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    if obj["spec"]["schedule"].as_str().is_none_or(str::is_empty) {
        out.push(Cause::required("spec.schedule"));
    }
    pod_spec::validate(&obj["spec"]["jobTemplate"]["spec"]["template"]["spec"], "spec.jobTemplate.spec.template.spec", &mut out);
    out
}

pub const COLUMNS: &[Column] = &[col("Schedule", "string", 0), col("Suspend", "boolean", 0), col("Active", "integer", 0), AGE];

pub fn cells(obj: &Value) -> Vec<Value> {
    vec![
        obj["spec"]["schedule"].clone(),
        json!(obj["spec"]["suspend"].as_bool().unwrap_or(false)),
        json!(obj["status"]["active"].as_array().map_or(0, Vec::len)),
        age(obj),
    ]
}
