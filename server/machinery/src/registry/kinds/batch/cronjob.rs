//! CronJobs: defaults, validation (schedule, time zone, job template) and kubectl's columns.

use serde_json::{json, Value};

use crate::error::Cause;
use crate::registry::kinds::core::pod_spec;
use super::{job, schedule};
use crate::registry::kinds::fields::{age, at_least, col, containers, invalid_shown, selector, selector_shown, set, unsupported_shown, AGE};
use crate::registry::kinds::Strategy;
use crate::registry::Column;

/// How the kind is defaulted, validated, updated and printed.
pub const STRATEGY: Strategy = Strategy {
    default: defaults,
    validate,
    columns: COLUMNS,
    cells,
    initial_status: Some(|| json!({})),
    warnings: Some(warnings),
    ..Strategy::NONE
};

pub fn defaults(obj: &mut Value) {
    if let Some(spec) = obj.pointer_mut("/spec/jobTemplate/spec/template/spec") {
        pod_spec::defaults(spec);
    }
    // The templates' metadata is written out even when empty, as Kubernetes writes it.
    for template in ["/spec/jobTemplate", "/spec/jobTemplate/spec/template"] {
        if let Some(t) = obj.pointer_mut(template).filter(|t| t.is_object()) {
            set(t, "metadata", json!({}));
        }
    }
    if let Some(spec) = obj.get_mut("spec").filter(|s| s.is_object()) {
        set(spec, "concurrencyPolicy", json!("Allow"));
        set(spec, "suspend", json!(false));
        set(spec, "successfulJobsHistoryLimit", json!(3));
        set(spec, "failedJobsHistoryLimit", json!(1));
    }
}

/// The schedule and its time zone, the limits, the job template (whose selector is generated),
/// and a name that leaves room for the suffix of its jobs' names.
pub fn validate(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let spec = &obj["spec"];
    match spec["schedule"].as_str().unwrap_or_default() {
        "" => out.push(Cause::required("spec.schedule")),
        schedule => {
            if let Some(problem) = schedule::problem(schedule) {
                out.push(Cause::invalid("spec.schedule", schedule, &problem));
            }
            if schedule.contains("TZ") {
                out.push(Cause::invalid("spec.schedule", schedule, "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"));
            }
        }
    }
    at_least(&spec["startingDeadlineSeconds"], "spec.startingDeadlineSeconds", 0, &mut out);
    if let Some(zone) = spec["timeZone"].as_str() {
        time_zone(zone, &mut out);
    }
    let job = &spec["jobTemplate"]["spec"];
    job::job_spec(job, "spec.jobTemplate.spec", &mut out);
    if !job["selector"].is_null() {
        out.push(invalid_shown("spec.jobTemplate.spec.selector", &selector_shown(&job["selector"]), "`selector` will be auto-generated"));
    }
    if job["manualSelector"] == true {
        out.push(unsupported_shown("spec.jobTemplate.spec.manualSelector", "true", &["nil", "false"]));
    }
    for limit in ["successfulJobsHistoryLimit", "failedJobsHistoryLimit"] {
        at_least(&spec[limit], &format!("spec.{limit}"), 0, &mut out);
    }
    let name = obj["metadata"]["name"].as_str().unwrap_or_default();
    if name.len() > 52 {
        out.push(Cause::invalid("metadata.name", name, "must be no more than 52 characters"));
    }
    out
}

/// A time zone: a name of the IANA database, not empty and not the server's own.
fn time_zone(zone: &str, out: &mut Vec<Cause>) {
    let component = |p: &str| p != "." && p != ".." && !p.starts_with('-') && (1..=14).contains(&p.len()) && p.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-+".contains(&b));
    let problem = if zone.is_empty() {
        Some("timeZone must be nil or non-empty string".to_string())
    } else if !zone.split('/').all(component) {
        Some(format!("unknown time zone {zone}"))
    } else if zone.eq_ignore_ascii_case("Local") {
        Some("timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones".to_string())
    } else {
        schedule::time_zone_problem(zone)
    };
    if let Some(p) = problem {
        out.push(Cause::invalid("spec.timeZone", zone, &p));
    }
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

/// Kubernetes' warnings: a name that is no DNS label, the job template's (on update, when the spec
/// changed) and, on update, a time zone written in the schedule.
fn warnings(obj: &Value, old: Option<&Value>) -> Vec<String> {
    let mut out: Vec<String> = match old {
        None => crate::registry::kinds::warnings::name_warning(obj, crate::registry::kinds::warnings::POD_NAMES).into_iter().collect(),
        Some(_) => Vec::new(),
    };
    if old.is_none_or(|o| o["spec"] != obj["spec"]) {
        out.extend(super::job::job_spec_warnings(&obj["spec"]["jobTemplate"]["spec"], "spec.jobTemplate.spec"));
    }
    if old.is_some() && obj["spec"]["schedule"].as_str().is_some_and(|s| s.contains("TZ")) {
        out.push("cannot use TZ or CRON_TZ in spec.spec.schedule, use timeZone instead, see https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more details".into());
    }
    out
}
