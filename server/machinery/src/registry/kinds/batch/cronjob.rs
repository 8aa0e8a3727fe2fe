//! CronJobs: defaults, validation and kubectl's columns.

use serde_json::{json, Value};

use crate::error::Cause;
use crate::registry::kinds::core::pod_spec;
use crate::registry::kinds::fields::{age, col, containers, selector, set, AGE};
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

pub const COLUMNS: &[Column] = &[
    col("Schedule", "string", 0),
    col("Timezone", "string", 0),
    col("Suspend", "boolean", 0),
    col("Active", "integer", 0),
    col("Last Schedule", "string", 0),
    AGE,
    col("Containers", "string", 1),
    col("Images", "string", 1),
    col("Selector", "string", 1),
];

pub fn cells(obj: &Value) -> Vec<Value> {
    let spec = &obj["spec"];
    let job = &spec["jobTemplate"]["spec"];
    let last = match obj["status"]["lastScheduleTime"].as_str().and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok()) {
        Some(t) => crate::table_form::human_duration(chrono::Utc::now().signed_duration_since(t)),
        None => "<none>".into(),
    };
    vec![
        spec["schedule"].clone(),
        json!(spec["timeZone"].as_str().unwrap_or("<none>")),
        json!(if spec["suspend"] == true { "True" } else { "False" }),
        json!(obj["status"]["active"].as_array().map_or(0, Vec::len)),
        json!(last),
        age(obj),
        containers(&job["template"]["spec"], "name"),
        containers(&job["template"]["spec"], "image"),
        json!(selector(&job["selector"])),
    ]
}
